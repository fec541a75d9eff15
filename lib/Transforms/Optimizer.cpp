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

/// A rank-0 f32 tensor holding 0.
Value zeroScalarTensor(OpBuilder &b, Location loc) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value empty =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getF32Type());
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

/// `total` (a rank-0 f32 tensor) plus the sum of squares of the window's
/// gradient of one parameter: `gradient` (f32), or with an accumulator
/// (accumulator + gradient) * `invWindow`. Chaining every gradient through
/// one total leaves a single scalar for the host to read.
///
/// A gradient that mp.unscale made is recomputed from the scaled one, as
/// mp.unscale's own inf/nan check does: the unscaled tensor keeps one
/// reader, the update, which it is fused into instead of being held as a
/// copy of every gradient.
Value addSumOfSquares(OpBuilder &b, Location loc, Value total, Value gradient,
                      Value accumulator, Value invWindow) {
  Value source = gradient, inverseScale;
  if (auto unscale = gradient.getDefiningOp<UnscaleOp>()) {
    source = unscale.getGrads()[cast<OpResult>(gradient).getResultNumber()];
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    inverseScale = arith::DivFOp::create(b, loc, one, unscale.getScale());
  }
  unsigned rank = cast<RankedTensorType>(source.getType()).getRank();
  SmallVector<Value> ins{source};
  if (accumulator)
    ins.push_back(accumulator);
  SmallVector<AffineMap> maps(ins.size(), b.getMultiDimIdentityMap(rank));
  maps.push_back(AffineMap::get(rank, 0, b.getContext()));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  auto sum = linalg::GenericOp::create(
      b, loc, total.getType(), ins, ValueRange{total}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value g = args[0];
        if (!g.getType().isF32())
          g = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), g);
        if (inverseScale)
          g = arith::MulFOp::create(nb, nloc, g, inverseScale);
        if (accumulator)
          g = arith::MulFOp::create(
              nb, nloc, arith::AddFOp::create(nb, nloc, args[1], g), invWindow);
        Value sq = arith::MulFOp::create(nb, nloc, g, g);
        linalg::YieldOp::create(
            nb, nloc,
            arith::AddFOp::create(nb, nloc, args.back(), sq).getResult());
      });
  sum->setAttr(kPrecisionAttrName,
               FloatPrecisionAttr::get(b.getContext(), FloatPrecision::F32));
  return sum.getResult(0);
}

struct OptimizerPass : mp::impl::MPOptimizerBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(learningRate > 0) || momentum < 0 || momentum >= 1 ||
        weightDecay < 0 || !(beta1 >= 0 && beta1 < 1) ||
        !(beta2 >= 0 && beta2 < 1) || !(epsilon > 0) || accumulate < 1 ||
        accumulate > INT32_MAX) {
      emitError(module.getLoc())
          << "optimizer needs lr > 0, 0 <= momentum < 1, weight-decay >= 0, "
             "0 <= beta1, beta2 < 1, epsilon > 0 and 1 <= accumulate < 2^31";
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
    std::string accumulateName = stepName + "_accumulate";
    for (StringRef name : {StringRef(stepName), StringRef(accumulateName)})
      if ((name == stepName || accumulate > 1) && symbols.lookup(name)) {
        emitError(module.getLoc())
            << "cannot create '@" << name << "': the symbol already exists";
        return signalPassFailure();
      }
    Gradient gradient;
    if (failed(checkGradient(gradients.front(), gradient)) ||
        failed(buildStep(gradient, symbols)) ||
        (accumulate > 1 &&
         failed(buildAccumulate(gradient, accumulateName, symbols))))
      return signalPassFailure();
  }

  /// One state tensor name suffix per state slot of the algorithm.
  SmallVector<StringRef> stateNames() const {
    if (algorithm == OptimizerAlgorithm::Sgd)
      return {"momentum"};
    return {"m", "v"};
  }

  /// What the gradient function says about itself, checked once.
  struct Gradient {
    func::FuncOp func;
    GradientFunctionInfo info;
    LossScalingAttr scaling; // null: no loss scaling
    bool scaled = false, adaptive = false;
    double clipNorm = 0;
  };
  LogicalResult checkGradient(func::FuncOp grad, Gradient &gradient);

  /// The gradient function's body cloned at `b`'s insertion point, its
  /// loss arguments mapped to `lossArgs` and its scale argument to `scale`.
  /// Returns the loss, the f32 gradients and (with scaling) found_inf and
  /// (adaptive) the scaled gradients' amax.
  struct Inlined {
    Value loss, foundInf, amax;
    SmallVector<Value> grads;
  };
  Inlined inlineGradient(OpBuilder &b, const Gradient &gradient,
                         ValueRange lossArgs, Value scale);

  /// The gradient function's loss arguments (x, labels, parameters), with
  /// their attributes, as the first arguments of a function to build.
  void appendLossArgs(const Gradient &gradient, SmallVector<Type> &argTypes,
                      SmallVector<DictionaryAttr> &argAttrs) {
    func::FuncOp grad = gradient.func;
    for (unsigned i = 0; i < gradient.info.numLossArgs; ++i) {
      argTypes.push_back(grad.getArgument(i).getType());
      argAttrs.push_back(grad.getArgAttrDict(i)
                             ? grad.getArgAttrDict(i)
                             : DictionaryAttr::get(&getContext()));
    }
  }

  /// The window state arguments (accumulate > 1) appended to a function's
  /// argument list: a f32 accumulator per parameter, the overflow flag
  /// (with scaling) and the amax (adaptive).
  void appendWindowArgs(const Gradient &gradient, SmallVector<Type> &argTypes,
                        SmallVector<DictionaryAttr> &argAttrs);

  LogicalResult buildStep(const Gradient &gradient, SymbolTable &symbols);
  LogicalResult buildAccumulate(const Gradient &gradient, StringRef name,
                                SymbolTable &symbols);

  DictionaryAttr named(StringRef key, Attribute value) {
    Builder attrs(&getContext());
    return attrs.getDictionaryAttr(attrs.getNamedAttr(key, value));
  }
  DictionaryAttr role(StringRef key) {
    return named(key, UnitAttr::get(&getContext()));
  }
};

