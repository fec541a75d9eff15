//===- ImportOnnx.cpp - ONNX ModelProto -> MLIR on tensors ---------------===//
//
// Reads the model (libonnx's protobuf classes), turns the graph's inputs,
// initializers and outputs into a func.func, and hands each node to the
// importer registered for its op type (OnnxElementwiseOps.cpp,
// OnnxTensorOps.cpp, OnnxNeuralNetOps.cpp, OnnxIndexOps.cpp,
// OnnxResizeScatterOps.cpp). Integer shape computations
// (Shape -> Gather -> Concat -> Reshape, as exporters write them) are folded
// to constants here, so the ops that need static shapes see them.
//
//===----------------------------------------------------------------------===//

#include "mp/Target/ONNX/ImportOnnx.h"
#include "OnnxImporter.h"
#include "mp/Dialect/MP/IR/MPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace mlir;

namespace mp {
namespace onnx_import {

// -- element types --------------------------------------------------------------

bool isFloatDType(DType t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE ||
         t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16;
}
bool isUnsignedDType(DType t) {
  return t == onnx::TensorProto::UINT8 || t == onnx::TensorProto::UINT16 ||
         t == onnx::TensorProto::UINT32 || t == onnx::TensorProto::UINT64;
}
bool isBoolDType(DType t) { return t == onnx::TensorProto::BOOL; }

Type elementType(MLIRContext *ctx, DType t) {
  Builder b(ctx);
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return b.getI8Type();
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return b.getI16Type();
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return b.getI32Type();
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return b.getI64Type();
  default:
    return {};
  }
}

std::string dtypeName(DType t) {
  if (onnx::TensorProto::DataType_IsValid(t))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(t));
  return "type " + std::to_string(t);
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

// -- NodeContext ------------------------------------------------------------------

const onnx::AttributeProto *NodeContext::attr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::getInt(llvm::StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : dflt;
}

float NodeContext::getFloat(llvm::StringRef name, float dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::getString(llvm::StringRef name,
                                   llvm::StringRef dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : dflt.str();
}

SmallVector<int64_t> NodeContext::getInts(llvm::StringRef name) const {
  SmallVector<int64_t> out;
  if (const onnx::AttributeProto *a = attr(name))
    out.assign(a->ints().begin(), a->ints().end());
  return out;
}

SmallVector<float> NodeContext::getFloats(llvm::StringRef name) const {
  SmallVector<float> out;
  if (const onnx::AttributeProto *a = attr(name))
    out.assign(a->floats().begin(), a->floats().end());
  return out;
}

std::optional<DenseElementsAttr> NodeContext::constant(unsigned i) const {
  DenseElementsAttr value;
  if (hasInput(i) && matchPattern(input(i), m_Constant(&value)))
    return value;
  return std::nullopt;
}

FailureOr<SmallVector<int64_t>> NodeContext::constInts(unsigned i,
                                                       llvm::StringRef what) {
  std::optional<DenseElementsAttr> value = constant(i);
  if (!value || !llvm::isa<IntegerType>(value->getElementType())) {
    error() << what
            << " must be a constant integer tensor (an initializer, a Constant "
               "or a shape computation on static shapes)";
    return failure();
  }
  SmallVector<int64_t> out;
  bool isBool = value->getElementType().isInteger(1);
  for (const APInt &v : value->getValues<APInt>())
    out.push_back(isBool ? int64_t(v.getZExtValue()) : v.getSExtValue());
  return out;
}

FailureOr<SmallVector<int64_t>> NodeContext::axesAttrOrInput(bool fromInput) {
  if (!fromInput)
    return getInts("axes");
  if (!hasInput(1))
    return SmallVector<int64_t>{};
  return constInts(1, "axes");
}

InFlightDiagnostic NodeContext::error() {
  InFlightDiagnostic diag = emitError(loc);
  diag << "node '" << name << "' (" << node.op_type() << ", opset "
       << opset << "): ";
  return diag;
}

FailureOr<int64_t> NodeContext::axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1) ||
      (rank == 0 && axis != 0 && axis != -1)) {
    error() << "axis " << axis << " is out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

LogicalResult NodeContext::requireFloat(unsigned i) {
  if (isFloatDType(dtype(i)))
    return success();
  return error() << "input " << i << " has element type " << dtypeName(dtype(i))
                 << "; this operator is imported for floating-point tensors "
                    "only";
}

// -- tensors ------------------------------------------------------------------------

/// The bytes of a tensor stored outside the model (`location`, `offset`,
/// `length`), read from its file relative to `modelDir`; `bytes` when no
/// length is given.
static FailureOr<std::string> readExternalData(const onnx::TensorProto &t,
                                               llvm::StringRef modelDir,
                                               size_t bytes, Location loc) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoll(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!file)
    return emitError(loc) << "tensor '" << t.name()
                          << "': cannot read its external data '" << path
                          << "': " << file.getError().message(),
           failure();
  if (length < 0)
    length = bytes;
  if (offset < 0 || size_t(offset + length) > (*file)->getBufferSize())
    return emitError(loc) << "tensor '" << t.name() << "': external data '"
                          << path << "' is shorter than offset + length",
           failure();
  return std::string((*file)->getBufferStart() + offset, length);
}

