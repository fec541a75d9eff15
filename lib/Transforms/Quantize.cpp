//===- Quantize.cpp - INT8 post-training quantization ---------------------===//
//
// Matmuls and convolutions become i8 x i8 -> i32 contractions: activations
// get one scale from calibration, weights one scale per output channel,
// bias joins the i32 accumulator, and the dequantization runs inside the
// consumer's loop. Ops whose estimated quantization error is too large keep
// a floating-point type.
//
// The pass validates its options, has each function planned
// (QuantizePlan.cpp), rewrites the ops the plan sends to int8 or f16,
// hoists argument weights into @<f>_quantize_weights, and writes the report
// (QuantizeReport.cpp).
//
//===----------------------------------------------------------------------===//

#include "QuantizeBuilders.h"
#include "QuantizePlan.h"

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPQUANTIZE
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;
using namespace mlir::mp::quantize;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// An argument weight quantized once by the weights function.
struct HoistedWeight {
  unsigned argIndex;
  unsigned channelDim;
  std::string name;
  Value q, scale; // the new arguments of the quantized function
};

struct QuantizePass : mp::impl::MPQuantizeBase<QuantizePass> {
  using MPQuantizeBase::MPQuantizeBase;

  void runOnOperation() override;

private:
  std::string optionError();
  LogicalResult
  quantizeFunction(func::FuncOp func,
                   const llvm::StringMap<CalibrationEntry> &entries,
                   const PlanOptions &options);
  void rewrite(Decision &decision, func::FuncOp func);
  std::pair<Value, Value> weightFor(OpBuilder &b, Decision &decision,
                                    func::FuncOp func, Value w,
                                    unsigned channelDim);
  void finishHoisting(func::FuncOp func);
  func::FuncOp
  createWeightsFunction(func::FuncOp func, ArrayRef<Type> argTypes,
                        ArrayRef<DictionaryAttr> argAttrs,
                        ArrayRef<Type> resultTypes,
                        ArrayRef<DictionaryAttr> resultAttrs,
                        const llvm::DenseMap<unsigned, unsigned> &weightArgOf);
  void probeOutput(Decision &decision);

  std::vector<Decision> decisions;
  llvm::DenseMap<std::pair<Value, unsigned>, unsigned> hoistedIndex;
  std::vector<HoistedWeight> hoisted;
};

std::pair<Value, Value> QuantizePass::weightFor(OpBuilder &b,
                                                Decision &decision,
                                                func::FuncOp func, Value w,
                                                unsigned channelDim) {
  Location loc = decision.op->getLoc();
  DenseElementsAttr constant;
  if (matchPattern(w, m_Constant(&constant))) {
    ConstantWeight c = quantizeConstant(constant, channelDim, perChannel);
    decision.weights = WeightSource::Constant;
    auto type = cast<RankedTensorType>(w.getType());
    Value q = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(type.clone(b.getI8Type()),
                               ArrayRef<int8_t>(c.q)));
    Value s = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            RankedTensorType::get({static_cast<int64_t>(c.scales.size())},
                                  b.getF32Type()),
            ArrayRef<float>(c.scales)));
    return {q, s};
  }
  auto arg = dyn_cast<BlockArgument>(w);
  if (hoistWeights && arg && arg.getOwner() == &func.getBody().front()) {
    decision.weights = WeightSource::Hoisted;
    auto [it, inserted] =
        hoistedIndex.try_emplace({w, channelDim}, hoisted.size());
    if (inserted) {
      HoistedWeight h;
      h.argIndex = arg.getArgNumber();
      h.channelDim = channelDim;
      auto name = func.getArgAttrOfType<StringAttr>(h.argIndex, kParamAttrName);
      h.name = name ? name.str() : "arg" + std::to_string(h.argIndex);
      // The same weight read along another channel dimension elsewhere
      // needs its own name.
      if (llvm::any_of(hoisted, [&](const HoistedWeight &other) {
            return other.argIndex == h.argIndex;
          }))
        h.name += "#dim" + std::to_string(channelDim);
      auto type = cast<RankedTensorType>(w.getType());
      Block &entry = func.getBody().front();
      h.q = entry.addArgument(type.clone(b.getI8Type()), func.getLoc());
      h.scale = entry.addArgument(
          RankedTensorType::get({type.getDimSize(channelDim)}, b.getF32Type()),
          func.getLoc());
      hoisted.push_back(h);
    }
    const HoistedWeight &h = hoisted[it->second];
    return {h.q, h.scale};
  }
  decision.weights = WeightSource::Inline;
  return quantizeWeightInIR(b, loc, w, channelDim, perChannel);
}

