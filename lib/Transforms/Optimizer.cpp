//===- Optimizer.cpp - @train_step with an FP32 optimizer update ----------===//
//
// Inlines the gradient function into a step function, applies SGD or
// Adam(W) to FP32 master weights and state, guards the update with the loss
// scaler's found_inf and moves the scale.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/GradientFunction.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPOPTIMIZER
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

struct OptimizerPass : mp::impl::MPOptimizerBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(learningRate > 0) || momentum < 0 || momentum >= 1 ||
        weightDecay < 0 || !(beta1 >= 0 && beta1 < 1) ||
        !(beta2 >= 0 && beta2 < 1) || !(epsilon > 0)) {
      emitError(module.getLoc())
          << "optimizer needs lr > 0, 0 <= momentum < 1, weight-decay >= 0, "
             "0 <= beta1, beta2 < 1 and epsilon > 0";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> gradients;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kGradientOfAttrName))
        gradients.push_back(func);
    if (gradients.size() != 1) {
      emitError(module.getLoc())
          << "expected one gradient function ('mp.gradient_of'), found "
          << gradients.size() << ": run --mp-autodiff on one mp.loss function";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    if (symbols.lookup(stepName)) {
      emitError(module.getLoc())
          << "cannot create '@" << stepName << "': the symbol already exists";
      return signalPassFailure();
    }
    if (failed(buildStep(gradients.front(), symbols)))
      return signalPassFailure();
  }

  /// One state tensor name suffix per state slot of the algorithm.
  SmallVector<StringRef> stateNames() const {
    if (algorithm == OptimizerAlgorithm::Sgd)
      return {"momentum"};
    return {"m", "v"};
  }

  LogicalResult buildStep(func::FuncOp grad, SymbolTable &symbols);
};