/// Writes `values`, each narrowed to `width` bits, little-endian (as the
/// attribute wants) into `raw`; false unless there are `count` of them.
template <typename T>
static bool putTypedValues(const google::protobuf::RepeatedField<T> &values,
                           int64_t count, unsigned width, std::string &raw) {
  if (values.size() != count)
    return false;
  size_t step = width / 8 ? width / 8 : 1;
  for (int64_t i = 0; i < count; ++i) {
    T v = values.Get(i);
    std::memcpy(raw.data() + i * step, &v, step);
  }
  return true;
}

/// The bytes of a tensor stored in its typed data field; an error if the
/// field does not hold `count` values (except for BOOL, whose bytes then
/// stay zero).
static FailureOr<std::string> typedDataBytes(const onnx::TensorProto &t,
                                             Type elem, int64_t count,
                                             size_t bytes, unsigned width,
                                             Location loc) {
  std::string raw(bytes, '\0');
  bool filled;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    filled = putTypedValues(t.float_data(), count, width, raw);
    break;
  case onnx::TensorProto::DOUBLE:
    filled = putTypedValues(t.double_data(), count, width, raw);
    break;
  case onnx::TensorProto::INT64:
    filled = putTypedValues(t.int64_data(), count, width, raw);
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    filled = putTypedValues(t.uint64_data(), count, width, raw);
    break;
  default: // int32_data holds INT32 and every narrower type, f16 as bits.
    filled = putTypedValues(t.int32_data(), count, width, raw);
    break;
  }
  if (!filled && !elem.isInteger(1))
    return emitError(loc) << "tensor '" << t.name() << "' of "
                          << dtypeName(t.data_type()) << " holds no " << count
                          << " values in its typed data field",
           failure();
  return raw;
}

/// Element bytes of an ONNX tensor, from raw_data, a typed field or an
/// external file, as the little-endian buffer DenseElementsAttr takes.
FailureOr<DenseElementsAttr> tensorToAttr(const onnx::TensorProto &t,
                                          llvm::StringRef modelDir,
                                          Location loc) {
  MLIRContext *ctx = loc.getContext();
  Type elem = elementType(ctx, t.data_type());
  if (!elem)
    return emitError(loc) << "tensor '" << t.name() << "' has element type "
                          << dtypeName(t.data_type())
                          << ", which mp does not import",
           failure();
  SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
  auto type = RankedTensorType::get(dims, elem);
  int64_t count = product(dims);
  unsigned width = elem.isInteger(1) ? 8 : elem.getIntOrFloatBitWidth();
  size_t bytes = size_t(count) * width / 8;

  FailureOr<std::string> raw;
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    raw = readExternalData(t, modelDir, bytes, loc);
  else if (t.has_raw_data())
    raw = t.raw_data();
  else
    raw = typedDataBytes(t, elem, count, bytes, width, loc);
  if (failed(raw))
    return failure();
  if (raw->size() != bytes)
    return emitError(loc) << "tensor '" << t.name() << "' has " << raw->size()
                          << " bytes of data where its shape needs " << bytes,
           failure();
  if (elem.isInteger(1)) {
    SmallVector<bool> values;
    for (char c : *raw)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, values);
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(raw->data(), raw->size()));
}

// -- builders ---------------------------------------------------------------------