/// Rebuilds the contraction on f16 operands (the fallback precision).
void rewriteInF16(Decision &d, linalg::LinalgOp op) {
  Location loc = op.getLoc();
  OpBuilder b(op);
  Value result = op->getResult(0);
  Type f16 = b.getF16Type();
  Operation *low =
      rebuildNamed(b, op,
                   {castTensor(b, loc, op.getDpsInputOperand(0)->get(), f16),
                    castTensor(b, loc, op.getDpsInputOperand(1)->get(), f16),
                    op.getDpsInitOperand(0)->get()},
                   cast<RankedTensorType>(result.getType()));
  result.replaceAllUsesWith(low->getResult(0));
  d.result = low->getResult(0);
  op->erase();
}

/// Where the dequantization of a contraction's result goes: the one
/// linalg.generic that reads the result elementwise, and in its body an
/// addition of a per-channel bias that can join the i32 accumulator.
struct DequantizeTarget {
  linalg::GenericOp consumer; // null: dequantize in a generic of its own
  OpOperand *use = nullptr;
  arith::AddFOp biasAdd; // null: no bias to fold
  Value bias;
};

/// Whether `v` is an f32 vector of `channels` elements.
bool isChannelVector(Value v, int64_t channels) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == 1 && type.getDimSize(0) == channels &&
         type.getElementType().isF32();
}

/// The bias that `add` adds to `arg` (the result's element in `generic`'s
/// body): another input of `generic`, an f32 vector of `channels` elements
/// read along the result's channel (`channelMap`) and defined before `op`
/// (the i32 accumulator starts from it); null if there is none.
Value foldableBias(linalg::GenericOp generic, arith::AddFOp add,
                   BlockArgument arg, AffineMap channelMap, int64_t channels,
                   Operation *op) {
  Value other = add.getLhs() == arg ? add.getRhs() : add.getLhs();
  auto otherArg = dyn_cast<BlockArgument>(other);
  if (!otherArg || otherArg.getOwner() != generic.getBlock() ||
      otherArg.getArgNumber() >= generic.getNumDpsInputs())
    return nullptr;
  OpOperand *biasOperand = generic.getDpsInputOperand(otherArg.getArgNumber());
  Value candidate = biasOperand->get();
  Operation *producer = candidate.getDefiningOp();
  bool dominates = !producer || (producer->getBlock() == op->getBlock() &&
                                 producer->isBeforeInBlock(op));
  if (dominates && isChannelVector(candidate, channels) &&
      generic.getMatchingIndexingMap(biasOperand) == channelMap)
    return candidate;
  return nullptr;
}

/// The consumer the dequantization of `op`'s result fuses into (its only
/// user, reading it through a projected permutation), and its bias add.
DequantizeTarget findDequantizeTarget(Operation *op, unsigned resultChannelDim,
                                      int64_t channels) {
  DequantizeTarget target;
  Value result = op->getResult(0);
  if (!result.hasOneUse())
    return target;
  OpOperand &use = *result.getUses().begin();
  auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!generic || !generic.isDpsInput(&use))
    return target;
  AffineMap map = generic.getMatchingIndexingMap(&use);
  if (!map.isProjectedPermutation() ||
      map.getNumResults() != cast<RankedTensorType>(result.getType()).getRank())
    return target;
  target.consumer = generic;
  target.use = &use;
  BlockArgument arg = generic.getMatchingBlockArgument(&use);
  AffineMap channelMap = AffineMap::get(
      map.getNumDims(), 0, map.getResult(resultChannelDim), op->getContext());
  if (!arg.hasOneUse())
    return target;
  auto add = dyn_cast<arith::AddFOp>(*arg.getUsers().begin());
  if (!add)
    return target;
  if (Value bias = foldableBias(generic, add, arg, channelMap, channels, op)) {
    target.biasAdd = add;
    target.bias = bias;
  }
  return target;
}

