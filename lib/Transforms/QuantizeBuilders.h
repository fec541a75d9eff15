//===- QuantizeBuilders.h - the IR --mp-quantize builds ---------*- C++ -*-===//
//
// The rewrite side of --mp-quantize: activations rounded to int8, weights
// quantized per channel (in IR, or folded from constants), named ops rebuilt
// with i8 operands, casts. Private to lib/Transforms (Quantize.cpp, and the
// QAT passes).
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_TRANSFORMS_QUANTIZEBUILDERS_H
#define MP_LIB_TRANSFORMS_QUANTIZEBUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <utility>
#include <vector>

namespace mlir {
namespace mp {
namespace quantize {

/// linalg.yield of one value.
void yieldValue(OpBuilder &b, Location loc, Value value);

/// `n` parallel iterators.
SmallVector<utils::IteratorType> parallel(unsigned n);

/// An empty tensor of a static `shape`.
Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                Type element);

/// An f32 constant.
Value f32Constant(OpBuilder &b, Location loc, double v);

/// round-to-nearest-even(x), clamped to [lo, hi] (in f32).
Value roundClamp(OpBuilder &b, Location loc, Value x, double lo, double hi);

/// q = clamp(round(x * invScale), -127, 127) as i8, elementwise; invScale
/// is an f32 scalar (a constant, or computed at run time).
Value quantizeActivation(OpBuilder &b, Location loc, Value x, Value invScale);

/// max |x| over all of the float tensor x, in f32, as a rank-0 tensor (the
/// reduction's result).
linalg::GenericOp absMaxReduction(OpBuilder &b, Location loc, Value x);

/// mode=int8-dynamic: x's scale computed in the IR on every call, max |x| /
/// 127 (1 for an all-zero tensor), as an f32 scalar.
Value dynamicActivationScale(OpBuilder &b, Location loc, Value x);

/// Per-channel (or per-tensor, broadcast to every channel) symmetric int8
/// weights in IR: returns (i8 weights, f32 scales of shape [channels]).
std::pair<Value, Value> quantizeWeightInIR(OpBuilder &b, Location loc, Value w,
                                           unsigned channelDim,
                                           bool perChannel);

/// A constant weight quantized at compile time, with the exact relative RMS
/// error of the quantization.
struct ConstantWeight {
  std::vector<int8_t> q;
  std::vector<float> scales;
  double error = 0;
};

/// Quantizes a constant weight along `channelDim` (one scale per channel,
/// or one for all).
ConstantWeight quantizeConstant(DenseElementsAttr attr, unsigned channelDim,
                                bool perChannel);

/// Rebuilds a named linalg op with new operands and result type; the body
/// follows from the operand types (extsi/muli/addi for i8 -> i32).
Operation *rebuildNamed(OpBuilder &b, linalg::LinalgOp op, ValueRange operands,
                        Type resultType);

/// Elementwise cast of a float tensor to `element`.
Value castTensor(OpBuilder &b, Location loc, Value x, Type element);

/// A linalg.matmul whose B operand is indexed (n, k): what PyTorch's
/// nn.Linear exports (x * W^T with W stored out_features x in_features).
bool isTransposedBMatmul(Operation *op);

/// `init` is a linalg.fill of zero.
bool isZeroFill(Value init);

/// The output-channel dimensions of a contraction the int8 rewrite handles:
/// its weight's (operand B) and its result's.
struct ChannelDims {
  unsigned weight, result;
};

/// linalg.matmul, plain (B is k x n) or transposed-B (n x k);
/// linalg.batch_matmul, plain (B is batch x k x n, each n one channel across
/// the batch); linalg.conv_2d_nchw_fchw (F). Failure for other ops and
/// layouts.
FailureOr<ChannelDims> int8ChannelDims(Operation *op);

} // namespace quantize
} // namespace mp
} // namespace mlir

#endif // MP_LIB_TRANSFORMS_QUANTIZEBUILDERS_H
