//===- FuseRowLoops.cpp - one loop nest per row for row-wise chains -------===//
//
// Softmax lowers to seven loop nests over the same rows: a fill and a max,
// the exponentials, a fill and a sum, the reciprocal, the normalization.
// Each big one streams the whole score tensor through memory again (8 MB a
// pass in the benchmark's encoder block), where a row (512 bytes) would have
// stayed in L1 between them; layer norm and the softmax backward do the
// same. Here two consecutive nests whose outer loops run over the same
// iterations become one: the second's body runs after the first's for each
// outer iteration. Every element gets the same operations in the same
// order, so results are bitwise those of the separate nests.
//
// Legal when a buffer one nest writes and the other touches is the same
// value in both and every access to it indexes its leading dimensions with
// the shared loops' induction variables (iteration i of the second nest
// then touches only what iteration i of the first did), every shared loop
// is parallel in both nests, and nothing between the nests but
// allocations, deallocations and pure ops (moved before the first nest
// where the second uses them).
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"
#include "mp/Support/IRUtils.h"

#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/Utils.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/AffineValueMap.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPFUSEROWLOOPS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// \p top and the loops perfectly nested in it: each the only op (besides
/// the terminator) of the previous one's body, none carrying values.
SmallVector<affine::AffineForOp> perfectChain(affine::AffineForOp top) {
  SmallVector<affine::AffineForOp> chain;
  for (affine::AffineForOp loop = top; loop;) {
    if (loop.getNumIterOperands() != 0 || !loop.hasConstantBounds())
      break;
    chain.push_back(loop);
    Block *body = loop.getBody();
    loop = body->getOperations().size() == 2
               ? dyn_cast<affine::AffineForOp>(body->front())
               : affine::AffineForOp();
  }
  return chain;
}

/// A load or store in a nest: the memref it touches and whether it writes.
struct Access {
  Operation *op;
  Value memref;
  bool writes;
};

/// The accesses of \p top's nest, or nothing when it holds an op that
/// touches memory otherwise (a call, a non-affine load) or a region other
/// than an affine.for's.
std::optional<SmallVector<Access>> accessesOf(affine::AffineForOp top) {
  SmallVector<Access> accesses;
  WalkResult walk = top->walk([&](Operation *op) {
    if (auto read = dyn_cast<affine::AffineReadOpInterface>(op)) {
      accesses.push_back({op, read.getMemRef(), false});
      return WalkResult::advance();
    }
    if (auto write = dyn_cast<affine::AffineWriteOpInterface>(op)) {
      accesses.push_back({op, write.getMemRef(), true});
      return WalkResult::advance();
    }
    if (isa<affine::AffineForOp>(op))
      return WalkResult::advance();
    if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return accesses;
}

/// True when \p access indexes its memref's first `loops.size()`
/// dimensions with exactly those loops' induction variables, in order.
bool indexesRowsWith(const Access &access,
                     MutableArrayRef<affine::AffineForOp> loops) {
  affine::AffineValueMap map;
  affine::MemRefAccess(access.op).getAccessMap(&map);
  if (map.getNumResults() < loops.size())
    return false;
  for (size_t level = 0; level < loops.size(); ++level) {
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(level));
    if (!dim ||
        map.getOperand(dim.getPosition()) != loops[level].getInductionVar())
      return false;
  }
  return true;
}

/// Whether two nests' accesses allow fusing them over their shared loops.
enum class RowSharing {
  Conflict, ///< A write meets an access that is not to the same row.
  Shares,   ///< They touch the same buffer, row by row.
  Disjoint, ///< They touch no common buffer.
};

/// Whether \p x and \p y, accesses of two nests, conflict: they may alias,
/// one writes, and they are not the same memref indexed row by row with
/// the shared loops.
bool conflicts(const Access &x, const Access &y,
               MutableArrayRef<affine::AffineForOp> firstLoops,
               MutableArrayRef<affine::AffineForOp> secondLoops) {
  if (!x.writes && !y.writes)
    return false;
  return x.memref != y.memref || !indexesRowsWith(x, firstLoops) ||
         !indexesRowsWith(y, secondLoops);
}

RowSharing classifySharing(ArrayRef<Access> firstAccesses,
                           ArrayRef<Access> secondAccesses,
                           MutableArrayRef<affine::AffineForOp> firstLoops,
                           MutableArrayRef<affine::AffineForOp> secondLoops) {
  bool shares = false;
  for (const Access &x : firstAccesses) {
    for (const Access &y : secondAccesses) {
      if (!mp::mayShareMemory(x.memref, y.memref))
        continue;
      if (mp::viewedBuffer(x.memref) == mp::viewedBuffer(y.memref))
        shares = true;
      if (conflicts(x, y, firstLoops, secondLoops))
        return RowSharing::Conflict;
    }
  }
  return shares ? RowSharing::Shares : RowSharing::Disjoint;
}

/// True when \p op, lying between two nests, deallocates a buffer the
/// second nest (with accesses \p secondAccesses) touches.
bool deallocatesSecondsBuffer(memref::DeallocOp dealloc,
                              ArrayRef<Access> secondAccesses) {
  Value buffer = mp::viewedBuffer(dealloc.getMemref());
  return llvm::any_of(secondAccesses, [&](const Access &y) {
    return mp::viewedBuffer(y.memref) == buffer;
  });
}

/// True when a user of \p op is in \p moving or inside \p second.
bool usedByMoved(Operation *op,
                 const llvm::SmallPtrSetImpl<Operation *> &moving,
                 Operation *second) {
  return llvm::any_of(op->getUsers(), [&](Operation *user) {
    return moving.contains(user) || second->isAncestor(user);
  });
}

/// The ops strictly between \p first and \p second.
SmallVector<Operation *> opsBetween(Operation *first, Operation *second) {
  SmallVector<Operation *> between;
  for (Operation *op = first->getNextNode(); op != second;
       op = op->getNextNode())
    between.push_back(op);
  return between;
}

/// Of \p between (the ops from \p first to \p second), those the second
/// nest uses and that must therefore move before the first; nothing when
/// one of them keeps the nests apart (an op with effects, a deallocation
/// of what the second nest touches, a used op with regions).
std::optional<llvm::SmallPtrSet<Operation *, 8>>
opsToHoist(ArrayRef<Operation *> between, Operation *second,
           ArrayRef<Access> secondAccesses) {
  llvm::SmallPtrSet<Operation *, 8> moving;
  for (Operation *op : llvm::reverse(between)) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      if (deallocatesSecondsBuffer(dealloc, secondAccesses))
        return std::nullopt;
      continue;
    }
    if (!isa<memref::AllocOp>(op) && !isMemoryEffectFree(op))
      return std::nullopt;
    bool used = usedByMoved(op, moving, second);
    if (op->getNumRegions() == 0 && used)
      moving.insert(op);
    else if (used)
      return std::nullopt;
  }
  return moving;
}

