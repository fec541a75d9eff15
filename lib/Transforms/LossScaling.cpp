//===- LossScaling.cpp - scale the seed, unscale and check gradients ------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/GradientFunction.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPLOSSSCALING
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

struct LossScalingPass : mp::impl::MPLossScalingBase<LossScalingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LossScalingMode resolved = mode;
    if (resolved == LossScalingMode::Auto)
      resolved = dtype == FloatPrecision::F16 ? LossScalingMode::Dynamic
                                              : LossScalingMode::None;
    // Margin and hysteresis are recorded for the adaptive scaler only.
    bool adaptive = resolved == LossScalingMode::Adaptive;
    // The settings are checked where they are recorded: by the attribute.
    LossScalingAttr settings = LossScalingAttr::getChecked(
        [&] { return emitError(module.getLoc()); }, &getContext(), resolved,
        APFloat(initScale), APFloat(growthFactor), APFloat(backoffFactor),
        static_cast<int64_t>(growthInterval), APFloat(clipNorm),
        adaptive ? std::optional<APFloat>(APFloat(margin)) : std::nullopt,
        adaptive ? std::optional<int64_t>(hysteresis) : std::nullopt);
    if (!settings)
      return signalPassFailure();
    bool found = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(kGradientOfAttrName))
        continue;
      found = true;
      if (func->hasAttr(kLossScalingAttrName)) {
        func.emitError() << "loss scaling was already applied to this "
                            "gradient function";
        return signalPassFailure();
      }
      if (failed(rewrite(func, settings)))
        return signalPassFailure();
    }
    if (!found) {
      emitError(module.getLoc())
          << "no gradient function ('mp.gradient_of') in the module: run "
             "--mp-autodiff first";
      return signalPassFailure();
    }
  }

  /// The op autodiff marks as the backward seed (d loss / d loss = 1);
  /// fails (reported) unless there is exactly one, with one float result.
  static FailureOr<Operation *> findSeed(func::FuncOp func) {
    SmallVector<Operation *> seeds;
    func.walk([&](Operation *op) {
      if (op->hasAttr(kSeedAttrName))
        seeds.push_back(op);
    });
    if (seeds.size() != 1)
      return func.emitError()
             << "mp-loss-scaling: expected one op marked '" << kSeedAttrName
             << "' (the backward seed) in the gradient function, found "
             << seeds.size();
    Operation *seed = seeds.front();
    if (seed->getNumResults() != 1 ||
        !isa<FloatType>(getElementTypeOrSelf(seed->getResult(0).getType())))
      return seed->emitError()
             << "mp-loss-scaling: the backward seed must have one float "
                "result";
    return seed;
  }

  /// Adds the trailing f32 scale argument to \p func and starts the
  /// backward pass from seed * scale; returns the scale.
  static FailureOr<Value> scaleSeed(func::FuncOp func, Operation *seed) {
    MLIRContext *context = func.getContext();
    Builder attrs(context);
    unsigned index = func.getNumArguments();
    if (failed(
            func.insertArgument(index, Float32Type::get(context),
                                attrs.getDictionaryAttr(attrs.getNamedAttr(
                                    kLossScaleAttrName, attrs.getUnitAttr())),
                                func.getLoc())))
      return failure();
    Value scale = func.getArgument(index);
    OpBuilder b(context);
    b.setInsertionPointAfter(seed);
    Value seedValue = seed->getResult(0);
    Value scaledSeed = ScaleLossOp::create(
        b, seed->getLoc(), seedValue.getType(), seedValue, scale);
    seedValue.replaceAllUsesExcept(scaledSeed, scaledSeed.getDefiningOp());
    return scale;
  }

  /// The gradients unscaled (as f32) by one mp.unscale, which also finds
  /// infs and nans (\p foundInf) and, for adaptive scaling, measures the
  /// scaled gradients' amax in the same pass (\p amax).
  static void unscale(OpBuilder &b, Location loc, SmallVectorImpl<Value> &grads,
                      Value scale, LossScalingMode mode, Value &foundInf,
                      Value &amax) {
    SmallVector<Type> unscaledTypes;
    for (Value g : grads)
      unscaledTypes.push_back(
          cast<RankedTensorType>(g.getType()).clone(b.getF32Type()));
    Type amaxType = mode == LossScalingMode::Adaptive ? b.getF32Type() : Type();
    auto unscaleOp = UnscaleOp::create(b, loc, unscaledTypes, b.getI1Type(),
                                       amaxType, grads, scale);
    grads.assign(unscaleOp.getUnscaled().begin(),
                 unscaleOp.getUnscaled().end());
    foundInf = unscaleOp.getFoundInf();
    amax = unscaleOp.getAmax();
  }

  /// Appends \p value to \p results with a result attribute \p name.
  static void appendFlagResult(Builder &attrs, Value value, StringRef name,
                               SmallVectorImpl<Value> &results,
                               SmallVectorImpl<DictionaryAttr> &resultAttrs) {
    if (!value)
      return;
    results.push_back(value);
    resultAttrs.push_back(
        attrs.getDictionaryAttr(attrs.getNamedAttr(name, attrs.getUnitAttr())));
  }

  /// Replaces \p ret by a return of the loss, \p grads and the flags that
  /// are set, and retypes \p func to match.
  static void returnGradients(func::FuncOp func, func::ReturnOp ret,
                              ArrayRef<Value> grads, Value foundInf,
                              Value amax) {
    Builder attrs(func.getContext());
    SmallVector<Value> results{ret.getOperand(0)};
    results.append(grads.begin(), grads.end());
    SmallVector<DictionaryAttr> resultAttrs;
    func.getAllResultAttrs(resultAttrs);
    appendFlagResult(attrs, foundInf, kFoundInfAttrName, results, resultAttrs);
    appendFlagResult(attrs, amax, kGradAmaxAttrName, results, resultAttrs);
    OpBuilder b(ret);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getFunctionType().getInputs(), types));
    func.setAllResultAttrs(resultAttrs);
  }

  LogicalResult rewrite(func::FuncOp func, LossScalingAttr settings) {
    bool scaled = settings.getMode() != LossScalingMode::None;
    GradientFunctionInfo info;
    if (failed(checkGradientFunction(func, /*scaled=*/false, "mp-loss-scaling",
                                     info)))
      return failure();
    // The backward pass starts from the seed; scaling it is what scales
    // the gradients.
    Value scale;
    if (scaled) {
      FailureOr<Operation *> seed = findSeed(func);
      if (failed(seed))
        return failure();
      FailureOr<Value> added = scaleSeed(func, *seed);
      if (failed(added))
        return failure();
      scale = *added;
    }
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder b(ret);
    SmallVector<Value> grads(ret.getOperands().drop_front());
    Value foundInf, amax;
    if (scaled)
      unscale(b, ret.getLoc(), grads, scale, settings.getMode(), foundInf,
              amax);
    returnGradients(func, ret, grads, foundInf, amax);
    func->setAttr(kLossScalingAttrName, settings);
    return success();
  }
};

} // namespace
