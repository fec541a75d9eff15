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

/// `flags` (a rank-0 i1 tensor; a fresh false one when null) or'ed with
/// whether `transform` (of element type `resultElementType`) of any element
/// of the float tensor `input` is inf or nan. Chaining the checks of all
/// gradients through one tensor leaves a single flag for the host to read
/// (on a GPU, one device-to-host copy and wait instead of one a gradient).
Value orNonFinite(OpBuilder &b, Location loc, Value flags, Value input,
                  Type resultElementType,
                  function_ref<Value(OpBuilder &, Location, Value)> transform) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = type.getRank();
  if (!flags) {
    Value falseValue = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
    Value empty =
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getI1Type());
    flags = linalg::FillOp::create(b, loc, ValueRange{falseValue},
                                   ValueRange{empty})
                .getResult(0);
  }
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  auto eltType = cast<FloatType>(resultElementType);
  Value inf = arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(eltType, APFloat::getInf(eltType.getFloatSemantics())));
  auto reduce = linalg::GenericOp::create(
      b, loc, flags.getType(), ValueRange{input}, ValueRange{flags}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value magnitude =
            math::AbsFOp::create(nb, nloc, transform(nb, nloc, args[0]));
        // "uge" is true when unordered (nan) or |x| >= inf (inf).
        Value nonFinite = arith::CmpFOp::create(
            nb, nloc, arith::CmpFPredicate::UGE, magnitude, inf);
        linalg::YieldOp::create(
            nb, nloc,
            arith::OrIOp::create(nb, nloc, args[1], nonFinite).getResult());
      });
  return reduce.getResult(0);
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
    SmallVector<Value> results;
    Value flags;
    for (auto [grad, resultType] :
         llvm::zip(adaptor.getGrads(), op.getUnscaled().getTypes())) {
      Type resultElt = cast<RankedTensorType>(resultType).getElementType();
      // Unscale in FP32 at least, whatever the gradient's type.
      Type computeType = resultElt.getIntOrFloatBitWidth() > 32
                             ? resultElt
                             : Type(rewriter.getF32Type());
      Value inverse =
          convertFloatScalar(rewriter, loc, inverseScale, computeType);
      auto unscale = [&](OpBuilder &b, Location l, Value x) {
        Value wide = convertFloatScalar(b, l, x, computeType);
        Value product = arith::MulFOp::create(b, l, wide, inverse);
        return convertFloatScalar(b, l, product, resultElt);
      };
      Value unscaled = mapElements(rewriter, loc, grad, resultElt, unscale);
      // Check the result (an unscaled value can still overflow its type),
      // recomputed from the gradient: the unscaled tensor then has one
      // reader, the optimizer's update, and is fused into it instead of
      // being held as a copy of every gradient.
      flags = orNonFinite(rewriter, loc, flags, grad, resultElt, unscale);
      results.push_back(unscaled);
    }
    // The verifier guarantees at least one gradient, hence one check.
    results.push_back(
        tensor::ExtractOp::create(rewriter, loc, flags, ValueRange{}));
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

struct ObserveLowering : OpConversionPattern<ObserveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ObserveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
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
                 ObserveLowering>(context);
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
