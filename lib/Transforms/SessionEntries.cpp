//===- SessionEntries.cpp - entries host code calls a step through --------===//
//
// --mp-train-entries, --mp-infer-entries and --mp-inline-entries: what a
// session's pipelines (mp-session-train, mp-session-infer) add after the
// step itself, so that host code calls the step on buffers it owns.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/Entries.h"
#include "mp/Transforms/Passes.h"

#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPTRAINENTRIES
#define GEN_PASS_DEF_MPINFERENTRIES
#define GEN_PASS_DEF_MPKEEPPREDICTION
#define GEN_PASS_DEF_MPINLINEENTRIES
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

static MemRefType memrefFor(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  if (type.isInteger(1))
    return MemRefType::get({}, IntegerType::get(type.getContext(), 32));
  return MemRefType::get({}, type);
}

/// The entry's arguments: the callee's arguments, then its results, as
/// memrefs, with their attributes.
static func::FuncOp createEntryFunction(OpBuilder &b, func::FuncOp callee,
                                        StringRef name) {
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [i, type] : llvm::enumerate(callee.getArgumentTypes())) {
    argTypes.push_back(memrefFor(type));
    argAttrs.push_back(callee.getArgAttrDict(i));
  }
  for (auto [i, type] : llvm::enumerate(callee.getResultTypes())) {
    argTypes.push_back(memrefFor(type));
    argAttrs.push_back(callee.getResultAttrDict(i));
  }
  auto entry = func::FuncOp::create(b, callee.getLoc(), name,
                                    b.getFunctionType(argTypes, {}));
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (attrs)
      entry.setArgAttrs(i, attrs);
  entry->setAttr(kEntryAttrName, b.getI64IntegerAttr(callee.getNumArguments()));
  return entry;
}

/// Writes the call's result `value` into the buffer `out`.
static void storeResult(OpBuilder &b, Location loc, Value value, Value out) {
  if (isa<RankedTensorType>(value.getType())) {
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, value, out, /*restrict=*/true, /*writable=*/true);
    return;
  }
  if (value.getType().isInteger(1))
    value = arith::ExtUIOp::create(b, loc, b.getI32Type(), value);
  memref::StoreOp::create(b, loc, value, out, ValueRange{});
}

unsigned mlir::mp::entryInputCount(func::FuncOp entry) {
  return entry->getAttrOfType<IntegerAttr>(kEntryAttrName).getInt();
}

func::FuncOp mlir::mp::addEntry(ModuleOp module, func::FuncOp callee,
                                StringRef name) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = callee.getLoc();
  func::FuncOp entry = createEntryFunction(b, callee, name);
  Block *block = entry.addEntryBlock();
  b.setInsertionPointToStart(block);
  SmallVector<Value> operands;
  unsigned numInputs = callee.getNumArguments();
  for (auto [i, type] : llvm::enumerate(callee.getArgumentTypes())) {
    Value arg = block->getArgument(i);
    if (isa<RankedTensorType>(type))
      operands.push_back(bufferization::ToTensorOp::create(
          b, loc, type, arg, /*restrict=*/b.getUnitAttr()));
    else
      operands.push_back(memref::LoadOp::create(b, loc, arg, ValueRange{}));
  }
  auto call = func::CallOp::create(b, loc, callee, operands);
  for (auto [i, result] : llvm::enumerate(call.getResults()))
    storeResult(b, loc, result, block->getArgument(numInputs + i));
  func::ReturnOp::create(b, loc);
  return entry;
}

namespace {

/// The entry of `callee`, its first results the new values of its
/// `updated` arguments from `firstUpdated` on (the step's parameters and
/// state, the accumulation's sums), each marked mp.update_of the argument
/// it replaces, for --mp-in-place-updates.
void addUpdatingEntry(ModuleOp module, func::FuncOp callee, StringRef name,
                      unsigned firstUpdated, unsigned updated) {
  func::FuncOp entry = addEntry(module, callee, name);
  Builder b(module.getContext());
  unsigned numArgs = callee.getNumArguments();
  for (unsigned i = 0; i < updated; ++i)
    if (entry.getArgument(numArgs + i).getType() ==
        entry.getArgument(firstUpdated + i).getType())
      entry.setArgAttr(numArgs + i, kUpdateOfAttrName,
                       b.getI64IntegerAttr(firstUpdated + i));
}

bool isStaticTensor(Type type, int64_t minRank, int64_t maxRank) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getRank() >= minRank &&
         tensor.getRank() <= maxRank;
}

