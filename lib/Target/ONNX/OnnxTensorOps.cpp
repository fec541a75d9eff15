//===- OnnxTensorOps.cpp - ONNX shape and data-movement operators --------===//
//
// Constants, shapes, reshapes, transposes, concatenation, slicing, gathers,
// padding, broadcasting and tiling; and the evaluation of integer shape
// computations on constants (foldIntegerNode), which is what lets Reshape,
// Expand or Slice take shapes an exporter computed with Shape and Gather.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/AffineExpr.h"

#include <numeric>

using namespace mlir;

namespace mp::onnx_import {
namespace {

SmallVector<TypedValue> one(Value v, DType t) { return {{v, t}}; }

Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return constantOf(b, loc, DenseElementsAttr::get(type, values));
}

// -- integer tensors on the host (folding) ------------------------------------------

struct IntTensor {
  SmallVector<int64_t> shape;
  SmallVector<int64_t> data;
};

std::optional<IntTensor> intConstant(NodeContext &ctx, unsigned i) {
  std::optional<DenseElementsAttr> c = ctx.constant(i);
  if (!c || !llvm::isa<IntegerType>(c->getElementType()) ||
      c->getElementType().isInteger(1) || c->getNumElements() > 4096)
    return std::nullopt;
  IntTensor t;
  t.shape.assign(c->getType().getShape().begin(),
                 c->getType().getShape().end());
  for (const APInt &v : c->getValues<APInt>())
    t.data.push_back(v.getSExtValue());
  return t;
}

/// The index into a tensor of `shape` that broadcasts to `outShape`, for
/// the multi-index `idx` of the output.
int64_t broadcastOffset(ArrayRef<int64_t> shape, ArrayRef<int64_t> outShape,
                        ArrayRef<int64_t> idx) {
  int64_t offset = 0, lead = outShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    offset = offset * shape[i] + (shape[i] == 1 ? 0 : idx[lead + i]);
  return offset;
}

SmallVector<int64_t> unflatten(int64_t linear, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> idx(shape.size());
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    idx[i] = shape[i] ? linear % shape[i] : 0;
    linear = shape[i] ? linear / shape[i] : 0;
  }
  return idx;
}

Results folded(NodeContext &ctx, const IntTensor &t, DType dtype) {
  Type elem = elementType(ctx.b.getContext(), dtype);
  auto type = RankedTensorType::get(t.shape, elem);
  SmallVector<APInt> values;
  for (int64_t v : t.data)
    values.push_back(APInt(elem.getIntOrFloatBitWidth(), v, /*isSigned=*/true,
                           /*implicitTrunc=*/true));
  return one(constantOf(ctx.b, ctx.loc, DenseElementsAttr::get(type, values)),
             dtype);
}

/// Normalized Slice parameters for one axis.
struct SliceAxis {
  int64_t start, step, size;
};

SliceAxis sliceAxis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
  int64_t size = step > 0 ? (end - start + step - 1) / step
                          : (start - end + (-step) - 1) / (-step);
  return {start, step, std::max<int64_t>(size, 0)};
}

} // namespace

Value normalizedIndex(OpBuilder &b, Location loc, Value raw, int64_t dim) {
  Value idx = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value isNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, idx, zero);
  Value wrapped = arith::AddIOp::create(
      b, loc, idx, arith::ConstantIndexOp::create(b, loc, dim));
  return arith::SelectOp::create(b, loc, isNeg, wrapped, idx);
}

Value clampedIndex(OpBuilder &b, Location loc, Value raw, int64_t dim) {
  Value idx = normalizedIndex(b, loc, raw, dim);
  idx = arith::MaxSIOp::create(b, loc, idx,
                               arith::ConstantIndexOp::create(b, loc, 0));
  return arith::MinSIOp::create(
      b, loc, idx,
      arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(dim - 1, 0)));
}

namespace {

/// A node folded on the host: its inputs as integer tensors and what the
/// fold makes of them.
struct IntFold {
  NodeContext &ctx;
  SmallVector<IntTensor> in; // empty tensors: optional inputs left out
  DType outType;             // the result's ONNX element type
  std::optional<IntTensor> out = std::nullopt; // left empty: not folded
};

/// Folds one operator. Declining leaves `out` empty, so that the op's own
/// import builds IR (and says why where the node is wrong); failure() only
/// for a node that is diagnosed here.
using IntFolder = LogicalResult (*)(IntFold &);

/// The row-major offset of the multi-index `idx` in a tensor of `shape`.
int64_t rowMajorOffset(ArrayRef<int64_t> shape, ArrayRef<int64_t> idx) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    offset = offset * shape[d] + idx[d];
  return offset;
}

/// `fn` of the inputs `which`, broadcast to one another; empty if their
/// shapes do not broadcast.
std::optional<IntTensor>
broadcastMap(ArrayRef<IntTensor> in, ArrayRef<unsigned> which,
             function_ref<int64_t(ArrayRef<int64_t>)> fn) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (unsigned i : which)
    shapes.push_back(in[i].shape);
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (failed(shape))
    return std::nullopt;
  IntTensor out{*shape, {}};
  for (int64_t k = 0, n = product(*shape); k < n; ++k) {
    SmallVector<int64_t> idx = unflatten(k, *shape), args;
    for (unsigned i : which)
      args.push_back(in[i].data[broadcastOffset(in[i].shape, *shape, idx)]);
    out.data.push_back(fn(args));
  }
  return out;
}

/// Add, Sub, Mul, Div, Max and Min of two broadcast inputs.
LogicalResult foldArithmetic(IntFold &f) {
  using BinaryFn = int64_t (*)(int64_t, int64_t);
  static const llvm::StringMap<BinaryFn> fns = {
      {"Add", [](int64_t x, int64_t y) { return x + y; }},
      {"Sub", [](int64_t x, int64_t y) { return x - y; }},
      {"Mul", [](int64_t x, int64_t y) { return x * y; }},
      // Truncates, as ONNX's integer Div.
      {"Div", [](int64_t x, int64_t y) { return x / y; }},
      {"Max", [](int64_t x, int64_t y) { return std::max(x, y); }},
      {"Min", [](int64_t x, int64_t y) { return std::min(x, y); }}};
  StringRef op = f.ctx.node.op_type();
  if (f.in.size() != 2 || (op == "Div" && llvm::is_contained(f.in[1].data, 0)))
    return success();
  BinaryFn fn = fns.lookup(op);
  f.out = broadcastMap(f.in, {0, 1},
                       [&](ArrayRef<int64_t> a) { return fn(a[0], a[1]); });
  return success();
}

LogicalResult foldNeg(IntFold &f) {
  f.out = broadcastMap(f.in, {0}, [](ArrayRef<int64_t> a) { return -a[0]; });
  return success();
}

