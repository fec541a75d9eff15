//===- FuseSiblingReductions.cpp - one pass over a tensor two loops read --===//
//
// A training step reads each weight gradient twice after the products: the
// gradient norm's partial sums of squares (--mp-split-reductions' form,
// `p[i, l] += g[i, r, l]^2`) and the optimizer's elementwise update. Each is a
// whole pass over an f32 gradient as large as the weight. Where a reduction
// with parallel loops left and an elementwise generic read the same tensor
// and neither needs the other's results, they become one generic over the
// reduction's loops: the elementwise operands are reshaped the way the
// reduction's input was (expand_shape), its results reshaped back. The
// partial sums are taken in the same order as before, and the elementwise
// results are the same, so nothing changes but the passes over memory.
// A collapsed result that is only materialized into a buffer (a session's
// new parameters) is materialized uncollapsed into the buffer's expanded
// view instead: empty-tensor elimination does not see through reshapes, and
// the update would otherwise go through a temporary and a copy.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPFUSESIBLINGREDUCTIONS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Whether \p op reads or writes \p operand whole, element for element: a
/// tensor of static shape through an identity map.
bool isStaticIdentityOperand(linalg::GenericOp op, OpOperand &operand) {
  auto type = dyn_cast<RankedTensorType>(operand.get().getType());
  return type && type.hasStaticShape() &&
         op.getMatchingIndexingMap(&operand).isIdentity();
}

/// An elementwise generic the reduction may take: all loops parallel, all
/// operands static tensors read and written through identity maps.
bool isElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumReductionLoops() == 0 &&
         llvm::all_of(op->getOpOperands(), [&](OpOperand &operand) {
           return isStaticIdentityOperand(op, operand);
         });
}

/// A reduction whose inputs are read whole, element for element (the
/// outputs may be any projection: the partial sums).
bool isReductionOfWholeInputs(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0 &&
         llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
           return isStaticIdentityOperand(op, *input);
         });
}

/// The iterations of \p op's parallel loops (0 when one is dynamic).
int64_t parallelIterations(linalg::GenericOp op) {
  int64_t iterations = 1;
  for (auto [range, type] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (type != utils::IteratorType::parallel)
      continue;
    if (ShapedType::isDynamic(range))
      return 0;
    iterations *= range;
  }
  return iterations;
}

/// Whether \p value is defined before \p op, or by an op that may move
/// there: one without regions or memory effects whose operands are defined
/// before \p op (a tensor.empty, a constant, the expand_shape of an input).
bool isAvailableBefore(Value value, Operation *op, DominanceInfo &dom) {
  if (dom.properlyDominates(value, op))
    return true;
  Operation *def = value.getDefiningOp();
  return def && def->getBlock() == op->getBlock() &&
         def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
         llvm::all_of(def->getOperands(), [&](Value operand) {
           return dom.properlyDominates(operand, op);
         });
}

/// When every use of \p original is a materialize_in_destination into a
/// buffer (of identity layout), materializes \p expanded into a view of
/// each buffer expanded by \p reassociation instead, and returns true.
bool materializeIntoExpandedViews(
    Value expanded, Value original,
    ArrayRef<ReassociationIndices> reassociation) {
  SmallVector<bufferization::MaterializeInDestinationOp> stores;
  for (OpOperand &use : original.getUses()) {
    auto store =
        dyn_cast<bufferization::MaterializeInDestinationOp>(use.getOwner());
    if (!store || store.getSource() != original)
      return false;
    auto type = dyn_cast<MemRefType>(store.getDest().getType());
    if (!type || !type.getLayout().isIdentity())
      return false;
    stores.push_back(store);
  }
  if (stores.empty())
    return false;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(expanded.getType()).getShape();
  for (bufferization::MaterializeInDestinationOp store : stores) {
    Value dest = store.getDest();
    // The view is made where the buffer is, so that empty-tensor
    // elimination may put the buffer in the place of the result's
    // tensor.empty, which comes earlier than the store.
    OpBuilder builder(store->getContext());
    if (Operation *def = dest.getDefiningOp())
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPointToStart(cast<BlockArgument>(dest).getOwner());
    auto type = memref::ExpandShapeOp::computeExpandedType(
        cast<MemRefType>(dest.getType()), shape, reassociation);
    if (failed(type))
      return false;
    Value view = memref::ExpandShapeOp::create(builder, store.getLoc(), *type,
                                               dest, reassociation);
    store.getSourceMutable().assign(expanded);
    store.getDestMutable().assign(view);
  }
  return true;
}

