//===- MPToUpstream.cpp - lower mp ops to arith/linalg/tensor -------------===//
//
// Makes modules that use mp ops executable with upstream MLIR alone.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Support/IRUtils.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_CONVERTMPTOUPSTREAM
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

/// `accumulator`, or when it is null a fresh rank-0 tensor holding `init`.
Value scalarAccumulator(OpBuilder &b, Location loc, Value accumulator,
                        TypedAttr init) {
  if (accumulator)
    return accumulator;
  Value value = arith::ConstantOp::create(b, loc, init);
  Value empty =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, init.getType());
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

/// A reduction of every element of `input` into the rank-0 `accumulator`
/// by `body` (block arguments: the element, the accumulator).
Value reduceAll(OpBuilder &b, Location loc, Value input, Value accumulator,
                function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  unsigned rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  return linalg::GenericOp::create(b, loc, accumulator.getType(),
                                   ValueRange{input}, ValueRange{accumulator},
                                   maps, iterators, body)
      .getResult(0);
}

/// `flags` (a rank-0 i1 tensor; a fresh false one when null) or'ed with
/// whether `transform` (of element type `resultElementType`) of any element
/// of the float tensor `input` is inf or nan. Chaining the checks of all
/// gradients through one tensor leaves a single flag for the host to read
/// (on a GPU, one device-to-host copy and wait instead of one a gradient).
Value orNonFinite(OpBuilder &b, Location loc, Value flags, Value input,
                  Type resultElementType,
                  function_ref<Value(OpBuilder &, Location, Value)> transform) {
  flags = scalarAccumulator(b, loc, flags, b.getBoolAttr(false));
  auto eltType = cast<FloatType>(resultElementType);
  Value inf = arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(eltType, APFloat::getInf(eltType.getFloatSemantics())));
  return reduceAll(
      b, loc, input, flags, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value magnitude =
            math::AbsFOp::create(nb, nloc, transform(nb, nloc, args[0]));
        // "uge" is true when unordered (nan) or |x| >= inf (inf).
        Value nonFinite = arith::CmpFOp::create(
            nb, nloc, arith::CmpFPredicate::UGE, magnitude, inf);
        linalg::YieldOp::create(
            nb, nloc,
            arith::OrIOp::create(nb, nloc, args[1], nonFinite).getResult());
      });
}

/// `amax` (a rank-0 f32 tensor; a fresh zero when null) maxed with the
/// largest |x| over the float tensor `input` (the scaled gradient, `wide`
/// widening an element to the compute type), and with +inf where
/// `transform` of an element (the unscaled value) is inf or nan. One
/// reduction both measures the amax adaptive loss scaling needs and checks
/// for inf/nan: the result is +inf exactly when a value was not finite.
/// Chained through one tensor like orNonFinite's flags.
Value maxMagnitudeOrInf(
    OpBuilder &b, Location loc, Value amax, Value input, Type resultElementType,
    function_ref<Value(OpBuilder &, Location, Value)> wide,
    function_ref<Value(OpBuilder &, Location, Value)> transform) {
  Type f32 = b.getF32Type();
  amax = scalarAccumulator(b, loc, amax, b.getF32FloatAttr(0.0f));
  auto eltType = cast<FloatType>(resultElementType);
  Value resultInf = arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(eltType, APFloat::getInf(eltType.getFloatSemantics())));
  Value inf =
      eltType == f32
          ? resultInf
          : arith::ConstantOp::create(
                b, loc,
                b.getF32FloatAttr(std::numeric_limits<float>::infinity()));
  return reduceAll(
      b, loc, input, amax, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = wide(nb, nloc, args[0]);
        Value unscaled = math::AbsFOp::create(nb, nloc, transform(nb, nloc, x));
        // "uge" is true when unordered (nan) or |x| >= inf (inf).
        Value nonFinite = arith::CmpFOp::create(
            nb, nloc, arith::CmpFPredicate::UGE, unscaled, resultInf);
        Value magnitude = math::AbsFOp::create(nb, nloc, x);
        if (!magnitude.getType().isF32()) {
          // A finite f64 beyond f32's range still counts as finite.
          auto wideType = cast<FloatType>(magnitude.getType());
          Value largest = arith::ConstantOp::create(
              nb, nloc,
              nb.getFloatAttr(wideType, std::numeric_limits<float>::max()));
          magnitude = arith::TruncFOp::create(
              nb, nloc, f32,
              arith::MinimumFOp::create(nb, nloc, magnitude, largest));
        }
        Value contribution =
            arith::SelectOp::create(nb, nloc, nonFinite, inf, magnitude);
        linalg::YieldOp::create(
            nb, nloc,
            arith::MaximumFOp::create(nb, nloc, args[1], contribution)
                .getResult());
      });
}