LogicalResult foldEqual(IntFold &f) {
  f.out = broadcastMap(f.in, {0, 1}, [](ArrayRef<int64_t> a) -> int64_t {
    return a[0] == a[1];
  });
  f.outType = onnx::TensorProto::BOOL;
  return success();
}

LogicalResult foldWhere(IntFold &f) {
  f.out = broadcastMap(f.in, {0, 1, 2},
                       [](ArrayRef<int64_t> a) { return a[0] ? a[1] : a[2]; });
  return success();
}

LogicalResult foldIdentity(IntFold &f) {
  f.out = f.in[0];
  return success();
}

/// Casts between signed integer types and to BOOL (which keeps 0 and 1).
LogicalResult foldCast(IntFold &f) {
  DType to = f.ctx.getInt("to", 0);
  if (!elementType(f.ctx.b.getContext(), to) || isFloatDType(to) ||
      isUnsignedDType(to))
    return success();
  f.out = f.in[0];
  f.outType = to;
  if (isBoolDType(to))
    for (int64_t &v : f.out->data)
      v = v != 0;
  return success();
}

/// Concatenation of 1-D tensors (shape vectors).
LogicalResult foldConcat(IntFold &f) {
  if (f.in[0].shape.size() != 1)
    return success();
  IntTensor out{{0}, {}};
  for (const IntTensor &t : f.in) {
    if (t.shape.size() != 1)
      return success();
    out.data.append(t.data.begin(), t.data.end());
  }
  out.shape[0] = out.data.size();
  f.out = std::move(out);
  return success();
}

/// Gather along `axis`; an index out of range is an error of the node.
LogicalResult foldGather(IntFold &f) {
  const IntTensor &data = f.in[0], &indices = f.in[1];
  FailureOr<int64_t> axisOr =
      f.ctx.axis(f.ctx.getInt("axis", 0), data.shape.size());
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr, dim = data.shape[axis], q = indices.shape.size();
  SmallVector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  IntTensor out{shape, {}};
  for (int64_t k = 0, n = product(shape); k < n; ++k) {
    SmallVector<int64_t> idx = unflatten(k, shape);
    int64_t j = indices.data[rowMajorOffset(
        indices.shape, ArrayRef<int64_t>(idx).slice(axis, q))];
    if (j < 0)
      j += dim;
    if (j < 0 || j >= dim) {
      f.ctx.error() << "index " << j << " is out of range for size " << dim;
      return failure();
    }
    SmallVector<int64_t> src(idx.begin(), idx.begin() + axis);
    src.push_back(j);
    src.append(idx.begin() + axis + q, idx.end());
    out.data.push_back(data.data[rowMajorOffset(data.shape, src)]);
  }
  f.out = std::move(out);
  return success();
}

/// Whether a constant Slice's ends and (present) axes and steps have as
/// many entries as its starts.
bool sliceListsAgree(IntFold &f) {
  NodeContext &ctx = f.ctx;
  size_t k = f.in[1].data.size();
  bool axesAgree = !ctx.hasInput(3) || f.in[3].data.size() == k;
  bool stepsAgree = !ctx.hasInput(4) || f.in[4].data.size() == k;
  return f.in[2].data.size() == k && axesAgree && stepsAgree;
}

/// Sets the axis that entry `j` of a constant Slice names; false if the
/// entry is invalid (axis out of range, step 0).
bool applyConstantSliceEntry(IntFold &f, size_t j,
                             SmallVector<SliceAxis> &axes) {
  NodeContext &ctx = f.ctx;
  const IntTensor &data = f.in[0];
  int64_t rank = data.shape.size();
  int64_t axis = ctx.hasInput(3) ? f.in[3].data[j] : int64_t(j);
  if (axis < 0)
    axis += rank;
  int64_t step = ctx.hasInput(4) ? f.in[4].data[j] : 1;
  if (axis < 0 || axis >= rank || step == 0)
    return false;
  axes[axis] =
      sliceAxis(data.shape[axis], f.in[1].data[j], f.in[2].data[j], step);
  return true;
}

/// The axes a constant Slice (opset 10 on: starts, ends, axes and steps
/// are inputs) selects of its data, every axis of the data normalized;
/// empty if the inputs do not describe a valid slice.
std::optional<SmallVector<SliceAxis>> constantSliceAxes(IntFold &f) {
  if (f.ctx.opset < 10 || f.in.size() < 3 || !sliceListsAgree(f))
    return std::nullopt;
  const IntTensor &data = f.in[0];
  SmallVector<SliceAxis> axes;
  for (int64_t d = 0, rank = data.shape.size(); d < rank; ++d)
    axes.push_back({0, 1, data.shape[d]});
  for (size_t j = 0, k = f.in[1].data.size(); j < k; ++j)
    if (!applyConstantSliceEntry(f, j, axes))
      return std::nullopt;
  return axes;
}

/// Slice of any rank and axes: torch.onnx writes F.pad's pads as a reversed
/// 2-D slice of a constant.
LogicalResult foldSlice(IntFold &f) {
  std::optional<SmallVector<SliceAxis>> axes = constantSliceAxes(f);
  if (!axes)
    return success();
  const IntTensor &data = f.in[0];
  IntTensor out;
  for (const SliceAxis &a : *axes)
    out.shape.push_back(a.size);
  for (int64_t n = 0, e = product(out.shape); n < e; ++n) {
    SmallVector<int64_t> idx = unflatten(n, out.shape);
    for (size_t d = 0; d < idx.size(); ++d)
      idx[d] = (*axes)[d].start + idx[d] * (*axes)[d].step;
    out.data.push_back(data.data[rowMajorOffset(data.shape, idx)]);
  }
  f.out = std::move(out);
  return success();
}

LogicalResult foldTranspose(IntFold &f) {
  const IntTensor &data = f.in[0];
  int64_t rank = data.shape.size();
  SmallVector<int64_t> perm = f.ctx.getInts("perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if ((int64_t)sorted.size() != rank ||
      !llvm::equal(sorted, llvm::seq<int64_t>(0, rank)))
    return success(); // the op's own import says why
  IntTensor out;
  for (int64_t d : perm)
    out.shape.push_back(data.shape[d]);
  for (int64_t n = 0, e = product(out.shape); n < e; ++n) {
    SmallVector<int64_t> idx = unflatten(n, out.shape), src(rank);
    for (int64_t d = 0; d < rank; ++d)
      src[perm[d]] = idx[d];
    out.data.push_back(data.data[rowMajorOffset(data.shape, src)]);
  }
  f.out = std::move(out);
  return success();
}