/// Fuses an elementwise generic (the sibling) into a reduction that reads
/// the same tensor: one generic over the reduction's loops whose body is
/// the reduction's followed by the sibling's.
class SiblingFusion {
public:
  /// \p read is the reduction's input, \p shared the tensor the sibling
  /// reads (\p read or what it expands by \p reassociation); the fused
  /// generic goes before \p first.
  SiblingFusion(linalg::GenericOp reduction, linalg::GenericOp sibling,
                Value read, Value shared,
                ArrayRef<ReassociationIndices> reassociation, Operation *first)
      : reduction(reduction), sibling(sibling), read(read), shared(shared),
        reassociation(reassociation), builder(first),
        loc(FusedLoc::get(builder.getContext(),
                          {reduction.getLoc(), sibling.getLoc()})),
        shape(cast<RankedTensorType>(read.getType()).getShape()),
        reshaped(read != shared),
        numReductionInits(reduction.getNumDpsInits()) {}

  /// Builds the fused generic, replaces and erases the two originals.
  linalg::GenericOp run();

private:
  Value expanded(Value value);
  void collectInputs();
  Value siblingInit(Value init);
  void collectInits();
  void buildBody(OpBuilder &b, ValueRange args);
  void keepAgreedAttributes(linalg::GenericOp fused);
  Value siblingResult(Value result, Value original);
  void replaceSiblingResults(linalg::GenericOp fused);
  void eraseOriginals();

  linalg::GenericOp reduction, sibling;
  Value read, shared;
  ArrayRef<ReassociationIndices> reassociation;
  OpBuilder builder;
  Location loc;
  ArrayRef<int64_t> shape;
  bool reshaped;
  unsigned numReductionInits;

  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps;
  /// For each sibling input, its position among the fused inputs.
  SmallVector<int64_t> siblingInputPosition;
};

/// \p value in the shape of the reduction's input, when that is reshaped.
Value SiblingFusion::expanded(Value value) {
  if (!reshaped)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return tensor::ExpandShapeOp::create(
      builder, loc, RankedTensorType::get(shape, type.getElementType()), value,
      reassociation);
}

/// Inputs: the reduction's, then the sibling's other than the shared
/// tensor (read through the reduction's operand).
void SiblingFusion::collectInputs() {
  inputs = SmallVector<Value>(reduction.getDpsInputs());
  for (OpOperand *input : reduction.getDpsInputOperands())
    maps.push_back(reduction.getMatchingIndexingMap(input));
  AffineMap identity = builder.getMultiDimIdentityMap(reduction.getNumLoops());
  unsigned sharedPosition = llvm::find(inputs, read) - inputs.begin();
  for (Value input : sibling.getDpsInputs()) {
    if (input == shared) {
      siblingInputPosition.push_back(sharedPosition);
      continue;
    }
    siblingInputPosition.push_back(inputs.size());
    inputs.push_back(expanded(input));
    maps.push_back(identity);
  }
}

/// An empty destination is made in the expanded shape, where empty-tensor
/// elimination can still replace it; others are expanded.
Value SiblingFusion::siblingInit(Value init) {
  auto empty = init.getDefiningOp<tensor::EmptyOp>();
  if (reshaped && empty)
    return tensor::EmptyOp::create(builder, loc, shape,
                                   empty.getType().getElementType());
  return expanded(init);
}

/// Inits: the reduction's, then the sibling's.
void SiblingFusion::collectInits() {
  inits = SmallVector<Value>(reduction.getDpsInits());
  for (OpOperand &init : reduction.getDpsInitsMutable())
    maps.push_back(reduction.getMatchingIndexingMap(&init));
  AffineMap identity = builder.getMultiDimIdentityMap(reduction.getNumLoops());
  for (Value init : sibling.getDpsInits()) {
    inits.push_back(siblingInit(init));
    maps.push_back(identity);
  }
}