/// Whether `x` (B x ...) and `y` (B x C) are static tensors of one batch:
/// a step's input and labels, a prediction's input and logits.
bool isBatchPair(Type x, Type y) {
  return isStaticTensor(x, 2, INT64_MAX) && isStaticTensor(y, 2, 2) &&
         cast<RankedTensorType>(x).getDimSize(0) ==
             cast<RankedTensorType>(y).getDimSize(0);
}

/// Checks the step's (x: B x ..., labels: B x C, parameters...) signature.
LogicalResult verifyStepSignature(func::FuncOp step) {
  if (step.getNumArguments() < 2 ||
      !isBatchPair(step.getArgumentTypes()[0], step.getArgumentTypes()[1]))
    return step.emitError()
           << "@" << step.getSymName()
           << " must take (x: tensor<Bx...>, labels: tensor<BxC>, "
              "parameters...) with static shapes";
  for (unsigned i = 2; i < step.getNumArguments(); ++i) {
    if (!step.getArgAttr(i, kParamAttrName))
      continue;
    auto type = cast<ShapedType>(step.getArgumentTypes()[i]);
    if (!isStaticTensor(type, 0, INT64_MAX) || !type.getElementType().isF32())
      return step.emitError()
             << "argument #" << i << " of @" << step.getSymName()
             << " must be a static f32 tensor marked mp.param";
  }
  return success();
}

unsigned countArgsWith(func::FuncOp func, ArrayRef<StringRef> attrs) {
  unsigned count = 0;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (llvm::any_of(attrs, [&](StringRef a) { return func.getArgAttr(i, a); }))
      ++count;
  return count;
}

struct MPTrainEntriesPass
    : mlir::mp::impl::MPTrainEntriesBase<MPTrainEntriesPass> {
  using MPTrainEntriesBase::MPTrainEntriesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step) {
      module.emitError("no @train_step: run --mp-train-pipeline first");
      return signalPassFailure();
    }
    if (failed(verifyStepSignature(step)))
      return signalPassFailure();
    unsigned numParams = countArgsWith(step, {kParamAttrName});
    addUpdatingEntry(module, step, "mp_train_entry", 2,
                     countArgsWith(step, {kParamAttrName, kStateAttrName}));
    if (accumulate > 1 && failed(addAccumulateEntry(module, numParams)))
      return signalPassFailure();
    if (failed(addPredictEntries(module)))
      return signalPassFailure();
  }

  /// x, labels, the parameters and the scale come before the sums.
  LogicalResult addAccumulateEntry(ModuleOp module, unsigned numParams) {
    auto accumulation =
        module.lookupSymbol<func::FuncOp>("train_step_accumulate");
    if (!accumulation)
      return module.emitError("accumulate=")
             << accumulate << " but the module has no @train_step_accumulate";
    addUpdatingEntry(module, accumulation, "mp_accumulate_entry", 3 + numParams,
                     numParams);
    return success();
  }

  LogicalResult addPredictEntries(ModuleOp module) {
    func::FuncOp predict;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kPredictAttrName))
        predict = func;
    if (!predict)
      return success();
    if (!predictWeightCopies) {
      addEntry(module, predict, "mp_predict_entry");
      return success();
    }
    // The loss calls @predict as it is: the weights are converted once in a
    // copy of it, the one function left marked mp.predict.
    func::FuncOp body = predict.clone();
    body.setName("mp_predict_body");
    body.setPrivate();
    module.push_back(body);
    predict->removeAttr(kPredictAttrName);
    OpPassManager convert(ModuleOp::getOperationName());
    convert.addPass(createMPConvertWeightsOnce());
    if (failed(runPipeline(convert, module)))
      return failure();
    addEntry(module, body, "mp_predict_entry");
    if (auto weights =
            body->getAttrOfType<FlatSymbolRefAttr>(kConvertWeightsAttrName))
      addEntry(module, module.lookupSymbol<func::FuncOp>(weights),
               "mp_predict_weights_entry");
    return success();
  }
};