LogicalResult foldRange(IntFold &f) {
  int64_t start = f.in[0].data[0], limit = f.in[1].data[0],
          delta = f.in[2].data[0];
  if (delta == 0)
    return success();
  int64_t n = std::max<int64_t>(
      0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
  IntTensor out{{n}, {}};
  for (int64_t i = 0; i < n; ++i)
    out.data.push_back(start + i * delta);
  f.out = std::move(out);
  return success();
}

/// The product of a shape vector (a flattened size), kept as a scalar.
LogicalResult foldReduceProd(IntFold &f) {
  if (f.ctx.has("axes") || f.in[0].shape.size() != 1 ||
      !f.ctx.getInt("keepdims", 1))
    return success();
  int64_t p = 1;
  for (int64_t v : f.in[0].data)
    p *= v;
  f.out = IntTensor{{}, {p}};
  return success();
}

/// Where's condition (BOOL) as an integer tensor, if it is a small constant.
std::optional<IntTensor> boolConstant(NodeContext &ctx, unsigned i) {
  std::optional<DenseElementsAttr> c = ctx.constant(i);
  if (!c || c->getNumElements() > 4096)
    return std::nullopt;
  IntTensor t;
  t.shape.assign(c->getType().getShape().begin(),
                 c->getType().getShape().end());
  for (bool v : c->getValues<bool>())
    t.data.push_back(v);
  return t;
}

/// The node's inputs as host integer tensors (empty ones for optional inputs
/// left out); std::nullopt unless every present input is a small constant.
std::optional<SmallVector<IntTensor>> constantInputs(NodeContext &ctx) {
  bool isWhere = ctx.node.op_type() == "Where";
  SmallVector<IntTensor> in;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) {
      in.push_back({});
      continue;
    }
    // Where's condition is BOOL; everything else must be integer constants.
    std::optional<IntTensor> t =
        isWhere && i == 0 ? boolConstant(ctx, i) : intConstant(ctx, i);
    if (!t)
      return std::nullopt;
    in.push_back(std::move(*t));
  }
  return in;
}

} // namespace

Results foldIntegerNode(NodeContext &ctx) {
  static const llvm::StringMap<IntFolder> folders = {
      {"Add", foldArithmetic},
      {"Sub", foldArithmetic},
      {"Mul", foldArithmetic},
      {"Div", foldArithmetic},
      {"Max", foldArithmetic},
      {"Min", foldArithmetic},
      {"Neg", foldNeg},
      {"Equal", foldEqual},
      {"Where", foldWhere},
      {"Identity", foldIdentity},
      {"Cast", foldCast},
      {"Concat", foldConcat},
      {"Gather", foldGather},
      {"Slice", foldSlice},
      {"Transpose", foldTranspose},
      {"Range", foldRange},
      {"ReduceProd", foldReduceProd}};
  StringRef op = ctx.node.op_type();
  IntFolder fold = folders.lookup(op);
  if (!fold || ctx.numInputs() == 0)
    return SmallVector<TypedValue>{};
  std::optional<SmallVector<IntTensor>> in = constantInputs(ctx);
  if (!in)
    return SmallVector<TypedValue>{};
  DType dtype = ctx.dtype(op == "Where" ? 1 : 0);
  if (isUnsignedDType(dtype))
    return SmallVector<TypedValue>{};
  IntFold f{ctx, std::move(*in), dtype};
  if (failed(fold(f)))
    return failure();
  if (!f.out)
    return SmallVector<TypedValue>{};
  return folded(ctx, *f.out, f.outType);
}

namespace {

// -- constants and shapes -----------------------------------------------------------

Results importConstant(NodeContext &ctx) {
  Builder &b = ctx.b;
  if (const onnx::AttributeProto *a = ctx.attr("value")) {
    FailureOr<DenseElementsAttr> v = tensorToAttr(a->t(), "", ctx.loc);
    if (failed(v))
      return failure();
    return one(constantOf(ctx.b, ctx.loc, *v), a->t().data_type());
  }
  auto f32 = [&](ArrayRef<int64_t> shape, ArrayRef<float> v) {
    return one(constantOf(ctx.b, ctx.loc,
                          DenseElementsAttr::get(
                              RankedTensorType::get(shape, b.getF32Type()), v)),
               onnx::TensorProto::FLOAT);
  };
  if (ctx.has("value_float"))
    return f32({}, {ctx.getFloat("value_float", 0)});
  if (ctx.has("value_floats")) {
    SmallVector<float> v = ctx.getFloats("value_floats");
    return f32({(int64_t)v.size()}, v);
  }
  if (ctx.has("value_int"))
    return one(i64Constant(ctx.b, ctx.loc, {}, {ctx.getInt("value_int", 0)}),
               onnx::TensorProto::INT64);
  if (ctx.has("value_ints")) {
    SmallVector<int64_t> v = ctx.getInts("value_ints");
    return one(i64Constant(ctx.b, ctx.loc, {(int64_t)v.size()}, v),
               onnx::TensorProto::INT64);
  }
  ctx.error() << "only 'value', 'value_float(s)' and 'value_int(s)' "
                 "constants are imported (sparse and string ones are not)";
  return failure();
}

Results importConstantOfShape(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> shape = ctx.constInts(0, "the shape");
  if (failed(shape))
    return failure();
  DType dtype = onnx::TensorProto::FLOAT;
  Attribute scalar = ctx.b.getF32FloatAttr(0);
  if (const onnx::AttributeProto *a = ctx.attr("value")) {
    FailureOr<DenseElementsAttr> v = tensorToAttr(a->t(), "", ctx.loc);
    if (failed(v))
      return failure();
    if (v->getNumElements() != 1) {
      ctx.error() << "'value' must hold one element";
      return failure();
    }
    dtype = a->t().data_type();
    scalar = *v->value_begin<Attribute>();
  }
  auto type = RankedTensorType::get(
      *shape, llvm::cast<TypedAttr>(scalar).getType());
  return one(constantOf(ctx.b, ctx.loc, DenseElementsAttr::get(type, scalar)),
             dtype);
}

Results importShape(NodeContext &ctx) {
  ArrayRef<int64_t> shape = ctx.shape(0);
  int64_t rank = shape.size();
  int64_t start = ctx.getInt("start", 0), end = ctx.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  SmallVector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  return one(i64Constant(ctx.b, ctx.loc, {(int64_t)dims.size()}, dims),
             onnx::TensorProto::INT64);
}

Results importSize(NodeContext &ctx) {
  return one(i64Constant(ctx.b, ctx.loc, {}, {ctx.type(0).getNumElements()}),
             onnx::TensorProto::INT64);
}

Results importIdentity(NodeContext &ctx) {
  SmallVector<TypedValue> out = {ctx.inputs[0]};
  if (ctx.node.op_type() == "Dropout") {
    // Inference: the identity. A training-mode dropout draws random masks.
    if (ctx.hasInput(2)) {
      // Training mode with ratio 0 keeps every element.
      std::optional<DenseElementsAttr> training = ctx.constant(2);
      std::optional<DenseElementsAttr> ratio = ctx.constant(1);
      bool zeroRatio = ratio && llvm::isa<FloatType>(ratio->getElementType()) &&
                       ratio->getValues<APFloat>()[0].isZero();
      if (!training || (*training->value_begin<bool>() && !zeroRatio)) {
        ctx.error() << "training_mode dropout (random masks) is not "
                       "imported; only inference dropout";
        return failure();
      }
    }
    if (ctx.hasOutput(1)) {
      auto type =
          RankedTensorType::get(ctx.shape(0), ctx.b.getI1Type());
      out.push_back({constantOf(ctx.b, ctx.loc,
                                DenseElementsAttr::get(type, true)),
                     onnx::TensorProto::BOOL});
    }
  }
  return out;
}

/// Applies a reshape to a constant without emitting ops, so shape
/// computations stay constant.
Value reshapeValue(NodeContext &ctx, ArrayRef<int64_t> shape) {
  if (std::optional<DenseElementsAttr> c = ctx.constant(0))
    return constantOf(ctx.b, ctx.loc,
                      c->reshape(RankedTensorType::get(
                          shape, c->getElementType())));
  return reshape(ctx.b, ctx.loc, ctx.input(0), shape);
}

/// Reshape's target shape as given: the "shape" attribute before opset 5,
/// the constant input 1 from it.
FailureOr<SmallVector<int64_t>> readReshapeTarget(NodeContext &ctx) {
  if (ctx.opset < 5)
    return ctx.getInts("shape");
  return ctx.constInts(1, "the shape");
}

/// Replaces the 0 entries of `target` that copy the input's dimension and
/// finds the -1 entry to infer (`inferred`, -1 if none) and the product of
/// the others (`known`).
LogicalResult scanReshapeTarget(NodeContext &ctx, SmallVector<int64_t> &target,
                                int64_t &known, int64_t &inferred) {
  ArrayRef<int64_t> in = ctx.shape(0);
  bool allowZero = ctx.getInt("allowzero", 0);
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= in.size()) {
        ctx.error() << "shape entry " << i << " is 0 (copy) but the input has "
                    << "rank " << in.size();
        return failure();
      }
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) {
        ctx.error() << "the shape has more than one -1";
        return failure();
      }
      inferred = i;
      continue;
    }
    if (target[i] < 0) {
      ctx.error() << "shape entry " << target[i] << " is invalid";
      return failure();
    }
    known *= target[i];
  }
  return success();
}

