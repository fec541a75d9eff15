//===- LossScaling.cpp - scale the seed, unscale and check gradients ------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Support/IRUtils.h"
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

/// `total` (a rank-0 f32 tensor; a fresh zero when null) plus the sum of
/// squares of `input`, in f32. Chaining every gradient through one total
/// leaves a single scalar for the host to read (on a GPU, one copy and
/// wait instead of one a gradient).
Value addSumOfSquares(OpBuilder &b, Location loc, Value total, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = type.getRank();
  if (!total) {
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value empty =
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getF32Type());
    total = linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
                .getResult(0);
  }
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, total.getType(), ValueRange{input}, ValueRange{total},
             maps, iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               Value x = args[0];
               if (!x.getType().isF32())
                 x = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), x);
               Value sq = arith::MulFOp::create(nb, nloc, x, x);
               linalg::YieldOp::create(
                   nb, nloc,
                   arith::AddFOp::create(nb, nloc, args[1], sq).getResult());
             })
      .getResult(0);
}

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
    if (clipNorm > 0) {
      Value total;
      for (Value g : grads)
        total = addSumOfSquares(b, loc, total, g);
      Value norm = math::SqrtOp::create(
          b, loc, tensor::ExtractOp::create(b, loc, total, ValueRange{}));
      Value tiny = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1e-6f));
      Value limit = arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(static_cast<float>(clipNorm)));
      Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
      Value factor = arith::MinimumFOp::create(
          b, loc, one,
          arith::DivFOp::create(b, loc, limit,
                                arith::AddFOp::create(b, loc, norm, tiny)));
      for (Value &g : grads) {
        Type element = cast<RankedTensorType>(g.getType()).getElementType();
        g = mapElements(
            b, loc, g, element, [&](OpBuilder &nb, Location nloc, Value x) {
              Value f = factor;
              if (x.getType() != f.getType())
                f = arith::TruncFOp::create(nb, nloc, x.getType(), f);
              return arith::MulFOp::create(nb, nloc, x, f).getResult();
            });
      }
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