struct ScaleLossLowering : OpConversionPattern<ScaleLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScaleLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elementType = getElementTypeOrSelf(op.getLoss().getType());
    Value scale =
        convertFloatScalar(rewriter, loc, adaptor.getScale(), elementType);
    Value loss = adaptor.getLoss();
    if (!isa<RankedTensorType>(loss.getType())) {
      rewriter.replaceOpWithNewOp<arith::MulFOp>(op, loss, scale);
      return success();
    }
    rewriter.replaceOp(
        op, mapElements(rewriter, loc, loss, elementType,
                        [&](OpBuilder &b, Location l, Value x) -> Value {
                          return arith::MulFOp::create(b, l, x, scale);
                        }));
    return success();
  }
};

struct UnscaleLowering : OpConversionPattern<UnscaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(UnscaleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value one = arith::ConstantOp::create(rewriter, loc,
                                          rewriter.getF32FloatAttr(1.0f));
    Value inverseScale =
        arith::DivFOp::create(rewriter, loc, one, adaptor.getScale());
    bool measureAmax = static_cast<bool>(op.getAmax());
    SmallVector<Value> results;
    // The chained inf/nan flags, or (with amax) the chained max |g| that is
    // +inf when a value was not finite.
    Value checked;
    for (auto [grad, resultType] :
         llvm::zip(adaptor.getGrads(), op.getUnscaled().getTypes())) {
      Type resultElt = cast<RankedTensorType>(resultType).getElementType();
      // Unscale in FP32 at least, whatever the gradient's type.
      Type computeType = resultElt.getIntOrFloatBitWidth() > 32
                             ? resultElt
                             : Type(rewriter.getF32Type());
      Value inverse =
          convertFloatScalar(rewriter, loc, inverseScale, computeType);
      auto widen = [&](OpBuilder &b, Location l, Value x) {
        return convertFloatScalar(b, l, x, computeType);
      };
      auto multiply = [&](OpBuilder &b, Location l, Value wide) {
        Value product = arith::MulFOp::create(b, l, wide, inverse);
        return convertFloatScalar(b, l, product, resultElt);
      };
      auto unscale = [&](OpBuilder &b, Location l, Value x) {
        return multiply(b, l, widen(b, l, x));
      };
      Value unscaled = mapElements(rewriter, loc, grad, resultElt, unscale);
      // Check the result (an unscaled value can still overflow its type),
      // recomputed from the gradient: the unscaled tensor then has one
      // reader, the optimizer's update, and is fused into it instead of
      // being held as a copy of every gradient.
      checked = measureAmax ? maxMagnitudeOrInf(rewriter, loc, checked, grad,
                                                resultElt, widen, multiply)
                            : orNonFinite(rewriter, loc, checked, grad,
                                          resultElt, unscale);
      results.push_back(unscaled);
    }
    // The verifier guarantees at least one gradient, hence one check.
    Value total =
        tensor::ExtractOp::create(rewriter, loc, checked, ValueRange{});
    if (!measureAmax) {
      results.push_back(total);
      rewriter.replaceOp(op, results);
      return success();
    }
    Value inf = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getF32FloatAttr(std::numeric_limits<float>::infinity()));
    results.push_back(arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::UGE, total, inf));
    results.push_back(total);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct UpdateScaleLowering : OpConversionPattern<UpdateScaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(UpdateScaleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type trackerType = op.getGrowthTracker().getType();
    auto f32 = [&](APFloat value) -> Value {
      return arith::ConstantOp::create(
          rewriter, loc, rewriter.getF32FloatAttr(value.convertToFloat()));
    };
    auto integer = [&](int64_t value) -> Value {
      return arith::ConstantOp::create(
          rewriter, loc, rewriter.getIntegerAttr(trackerType, value));
    };
    Value zero = integer(0);
    Value one = integer(1);
    Value interval = integer(op.getGrowthInterval());
    Value growthFactor = f32(op.getGrowthFactor());
    Value maxScale = f32(op.getMaxScale());
    Value backoffFactor = f32(op.getBackoffFactor());
    Value minScale = f32(op.getMinScale());
    Value scale = adaptor.getScale();
    Value tracker = adaptor.getGrowthTracker();

    // Clean step: count it; grow the scale when the interval is reached.
    Value grownTracker = arith::AddIOp::create(rewriter, loc, tracker, one);
    Value shouldGrow = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sge, grownTracker, interval);
    Value grownScale = arith::MinimumFOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc, scale, growthFactor), maxScale);
    Value cleanScale =
        arith::SelectOp::create(rewriter, loc, shouldGrow, grownScale, scale);
    Value cleanTracker =
        arith::SelectOp::create(rewriter, loc, shouldGrow, zero, grownTracker);

    // Step with inf/nan: back off and restart counting.
    Value backedOffScale = arith::MaximumFOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc, scale, backoffFactor), minScale);

    Value foundInf = adaptor.getFoundInf();
    Value newScale = arith::SelectOp::create(rewriter, loc, foundInf,
                                             backedOffScale, cleanScale);
    Value newTracker =
        arith::SelectOp::create(rewriter, loc, foundInf, zero, cleanTracker);
    rewriter.replaceOp(op, {newScale, newTracker});
    return success();
  }
};

