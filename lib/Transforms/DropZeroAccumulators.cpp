//===- DropZeroAccumulators.cpp - no zeros to add to ----------------------===//
//
// --mp-autodiff writes every input gradient as `acc + dx` into a zero-filled
// init, whatever its loops. Where the loops are all parallel and the init
// is indexed by each of them, each element is written once and the sum is
// 0 + dx: the fill (a buffer and a pass over it) buys nothing. Run after
// --mp-auto-mixed-precision, so that its choices (made on the accumulating
// form) stay as they were: the result is the same bit for bit, except
// that a gradient of -0 is no longer turned into +0.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPDROPZEROACCUMULATORS
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Whether \p value is a float zero (+0 or -0): a constant, maybe
/// converted (AMP rounds an f32 zero to the fill's 16-bit type).
bool isZero(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<arith::TruncFOp, arith::ExtFOp>(def))
      break;
    value = def->getOperand(0);
  }
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  auto attr = constant ? dyn_cast<FloatAttr>(constant.getValue()) : FloatAttr();
  return attr && attr.getValue().isZero();
}

/// The tensor.empty that \p init is filled from, or null. With
/// \p needZero, only a fill with zero.
Value emptyBehindFill(Value init, bool needZero) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill || (needZero && !isZero(fill.getInputs()[0])))
    return Value();
  Value empty = fill.getOutputs()[0];
  return empty.getDefiningOp<tensor::EmptyOp>() ? empty : Value();
}

/// Where \p acc (used once), or its one widening, is one operand of an
/// addf, makes the sum's users read the other operand instead and erases
/// the addition (and the widening); false when it is no such sum.
bool dropZeroAddition(BlockArgument acc) {
  Value summand = acc;
  Operation *user = *acc.getUsers().begin();
  if (auto extf = dyn_cast<arith::ExtFOp>(user)) {
    if (!extf->hasOneUse())
      return false;
    summand = extf.getResult();
    user = *extf->getUsers().begin();
  }
  auto add = dyn_cast<arith::AddFOp>(user);
  if (!add)
    return false;
  Value other = add.getLhs() == summand ? add.getRhs() : add.getLhs();
  if (other == summand)
    return false; // acc + acc
  add.getResult().replaceAllUsesWith(other);
  add->erase();
  if (summand != acc)
    summand.getDefiningOp()->erase();
  return true;
}

/// Where every element of the init is written once: an init the body does
/// not read needs no fill; `yield(0 + x)` (the accumulator maybe widened
/// first) becomes `yield(x)`. Either way the op gets the empty tensor the
/// fill wrote into. Returns whether it changed \p op.
bool dropZeroAccumulator(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation())
    return false;
  BlockArgument acc = op.getRegionOutputArgs()[0];
  Value empty = emptyBehindFill(op.getDpsInitOperand(0)->get(),
                                /*needZero=*/!acc.use_empty());
  if (!empty)
    return false;
  if (acc.use_empty()) {
    op.getDpsInitOperand(0)->set(empty);
    return true;
  }
  if (!acc.hasOneUse())
    return false;
  if (!dropZeroAddition(acc))
    return false;
  op.getDpsInitOperand(0)->set(empty);
  return true;
}

/// Whether \p op, one input and one init of the same type read and written
/// with the same map, only copies the input (`yield(in)`, or a widening
/// and rounding back to the same type, which is exact): the gradient of a
/// reshape or an addition, once it no longer adds to zeros.
bool isCopy(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getDpsInputOperand(0)->get().getType() != op->getResult(0).getType() ||
      op.getMatchingIndexingMap(op.getDpsInputOperand(0)) !=
          op.getMatchingIndexingMap(op.getDpsInitOperand(0)))
    return false;
  Value yielded = op.getBlock()->getTerminator()->getOperand(0);
  if (auto truncf = yielded.getDefiningOp<arith::TruncFOp>())
    if (auto extf = truncf.getIn().getDefiningOp<arith::ExtFOp>())
      if (extf.getIn().getType() == truncf.getType())
        yielded = extf.getIn();
  return yielded == op.getRegionInputArgs()[0];
}

struct DropZeroAccumulatorsPass
    : mp::impl::MPDropZeroAccumulatorsBase<DropZeroAccumulatorsPass> {
  void runOnOperation() override {
    llvm::SetVector<Operation *> fills;
    getOperation().walk([&](linalg::GenericOp op) {
      Value init =
          op.getNumDpsInits() == 1 ? op.getDpsInitOperand(0)->get() : Value();
      Operation *fill = init ? init.getDefiningOp<linalg::FillOp>() : nullptr;
      if (!dropZeroAccumulator(op))
        return;
      ++numDropped;
      fills.insert(fill);
      // A copy left behind is no copy at all.
      if (isCopy(op)) {
        op->getResult(0).replaceAllUsesWith(op.getDpsInputOperand(0)->get());
        op->erase();
      }
    });
    // Fills nothing reads any more.
    for (Operation *fill : fills)
      if (fill->use_empty())
        fill->erase();
  }
};

} // namespace