LogicalResult OptimizerPass::buildStep(func::FuncOp grad,
                                       SymbolTable &symbols) {
  MLIRContext *context = &getContext();
  Builder attrs(context);
  // The dialect verifies mp.loss_scaling; absent, there is no scaling.
  auto scaling = grad->getAttrOfType<LossScalingAttr>(kLossScalingAttrName);
  LossScalingMode mode = scaling ? scaling.getMode() : LossScalingMode::None;
  bool scaled = mode != LossScalingMode::None;
  bool adaptive = mode == LossScalingMode::Adaptive;

  // Loss arguments: the gradient function's, less its scale argument.
  GradientFunctionInfo info;
  if (failed(checkGradientFunction(grad, scaled, "mp-optimizer", info,
                                   /*amax=*/adaptive)))
    return failure();
  unsigned numLossArgs = info.numLossArgs;
  SmallVector<unsigned> paramIndices = info.paramIndices;
  // The update runs on FP32 master weights and FP32 gradients.
  Operation *gradReturn = grad.getBody().front().getTerminator();
  for (auto [k, p] : llvm::enumerate(paramIndices)) {
    Type paramType = grad.getArgument(p).getType();
    Type gradType = gradReturn->getOperand(1 + k).getType();
    if (!getElementTypeOrSelf(paramType).isF32() ||
        !getElementTypeOrSelf(gradType).isF32())
      return grad.emitError()
             << "mp-optimizer: parameter '"
             << cast<StringAttr>(grad.getArgAttr(p, kParamAttrName)).getValue()
             << "' and its gradient must be f32 (master weights), got "
             << paramType << " and " << gradType;
  }

  Type f32 = Float32Type::get(context), i32 = IntegerType::get(context, 32);
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < numLossArgs; ++i) {
    argTypes.push_back(grad.getArgument(i).getType());
    argAttrs.push_back(grad.getArgAttrDict(i) ? grad.getArgAttrDict(i)
                                              : DictionaryAttr::get(context));
  }
  auto named = [&](StringRef key, Attribute value) {
    return attrs.getDictionaryAttr(attrs.getNamedAttr(key, value));
  };
  SmallVector<DictionaryAttr> stateAttrs;
  for (unsigned p : paramIndices)
    for (StringRef slot : stateNames()) {
      auto name = cast<StringAttr>(grad.getArgAttr(p, kParamAttrName));
      argTypes.push_back(grad.getArgument(p).getType());
      stateAttrs.push_back(named(
          kStateAttrName, attrs.getStringAttr(name.getValue() + "." + slot)));
      argAttrs.push_back(stateAttrs.back());
    }
  argTypes.append({i32, f32, i32});
  argAttrs.append({named(kStepAttrName, attrs.getUnitAttr()),
                   named(kLossScaleAttrName, attrs.getUnitAttr()),
                   named(kGrowthTrackerAttrName, attrs.getUnitAttr())});

  OpBuilder b(context);
  b.setInsertionPointAfter(grad);
  Location loc = grad.getLoc();
  auto step = func::FuncOp::create(b, loc, stepName,
                                   FunctionType::get(context, argTypes, {}));
  symbols.insert(step);
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // Inline the gradient computation.
  IRMapping mapping;
  for (unsigned i = 0; i < numLossArgs; ++i)
    mapping.map(grad.getArgument(i), step.getArgument(i));
  unsigned stateBase = numLossArgs;
  unsigned numState = paramIndices.size() * stateNames().size();
  Value stepCount = step.getArgument(stateBase + numState);
  Value scale = step.getArgument(stateBase + numState + 1);
  Value tracker = step.getArgument(stateBase + numState + 2);
  if (scaled)
    mapping.map(grad.getArgument(numLossArgs), scale);
  Block &gradBody = grad.getBody().front();
  for (Operation &op : gradBody.without_terminator())
    b.clone(op, mapping);
  Value loss = mapping.lookup(gradReturn->getOperand(0));
  // After the gradients: found_inf, then (adaptive) the gradients' amax.
  unsigned numGrads = paramIndices.size();
  Value foundInf =
      scaled ? mapping.lookup(gradReturn->getOperand(1 + numGrads)) : Value();
  Value amax =
      adaptive ? mapping.lookup(gradReturn->getOperand(2 + numGrads)) : Value();

  // Scalars of the update.
  auto constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  Value lr = constant(learningRate), wd = constant(weightDecay);
  Value one = arith::ConstantIntOp::create(b, loc, i32, 1);
  Value nextStep = arith::AddIOp::create(b, loc, stepCount, one);
  Value correction1, correction2;
  if (algorithm != OptimizerAlgorithm::Sgd) {
    // Bias corrections 1 - beta^t with t = step + 1.
    Value t = arith::SIToFPOp::create(b, loc, f32, nextStep);
    auto correction = [&](double beta) -> Value {
      Value power = math::PowFOp::create(b, loc, constant(beta), t);
      return arith::SubFOp::create(b, loc, constant(1.0), power);
    };
    correction1 = correction(beta1);
    correction2 = correction(beta2);
  }

  SmallVector<Value> newParams, newStates;
  for (auto [k, p] : llvm::enumerate(paramIndices)) {
    Value param = step.getArgument(p);
    Value g = mapping.lookup(gradReturn->getOperand(1 + k));
    SmallVector<Value> states;
    for (unsigned s = 0; s < stateNames().size(); ++s)
      states.push_back(
          step.getArgument(stateBase + k * stateNames().size() + s));
    auto type = cast<RankedTensorType>(param.getType());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    SmallVector<Value> ins{param, g};
    ins.append(states);
    SmallVector<Value> outs;
    SmallVector<Type> outTypes;
    for (unsigned o = 0; o < 1 + states.size(); ++o) {
      outs.push_back(tensor::EmptyOp::create(
          b, loc, tensor::getMixedSizes(b, loc, param), type.getElementType()));
      outTypes.push_back(type);
    }
    SmallVector<AffineMap> maps(ins.size() + outs.size(), id);
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto update = linalg::GenericOp::create(
        b, loc, outTypes, ins, outs, maps, iterators,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          auto c = [&](double v) -> Value {
            return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
          };
          auto add = [&](Value x, Value y) -> Value {
            return arith::AddFOp::create(nb, l, x, y);
          };
          auto mul = [&](Value x, Value y) -> Value {
            return arith::MulFOp::create(nb, l, x, y);
          };
          // On inf/nan gradients the step is skipped: each element keeps
          // its old value. Selecting per element, inside the update, lets
          // the new values be computed in the caller's buffers (a select
          // of whole tensors after the update would need copies).
          auto yield = [&](SmallVector<Value> values) {
            if (foundInf)
              for (size_t o = 0; o < values.size(); ++o) {
                Value old = args[o == 0 ? 0 : 1 + o]; // ins: w, g, state...
                values[o] =
                    arith::SelectOp::create(nb, l, foundInf, old, values[o]);
              }
            linalg::YieldOp::create(nb, l, values);
          };
          Value w = args[0], gr = args[1];
          if (algorithm == OptimizerAlgorithm::Sgd) {
            Value decayed = add(gr, mul(wd, w));
            Value v = add(mul(c(momentum), args[2]), decayed);
            Value newW = arith::SubFOp::create(nb, l, w, mul(lr, v));
            yield({newW, v});
            return;
          }
          if (algorithm == OptimizerAlgorithm::Adam)
            gr = add(gr, mul(wd, w));
          Value m = add(mul(c(beta1), args[2]), mul(c(1 - beta1), gr));
          Value v = add(mul(c(beta2), args[3]), mul(c(1 - beta2), mul(gr, gr)));
          Value mHat = arith::DivFOp::create(nb, l, m, correction1);
          Value vHat = arith::DivFOp::create(nb, l, v, correction2);
          Value denom = add(math::SqrtOp::create(nb, l, vHat), c(epsilon));
          Value delta = arith::DivFOp::create(nb, l, mHat, denom);
          if (algorithm == OptimizerAlgorithm::AdamW)
            delta = add(delta, mul(wd, w));
          Value newW = arith::SubFOp::create(nb, l, w, mul(lr, delta));
          yield({newW, m, v});
        });
    // Master weights and state are updated in FP32, whatever AMP decides.
    update->setAttr(kPrecisionAttrName,
                    FloatPrecisionAttr::get(context, FloatPrecision::F32));
    for (auto [o, result] : llvm::enumerate(update->getResults()))
      (o == 0 ? newParams : newStates).push_back(result);
  }

  Value newStep = nextStep, newScale = scale, newTracker = tracker;
  Value stepped = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  if (foundInf) {
    newStep = arith::SelectOp::create(b, loc, foundInf, stepCount, nextStep);
    Value trueValue = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    stepped = arith::XOrIOp::create(b, loc, foundInf, trueValue);
    if (mode == LossScalingMode::Dynamic) {
      auto update = UpdateScaleOp::create(
          b, loc, f32, i32, scale, tracker, foundInf,
          b.getF32FloatAttr(scaling.getGrowthFactor().convertToDouble()),
          b.getF32FloatAttr(scaling.getBackoffFactor().convertToDouble()),
          b.getI64IntegerAttr(scaling.getGrowthInterval()),
          b.getF32FloatAttr(1.0f), b.getF32FloatAttr(16777216.0f));
      newScale = update.getNewScale();
      newTracker = update.getNewGrowthTracker();
    }
    if (adaptive) {
      auto update = AdaptScaleOp::create(
          b, loc, f32, i32, scale, tracker, foundInf, amax,
          // The dialect verified that adaptive mode records both.
          b.getF32FloatAttr(scaling.getMargin()->convertToDouble()),
          b.getI64IntegerAttr(*scaling.getHysteresis()),
          b.getF32FloatAttr(scaling.getBackoffFactor().convertToDouble()),
          b.getI64IntegerAttr(scaling.getGrowthInterval()),
          b.getF32FloatAttr(1.0f), b.getF32FloatAttr(16777216.0f),
          b.getF32FloatAttr(65504.0f));
      newScale = update.getNewScale();
      newTracker = update.getNewGrowthTracker();
    }
  }

  SmallVector<Value> results(newParams);
  results.append(newStates);
  results.append({newStep, newScale, newTracker, loss, stepped});
  func::ReturnOp::create(b, loc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  step.setFunctionType(FunctionType::get(context, argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);

  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned p : paramIndices)
    resultAttrs.push_back(
        named(kParamAttrName, grad.getArgAttr(p, kParamAttrName)));
  resultAttrs.append(stateAttrs);
  for (StringRef name :
       {kStepAttrName, kLossScaleAttrName, kGrowthTrackerAttrName,
        kLossAttrName, kSteppedAttrName})
    resultAttrs.push_back(named(name, attrs.getUnitAttr()));
  step.setAllResultAttrs(resultAttrs);
  return success();
}

} // namespace
