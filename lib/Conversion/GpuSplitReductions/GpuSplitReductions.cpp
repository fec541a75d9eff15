//===- GpuSplitReductions.cpp - long reductions as parallel partials ------===//
//
// On the GPU every output element of a linalg.generic is one thread, and
// that thread runs the reduction loops serially: a latency-bound loop of
// loads. A full reduction (the inf/nan check of a gradient, a summed loss)
// would run on a single thread, a column sum over many rows on few threads
// with long loops. This pass splits each reduction loop d of size R * P
// into a serial r < R and a parallel p < P with d = r * P + p, so threads
// write partial results, then combines the partials with a second generic,
// split again while it is still long.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPGPUSPLITREDUCTIONS
#include "mp/Conversion/Passes.h.inc"
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

std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArgument(op.getNumDpsInputs());
  Operation *combiner =
      body.getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      combiner->getNumOperands() != 2 || !combiner->hasOneUse() ||
      !out.hasOneUse() || *out.getUsers().begin() != combiner)
    return std::nullopt;
  if (auto sub = dyn_cast<arith::SubFOp>(combiner)) {
    if (sub.getLhs() != out)
      return std::nullopt;
    return Combiner{combiner, true, FloatAttr::get(out.getType(), 0.0)};
  }
  if (!isa<arith::AddFOp, arith::MulFOp, arith::AddIOp, arith::MulIOp,
           arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::MaximumFOp,
           arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
           arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(
          combiner))
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