struct AdaptScaleLowering : OpConversionPattern<AdaptScaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AdaptScaleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // updateAdaptiveLossScale (MPOps.cpp), step by step.
    Location loc = op.getLoc();
    Type trackerType = op.getGrowthTracker().getType();
    auto f32 = [&](float value) -> Value {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getF32FloatAttr(value));
    };
    auto integer = [&](int64_t value) -> Value {
      return arith::ConstantOp::create(
          rewriter, loc, rewriter.getIntegerAttr(trackerType, value));
    };
    auto select = [&](Value condition, Value a, Value b) -> Value {
      return arith::SelectOp::create(rewriter, loc, condition, a, b);
    };
    auto cmpf = [&](arith::CmpFPredicate predicate, Value a, Value b) {
      return arith::CmpFOp::create(rewriter, loc, predicate, a, b);
    };
    auto cmpi = [&](arith::CmpIPredicate predicate, Value a, Value b) {
      return arith::CmpIOp::create(rewriter, loc, predicate, a, b);
    };
    float margin = op.getMargin().convertToFloat();
    float limit = op.getLimit().convertToFloat();
    Value minScale = f32(op.getMinScale().convertToFloat());
    Value maxScale = f32(op.getMaxScale().convertToFloat());
    Value zero = integer(0);
    Value one = integer(1);
    Value scale = adaptor.getScale();
    Value tracker = adaptor.getGrowthTracker();
    Value amax = adaptor.getAmax();

    // The target: the largest power of two at most
    // bound = scale / amax * (limit / margin), i.e. bound with its
    // mantissa cleared, clamped to [min_scale, max_scale]; the scale itself
    // when amax is not positive (nothing measured).
    Type i32 = rewriter.getI32Type();
    Value mask = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getIntegerAttr(i32, static_cast<int32_t>(0xFF800000u)));
    // The largest power of two at most x >= 0: x with its mantissa cleared.
    auto powerOfTwoAtMost = [&](Value x) -> Value {
      Value bits = arith::BitcastOp::create(rewriter, loc, i32, x);
      return arith::BitcastOp::create(
          rewriter, loc, rewriter.getF32Type(),
          arith::AndIOp::create(rewriter, loc, bits, mask));
    };
    Value bound = arith::MulFOp::create(
        rewriter, loc, arith::DivFOp::create(rewriter, loc, scale, amax),
        f32(limit / margin));
    Value power = powerOfTwoAtMost(bound);
    Value clamped = arith::MinimumFOp::create(
        rewriter, loc,
        arith::MaximumFOp::create(rewriter, loc, power, minScale), maxScale);
    Value measured = cmpf(arith::CmpFPredicate::OGT, amax, f32(0.0f));
    Value target = select(measured, clamped, scale);

    // Cooling down after an overflow (tracker < 0): may fall, not grow.
    Value coolingDown = cmpi(arith::CmpIPredicate::slt, tracker, zero);
    Value counted = arith::AddIOp::create(rewriter, loc, tracker, one);
    Value coolScale = arith::MinimumFOp::create(rewriter, loc, target, scale);
    // Otherwise a target at or above the scale is taken (capped); a lower
    // one after `hysteresis` clean steps in a row asked for it.
    Value wantsLess = cmpf(arith::CmpFPredicate::OLT, target, scale);
    Value lowerNow =
        cmpi(arith::CmpIPredicate::sge, counted, integer(op.getHysteresis()));
    Value waits = arith::AndIOp::create(
        rewriter, loc, wantsLess,
        arith::XOrIOp::create(rewriter, loc, lowerNow,
                              arith::ConstantOp::create(
                                  rewriter, loc, rewriter.getBoolAttr(true))));
    // Up by one power of two a step at most (a lower target is below it).
    Value growthCap = powerOfTwoAtMost(
        arith::MulFOp::create(rewriter, loc, scale, f32(2.0f)));
    Value capped = arith::MinimumFOp::create(rewriter, loc, target, growthCap);
    Value warmScale = select(waits, scale, capped);
    Value warmTracker = select(waits, counted, zero);
    Value cleanScale = select(coolingDown, coolScale, warmScale);
    Value cleanTracker = select(coolingDown, counted, warmTracker);

    // Step with inf/nan: back off, then cool down.
    Value backedOffScale = arith::MaximumFOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc, scale,
                              f32(op.getBackoffFactor().convertToFloat())),
        minScale);
    Value foundInf = adaptor.getFoundInf();
    Value newScale = select(foundInf, backedOffScale, cleanScale);
    Value newTracker =
        select(foundInf, integer(-op.getGrowthInterval()), cleanTracker);
    rewriter.replaceOp(op, {newScale, newTracker});
    return success();
  }
};

