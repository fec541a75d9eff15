//===- VectorizeLoops.cpp - affine vectorization of unit-stride loops -----===//
//
// Upstream's affine-super-vectorize takes an access such as %a[2 * %i] for
// contiguous along %i and loads 16 consecutive elements instead of every
// second one (llvm/llvm-project#177756): stride-2 convolutions and pools
// compute wrong numbers. This pass runs the same vectorizer, but only on the
// parallel loops whose every access either does not depend on the loop's
// induction variable or moves by exactly one element per iteration along a
// single dimension. Every other loop stays scalar and correct.
//
// The vectorizer leaves every transfer possibly out of bounds, which LLVM
// lowers to masked loads and stores (vmaskmovps: microcoded stores on AMD
// Zen, most of the time of mp's elementwise loops). A vectorized loop whose
// trip count is a multiple of the vector size touches only elements that the
// scalar loop touched, so its transfers are marked in bounds; a loop of
// constant bounds that is not whole vectors is split into whole vectors
// and a scalar rest.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineValueMap.h"
#include "mlir/Dialect/Affine/LoopUtils.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPVECTORIZELOOPS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// LLVM packs a vector of i1 into bits where a memref of i1 holds a byte
/// per element: a vector load or store of one reads and writes the wrong
/// elements (the split inf checks' flags).
bool hasSubByteElements(MemRefType memref) {
  Type element = memref.getElementType();
  return element.isIntOrFloat() && element.getIntOrFloatBitWidth() < 8;
}