LogicalResult OptimizerPass::checkGradient(func::FuncOp grad,
                                           Gradient &gradient) {
  gradient.func = grad;
  // The dialect verifies mp.loss_scaling; absent, there is no scaling.
  gradient.scaling = grad->getAttrOfType<LossScalingAttr>(kLossScalingAttrName);
  LossScalingMode mode =
      gradient.scaling ? gradient.scaling.getMode() : LossScalingMode::None;
  gradient.scaled = mode != LossScalingMode::None;
  gradient.adaptive = mode == LossScalingMode::Adaptive;
  // --mp-loss-scaling records the clip norm; it applies to the gradient the
  // update uses, so to the whole window when accumulating.
  gradient.clipNorm =
      gradient.scaling ? gradient.scaling.getClipNorm().convertToDouble() : 0;
  if (failed(checkGradientFunction(grad, gradient.scaled, "mp-optimizer",
                                   gradient.info,
                                   /*amax=*/gradient.adaptive)))
    return failure();
  // The update runs on FP32 master weights and FP32 gradients.
  Operation *gradReturn = grad.getBody().front().getTerminator();
  for (auto [k, p] : llvm::enumerate(gradient.info.paramIndices)) {
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
  return success();
}

OptimizerPass::Inlined OptimizerPass::inlineGradient(OpBuilder &b,
                                                     const Gradient &gradient,
                                                     ValueRange lossArgs,
                                                     Value scale) {
  func::FuncOp grad = gradient.func;
  IRMapping mapping;
  for (auto [from, to] : llvm::zip(
           grad.getArguments().take_front(gradient.info.numLossArgs), lossArgs))
    mapping.map(from, to);
  if (gradient.scaled)
    mapping.map(grad.getArgument(gradient.info.numLossArgs), scale);
  Block &body = grad.getBody().front();
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  Operation *ret = body.getTerminator();
  Inlined result;
  result.loss = mapping.lookup(ret->getOperand(0));
  unsigned numGrads = gradient.info.paramIndices.size();
  for (unsigned k = 0; k < numGrads; ++k)
    result.grads.push_back(mapping.lookup(ret->getOperand(1 + k)));
  // After the gradients: found_inf, then (adaptive) the gradients' amax.
  if (gradient.scaled)
    result.foundInf = mapping.lookup(ret->getOperand(1 + numGrads));
  if (gradient.adaptive)
    result.amax = mapping.lookup(ret->getOperand(2 + numGrads));
  return result;
}

void OptimizerPass::appendWindowArgs(const Gradient &gradient,
                                     SmallVector<Type> &argTypes,
                                     SmallVector<DictionaryAttr> &argAttrs) {
  func::FuncOp grad = gradient.func;
  for (unsigned p : gradient.info.paramIndices) {
    argTypes.push_back(grad.getArgument(p).getType());
    argAttrs.push_back(
        named(kAccumulatorAttrName, grad.getArgAttr(p, kParamAttrName)));
  }
  Builder b(&getContext());
  if (gradient.scaled) {
    argTypes.push_back(b.getI32Type());
    argAttrs.push_back(role(kWindowOverflowAttrName));
  }
  if (gradient.adaptive) {
    argTypes.push_back(b.getF32Type());
    argAttrs.push_back(role(kWindowAmaxAttrName));
  }
}

LogicalResult OptimizerPass::buildStep(const Gradient &gradient,
                                       SymbolTable &symbols) {
  MLIRContext *context = &getContext();
  Builder attrs(context);
  func::FuncOp grad = gradient.func;
  LossScalingAttr scaling = gradient.scaling;
  LossScalingMode mode = scaling ? scaling.getMode() : LossScalingMode::None;
  bool adaptive = gradient.adaptive;
  unsigned numLossArgs = gradient.info.numLossArgs;
  SmallVector<unsigned> paramIndices = gradient.info.paramIndices;
  bool accumulating = accumulate > 1;

  Type f32 = Float32Type::get(context), i32 = IntegerType::get(context, 32);
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  appendLossArgs(gradient, argTypes, argAttrs);
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
  argAttrs.append({role(kStepAttrName), role(kLossScaleAttrName),
                   role(kGrowthTrackerAttrName)});
  unsigned windowBase = argTypes.size();
  if (accumulating)
    appendWindowArgs(gradient, argTypes, argAttrs);

  OpBuilder b(context);
  b.setInsertionPointAfter(grad);
  Location loc = grad.getLoc();
  auto step = func::FuncOp::create(b, loc, stepName,
                                   FunctionType::get(context, argTypes, {}));
  symbols.insert(step);
  if (accumulating)
    step->setAttr(kAccumulateAttrName, b.getI64IntegerAttr(accumulate));
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToStart(entry);

  unsigned stateBase = numLossArgs;
  unsigned numState = paramIndices.size() * stateNames().size();
  Value stepCount = step.getArgument(stateBase + numState);
  Value scale = step.getArgument(stateBase + numState + 1);
  Value tracker = step.getArgument(stateBase + numState + 2);
  Inlined inlined = inlineGradient(
      b, gradient, step.getArguments().take_front(numLossArgs), scale);
  Value loss = inlined.loss, foundInf = inlined.foundInf, amax = inlined.amax;

  // With accumulation the update uses the window's mean gradient,
  // (accumulator + this micro-batch's gradient) / N, and the window
  // overflowed when any of its micro-batches did.
  SmallVector<Value> accumulators;
  Value invWindow;
  if (accumulating) {
    unsigned next = windowBase;
    for (unsigned k = 0; k < paramIndices.size(); ++k)
      accumulators.push_back(step.getArgument(next++));
    invWindow = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(1.0f / static_cast<float>(accumulate)));
    if (gradient.scaled) {
      Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
      Value earlier = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                            step.getArgument(next++), zero);
      foundInf = arith::OrIOp::create(b, loc, foundInf, earlier);
    }
    if (adaptive)
      amax = arith::MaximumFOp::create(b, loc, amax, step.getArgument(next++));
  }

  // The global L2 norm of the gradient the update uses, before clipping:
  // a result of every step (the stability monitor's gradient norm) and
  // what clipping scales by.
  Value total = zeroScalarTensor(b, loc);
  for (auto [k, g] : llvm::enumerate(inlined.grads))
    total = addSumOfSquares(
        b, loc, total, g, accumulating ? accumulators[k] : Value(), invWindow);
  Value gradNorm = math::SqrtOp::create(
      b, loc, tensor::ExtractOp::create(b, loc, total, ValueRange{}));
  Value clipFactor;
  if (gradient.clipNorm > 0) {
    Value tiny = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1e-6f));
    Value limit = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(gradient.clipNorm)));
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    clipFactor = arith::MinimumFOp::create(
        b, loc, one,
        arith::DivFOp::create(b, loc, limit,
                              arith::AddFOp::create(b, loc, gradNorm, tiny)));
  }

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
    SmallVector<Value> states;
    for (unsigned s = 0; s < stateNames().size(); ++s)
      states.push_back(
          step.getArgument(stateBase + k * stateNames().size() + s));
    auto type = cast<RankedTensorType>(param.getType());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    // ins: w, g[, accumulator], state...
    SmallVector<Value> ins{param, inlined.grads[k]};
    if (accumulating)
      ins.push_back(accumulators[k]);
    unsigned firstState = ins.size();
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
                Value old = args[o == 0 ? 0 : firstState + o - 1];
                values[o] =
                    arith::SelectOp::create(nb, l, foundInf, old, values[o]);
              }
            linalg::YieldOp::create(nb, l, values);
          };
          Value w = args[0], gr = args[1];
          if (accumulating)
            gr = mul(add(args[2], gr), invWindow);
          if (clipFactor)
            gr = mul(gr, clipFactor);
          if (algorithm == OptimizerAlgorithm::Sgd) {
            Value decayed = add(gr, mul(wd, w));
            Value v = add(mul(c(momentum), args[firstState]), decayed);
            Value newW = arith::SubFOp::create(nb, l, w, mul(lr, v));
            yield({newW, v});
            return;
          }
          if (algorithm == OptimizerAlgorithm::Adam)
            gr = add(gr, mul(wd, w));
          Value m = add(mul(c(beta1), args[firstState]), mul(c(1 - beta1), gr));
          Value v = add(mul(c(beta2), args[firstState + 1]),
                        mul(c(1 - beta2), mul(gr, gr)));
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
  results.append({newStep, newScale, newTracker, loss, stepped, gradNorm});
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
        kLossAttrName, kSteppedAttrName, kGradNormAttrName})
    resultAttrs.push_back(role(name));
  step.setAllResultAttrs(resultAttrs);
  return success();
}

