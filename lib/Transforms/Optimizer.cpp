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

/// Scalar f32 arithmetic in a linalg.generic body.
struct ScalarOps {
  OpBuilder &nb;
  Location l;
  Value c(double v) {
    return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(nb, l, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(nb, l, x, y); }
};

struct OptimizerPass : mp::impl::MPOptimizerBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptions(module.getLoc())))
      return signalPassFailure();
    func::FuncOp gradientFunc = findGradientFunction(module);
    if (!gradientFunc)
      return signalPassFailure();
    SymbolTable symbols(module);
    std::string accumulateName = stepName + "_accumulate";
    if (failed(checkNameFree(module, symbols, stepName)) ||
        (accumulate > 1 &&
         failed(checkNameFree(module, symbols, accumulateName))))
      return signalPassFailure();
    Gradient gradient;
    if (failed(checkGradient(gradientFunc, gradient)) ||
        failed(buildStep(gradient, symbols)) ||
        (accumulate > 1 &&
         failed(buildAccumulate(gradient, accumulateName, symbols))))
      return signalPassFailure();
  }

  LogicalResult checkOptions(Location loc);
  /// The one gradient function (mp.gradient_of) of the module; null, with
  /// an error, if there is none or several.
  func::FuncOp findGradientFunction(ModuleOp module);
  /// An error if the function to create would clash with a symbol.
  LogicalResult checkNameFree(ModuleOp module, SymbolTable &symbols,
                              StringRef name) {
    if (!symbols.lookup(name))
      return success();
    return emitError(module.getLoc())
           << "cannot create '@" << name << "': the symbol already exists";
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

  /// The values every parameter's update reads, built once in the step.
  struct UpdateScalars {
    Value foundInf;                  // null without loss scaling
    Value amax;                      // adaptive scaling: the gradients' amax
    SmallVector<Value> accumulators; // accumulate > 1: one per parameter
    Value invWindow;                 // accumulate > 1: 1 / accumulate
    Value clipFactor;                // null without clipping
    Value lr, wd, nextStep;
    Value correction1, correction2; // Adam(W)'s bias corrections
  };
  /// The step's loss scale state after the step.
  struct ScaleUpdate {
    Value step, scale, tracker, stepped;
  };

  /// (loss arguments, optimizer state, step, loss scale, growth tracker);
  /// `stateAttrs` gets the state's attributes (the results repeat them).
  void appendStepArgs(const Gradient &gradient, SmallVector<Type> &argTypes,
                      SmallVector<DictionaryAttr> &argAttrs,
                      SmallVector<DictionaryAttr> &stateAttrs);
  /// With accumulation the update uses the window's mean gradient,
  /// (accumulator + this micro-batch's gradient) / N, and the window
  /// overflowed when any of its micro-batches did.
  void mergeWindow(OpBuilder &b, Location loc, const Gradient &gradient,
                   func::FuncOp step, unsigned windowBase, UpdateScalars &s);
  Value gradientNorm(OpBuilder &b, Location loc, ArrayRef<Value> grads,
                     const UpdateScalars &s);
  /// The learning rate, weight decay, step + 1 and the bias corrections.
  void buildUpdateScalars(OpBuilder &b, Location loc, Value stepCount,
                          UpdateScalars &s);
  /// One parameter's update, one linalg.generic: its new value and state.
  SmallVector<Value> updateParameter(OpBuilder &b, Location loc, Value param,
                                     Value grad, Value accumulator,
                                     ValueRange states, const UpdateScalars &s);
  /// SGD with momentum (L2 weight decay): the new weight and velocity.
  SmallVector<Value> sgdElements(ScalarOps &e, Value w, Value gr,
                                 Value velocity, const UpdateScalars &s);
  /// Adam (L2 weight decay) or AdamW (decoupled decay): the new weight,
  /// first and second moments.
  SmallVector<Value> adamElements(ScalarOps &e, Value w, Value gr, Value m0,
                                  Value v0, const UpdateScalars &s);
  /// A skipped step on inf/nan keeps the step count; dynamic and adaptive
  /// scaling move the scale.
  ScaleUpdate updateLossScale(OpBuilder &b, Location loc,
                              const Gradient &gradient, Value stepCount,
                              Value scale, Value tracker,
                              const UpdateScalars &s);
  void setStepSignature(func::FuncOp step, const Gradient &gradient,
                        ArrayRef<Type> argTypes,
                        ArrayRef<DictionaryAttr> argAttrs,
                        ArrayRef<DictionaryAttr> stateAttrs,
                        ValueRange results);
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

LogicalResult OptimizerPass::checkOptions(Location loc) {
  bool invalid = !(learningRate > 0) || momentum < 0 || momentum >= 1 ||
                 weightDecay < 0 || !(beta1 >= 0 && beta1 < 1) ||
                 !(beta2 >= 0 && beta2 < 1) || !(epsilon > 0) ||
                 accumulate < 1 || accumulate > INT32_MAX;
  if (!invalid)
    return success();
  return emitError(loc)
         << "optimizer needs lr > 0, 0 <= momentum < 1, weight-decay >= 0, "
            "0 <= beta1, beta2 < 1, epsilon > 0 and 1 <= accumulate < 2^31";
}

func::FuncOp OptimizerPass::findGradientFunction(ModuleOp module) {
  SmallVector<func::FuncOp> gradients;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kGradientOfAttrName))
      gradients.push_back(func);
  if (gradients.size() == 1)
    return gradients.front();
  emitError(module.getLoc())
      << "expected one gradient function ('mp.gradient_of'), found "
      << gradients.size() << ": run --mp-autodiff on one mp.loss function";
  return nullptr;
}

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

