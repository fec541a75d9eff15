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

#include "mp/Session/JitEntry.h"

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

using namespace mlir;

namespace mp {

namespace {

/// Whether `op` only converts all of `input` to a 16-bit float:
/// `linalg.generic ins(input) outs(tensor.empty) { yield truncf(in) }`.
bool isWeightConversion(linalg::GenericOp op, Value input) {
  return mlir::mp::isWholeTruncation(op) &&
         op.getDpsInputOperand(0)->get() == input &&
         op.getDpsInitOperand(0)->get().getDefiningOp<tensor::EmptyOp>() &&
         isa<Float16Type, BFloat16Type>(
             cast<RankedTensorType>(op.getResultTypes()[0]).getElementType());
}

struct Candidate {
  int64_t param;
  linalg::GenericOp cast;
  bufferization::MaterializeInDestinationOp update;
};

} // namespace

bool keepStepWeightCopies(ModuleOp module, unsigned firstParam,
                          unsigned numParams,
                          std::vector<std::pair<int64_t, int64_t>> &copies) {
  copies.clear();
  auto entry = module.lookupSymbol<func::FuncOp>("mp_train_entry");
  if (!entry || entry.isExternal())
    return false;
  // Each parameter converted once, whose new value comes out of an
  // all-parallel generic with an identity map (the optimizer's update).
  SmallVector<Candidate> candidates;
  for (unsigned i = 0; i < numParams; ++i) {
    BlockArgument arg = entry.getArgument(firstParam + i);
    bufferization::ToTensorOp read;
    for (Operation *user : arg.getUsers())
      if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(user))
        read = toTensor;
    if (!read || !arg.hasOneUse())
      continue;
    linalg::GenericOp conversion;
    unsigned conversions = 0;
    for (Operation *user : read.getResult().getUsers())
      if (auto generic = dyn_cast<linalg::GenericOp>(user);
          generic && isWeightConversion(generic, read.getResult())) {
        conversion = generic;
        ++conversions;
      }
    if (conversions != 1)
      continue;
    bufferization::MaterializeInDestinationOp update;
    for (unsigned a = 0; a < entry.getNumArguments(); ++a) {
      auto of =
          entry.getArgAttrOfType<IntegerAttr>(a, mlir::mp::kUpdateOfAttrName);
      if (!of || of.getInt() != firstParam + i)
        continue;
      for (Operation *user : entry.getArgument(a).getUsers())
        if (auto write =
                dyn_cast<bufferization::MaterializeInDestinationOp>(user))
          update = write;
    }
    auto producer = update
                        ? update.getSource().getDefiningOp<linalg::GenericOp>()
                        : linalg::GenericOp();
    if (!producer || producer.getNumParallelLoops() != producer.getNumLoops() ||
        !producer
             .getMatchingIndexingMap(producer.getDpsInitOperand(
                 cast<OpResult>(update.getSource()).getResultNumber()))
             .isIdentity() ||
        producer->getBlock() != &entry.getBody().front())
      continue;
    candidates.push_back({i, conversion, update});
  }
  if (candidates.empty())
    return false;

  MLIRContext *context = module.getContext();
  Location loc = entry.getLoc();
  Block &body = entry.getBody().front();
  // The arguments: every copy read, then every copy written (the update of
  // the one it reads, for --mp-in-place-updates).
  unsigned firstIn = entry.getNumArguments();
  for (auto [n, c] : llvm::enumerate(candidates)) {
    auto type = cast<RankedTensorType>(c.cast.getResultTypes()[0]);
    if (failed(entry.insertArgument(
            firstIn + n,
            MemRefType::get(type.getShape(), type.getElementType()),
            DictionaryAttr(), loc)))
      return false;
  }
  unsigned firstOut = entry.getNumArguments();
  for (auto [n, c] : llvm::enumerate(candidates)) {
    auto type = cast<RankedTensorType>(c.cast.getResultTypes()[0]);
    (void)entry.insertArgument(
        firstOut + n, MemRefType::get(type.getShape(), type.getElementType()),
        DictionaryAttr::get(
            context,
            {NamedAttribute(
                StringAttr::get(context, mlir::mp::kUpdateOfAttrName),
                IntegerAttr::get(IntegerType::get(context, 64), firstIn + n))}),
        loc);
  }