/// The reduction's body, then the sibling's, on the fused block's
/// arguments \p args; yields what both yielded.
void SiblingFusion::buildBody(OpBuilder &b, ValueRange args) {
  ValueRange fusedInputs = args.take_front(inputs.size());
  ValueRange fusedInits = args.drop_front(inputs.size());
  IRMapping mapping;
  Block &reductionBody = reduction.getRegion().front();
  Block &siblingBody = sibling.getRegion().front();
  for (auto [arg, value] :
       llvm::zip(reductionBody.getArguments(),
                 llvm::concat<const Value>(
                     fusedInputs.take_front(reduction.getNumDpsInputs()),
                     fusedInits.take_front(numReductionInits))))
    mapping.map(arg, value);
  unsigned numSiblingInputs = sibling.getNumDpsInputs();
  for (auto [arg, position] :
       llvm::zip(siblingBody.getArguments().take_front(numSiblingInputs),
                 siblingInputPosition))
    mapping.map(arg, fusedInputs[position]);
  for (auto [arg, value] :
       llvm::zip(siblingBody.getArguments().drop_front(numSiblingInputs),
                 fusedInits.drop_front(numReductionInits)))
    mapping.map(arg, value);
  SmallVector<Value> yielded;
  for (Block *body : {&reductionBody, &siblingBody}) {
    for (Operation &op : body->without_terminator())
      b.clone(op, mapping);
    for (Value value : body->getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(value));
  }
  linalg::YieldOp::create(b, loc, yielded);
}

/// Attributes the generics carry (mp.precision) stay on the fused one
/// where both agree.
void SiblingFusion::keepAgreedAttributes(linalg::GenericOp fused) {
  for (NamedAttribute attr : reduction->getDiscardableAttrs())
    if (sibling->getDiscardableAttr(attr.getName()) == attr.getValue())
      fused->setDiscardableAttr(attr.getName(), attr.getValue());
}

/// What replaces the sibling's result \p original, given the fused
/// generic's \p result: it, collapsed back when reshaped, or null when it
/// was materialized into its buffers' expanded views instead.
Value SiblingFusion::siblingResult(Value result, Value original) {
  if (!reshaped)
    return result;
  if (materializeIntoExpandedViews(result, original, reassociation))
    return nullptr;
  return tensor::CollapseShapeOp::create(builder, loc, original.getType(),
                                         result, reassociation);
}

void SiblingFusion::replaceSiblingResults(linalg::GenericOp fused) {
  SmallVector<Value> siblingResults;
  for (auto [result, original] :
       llvm::zip(fused->getResults().drop_front(numReductionInits),
                 sibling->getResults()))
    siblingResults.push_back(siblingResult(result, original));
  for (auto [original, replacement] :
       llvm::zip(sibling->getResults(), siblingResults))
    if (replacement)
      original.replaceAllUsesWith(replacement);
}

void SiblingFusion::eraseOriginals() {
  reduction->erase();
  SmallVector<Value> siblingInits(sibling.getDpsInits());
  sibling->erase();
  // Destinations made for the sibling alone (now expanded copies).
  for (Value init : siblingInits)
    if (auto empty = init.getDefiningOp<tensor::EmptyOp>();
        empty && empty->use_empty())
      empty->erase();
}

linalg::GenericOp SiblingFusion::run() {
  collectInputs();
  collectInits();
  SmallVector<Type> resultTypes;
  for (Value init : inits)
    resultTypes.push_back(init.getType());
  auto fused = linalg::GenericOp::create(
      builder, loc, resultTypes, inputs, inits, maps,
      reduction.getIteratorTypesArray(),
      [&](OpBuilder &b, Location, ValueRange args) { buildBody(b, args); });
  keepAgreedAttributes(fused);
  reduction->replaceAllUsesWith(
      fused->getResults().take_front(numReductionInits));
  replaceSiblingResults(fused);
  eraseOriginals();
  return fused;
}