void OptimizerPass::appendStepArgs(const Gradient &gradient,
                                   SmallVector<Type> &argTypes,
                                   SmallVector<DictionaryAttr> &argAttrs,
                                   SmallVector<DictionaryAttr> &stateAttrs) {
  MLIRContext *context = &getContext();
  Builder attrs(context);
  func::FuncOp grad = gradient.func;
  appendLossArgs(gradient, argTypes, argAttrs);
  for (unsigned p : gradient.info.paramIndices)
    for (StringRef slot : stateNames()) {
      auto name = cast<StringAttr>(grad.getArgAttr(p, kParamAttrName));
      argTypes.push_back(grad.getArgument(p).getType());
      stateAttrs.push_back(named(
          kStateAttrName, attrs.getStringAttr(name.getValue() + "." + slot)));
      argAttrs.push_back(stateAttrs.back());
    }
  argTypes.append({attrs.getI32Type(), attrs.getF32Type(), attrs.getI32Type()});
  argAttrs.append({role(kStepAttrName), role(kLossScaleAttrName),
                   role(kGrowthTrackerAttrName)});
}

void OptimizerPass::mergeWindow(OpBuilder &b, Location loc,
                                const Gradient &gradient, func::FuncOp step,
                                unsigned windowBase, UpdateScalars &s) {
  unsigned next = windowBase;
  for (unsigned k = 0; k < gradient.info.paramIndices.size(); ++k)
    s.accumulators.push_back(step.getArgument(next++));
  s.invWindow = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(1.0f / static_cast<float>(accumulate)));
  if (gradient.scaled) {
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    Value earlier = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                          step.getArgument(next++), zero);
    s.foundInf = arith::OrIOp::create(b, loc, s.foundInf, earlier);
  }
  if (gradient.adaptive)
    s.amax =
        arith::MaximumFOp::create(b, loc, s.amax, step.getArgument(next++));
}

/// The global L2 norm of the gradient the update uses, before clipping: a
/// result of every step (the stability monitor's gradient norm) and what
/// clipping scales by.
Value OptimizerPass::gradientNorm(OpBuilder &b, Location loc,
                                  ArrayRef<Value> grads,
                                  const UpdateScalars &s) {
  Value total = zeroScalarTensor(b, loc);
  for (auto [k, g] : llvm::enumerate(grads))
    total = addSumOfSquares(
        b, loc, total, g, s.accumulators.empty() ? Value() : s.accumulators[k],
        s.invWindow);
  return math::SqrtOp::create(
      b, loc, tensor::ExtractOp::create(b, loc, total, ValueRange{}));
}

/// min(1, clipNorm / (norm + 1e-6)): what clipping multiplies gradients by.
Value clipFactorOf(OpBuilder &b, Location loc, Value gradNorm,
                   double clipNorm) {
  Value tiny = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1e-6f));
  Value limit = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(clipNorm)));
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  return arith::MinimumFOp::create(
      b, loc, one,
      arith::DivFOp::create(b, loc, limit,
                            arith::AddFOp::create(b, loc, gradNorm, tiny)));
}

void OptimizerPass::buildUpdateScalars(OpBuilder &b, Location loc,
                                       Value stepCount, UpdateScalars &s) {
  auto constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  s.lr = constant(learningRate);
  s.wd = constant(weightDecay);
  Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
  s.nextStep = arith::AddIOp::create(b, loc, stepCount, one);
  if (algorithm == OptimizerAlgorithm::Sgd)
    return;
  // Bias corrections 1 - beta^t with t = step + 1.
  Value t = arith::SIToFPOp::create(b, loc, b.getF32Type(), s.nextStep);
  auto correction = [&](double beta) -> Value {
    Value power = math::PowFOp::create(b, loc, constant(beta), t);
    return arith::SubFOp::create(b, loc, constant(1.0), power);
  };
  s.correction1 = correction(beta1);
  s.correction2 = correction(beta2);
}

