//===- QuantizeBuilders.cpp - the IR --mp-quantize builds -----------------===//

#include "QuantizeBuilders.h"

#include "mp/Support/IRUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace mlir {
namespace mp {
namespace quantize {

void yieldValue(OpBuilder &b, Location loc, Value value) {
  linalg::YieldOp::create(b, loc, ValueRange{value});
}

SmallVector<utils::IteratorType> parallel(unsigned n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

Value f32Constant(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

/// round-to-nearest-even(x), clamped to [lo, hi] (in f32).
Value roundClamp(OpBuilder &b, Location loc, Value x, double lo, double hi) {
  Value r = math::RoundEvenOp::create(b, loc, x);
  r = arith::MaximumFOp::create(b, loc, r, f32Constant(b, loc, lo));
  return arith::MinimumFOp::create(b, loc, r, f32Constant(b, loc, hi));
}

/// q = clamp(round(x * invScale), -127, 127) as i8, elementwise; invScale
/// is an f32 scalar (a constant, or computed at run time).
Value quantizeActivation(OpBuilder &b, Location loc, Value x, Value invScale) {
  auto type = cast<RankedTensorType>(x.getType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type.clone(b.getI8Type())}, ValueRange{x},
             ValueRange{emptyLike(b, loc, type.getShape(), b.getI8Type())},
             ArrayRef<AffineMap>{id, id}, parallel(type.getRank()),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value scaled = arith::MulFOp::create(nb, nl, args[0], invScale);
               Value q = roundClamp(nb, nl, scaled, -127, 127);
               yieldValue(nb, nl,
                          arith::FPToSIOp::create(nb, nl, nb.getI8Type(), q));
             })
      .getResult(0);
}

linalg::GenericOp absMaxReduction(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  Type f32 = b.getF32Type();
  Value zero = f32Constant(b, loc, 0.0);
  Value init = linalg::FillOp::create(b, loc, zero, emptyLike(b, loc, {}, f32))
                   .getResult(0);
  SmallVector<utils::IteratorType> reduction(rank,
                                             utils::IteratorType::reduction);
  return linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{x}, ValueRange{init},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(rank),
                          AffineMap::get(rank, 0, {}, b.getContext())},
      reduction, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value v = args[0];
        if (!v.getType().isF32())
          v = arith::ExtFOp::create(nb, nl, nb.getF32Type(), v);
        Value a = math::AbsFOp::create(nb, nl, v);
        yieldValue(nb, nl, arith::MaximumFOp::create(nb, nl, a, args[1]));
      });
}

Value dynamicActivationScale(OpBuilder &b, Location loc, Value x) {
  Value zero = f32Constant(b, loc, 0.0);
  Value max = tensor::ExtractOp::create(
      b, loc, absMaxReduction(b, loc, x).getResult(0), ValueRange{});
  // An all-zero tensor keeps scale 1 (its values quantize to 0 either way).
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, max, zero);
  Value scale = arith::DivFOp::create(b, loc, max, f32Constant(b, loc, 127.0));
  return arith::SelectOp::create(b, loc, positive, scale,
                                 f32Constant(b, loc, 1.0));
}

/// Per-channel (or per-tensor, broadcast to every channel) symmetric int8
/// weights in IR: returns (i8 weights, f32 scales of shape [channels]).
std::pair<Value, Value> quantizeWeightInIR(OpBuilder &b, Location loc, Value w,
                                           unsigned channelDim,
                                           bool perChannel) {
  auto type = cast<RankedTensorType>(w.getType());
  unsigned rank = type.getRank();
  int64_t channels = type.getDimSize(channelDim);
  Type f32 = b.getF32Type();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap channel =
      AffineMap::get(rank, 0, b.getAffineDimExpr(channelDim), b.getContext());

  // max |w| per channel (or over everything).
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  if (perChannel)
    iterators[channelDim] = utils::IteratorType::parallel;
  SmallVector<int64_t> maxShape;
  if (perChannel)
    maxShape.push_back(channels);
  Value zero = f32Constant(b, loc, 0.0);
  Value maxInit =
      linalg::FillOp::create(b, loc, zero, emptyLike(b, loc, maxShape, f32))
          .getResult(0);
  AffineMap maxMap =
      perChannel ? channel : AffineMap::get(rank, 0, {}, b.getContext());
  Value absMax =
      linalg::GenericOp::create(
          b, loc, TypeRange{maxInit.getType()}, ValueRange{w},
          ValueRange{maxInit}, ArrayRef<AffineMap>{id, maxMap}, iterators,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value a = math::AbsFOp::create(nb, nl, args[0]);
            yieldValue(nb, nl, arith::MaximumFOp::create(nb, nl, a, args[1]));
          })
          .getResult(0);

  // scale[c] = max / 127 (1 for an all-zero channel, which stays zero).
  AffineMap one = AffineMap::get(1, 0, b.getAffineDimExpr(0), b.getContext());
  AffineMap fromMax =
      perChannel ? one : AffineMap::get(1, 0, {}, b.getContext());
  Value scales =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get({channels}, f32)},
          ValueRange{absMax}, ValueRange{emptyLike(b, loc, {channels}, f32)},
          ArrayRef<AffineMap>{fromMax, one}, parallel(1),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value s = arith::DivFOp::create(nb, nl, args[0],
                                            f32Constant(nb, nl, 127.0));
            Value isZero =
                arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                      args[0], f32Constant(nb, nl, 0.0));
            yieldValue(nb, nl,
                       arith::SelectOp::create(nb, nl, isZero,
                                               f32Constant(nb, nl, 1.0), s));
          })
          .getResult(0);

  Value q =
      linalg::GenericOp::create(
          b, loc, TypeRange{type.clone(b.getI8Type())}, ValueRange{w, scales},
          ValueRange{emptyLike(b, loc, type.getShape(), b.getI8Type())},
          ArrayRef<AffineMap>{id, channel, id}, parallel(rank),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value scaled = arith::DivFOp::create(nb, nl, args[0], args[1]);
            Value r = roundClamp(nb, nl, scaled, -127, 127);
            yieldValue(nb, nl,
                       arith::FPToSIOp::create(nb, nl, nb.getI8Type(), r));
          })
          .getResult(0);
  return {q, scales};
}

