//===- EarlyDealloc.cpp - free buffers after their last use ---------------===//
//
// buffer-deallocation-pipeline frees every buffer at the end of its block,
// so a straight-line step holds all its buffers at once. This pass moves
// each dealloc up to the buffer's last use (over every value that may alias
// it) and each alloc down to its first use, within the block.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPEARLYDEALLOC
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Where a buffer is used in the block that allocates it.
struct Uses {
  Operation *first = nullptr; // ancestors in the block of the first and
  Operation *last = nullptr;  // last use (null: no use besides the dealloc)
  bool escapes = false;       // the buffer may outlive what we can see
};

/// True when `user` may keep `value` (the buffer, a view of it or an
/// integer made from its pointer) beyond itself: returning it, storing it,
/// or freeing it a second time.
bool escapesThrough(Operation *user, Value value) {
  if (isa<memref::DeallocOp>(user))
    return true;
  if (user->hasTrait<OpTrait::ReturnLike>() &&
      isa<FunctionOpInterface>(user->getParentOp()))
    return true;
  if (auto store = dyn_cast<memref::StoreOp>(user))
    return store.getValueToStore() == value;
  if (auto store = dyn_cast<affine::AffineStoreOp>(user))
    return store.getValueToStore() == value;
  if (auto store = dyn_cast<vector::StoreOp>(user))
    return store.getValueToStore() == value;
  if (auto store = dyn_cast<LLVM::StoreOp>(user))
    return store.getValue() == value;
  return false;
}

/// Ops whose results and region arguments are element values read from
/// the buffer, never its address.
bool readsElements(Operation *op) {
  return isa<memref::LoadOp, affine::AffineLoadOp, affine::AffineVectorLoadOp,
             vector::LoadOp, vector::TransferReadOp, vector::MaskedLoadOp,
             vector::GatherOp, linalg::LinalgOp>(op);
}

/// Adds the values \p user makes from the buffer that may alias it to
/// \p aliases. Conservatively, whatever an op makes from the buffer may
/// alias it (views, casts, the integer pointer a runtime call takes),
/// unless it only reads elements: its results, the arguments of regions it
/// is passed into, and the results of every op enclosing a nested use up
/// to \p inBlock (a loop that yields it).
void addAliasesMadeBy(Operation *user, Operation *inBlock,
                      llvm::SetVector<Value> &aliases) {
  if (!readsElements(user)) {
    aliases.insert(user->result_begin(), user->result_end());
    for (Region &region : user->getRegions())
      for (Block &b : region)
        aliases.insert(b.args_begin(), b.args_end());
  }
  for (Operation *op = user; op != inBlock;) {
    op = op->getParentOp();
    aliases.insert(op->result_begin(), op->result_end());
  }
}

/// Widens \p uses' span to include \p inBlock.
void widenSpan(Uses &uses, Operation *inBlock) {
  if (!uses.first || inBlock->isBeforeInBlock(uses.first))
    uses.first = inBlock;
  if (!uses.last || uses.last->isBeforeInBlock(inBlock))
    uses.last = inBlock;
}

/// The uses of `alloc`'s buffer, and of every value that may alias it, as
/// ops of `block`; `dealloc` is not a use.
Uses findUses(Block *block, Value buffer, Operation *dealloc) {
  Uses uses;
  llvm::SetVector<Value> aliases;
  aliases.insert(buffer);
  for (unsigned i = 0; i < aliases.size(); ++i) {
    Value value = aliases[i];
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc)
        continue;
      Operation *inBlock = escapesThrough(user, value)
                               ? nullptr
                               : block->findAncestorOpInBlock(*user);
      if (!inBlock) {
        uses.escapes = true;
        return uses;
      }
      addAliasesMadeBy(user, inBlock, aliases);
      widenSpan(uses, inBlock);
    }
  }
  return uses;
}

struct EarlyDeallocPass
    : public mlir::mp::impl::MPEarlyDeallocBase<EarlyDeallocPass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk(
        [&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs) {
      auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block) {
        ++numKept;
        continue;
      }
      Uses uses = findUses(block, alloc.getResult(), dealloc);
      if (uses.escapes || (uses.last && !uses.last->isBeforeInBlock(dealloc))) {
        ++numKept;
        continue;
      }
      // The alloc's sizes dominate it, hence every later point.
      Operation *first = uses.first ? uses.first : dealloc.getOperation();
      if (alloc->getNextNode() != first) {
        alloc->moveBefore(first);
        ++numAllocsMoved;
      }
      Operation *after = uses.last ? uses.last : alloc.getOperation();
      if (after->getNextNode() != dealloc.getOperation()) {
        dealloc->moveAfter(after);
        ++numDeallocsMoved;
      }
    }
  }
};

} // namespace
