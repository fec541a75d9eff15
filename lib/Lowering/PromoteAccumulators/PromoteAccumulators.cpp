//===- PromoteAccumulators.cpp - reduction accumulators in registers ------===//
//
// linalg-to-affine lowers a row reduction (softmax's max and sum, layer
// norm's sums) to an innermost loop that loads the accumulator's element,
// combines it and stores it back on every iteration. LLVM cannot keep that
// element in a register: for all it knows the accumulator's buffer shares
// memory with what the loop reads. Here the buffers are known, so a loop
// whose only accesses to the accumulator's buffer are one load and then
// one store of the same loop-invariant element, and which touches no other
// buffer that could share its memory, carries the value as an iter_arg
// instead: loaded once before the loop, stored once after it.
// mp-vectorize-loops then vectorizes the loop as a reduction.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"
#include "mp/Support/IRUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPPROMOTEACCUMULATORS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

struct Accumulator {
  affine::AffineLoadOp load;
  affine::AffineStoreOp store;
};

bool sameElement(affine::AffineLoadOp load, affine::AffineStoreOp store) {
  return load.getMemRef() == store.getMemRef() &&
         load.getAffineMap() == store.getAffineMap() &&
         load.getMapOperands() == store.getMapOperands();
}

Value memrefOf(Operation *access) {
  if (auto load = dyn_cast<affine::AffineLoadOp>(access))
    return load.getMemRef();
  return cast<affine::AffineStoreOp>(access).getMemRef();
}

/// The affine loads and stores of \p loop's body, or nothing when the body
/// holds a region or another op with memory effects.
std::optional<SmallVector<Operation *>>
straightLineAccesses(affine::AffineForOp loop) {
  SmallVector<Operation *> accesses;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return std::nullopt;
    if (isa<affine::AffineLoadOp, affine::AffineStoreOp>(op))
      accesses.push_back(&op);
    else if (!isMemoryEffectFree(&op))
      return std::nullopt;
  }
  return accesses;
}

/// Whether \p load reads the same element on every iteration of \p loop.
bool isLoopInvariantLoad(affine::AffineLoadOp load, affine::AffineForOp loop) {
  return llvm::all_of(load.getMapOperands(), [&](Value operand) {
    return loop.isDefinedOutsideOfLoop(operand);
  });
}

/// The accumulator that \p load (at \p position among \p accesses) begins:
/// the first later store to its element, when no other access may touch
/// its buffer; nothing otherwise.
std::optional<Accumulator> accumulatorFrom(affine::AffineLoadOp load,
                                           size_t position,
                                           ArrayRef<Operation *> accesses) {
  affine::AffineStoreOp store;
  bool alone = true;
  Value buffer = mp::viewedBuffer(load.getMemRef());
  for (auto [other, otherAccess] : llvm::enumerate(accesses)) {
    if (otherAccess == load.getOperation())
      continue;
    auto candidate = dyn_cast<affine::AffineStoreOp>(otherAccess);
    if (!store && candidate && other > position &&
        sameElement(load, candidate)) {
      store = candidate;
      continue;
    }
    if (mp::mayShareMemory(buffer, memrefOf(otherAccess)))
      alone = false;
  }
  if (!store || !alone)
    return std::nullopt;
  return Accumulator{load, store};
}

/// The accumulators of an innermost, straight-line loop without iter_args,
/// or none if anything in it could touch their memory unseen.
SmallVector<Accumulator> findAccumulators(affine::AffineForOp loop) {
  if (loop.getNumIterOperands() != 0)
    return {};
  std::optional<SmallVector<Operation *>> accesses = straightLineAccesses(loop);
  if (!accesses)
    return {};
  SmallVector<Accumulator> found;
  for (auto [position, access] : llvm::enumerate(*accesses)) {
    auto load = dyn_cast<affine::AffineLoadOp>(access);
    if (!load || !isLoopInvariantLoad(load, loop))
      continue;
    if (std::optional<Accumulator> accumulator =
            accumulatorFrom(load, position, *accesses))
      found.push_back(*accumulator);
  }
  return found;
}

/// `loop` carrying `accumulators` as iter_args: each loaded before the
/// loop, its store's value yielded, the result stored after the loop.
void promote(affine::AffineForOp loop,
             MutableArrayRef<Accumulator> accumulators) {
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> initial;
  for (Accumulator &a : accumulators)
    initial.push_back(affine::AffineLoadOp::create(
        rewriter, a.load.getLoc(), a.load.getMemRef(), a.load.getAffineMap(),
        a.load.getMapOperands()));
  FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
      rewriter, initial, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        SmallVector<Value> yielded;
        for (Accumulator &a : accumulators)
          yielded.push_back(a.store.getValueToStore());
        return yielded;
      });
  assert(succeeded(replaced) && "affine.for takes more iter_args");
  auto carried = cast<affine::AffineForOp>(replaced->getOperation());
  rewriter.setInsertionPointAfter(carried);
  for (auto [i, a] : llvm::enumerate(accumulators)) {
    rewriter.replaceAllUsesWith(a.load.getResult(),
                                carried.getRegionIterArgs()[i]);
    affine::AffineStoreOp::create(
        rewriter, a.store.getLoc(), carried.getResults()[i],
        a.store.getMemRef(), a.store.getAffineMap(), a.store.getMapOperands());
    rewriter.eraseOp(a.store);
    rewriter.eraseOp(a.load);
  }
}

struct PromoteAccumulatorsPass
    : public mp::impl::MPPromoteAccumulatorsBase<PromoteAccumulatorsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<affine::AffineForOp, SmallVector<Accumulator>>> loops;
    getOperation().walk([&](affine::AffineForOp loop) {
      SmallVector<Accumulator> accumulators = findAccumulators(loop);
      if (!accumulators.empty())
        loops.push_back({loop, std::move(accumulators)});
    });
    for (auto &[loop, accumulators] : loops)
      promote(loop, accumulators);
  }
};

} // namespace