struct FuseSiblingReductionsPass
    : public mp::impl::MPFuseSiblingReductionsBase<FuseSiblingReductionsPass> {
  using MPFuseSiblingReductionsBase::MPFuseSiblingReductionsBase;

  void runOnOperation() override {
    if (minParallel < 1) {
      getOperation().emitError() << "mp-fuse-sibling-reductions: "
                                    "min-parallel must be positive, got "
                                 << static_cast<int64_t>(minParallel);
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> reductions;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isReductionOfWholeInputs(op) && parallelIterations(op) >= minParallel)
        reductions.push_back(op);
    });
    DominanceInfo dom(getOperation());
    for (linalg::GenericOp reduction : reductions) {
      // A fused generic is a reduction again and may take another sibling.
      while (linalg::GenericOp fused = fuseOneSibling(reduction, dom))
        reduction = fused;
    }
  }

  /// Fuses one elementwise generic reading an input of \p reduction (or the
  /// tensor that input expands) into it; returns the fused generic, or null
  /// when there is none to fuse.
  linalg::GenericOp fuseOneSibling(linalg::GenericOp reduction,
                                   DominanceInfo &dom) {
    for (OpOperand *input : reduction.getDpsInputOperands()) {
      Value read = input->get();
      SmallVector<ReassociationIndices> reassociation;
      Value shared = sharedTensor(read, reassociation);
      for (Operation *user : shared.getUsers()) {
        auto sibling = dyn_cast<linalg::GenericOp>(user);
        if (!isFusableSibling(sibling, reduction, reassociation.size()))
          continue;
        // The fused generic goes where the first of the two was; the
        // other's operands must already be there.
        Operation *first =
            sibling->isBeforeInBlock(reduction) ? sibling : reduction;
        Operation *second = first == sibling ? reduction : sibling;
        if (!hoistOperands(second, first, dom))
          continue;
        return fuse(reduction, sibling, read, shared, reassociation, first);
      }
    }
    return nullptr;
  }

  /// The tensor the reduction's input \p read views: the source of its
  /// expand_shape (with that reassociation), or \p read itself (with the
  /// identity reassociation).
  static Value
  sharedTensor(Value read,
               SmallVectorImpl<ReassociationIndices> &reassociation) {
    if (auto expand = read.getDefiningOp<tensor::ExpandShapeOp>()) {
      reassociation = expand.getReassociationIndices();
      return expand.getSrc();
    }
    int64_t rank = cast<RankedTensorType>(read.getType()).getRank();
    for (int64_t d = 0; d < rank; ++d)
      reassociation.push_back({d});
    return read;
  }

  /// Whether \p sibling is an elementwise generic of \p numLoops loops
  /// beside \p reduction in its block.
  static bool isFusableSibling(linalg::GenericOp sibling,
                               linalg::GenericOp reduction, size_t numLoops) {
    return sibling && sibling != reduction &&
           sibling->getBlock() == reduction->getBlock() &&
           isElementwise(sibling) && sibling.getNumLoops() == numLoops;
  }

  /// Moves what \p second reads (its operands and the values its body
  /// takes from above) before \p first where it is not there already;
  /// false, and nothing moved, when some of it cannot move.
  static bool hoistOperands(Operation *second, Operation *first,
                            DominanceInfo &dom) {
    llvm::SetVector<Value> later(second->operand_begin(),
                                 second->operand_end());
    getUsedValuesDefinedAbove(second->getRegion(0), later);
    if (!llvm::all_of(later, [&](Value value) {
          return isAvailableBefore(value, first, dom);
        }))
      return false;
    for (Value value : later)
      if (!dom.properlyDominates(value, first))
        value.getDefiningOp()->moveBefore(first);
    return true;
  }

  linalg::GenericOp fuse(linalg::GenericOp reduction, linalg::GenericOp sibling,
                         Value read, Value shared,
                         ArrayRef<ReassociationIndices> reassociation,
                         Operation *first) {
    linalg::GenericOp fused =
        SiblingFusion(reduction, sibling, read, shared, reassociation, first)
            .run();
    ++numFused;
    return fused;
  }
};

} // namespace
