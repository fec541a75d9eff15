//===- ApproximateMath.cpp - exp, log, tanh, erf as vector polynomials ----===//
//
// LLVM has no vector exp, log, tanh or erf for x86: a vector<16xf32> exp
// becomes sixteen libm calls, one lane at a time, in every softmax,
// cross-entropy and GELU loop. Upstream's polynomial approximations compute
// them with vector arithmetic instead (range reduction, a polynomial, FMAs
// and integer bit tricks), within a few ulp of libm
// (unittests/ApproximateMathTest.cpp measures them).
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPAPPROXIMATEMATH
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Upstream's log and log2 read a subnormal input's exponent as the
/// smallest normal one (log(1e-45) came out near -87.3, not -103.3):
/// subnormal inputs are scaled by 2^23 first, exactly, and 23 log(2) taken
/// off the result. Zero, negatives, infinities and NaN pass unchanged.
template <typename LogOp>
void keepSubnormalsExact(func::FuncOp func, double log2Base) {
  func.walk([&](LogOp op) {
    Value x = op.getOperand();
    if (!getElementTypeOrSelf(x.getType()).isF32())
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type type = x.getType();
    auto constant = [&](float value) -> Value {
      TypedAttr scalar = b.getF32FloatAttr(value);
      if (auto vector = dyn_cast<VectorType>(type))
        return arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(vector, scalar));
      return arith::ConstantOp::create(b, loc, scalar);
    };
    Value subnormal = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, x),
        constant(std::numeric_limits<float>::min()));
    Value scaled = arith::MulFOp::create(b, loc, x, constant(0x1p23f));
    Value input = arith::SelectOp::create(b, loc, subnormal, scaled, x);
    Value log = LogOp::create(b, loc, input);
    Value correction = arith::SelectOp::create(
        b, loc, subnormal, constant(static_cast<float>(23 * log2Base)),
        constant(0.0f));
    op.replaceAllUsesWith(
        arith::SubFOp::create(b, loc, log, correction).getResult());
    op.erase();
  });
}

struct ApproximateMathPass
    : mp::impl::MPApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    keepSubnormalsExact<math::LogOp>(getOperation(), std::log(2.0));
    keepSubnormalsExact<math::Log2Op>(getOperation(), 1.0);
    // The functions whose accuracy ApproximateMathTest holds (f32 only:
    // the patterns leave other types alone).
    const StringRef approximated[] = {
        math::ExpOp::getOperationName(),  math::ExpM1Op::getOperationName(),
        math::LogOp::getOperationName(),  math::Log1pOp::getOperationName(),
        math::Log2Op::getOperationName(), math::TanhOp::getOperationName(),
        math::ErfOp::getOperationName()};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, llvm::function_ref<bool(StringRef)>([&](StringRef name) {
          return llvm::is_contained(approximated, name);
        }));
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