/// The rescaling factor of the i32 accumulator per output channel: the
/// weight's scales times the activation's.
Value accumulatorScale(OpBuilder &b, Location loc, Value weightScale,
                       Value actScale, int64_t channels) {
  Type f32 = b.getF32Type();
  AffineMap one = b.getMultiDimIdentityMap(1);
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get({channels}, f32)},
             ValueRange{weightScale},
             ValueRange{emptyLike(b, loc, {channels}, f32)},
             ArrayRef<AffineMap>{one, one}, parallel(1),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               yieldValue(nb, nl,
                          arith::MulFOp::create(nb, nl, args[0], actScale));
             })
      .getResult(0);
}

/// The i32 accumulator's start: the f32 bias divided by the accumulator's
/// per-channel `scale`, rounded, broadcast along the result's channel.
Value quantizedBiasInit(OpBuilder &b, Location loc, Value bias, Value scale,
                        RankedTensorType resultType,
                        unsigned resultChannelDim) {
  Type i32 = b.getI32Type();
  int64_t channels = resultType.getDimSize(resultChannelDim);
  AffineMap one = b.getMultiDimIdentityMap(1);
  Value biasQ =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get({channels}, i32)},
          ValueRange{bias, scale},
          ValueRange{emptyLike(b, loc, {channels}, i32)},
          ArrayRef<AffineMap>{one, one, one}, parallel(1),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value q = arith::DivFOp::create(nb, nl, args[0], args[1]);
            // Keep within i32 (a tiny scale could push it out).
            q = roundClamp(nb, nl, q, -2147483520.0, 2147483520.0);
            yieldValue(nb, nl, arith::FPToSIOp::create(nb, nl, i32, q));
          })
          .getResult(0);
  unsigned rank = resultType.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap channelMap = AffineMap::get(
      rank, 0, b.getAffineDimExpr(resultChannelDim), b.getContext());
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType.clone(i32)}, ValueRange{biasQ},
             ValueRange{emptyLike(b, loc, resultType.getShape(), i32)},
             ArrayRef<AffineMap>{channelMap, id}, parallel(rank),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               yieldValue(nb, nl, args[0]);
             })
      .getResult(0);
}

/// A zero i32 accumulator of the result's shape.
Value zeroInit(OpBuilder &b, Location loc, RankedTensorType resultType) {
  Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  return linalg::FillOp::create(
             b, loc, zero,
             emptyLike(b, loc, resultType.getShape(), b.getI32Type()))
      .getResult(0);
}

/// Rebuilds the consumer with the i32 accumulator `acc` and the scales as
/// inputs; its body dequantizes at the top (and the folded bias add goes).
void fuseDequantization(DequantizeTarget target, Value acc, Value scale,
                        unsigned resultChannelDim, Location loc) {
  linalg::GenericOp consumer = target.consumer;
  Type f32 = Float32Type::get(consumer.getContext());
  unsigned useIndex = target.use->getOperandNumber();
  AffineMap map = consumer.getMatchingIndexingMap(target.use);
  AffineMap channelMap =
      AffineMap::get(map.getNumDims(), 0, map.getResult(resultChannelDim),
                     consumer.getContext());
  SmallVector<Value> inputs(consumer.getDpsInputs());
  inputs[useIndex] = acc;
  inputs.push_back(scale);
  SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
  unsigned numInputs = consumer.getNumDpsInputs();
  maps.insert(maps.begin() + numInputs, channelMap);
  OpBuilder cb(consumer);
  auto fused = linalg::GenericOp::create(
      cb, consumer.getLoc(), consumer->getResultTypes(), inputs,
      consumer.getDpsInits(), maps, consumer.getIteratorTypesArray());
  fused->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
  fused.getRegion().takeBody(consumer.getRegion());
  Block &body = fused.getRegion().front();
  BlockArgument scaleArg =
      body.insertArgument(numInputs, f32, consumer.getLoc());
  BlockArgument accArg = body.getArgument(useIndex);
  accArg.setType(IntegerType::get(consumer.getContext(), 32));
  OpBuilder bb = OpBuilder::atBlockBegin(&body);
  Value asFloat = arith::SIToFPOp::create(bb, loc, f32, accArg);
  Value dequantized = arith::MulFOp::create(bb, loc, asFloat, scaleArg);
  if (target.biasAdd) {
    target.biasAdd.getResult().replaceAllUsesWith(dequantized);
    target.biasAdd->erase();
  } else {
    accArg.replaceAllUsesExcept(dequantized, asFloat.getDefiningOp());
  }
  consumer->replaceAllUsesWith(fused);
  consumer->erase();
}

