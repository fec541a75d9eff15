//===- StepWeightCopies.cpp - 16-bit weights kept between training steps --===//
//
// A bf16/f16 training step converts every f32 weight to 16 bits before its
// forward pass, reading the f32 weight that the same step's update rewrites
// at its end. Here the step takes the 16-bit copies as arguments instead and
// its update writes the next step's copies while the new weights are in
// registers (mixed-precision training's "master weights plus low-precision
// copies"): one pass over the f32 weights a step fewer.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/Passes.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPKEEPSTEPWEIGHTCOPIES
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

/// Whether `op` only converts all of `input` to a 16-bit float:
/// `linalg.generic ins(input) outs(tensor.empty) { yield truncf(in) }`.
bool isWeightConversion(linalg::GenericOp op, Value input) {
  return isWholeTruncation(op) && op.getDpsInputOperand(0)->get() == input &&
         op.getDpsInitOperand(0)->get().getDefiningOp<tensor::EmptyOp>() &&
         isa<Float16Type, BFloat16Type>(
             cast<RankedTensorType>(op.getResultTypes()[0]).getElementType());
}

/// A parameter whose 16-bit copy the step can keep: the one conversion
/// that reads it and the write of its new value.
struct Candidate {
  unsigned arg;
  StringAttr name;
  linalg::GenericOp cast;
  bufferization::MaterializeInDestinationOp update;
};

/// The only conversion of parameter `arg` to 16 bits, when the step reads
/// the parameter once and converts it once.
linalg::GenericOp onlyConversion(BlockArgument arg) {
  if (!arg.hasOneUse())
    return {};
  auto read = dyn_cast<bufferization::ToTensorOp>(*arg.getUsers().begin());
  if (!read)
    return {};
  linalg::GenericOp conversion;
  for (Operation *user : read.getResult().getUsers()) {
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || !isWeightConversion(generic, read.getResult()))
      continue;
    if (conversion)
      return {};
    conversion = generic;
  }
  return conversion;
}

/// The write of the new value of argument `arg` (into the argument marked
/// mp.update_of `arg`).
bufferization::MaterializeInDestinationOp updateOf(func::FuncOp entry,
                                                   unsigned arg) {
  bufferization::MaterializeInDestinationOp update;
  for (unsigned a = 0; a < entry.getNumArguments(); ++a) {
    auto of = entry.getArgAttrOfType<IntegerAttr>(a, kUpdateOfAttrName);
    if (!of || of.getInt() != arg)
      continue;
    for (Operation *user : entry.getArgument(a).getUsers())
      if (auto write =
              dyn_cast<bufferization::MaterializeInDestinationOp>(user))
        update = write;
  }
  return update;
}

/// Whether `update`'s value comes out of an all-parallel generic with an
/// identity map in the entry's body (the optimizer's update), which can
/// write the copy too.
bool updatedElementwise(func::FuncOp entry,
                        bufferization::MaterializeInDestinationOp update) {
  auto producer = update.getSource().getDefiningOp<linalg::GenericOp>();
  if (!producer || producer->getBlock() != &entry.getBody().front() ||
      producer.getNumParallelLoops() != producer.getNumLoops())
    return false;
  unsigned k = cast<OpResult>(update.getSource()).getResultNumber();
  return producer.getMatchingIndexingMap(producer.getDpsInitOperand(k))
      .isIdentity();
}

SmallVector<Candidate> findCandidates(func::FuncOp entry) {
  SmallVector<Candidate> candidates;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    auto name = entry.getArgAttrOfType<StringAttr>(i, kParamAttrName);
    if (!name)
      continue;
    linalg::GenericOp conversion = onlyConversion(entry.getArgument(i));
    if (!conversion)
      continue;
    bufferization::MaterializeInDestinationOp update = updateOf(entry, i);
    if (update && updatedElementwise(entry, update))
      candidates.push_back({i, name, conversion, update});
  }
  return candidates;
}