  // The conversion, kept as an entry of its own: the copies of the first
  // step, and after the parameters changed outside a step.
  OpBuilder b(context);
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> deriveTypes;
  for (Candidate &c : candidates)
    deriveTypes.push_back(entry.getArgument(firstParam + c.param).getType());
  for (unsigned n = 0; n < candidates.size(); ++n)
    deriveTypes.push_back(entry.getArgument(firstIn + n).getType());
  auto derive = func::FuncOp::create(b, loc, "mp_train_copies_entry",
                                     b.getFunctionType(deriveTypes, {}));
  Block *deriveBody = derive.addEntryBlock();
  b.setInsertionPointToStart(deriveBody);
  for (auto [n, c] : llvm::enumerate(candidates)) {
    Value param = deriveBody->getArgument(n);
    auto tensorType =
        cast<RankedTensorType>(c.cast.getDpsInputOperand(0)->get().getType());
    Value read =
        bufferization::ToTensorOp::create(b, loc, tensorType, param,
                                          /*restrict=*/b.getUnitAttr());
    IRMapping mapping;
    mapping.map(c.cast.getDpsInputOperand(0)->get(), read);
    Operation *empty = c.cast.getDpsInitOperand(0)->get().getDefiningOp();
    b.clone(*empty, mapping);
    Operation *converted = b.clone(*c.cast, mapping);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, converted->getResult(0),
        deriveBody->getArgument(candidates.size() + n), /*restrict=*/true,
        /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);

  for (auto [n, c] : llvm::enumerate(candidates)) {
    // The step reads the copy it is given...
    b.setInsertionPointToStart(&body);
    Value copy = bufferization::ToTensorOp::create(
        b, loc, c.cast.getResultTypes()[0], body.getArgument(firstIn + n),
        /*restrict=*/b.getUnitAttr());
    c.cast.getResult(0).replaceAllUsesWith(copy);
    c.cast.erase();
    // ...and its update writes the next one: the producer of the new value
    // gets one more result, the new value truncated.
    auto producer = c.update.getSource().getDefiningOp<linalg::GenericOp>();
    unsigned k = cast<OpResult>(c.update.getSource()).getResultNumber();
    auto copyType = cast<RankedTensorType>(copy.getType());
    b.setInsertionPoint(producer);
    SmallVector<Value> inits(producer.getDpsInits());
    inits.push_back(tensor::EmptyOp::create(b, loc, copyType.getShape(),
                                            copyType.getElementType()));
    SmallVector<Type> resultTypes(producer.getResultTypes());
    resultTypes.push_back(copyType);
    SmallVector<AffineMap> maps = producer.getIndexingMapsArray();
    maps.push_back(b.getMultiDimIdentityMap(copyType.getRank()));
    auto widened = linalg::GenericOp::create(
        b, producer.getLoc(), resultTypes, producer.getDpsInputs(), inits, maps,
        producer.getIteratorTypesArray());
    for (NamedAttribute attr : producer->getDiscardableAttrs())
      widened->setAttr(attr.getName(), attr.getValue());
    widened.getRegion().takeBody(producer.getRegion());
    Block &generic = widened.getRegion().front();
    generic.addArgument(copyType.getElementType(), producer.getLoc());
    Operation *yield = generic.getTerminator();
    b.setInsertionPoint(yield);
    Value truncated = arith::TruncFOp::create(
        b, producer.getLoc(), copyType.getElementType(), yield->getOperand(k));
    yield->insertOperands(yield->getNumOperands(), truncated);
    for (unsigned r = 0; r < producer.getNumResults(); ++r)
      producer.getResult(r).replaceAllUsesWith(widened.getResult(r));
    producer.erase();
    b.setInsertionPointAfter(c.update);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, widened.getResults().back(),
        body.getArgument(firstOut + n), /*restrict=*/true, /*writable=*/true);
    copies.push_back(
        {c.param, static_cast<int64_t>(copyType.getElementTypeBitWidth() / 8)});
  }
  return true;
}

} // namespace mp
