//===- LowerDropout.cpp - mp.dropout as a counter-based random mask ------===//
//
// In the training step, each mp.dropout becomes an elementwise generic that
// computes Philox4x32-10 of (element index, stream, step, 0) under the
// seed's key in its body and keeps the element when the first word clears
// the ratio's threshold. A counter-based generator needs no state and no
// stored mask: any thread, any resumed run and the backward pass compute
// the same bits for the same element. Outside a training step (prediction,
// evaluation) dropout is the identity.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPLOWERDROPOUT
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

// Philox4x32's multipliers and Weyl key increments (Salmon et al. 2011).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

Value i32Constant(OpBuilder &b, Location loc, uint32_t value) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                      static_cast<int32_t>(value));
}

/// The first word of Philox4x32-10 of \p counter under the key
/// (\p key0, \p key1). The key is a constant, so its schedule is too.
Value philoxFirstWord(OpBuilder &b, Location loc, std::array<Value, 4> c,
                      uint32_t key0, uint32_t key1) {
  Value m0 = i32Constant(b, loc, kPhiloxM0), m1 = i32Constant(b, loc, kPhiloxM1);
  for (int round = 0; round < kPhiloxRounds; ++round) {
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c[0]);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c[2]);
    Value k0 = i32Constant(b, loc, key0), k1 = i32Constant(b, loc, key1);
    c = {arith::XOrIOp::create(
             b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c[1]), k0),
         p1.getLow(),
         arith::XOrIOp::create(
             b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c[3]), k1),
         p0.getLow()};
    key0 += kPhiloxW0;
    key1 += kPhiloxW1;
  }
  return c[0];
}

/// The element's row-major position among \p shape's, as i32.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value index = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [dim, size] : llvm::enumerate(shape)) {
    Value scaled = arith::MulIOp::create(
        b, loc, index, arith::ConstantIndexOp::create(b, loc, size));
    index = arith::AddIOp::create(b, loc, scaled,
                                  linalg::IndexOp::create(b, loc, dim));
  }
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
}

/// The smallest first word that keeps an element: round(ratio * 2^32).
uint32_t keepThreshold(double ratio) {
  double threshold = std::nearbyint(ratio * 4294967296.0);
  return threshold >= 4294967295.0 ? 0xFFFFFFFFu
                                   : static_cast<uint32_t>(threshold);
}

struct LowerDropoutPass : mp::impl::MPLowerDropoutBase<LowerDropoutPass> {
  using MPLowerDropoutBase::MPLowerDropoutBase;

  void runOnOperation() override {
    WalkResult walked = getOperation().walk([&](func::FuncOp func) {
      if (func->hasAttr(kAccumulationOfAttrName) &&
          !func.getOps<DropoutOp>().empty()) {
        // Its micro-batches have no step counter of their own: the masks
        // would repeat within a window, or (as the identity) silently not
        // drop at all.
        func.emitError() << "mp-lower-dropout: dropout in a gradient "
                            "accumulation step (--accumulate > 1) is not "
                            "supported yet";
        return WalkResult::interrupt();
      }
      Value step = stepCounter(func);
      WalkResult inner = func.walk([&](DropoutOp op) {
        if (failed(lower(op, step)))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      return inner;
    });
    if (walked.wasInterrupted())
      signalPassFailure();
  }

  /// The training step's step counter, or null outside a training step.
  static Value stepCounter(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (func.getArgAttr(i, kStepAttrName) &&
          func.getArgument(i).getType().isInteger(32))
        return func.getArgument(i);
    return {};
  }

  LogicalResult lower(DropoutOp op, Value step) {
    double ratio = op.getRatio().convertToDouble();
    if (!step || ratio == 0.0) {
      op.getOutput().replaceAllUsesWith(op.getInput());
      op.erase();
      return success();
    }
    auto type = op.getInput().getType();
    if (!type.hasStaticShape() || type.getNumElements() > (int64_t(1) << 32))
      return op.emitError() << "mp-lower-dropout: needs a static shape of at "
                               "most 2^32 elements, got "
                            << type;
    if (!op.getStream())
      return op.emitError() << "mp-lower-dropout: the dropout has no stream "
                               "(--mp-autodiff numbers a loss function's)";
    OpBuilder b(op);
    op.getOutput().replaceAllUsesWith(expand(b, op, step, ratio));
    op.erase();
    ++numMasks;
    return success();
  }

  /// y = keep ? x / (1 - ratio) : 0, the mask drawn in the body.
  Value expand(OpBuilder &b, DropoutOp op, Value step, double ratio) {
    Location loc = op.getLoc();
    auto type = op.getInput().getType();
    unsigned rank = type.getRank();
    Type element = type.getElementType();
    auto stream = static_cast<uint32_t>(*op.getStream());
    auto key0 = static_cast<uint32_t>(seed), key1 =
                                                 static_cast<uint32_t>(seed >> 32);
    AffineMap id = b.getMultiDimIdentityMap(rank);
    Value init = tensor::EmptyOp::create(b, loc, type.getShape(), element);
    auto body = [&](OpBuilder &nb, Location nloc, ValueRange args) {
      std::array<Value, 4> counter = {
          linearIndex(nb, nloc, type.getShape()), i32Constant(nb, nloc, stream),
          step, i32Constant(nb, nloc, 0)};
      Value word = philoxFirstWord(nb, nloc, counter, key0, key1);
      Value keep = arith::CmpIOp::create(
          nb, nloc, arith::CmpIPredicate::uge, word,
          i32Constant(nb, nloc, keepThreshold(ratio)));
      Value scale = arith::ConstantOp::create(
          nb, nloc, nb.getFloatAttr(element, 1.0 / (1.0 - ratio)));
      Value zero =
          arith::ConstantOp::create(nb, nloc, nb.getFloatAttr(element, 0.0));
      Value scaled = arith::MulFOp::create(nb, nloc, args[0], scale);
      linalg::YieldOp::create(
          nb, nloc,
          arith::SelectOp::create(nb, nloc, keep, scaled, zero).getResult());
    };
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{op.getInput()},
               ValueRange{init}, ArrayRef<AffineMap>{id, id},
               SmallVector<utils::IteratorType>(rank,
                                                utils::IteratorType::parallel),
               body)
        .getResult(0);
  }
};

} // namespace