/// Sets the inferred (-1) entry so that the shape holds the input's
/// elements, or checks that it does where there is none.
LogicalResult inferReshapeEntry(NodeContext &ctx, SmallVector<int64_t> &target,
                                int64_t known, int64_t inferred) {
  int64_t count = ctx.type(0).getNumElements();
  if (inferred < 0) {
    if (known == count)
      return success();
    ctx.error() << "the shape holds " << known << " elements; the input has "
                << count;
    return failure();
  }
  if (known == 0 || count % known) {
    ctx.error() << "cannot infer the -1 of the shape for " << count
                << " elements";
    return failure();
  }
  target[inferred] = count / known;
  return success();
}

Results importReshape(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> target = readReshapeTarget(ctx);
  if (failed(target))
    return failure();
  int64_t known = 1, inferred = -1;
  if (failed(scanReshapeTarget(ctx, *target, known, inferred)) ||
      failed(inferReshapeEntry(ctx, *target, known, inferred)))
    return failure();
  return one(reshapeValue(ctx, *target), ctx.dtype(0));
}

Results importFlatten(NodeContext &ctx) {
  int64_t rank = ctx.rank(0);
  int64_t axis = ctx.getInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank) {
    ctx.error() << "axis " << ctx.getInt("axis", 1) << " is out of range";
    return failure();
  }
  ArrayRef<int64_t> s = ctx.shape(0);
  int64_t outer = product(s.take_front(axis)), inner = product(s.drop_front(axis));
  return one(reshapeValue(ctx, {outer, inner}), ctx.dtype(0));
}

FailureOr<SmallVector<int64_t>> axesOf(NodeContext &ctx, int64_t rank,
                                       bool fromInput) {
  FailureOr<SmallVector<int64_t>> given = ctx.axesAttrOrInput(fromInput);
  if (failed(given))
    return failure();
  SmallVector<int64_t> axes = *given;
  for (int64_t &a : axes) {
    FailureOr<int64_t> n = ctx.axis(a, rank);
    if (failed(n))
      return failure();
    a = *n;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    ctx.error() << "axes repeat";
    return failure();
  }
  return axes;
}

Results importSqueeze(NodeContext &ctx) {
  ArrayRef<int64_t> s = ctx.shape(0);
  FailureOr<SmallVector<int64_t>> axes =
      axesOf(ctx, s.size(), ctx.opset >= 13);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0, e = s.size(); i < e; ++i) {
    bool drop = axes->empty() ? s[i] == 1 : llvm::is_contained(*axes, i);
    if (drop && s[i] != 1) {
      ctx.error() << "dimension " << i << " has size " << s[i]
                  << " and cannot be squeezed";
      return failure();
    }
    if (!drop)
      shape.push_back(s[i]);
  }
  return one(reshapeValue(ctx, shape), ctx.dtype(0));
}

Results importUnsqueeze(NodeContext &ctx) {
  ArrayRef<int64_t> s = ctx.shape(0);
  size_t count = ctx.opset >= 13
                     ? (ctx.hasInput(1) ? ctx.type(1).getNumElements() : 0)
                     : ctx.getInts("axes").size();
  int64_t outRank = s.size() + count;
  FailureOr<SmallVector<int64_t>> axes = axesOf(ctx, outRank, ctx.opset >= 13);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0, j = 0; i < outRank; ++i)
    shape.push_back(llvm::is_contained(*axes, i) ? 1 : s[j++]);
  return one(reshapeValue(ctx, shape), ctx.dtype(0));
}

Results importTranspose(NodeContext &ctx) {
  int64_t rank = ctx.rank(0);
  SmallVector<int64_t> perm = ctx.getInts("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  for (int64_t i = 0; i < rank; ++i)
    if ((int64_t)sorted.size() != rank || sorted[i] != i) {
      ctx.error() << "perm is not a permutation of the input's " << rank
                  << " dimensions";
      return failure();
    }
  return one(transpose(ctx.b, ctx.loc, ctx.input(0), perm), ctx.dtype(0));
}

/// Concat's result shape; an error where an input's other dimensions differ
/// from input 0's.
FailureOr<SmallVector<int64_t>> concatShape(NodeContext &ctx, int64_t axis) {
  int64_t rank = ctx.rank(0);
  SmallVector<int64_t> shape(ctx.shape(0));
  shape[axis] = 0;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    ArrayRef<int64_t> s = ctx.shape(i);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && ((int64_t)s.size() != rank || s[d] != shape[d])) {
        ctx.error() << "input " << i << " has shape " << ctx.type(i)
                    << ", which does not concatenate along axis " << axis;
        return failure();
      }
    shape[axis] += s[axis];
  }
  return shape;
}

