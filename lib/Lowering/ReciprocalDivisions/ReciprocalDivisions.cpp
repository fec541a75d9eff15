//===- ReciprocalDivisions.cpp - one reciprocal for a reused divisor ------===//
//
// Softmax divides every element of a row by the row's sum, and its gradient
// divides by it twice more: one vdivps per 16 elements, several times the
// cost of a multiplication, for a divisor that is the same along the row.
// Where a linalg.generic divides by an input that does not vary along its
// loops for at least `min-reuse` iterations (a broadcast), the reciprocal
// of that input is computed once per element, in a generic of its own, and
// the divisions become multiplications. x * (1/s) is within about 1.5 ulp
// of x / s (two roundings instead of one); infinities and NaNs come out as
// from the division, except where 1/s overflows (|s| below 2^-126, a
// subnormal divisor).
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPRECIPROCALDIVISIONS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Whether \p arg is the divisor of a division in its block.
bool dividesBy(BlockArgument arg) {
  return llvm::any_of(arg.getUsers(), [&](Operation *user) {
    auto division = dyn_cast<arith::DivFOp>(user);
    return division && division.getRhs() == arg;
  });
}

/// How many iterations of \p op read each element of \p input: the product
/// of the static ranges of the loops its map does not use (0 when one of
/// them is dynamic).
int64_t reuseOf(linalg::GenericOp op, OpOperand *input) {
  AffineMap map = op.getMatchingIndexingMap(input);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t reuse = 1;
  for (unsigned d = 0; d < op.getNumLoops(); ++d) {
    if (map.isFunctionOfDim(d))
      continue;
    if (ShapedType::isDynamic(ranges[d]))
      return 0;
    reuse *= ranges[d];
  }
  return reuse;
}

/// Whether \p arg is used only as the divisor of divisions (of something
/// other than itself).
bool onlyDividesBy(BlockArgument arg) {
  return llvm::all_of(arg.getUsers(), [&](Operation *user) {
    auto division = dyn_cast<arith::DivFOp>(user);
    return division && division.getRhs() == arg && division.getLhs() != arg;
  });
}

void yieldReciprocal(OpBuilder &b, Location l, ValueRange args) {
  Value one = arith::ConstantOp::create(b, l, b.getF32FloatAttr(1.0f));
  linalg::YieldOp::create(
      b, l, ValueRange{arith::DivFOp::create(b, l, one, args[0])});
}

/// A generic computing `1 / x` for each element of \p divisor.
Value buildReciprocals(OpBuilder &builder, Location loc, Value divisor) {
  auto type = cast<RankedTensorType>(divisor.getType());
  Value empty = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                        type.getElementType());
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), builder.getContext());
  SmallVector<utils::IteratorType> parallel(type.getRank(),
                                            utils::IteratorType::parallel);
  return linalg::GenericOp::create(builder, loc, TypeRange{type},
                                   ValueRange{divisor}, ValueRange{empty},
                                   ArrayRef<AffineMap>{identity, identity},
                                   parallel, yieldReciprocal)
      .getResult(0);
}

struct ReciprocalDivisionsPass
    : public mp::impl::MPReciprocalDivisionsBase<ReciprocalDivisionsPass> {
  using MPReciprocalDivisionsBase::MPReciprocalDivisionsBase;

  void runOnOperation() override {
    if (minReuse < 2) {
      getOperation().emitError()
          << "mp-reciprocal-divisions: min-reuse must be at least 2, got "
          << static_cast<int64_t>(minReuse);
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics())
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics)
      rewrite(op);
  }

  /// Whether \p input is an f32 input of static shape that \p op's body
  /// divides by and that each iteration does not have to its own.
  bool isReusedDivisor(linalg::GenericOp op, OpOperand *input) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    return arg.getType().isF32() && type && type.hasStaticShape() &&
           dividesBy(arg) &&
           op.getMatchingIndexingMap(input).isProjectedPermutation() &&
           reuseOf(op, input) >= minReuse;
  }

  void rewrite(linalg::GenericOp op) {
    SmallVector<OpOperand *> divisors;
    for (OpOperand *input : op.getDpsInputOperands())
      if (isReusedDivisor(op, input))
        divisors.push_back(input);
    if (divisors.empty())
      return;

    OpBuilder builder(op);
    Location loc = op.getLoc();
    // One reciprocal per element of each divisor. A divisor the body only
    // divides by is replaced by its reciprocals; one it also uses
    // otherwise gets them as an input of their own, after the inputs.
    SmallVector<std::pair<OpOperand *, Value>> added;
    for (OpOperand *input : divisors) {
      Value reciprocal = buildReciprocals(builder, loc, input->get());
      ++numDivisors;
      BlockArgument arg = op.getMatchingBlockArgument(input);
      if (onlyDividesBy(arg)) {
        input->set(reciprocal);
        multiplyInstead(arg, arg);
      } else {
        added.push_back({input, reciprocal});
      }
    }
    if (!added.empty())
      addReciprocalInputs(op, added, builder);
  }

  /// Rebuilds \p op reading the \p added reciprocals after its inputs,
  /// its body multiplying by them instead of dividing by their divisors.
  static void addReciprocalInputs(linalg::GenericOp op,
                                  ArrayRef<std::pair<OpOperand *, Value>> added,
                                  OpBuilder &builder) {
    Location loc = op.getLoc();
    SmallVector<Value> inputs(op.getDpsInputs());
    SmallVector<AffineMap> maps;
    for (OpOperand *input : op.getDpsInputOperands())
      maps.push_back(op.getMatchingIndexingMap(input));
    for (auto [input, reciprocal] : added) {
      inputs.push_back(reciprocal);
      maps.push_back(op.getMatchingIndexingMap(input));
    }
    for (OpOperand &init : op.getDpsInitsMutable())
      maps.push_back(op.getMatchingIndexingMap(&init));
    auto rewritten = linalg::GenericOp::create(
        builder, loc, op.getResultTypes(), inputs, op.getDpsInits(), maps,
        op.getIteratorTypesArray());
    rewritten->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewritten.getRegion().takeBody(op.getRegion());
    Block &body = rewritten.getRegion().front();
    unsigned position = op.getNumDpsInputs();
    for (auto [input, reciprocal] : added) {
      BlockArgument divisor = body.getArgument(input->getOperandNumber());
      multiplyInstead(divisor,
                      body.insertArgument(position++, divisor.getType(), loc));
    }
    op.replaceAllUsesWith(rewritten.getResults());
    op.erase();
  }

  /// Every division by \p divisor becomes a multiplication by
  /// \p reciprocal.
  static void multiplyInstead(Value divisor, Value reciprocal) {
    for (Operation *user : llvm::make_early_inc_range(divisor.getUsers())) {
      auto division = dyn_cast<arith::DivFOp>(user);
      if (!division || division.getRhs() != divisor)
        continue;
      OpBuilder at(division);
      Value product =
          arith::MulFOp::create(at, division.getLoc(), division.getLhs(),
                                reciprocal, division.getFastmathAttr());
      division.replaceAllUsesWith(product);
      division.erase();
    }
  }
};

} // namespace
