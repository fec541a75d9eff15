//===- SplitReductions.cpp - long reductions as parallel partials ---------===//
//
// On the GPU every output element of a linalg.generic is one thread, and
// that thread runs the reduction loops serially: a latency-bound loop of
// loads. A full reduction (the inf/nan check of a gradient, a summed loss)
// would run on a single thread, a column sum over many rows on few threads
// with long loops. This pass splits each reduction loop d of size R * P
// into a serial r < R and a parallel p < P with d = r * P + p, so threads
// write partial results, then combines the partials with a second generic,
// split again while it is still long. The CPU lowering runs it too (with
// lanes): long f32 sums lose less accuracy as partials, and the partials
// fill vector lanes and CPU threads.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPSPLITREDUCTIONS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// How a generic's body folds each value into its output: `combiner(out,
/// x)` for an associative, commutative arith op, or `out - x`, whose
/// partials (each `0 - x - x' ...`) are then added.
struct Combiner {
  Operation *op;
  bool subtracts;
  TypedAttr neutral;
};

/// The op that yields \p op's result from its accumulator \p out and
/// nothing else: its only user, in the body, with two operands; or null.
Operation *soleCombinerOf(linalg::GenericOp op, BlockArgument out) {
  Block &body = op.getRegion().front();
  Operation *combiner = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      combiner->getNumOperands() != 2 || !combiner->hasOneUse() ||
      !out.hasOneUse() || *out.getUsers().begin() != combiner)
    return nullptr;
  return combiner;
}

bool isAssociativeCommutative(Operation *op) {
  return isa<arith::AddFOp, arith::MulFOp, arith::AddIOp, arith::MulIOp,
             arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::MaximumFOp,
             arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
             arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(
      op);
}

std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArgument(op.getNumDpsInputs());
  Operation *combiner = soleCombinerOf(op, out);
  if (!combiner)
    return std::nullopt;
  if (auto sub = dyn_cast<arith::SubFOp>(combiner)) {
    if (sub.getLhs() != out)
      return std::nullopt;
    return Combiner{combiner, true, FloatAttr::get(out.getType(), 0.0)};
  }
  if (!isAssociativeCommutative(combiner))
    return std::nullopt;
  std::optional<TypedAttr> neutral = arith::getNeutralElement(combiner);
  if (!neutral)
    return std::nullopt;
  return Combiner{combiner, false, *neutral};
}

/// The largest divisor of \p n that is at most \p bound (at least 1).
int64_t largestDivisorAtMost(int64_t n, int64_t bound) {
  for (int64_t d = std::min(n, bound); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

/// With \p lanes > 1, when the innermost loop is a reduction over the last
/// dimension of every input and \p lanes divide it with at least \p lanes
/// serial steps left (CPU vectors), the serial parts that keep its \p lanes
/// neighbouring elements apart as partials (`d = r * lanes + p`) and every
/// other loop parallel: each row of the input then has partials of its own,
/// and the threads may take rows, whose elements lie together. Empty
/// otherwise.
SmallVector<int64_t> serialPartsByRows(linalg::GenericOp op, int64_t perThread,
                                       int64_t lanes) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (lanes < 2 || ranges.empty() ||
      iterators.back() != utils::IteratorType::reduction)
    return {};
  unsigned innermost = ranges.size() - 1;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() == 0 ||
        map.getResults().back() != getAffineDimExpr(innermost, op.getContext()))
      return {};
  }
  if (ranges.back() % lanes != 0)
    return {};
  int64_t serial = largestDivisorAtMost(ranges.back() / lanes, perThread);
  if (serial < lanes)
    return {};
  SmallVector<int64_t> parts(ranges.size(), 1);
  parts.back() = serial;
  return parts;
}

/// How many iterations of each loop of \p op a thread runs serially: 1
/// for parallel loops; for reduction loops, outermost first, the largest
/// divisor of the loop's size that keeps the product within \p perThread
/// (or serialPartsByRows where it applies).
SmallVector<int64_t> serialParts(linalg::GenericOp op, int64_t perThread,
                                 int64_t lanes) {
  SmallVector<int64_t> byRows = serialPartsByRows(op, perThread, lanes);
  if (!byRows.empty())
    return byRows;
  SmallVector<int64_t> parts;
  int64_t budget = perThread;
  for (auto [range, kind] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    parts.push_back(kind == utils::IteratorType::reduction
                        ? largestDivisorAtMost(range, budget)
                        : 1);
    budget /= parts.back();
  }
  return parts;
}

/// Whether \p op has the form this pass splits: one init, ranked tensor
/// inputs, no index ops, not a contraction, all maps projected
/// permutations, and an output indexed by parallel loops only.
bool hasSplittableForm(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.hasIndexSemantics() || linalg::isaContractionOpInterface(op) ||
      !llvm::all_of(op.getDpsInputs(), [](Value input) {
        return isa<RankedTensorType>(input.getType());
      }))
    return false;
  if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
        return map.isProjectedPermutation(/*allowZeroInResults=*/false);
      }))
    return false;
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  return llvm::all_of(outMap.getResults(), [&](AffineExpr result) {
    return iterators[cast<AffineDimExpr>(result).getPosition()] ==
           utils::IteratorType::parallel;
  });
}