/// Each non-empty input zero-padded into its place along `axis` of the
/// result `shape` (an input that fills the result as it is).
SmallVector<Value> placedConcatParts(NodeContext &ctx, int64_t axis,
                                     ArrayRef<int64_t> shape) {
  int64_t rank = shape.size();
  Type elem = ctx.type(0).getElementType();
  SmallVector<Value> parts;
  int64_t offset = 0;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    ArrayRef<int64_t> s = ctx.shape(i);
    if (s[axis] == 0)
      continue;
    SmallVector<OpFoldResult> low(rank, ctx.b.getIndexAttr(0)),
        high(rank, ctx.b.getIndexAttr(0));
    low[axis] = ctx.b.getIndexAttr(offset);
    high[axis] = ctx.b.getIndexAttr(shape[axis] - offset - s[axis]);
    Value zero = scalarConstant(ctx.b, ctx.loc, elem, 0);
    parts.push_back(
        shape[axis] == s[axis]
            ? ctx.input(i)
            : tensor::PadOp::create(ctx.b, ctx.loc,
                                    RankedTensorType::get(shape, elem),
                                    ctx.input(i), low, high, zero)
                  .getResult());
    offset += s[axis];
  }
  return parts;
}

/// The sum of `parts` (or for bool, their disjunction): the concatenation
/// of the zero-padded parts.
Value sumOfParts(OpBuilder &b, Location loc, ValueRange parts, bool isFloat,
                 bool isBool) {
  Value acc = parts[0];
  for (Value v : parts.drop_front())
    acc = isFloat  ? arith::AddFOp::create(b, loc, acc, v).getResult()
          : isBool ? arith::OrIOp::create(b, loc, acc, v).getResult()
                   : arith::AddIOp::create(b, loc, acc, v).getResult();
  return acc;
}

Results importConcat(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", 0), ctx.rank(0));
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = concatShape(ctx, *axis);
  if (failed(shape))
    return failure();
  // Each operand zero-padded into place, then all added (exact but for the
  // sign of a zero), and
  // differentiable by --mp-autodiff (tensor.insert_slice is not).
  Type elem = ctx.type(0).getElementType();
  SmallVector<Value> parts = placedConcatParts(ctx, *axis, *shape);
  if (parts.empty())
    return one(emptyTensor(ctx.b, ctx.loc, *shape, elem), ctx.dtype(0));
  if (parts.size() == 1)
    return one(parts[0], ctx.dtype(0));
  bool isFloat = isFloatDType(ctx.dtype(0)), isBool = isBoolDType(ctx.dtype(0));
  Value result = elementwise(ctx.b, ctx.loc, parts, *shape, elem,
                             [&](OpBuilder &b, Location loc, ValueRange a) {
                               return sumOfParts(b, loc, a, isFloat, isBool);
                             });
  return one(result, ctx.dtype(0));
}

/// Whether a slice of every axis from 0 with step 1 keeps all of `type`.
bool keepsWholeInput(ArrayRef<SliceAxis> axes, RankedTensorType type,
                     ArrayRef<int64_t> shape) {
  bool plain = llvm::all_of(
      axes, [](const SliceAxis &a) { return a.start == 0 && a.step == 1; });
  return plain && type.getShape() == shape;
}

/// A dimension read at plain `d` must match the loop's size: a partial
/// slice from 0 with step 1 reads a copy with one zero in front at d + 1.
/// Returns that copy (or `input` where no axis needs it) and moves `plan`'s
/// starts to match.
Value padPartialSlicesFromZero(NodeContext &ctx, Value input,
                               SmallVector<SliceAxis> &plan) {
  auto type = llvm::cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> front(rank, 0);
  for (int64_t d = 0; d < rank; ++d)
    if (plan[d].start == 0 && plan[d].step == 1 &&
        plan[d].size != type.getDimSize(d)) {
      front[d] = 1;
      plan[d].start = 1;
    }
  if (!llvm::is_contained(front, 1))
    return input;
  SmallVector<OpFoldResult> low, high(rank, ctx.b.getIndexAttr(0));
  SmallVector<int64_t> padded(type.getShape());
  for (int64_t d = 0; d < rank; ++d) {
    low.push_back(ctx.b.getIndexAttr(front[d]));
    padded[d] += front[d];
  }
  return tensor::PadOp::create(
      ctx.b, ctx.loc, RankedTensorType::get(padded, type.getElementType()),
      input, low, high,
      scalarConstant(ctx.b, ctx.loc, type.getElementType(), 0));
}

/// A slice along axes with positive or negative steps: a linalg.generic
/// reading input[start + step * i] (a copy rather than a view, so that
/// --mp-autodiff differentiates it like any linalg op).
Value slice(NodeContext &ctx, Value input, ArrayRef<SliceAxis> axes) {
  auto type = llvm::cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  for (const SliceAxis &a : axes)
    shape.push_back(a.size);
  // An empty slice reads nothing (its offsets may lie past the end).
  if (llvm::is_contained(shape, 0))
    return emptyTensor(ctx.b, ctx.loc, shape, type.getElementType());
  if (keepsWholeInput(axes, type, shape))
    return input;
  MLIRContext *mctx = ctx.b.getContext();
  SmallVector<SliceAxis> plan(axes);
  input = padPartialSlicesFromZero(ctx, input, plan);
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    exprs.push_back(getAffineConstantExpr(plan[d].start, mctx) +
                    getAffineDimExpr(d, mctx) * plan[d].step);
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, exprs, mctx),
                                 AffineMap::getMultiDimIdentityMap(rank, mctx)};
  Value init = emptyTensor(ctx.b, ctx.loc, shape, type.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             ctx.b, ctx.loc, TypeRange{init.getType()}, ValueRange{input},
             ValueRange{init}, maps, iterators,
             [](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(b, loc, args[0]);
             })
      .getResult(0);
}

/// Slice's starts, ends, axes and steps as the node gives them (attributes
/// before opset 10, constant inputs from it); axes and steps may be empty.
struct SliceInputs {
  SmallVector<int64_t> starts, ends, axes, steps;
};

/// Reads constant input `i` into `out`.
LogicalResult readConstInts(NodeContext &ctx, unsigned i, StringRef what,
                            SmallVector<int64_t> &out) {
  FailureOr<SmallVector<int64_t>> v = ctx.constInts(i, what);
  if (failed(v))
    return failure();
  out = *v;
  return success();
}