/// The weight function a prediction names: int8 weights and scales, or
/// f16/bf16 copies made once.
func::FuncOp weightsFunction(ModuleOp module, func::FuncOp predict) {
  auto ref =
      predict->getAttrOfType<FlatSymbolRefAttr>(kQuantizeWeightsAttrName);
  if (!ref)
    ref = predict->getAttrOfType<FlatSymbolRefAttr>(kConvertWeightsAttrName);
  return ref ? module.lookupSymbol<func::FuncOp>(ref) : func::FuncOp();
}

/// Checks the prediction's (x: B x ..., parameters...) -> B x C signature.
LogicalResult verifyPredictSignature(func::FuncOp predict) {
  for (Type type : llvm::concat<const Type>(predict.getArgumentTypes(),
                                            predict.getResultTypes()))
    if (!isStaticTensor(type, 0, INT64_MAX))
      return predict.emitError()
             << "@" << predict.getSymName()
             << ": every argument and result must be a statically shaped "
                "tensor for inference, got "
             << type;
  if (predict.getNumArguments() == 0 || predict.getNumResults() != 1 ||
      !isBatchPair(predict.getArgumentTypes()[0], predict.getResultTypes()[0]))
    return predict.emitError()
           << "@" << predict.getSymName()
           << " must take (x: tensor<Bx...>, parameters...) and return "
              "tensor<BxC>, with static shapes";
  return success();
}

/// Whether argument `i` of a prediction is bound by the session: a
/// parameter, an int8 weight or scale, or a 16-bit copy.
bool isBoundArgument(func::FuncOp predict, unsigned i) {
  return llvm::any_of(
      ArrayRef<StringRef>{kParamAttrName, kQWeightAttrName, kQScaleAttrName,
                          kConvertedAttrName},
      [&](StringRef attr) { return predict.getArgAttr(i, attr); });
}

/// The module's first function marked mp.predict; null, with an error on
/// the module, when it has none.
func::FuncOp firstPrediction(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kPredictAttrName))
      return func;
  module.emitError("no function marked mp.predict");
  return nullptr;
}

struct MPKeepPredictionPass
    : mlir::mp::impl::MPKeepPredictionBase<MPKeepPredictionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp predict = firstPrediction(module);
    if (!predict)
      return signalPassFailure();
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (func != predict && !func.isExternal())
        func.erase();
  }
};

struct MPInferEntriesPass
    : mlir::mp::impl::MPInferEntriesBase<MPInferEntriesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp predict = firstPrediction(module);
    if (!predict)
      return signalPassFailure();
    if (failed(verifyPredictSignature(predict)))
      return signalPassFailure();
    for (unsigned i = 1; i < predict.getNumArguments(); ++i)
      if (!isBoundArgument(predict, i)) {
        predict.emitError()
            << "argument #" << i << " of @" << predict.getSymName()
            << " is neither the input nor a parameter "
               "(mp.param)";
        return signalPassFailure();
      }
    addEntry(module, predict, "mp_infer_predict_entry");
    if (func::FuncOp weights = weightsFunction(module, predict))
      addEntry(module, weights, "mp_infer_weights_entry");
  }
};

struct MPInlineEntriesPass
    : mlir::mp::impl::MPInlineEntriesBase<MPInlineEntriesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration() && !function->hasAttr(kEntryAttrName))
        function.setPrivate();
    OpPassManager inliner(ModuleOp::getOperationName());
    inliner.addPass(createInlinerPass());
    inliner.addPass(createSymbolDCEPass());
    if (failed(runPipeline(inliner, module)))
      signalPassFailure();
  }
};

} // namespace
