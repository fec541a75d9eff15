//===- ParallelizeLoops.cpp - outline large parallel loops for threads ----===//
//
// mp's compiled loops (elementwise chains, softmax, layer norm, the
// optimizer update) ran on one thread while oneDNN's products used them
// all; the other threads spun in libgomp. This pass outlines each large
// parallel loop nest into a function over a range of iterations, launched
// through a declaration that --mp-parallel-launches-to-runtime turns into
// mprt_parallel_for (libgomp's threads, the ones oneDNN uses). Outlining
// on affine loops, not MLIR's OpenMP dialect: its LLVM translation calls
// libomp's __kmpc_* entry points, which libgomp does not have, and two
// OpenMP runtimes in one process would each keep their own threads.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"
#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineValueMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPPARALLELIZELOOPS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Innermost iterations of \p loop's nest: its trip count times the work of
/// its body's loops (a loop without a constant trip count counts once).
uint64_t innermostIterations(affine::AffineForOp loop) {
  uint64_t body = 0;
  for (auto inner : loop.getBody()->getOps<affine::AffineForOp>())
    body = llvm::SaturatingAdd(body, innermostIterations(inner));
  std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
  return llvm::SaturatingMultiply(trips.value_or(1),
                                  std::max<uint64_t>(body, 1));
}