FailureOr<SliceInputs> readSliceInputs(NodeContext &ctx) {
  SliceInputs in;
  if (ctx.opset < 10) {
    in.starts = ctx.getInts("starts");
    in.ends = ctx.getInts("ends");
    in.axes = ctx.getInts("axes");
    return in;
  }
  if (failed(readConstInts(ctx, 1, "starts", in.starts)) ||
      failed(readConstInts(ctx, 2, "ends", in.ends)))
    return failure();
  if (ctx.hasInput(3) && failed(readConstInts(ctx, 3, "axes", in.axes)))
    return failure();
  if (ctx.hasInput(4) && failed(readConstInts(ctx, 4, "steps", in.steps)))
    return failure();
  return in;
}

/// Fills in the default axes (0, 1, ...) and steps (1) and checks that the
/// four lists have one entry per sliced axis.
LogicalResult completeSliceInputs(NodeContext &ctx, SliceInputs &in) {
  size_t n = in.starts.size();
  if (in.axes.empty())
    for (size_t i = 0; i < n; ++i)
      in.axes.push_back(i);
  if (in.steps.empty())
    in.steps.assign(n, 1);
  if (in.ends.size() != n || in.axes.size() != n || in.steps.size() != n) {
    ctx.error() << "starts, ends, axes and steps differ in length";
    return failure();
  }
  return success();
}

/// Every axis of input 0 as Slice selects it.
FailureOr<SmallVector<SliceAxis>> slicePlan(NodeContext &ctx,
                                            const SliceInputs &in) {
  ArrayRef<int64_t> s = ctx.shape(0);
  int64_t rank = s.size();
  SmallVector<SliceAxis> plan;
  for (int64_t d = 0; d < rank; ++d)
    plan.push_back({0, 1, s[d]});
  for (size_t i = 0; i < in.starts.size(); ++i) {
    FailureOr<int64_t> a = ctx.axis(in.axes[i], rank);
    if (failed(a))
      return failure();
    if (in.steps[i] == 0) {
      ctx.error() << "a step is 0";
      return failure();
    }
    plan[*a] = sliceAxis(s[*a], in.starts[i], in.ends[i], in.steps[i]);
  }
  return plan;
}

Results importSlice(NodeContext &ctx) {
  FailureOr<SliceInputs> in = readSliceInputs(ctx);
  if (failed(in) || failed(completeSliceInputs(ctx, *in)))
    return failure();
  FailureOr<SmallVector<SliceAxis>> plan = slicePlan(ctx, *in);
  if (failed(plan))
    return failure();
  return one(slice(ctx, ctx.input(0), *plan), ctx.dtype(0));
}

/// Split's sizes as given: the constant input 1 from opset 13, the "split"
/// attribute before; empty when left out.
FailureOr<SmallVector<int64_t>> readSplitSizes(NodeContext &ctx) {
  SmallVector<int64_t> sizes;
  if (ctx.opset >= 13 && ctx.hasInput(1)) {
    if (failed(readConstInts(ctx, 1, "split", sizes)))
      return failure();
  } else if (ctx.opset < 13) {
    sizes = ctx.getInts("split");
  }
  return sizes;
}

/// Equal parts where no sizes are given; the sizes must cover the
/// dimension exactly, one per output.
LogicalResult completeSplitSizes(NodeContext &ctx, int64_t axis,
                                 SmallVector<int64_t> &sizes) {
  int64_t dim = ctx.shape(0)[axis];
  unsigned n = ctx.numOutputs();
  if (sizes.empty()) {
    if (dim % n) {
      ctx.error() << "dimension " << axis << " of size " << dim
                  << " does not split into " << n << " equal parts";
      return failure();
    }
    sizes.assign(n, dim / n);
  }
  if (sizes.size() != n || product(sizes) < 0 ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim) {
    ctx.error() << "split sizes do not add up to dimension " << axis
                << " (size " << dim << ") over " << n << " outputs";
    return failure();
  }
  return success();
}

Results importSplit(NodeContext &ctx) {
  ArrayRef<int64_t> s = ctx.shape(0);
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", 0), s.size());
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<int64_t>> sizes = readSplitSizes(ctx);
  if (failed(sizes) || failed(completeSplitSizes(ctx, *axis, *sizes)))
    return failure();
  SmallVector<TypedValue> out;
  int64_t offset = 0;
  for (int64_t size : *sizes) {
    SmallVector<SliceAxis> plan;
    for (int64_t d = 0, e = s.size(); d < e; ++d)
      plan.push_back(d == *axis ? SliceAxis{offset, 1, size}
                                : SliceAxis{0, 1, s[d]});
    out.push_back({slice(ctx, ctx.input(0), plan), ctx.dtype(0)});
    offset += size;
  }
  return out;
}

Results importGather(NodeContext &ctx) {
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1);
  int64_t rank = data.size(), q = indices.size();
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  if (isFloatDType(ctx.dtype(1)) || isBoolDType(ctx.dtype(1))) {
    ctx.error() << "indices must be integers";
    return failure();
  }
  SmallVector<int64_t> shape(data.begin(), data.begin() + *axis);
  shape.append(indices.begin(), indices.end());
  shape.append(data.begin() + *axis + 1, data.end());
  int64_t outRank = shape.size();
  MLIRContext *mctx = ctx.b.getContext();
  SmallVector<AffineExpr> idxExprs;
  for (int64_t d = *axis; d < *axis + q; ++d)
    idxExprs.push_back(getAffineDimExpr(d, mctx));
  SmallVector<AffineMap> maps = {
      AffineMap::get(outRank, 0, idxExprs, mctx),
      AffineMap::getMultiDimIdentityMap(outRank, mctx)};
  Value init = emptyTensor(ctx.b, ctx.loc, shape, ctx.type(0).getElementType());
  SmallVector<utils::IteratorType> iterators(outRank,
                                             utils::IteratorType::parallel);
  Value source = ctx.input(0);
  int64_t dim = data[*axis], a = *axis;
  Value result =
      linalg::GenericOp::create(
          ctx.b, ctx.loc, TypeRange{init.getType()}, ValueRange{ctx.input(1)},
          ValueRange{init}, maps, iterators,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            SmallVector<Value> coords;
            for (int64_t d = 0; d < a; ++d)
              coords.push_back(linalg::IndexOp::create(b, loc, d));
            // Out-of-range indices are clamped so the read stays in bounds.
            Value idx = normalizedIndex(b, loc, args[0], dim);
            idx = arith::MaxSIOp::create(
                b, loc, idx, arith::ConstantIndexOp::create(b, loc, 0));
            idx = arith::MinSIOp::create(
                b, loc, idx, arith::ConstantIndexOp::create(b, loc, dim - 1));
            coords.push_back(idx);
            for (int64_t d = a + q; d < outRank; ++d)
              coords.push_back(linalg::IndexOp::create(b, loc, d));
            Value v = tensor::ExtractOp::create(b, loc, source, coords);
            linalg::YieldOp::create(b, loc, v);
          })
          .getResult(0);
  return one(result, ctx.dtype(0));
}

