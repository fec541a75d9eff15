//===- SaveLowPrecision.cpp - keep saved activations in f16/bf16 ----------===//
//
// A training step computes its forward pass, then its backward pass (after
// the op marked mp.seed). Values the forward pass makes and the backward
// pass reads stay alive across the whole step: for an MLP they are the
// results of the layers' contractions, which the mixed-precision rewrite
// keeps in f32 because they accumulate in f32. Their inputs were f16/bf16,
// so the backward pass can read a low-precision copy: this pass stores one
// right after the contraction and lets the f32 result die after its forward
// readers.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPSAVELOWPRECISION
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

/// The f16/bf16 type every floating-point tensor input of `op` has, or null
/// (an f32 input, mixed low-precision types, no float input).
FloatType lowPrecisionInputs(linalg::LinalgOp op) {
  FloatType low;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type)
      continue;
    auto element = dyn_cast<FloatType>(type.getElementType());
    if (!element)
      continue;
    if (!element.isF16() && !element.isBF16())
      return {};
    if (low && low != element)
      return {};
    low = element;
  }
  return low;
}

/// An elementwise generic converting `input` to `type`'s element type.
Value convert(OpBuilder &b, Location loc, Value input, RankedTensorType type,
              bool truncate) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  auto map = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{input}, ValueRange{empty},
      ArrayRef<AffineMap>{map, map}, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = truncate ? Value(arith::TruncFOp::create(
                                 nb, nloc, type.getElementType(), args[0]))
                           : Value(arith::ExtFOp::create(
                                 nb, nloc, type.getElementType(), args[0]));
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

struct SaveLowPrecisionPass
    : public mlir::mp::impl::MPSaveLowPrecisionBase<SaveLowPrecisionPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (!func.isExternal())
        runOnFunction(func);
    });
  }

  void runOnFunction(func::FuncOp func) {
    Block &block = func.getBody().front();
    Operation *seed = nullptr;
    for (Operation &op : block)
      if (op.hasAttr(kSeedAttrName))
        seed = &op;
    if (!seed)
      return; // not a training step: nothing is saved for a backward pass
    SmallVector<linalg::LinalgOp> candidates;
    for (Operation &op : block) {
      if (&op == seed)
        break;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
      if (linalgOp && linalgOp->getNumResults() == 1 &&
          lowPrecisionInputs(linalgOp))
        candidates.push_back(linalgOp);
    }
    for (linalg::LinalgOp op : candidates)
      save(op, seed);
  }

  /// The uses of \p value after \p seed (in the backward pass); nothing
  /// when the value is returned (it stays f32 and alive to the end).
  static std::optional<SmallVector<OpOperand *>>
  backwardUsesOf(Value value, Operation *seed) {
    SmallVector<OpOperand *> backwardUses;
    Block *block = seed->getBlock();
    for (OpOperand &use : value.getUses()) {
      Operation *user = block->findAncestorOpInBlock(*use.getOwner());
      if (user && user->hasTrait<OpTrait::IsTerminator>())
        return std::nullopt;
      if (user && seed->isBeforeInBlock(user))
        backwardUses.push_back(&use);
    }
    return backwardUses;
  }

  /// Makes \p use read the \p saved low-precision copy (of element type
  /// \p low) of an f32 value of type \p type.
  static void readSaved(OpBuilder &b, Location loc, OpOperand *use, Value saved,
                        FloatType low, RankedTensorType type) {
    auto generic = dyn_cast<linalg::GenericOp>(use->getOwner());
    if (!generic || !generic.isDpsInput(use)) {
      b.setInsertionPoint(use->getOwner());
      use->set(convert(b, loc, saved, type, /*truncate=*/false));
      return;
    }
    // The reader widens each element itself: no f32 copy in memory.
    BlockArgument arg = generic.getMatchingBlockArgument(use);
    use->set(saved);
    arg.setType(low);
    b.setInsertionPointToStart(generic.getBody());
    auto wide = arith::ExtFOp::create(b, arg.getLoc(), b.getF32Type(), arg);
    arg.replaceAllUsesExcept(wide, wide);
  }

  void save(linalg::LinalgOp op, Operation *seed) {
    Value value = op->getResult(0);
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
      return;
    std::optional<SmallVector<OpOperand *>> backwardUses =
        backwardUsesOf(value, seed);
    if (!backwardUses || backwardUses->empty())
      return;
    FloatType low = lowPrecisionInputs(op);
    auto lowType = RankedTensorType::get(type.getShape(), low);
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    Value saved = convert(b, op->getLoc(), value, lowType, /*truncate=*/true);
    // Fusing the copy into a backward reader would keep the f32 value alive.
    saved.getDefiningOp()->setAttr(kSavedAttrName, b.getUnitAttr());
    for (OpOperand *use : *backwardUses)
      readSaved(b, op->getLoc(), use, saved, low, type);
    ++numSaved;
    numBytesSaved +=
        type.getNumElements() * (4 - static_cast<int64_t>(low.getWidth() / 8));
  }
};

} // namespace