Value constantOf(OpBuilder &b, Location loc, DenseElementsAttr value) {
  return arith::ConstantOp::create(b, loc, value);
}

Value scalarConstant(OpBuilder &b, Location loc, Type elem, double value) {
  if (auto f = llvm::dyn_cast<FloatType>(elem))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(elem, APInt(elem.getIntOrFloatBitWidth(),
                                            int64_t(value), /*isSigned=*/true,
                                            /*implicitTrunc=*/true)));
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elem) {
  return tensor::EmptyOp::create(b, loc, shape, elem);
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elem, double value) {
  Value init = emptyTensor(b, loc, shape, elem);
  Value scalar = scalarConstant(b, loc, elem, value);
  return linalg::FillOp::create(b, loc, scalar, init).getResult(0);
}

FailureOr<SmallVector<int64_t>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> out(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o != 1)
        return failure();
      o = s[i];
    }
  }
  return out;
}

Value elementwise(OpBuilder &b, Location loc, ValueRange operands,
                  ArrayRef<int64_t> resultShape, Type resultElem,
                  const ScalarFn &body) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultShape.size();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    auto type = llvm::cast<RankedTensorType>(operand.getType());
    ArrayRef<int64_t> shape = type.getShape();
    int64_t offset = rank - shape.size();
    // Dimensions broadcast from size 1 are collapsed away; each dropped one
    // joins the group of the next kept dimension (or the previous one).
    SmallVector<ReassociationIndices> groups;
    SmallVector<AffineExpr> exprs;
    ReassociationIndices pending;
    for (int64_t i = 0, e = shape.size(); i < e; ++i) {
      bool kept = !(shape[i] == 1 && resultShape[offset + i] != 1);
      pending.push_back(i);
      if (kept) {
        groups.push_back(pending);
        pending.clear();
        exprs.push_back(getAffineDimExpr(offset + i, ctx));
      }
    }
    if (!pending.empty() && !groups.empty())
      groups.back().append(pending.begin(), pending.end());
    if ((int64_t)groups.size() != (int64_t)shape.size()) {
      SmallVector<int64_t> collapsed;
      for (const ReassociationIndices &g : groups) {
        int64_t n = 1;
        for (int64_t i : g)
          n *= shape[i];
        collapsed.push_back(n);
      }
      operand = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get(collapsed, type.getElementType()),
          operand, groups);
    }
    inputs.push_back(operand);
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  Value init = emptyTensor(b, loc, resultShape, resultElem);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

Value reshape(OpBuilder &b, Location loc, Value input,
              ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(input.getType());
  if (type.getShape() == shape)
    return input;
  Type elem = type.getElementType();
  auto target = RankedTensorType::get(shape, elem);
  // One group of all dimensions, or none for a rank-0 side.
  auto allDims = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank) {
      groups.emplace_back();
      for (int64_t i = 0; i < rank; ++i)
        groups.back().push_back(i);
    }
    return groups;
  };
  // To or from rank 0 (all sizes 1): no reassociation groups at all.
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, target, input,
                                         SmallVector<ReassociationIndices>{});
  if (shape.empty())
    return tensor::CollapseShapeOp::create(
        b, loc, target, input, SmallVector<ReassociationIndices>{});
  Value flat = input;
  if (type.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({type.getNumElements()}, elem), input,
        allDims(type.getRank()));
  if (shape.size() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       allDims(shape.size()));
}

Value transpose(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> perm) {
  auto type = llvm::cast<RankedTensorType>(input.getType());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == (int64_t)i;
  if (identity)
    return input;
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value init = emptyTensor(b, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(b, loc, input, init, perm).getResult()[0];
}

Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             bool keepDims, double initValue,
             const std::function<Value(OpBuilder &, Location, Value, Value)>
                 &combine,
             const std::function<Value(OpBuilder &, Location, Value)>
                 &prologue) {
  MLIRContext *ctx = b.getContext();
  auto type = llvm::cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  Type elem = type.getElementType();
  SmallVector<int64_t> kept, keptShape;
  SmallVector<utils::IteratorType> iterators;
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = llvm::is_contained(axes, i);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced) {
      keptShape.push_back(type.getDimSize(i));
      outExprs.push_back(getAffineDimExpr(i, ctx));
    }
  }
  Value init = filledTensor(b, loc, keptShape, elem, initValue);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{input}, ValueRange{init},
      maps, iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = prologue ? prologue(nb, nloc, args[0]) : args[0];
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args[1], x));
      });
  Value result = generic.getResult(0);
  if (!keepDims)
    return result;
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  return reshape(b, loc, result, shape);
}