struct ObserveLowering : OpConversionPattern<ObserveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ObserveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

/// mp.quant_scale: max |x| (over everything, or per slice of `axis`) in
/// f32, then /127, 1 where the maximum is 0.
struct QuantScaleLowering : OpConversionPattern<QuantScaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QuantScaleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getInput().getType();
    auto scaleType = op.getScale().getType();
    unsigned rank = type.getRank();
    MLIRContext *context = rewriter.getContext();
    Type f32 = rewriter.getF32Type();
    auto constant = [&](OpBuilder &b, Location l, double v) -> Value {
      return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
    };
    Value zero = constant(rewriter, loc, 0.0);
    Value init =
        linalg::FillOp::create(rewriter, loc, ValueRange{zero},
                               ValueRange{tensor::EmptyOp::create(
                                   rewriter, loc, scaleType.getShape(), f32)})
            .getResult(0);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    AffineMap out = AffineMap::get(rank, 0, context);
    if (std::optional<int64_t> axis = op.getAxis()) {
      iterators[*axis] = utils::IteratorType::parallel;
      out = AffineMap::get(rank, 0, rewriter.getAffineDimExpr(*axis), context);
    }
    Value absMax =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{scaleType}, ValueRange{adaptor.getInput()},
            ValueRange{init},
            ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank), out},
            iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value x = args[0];
              if (!x.getType().isF32())
                x = arith::ExtFOp::create(b, l, b.getF32Type(), x);
              Value a = math::AbsFOp::create(b, l, x);
              linalg::YieldOp::create(
                  b, l,
                  arith::MaximumFOp::create(b, l, a, args[1]).getResult());
            })
            .getResult(0);
    unsigned scaleRank = scaleType.getRank();
    AffineMap id = rewriter.getMultiDimIdentityMap(scaleRank);
    Value scale =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{scaleType}, ValueRange{absMax},
            ValueRange{tensor::EmptyOp::create(rewriter, loc,
                                               scaleType.getShape(), f32)},
            ArrayRef<AffineMap>{id, id},
            SmallVector<utils::IteratorType>(scaleRank,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value positive = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, args[0], constant(b, l, 0));
              Value s =
                  arith::DivFOp::create(b, l, args[0], constant(b, l, 127.0));
              linalg::YieldOp::create(
                  b, l,
                  arith::SelectOp::create(b, l, positive, s,
                                          constant(b, l, 1.0))
                      .getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, scale);
    return success();
  }
};

