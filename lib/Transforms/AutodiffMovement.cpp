//===- AutodiffMovement.cpp - derivatives of ops that move data ----------===//
//
// A slice's gradient is the result's gradient inserted into zeros at the
// slice's place; an insertion's is the slice of the gradient for the
// inserted value and the gradient with that window zeroed for the
// destination; a concatenation's is one slice per operand. A gather's table
// gets a scatter-add: loops over the gather's iteration space that add each
// element of the gradient at the index the gather read, in order, so a row
// read twice (a repeated token) receives both contributions.
//
//===----------------------------------------------------------------------===//

#include "AutodiffMovement.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::mp;

namespace {

/// Zeros shaped like \p like (dynamic sizes read from it).
Value zerosLike(OpBuilder &b, Location loc, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, like), type.getElementType());
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(type.getElementType()));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

SmallVector<OperandGradient> extractSliceGradient(tensor::ExtractSliceOp slice,
                                                  Value dy, OpBuilder &b) {
  Location loc = slice.getLoc();
  Value zeros = zerosLike(b, loc, slice.getSource());
  Value grad = tensor::InsertSliceOp::create(
      b, loc, dy, zeros, slice.getMixedOffsets(), slice.getMixedSizes(),
      slice.getMixedStrides());
  return {{slice.getSource(), grad}};
}

SmallVector<OperandGradient> insertSliceGradient(tensor::InsertSliceOp insert,
                                                 Value dy, OpBuilder &b) {
  Location loc = insert.getLoc();
  SmallVector<OpFoldResult> offsets = insert.getMixedOffsets(),
                            sizes = insert.getMixedSizes(),
                            strides = insert.getMixedStrides();
  Value sourceGrad = tensor::ExtractSliceOp::create(
      b, loc, insert.getSourceType(), dy, offsets, sizes, strides);
  // The destination's elements under the window were overwritten.
  Value destGrad = tensor::InsertSliceOp::create(
      b, loc, zerosLike(b, loc, insert.getSource()), dy, offsets, sizes,
      strides);
  return {{insert.getSource(), sourceGrad}, {insert.getDest(), destGrad}};
}

SmallVector<OperandGradient> concatGradient(tensor::ConcatOp concat, Value dy,
                                            OpBuilder &b) {
  Location loc = concat.getLoc();
  int64_t dim = concat.getDim();
  auto resultType = concat.getResultType();
  int64_t rank = resultType.getRank();
  SmallVector<OperandGradient> grads;
  OpFoldResult offset = b.getIndexAttr(0);
  for (Value input : concat.getInputs()) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
    offsets[dim] = offset;
    grads.push_back({input, tensor::ExtractSliceOp::create(
                                b, loc, cast<RankedTensorType>(input.getType()),
                                dy, offsets, sizes, strides)});
    offset = affine::makeComposedFoldedAffineApply(
        b, loc, b.getAffineSymbolExpr(0) + b.getAffineSymbolExpr(1),
        {offset, sizes[dim]});
  }
  return grads;
}

/// The coordinates \p map reads at loop indices \p ivs (a projected
/// permutation: each result is one loop).
SmallVector<Value> coordinatesAt(AffineMap map, ValueRange ivs) {
  SmallVector<Value> coords;
  for (AffineExpr e : map.getResults())
    coords.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  return coords;
}

/// The one op of \p op's body that extracts from \p table, if that is the
/// table's only use in the body and the body yields its result.
tensor::ExtractOp yieldedExtract(linalg::LinalgOp op, Value table) {
  tensor::ExtractOp found;
  for (Operation *user : table.getUsers()) {
    if (!op->isProperAncestor(user))
      continue;
    auto extract = dyn_cast<tensor::ExtractOp>(user);
    if (!extract || found)
      return {};
    found = extract;
  }
  if (!found || op->getNumResults() != 1 ||
      op.getBlock()->getTerminator()->getOperand(0) != found.getResult())
    return {};
  return found;
}

/// Whether \p op is a gather the scatter-add can reverse: parallel loops
/// of static extent, operands read through projected permutations.
LogicalResult checkGather(linalg::LinalgOp op, tensor::ExtractOp extract) {
  if (!extract)
    return op->emitError()
           << "cannot differentiate '" << op->getName()
           << "': its body reads a tensor that depends on a parameter other "
              "than by yielding one tensor.extract of it (a gather)";
  if (op.getNumReductionLoops() > 0 || ShapedType::isDynamicShape(
                                           op.getStaticLoopRanges()))
    return op->emitError() << "cannot differentiate '" << op->getName()
                           << "': a gather needs parallel loops of static "
                              "extent";
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return op->emitError() << "cannot differentiate '" << op->getName()
                             << "': a gather must read its operands through "
                                "projected permutations";
  return success();
}

/// Clones \p op's body except \p skip (and the terminator) at \p nb's
/// insertion point, with block arguments read from their operands at
/// \p ivs and linalg.index replaced by the loop indices.
void cloneBodyAt(OpBuilder &nb, Location loc, linalg::LinalgOp op,
                 Operation *skip, ValueRange ivs, IRMapping &mapping) {
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    mapping.map(arg, tensor::ExtractOp::create(
                         nb, loc, operand.get(),
                         coordinatesAt(op.getMatchingIndexingMap(&operand),
                                       ivs)));
  }
  for (Operation &inner : op.getBlock()->without_terminator()) {
    if (&inner == skip)
      continue;
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    nb.clone(inner, mapping);
  }
}

} // namespace

bool mlir::mp::isDataMovement(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp>(
      op);
}

FailureOr<SmallVector<OperandGradient>>
mlir::mp::dataMovementGradients(Operation *op, Value resultGrad,
                                OpBuilder &b) {
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return extractSliceGradient(slice, resultGrad, b);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return insertSliceGradient(insert, resultGrad, b);
  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return concatGradient(concat, resultGrad, b);
  return SmallVector<OperandGradient>();
}

SmallVector<Value> mlir::mp::extractedTables(linalg::LinalgOp op) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegion(0), captured);
  SmallVector<Value> tables;
  for (Value value : captured)
    if (isa<RankedTensorType>(value.getType()))
      tables.push_back(value);
  return tables;
}

FailureOr<Value> mlir::mp::gatherTableGradient(linalg::LinalgOp op,
                                               Value table, Value resultGrad,
                                               OpBuilder &b) {
  tensor::ExtractOp extract = yieldedExtract(op, table);
  if (failed(checkGather(op, extract)))
    return failure();
  Location loc = op.getLoc();
  SmallVector<Value> lbs, ubs, steps;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t extent : op.getStaticLoopRanges()) {
    lbs.push_back(zero);
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, extent));
    steps.push_back(one);
  }
  AffineMap resultMap = op.getIndexingMapMatchingResult(op->getResult(0));
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{zerosLike(b, loc, table)},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs,
          ValueRange acc) -> scf::ValueVector {
        IRMapping mapping;
        cloneBodyAt(nb, nloc, op, extract, ivs, mapping);
        SmallVector<Value> coords;
        for (Value index : extract.getIndices())
          coords.push_back(mapping.lookupOrDefault(index));
        Value dy = tensor::ExtractOp::create(
            nb, nloc, resultGrad, coordinatesAt(resultMap, ivs));
        Value old = tensor::ExtractOp::create(nb, nloc, acc[0], coords);
        Value sum = arith::AddFOp::create(nb, nloc, old, dy);
        return {tensor::InsertOp::create(nb, nloc, sum, acc[0], coords)
                    .getResult()};
      });
  return nest.results.front();
}