namespace {

/// Cast to BOOL: whether the value is not zero.
Value convertToBool(OpBuilder &b, Location loc, Value v, DType from,
                    Type src) {
  if (isFloatDType(from))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                 scalarConstant(b, loc, src, 0.0));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                               scalarConstant(b, loc, src, 0));
}

/// Float to float: extended or truncated; f16 <-> bf16 (the same width)
/// go through f32.
Value convertFloatToFloat(OpBuilder &b, Location loc, Value v, Type src,
                          Type dst) {
  unsigned sw = src.getIntOrFloatBitWidth(), dw = dst.getIntOrFloatBitWidth();
  if (src == dst)
    return v;
  if (sw == dw) {
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, dst, wide);
  }
  if (sw < dw)
    return arith::ExtFOp::create(b, loc, dst, v);
  return arith::TruncFOp::create(b, loc, dst, v);
}

/// Float to integer, rounding toward zero.
Value convertFloatToInt(OpBuilder &b, Location loc, Value v, DType to,
                        Type dst) {
  if (isUnsignedDType(to))
    return arith::FPToUIOp::create(b, loc, dst, v);
  return arith::FPToSIOp::create(b, loc, dst, v);
}

/// Integer (or bool, read as unsigned) to float.
Value convertIntToFloat(OpBuilder &b, Location loc, Value v, bool srcUnsigned,
                        Type dst) {
  if (srcUnsigned)
    return arith::UIToFPOp::create(b, loc, dst, v);
  return arith::SIToFPOp::create(b, loc, dst, v);
}

/// Integer (or bool) to integer: truncated, or extended as the source's
/// signedness says.
Value convertIntToInt(OpBuilder &b, Location loc, Value v, bool srcUnsigned,
                      Type src, Type dst) {
  unsigned sw = src.getIntOrFloatBitWidth(), dw = dst.getIntOrFloatBitWidth();
  if (sw == dw)
    return v;
  if (sw > dw)
    return arith::TruncIOp::create(b, loc, dst, v);
  if (srcUnsigned)
    return arith::ExtUIOp::create(b, loc, dst, v);
  return arith::ExtSIOp::create(b, loc, dst, v);
}

} // namespace

Value convertScalar(OpBuilder &b, Location loc, Value v, DType from,
                    DType to) {
  MLIRContext *ctx = b.getContext();
  Type src = elementType(ctx, from), dst = elementType(ctx, to);
  if (from == to)
    return v;
  if (isBoolDType(to))
    return convertToBool(b, loc, v, from, src);
  bool srcFloat = isFloatDType(from), dstFloat = isFloatDType(to);
  if (srcFloat && dstFloat)
    return convertFloatToFloat(b, loc, v, src, dst);
  if (srcFloat)
    return convertFloatToInt(b, loc, v, to, dst);
  bool srcUnsigned = isUnsignedDType(from) || isBoolDType(from);
  if (dstFloat)
    return convertIntToFloat(b, loc, v, srcUnsigned, dst);
  return convertIntToInt(b, loc, v, srcUnsigned, src, dst);
}

Value convertTensor(OpBuilder &b, Location loc, Value v, DType from,
                    DType to) {
  if (from == to)
    return v;
  auto type = llvm::cast<RankedTensorType>(v.getType());
  Type dst = elementType(b.getContext(), to);
  return elementwise(b, loc, v, type.getShape(), dst,
                     [&](OpBuilder &nb, Location nloc, ValueRange args) {
                       return convertScalar(nb, nloc, args[0], from, to);
                     });
}

// -- the graph ---------------------------------------------------------------------------

namespace {

const OpTable &opTable() {
  static const OpTable table = [] {
    OpTable t;
    addElementwiseOps(t);
    addTensorOps(t);
    addNeuralNetOps(t);
    addIndexOps(t);
    addResizeScatterOps(t);
    return t;
  }();
  return table;
}

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, llvm::StringRef fileName,
                const OnnxImportOptions &options)
      : ctx(ctx), fileName(fileName), options(options),
        fileLoc(FileLineColLoc::get(ctx, fileName, 0, 0)) {}

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

