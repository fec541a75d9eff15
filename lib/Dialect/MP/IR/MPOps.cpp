//===- MPOps.cpp - mp op verifiers and folders ----------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace mlir;
using namespace mlir::mp;

#define GET_OP_CLASSES
#include "mp/Dialect/MP/IR/MPOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Loss-scale state machine
//===----------------------------------------------------------------------===//

LossScaleState mlir::mp::updateLossScale(LossScaleState state, bool foundInf,
                                         const LossScaleParams &params) {
  if (foundInf)
    return {std::max(state.scale * params.backoffFactor, params.minScale), 0};
  int64_t cleanSteps = state.growthTracker + 1;
  if (cleanSteps >= params.growthInterval)
    return {std::min(state.scale * params.growthFactor, params.maxScale), 0};
  return {state.scale, cleanSteps};
}

/// The largest power of two at most `value` (>= 0): `value` with its
/// mantissa cleared (inf stays inf). The lowering of mp.adapt_scale does
/// the same on the bits.
static float powerOfTwoAtMost(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits &= 0xFF800000u;
  float power;
  std::memcpy(&power, &bits, sizeof(power));
  return power;
}

float mlir::mp::adaptiveLossScaleTarget(float scale, float amax,
                                        const AdaptiveLossScaleParams &params) {
  if (!(amax > 0.0f))
    return scale;
  float bound = scale / amax * (params.limit / params.margin);
  return std::min(std::max(powerOfTwoAtMost(bound), params.minScale),
                  params.maxScale);
}

LossScaleState
mlir::mp::updateAdaptiveLossScale(LossScaleState state, bool foundInf,
                                  float amax,
                                  const AdaptiveLossScaleParams &params) {
  if (foundInf)
    return {std::max(state.scale * params.backoffFactor, params.minScale),
            -params.growthInterval};
  float target = adaptiveLossScaleTarget(state.scale, amax, params);
  // Cooling down after an overflow: the scale may fall, not grow.
  if (state.growthTracker < 0)
    return {std::min(target, state.scale), state.growthTracker + 1};
  // Growth: by one power of two a step at most, so that one step with
  // unusually small gradients does not raise the scale far for the next.
  if (target >= state.scale)
    return {std::min(target, powerOfTwoAtMost(state.scale * 2.0f)), 0};
  // Lower only when `hysteresis` clean steps in a row asked for less.
  int64_t below = state.growthTracker + 1;
  if (below >= params.hysteresis)
    return {target, 0};
  return {state.scale, below};
}

//===----------------------------------------------------------------------===//
// ScaleLossOp
//===----------------------------------------------------------------------===//

OpFoldResult ScaleLossOp::fold(FoldAdaptor adaptor) {
  // Scaling by exactly one is the identity (static scaling with scale 1).
  if (auto scale = dyn_cast_if_present<FloatAttr>(adaptor.getScale()))
    if (scale.getValue().isExactlyValue(1.0))
      return getLoss();
  return {};
}

//===----------------------------------------------------------------------===//
// UnscaleOp
//===----------------------------------------------------------------------===//