SmallVector<Value> OptimizerPass::sgdElements(ScalarOps &e, Value w, Value gr,
                                              Value velocity,
                                              const UpdateScalars &s) {
  Value decayed = e.add(gr, e.mul(s.wd, w));
  Value v = e.add(e.mul(e.c(momentum), velocity), decayed);
  Value newW = arith::SubFOp::create(e.nb, e.l, w, e.mul(s.lr, v));
  return {newW, v};
}

SmallVector<Value> OptimizerPass::adamElements(ScalarOps &e, Value w, Value gr,
                                               Value m0, Value v0,
                                               const UpdateScalars &s) {
  if (algorithm == OptimizerAlgorithm::Adam)
    gr = e.add(gr, e.mul(s.wd, w));
  Value m = e.add(e.mul(e.c(beta1), m0), e.mul(e.c(1 - beta1), gr));
  Value v = e.add(e.mul(e.c(beta2), v0), e.mul(e.c(1 - beta2), e.mul(gr, gr)));
  Value mHat = arith::DivFOp::create(e.nb, e.l, m, s.correction1);
  Value vHat = arith::DivFOp::create(e.nb, e.l, v, s.correction2);
  Value denom = e.add(math::SqrtOp::create(e.nb, e.l, vHat), e.c(epsilon));
  Value delta = arith::DivFOp::create(e.nb, e.l, mHat, denom);
  if (algorithm == OptimizerAlgorithm::AdamW)
    delta = e.add(delta, e.mul(s.wd, w));
  Value newW = arith::SubFOp::create(e.nb, e.l, w, e.mul(s.lr, delta));
  return {newW, m, v};
}

SmallVector<Value> OptimizerPass::updateParameter(OpBuilder &b, Location loc,
                                                  Value param, Value grad,
                                                  Value accumulator,
                                                  ValueRange states,
                                                  const UpdateScalars &s) {
  auto type = cast<RankedTensorType>(param.getType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  // ins: w, g[, accumulator], state...
  SmallVector<Value> ins{param, grad};
  if (accumulator)
    ins.push_back(accumulator);
  unsigned firstState = ins.size();
  ins.append(states.begin(), states.end());
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
        ScalarOps e{nb, l};
        Value w = args[0], gr = args[1];
        if (accumulator)
          gr = e.mul(e.add(args[2], gr), s.invWindow);
        if (s.clipFactor)
          gr = e.mul(gr, s.clipFactor);
        SmallVector<Value> values =
            algorithm == OptimizerAlgorithm::Sgd
                ? sgdElements(e, w, gr, args[firstState], s)
                : adamElements(e, w, gr, args[firstState], args[firstState + 1],
                               s);
        // On inf/nan gradients the step is skipped: each element keeps its
        // old value. Selecting per element, inside the update, lets the new
        // values be computed in the caller's buffers (a select of whole
        // tensors after the update would need copies).
        if (s.foundInf)
          for (size_t o = 0; o < values.size(); ++o) {
            Value old = args[o == 0 ? 0 : firstState + o - 1];
            values[o] =
                arith::SelectOp::create(nb, l, s.foundInf, old, values[o]);
          }
        linalg::YieldOp::create(nb, l, values);
      });
  // Master weights and state are updated in FP32, whatever AMP decides.
  update->setAttr(kPrecisionAttrName,
                  FloatPrecisionAttr::get(&getContext(), FloatPrecision::F32));
  return SmallVector<Value>(update->getResults());
}