private:
  /// The imported function's signature, gathered while importing.
  struct Signature {
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    SmallVector<Value> results;
    SmallVector<Type> resultTypes;
    SmallVector<DictionaryAttr> resultAttrs;
  };

  LogicalResult readOpset(const onnx::ModelProto &model);
  LogicalResult importInputs(const onnx::GraphProto &graph, Block *entry,
                             OpBuilder &b, Signature &sig);
  LogicalResult importInitializers(const onnx::GraphProto &graph, Block *entry,
                                   OpBuilder &b, Signature &sig);
  LogicalResult importOutputs(const onnx::GraphProto &graph, OpBuilder &b,
                              Signature &sig);
  LogicalResult checkDeclaredShape(const onnx::ValueInfoProto &out,
                                   RankedTensorType type, Location loc);
  LogicalResult importNode(const onnx::NodeProto &node, OpBuilder &b);
  LogicalResult bindOutputs(NodeContext &context,
                            ArrayRef<TypedValue> results);
  LogicalResult nodeInputs(const onnx::NodeProto &node, llvm::StringRef name,
                           Location loc, SmallVector<TypedValue> &inputs);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info,
                                        DType &dtype);
  FailureOr<SmallVector<int64_t>> staticDims(const onnx::ValueInfoProto &info,
                                             Location loc);
  LogicalResult finish(ModuleOp module);

  Location locOf(llvm::StringRef name) {
    return NameLoc::get(StringAttr::get(ctx, name), fileLoc);
  }

  MLIRContext *ctx;
  std::string fileName;
  const OnnxImportOptions &options;
  Location fileLoc;
  int64_t opset = 0;
  llvm::StringMap<TypedValue> values;
};

FailureOr<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &info, DType &dtype) {
  Location loc = locOf(info.name());
  if (!info.type().has_tensor_type())
    return emitError(loc) << "graph input '" << info.name()
                          << "' is not a tensor (sequences, maps and "
                             "optionals are not imported)",
           failure();
  const onnx::TypeProto::Tensor &tt = info.type().tensor_type();
  dtype = tt.elem_type();
  Type elem = elementType(ctx, dtype);
  if (!elem)
    return emitError(loc) << "graph input '" << info.name()
                          << "' has element type " << dtypeName(dtype)
                          << ", which mp does not import",
           failure();
  auto fixed = options.inputShapes.find(info.name());
  if (fixed != options.inputShapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != (int)fixed->second.size())
      return emitError(loc) << "--input-shape gives graph input '"
                            << info.name() << "' rank "
                            << fixed->second.size() << "; the model says "
                            << tt.shape().dim_size(),
             failure();
    return RankedTensorType::get(fixed->second, elem);
  }
  FailureOr<SmallVector<int64_t>> dims = staticDims(info, loc);
  if (failed(dims))
    return failure();
  return RankedTensorType::get(*dims, elem);
}

/// The model's shape of a graph input, its leading dynamic dimension
/// replaced by --batch-size; an error for any other dynamic dimension.
FailureOr<SmallVector<int64_t>>
GraphImporter::staticDims(const onnx::ValueInfoProto &info, Location loc) {
  const onnx::TypeProto::Tensor &tt = info.type().tensor_type();
  if (!tt.has_shape())
    return emitError(loc) << "graph input '" << info.name()
                          << "' has no shape; give one with --input-shape "
                          << info.name() << "=D0xD1x...",
           failure();
  SmallVector<int64_t> dims;
  for (const onnx::TensorShapeProto::Dimension &d : tt.shape().dim()) {
    bool dynamic = !d.has_dim_value() || d.dim_value() < 0;
    if (dynamic && dims.empty() && options.batchSize > 0) {
      dims.push_back(options.batchSize);
      continue;
    }
    if (dynamic) {
      InFlightDiagnostic diag = emitError(loc);
      diag << "graph input '" << info.name() << "' has dynamic dimension "
           << dims.size();
      if (d.has_dim_param())
        diag << " ('" << d.dim_param() << "')";
      diag << "; mp compiles static shapes: fix it with --input-shape "
           << info.name() << "=D0xD1x..."
           << (dims.empty() ? " (or --batch-size N)" : "");
      return failure();
    }
    dims.push_back(d.dim_value());
  }
  return dims;
}