/// The iterations of \p op's reduction loops; nothing when a loop is
/// dynamic.
std::optional<int64_t> reductionWork(linalg::GenericOp op) {
  int64_t work = 1;
  for (auto [range, kind] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    if (kind == utils::IteratorType::reduction)
      work *= range;
  }
  return work;
}

/// The loops of the split generic (the partials): a parallel loop stays;
/// a reduction loop becomes r (if R > 1) then p (if P > 1), or itself when
/// R or P is 1 (a loop of one iteration stays a reduction loop of one).
struct SplitLoops {
  SmallVector<utils::IteratorType> iterators;
  SmallVector<int64_t> ranges;
  /// For each original loop, the new loops it became.
  SmallVector<SmallVector<unsigned, 2>> dims;

  SplitLoops(ArrayRef<utils::IteratorType> oldIterators,
             ArrayRef<int64_t> oldRanges, ArrayRef<int64_t> serialPart);
  void add(unsigned oldDim, utils::IteratorType kind, int64_t range) {
    dims[oldDim].push_back(iterators.size());
    iterators.push_back(kind);
    ranges.push_back(range);
  }
  unsigned size() const { return iterators.size(); }
  bool isParallel(unsigned d) const {
    return iterators[d] == utils::IteratorType::parallel;
  }
};

SplitLoops::SplitLoops(ArrayRef<utils::IteratorType> oldIterators,
                       ArrayRef<int64_t> oldRanges,
                       ArrayRef<int64_t> serialPart)
    : dims(oldRanges.size()) {
  for (auto [i, kind] : llvm::enumerate(oldIterators)) {
    if (kind == utils::IteratorType::parallel) {
      add(i, kind, oldRanges[i]);
      continue;
    }
    if (serialPart[i] > 1 || oldRanges[i] == 1) // a unit loop stays as it is
      add(i, utils::IteratorType::reduction, serialPart[i]);
    if (serialPart[i] < oldRanges[i])
      add(i, utils::IteratorType::parallel, oldRanges[i] / serialPart[i]);
  }
}

/// \p operand of \p op read by the split generic: each dimension indexed
/// by a split loop expands to (R, P); \p map receives its new map.
Value splitInput(IRRewriter &rewriter, Location loc, linalg::GenericOp op,
                 OpOperand *operand, const SplitLoops &loops, AffineMap &map) {
  MLIRContext *ctx = op.getContext();
  auto type = cast<RankedTensorType>(operand->get().getType());
  SmallVector<ReassociationIndices> groups;
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> results;
  for (AffineExpr result : op.getMatchingIndexingMap(operand).getResults()) {
    unsigned dim = cast<AffineDimExpr>(result).getPosition();
    ReassociationIndices group;
    for (unsigned newDim : loops.dims[dim]) {
      group.push_back(shape.size());
      shape.push_back(loops.ranges[newDim]);
      results.push_back(getAffineDimExpr(newDim, ctx));
    }
    groups.push_back(group);
  }
  map = AffineMap::get(loops.size(), 0, results, ctx);
  Value input = operand->get();
  if (shape.size() == static_cast<size_t>(type.getRank()))
    return input;
  return tensor::ExpandShapeOp::create(rewriter, loc, type.clone(shape), input,
                                       groups);
}

/// The generic of partials: \p op's body over the split loops, one
/// partial per point of the new parallel loops, from the neutral value.
linalg::GenericOp buildPartials(IRRewriter &rewriter, linalg::GenericOp op,
                                const Combiner &combiner,
                                const SplitLoops &loops) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    AffineMap map;
    inputs.push_back(splitInput(rewriter, loc, op, operand, loops, map));
    maps.push_back(map);
  }
  Type elementType = combiner.neutral.getType();
  SmallVector<int64_t> partialShape;
  SmallVector<AffineExpr> partialResults;
  for (unsigned d = 0; d < loops.size(); ++d) {
    if (!loops.isParallel(d))
      continue;
    partialShape.push_back(loops.ranges[d]);
    partialResults.push_back(getAffineDimExpr(d, ctx));
  }
  auto partialType = RankedTensorType::get(partialShape, elementType);
  Value neutral = arith::ConstantOp::create(rewriter, loc, combiner.neutral);
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, partialShape, elementType);
  Value init =
      linalg::FillOp::create(rewriter, loc, neutral, empty).getResult(0);
  maps.push_back(AffineMap::get(loops.size(), 0, partialResults, ctx));
  auto partials = linalg::GenericOp::create(rewriter, loc, partialType, inputs,
                                            init, maps, loops.iterators);
  rewriter.cloneRegionBefore(op.getRegion(), partials.getRegion(),
                             partials.getRegion().end());
  return partials;
}