LogicalResult OptimizerPass::buildAccumulate(const Gradient &gradient,
                                             StringRef name,
                                             SymbolTable &symbols) {
  MLIRContext *context = &getContext();
  func::FuncOp grad = gradient.func;
  unsigned numLossArgs = gradient.info.numLossArgs;
  Type f32 = Float32Type::get(context), i32 = IntegerType::get(context, 32);

  // (loss arguments, scale, window state) -> (window state, loss): the
  // micro-batch's gradients added to the window's, nothing updated.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  appendLossArgs(gradient, argTypes, argAttrs);
  argTypes.push_back(f32);
  argAttrs.push_back(role(kLossScaleAttrName));
  unsigned windowBase = argTypes.size();
  appendWindowArgs(gradient, argTypes, argAttrs);

  OpBuilder b(context);
  b.setInsertionPointAfter(symbols.lookup(stepName));
  Location loc = grad.getLoc();
  auto function = func::FuncOp::create(
      b, loc, name, FunctionType::get(context, argTypes, {}));
  symbols.insert(function);
  function->setAttr(kAccumulationOfAttrName,
                    FlatSymbolRefAttr::get(context, stepName));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Inlined inlined = inlineGradient(
      b, gradient, function.getArguments().take_front(numLossArgs),
      function.getArgument(numLossArgs));

  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  unsigned next = windowBase;
  for (auto [k, g] : llvm::enumerate(inlined.grads)) {
    Value accumulator = function.getArgument(next++);
    auto sum = linalg::GenericOp::create(
        b, loc, accumulator.getType(), ValueRange{accumulator, g},
        ValueRange{tensor::EmptyOp::create(
            b, loc, tensor::getMixedSizes(b, loc, accumulator), f32)},
        SmallVector<AffineMap>(
            3, b.getMultiDimIdentityMap(
                   cast<RankedTensorType>(g.getType()).getRank())),
        SmallVector<utils::IteratorType>(
            cast<RankedTensorType>(g.getType()).getRank(),
            utils::IteratorType::parallel),
        [](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(
              nb, l,
              arith::AddFOp::create(nb, l, args[0], args[1]).getResult());
        });
    sum->setAttr(kPrecisionAttrName,
                 FloatPrecisionAttr::get(context, FloatPrecision::F32));
    results.push_back(sum.getResult(0));
    resultAttrs.push_back(argAttrs[windowBase + k]);
  }
  if (gradient.scaled) {
    Value flag = arith::ExtUIOp::create(b, loc, i32, inlined.foundInf);
    results.push_back(
        arith::OrIOp::create(b, loc, function.getArgument(next++), flag));
    resultAttrs.push_back(role(kWindowOverflowAttrName));
  }
  if (gradient.adaptive) {
    results.push_back(arith::MaximumFOp::create(
        b, loc, function.getArgument(next++), inlined.amax));
    resultAttrs.push_back(role(kWindowAmaxAttrName));
  }
  results.push_back(inlined.loss);
  resultAttrs.push_back(role(kLossAttrName));
  func::ReturnOp::create(b, loc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  function.setFunctionType(FunctionType::get(context, argTypes, resultTypes));
  function.setAllArgAttrs(argAttrs);
  function.setAllResultAttrs(resultAttrs);
  return success();
}

} // namespace