/// The values of the node's inputs (null for optional inputs left out); an
/// error for an input that no earlier node or graph input defines.
LogicalResult GraphImporter::nodeInputs(const onnx::NodeProto &node,
                                        llvm::StringRef name, Location loc,
                                        SmallVector<TypedValue> &inputs) {
  for (const std::string &in : node.input()) {
    if (in.empty()) {
      inputs.push_back({});
      continue;
    }
    auto it = values.find(in);
    if (it == values.end())
      return emitError(loc) << "node '" << name << "' (" << node.op_type()
                            << "): input '" << in
                            << "' is not defined before the node (the graph "
                               "must be topologically sorted)";
    inputs.push_back(it->second);
  }
  return success();
}

/// The first subgraph attribute of `node` (If, Loop, Scan), if any.
const onnx::AttributeProto *subgraphAttr(const onnx::NodeProto &node) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.type() == onnx::AttributeProto::GRAPH ||
        a.type() == onnx::AttributeProto::GRAPHS)
      return &a;
  return nullptr;
}

/// A node's name for messages and locations: its own, else its first
/// output's, else its operator's.
std::string nodeName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  return node.output_size() ? node.output(0) : node.op_type();
}

/// The node's results: folded where it is an integer shape computation on
/// constants, else built by its operator's importer.
Results importNodeResults(NodeContext &context) {
  // Integer shape computations on constants fold; the rest become ops.
  Results results = foldIntegerNode(context);
  if (failed(results) || !results->empty())
    return results;
  const std::string &opType = context.node.op_type();
  auto it = opTable().find(opType);
  if (it == opTable().end())
    return context.error() << "operator '" << opType
                           << "' is not supported by mp's ONNX importer";
  return it->second(context);
}

/// Names the node's wanted outputs' values; an error for one its importer
/// did not produce.
LogicalResult GraphImporter::bindOutputs(NodeContext &context,
                                         ArrayRef<TypedValue> results) {
  const onnx::NodeProto &node = context.node;
  for (int i = 0, e = node.output_size(); i < e; ++i) {
    if (node.output(i).empty())
      continue;
    if (i >= (int)results.size() || !results[i])
      return context.error() << "output " << i << " ('" << node.output(i)
                             << "') is not imported (only the outputs "
                                "inference uses)";
    values[node.output(i)] = results[i];
  }
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        OpBuilder &b) {
  std::string name = nodeName(node);
  Location loc = locOf(name);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return emitError(loc) << "node '" << name << "' (" << node.op_type()
                          << "): operators of domain '" << node.domain()
                          << "' are not imported (only the default ONNX "
                             "domain)";
  SmallVector<TypedValue> inputs;
  if (failed(nodeInputs(node, name, loc, inputs)))
    return failure();
  NodeContext context(node, name, opset, b, loc, std::move(inputs));
  if (const onnx::AttributeProto *a = subgraphAttr(node))
    return context.error() << "attribute '" << a->name()
                           << "' is a subgraph; control flow (If, Loop, "
                              "Scan) is not imported";
  Results results = importNodeResults(context);
  if (failed(results))
    return failure();
  return bindOutputs(context, *results);
}

/// The default domain's opset the model imports (1 for IR version 2
/// models, which name none); an error above 17, which mp does not know.
LogicalResult GraphImporter::readOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      opset = set.version();
  if (opset == 0 && model.opset_import_size() == 0)
    opset = 1; // IR version 2 models name no opset: the first one.
  if (opset == 0) {
    InFlightDiagnostic diag = emitError(fileLoc);
    diag << "the model imports no default-domain ONNX opset, only";
    for (const onnx::OperatorSetIdProto &set : model.opset_import())
      diag << " '" << set.domain() << "'";
    diag << "; mp imports operators of the default domain";
    return failure();
  }
  if (opset > 17) {
    emitError(fileLoc) << "the model uses ONNX opset " << opset
                       << "; mp's importer takes opsets up to 17";
    return failure();
  }
  return success();
}