ConstantWeight quantizeConstant(DenseElementsAttr attr, unsigned channelDim,
                                bool perChannel) {
  auto type = cast<RankedTensorType>(attr.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t channels = shape[channelDim];
  int64_t inner = 1;
  for (unsigned d = channelDim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  std::vector<float> values;
  for (APFloat v : attr.getValues<APFloat>())
    values.push_back(v.convertToFloat());
  auto channelOf = [&](size_t i) { return (i / inner) % channels; };
  std::vector<float> absMax(channels, 0.0f);
  for (size_t i = 0; i < values.size(); ++i) {
    float &m = absMax[perChannel ? channelOf(i) : 0];
    m = std::max(m, std::fabs(values[i]));
  }
  if (!perChannel)
    std::fill(absMax.begin(), absMax.end(), absMax[0]);
  ConstantWeight result;
  result.scales.resize(channels);
  for (int64_t c = 0; c < channels; ++c)
    result.scales[c] = absMax[c] == 0 ? 1.0f : absMax[c] / 127.0f;
  result.q.resize(values.size());
  double noise = 0, signal = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    float s = result.scales[channelOf(i)];
    float r = std::nearbyint(values[i] / s);
    r = std::min(127.0f, std::max(-127.0f, r));
    result.q[i] = static_cast<int8_t>(r);
    double e = values[i] - r * s;
    noise += e * e;
    signal += double(values[i]) * values[i];
  }
  result.error = signal > 0 ? std::sqrt(noise / signal) : 0.0;
  return result;
}

/// Rebuilds a named linalg op with new operands and result type; the body
/// follows from the operand types (extsi/muli/addi for i8 -> i32).
Operation *rebuildNamed(OpBuilder &b, linalg::LinalgOp op, ValueRange operands,
                        Type resultType) {
  Operation *clone = b.clone(*op.getOperation());
  clone->setOperands(operands);
  clone->getResult(0).setType(resultType);
  rebuildNamedLinalgBody(b, clone);
  return clone;
}

/// Elementwise cast of a float tensor to `element`.
Value castTensor(OpBuilder &b, Location loc, Value x, Type element) {
  auto type = cast<RankedTensorType>(x.getType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type.clone(element)}, ValueRange{x},
             ValueRange{emptyLike(b, loc, type.getShape(), element)},
             ArrayRef<AffineMap>{id, id}, parallel(type.getRank()),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               yieldValue(nb, nl,
                          arith::TruncFOp::create(nb, nl, element, args[0]));
             })
      .getResult(0);
}

/// A linalg.matmul whose B operand is indexed (n, k): what PyTorch's
/// nn.Linear exports (x * W^T with W stored out_features x in_features).
bool isTransposedBMatmul(Operation *op) {
  auto matmul = dyn_cast<linalg::MatmulOp>(op);
  if (!matmul || !matmul.hasUserDefinedMaps())
    return false;
  MLIRContext *context = op->getContext();
  AffineExpr m, n, k;
  bindDims(context, m, n, k);
  SmallVector<AffineMap> expected = {AffineMap::get(3, 0, {m, k}, context),
                                     AffineMap::get(3, 0, {n, k}, context),
                                     AffineMap::get(3, 0, {m, n}, context)};
  return matmul.getIndexingMapsArray() == expected;
}

FailureOr<ChannelDims> int8ChannelDims(Operation *op) {
  if (isa<linalg::Conv2DNchwFchwOp>(op))
    return ChannelDims{0, 1};
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op)) {
    if (!matmul.hasUserDefinedMaps())
      return ChannelDims{1, 1};
    if (isTransposedBMatmul(op))
      return ChannelDims{0, 1};
    return failure();
  }
  if (auto batched = dyn_cast<linalg::BatchMatmulOp>(op))
    if (!batched.hasUserDefinedMaps())
      return ChannelDims{2, 2};
  return failure();
}

bool isZeroFill(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  return matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
         matchPattern(fill.getInputs()[0], m_Zero());
}

} // namespace quantize
} // namespace mp
} // namespace mlir
