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

  LogicalResult rewrite(func::FuncOp func, LossScalingAttr settings) {
    MLIRContext *context = &getContext();
    Builder attrs(context);
    bool scaled = settings.getMode() != LossScalingMode::None;
    GradientFunctionInfo info;
    if (failed(checkGradientFunction(func, /*scaled=*/false, "mp-loss-scaling",
                                     info)))
      return failure();
    // The backward pass starts from the op autodiff marks as the seed
    // (d loss / d loss = 1); scaling it is what scales the gradients.
    SmallVector<Operation *> seeds;
    func.walk([&](Operation *op) {
      if (op->hasAttr(kSeedAttrName))
        seeds.push_back(op);
    });
    if (scaled && seeds.size() != 1)
      return func.emitError()
             << "mp-loss-scaling: expected one op marked '" << kSeedAttrName
             << "' (the backward seed) in the gradient function, found "
             << seeds.size();
    if (scaled && (seeds[0]->getNumResults() != 1 ||
                   !isa<FloatType>(
                       getElementTypeOrSelf(seeds[0]->getResult(0).getType()))))
      return seeds[0]->emitError()
             << "mp-loss-scaling: the backward seed must have one float "
                "result";
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Location loc = ret.getLoc();

    Value scale;
    if (scaled) {
      unsigned index = func.getNumArguments();
      if (failed(
              func.insertArgument(index, Float32Type::get(context),
                                  attrs.getDictionaryAttr(attrs.getNamedAttr(
                                      kLossScaleAttrName, attrs.getUnitAttr())),
                                  func.getLoc())))
        return failure();
      scale = func.getArgument(index);
      // The backward pass starts from seed * scale.
      Operation *seed = seeds.front();
      OpBuilder b(context);
      b.setInsertionPointAfter(seed);
      Value seedValue = seed->getResult(0);
      Value scaledSeed = ScaleLossOp::create(
          b, seed->getLoc(), seedValue.getType(), seedValue, scale);
      seedValue.replaceAllUsesExcept(scaledSeed, scaledSeed.getDefiningOp());
    }

    OpBuilder b(ret);
    SmallVector<Value> grads(ret.getOperands().drop_front());
    Value foundInf, amax;
    if (scaled) {
      SmallVector<Type> unscaledTypes;
      for (Value g : grads)
        unscaledTypes.push_back(
            cast<RankedTensorType>(g.getType()).clone(b.getF32Type()));
      // Adaptive scaling measures the scaled gradients' amax in the same
      // pass over them as the inf/nan check.
      Type amaxType = settings.getMode() == LossScalingMode::Adaptive
                          ? b.getF32Type()
                          : Type();
      auto unscale = UnscaleOp::create(b, loc, unscaledTypes, b.getI1Type(),
                                       amaxType, grads, scale);
      grads.assign(unscale.getUnscaled().begin(), unscale.getUnscaled().end());
      foundInf = unscale.getFoundInf();
      amax = unscale.getAmax();
    }

    SmallVector<Value> results{ret.getOperand(0)};
    results.append(grads);
    SmallVector<DictionaryAttr> resultAttrs;
    func.getAllResultAttrs(resultAttrs);
    if (foundInf) {
      results.push_back(foundInf);
      resultAttrs.push_back(attrs.getDictionaryAttr(
          attrs.getNamedAttr(kFoundInfAttrName, attrs.getUnitAttr())));
    }
    if (amax) {
      results.push_back(amax);
      resultAttrs.push_back(attrs.getDictionaryAttr(
          attrs.getNamedAttr(kGradAmaxAttrName, attrs.getUnitAttr())));
    }
    func::ReturnOp::create(b, loc, results);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    func.setFunctionType(
        FunctionType::get(context, func.getFunctionType().getInputs(), types));
    func.setAllResultAttrs(resultAttrs);
    func->setAttr(kLossScalingAttrName, settings);
    return success();
  }
};

} // namespace