/// True when every operand of the \p moving ops is defined before
/// \p first (or by another moving op), so that they can move before it.
bool operandsAvailableBefore(Operation *first, ArrayRef<Operation *> between,
                             const llvm::SmallPtrSetImpl<Operation *> &moving) {
  for (Operation *op : between) {
    if (!moving.contains(op))
      continue;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == first->getBlock() &&
          !def->isBeforeInBlock(first) && !moving.contains(def))
        return false;
    }
  }
  return true;
}

/// Moves what lies between \p first and \p second and the second nest
/// uses before \p first; false (and nothing moved) when it cannot.
bool hoistOpsBetween(affine::AffineForOp first, affine::AffineForOp second,
                     ArrayRef<Access> secondAccesses) {
  SmallVector<Operation *> between = opsBetween(first, second);
  std::optional<llvm::SmallPtrSet<Operation *, 8>> moving =
      opsToHoist(between, second, secondAccesses);
  if (!moving || !operandsAvailableBefore(first, between, *moving))
    return false;
  for (Operation *op : between)
    if (moving->contains(op))
      op->moveBefore(first);
  return true;
}

/// Moves the innermost body of \p secondLoops into \p firstLoops' (before
/// its terminator), with the shared induction variables replaced.
void mergeBodies(MutableArrayRef<affine::AffineForOp> firstLoops,
                 MutableArrayRef<affine::AffineForOp> secondLoops) {
  for (size_t level = 0; level < firstLoops.size(); ++level)
    secondLoops[level].getInductionVar().replaceAllUsesWith(
        firstLoops[level].getInductionVar());
  Block *into = firstLoops.back().getBody();
  Block *from = secondLoops.back().getBody();
  into->getOperations().splice(Block::iterator(into->getTerminator()),
                               from->getOperations(), from->begin(),
                               Block::iterator(from->getTerminator()));
}

/// True when \p a and \p b have the same constant bounds and step.
bool sameIterations(affine::AffineForOp a, affine::AffineForOp b) {
  return a.getConstantLowerBound() == b.getConstantLowerBound() &&
         a.getConstantUpperBound() == b.getConstantUpperBound() &&
         a.getStepAsInt() == b.getStepAsInt();
}