MemRefType copyType(Candidate c) {
  auto type = cast<RankedTensorType>(c.cast.getResultTypes()[0]);
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// Appends the arguments every copy is read from, then those the next
/// copies are written to (each mp.update_of the one it replaces); returns
/// the index of the first read.
unsigned addCopyArguments(func::FuncOp entry,
                          MutableArrayRef<Candidate> candidates) {
  MLIRContext *context = entry.getContext();
  Location loc = entry.getLoc();
  Builder b(context);
  unsigned firstIn = entry.getNumArguments();
  for (auto [n, c] : llvm::enumerate(candidates))
    (void)entry.insertArgument(
        firstIn + n, copyType(c),
        b.getDictionaryAttr(b.getNamedAttr(kCopyOfAttrName, c.name)), loc);
  unsigned firstOut = entry.getNumArguments();
  for (auto [n, c] : llvm::enumerate(candidates))
    (void)entry.insertArgument(
        firstOut + n, copyType(c),
        b.getDictionaryAttr({b.getNamedAttr(kCopyOfAttrName, c.name),
                             b.getNamedAttr(kUpdateOfAttrName,
                                            b.getI64IntegerAttr(firstIn + n))}),
        loc);
  return firstIn;
}

/// `@mp_train_copies_entry(parameters..., copies...)`: the conversions,
/// kept as an entry of their own for the copies of the first step and
/// after the parameters changed outside a step.
void addCopiesEntry(ModuleOp module, func::FuncOp entry,
                    MutableArrayRef<Candidate> candidates, unsigned firstIn) {
  Location loc = entry.getLoc();
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> types;
  for (Candidate &c : candidates)
    types.push_back(entry.getArgument(c.arg).getType());
  for (unsigned n = 0; n < candidates.size(); ++n)
    types.push_back(entry.getArgument(firstIn + n).getType());
  auto derive = func::FuncOp::create(b, loc, "mp_train_copies_entry",
                                     b.getFunctionType(types, {}));
  derive->setAttr(kEntryAttrName, b.getI64IntegerAttr(candidates.size()));
  Block *body = derive.addEntryBlock();
  b.setInsertionPointToStart(body);
  for (auto [n, c] : llvm::enumerate(candidates)) {
    Value input = c.cast.getDpsInputOperand(0)->get();
    Value read = bufferization::ToTensorOp::create(
        b, loc, input.getType(), body->getArgument(n),
        /*restrict=*/b.getUnitAttr());
    IRMapping mapping;
    mapping.map(input, read);
    b.clone(*c.cast.getDpsInitOperand(0)->get().getDefiningOp(), mapping);
    Operation *converted = b.clone(*c.cast, mapping);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, converted->getResult(0),
        body->getArgument(candidates.size() + n), /*restrict=*/true,
        /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);
}

/// `producer` with one more result: its result `k` truncated to
/// `copyType`'s element type (a new init at `initLoc`).
linalg::GenericOp widenWithTruncation(OpBuilder &b, linalg::GenericOp producer,
                                      unsigned k, RankedTensorType copyType,
                                      Location initLoc) {
  Location loc = producer.getLoc();
  b.setInsertionPoint(producer);
  SmallVector<Value> inits(producer.getDpsInits());
  inits.push_back(tensor::EmptyOp::create(b, initLoc, copyType.getShape(),
                                          copyType.getElementType()));
  SmallVector<Type> resultTypes(producer.getResultTypes());
  resultTypes.push_back(copyType);
  SmallVector<AffineMap> maps = producer.getIndexingMapsArray();
  maps.push_back(b.getMultiDimIdentityMap(copyType.getRank()));
  auto widened =
      linalg::GenericOp::create(b, loc, resultTypes, producer.getDpsInputs(),
                                inits, maps, producer.getIteratorTypesArray());
  for (NamedAttribute attr : producer->getDiscardableAttrs())
    widened->setAttr(attr.getName(), attr.getValue());
  widened.getRegion().takeBody(producer.getRegion());
  Block &generic = widened.getRegion().front();
  generic.addArgument(copyType.getElementType(), loc);
  Operation *yield = generic.getTerminator();
  b.setInsertionPoint(yield);
  Value truncated = arith::TruncFOp::create(b, loc, copyType.getElementType(),
                                            yield->getOperand(k));
  yield->insertOperands(yield->getNumOperands(), truncated);
  for (unsigned r = 0; r < producer.getNumResults(); ++r)
    producer.getResult(r).replaceAllUsesWith(widened.getResult(r));
  producer.erase();
  return widened;
}

/// The step reads the copy in argument `in` instead of converting, and
/// the update of the parameter writes the next copy into argument `out`.
void useKeptCopy(func::FuncOp entry, Candidate c, unsigned in, unsigned out) {
  Location loc = entry.getLoc();
  Block &body = entry.getBody().front();
  OpBuilder b(entry.getContext());
  b.setInsertionPointToStart(&body);
  auto type = cast<RankedTensorType>(c.cast.getResultTypes()[0]);
  Value copy = bufferization::ToTensorOp::create(
      b, loc, type, body.getArgument(in), /*restrict=*/b.getUnitAttr());
  c.cast.getResult(0).replaceAllUsesWith(copy);
  c.cast.erase();
  auto producer = c.update.getSource().getDefiningOp<linalg::GenericOp>();
  unsigned k = cast<OpResult>(c.update.getSource()).getResultNumber();
  linalg::GenericOp widened = widenWithTruncation(b, producer, k, type, loc);
  b.setInsertionPointAfter(c.update);
  bufferization::MaterializeInDestinationOp::create(
      b, loc, TypeRange{}, widened.getResults().back(), body.getArgument(out),
      /*restrict=*/true, /*writable=*/true);
}

struct MPKeepStepWeightCopiesPass
    : mlir::mp::impl::MPKeepStepWeightCopiesBase<MPKeepStepWeightCopiesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto entry = module.lookupSymbol<func::FuncOp>("mp_train_entry");
    if (!entry || entry.isExternal())
      return;
    SmallVector<Candidate> candidates = findCandidates(entry);
    if (candidates.empty())
      return;
    unsigned firstIn = addCopyArguments(entry, candidates);
    // The conversions are cloned before the step stops making them.
    addCopiesEntry(module, entry, candidates, firstIn);
    unsigned firstOut = firstIn + candidates.size();
    for (auto [n, c] : llvm::enumerate(candidates))
      useKeptCopy(entry, c, firstIn + n, firstOut + n);
    numCopies += candidates.size();
  }
};

} // namespace