struct GpuSplitReductionsPass
    : public mp::impl::MPGpuSplitReductionsBase<GpuSplitReductionsPass> {
  using Base::Base;

  /// Whether \p op is a reduction this pass may split and whose threads
  /// run more than perThread serial iterations.
  bool isLongSplittableReduction(linalg::GenericOp op) {
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
    for (AffineExpr result : outMap.getResults())
      if (iterators[cast<AffineDimExpr>(result).getPosition()] !=
          utils::IteratorType::parallel)
        return false;
    int64_t work = 1;
    for (auto [range, kind] : llvm::zip(op.getStaticLoopRanges(), iterators)) {
      if (ShapedType::isDynamic(range))
        return false;
      if (kind == utils::IteratorType::reduction)
        work *= range;
    }
    // A split must leave each thread some serial work, or the combining
    // generic would be as long as this one (a prime-sized loop stays).
    int64_t serial = 1;
    for (int64_t part : serialParts(op, perThread, lanes))
      serial *= part;
    return work > perThread && serial > 1 && matchCombiner(op).has_value();
  }

  /// Splits \p op into partials and their combination; returns the
  /// combining generic (itself perhaps still long).
  linalg::GenericOp split(IRRewriter &rewriter, linalg::GenericOp op) {
    Combiner combiner = *matchCombiner(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();

    // Serial and parallel parts of each loop, outermost reduction first.
    // New loops: a parallel loop stays; a reduction loop becomes r (if
    // R > 1) then p (if P > 1), or itself when R or P is 1 (a loop of one
    // iteration stays a reduction loop of one).
    SmallVector<int64_t> serialPart = serialParts(op, perThread, lanes);
    SmallVector<utils::IteratorType> newIterators;
    SmallVector<int64_t> newRanges;
    SmallVector<SmallVector<unsigned, 2>> newDims(ranges.size());
    for (auto [i, kind] : llvm::enumerate(iterators)) {
      auto add = [&](utils::IteratorType k, int64_t range) {
        newDims[i].push_back(newIterators.size());
        newIterators.push_back(k);
        newRanges.push_back(range);
      };
      if (kind == utils::IteratorType::parallel) {
        add(kind, ranges[i]);
        continue;
      }
      if (serialPart[i] > 1 || ranges[i] == 1) // a unit loop stays as it is
        add(utils::IteratorType::reduction, serialPart[i]);
      if (serialPart[i] < ranges[i])
        add(utils::IteratorType::parallel, ranges[i] / serialPart[i]);
    }
    unsigned numNewDims = newIterators.size();

    // Inputs: each dimension indexed by a split loop expands to (R, P).
    rewriter.setInsertionPoint(op);
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (OpOperand *operand : op.getDpsInputOperands()) {
      auto type = cast<RankedTensorType>(operand->get().getType());
      AffineMap map = op.getMatchingIndexingMap(operand);
      SmallVector<ReassociationIndices> groups;
      SmallVector<int64_t> shape;
      SmallVector<AffineExpr> results;
      for (AffineExpr result : map.getResults()) {
        unsigned dim = cast<AffineDimExpr>(result).getPosition();
        ReassociationIndices group;
        for (unsigned newDim : newDims[dim]) {
          group.push_back(shape.size());
          shape.push_back(newRanges[newDim]);
          results.push_back(getAffineDimExpr(newDim, ctx));
        }
        groups.push_back(group);
      }
      Value input = operand->get();
      if (shape.size() != static_cast<size_t>(type.getRank()))
        input = tensor::ExpandShapeOp::create(
            rewriter, loc, type.clone(shape), input, groups);
      inputs.push_back(input);
      maps.push_back(AffineMap::get(numNewDims, 0, results, ctx));
    }

    // The partials: one per new parallel loop point, from the neutral value.
    Type elementType = combiner.neutral.getType();
    SmallVector<int64_t> partialShape;
    SmallVector<AffineExpr> partialResults;
    for (unsigned d = 0; d < numNewDims; ++d)
      if (newIterators[d] == utils::IteratorType::parallel) {
        partialShape.push_back(newRanges[d]);
        partialResults.push_back(getAffineDimExpr(d, ctx));
      }
    auto partialType = RankedTensorType::get(partialShape, elementType);
    Value neutral = arith::ConstantOp::create(rewriter, loc, combiner.neutral);
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, partialShape, elementType);
    Value init =
        linalg::FillOp::create(rewriter, loc, neutral, empty).getResult(0);
    maps.push_back(AffineMap::get(numNewDims, 0, partialResults, ctx));
    auto partials = linalg::GenericOp::create(rewriter, loc, partialType,
                                              inputs, init, maps, newIterators);
    rewriter.cloneRegionBefore(op.getRegion(), partials.getRegion(),
                               partials.getRegion().end());

    // Combining: the partials' loops, p loops now reducing into the
    // original init through the original output map.
    SmallVector<utils::IteratorType> combineIterators;
    SmallVector<unsigned> combineDimOf(numNewDims, 0);
    for (unsigned d = 0; d < numNewDims; ++d)
      if (newIterators[d] == utils::IteratorType::parallel) {
        combineDimOf[d] = combineIterators.size();
        bool wasParallel =
            llvm::any_of(llvm::enumerate(iterators), [&](auto it) {
              return it.value() == utils::IteratorType::parallel &&
                     newDims[it.index()].front() == d;
            });
        combineIterators.push_back(wasParallel
                                       ? utils::IteratorType::parallel
                                       : utils::IteratorType::reduction);
      }
    SmallVector<AffineExpr> outResults;
    for (AffineExpr result :
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getResults()) {
      unsigned dim = cast<AffineDimExpr>(result).getPosition();
      outResults.push_back(
          getAffineDimExpr(combineDimOf[newDims[dim].front()], ctx));
    }
    unsigned numCombineDims = combineIterators.size();
    SmallVector<AffineMap> combineMaps = {
        AffineMap::getMultiDimIdentityMap(numCombineDims, ctx),
        AffineMap::get(numCombineDims, 0, outResults, ctx)};
    auto combine = linalg::GenericOp::create(
        rewriter, loc, op.getResultTypes(), partials.getResult(0),
        op.getDpsInits(), combineMaps, combineIterators,
        [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
          Value folded;
          if (combiner.subtracts) {
            folded = arith::AddFOp::create(b, bodyLoc, args[1], args[0]);
          } else {
            Operation *clone = b.clone(*combiner.op);
            clone->setOperands({args[1], args[0]});
            folded = clone->getResult(0);
          }
          linalg::YieldOp::create(b, bodyLoc, folded);
        });
    rewriter.replaceOp(op, combine.getResults());
    return combine;
  }

  void runOnOperation() override {
    if (perThread < 2) {
      getOperation().emitError("mp-gpu-split-reductions: per-thread must be "
                               "at least 2, got ")
          << static_cast<int64_t>(perThread);
      return signalPassFailure();
    }
    if (lanes < 0) {
      getOperation().emitError(
          "mp-gpu-split-reductions: lanes must not be negative, got ")
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