/// Pad's pads and constant fill value: attributes before opset 11, inputs
/// (pads constant, the value optional) from it.
LogicalResult readPadding(NodeContext &ctx, SmallVector<int64_t> &pads,
                          Value &padValue) {
  Type elem = ctx.type(0).getElementType();
  if (ctx.opset < 11) {
    pads = ctx.getInts(ctx.opset < 2 ? "paddings" : "pads");
    padValue = scalarConstant(ctx.b, ctx.loc, elem, ctx.getFloat("value", 0));
    return success();
  }
  FailureOr<SmallVector<int64_t>> v = ctx.constInts(1, "pads");
  if (failed(v))
    return failure();
  pads = *v;
  if (ctx.hasInput(2)) {
    Value c = reshape(ctx.b, ctx.loc, ctx.input(2), {});
    padValue = tensor::ExtractOp::create(ctx.b, ctx.loc, c, ValueRange{});
  } else {
    padValue = scalarConstant(ctx.b, ctx.loc, elem, 0);
  }
  return success();
}

/// Pad's pads split per dimension: negative pads crop the input first
/// (`crop`, leaving `cropped`), the positive ones pad it by `lo` and `hi`.
struct PadPlan {
  SmallVector<SliceAxis> crop;
  SmallVector<int64_t> lo, hi, cropped;
  bool crops = false;

  /// The padded result's shape.
  SmallVector<int64_t> shape() const {
    SmallVector<int64_t> s;
    for (size_t d = 0; d < cropped.size(); ++d)
      s.push_back(cropped[d] + lo[d] + hi[d]);
    return s;
  }
};

FailureOr<PadPlan> planPadding(NodeContext &ctx, ArrayRef<int64_t> pads) {
  ArrayRef<int64_t> s = ctx.shape(0);
  int64_t rank = s.size();
  if ((int64_t)pads.size() != 2 * rank) {
    ctx.error() << "pads has " << pads.size() << " entries; the input has rank "
                << rank << " (2 x rank needed)";
    return failure();
  }
  PadPlan plan;
  plan.lo.resize(rank);
  plan.hi.resize(rank);
  plan.cropped.resize(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = pads[d], e = pads[d + rank];
    int64_t start = b < 0 ? -b : 0, size = s[d] - start - (e < 0 ? -e : 0);
    if (size < 0) {
      ctx.error() << "negative pads remove more than dimension " << d << " has";
      return failure();
    }
    plan.crops |= b < 0 || e < 0;
    plan.crop.push_back({start, 1, size});
    plan.cropped[d] = size;
    plan.lo[d] = std::max<int64_t>(b, 0);
    plan.hi[d] = std::max<int64_t>(e, 0);
  }
  return plan;
}

/// Constant-mode Pad: a tensor.pad with the fill value.
Value padWithConstant(NodeContext &ctx, Value input, const PadPlan &plan,
                      Value padValue) {
  Type elem = ctx.type(0).getElementType();
  auto type = RankedTensorType::get(plan.shape(), elem);
  SmallVector<OpFoldResult> low, high;
  for (size_t d = 0; d < plan.lo.size(); ++d) {
    low.push_back(ctx.b.getIndexAttr(plan.lo[d]));
    high.push_back(ctx.b.getIndexAttr(plan.hi[d]));
  }
  return tensor::PadOp::create(ctx.b, ctx.loc, type, input, low, high,
                               padValue);
}

/// Only reflect and edge pad by reading the input again, and reflect
/// mirrors at most the dimension minus one.
LogicalResult checkIndexedPadMode(NodeContext &ctx, StringRef mode,
                                  const PadPlan &plan) {
  if (mode != "reflect" && mode != "edge") {
    ctx.error() << "pad mode '" << mode << "' is not supported";
    return failure();
  }
  if (mode != "reflect")
    return success();
  for (size_t d = 0; d < plan.lo.size(); ++d)
    if (plan.lo[d] >= plan.cropped[d] || plan.hi[d] >= plan.cropped[d]) {
      ctx.error() << "reflect padding of " << std::max(plan.lo[d], plan.hi[d])
                  << " exceeds dimension " << d << " minus one";
      return failure();
    }
  return success();
}

/// The input index that output dimension `d` of a reflect or edge Pad reads
/// (the input dimension is `last` + 1 long, padded by `lo` in front):
/// mirrored about the ends, or clamped to them.
Value paddedSourceIndex(OpBuilder &b, Location loc, int64_t d, int64_t lo,
                        int64_t last, bool reflect) {
  Value o = linalg::IndexOp::create(b, loc, d);
  Value i = arith::SubIOp::create(b, loc, o,
                                  arith::ConstantIndexOp::create(b, loc, lo));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value lastIndex = arith::ConstantIndexOp::create(b, loc, last);
  if (!reflect) {
    i = arith::MaxSIOp::create(b, loc, i, zero);
    return arith::MinSIOp::create(b, loc, i, lastIndex);
  }
  Value isNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, zero);
  i = arith::SelectOp::create(b, loc, isNeg,
                              arith::SubIOp::create(b, loc, zero, i), i);
  Value over =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, i, lastIndex);
  Value mirrored = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, lastIndex, lastIndex), i);
  return arith::SelectOp::create(b, loc, over, mirrored, i);
}

/// Reflect or edge Pad: every output element reads a mirrored or clamped
/// element of the input.
Value padByIndexing(NodeContext &ctx, Value input, const PadPlan &plan,
                    bool reflect) {
  int64_t rank = plan.lo.size();
  MLIRContext *mctx = ctx.b.getContext();
  Value init = emptyTensor(ctx.b, ctx.loc, plan.shape(),
                           ctx.type(0).getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, mctx)};
  return linalg::GenericOp::create(
             ctx.b, ctx.loc, TypeRange{init.getType()}, ValueRange{},
             ValueRange{init}, maps, iterators,
             [&](OpBuilder &b, Location loc, ValueRange) {
               SmallVector<Value> coords;
               for (int64_t d = 0; d < rank; ++d)
                 coords.push_back(paddedSourceIndex(
                     b, loc, d, plan.lo[d], plan.cropped[d] - 1, reflect));
               Value v = tensor::ExtractOp::create(b, loc, input, coords);
               linalg::YieldOp::create(b, loc, v);
             })
      .getResult(0);
}