/// The graph inputs become the function's arguments. Older models list
/// initializers among the inputs too: those are initializers.
LogicalResult GraphImporter::importInputs(const onnx::GraphProto &graph,
                                          Block *entry, OpBuilder &b,
                                          Signature &sig) {
  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &t : graph.initializer())
    initializers.insert(t.name());
  for (const onnx::ValueInfoProto &info : graph.input()) {
    if (initializers.contains(info.name()))
      continue;
    DType dtype = 0;
    FailureOr<RankedTensorType> type = inputType(info, dtype);
    if (failed(type))
      return failure();
    Value arg = entry->addArgument(*type, locOf(info.name()));
    values[info.name()] = {arg, dtype};
    sig.argTypes.push_back(*type);
    sig.argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(mlir::mp::MPDialect::InputAttrHelper::getNameStr(),
                       b.getStringAttr(info.name()))));
  }
  return success();
}

/// Whether input `index` of an `opType` node is a setting rather than a
/// weight: no framework trains it, and the importer reads it as a constant
/// (Clip's bounds, BatchNormalization's running statistics, Pad's value,
/// Resize's roi and scales, Upsample's scales, Dropout's ratio).
/// tf2onnx writes Clip's bounds (ReLU6) as float initializers.
bool isSettingInput(llvm::StringRef opType, int index) {
  if (opType == "Clip")
    return index == 1 || index == 2;
  if (opType == "BatchNormalization")
    return index == 3 || index == 4;
  if (opType == "Resize")
    return index == 1 || index == 2;
  if (opType == "Pad" || opType == "Dropout" || opType == "Upsample")
    return index == (opType == "Pad" ? 2 : 1);
  return false;
}

/// The initializers some node reads as a setting (isSettingInput).
llvm::StringSet<> settingInitializers(const onnx::GraphProto &graph) {
  llvm::StringSet<> names;
  for (const onnx::NodeProto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty() && isSettingInput(node.op_type(), i))
        names.insert(node.input(i));
  return names;
}

/// Initializers become constants, or with paramsAsArguments the float ones
/// become parameter arguments (with their initial values if asked for),
/// except those a node reads as a setting (settingInitializers).
LogicalResult GraphImporter::importInitializers(const onnx::GraphProto &graph,
                                                Block *entry, OpBuilder &b,
                                                Signature &sig) {
  llvm::StringRef modelDir = llvm::sys::path::parent_path(fileName);
  llvm::StringSet<> settings = settingInitializers(graph);
  for (const onnx::TensorProto &t : graph.initializer()) {
    Location loc = locOf(t.name());
    FailureOr<DenseElementsAttr> value = tensorToAttr(t, modelDir, loc);
    if (failed(value))
      return failure();
    if (!options.paramsAsArguments || !isFloatDType(t.data_type()) ||
        settings.contains(t.name())) {
      values[t.name()] = {constantOf(b, loc, *value), t.data_type()};
      continue;
    }
    Value arg = entry->addArgument(value->getType(), loc);
    values[t.name()] = {arg, t.data_type()};
    sig.argTypes.push_back(value->getType());
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(mlir::mp::MPDialect::ParamAttrHelper::getNameStr(),
                       b.getStringAttr(t.name()))};
    if (options.initialValues && value->getElementType().isF32())
      attrs.push_back(b.getNamedAttr(
          mlir::mp::MPDialect::InitialValueAttrHelper::getNameStr(), *value));
    sig.argAttrs.push_back(b.getDictionaryAttr(attrs));
  }
  return success();
}

/// Whether `type` has the declared shape's rank and its static sizes.
bool matchesDeclaredShape(const onnx::TensorShapeProto &shape,
                          RankedTensorType type) {
  bool same = shape.dim_size() == type.getRank();
  for (int i = 0; same && i < shape.dim_size(); ++i)
    if (shape.dim(i).has_dim_value())
      same = shape.dim(i).dim_value() == type.getDimSize(i);
  return same;
}

/// A declared shape as "2x?x3" (? for a dynamic dimension).
std::string declaredShapeText(const onnx::TensorShapeProto &shape) {
  std::string declared;
  for (int i = 0; i < shape.dim_size(); ++i)
    declared += (i ? "x" : "") + (shape.dim(i).has_dim_value()
                                      ? std::to_string(shape.dim(i).dim_value())
                                      : std::string("?"));
  return declared;
}

