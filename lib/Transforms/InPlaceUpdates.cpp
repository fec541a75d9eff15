//===- InPlaceUpdates.cpp - may new parameters overwrite the old ones? ----===//
//
// A session's step reads the parameters and optimizer state from one set of
// buffers and writes the new values into a second set, so it holds both. On
// buffers, after bufferization, this pass checks whether the two may be the
// same memory: no read of an old value after the first write of its new
// one, except by that writer reading the same element it writes. The
// entry is then marked, and the session passes one set of buffers for both.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPINPLACEUPDATES
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// \p root and every view of it (subviews, reshapes, casts), transitively.
llvm::SmallPtrSet<Value, 8> viewsOf(Value root) {
  llvm::SmallPtrSet<Value, 8> views = {root};
  SmallVector<Value> worklist = {root};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == value)
          for (Value result : user->getResults())
            if (isa<MemRefType>(result.getType()) &&
                views.insert(result).second)
              worklist.push_back(result);
  }
  return views;
}

/// How a top-level op of the body touches a buffer (through any of its
/// views), including ops nested in its regions.
struct Access {
  bool reads = false, writes = false;
};

Access accessOf(Operation *op, const llvm::SmallPtrSet<Value, 8> &views) {
  Access access;
  op->walk([&](Operation *inner) {
    if (isa<ViewLikeOpInterface>(inner))
      return; // a view alone touches nothing
    for (OpOperand &operand : inner->getOpOperands()) {
      if (!views.contains(operand.get()))
        continue;
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(inner)) {
        bool init = linalgOp.isDpsInit(&operand);
        access.writes |= init;
        access.reads |= !init || linalgOp.payloadUsesValueFromOperand(&operand);
      } else if (auto copy = dyn_cast<memref::CopyOp>(inner)) {
        access.reads |= operand.get() == copy.getSource();
        access.writes |= operand.get() == copy.getTarget();
      } else if (isa<memref::LoadOp>(inner)) {
        access.reads = true;
      } else if (isa<memref::StoreOp>(inner)) {
        access.writes = true;
      } else if (!isa<memref::DimOp>(inner)) {
        // Anything else (a call, a pointer taken) may do either.
        access.reads = access.writes = true;
      }
    }
  });
  return access;
}

/// Whether \p view is \p base reshaped (memref.expand_shape and
/// collapse_shape, any number of them, or none) exactly as \p other is
/// \p otherBase: the two then index corresponding elements alike.
/// The sources of \p view and \p other when both are the same kind of
/// reshape (expand_shape or collapse_shape) with the same reassociation;
/// false when they are not.
template <typename ReshapeOp>
bool stepThroughReshape(Value &view, Value &other) {
  auto reshape = view.getDefiningOp<ReshapeOp>();
  auto otherReshape = other.getDefiningOp<ReshapeOp>();
  if (!reshape || !otherReshape ||
      reshape.getReassociationIndices() !=
          otherReshape.getReassociationIndices())
    return false;
  view = reshape.getSrc();
  other = otherReshape.getSrc();
  return true;
}

bool reshapedAlike(Value view, Value base, Value other, Value otherBase) {
  while (view != base || other != otherBase) {
    if (view == base || other == otherBase || view.getType() != other.getType())
      return false;
    if (!stepThroughReshape<memref::ExpandShapeOp>(view, other) &&
        !stepThroughReshape<memref::CollapseShapeOp>(view, other))
      return false;
  }
  return true;
}

/// Whether \p writer, the first op to write \p next, may read \p old in the
/// same memory: a linalg op whose iterations each write an element of their
/// own (the written map is a permutation), reading the argument itself at
/// the element it writes, and not reading what it overwrites. Both may be
/// reshaped alike (a generic over an expanded view of each: an optimizer
/// update fused with the gradient norm's partial sums).
/// The init of \p linalgOp that is \p next itself or only reshaped (the
/// last such), or null.
OpOperand *initWriting(linalg::LinalgOp linalgOp, Value next) {
  OpOperand *nextInit = nullptr;
  for (OpOperand &init : linalgOp.getDpsInitsMutable())
    if (reshapedAlike(init.get(), next, init.get(), next))
      nextInit = &init;
  return nextInit;
}