/// Whether \p memref's innermost dimension has unit stride in memory.
bool hasUnitInnermostStride(MemRefType memref) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(memref.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// Whether \p expr, a result of \p map, advances by exactly one per step of
/// the operand at \p ivPosition: a unit coefficient and no local (floordiv
/// or mod) terms.
bool advancesByOne(AffineExpr expr, const affine::AffineValueMap &map,
                   unsigned ivPosition) {
  SmallVector<int64_t, 8> flat;
  if (failed(getFlattenedAffineExpr(expr, map.getNumDims(), map.getNumSymbols(),
                                    &flat)))
    return false;
  // Layout: dims, symbols, locals (floordiv/mod terms), constant. A local
  // term built from the iv is not a unit stride.
  bool hasLocals = flat.size() != map.getNumDims() + map.getNumSymbols() + 1;
  return !hasLocals && flat[ivPosition] == 1;
}

/// Whether \p expr, a result of \p map, uses the operand at \p ivPosition.
bool usesOperand(AffineExpr expr, const affine::AffineValueMap &map,
                 unsigned ivPosition) {
  if (ivPosition < map.getNumDims())
    return expr.isFunctionOfDim(ivPosition);
  return expr.isFunctionOfSymbol(ivPosition - map.getNumDims());
}

/// True when \p access advances by exactly one element per step of \p iv
/// along the memref's innermost, unit-stride dimension and no other, or is a
/// read that ignores \p iv (a broadcast). A write that ignores the iv can only
/// sit in a loop of one trip (isLoopParallel accepts those), and the vectorizer
/// would make it an invalid broadcasting vector.transfer_write.
bool isContiguousOrInvariant(Operation *access, Value iv) {
  affine::AffineValueMap map;
  affine::MemRefAccess(access).getAccessMap(&map);
  ArrayRef<Value> operands = map.getOperands();
  const auto *position = llvm::find(operands, iv);
  if (position == operands.end())
    return isa<affine::AffineReadOpInterface>(access);
  unsigned ivPosition = position - operands.begin();

  auto memref = cast<MemRefType>(affine::MemRefAccess(access).memref.getType());
  if (hasSubByteElements(memref))
    return false;
  // Only the innermost dimension, with unit stride in memory, makes the
  // vector one contiguous load or store; the vectorizer would turn other
  // dimensions into slow element-wise transfers.
  if (map.getNumResults() == 0 || !hasUnitInnermostStride(memref))
    return false;
  unsigned last = map.getNumResults() - 1;
  for (unsigned result = 0; result <= last; ++result) {
    AffineExpr expr = map.getResult(result);
    if (!usesOperand(expr, map, ivPosition))
      continue;
    return result == last && advancesByOne(expr, map, ivPosition);
  }
  // The iv is an operand that no result uses: invariant after all.
  return isa<affine::AffineReadOpInterface>(access);
}

/// True when \p value is computed from \p iv through affine.apply ops.
bool dependsOn(Value value, Value iv) {
  if (value == iv)
    return true;
  auto apply = value.getDefiningOp<affine::AffineApplyOp>();
  return apply && llvm::any_of(apply.getMapOperands(), [&](Value operand) {
           return dependsOn(operand, iv);
         });
}

/// True when the vectorized \p loop (step \p vectorSize) runs a whole number
/// of vectors: its bounds differ by a constant multiple of the step.
bool runsWholeVectors(affine::AffineForOp loop, int64_t vectorSize) {
  AffineMap lower = loop.getLowerBoundMap(), upper = loop.getUpperBoundMap();
  if (loop.getStepAsInt() != vectorSize || lower.getNumResults() != 1 ||
      upper.getNumResults() != 1 || lower.getNumDims() != upper.getNumDims() ||
      lower.getNumSymbols() != upper.getNumSymbols() ||
      !llvm::equal(loop.getLowerBoundOperands(), loop.getUpperBoundOperands()))
    return false;
  AffineExpr span =
      simplifyAffineExpr(upper.getResult(0) - lower.getResult(0),
                         lower.getNumDims(), lower.getNumSymbols());
  auto constant = dyn_cast<AffineConstantExpr>(span);
  return constant && constant.getValue() > 0 &&
         constant.getValue() % vectorSize == 0;
}

/// Marks in bounds the transfers of a loop that runs whole vectors along
/// its induction variable: lane j of the access at iv is the scalar access
/// of iteration iv + j, which the scalar loop made.
void markInBounds(affine::AffineForOp loop, int64_t vectorSize) {
  if (!runsWholeVectors(loop, vectorSize))
    return;
  // A conditional access need not have happened for every iteration.
  if (loop.getBody()
          ->walk([](affine::AffineIfOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return;
  Value iv = loop.getInductionVar();
  loop.getBody()->walk([&](VectorTransferOpInterface transfer) {
    if (transfer.getVectorType().getRank() != 1 ||
        transfer.getIndices().empty() ||
        !dependsOn(transfer.getIndices().back(), iv) ||
        !transfer.getPermutationMap().isMinorIdentity())
      return;
    OpBuilder builder(transfer);
    transfer->setAttr(transfer.getInBoundsAttrName(),
                      builder.getBoolArrayAttr({true}));
  });
}

/// The lanes of a vector reduction combined as a tree of vector ops (halves,
/// then quarters, ...) where the order cannot change the result: a max or
/// min (maximumf, minimumf: NaN if any lane is NaN, +0 above -0) is the
/// same whatever the order. LLVM's x86 code for a NaN-propagating
/// vector.reduce.fmaximum is a serial chain of scalar compares and masked
/// moves, one per lane: most of a softmax row's time at 128 columns. A sum
/// may reassociate (`reassoc`): LLVM then adds halves as well instead of
/// sixteen dependent scalar adds; the vector accumulators already sum in
/// another order than the scalar loop.
/// maximumf or minimumf of \p a and \p b, as \p kind says.
Value combineMinMax(OpBuilder &builder, Location loc,
                    vector::CombiningKind kind, Value a, Value b) {
  if (kind == vector::CombiningKind::MAXIMUMF)
    return arith::MaximumFOp::create(builder, loc, a, b);
  return arith::MinimumFOp::create(builder, loc, a, b);
}

/// The max or min of \p value's \p lanes (a power of two) as a tree:
/// halves, then quarters, ..., down to one element.
Value reduceAsTree(OpBuilder &builder, Location loc, vector::CombiningKind kind,
                   Value value, int64_t lanes) {
  for (int64_t half = lanes / 2; half >= 1; half /= 2) {
    Value low = vector::ExtractStridedSliceOp::create(
        builder, loc, value, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{half},
        ArrayRef<int64_t>{1});
    Value high = vector::ExtractStridedSliceOp::create(
        builder, loc, value, ArrayRef<int64_t>{half}, ArrayRef<int64_t>{half},
        ArrayRef<int64_t>{1});
    value = combineMinMax(builder, loc, kind, low, high);
  }
  return vector::ExtractOp::create(builder, loc, value, 0);
}

/// The fixed-size 1-D float vector type a reduction reads, or null.
VectorType floatVectorType(vector::ReductionOp reduction) {
  auto type = dyn_cast<VectorType>(reduction.getVector().getType());
  if (!type || type.getRank() != 1 || type.isScalable() ||
      !isa<FloatType>(type.getElementType()))
    return {};
  return type;
}

void combineLanesAsTree(vector::ReductionOp reduction) {
  VectorType type = floatVectorType(reduction);
  if (!type)
    return;
  vector::CombiningKind kind = reduction.getKind();
  if (kind == vector::CombiningKind::ADD) {
    reduction.setFastmath(reduction.getFastmath() |
                          arith::FastMathFlags::reassoc);
    return;
  }
  if (kind != vector::CombiningKind::MAXIMUMF &&
      kind != vector::CombiningKind::MINIMUMF)
    return;
  int64_t lanes = type.getNumElements();
  if (lanes < 2 || !llvm::isPowerOf2_64(lanes))
    return;
  OpBuilder builder(reduction);
  Location loc = reduction.getLoc();
  Value result = reduceAsTree(builder, loc, kind, reduction.getVector(), lanes);
  if (Value accumulator = reduction.getAcc())
    result = combineMinMax(builder, loc, kind, result, accumulator);
  reduction.replaceAllUsesWith(result);
  reduction.erase();
}

struct VectorizeLoopsPass
    : public mp::impl::MPVectorizeLoopsBase<VectorizeLoopsPass> {
  using MPVectorizeLoopsBase::MPVectorizeLoopsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (vectorSize <= 0 || maxUnrolledVectors < 0) {
      func.emitError() << "mp-vectorize-loops: vector-size must be positive "
                          "and max-unrolled-vectors not negative, got "
                       << static_cast<int64_t>(vectorSize) << " and "
                       << static_cast<int64_t>(maxUnrolledVectors);
      return signalPassFailure();
    }

    // Only the reductions this pass makes are rewritten below.
    llvm::DenseSet<Operation *> givenReductions;
    func.walk([&](vector::ReductionOp op) { givenReductions.insert(op); });

    llvm::DenseSet<Operation *> candidates;
    affine::ReductionLoopMap reductionLoops;
    func.walk([&](affine::AffineForOp loop) {
      // iter_args are taken where they are reductions the vectorizer
      // knows (mp-promote-accumulators makes them): vector accumulators,
      // combined after the loop, which sums in another order.
      SmallVector<affine::LoopReduction, 2> reductions;
      // A loop shorter than one vector would run only its masked tail,
      // which is slower than the scalar loop.
      std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
      // A thread's share of a parallel loop (mp-parallelize-loops) has
      // bounds that need not be whole vectors.
      if ((trips && *trips < static_cast<uint64_t>(vectorSize)) ||
          loop->hasAttr(mp::kParallelChunkAttrName) ||
          !affine::isLoopParallel(loop, &reductions))
        return;
      Value iv = loop.getInductionVar();
      WalkResult accesses = loop.getBody()->walk([&](Operation *op) {
        if (!isa<affine::AffineReadOpInterface, affine::AffineWriteOpInterface>(
                op))
          return WalkResult::advance();
        return isContiguousOrInvariant(op, iv) ? WalkResult::advance()
                                               : WalkResult::interrupt();
      });
      if (accesses.wasInterrupted())
        return;
      candidates.insert(loop);
      if (!reductions.empty())
        reductionLoops[loop] = reductions;
    });
    if (candidates.empty())
      return;
    // A loop of constant bounds that is not whole vectors: the whole
    // vectors here, the rest (fewer than vector-size iterations) in a
    // scalar loop after it, so that no transfer needs a mask.
    for (Operation *candidate : candidates) {
      auto loop = cast<affine::AffineForOp>(candidate);
      std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
      if (!loop.hasConstantBounds() || loop.getStepAsInt() != 1 || !trips ||
          *trips % vectorSize == 0)
        continue;
      int64_t split = loop.getConstantLowerBound() +
                      static_cast<int64_t>(*trips / vectorSize) * vectorSize;
      OpBuilder builder(loop);
      builder.setInsertionPointAfter(loop);
      auto rest = cast<affine::AffineForOp>(builder.clone(*loop));
      rest.setConstantLowerBound(split);
      loop.setConstantUpperBound(split);
      // A reduction goes on from where the whole vectors left it.
      loop->replaceAllUsesWith(rest->getResults());
      rest.getInitsMutable().assign(loop.getResults());
    }
    affine::vectorizeAffineLoops(func, candidates, {vectorSize},
                                 /*fastestVaryingPattern=*/{}, reductionLoops);
    func.walk(
        [&](affine::AffineForOp loop) { markInBounds(loop, vectorSize); });
    // Innermost vector loops of a few iterations (a block of a parallel
    // loop, a 64-wide head) run unrolled: LLVM kept each one behind a
    // bounds check, which stopped it from keeping an accumulator that the
    // loops around it update (a column sum's) in a register.
    SmallVector<affine::AffineForOp> shortLoops;
    func.walk([&](affine::AffineForOp loop) {
      std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
      if (loop.getStepAsInt() == vectorSize && trips &&
          *trips <= static_cast<uint64_t>(maxUnrolledVectors) &&
          loop.getNumResults() == 0 &&
          !loop->hasAttr(mp::kParallelChunkAttrName) &&
          loop.getBody()->getOps<affine::AffineForOp>().empty())
        shortLoops.push_back(loop);
    });
    for (affine::AffineForOp loop : shortLoops)
      (void)affine::loopUnrollFull(loop);
    SmallVector<vector::ReductionOp> reductions;
    func.walk([&](vector::ReductionOp op) {
      if (!givenReductions.contains(op))
        reductions.push_back(op);
    });
    for (vector::ReductionOp reduction : reductions)
      combineLanesAsTree(reduction);
  }
};

} // namespace