/// The f32 result from the i32 accumulator, in a generic of its own.
Value dequantizeSeparately(OpBuilder &b, Location loc, Value acc, Value scale,
                           RankedTensorType resultType,
                           unsigned resultChannelDim) {
  Type f32 = b.getF32Type();
  unsigned rank = resultType.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap channelMap = AffineMap::get(
      rank, 0, b.getAffineDimExpr(resultChannelDim), b.getContext());
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{acc, scale},
             ValueRange{emptyLike(b, loc, resultType.getShape(), f32)},
             ArrayRef<AffineMap>{id, channelMap, id}, parallel(rank),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value f = arith::SIToFPOp::create(nb, nl, f32, args[0]);
               yieldValue(nb, nl, arith::MulFOp::create(nb, nl, f, args[1]));
             })
      .getResult(0);
}

void QuantizePass::rewrite(Decision &d, func::FuncOp func) {
  auto op = cast<linalg::LinalgOp>(d.op);
  if (d.precision == OpPrecision::F16)
    return rewriteInF16(d, op);
  Location loc = op.getLoc();
  OpBuilder b(op);
  Value act = op.getDpsInputOperand(0)->get();
  Value weight = op.getDpsInputOperand(1)->get();
  Value result = op->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());

  // Output channel: the weight's (matmul: column, or row of a transposed
  // B; batch_matmul: column; conv FCHW: F) and the result's.
  ChannelDims dims = *int8ChannelDims(op.getOperation());
  int64_t channels = resultType.getDimSize(dims.result);

  // The activation's scale: from calibration, or (int8-dynamic) from its
  // own max |x|, computed here on every call.
  Value actScale, invActScale;
  if (mode == QuantizationMode::Int8Dynamic) {
    actScale = dynamicActivationScale(b, loc, act);
    invActScale =
        arith::DivFOp::create(b, loc, f32Constant(b, loc, 1.0), actScale);
  } else {
    actScale = f32Constant(b, loc, d.activationScale);
    invActScale = f32Constant(b, loc, 1.0 / d.activationScale);
  }
  Value actQ = quantizeActivation(b, loc, act, invActScale);
  auto [weightQ, weightScale] = weightFor(b, d, func, weight, dims.weight);
  Value scale = accumulatorScale(b, loc, weightScale, actScale, channels);

  DequantizeTarget target;
  if (!probeOutputs)
    target = findDequantizeTarget(op, dims.result, channels);
  if (target.bias)
    d.biasInI32 = true;
  Value init = target.bias ? quantizedBiasInit(b, loc, target.bias, scale,
                                               resultType, dims.result)
                           : zeroInit(b, loc, resultType);
  Operation *quantized = rebuildNamed(b, op, {actQ, weightQ, init},
                                      resultType.clone(b.getI32Type()));
  Value acc = quantized->getResult(0);
  if (target.consumer) {
    d.dequantize = Dequantization::Fused;
    fuseDequantization(target, acc, scale, dims.result, loc);
  } else {
    d.dequantize = Dequantization::Separate;
    Value dequantized =
        dequantizeSeparately(b, loc, acc, scale, resultType, dims.result);
    result.replaceAllUsesWith(dequantized);
    d.result = dequantized;
  }
  op->erase();
}