Results importPad(NodeContext &ctx) {
  std::string mode = ctx.getString("mode", "constant");
  SmallVector<int64_t> pads;
  Value padValue;
  if (failed(readPadding(ctx, pads, padValue)))
    return failure();
  FailureOr<PadPlan> plan = planPadding(ctx, pads);
  if (failed(plan))
    return failure();
  Value input = ctx.input(0);
  if (plan->crops)
    input = slice(ctx, input, plan->crop);
  if (mode == "constant")
    return one(padWithConstant(ctx, input, *plan, padValue), ctx.dtype(0));
  if (failed(checkIndexedPadMode(ctx, mode, *plan)))
    return failure();
  return one(padByIndexing(ctx, input, *plan, mode == "reflect"),
             ctx.dtype(0));
}

Results importExpand(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> target = ctx.constInts(1, "the shape");
  if (failed(target))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes({ctx.shape(0), *target});
  if (failed(shape)) {
    ctx.error() << "input " << ctx.type(0) << " does not broadcast to the shape";
    return failure();
  }
  Value result = elementwise(ctx.b, ctx.loc, ctx.input(0), *shape,
                             ctx.type(0).getElementType(),
                             [](OpBuilder &, Location, ValueRange a) {
                               return a[0];
                             });
  return one(result, ctx.dtype(0));
}

Results importTile(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> repeats = ctx.constInts(1, "repeats");
  if (failed(repeats))
    return failure();
  ArrayRef<int64_t> s = ctx.shape(0);
  int64_t rank = s.size();
  if ((int64_t)repeats->size() != rank) {
    ctx.error() << "repeats has " << repeats->size()
                << " entries for an input of rank " << rank;
    return failure();
  }
  // [a0, a1] tiled [r0, r1]: broadcast to [r0, a0, r1, a1], then collapse.
  MLIRContext *mctx = ctx.b.getContext();
  SmallVector<int64_t> wide;
  SmallVector<AffineExpr> exprs;
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank; ++d) {
    wide.push_back((*repeats)[d]);
    wide.push_back(s[d]);
    exprs.push_back(getAffineDimExpr(2 * d + 1, mctx));
    groups.push_back({2 * d, 2 * d + 1});
  }
  Type elem = ctx.type(0).getElementType();
  Value init = emptyTensor(ctx.b, ctx.loc, wide, elem);
  SmallVector<AffineMap> maps = {
      AffineMap::get(2 * rank, 0, exprs, mctx),
      AffineMap::getMultiDimIdentityMap(2 * rank, mctx)};
  SmallVector<utils::IteratorType> iterators(2 * rank,
                                             utils::IteratorType::parallel);
  Value broadcast = linalg::GenericOp::create(
                        ctx.b, ctx.loc, TypeRange{init.getType()},
                        ValueRange{ctx.input(0)}, ValueRange{init}, maps,
                        iterators,
                        [](OpBuilder &b, Location loc, ValueRange args) {
                          linalg::YieldOp::create(b, loc, args[0]);
                        })
                        .getResult(0);
  if (rank == 0)
    return one(broadcast, ctx.dtype(0));
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(s[d] * (*repeats)[d]);
  Value result = tensor::CollapseShapeOp::create(
      ctx.b, ctx.loc, RankedTensorType::get(shape, elem), broadcast, groups);
  return one(result, ctx.dtype(0));
}

Results importRange(NodeContext &ctx) {
  // Integer ranges on constants fold (foldIntegerNode); float ones too.
  std::optional<DenseElementsAttr> start = ctx.constant(0),
                                   limit = ctx.constant(1),
                                   delta = ctx.constant(2);
  if (!start || !limit || !delta || !isFloatDType(ctx.dtype(0))) {
    ctx.error() << "the length of a Range depends on start, limit and delta, "
                   "so they must be constants (mp compiles static shapes)";
    return failure();
  }
  double s = start->getValues<APFloat>()[0].convertToDouble();
  double l = limit->getValues<APFloat>()[0].convertToDouble();
  double d = delta->getValues<APFloat>()[0].convertToDouble();
  if (d == 0) {
    ctx.error() << "delta is 0";
    return failure();
  }
  int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((l - s) / d));
  SmallVector<Attribute> values;
  Type elem = ctx.type(0).getElementType();
  for (int64_t i = 0; i < n; ++i)
    values.push_back(ctx.b.getFloatAttr(elem, s + i * d));
  auto type = RankedTensorType::get({n}, elem);
  return one(constantOf(ctx.b, ctx.loc, DenseElementsAttr::get(type, values)),
             ctx.dtype(0));
}

/// DepthToSpace and SpaceToDepth: a reshape, a transpose, a reshape.
Results importDepthSpace(NodeContext &ctx) {
  if (ctx.rank(0) != 4) {
    ctx.error() << "the input must be [N, C, H, W]";
    return failure();
  }
  int64_t bs = ctx.getInt("blocksize", 0);
  ArrayRef<int64_t> s = ctx.shape(0);
  int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  SmallVector<int64_t> split, perm, out;
  if (ctx.node.op_type() == "DepthToSpace") {
    if (bs < 1 || c % (bs * bs)) {
      ctx.error() << "blocksize " << bs << " does not divide the " << c
                  << " channels into blocks";
      return failure();
    }
    int64_t cb = c / (bs * bs);
    if (ctx.getString("mode", "DCR") == "CRD") {
      split = {n, cb, bs, bs, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      split = {n, bs, bs, cb, h, w};
      perm = {0, 3, 4, 1, 5, 2};
    }
    out = {n, cb, h * bs, w * bs};
  } else {
    if (bs < 1 || h % bs || w % bs) {
      ctx.error() << "blocksize " << bs << " does not divide H and W";
      return failure();
    }
    split = {n, c, h / bs, bs, w / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * bs * bs, h / bs, w / bs};
  }
  Value x = reshape(ctx.b, ctx.loc, ctx.input(0), split);
  x = transpose(ctx.b, ctx.loc, x, perm);
  return one(reshape(ctx.b, ctx.loc, x, out), ctx.dtype(0));
}

} // namespace

void addTensorOps(OpTable &t) {
  t["DepthToSpace"] = importDepthSpace;
  t["SpaceToDepth"] = importDepthSpace;
  t["Constant"] = importConstant;
  t["ConstantOfShape"] = importConstantOfShape;
  t["Shape"] = importShape;
  t["Size"] = importSize;
  t["Identity"] = importIdentity;
  t["Dropout"] = importIdentity;
  t["Reshape"] = importReshape;
  t["Flatten"] = importFlatten;
  t["Squeeze"] = importSqueeze;
  t["Unsqueeze"] = importUnsqueeze;
  t["Transpose"] = importTranspose;
  t["Concat"] = importConcat;
  t["Slice"] = importSlice;
  t["Split"] = importSplit;
  t["Gather"] = importGather;
  t["Pad"] = importPad;
  t["Expand"] = importExpand;
  t["Tile"] = importTile;
  t["Range"] = importRange;
}

} // namespace mp::onnx_import