/// mp.fake_quant: clamp(roundeven(x / s), -127, 127) * s in f32, rounded
/// back to x's type.
struct FakeQuantLowering : OpConversionPattern<FakeQuantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FakeQuantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getInput().getType();
    unsigned rank = type.getRank();
    MLIRContext *context = rewriter.getContext();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    AffineMap scaleMap = AffineMap::get(rank, 0, context);
    if (std::optional<int64_t> axis = op.getAxis())
      scaleMap =
          AffineMap::get(rank, 0, rewriter.getAffineDimExpr(*axis), context);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{type},
            ValueRange{adaptor.getInput(), adaptor.getScale()},
            ValueRange{tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                               type.getElementType())},
            ArrayRef<AffineMap>{id, scaleMap, id},
            SmallVector<utils::IteratorType>(rank,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Type f32 = b.getF32Type();
              Value x = args[0];
              if (!x.getType().isF32())
                x = arith::ExtFOp::create(b, l, f32, x);
              auto constant = [&](double v) -> Value {
                return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
              };
              Value r = math::RoundEvenOp::create(
                  b, l, arith::DivFOp::create(b, l, x, args[1]));
              r = arith::MaximumFOp::create(b, l, r, constant(-127.0));
              r = arith::MinimumFOp::create(b, l, r, constant(127.0));
              Value q = arith::MulFOp::create(b, l, r, args[1]);
              if (q.getType() != args[0].getType())
                q = arith::TruncFOp::create(b, l, args[0].getType(), q);
              linalg::YieldOp::create(b, l, q);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertMPToUpstreamPass
    : mp::impl::ConvertMPToUpstreamBase<ConvertMPToUpstreamPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    unsigned count = 0;
    getOperation()->walk([&](Operation *op) {
      if (isa<MPDialect>(op->getDialect()))
        ++count;
    });

    ConversionTarget target(*context);
    target.addIllegalDialect<MPDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(context);
    patterns.add<ScaleLossLowering, UnscaleLowering, UpdateScaleLowering,
                 AdaptScaleLowering, ObserveLowering, QuantScaleLowering,
                 FakeQuantLowering>(context);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    numOpsLowered += count;

    // Attribute values of the mp dialect (#mp.loss_scaling, #mp.precision,
    // #mp.decision) would make the module unreadable to upstream tools;
    // nothing reads them after this point.
    getOperation()->walk([](Operation *op) {
      SmallVector<StringAttr> names;
      for (NamedAttribute attr : op->getDiscardableAttrs())
        if (isa<MPDialect>(attr.getValue().getDialect()))
          names.push_back(attr.getName());
      for (StringAttr name : names)
        op->removeDiscardableAttr(name);
    });
  }
};

} // namespace