/// An mp.observe named by the op's result id on the f32 value that now
/// stands for its result (the dequantized or fallback result).
void QuantizePass::probeOutput(Decision &d) {
  if (d.resultId.empty() || !d.result)
    return;
  OpBuilder b(d.result.getContext());
  b.setInsertionPointAfterValue(d.result);
  auto probe = ObserveOp::create(b, d.result.getLoc(), d.result.getType(),
                                 d.result, d.resultId);
  d.result.replaceAllUsesExcept(probe, probe);
  ++numOutputProbes;
}

/// @<f>_quantize_weights(f32 weights) -> (i8 weights, scales)..., after
/// `func`: quantizes each hoisted weight from the weights argument
/// `weightArgOf` gives it.
func::FuncOp QuantizePass::createWeightsFunction(
    func::FuncOp func, ArrayRef<Type> argTypes,
    ArrayRef<DictionaryAttr> argAttrs, ArrayRef<Type> resultTypes,
    ArrayRef<DictionaryAttr> resultAttrs,
    const llvm::DenseMap<unsigned, unsigned> &weightArgOf) {
  OpBuilder ob(func);
  ob.setInsertionPointAfter(func);
  std::string name = (func.getSymName() + "_quantize_weights").str();
  auto module = func->getParentOfType<ModuleOp>();
  while (module.lookupSymbol(name))
    name += "_";
  auto weightsFn = func::FuncOp::create(
      ob, func.getLoc(), name, ob.getFunctionType(argTypes, resultTypes));
  weightsFn.setAllArgAttrs(argAttrs);
  weightsFn.setAllResultAttrs(resultAttrs);
  Block *body = weightsFn.addEntryBlock();
  ob.setInsertionPointToStart(body);
  SmallVector<Value> results;
  for (HoistedWeight &h : hoisted) {
    auto [q, s] = quantizeWeightInIR(
        ob, func.getLoc(), body->getArgument(weightArgOf.lookup(h.argIndex)),
        h.channelDim, perChannel);
    results.push_back(q);
    results.push_back(s);
  }
  func::ReturnOp::create(ob, func.getLoc(), results);
  return weightsFn;
}

/// Gives the quantized function its new arguments (i8 weights and scales),
/// drops f32 weights nothing uses any more, and adds the function that
/// makes the new arguments from the old ones.
void QuantizePass::finishHoisting(func::FuncOp func) {
  if (hoisted.empty())
    return;
  MLIRContext *context = func.getContext();
  Block &entry = func.getBody().front();
  // The function type catches up with the block's new arguments.
  unsigned oldCount = func.getNumArguments();
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < oldCount; ++i)
    argAttrs.push_back(func.getArgAttrDict(i)
                           ? func.getArgAttrDict(i)
                           : DictionaryAttr::get(context, {}));
  Builder b(context);
  SmallVector<Type> weightArgTypes;
  SmallVector<DictionaryAttr> weightArgAttrs;
  SmallVector<Type> weightResultTypes;
  SmallVector<DictionaryAttr> weightResultAttrs;
  llvm::DenseMap<unsigned, unsigned> weightArgOf; // func arg -> weights arg
  for (HoistedWeight &h : hoisted) {
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(kQWeightAttrName, b.getStringAttr(h.name))));
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(kQScaleAttrName, b.getStringAttr(h.name))));
    if (!weightArgOf.count(h.argIndex)) {
      weightArgOf[h.argIndex] = weightArgTypes.size();
      weightArgTypes.push_back(entry.getArgument(h.argIndex).getType());
      weightArgAttrs.push_back(argAttrs[h.argIndex]);
    }
    weightResultTypes.push_back(h.q.getType());
    weightResultTypes.push_back(h.scale.getType());
    weightResultAttrs.push_back(argAttrs[argAttrs.size() - 2]);
    weightResultAttrs.push_back(argAttrs.back());
  }
  func.setType(FunctionType::get(context, entry.getArgumentTypes(),
                                 func.getResultTypes()));
  func.setAllArgAttrs(argAttrs);

  // @<f>_quantize_weights(f32 weights) -> (i8 weights, scales)...
  func::FuncOp weightsFn =
      createWeightsFunction(func, weightArgTypes, weightArgAttrs,
                            weightResultTypes, weightResultAttrs, weightArgOf);
  func->setAttr(kQuantizeWeightsAttrName,
                FlatSymbolRefAttr::get(context, weightsFn.getSymName()));

  // f32 weights the function no longer reads.
  llvm::BitVector unused(func.getNumArguments());
  for (HoistedWeight &h : hoisted)
    if (entry.getArgument(h.argIndex).use_empty())
      unused.set(h.argIndex);
  if (unused.any())
    (void)func.eraseArguments(unused);
}