/// Whether new loop \p d is an original parallel loop (rather than the p
/// part of a split reduction).
bool wasParallel(ArrayRef<utils::IteratorType> oldIterators,
                 const SplitLoops &loops, unsigned d) {
  for (auto [i, kind] : llvm::enumerate(oldIterators))
    if (kind == utils::IteratorType::parallel && loops.dims[i].front() == d)
      return true;
  return false;
}

/// Yields the combination of a partial (args[0]) into the accumulator
/// (args[1]): a sum for a subtracting reduction, the combiner otherwise.
void yieldCombined(OpBuilder &b, Location bodyLoc, ValueRange args,
                   const Combiner &combiner) {
  Value folded;
  if (combiner.subtracts) {
    folded = arith::AddFOp::create(b, bodyLoc, args[1], args[0]);
  } else {
    Operation *clone = b.clone(*combiner.op);
    clone->setOperands({args[1], args[0]});
    folded = clone->getResult(0);
  }
  linalg::YieldOp::create(b, bodyLoc, folded);
}

/// The combining generic: the partials' parallel loops, p loops now
/// reducing into \p op's init through its output map.
linalg::GenericOp buildCombine(IRRewriter &rewriter, linalg::GenericOp op,
                               const Combiner &combiner,
                               const SplitLoops &loops,
                               linalg::GenericOp partials) {
  MLIRContext *ctx = op.getContext();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<utils::IteratorType> combineIterators;
  SmallVector<unsigned> combineDimOf(loops.size(), 0);
  for (unsigned d = 0; d < loops.size(); ++d) {
    if (!loops.isParallel(d))
      continue;
    combineDimOf[d] = combineIterators.size();
    combineIterators.push_back(wasParallel(iterators, loops, d)
                                   ? utils::IteratorType::parallel
                                   : utils::IteratorType::reduction);
  }
  SmallVector<AffineExpr> outResults;
  for (AffineExpr result :
       op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getResults()) {
    unsigned dim = cast<AffineDimExpr>(result).getPosition();
    outResults.push_back(
        getAffineDimExpr(combineDimOf[loops.dims[dim].front()], ctx));
  }
  unsigned numCombineDims = combineIterators.size();
  SmallVector<AffineMap> combineMaps = {
      AffineMap::getMultiDimIdentityMap(numCombineDims, ctx),
      AffineMap::get(numCombineDims, 0, outResults, ctx)};
  return linalg::GenericOp::create(
      rewriter, op.getLoc(), op.getResultTypes(), partials.getResult(0),
      op.getDpsInits(), combineMaps, combineIterators,
      [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
        yieldCombined(b, bodyLoc, args, combiner);
      });
}

struct SplitReductionsPass
    : public mp::impl::MPSplitReductionsBase<SplitReductionsPass> {
  using Base::Base;

  /// Whether \p op is a reduction this pass may split and whose threads
  /// run more than perThread serial iterations.
  bool isLongSplittableReduction(linalg::GenericOp op) {
    if (!hasSplittableForm(op))
      return false;
    std::optional<int64_t> work = reductionWork(op);
    if (!work)
      return false;
    // A split must leave each thread some serial work, or the combining
    // generic would be as long as this one (a prime-sized loop stays).
    int64_t serial = 1;
    for (int64_t part : serialParts(op, perThread, lanes))
      serial *= part;
    return *work > perThread && serial > 1 && matchCombiner(op).has_value();
  }

  /// Splits \p op into partials and their combination; returns the
  /// combining generic (itself perhaps still long).
  linalg::GenericOp split(IRRewriter &rewriter, linalg::GenericOp op) {
    Combiner combiner = *matchCombiner(op);
    // Serial and parallel parts of each loop, outermost reduction first.
    SplitLoops loops(op.getIteratorTypesArray(), op.getStaticLoopRanges(),
                     serialParts(op, perThread, lanes));
    linalg::GenericOp partials = buildPartials(rewriter, op, combiner, loops);
    linalg::GenericOp combine =
        buildCombine(rewriter, op, combiner, loops, partials);
    rewriter.replaceOp(op, combine.getResults());
    return combine;
  }

  void runOnOperation() override {
    if (perThread < 2) {
      getOperation().emitError("mp-split-reductions: per-thread must be "
                               "at least 2, got ")
          << static_cast<int64_t>(perThread);
      return signalPassFailure();
    }
    if (lanes < 0) {
      getOperation().emitError(
          "mp-split-reductions: lanes must not be negative, got ")
          << static_cast<int64_t>(lanes);
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> worklist;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isLongSplittableReduction(op))
        worklist.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    while (!worklist.empty()) {
      linalg::GenericOp combine = split(rewriter, worklist.pop_back_val());
      ++numSplit;
      if (isLongSplittableReduction(combine))
        worklist.push_back(combine);
    }
  }
};

} // namespace