LogicalResult UnscaleOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (getGrads().size() != getUnscaled().size())
    return emitOpError("has ")
           << getGrads().size() << " gradients but " << getUnscaled().size()
           << " unscaled results; they must correspond one to one";
  for (auto [index, pair] : llvm::enumerate(
           llvm::zip(getGrads().getTypes(), getUnscaled().getTypes()))) {
    auto gradType = cast<RankedTensorType>(std::get<0>(pair));
    auto resultType = cast<RankedTensorType>(std::get<1>(pair));
    if (gradType.getShape() != resultType.getShape())
      return emitOpError("result #") << index << " has shape of " << resultType
                                     << " but its gradient is " << gradType;
    Type gradElt = gradType.getElementType();
    Type resultElt = resultType.getElementType();
    bool widensToFp32OrFp64 =
        (resultElt.isF32() || resultElt.isF64()) &&
        resultElt.getIntOrFloatBitWidth() >= gradElt.getIntOrFloatBitWidth();
    if (resultElt != gradElt && !widensToFp32OrFp64)
      return emitOpError("result #")
             << index << " has element type " << resultElt
             << "; it must be the gradient's (" << gradElt
             << ") or a wider f32/f64";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// UpdateScaleOp
//===----------------------------------------------------------------------===//

/// Formats a float the way a user wrote it ("1.5", not "1.500000e+00").
static std::string formatFloat(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

static LossScaleParams getParams(UpdateScaleOp op) {
  LossScaleParams params;
  params.growthFactor = op.getGrowthFactor().convertToFloat();
  params.backoffFactor = op.getBackoffFactor().convertToFloat();
  params.growthInterval = op.getGrowthInterval();
  params.minScale = op.getMinScale().convertToFloat();
  params.maxScale = op.getMaxScale().convertToFloat();
  return params;
}

/// What dynamic and adaptive scaling share: the backoff on inf/nan, the
/// growth interval and the scale's range.
template <typename Params>
static LogicalResult verifyBackoffAndRange(Operation *op,
                                           const Params &params) {
  if (!(params.backoffFactor > 0.0f && params.backoffFactor < 1.0f))
    return op->emitOpError("backoff_factor must lie in (0, 1), got ")
           << formatFloat(params.backoffFactor);
  if (params.growthInterval < 1)
    return op->emitOpError("growth_interval must be at least 1, got ")
           << params.growthInterval;
  if (!(params.minScale > 0.0f) || std::isinf(params.maxScale) ||
      !(params.minScale <= params.maxScale))
    return op->emitOpError("needs 0 < min_scale <= max_scale < inf, got "
                           "min_scale = ")
           << formatFloat(params.minScale)
           << ", max_scale = " << formatFloat(params.maxScale);
  return success();
}

LogicalResult UpdateScaleOp::verify() {
  LossScaleParams params = getParams(*this);
  if (!(params.growthFactor > 1.0f) || std::isinf(params.growthFactor))
    return emitOpError("growth_factor must be finite and greater than 1, got ")
           << formatFloat(params.growthFactor);
  if (failed(verifyBackoffAndRange(*this, params)))
    return failure();
  unsigned trackerWidth = getGrowthTracker().getType().getIntOrFloatBitWidth();
  if (trackerWidth < 64 &&
      params.growthInterval > (int64_t(1) << (trackerWidth - 1)) - 1)
    return emitOpError("growth_interval ")
           << params.growthInterval << " does not fit the i" << trackerWidth
           << " growth tracker";
  return success();
}

LogicalResult UpdateScaleOp::fold(FoldAdaptor adaptor,
                                  SmallVectorImpl<OpFoldResult> &results) {
  auto scale = dyn_cast_if_present<FloatAttr>(adaptor.getScale());
  auto tracker = dyn_cast_if_present<IntegerAttr>(adaptor.getGrowthTracker());
  auto foundInf = dyn_cast_if_present<IntegerAttr>(adaptor.getFoundInf());
  if (!scale || !tracker || !foundInf)
    return failure();
  LossScaleState next = updateLossScale(
      {static_cast<float>(scale.getValueAsDouble()), tracker.getInt()},
      foundInf.getValue().getBoolValue(), getParams(*this));
  Builder builder(getContext());
  results.push_back(builder.getF32FloatAttr(next.scale));
  results.push_back(
      builder.getIntegerAttr(getGrowthTracker().getType(), next.growthTracker));
  return success();
}

//===----------------------------------------------------------------------===//
// AdaptScaleOp
//===----------------------------------------------------------------------===//

static AdaptiveLossScaleParams getParams(AdaptScaleOp op) {
  AdaptiveLossScaleParams params(op.getMargin().convertToFloat(),
                                 op.getHysteresis());
  params.backoffFactor = op.getBackoffFactor().convertToFloat();
  params.growthInterval = op.getGrowthInterval();
  params.minScale = op.getMinScale().convertToFloat();
  params.maxScale = op.getMaxScale().convertToFloat();
  params.limit = op.getLimit().convertToFloat();
  return params;
}

LogicalResult AdaptScaleOp::verify() {
  AdaptiveLossScaleParams params = getParams(*this);
  if (!(params.margin >= 1.0f) || std::isinf(params.margin))
    return emitOpError("margin must be finite and at least 1, got ")
           << formatFloat(params.margin);
  if (params.hysteresis < 1)
    return emitOpError("hysteresis must be at least 1, got ")
           << params.hysteresis;
  if (failed(verifyBackoffAndRange(*this, params)))
    return failure();
  if (!(params.limit > 0.0f) || std::isinf(params.limit))
    return emitOpError("limit must be finite and positive, got ")
           << formatFloat(params.limit);
  unsigned trackerWidth = getGrowthTracker().getType().getIntOrFloatBitWidth();
  int64_t trackerMax =
      trackerWidth < 64 ? (int64_t(1) << (trackerWidth - 1)) - 1 : INT64_MAX;
  if (params.growthInterval > trackerMax || params.hysteresis > trackerMax)
    return emitOpError("growth_interval ")
           << params.growthInterval << " and hysteresis " << params.hysteresis
           << " must fit the i" << trackerWidth << " growth tracker";
  return success();
}

LogicalResult AdaptScaleOp::fold(FoldAdaptor adaptor,
                                 SmallVectorImpl<OpFoldResult> &results) {
  auto scale = dyn_cast_if_present<FloatAttr>(adaptor.getScale());
  auto tracker = dyn_cast_if_present<IntegerAttr>(adaptor.getGrowthTracker());
  auto foundInf = dyn_cast_if_present<IntegerAttr>(adaptor.getFoundInf());
  auto amax = dyn_cast_if_present<FloatAttr>(adaptor.getAmax());
  if (!scale || !tracker || !foundInf || !amax)
    return failure();
  LossScaleState next = updateAdaptiveLossScale(
      {static_cast<float>(scale.getValueAsDouble()), tracker.getInt()},
      foundInf.getValue().getBoolValue(),
      static_cast<float>(amax.getValueAsDouble()), getParams(*this));
  Builder builder(getContext());
  results.push_back(builder.getF32FloatAttr(next.scale));
  results.push_back(
      builder.getIntegerAttr(getGrowthTracker().getType(), next.growthTracker));
  return success();
}

//===----------------------------------------------------------------------===//
// ObserveOp
//===----------------------------------------------------------------------===//

LogicalResult ObserveOp::verify() {
  if (getId().empty())
    return emitOpError("needs a non-empty probe id");
  return success();
}

void ObserveOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // The probe records statistics of its input in the runtime.
  effects.emplace_back(MemoryEffects::Read::get());
  effects.emplace_back(MemoryEffects::Write::get());
}

//===----------------------------------------------------------------------===//
// Fake quantization
//===----------------------------------------------------------------------===//

/// `scale` fits `input`: rank 0 without `axis`, else 1-D of the size of
/// `input`'s dimension `axis`.
static LogicalResult verifyScaleShape(Operation *op, RankedTensorType input,
                                      RankedTensorType scale,
                                      std::optional<int64_t> axis) {
  if (!axis) {
    if (scale.getRank() != 0)
      return op->emitOpError("needs a rank-0 scale without 'axis', got ")
             << scale;
    return success();
  }
  if (*axis < 0 || *axis >= input.getRank())
    return op->emitOpError("axis ")
           << *axis << " is out of range for " << input;
  if (scale.getRank() != 1 || scale.getDimSize(0) != input.getDimSize(*axis))
    return op->emitOpError("needs a 1-D scale of dimension ")
           << *axis << "'s size " << input.getDimSize(*axis) << ", got "
           << scale;
  return success();
}

LogicalResult QuantScaleOp::verify() {
  if (getObserver() && (getAxis() || getObserver()->empty()))
    return emitOpError("an observer is per tensor and needs a non-empty name");
  return verifyScaleShape(*this, getInput().getType(), getScale().getType(),
                          getAxis());
}

LogicalResult FakeQuantOp::verify() {
  return verifyScaleShape(*this, getInput().getType(), getScale().getType(),
                          getAxis());
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError() << "ratio must be in [0, 1), got " << ratio;
  if (IntegerAttr stream = getStreamAttr(); stream && stream.getInt() < 0)
    return emitOpError() << "stream must be non-negative, got "
                         << stream.getInt();
  return success();
}