OptimizerPass::ScaleUpdate OptimizerPass::updateLossScale(
    OpBuilder &b, Location loc, const Gradient &gradient, Value stepCount,
    Value scale, Value tracker, const UpdateScalars &s) {
  LossScalingAttr scaling = gradient.scaling;
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  ScaleUpdate next{s.nextStep, scale, tracker, Value()};
  next.stepped = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value foundInf = s.foundInf;
  if (!foundInf)
    return next;
  next.step = arith::SelectOp::create(b, loc, foundInf, stepCount, s.nextStep);
  Value trueValue = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  next.stepped = arith::XOrIOp::create(b, loc, foundInf, trueValue);
  if (scaling.getMode() == LossScalingMode::Dynamic) {
    auto update = UpdateScaleOp::create(
        b, loc, f32, i32, scale, tracker, foundInf,
        b.getF32FloatAttr(scaling.getGrowthFactor().convertToDouble()),
        b.getF32FloatAttr(scaling.getBackoffFactor().convertToDouble()),
        b.getI64IntegerAttr(scaling.getGrowthInterval()),
        b.getF32FloatAttr(1.0f), b.getF32FloatAttr(16777216.0f));
    next.scale = update.getNewScale();
    next.tracker = update.getNewGrowthTracker();
  }
  if (gradient.adaptive) {
    auto update = AdaptScaleOp::create(
        b, loc, f32, i32, scale, tracker, foundInf, s.amax,
        // The dialect verified that adaptive mode records both.
        b.getF32FloatAttr(scaling.getMargin()->convertToDouble()),
        b.getI64IntegerAttr(*scaling.getHysteresis()),
        b.getF32FloatAttr(scaling.getBackoffFactor().convertToDouble()),
        b.getI64IntegerAttr(scaling.getGrowthInterval()),
        b.getF32FloatAttr(1.0f), b.getF32FloatAttr(16777216.0f),
        b.getF32FloatAttr(65504.0f));
    next.scale = update.getNewScale();
    next.tracker = update.getNewGrowthTracker();
  }
  return next;
}

void OptimizerPass::setStepSignature(func::FuncOp step,
                                     const Gradient &gradient,
                                     ArrayRef<Type> argTypes,
                                     ArrayRef<DictionaryAttr> argAttrs,
                                     ArrayRef<DictionaryAttr> stateAttrs,
                                     ValueRange results) {
  func::FuncOp grad = gradient.func;
  step.setFunctionType(FunctionType::get(&getContext(), argTypes,
                                         TypeRange(results.getTypes())));
  step.setAllArgAttrs(argAttrs);
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned p : gradient.info.paramIndices)
    resultAttrs.push_back(
        named(kParamAttrName, grad.getArgAttr(p, kParamAttrName)));
  resultAttrs.append(stateAttrs.begin(), stateAttrs.end());
  for (StringRef name :
       {kStepAttrName, kLossScaleAttrName, kGrowthTrackerAttrName,
        kLossAttrName, kSteppedAttrName, kGradNormAttrName})
    resultAttrs.push_back(role(name));
  step.setAllResultAttrs(resultAttrs);
}

LogicalResult OptimizerPass::buildStep(const Gradient &gradient,
                                       SymbolTable &symbols) {
  MLIRContext *context = &getContext();
  func::FuncOp grad = gradient.func;
  unsigned numLossArgs = gradient.info.numLossArgs;
  ArrayRef<unsigned> paramIndices = gradient.info.paramIndices;
  bool accumulating = accumulate > 1;

  // (loss arguments, state, step, scale, growth tracker[, window state]).
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs, stateAttrs;
  appendStepArgs(gradient, argTypes, argAttrs, stateAttrs);
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

  unsigned numSlots = stateNames().size();
  unsigned stateBase = numLossArgs;
  unsigned numState = paramIndices.size() * numSlots;
  Value stepCount = step.getArgument(stateBase + numState);
  Value scale = step.getArgument(stateBase + numState + 1);
  Value tracker = step.getArgument(stateBase + numState + 2);
  Inlined inlined = inlineGradient(
      b, gradient, step.getArguments().take_front(numLossArgs), scale);
  UpdateScalars s;
  s.foundInf = inlined.foundInf;
  s.amax = inlined.amax;
  if (accumulating)
    mergeWindow(b, loc, gradient, step, windowBase, s);
  Value gradNorm = gradientNorm(b, loc, inlined.grads, s);
  if (gradient.clipNorm > 0)
    s.clipFactor = clipFactorOf(b, loc, gradNorm, gradient.clipNorm);
  buildUpdateScalars(b, loc, stepCount, s);

  SmallVector<Value> newParams, newStates;
  for (auto [k, p] : llvm::enumerate(paramIndices)) {
    ValueRange states =
        step.getArguments().slice(stateBase + k * numSlots, numSlots);
    SmallVector<Value> updated =
        updateParameter(b, loc, step.getArgument(p), inlined.grads[k],
                        accumulating ? s.accumulators[k] : Value(), states, s);
    newParams.push_back(updated.front());
    newStates.append(updated.begin() + 1, updated.end());
  }
  ScaleUpdate next =
      updateLossScale(b, loc, gradient, stepCount, scale, tracker, s);

  SmallVector<Value> results(newParams);
  results.append(newStates);
  results.append({next.step, next.scale, next.tracker, inlined.loss,
                  next.stepped, gradNorm});
  func::ReturnOp::create(b, loc, results);
  setStepSignature(step, gradient, argTypes, argAttrs, stateAttrs, results);
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