/// The inputs of \p linalgOp that read \p old's views, when each reads
/// \p old reshaped alike \p nextInit's view of \p next, through the
/// \p written map; nothing when one does not.
std::optional<llvm::SmallPtrSet<OpOperand *, 4>>
ownElementReads(linalg::LinalgOp linalgOp, Value old, Value next,
                OpOperand *nextInit, AffineMap written,
                const llvm::SmallPtrSet<Value, 8> &oldViews) {
  llvm::SmallPtrSet<OpOperand *, 4> reads;
  for (OpOperand *input : linalgOp.getDpsInputOperands()) {
    if (!oldViews.contains(input->get()))
      continue;
    if (!reshapedAlike(input->get(), old, nextInit->get(), next) ||
        linalgOp.getMatchingIndexingMap(input) != written)
      return std::nullopt;
    reads.insert(input);
  }
  return reads;
}

/// Whether some operand of \p writer other than \p nextInit and \p allowed
/// is a view of either buffer.
bool touchesOtherwise(Operation *writer, OpOperand *nextInit,
                      const llvm::SmallPtrSet<OpOperand *, 4> &allowed,
                      const llvm::SmallPtrSet<Value, 8> &oldViews,
                      const llvm::SmallPtrSet<Value, 8> &nextViews) {
  for (OpOperand &operand : writer->getOpOperands())
    if (&operand != nextInit && !allowed.contains(&operand) &&
        (oldViews.contains(operand.get()) || nextViews.contains(operand.get())))
      return true;
  return false;
}

/// Whether \p writer, the first op to write \p next, may read \p old in the
/// same memory: a linalg op whose iterations each write an element of their
/// own (the written map is a permutation), reading the argument itself at
/// the element it writes, and not reading what it overwrites. Both may be
/// reshaped alike (a generic over an expanded view of each: an optimizer
/// update fused with the gradient norm's partial sums).
bool readsOnlyItsOwnElement(Operation *writer, Value old, Value next,
                            const llvm::SmallPtrSet<Value, 8> &oldViews,
                            const llvm::SmallPtrSet<Value, 8> &nextViews) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(writer);
  if (!linalgOp)
    return false;
  OpOperand *nextInit = initWriting(linalgOp, next);
  if (!nextInit || linalgOp.payloadUsesValueFromOperand(nextInit))
    return false;
  AffineMap written = linalgOp.getMatchingIndexingMap(nextInit);
  if (!written.isPermutation())
    return false;
  std::optional<llvm::SmallPtrSet<OpOperand *, 4>> reads =
      ownElementReads(linalgOp, old, next, nextInit, written, oldViews);
  // Other operands must not be views of either buffer.
  return reads &&
         !touchesOtherwise(writer, nextInit, *reads, oldViews, nextViews);
}

/// Whether \p old and \p next may be one buffer in \p block: \p old is never
/// written, \p next never read before its first write, and \p old not read
/// after it (but by the writer itself, element for element).
bool mayShareBuffer(Block &block, Value old, Value next) {
  llvm::SmallPtrSet<Value, 8> oldViews = viewsOf(old),
                              nextViews = viewsOf(next);
  bool written = false;
  for (Operation &op : block) {
    Access oldAccess = accessOf(&op, oldViews);
    Access nextAccess = accessOf(&op, nextViews);
    if (oldAccess.writes)
      return false;
    if (!written) {
      if (nextAccess.reads)
        return false;
      if (nextAccess.writes) {
        written = true;
        if (oldAccess.reads &&
            !readsOnlyItsOwnElement(&op, old, next, oldViews, nextViews))
          return false;
      }
      continue;
    }
    if (oldAccess.reads)
      return false;
  }
  return true;
}

struct InPlaceUpdatesPass : mp::impl::MPInPlaceUpdatesBase<InPlaceUpdatesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<std::pair<Value, Value>> pairs; // (old, next)
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto of = func.getArgAttrOfType<IntegerAttr>(
              i, mlir::mp::kUpdateOfAttrName)) {
        int64_t oldIndex = of.getInt();
        if (oldIndex < 0 || oldIndex >= func.getNumArguments() ||
            func.getArgument(oldIndex).getType() !=
                func.getArgument(i).getType() ||
            !isa<MemRefType>(func.getArgument(i).getType())) {
          func.emitError() << "mp.update_of on argument #" << i
                           << " names argument #" << oldIndex
                           << ", which is not a buffer of the same type";
          return signalPassFailure();
        }
        pairs.push_back({func.getArgument(oldIndex), func.getArgument(i)});
      }
    if (pairs.empty())
      return;
    bool shareable =
        func.getBody().hasOneBlock() && llvm::all_of(pairs, [&](auto pair) {
          return mayShareBuffer(func.front(), pair.first, pair.second);
        });
    if (shareable)
      func->setAttr(mlir::mp::kInPlaceUpdatesAttrName,
                    UnitAttr::get(&getContext()));
    else
      func->removeAttr(mlir::mp::kInPlaceUpdatesAttrName);
  }
};

} // namespace