/// The model's declared shape of a graph output, where static, must be the
/// one computed (unless --input-shape fixed the inputs, which may change it).
LogicalResult GraphImporter::checkDeclaredShape(const onnx::ValueInfoProto &out,
                                                RankedTensorType type,
                                                Location loc) {
  if (!out.type().has_tensor_type() || !out.type().tensor_type().has_shape() ||
      !options.inputShapes.empty())
    return success();
  const onnx::TensorShapeProto &shape = out.type().tensor_type().shape();
  if (matchesDeclaredShape(shape, type))
    return success();
  return emitError(loc) << "graph output '" << out.name() << "' is computed as "
                        << type << " but the model declares shape ["
                        << declaredShapeText(shape) << "]";
}

/// The graph outputs become the function's results.
LogicalResult GraphImporter::importOutputs(const onnx::GraphProto &graph,
                                           OpBuilder &b, Signature &sig) {
  for (const onnx::ValueInfoProto &out : graph.output()) {
    Location loc = locOf(out.name());
    auto it = values.find(out.name());
    if (it == values.end())
      return emitError(loc) << "graph output '" << out.name()
                            << "' is not computed by any node";
    auto type = llvm::cast<RankedTensorType>(it->second.value.getType());
    if (failed(checkDeclaredShape(out, type, loc)))
      return failure();
    sig.results.push_back(it->second.value);
    sig.resultTypes.push_back(type);
    sig.resultAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(mlir::mp::MPDialect::OutputAttrHelper::getNameStr(),
                       b.getStringAttr(out.name()))));
  }
  return success();
}

/// Verifies the module, then folds the importer's reshape chains and drops
/// constants and shape computations no result depends on.
LogicalResult GraphImporter::finish(ModuleOp module) {
  if (failed(verify(module))) {
    emitError(fileLoc) << "the imported module does not verify (an importer "
                          "bug; please report it with the model)";
    return failure();
  }
  PassManager pm(ctx);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  return pm.run(module);
}

OwningOpRef<ModuleOp> GraphImporter::run(const onnx::ModelProto &model) {
  if (failed(readOpset(model)))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, fileLoc, options.functionName,
                                   b.getFunctionType({}, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  Signature sig;
  if (failed(importInputs(graph, entry, b, sig)) ||
      failed(importInitializers(graph, entry, b, sig)))
    return nullptr;
  for (const onnx::NodeProto &node : graph.node())
    if (failed(importNode(node, b)))
      return nullptr;
  if (failed(importOutputs(graph, b, sig)))
    return nullptr;

  func::ReturnOp::create(b, fileLoc, sig.results);
  func.setFunctionType(b.getFunctionType(sig.argTypes, sig.resultTypes));
  func.setAllArgAttrs(sig.argAttrs);
  func.setAllResultAttrs(sig.resultAttrs);
  func->setAttr(mlir::mp::MPDialect::PredictAttrHelper::getNameStr(),
                b.getUnitAttr());
  if (failed(finish(*module)))
    return nullptr;
  return module;
}

} // namespace
} // namespace onnx_import

OwningOpRef<ModuleOp> importOnnxModel(llvm::StringRef bytes,
                                      llvm::StringRef fileName,
                                      MLIRContext *context,
                                      const OnnxImportOptions &options) {
  context->loadDialect<mlir::mp::MPDialect, func::FuncDialect,
                       arith::ArithDialect,
                       linalg::LinalgDialect, math::MathDialect,
                       tensor::TensorDialect>();
  onnx::ModelProto model;
  if (bytes.size() > size_t(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), int(bytes.size()))) {
    emitError(FileLineColLoc::get(context, fileName, 0, 0))
        << "not an ONNX model (the file does not parse as a ModelProto)";
    return nullptr;
  }
  onnx_import::GraphImporter importer(context, fileName, options);
  return importer.run(model);
}

std::vector<std::string> onnxSupportedOps() {
  std::vector<std::string> ops;
  for (const auto &entry : onnx_import::opTable())
    ops.push_back(entry.getKey().str());
  std::sort(ops.begin(), ops.end());
  return ops;
}

void registerOnnxImportDialects(DialectRegistry &registry) {
  registry.insert<mlir::mp::MPDialect, func::FuncDialect, arith::ArithDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  tensor::TensorDialect>();
}

} // namespace mp