/// True when \p loop's induction variable appears in the last index of an
/// access in its body: the vectorizer may take the loop.
bool indexesLastDimension(affine::AffineForOp loop) {
  Value iv = loop.getInductionVar();
  WalkResult found = loop.getBody()->walk([&](Operation *op) {
    if (!isa<affine::AffineReadOpInterface, affine::AffineWriteOpInterface>(op))
      return WalkResult::advance();
    affine::AffineValueMap map;
    affine::MemRefAccess(op).getAccessMap(&map);
    if (map.getNumResults() == 0)
      return WalkResult::advance();
    ArrayRef<Value> operands = map.getOperands();
    const auto *position = llvm::find(operands, iv);
    if (position == operands.end())
      return WalkResult::advance();
    unsigned index = position - operands.begin();
    AffineExpr last = map.getResult(map.getNumResults() - 1);
    bool uses = index < map.getNumDims()
                    ? last.isFunctionOfDim(index)
                    : last.isFunctionOfSymbol(index - map.getNumDims());
    return uses ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// A value the outlined body can take as an argument.
bool isCapturable(Type type) {
  return isa<MemRefType, IndexType, IntegerType, FloatType, VectorType>(type);
}

/// A constant the body makes again instead of taking it as an argument.
bool isClonedConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>() &&
         def->getNumOperands() == 0 && def->getNumRegions() == 0;
}

/// The positions, in the LLVM signature of a body taking two indices and
/// then \p captured, of the pointers to a buffer that the body reaches
/// through one argument only: a buffer allocated by the caller, viewed by
/// no other captured memref (a function argument or a global may be any
/// other buffer; an allocation is none of them). A memref descriptor
/// expands to allocated pointer, aligned pointer, offset, sizes, strides.
SmallVector<int64_t> exclusiveBufferPointers(ArrayRef<Value> captured) {
  llvm::DenseMap<Value, unsigned> views;
  for (Value value : captured)
    if (isa<MemRefType>(value.getType()))
      ++views[mp::viewedBuffer(value)];
  SmallVector<int64_t> pointers;
  int64_t position = 2;
  for (Value value : captured) {
    auto type = dyn_cast<MemRefType>(value.getType());
    if (!type) {
      ++position;
      continue;
    }
    Value buffer = mp::viewedBuffer(value);
    if (mp::isAllocation(buffer) && views[buffer] == 1)
      pointers.append({position, position + 1});
    position += 3 + 2 * type.getRank();
  }
  return pointers;
}

/// Whether every value \p loop uses from above is a constant the outlined
/// body makes again or one it can take as an argument.
bool bodyCanTakeItsValues(affine::AffineForOp loop) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(loop.getRegion(), captured);
  return llvm::all_of(captured, [](Value value) {
    return isClonedConstant(value) || isCapturable(value.getType());
  });
}

/// \p root and the loops perfectly nested in it down to the first
/// parallel loop of constant bounds below \p root, none carrying values;
/// empty when there is no such chain.
SmallVector<affine::AffineForOp> chainDownToParallel(affine::AffineForOp root) {
  SmallVector<affine::AffineForOp> chain{root};
  while (true) {
    affine::AffineForOp last = chain.back();
    if (last.getNumIterOperands() != 0)
      return {};
    if (chain.size() > 1 && last.hasConstantBounds() &&
        affine::isLoopParallel(last))
      return chain;
    Block *body = last.getBody();
    auto next = dyn_cast<affine::AffineForOp>(body->front());
    if (!next || body->getOperations().size() != 2)
      return {};
    chain.push_back(next);
  }
}

/// Whether memory in \p root is touched only by affine loads and stores,
/// which the dependence analysis sees.
bool touchesMemoryOnlyAffinely(affine::AffineForOp root) {
  WalkResult other = root->walk([&](Operation *op) {
    if (isa<affine::AffineReadOpInterface, affine::AffineWriteOpInterface,
            affine::AffineForOp, affine::AffineYieldOp>(op) ||
        isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !other.wasInterrupted();
}

/// Whether every dependence in \p root, whichever loop carries it, has
/// distance 0 in the loop at \p depth (the parallel one).
bool dependencesKeepIteration(affine::AffineForOp root, unsigned depth) {
  std::vector<SmallVector<affine::DependenceComponent, 2>> dependences;
  affine::getDependenceComponents(root, depth, &dependences);
  for (const auto &components : dependences) {
    if (components.size() < depth)
      return false;
    const affine::DependenceComponent &distance = components[depth - 1];
    if (!distance.lb || !distance.ub || *distance.lb != 0 || *distance.ub != 0)
      return false;
  }
  return true;
}

/// A private function \p name of \p leading index arguments, then the
/// \p captured values.
func::FuncOp declareFunction(OpBuilder &builder, Location loc,
                             const Twine &name, unsigned leading,
                             ArrayRef<Value> captured) {
  SmallVector<Type> types(leading, builder.getIndexType());
  for (Value value : captured)
    types.push_back(value.getType());
  auto function = func::FuncOp::create(builder, loc, name.str(),
                                       builder.getFunctionType(types, {}));
  function.setPrivate();
  return function;
}

/// Splits the values \p loop's body uses from above: constants, cloned
/// into an outlined body, and the rest, passed as arguments.
void splitUsedFromAbove(affine::AffineForOp loop,
                        SmallVectorImpl<Value> &captured,
                        SmallVectorImpl<Value> &constants) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(loop.getRegion(), above);
  for (Value value : above)
    (isClonedConstant(value) ? constants : captured).push_back(value);
}

/// How \p loop is divided among the threads: `units` blocks of `block`
/// iterations each, from `lower` in steps of `step`.
struct LoopShares {
  int64_t lower, step, trips, block, units;
};

/// Builds, at \p builder's insertion point in the outlined body, the
/// thread's share: iterations (or blocks) [begin, end); returns the
/// induction variable that stands for \p loop's.
Value buildThreadShare(OpBuilder &builder, Location loc, Value begin, Value end,
                       const LoopShares &shares) {
  int64_t lower = shares.lower, block = shares.block;
  AffineExpr s0 = builder.getAffineSymbolExpr(0);
  AffineMap first =
      AffineMap::get(0, 1, block == 1 ? s0 * shares.step + lower : s0);
  auto share = affine::AffineForOp::create(builder, loc, ValueRange{begin},
                                           first, ValueRange{end}, first,
                                           block == 1 ? shares.step : 1);
  share->setAttr(mp::kParallelChunkAttrName, builder.getUnitAttr());
  builder.setInsertionPoint(share.getBody()->getTerminator());
  Value iv = share.getInductionVar();
  if (block == 1)
    return iv;
  // One block: a loop of `block` iterations from the block's start.
  AffineExpr d0 = builder.getAffineDimExpr(0);
  auto inner = affine::AffineForOp::create(
      builder, loc, ValueRange{iv}, AffineMap::get(1, 0, d0 * block + lower),
      ValueRange{iv}, AffineMap::get(1, 0, d0 * block + lower + block), 1);
  builder.setInsertionPoint(inner.getBody()->getTerminator());
  return inner.getInductionVar();
}

struct ParallelizeLoopsPass
    : public mp::impl::MPParallelizeLoopsBase<ParallelizeLoopsPass> {
  using MPParallelizeLoopsBase::MPParallelizeLoopsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minWork < 1 || vectorSize < 1) {
      module.emitError() << "mp-parallelize-loops: min-work and vector-size "
                            "must be positive, got "
                         << static_cast<int64_t>(minWork) << " and "
                         << static_cast<int64_t>(vectorSize);
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions) {
      if (function.isDeclaration() ||
          function->hasAttr(mp::kParallelBodyAttrName))
        continue;
      SmallVector<affine::AffineForOp> roots;
      function.walk([&](affine::AffineForOp loop) {
        if (!loop->getParentOfType<affine::AffineForOp>() &&
            !loop->getParentOfType<affine::AffineParallelOp>())
          roots.push_back(loop);
      });
      for (affine::AffineForOp root : roots) {
        if (worthRunningInParallel(root)) {
          outline(root, function, symbols);
          continue;
        }
        SmallVector<affine::AffineForOp> chain = reductionsAroundParallel(root);
        if (!chain.empty())
          outlineBlocksOfParallelLoop(chain, function, symbols);
      }
    }
  }

  /// A nest of reduction loops around one parallel loop, perfectly nested
  /// (`for i: for j: acc[j] += x[i, j]`, a column sum such as a bias
  /// gradient; the partial sums of a long reduction), in which every
  /// dependence keeps the parallel loop's iteration: each thread may then
  /// run the reduction loops over a block of the parallel loop's
  /// iterations, in their order. Returns the loops, outermost first, the
  /// parallel one last; empty when \p root is not such a nest or is too
  /// small.
  SmallVector<affine::AffineForOp>
  reductionsAroundParallel(affine::AffineForOp root) {
    if (innermostIterations(root) < static_cast<uint64_t>(minWork))
      return {};
    SmallVector<affine::AffineForOp> chain = chainDownToParallel(root);
    if (chain.empty())
      return {};
    std::optional<uint64_t> trips = affine::getConstantTripCount(chain.back());
    if (!trips || *trips < 2)
      return {};
    if (!touchesMemoryOnlyAffinely(root) ||
        !dependencesKeepIteration(root, chain.size()) ||
        !bodyCanTakeItsValues(root))
      return {};
    return chain;
  }

  /// Runs \p chain (reductionsAroundParallel) on the threads: a new loop
  /// over blocks of the parallel loop's iterations (runs of whole vectors
  /// where the vectorizer may take it), whose body is the nest restricted to
  /// one block, is outlined; iterations after the last whole block stay in the
  /// original nest, serially. Each element is summed in the same order as
  /// before, so results do not change.
  void outlineBlocksOfParallelLoop(ArrayRef<affine::AffineForOp> chain,
                                   func::FuncOp parent, SymbolTable &symbols) {
    affine::AffineForOp root = chain.front(), parallel = chain.back();
    int64_t lower = parallel.getConstantLowerBound();
    int64_t step = parallel.getStepAsInt();
    int64_t trips =
        static_cast<int64_t>(*affine::getConstantTripCount(parallel));
    // Blocks of whole vectors where the vectorizer may take the loop, as
    // wide as leaves about kBlocks of them: each row's share is then a
    // contiguous run of independent vectors (with one vector a block, every
    // row waited for the previous row's sum, through memory, and a 2048-
    // column bf16 sum ran no faster on two threads than on one).
    constexpr int64_t kBlocks = 16;
    int64_t block = 1;
    if (step == 1 && trips >= 2 * vectorSize && indexesLastDimension(parallel))
      block = vectorSize * std::max<int64_t>(1, trips / (vectorSize * kBlocks));
    int64_t units = trips / block;

    OpBuilder builder(root);
    Location loc = root.getLoc();
    auto blocks = affine::AffineForOp::create(builder, loc, 0, units, 1);
    builder.setInsertionPoint(blocks.getBody()->getTerminator());
    auto copy = cast<affine::AffineForOp>(builder.clone(*root));
    affine::AffineForOp inner = copy;
    for (size_t i = 1; i < chain.size(); ++i)
      inner = cast<affine::AffineForOp>(inner.getBody()->front());
    AffineExpr d0 = builder.getAffineDimExpr(0);
    int64_t span = block * step;
    Value unit = blocks.getInductionVar();
    inner.setLowerBound(unit, AffineMap::get(1, 0, d0 * span + lower));
    inner.setUpperBound(unit, AffineMap::get(1, 0, d0 * span + lower + span));
    if (units * block < trips)
      parallel.setConstantLowerBound(lower + units * span);
    else
      root.erase();
    outline(blocks, parent, symbols);
  }

  bool worthRunningInParallel(affine::AffineForOp loop) {
    if (!loop.hasConstantBounds() || loop.getNumIterOperands() != 0)
      return false;
    std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
    if (!trips || *trips < 2 ||
        innermostIterations(loop) < static_cast<uint64_t>(minWork))
      return false;
    if (!affine::isLoopParallel(loop))
      return false;
    return bodyCanTakeItsValues(loop);
  }

  /// How \p loop is divided: blocks of whole vectors for a loop the
  /// vectorizer may take, single iterations otherwise.
  LoopShares sharesOf(affine::AffineForOp loop) {
    LoopShares shares;
    shares.lower = loop.getConstantLowerBound();
    shares.step = loop.getStepAsInt();
    shares.trips = static_cast<int64_t>(*affine::getConstantTripCount(loop));
    shares.block = 1;
    if (shares.step == 1 && shares.trips >= 2 * vectorSize &&
        indexesLastDimension(loop))
      shares.block = vectorSize;
    shares.units = shares.trips / shares.block;
    return shares;
  }

  /// The outlined body `@<parent>_parallel(begin, end, captured...)`: the
  /// thread's share of \p loop.
  func::FuncOp buildParallelBody(OpBuilder &builder, affine::AffineForOp loop,
                                 func::FuncOp parent, SymbolTable &symbols,
                                 ArrayRef<Value> captured,
                                 ArrayRef<Value> constants,
                                 const LoopShares &shares) {
    Location loc = loop.getLoc();
    func::FuncOp body = declareFunction(
        builder, loc, parent.getSymName() + "_parallel", 2, captured);
    body->setAttr(mp::kParallelBodyAttrName, builder.getUnitAttr());
    // LLVM may then keep such a buffer's elements in registers across the
    // body's loops (a partial sum's accumulator over its rows) and hoist
    // loads of it past other stores.
    SmallVector<int64_t> noalias = exclusiveBufferPointers(captured);
    if (!noalias.empty())
      body->setAttr(mp::kParallelNoaliasAttrName,
                    builder.getDenseI64ArrayAttr(noalias));
    symbols.insert(body);

    Block *entry = body.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (auto [value, argument] :
         llvm::zip(captured, entry->getArguments().drop_front(2)))
      mapping.map(value, argument);
    for (Value value : constants)
      mapping.map(value, builder.clone(*value.getDefiningOp())->getResult(0));
    Value iv = buildThreadShare(builder, loc, entry->getArgument(0),
                                entry->getArgument(1), shares);
    mapping.map(loop.getInductionVar(), iv);
    for (Operation &op : loop.getBody()->without_terminator())
      builder.clone(op, mapping);
    builder.setInsertionPointToEnd(entry);
    func::ReturnOp::create(builder, loc);
    return body;
  }

  void outline(affine::AffineForOp loop, func::FuncOp parent,
               SymbolTable &symbols) {
    Location loc = loop.getLoc();
    LoopShares shares = sharesOf(loop);
    // Constants are cloned into the body; everything else is an argument.
    SmallVector<Value> captured, constants;
    splitUsedFromAbove(loop, captured, constants);

    OpBuilder builder(&getContext());
    builder.setInsertionPointAfter(parent);
    func::FuncOp body = buildParallelBody(builder, loop, parent, symbols,
                                          captured, constants, shares);

    // The launch: a declaration the runtime pass recognizes, called with
    // the number of iterations (or blocks) and the captured values.
    builder.setInsertionPointAfter(body);
    func::FuncOp launch = declareFunction(
        builder, loc, body.getSymName() + "_launch", 1, captured);
    launch->setAttr(mp::kParallelLaunchAttrName,
                    FlatSymbolRefAttr::get(body.getSymNameAttr()));
    symbols.insert(launch);

    builder.setInsertionPoint(loop);
    SmallVector<Value> operands = {
        arith::ConstantIndexOp::create(builder, loc, shares.units)};
    llvm::append_range(operands, captured);
    func::CallOp::create(builder, loc, launch, operands);
    // Iterations after the last whole block run here, serially.
    if (shares.units * shares.block < shares.trips) {
      auto rest = cast<affine::AffineForOp>(builder.clone(*loop));
      rest.setConstantLowerBound(shares.lower + shares.units * shares.block);
    }
    loop.erase();
    ++numParallelLoops;
  }
};

} // namespace