/// What is wrong with the pass's options; empty if nothing is.
std::string QuantizePass::optionError() {
  if (!(percentile > 0 && percentile <= 100))
    return "percentile must lie in (0, 100], got " +
           std::to_string(percentile.getValue());
  if (!(maxError >= 0))
    return "max-error must be >= 0, got " + std::to_string(maxError.getValue());
  // The option parser offers f32 and f16; a caller may still set bf16.
  if (fallback == FloatPrecision::BF16)
    return "fallback must be f32 or f16, got 'bf16'";
  bool dynamic = mode == QuantizationMode::Int8Dynamic;
  if (dynamic && !calibration.empty())
    return "mode=int8-dynamic takes no calibration= (each activation is "
           "scaled by its own max |x| at run time); drop it, or use "
           "mode=int8";
  if (!dynamic && calibration.empty())
    return "needs calibration=FILE (statistics from mp-run infer "
           "--calibrate N, see docs/quantization.md), or mode=int8-dynamic";
  return "";
}

/// Plans one function and rewrites the ops the plan lowers, counting them;
/// its decisions join `decisions`.
LogicalResult
QuantizePass::quantizeFunction(func::FuncOp func,
                               const llvm::StringMap<CalibrationEntry> &entries,
                               const PlanOptions &options) {
  size_t first = decisions.size();
  if (failed(planFunction(func, entries, options, decisions)))
    return failure();
  hoisted.clear();
  hoistedIndex.clear();
  for (size_t i = first; i < decisions.size(); ++i) {
    Decision &d = decisions[i];
    if (d.fellBack())
      ++numFallbacks;
    else if (d.precision == OpPrecision::Int8)
      ++numQuantized;
    if (d.precision != OpPrecision::F32)
      rewrite(d, func);
  }
  if (probeOutputs)
    for (size_t i = first; i < decisions.size(); ++i)
      probeOutput(decisions[i]);
  finishHoisting(func);
  return success();
}

void QuantizePass::runOnOperation() {
  ModuleOp module = getOperation();
  decisions.clear(); // a pass instance may run on several modules
  auto fail = [&](const Twine &message) {
    emitError(module.getLoc()) << "--mp-quantize: " << message;
    signalPassFailure();
  };
  std::string error = optionError();
  if (!error.empty())
    return fail(error);
  bool dynamic = mode == QuantizationMode::Int8Dynamic;
  FailureOr<llvm::StringMap<CalibrationEntry>> entries =
      dynamic ? FailureOr<llvm::StringMap<CalibrationEntry>>(
                    llvm::StringMap<CalibrationEntry>())
              : readCalibrationEntries(calibration, error);
  if (failed(entries))
    return fail(error);
  PlanOptions options{method,
                      percentile,
                      perChannel,
                      maxError,
                      {fallbackOps.begin(), fallbackOps.end()},
                      fallback == FloatPrecision::F16 ? OpPrecision::F16
                                                      : OpPrecision::F32,
                      dynamic};

  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      funcs.push_back(func);
  bool ok = true;
  for (func::FuncOp func : funcs)
    ok &= succeeded(quantizeFunction(func, *entries, options));
  if (!ok)
    return signalPassFailure();

  if (!report.empty() &&
      failed(writeReport(report, stringifyQuantizationMode(mode), calibration,
                         options, decisions, error)))
    return fail(error);
}

} // namespace