/// Whether the nest \p chain is all in its first \p depth loops, with no
/// loop inside them: one op (or a few) per row.
bool isRowSized(ArrayRef<affine::AffineForOp> chain, size_t depth) {
  if (depth != chain.size())
    return false;
  affine::AffineForOp innermost = chain[depth - 1];
  return innermost.getBody()->getOps<affine::AffineForOp>().empty();
}

class RowFuser {
public:
  /// Fuses \p second into \p first if it may; true when it did.
  bool fuse(affine::AffineForOp first, affine::AffineForOp second);

  unsigned numFused = 0;

private:
  llvm::DenseMap<Operation *, bool> parallelCache;
  bool isParallel(affine::AffineForOp loop) {
    auto [it, inserted] = parallelCache.try_emplace(loop, false);
    if (inserted)
      it->second = affine::isLoopParallel(loop);
    return it->second;
  }

  /// How many leading loops of the two chains run over the same
  /// iterations and are parallel in both.
  size_t sharedParallelDepth(ArrayRef<affine::AffineForOp> firstChain,
                             ArrayRef<affine::AffineForOp> secondChain);
  void forget(ArrayRef<affine::AffineForOp> loops) {
    for (affine::AffineForOp loop : loops)
      parallelCache.erase(loop);
  }
};

size_t
RowFuser::sharedParallelDepth(ArrayRef<affine::AffineForOp> firstChain,
                              ArrayRef<affine::AffineForOp> secondChain) {
  size_t depth = 0;
  while (depth < firstChain.size() && depth < secondChain.size()) {
    affine::AffineForOp a = firstChain[depth], b = secondChain[depth];
    if (!sameIterations(a, b) || !isParallel(a) || !isParallel(b))
      break;
    ++depth;
  }
  return depth;
}

bool RowFuser::fuse(affine::AffineForOp first, affine::AffineForOp second) {
  if (first.getNumResults() != 0 || second.getNumResults() != 0)
    return false;
  SmallVector<affine::AffineForOp> firstChain = perfectChain(first);
  SmallVector<affine::AffineForOp> secondChain = perfectChain(second);
  size_t depth = sharedParallelDepth(firstChain, secondChain);
  if (depth == 0)
    return false;
  MutableArrayRef<affine::AffineForOp> firstLoops(firstChain.data(), depth);
  MutableArrayRef<affine::AffineForOp> secondLoops(secondChain.data(), depth);

  std::optional<SmallVector<Access>> firstAccesses = accessesOf(first);
  std::optional<SmallVector<Access>> secondAccesses = accessesOf(second);
  if (!firstAccesses || !secondAccesses)
    return false;
  RowSharing sharing =
      classifySharing(*firstAccesses, *secondAccesses, firstLoops, secondLoops);
  if (sharing == RowSharing::Conflict)
    return false;
  // Unrelated nests stay apart (nothing to gain), except that a nest of
  // one op per row (the fill of the next reduction's accumulators) joins
  // the one before it, so that the reduction can join too.
  if (sharing == RowSharing::Disjoint && !isRowSized(secondChain, depth))
    return false;

  // What lies between: allocations, deallocations of buffers the second
  // nest does not touch, and pure ops; those the second nest uses move
  // before the first.
  if (!hoistOpsBetween(first, second, *secondAccesses))
    return false;

  mergeBodies(firstLoops, secondLoops);
  forget(secondChain);
  forget(firstLoops);
  second->erase();
  ++numFused;
  return true;
}

struct FuseRowLoopsPass
    : public mp::impl::MPFuseRowLoopsBase<FuseRowLoopsPass> {
  void runOnOperation() override {
    RowFuser fuser;
    getOperation().walk([&](Block *block) {
      Operation *parent = block->getParentOp();
      if (isa<affine::AffineForOp>(parent) ||
          parent->getParentOfType<affine::AffineForOp>())
        return;
      affine::AffineForOp current;
      for (Operation *op = block->empty() ? nullptr : &block->front(); op;) {
        Operation *next = op->getNextNode();
        auto loop = dyn_cast<affine::AffineForOp>(op);
        if (!loop) {
          // Only allocations, deallocations and pure ops may lie between
          // two nests that fuse.
          if (!isa<memref::AllocOp, memref::DeallocOp>(op) &&
              !isMemoryEffectFree(op))
            current = {};
          op = next;
          continue;
        }
        if (!current || !fuser.fuse(current, loop))
          current = loop;
        op = next;
      }
    });
    numFusedNests = fuser.numFused;
  }
};

} // namespace
