//===- OnnxImporter.h - shared pieces of the ONNX importer ------*- C++ -*-===//
//
// Internal to lib/Target/ONNX: the per-node context an operator importer
// gets, the operator tables, and the tensor builders the importers share
// (broadcasting elementwise linalg.generic, reductions, reshapes).
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_TARGET_ONNX_ONNXIMPORTER_H
#define MP_LIB_TARGET_ONNX_ONNXIMPORTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <functional>
#include <optional>

namespace mp::onnx_import {

using mlir::Location;
using mlir::OpBuilder;
using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;
using llvm::ArrayRef;
using llvm::SmallVector;

/// ONNX element types (TensorProto::DataType values).
using DType = int32_t;
bool isFloatDType(DType t);
bool isUnsignedDType(DType t);
bool isBoolDType(DType t);
/// The MLIR element type of an ONNX one (signless integers; the ONNX type
/// travels with every value so signedness is not lost); null if none.
Type elementType(mlir::MLIRContext *ctx, DType t);
std::string dtypeName(DType t);

/// An imported value: an MLIR ranked tensor and its ONNX element type.
struct TypedValue {
  Value value;
  DType dtype = 0;
  explicit operator bool() const { return bool(value); }
};

/// What an operator importer sees of one node.
class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, std::string name, int64_t opset,
              OpBuilder &b, Location loc, SmallVector<TypedValue> inputs)
      : node(node), name(std::move(name)), opset(opset), b(b), loc(loc),
        inputs(std::move(inputs)) {}

  const onnx::NodeProto &node;
  /// The node's name, or its first output's where it has none.
  std::string name;
  int64_t opset;
  OpBuilder &b;
  Location loc;
  SmallVector<TypedValue> inputs; // null entries: optional inputs left out

  unsigned numInputs() const { return inputs.size(); }
  bool hasInput(unsigned i) const { return i < inputs.size() && inputs[i]; }
  Value input(unsigned i) const { return inputs[i].value; }
  DType dtype(unsigned i) const { return inputs[i].dtype; }
  RankedTensorType type(unsigned i) const {
    return llvm::cast<RankedTensorType>(inputs[i].value.getType());
  }
  ArrayRef<int64_t> shape(unsigned i) const { return type(i).getShape(); }
  int64_t rank(unsigned i) const { return type(i).getRank(); }
  unsigned numOutputs() const { return node.output_size(); }
  /// True if output i is wanted (present and named).
  bool hasOutput(unsigned i) const {
    return (int)i < node.output_size() && !node.output(i).empty();
  }

  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  bool has(llvm::StringRef name) const { return attr(name) != nullptr; }
  int64_t getInt(llvm::StringRef name, int64_t dflt) const;
  float getFloat(llvm::StringRef name, float dflt) const;
  std::string getString(llvm::StringRef name, llvm::StringRef dflt) const;
  SmallVector<int64_t> getInts(llvm::StringRef name) const;
  SmallVector<float> getFloats(llvm::StringRef name) const;

  /// The constant value of input i (an initializer kept as a constant, a
  /// Constant node or a folded shape computation), if it has one.
  std::optional<mlir::DenseElementsAttr> constant(unsigned i) const;
  /// Input i as constant integers; an error naming `what` if it is not a
  /// constant (shapes, axes, pads must be known when importing).
  mlir::FailureOr<SmallVector<int64_t>> constInts(unsigned i,
                                                  llvm::StringRef what);

  /// The node's axes: the constant input 1 (opsets where they moved
  /// there; empty when left out) or the "axes" attribute.
  mlir::FailureOr<SmallVector<int64_t>> axesAttrOrInput(bool fromInput);

  /// An error at the node, prefixed "node 'N' (Op, opset K): ".
  mlir::InFlightDiagnostic error();
  /// A normalized axis in [0, rank); an error if out of range.
  mlir::FailureOr<int64_t> axis(int64_t axis, int64_t rank);
  /// Requires input i to be a floating-point tensor.
  mlir::LogicalResult requireFloat(unsigned i);
};

using Results = mlir::FailureOr<SmallVector<TypedValue>>;
using ImportFn = std::function<Results(NodeContext &)>;
using OpTable = llvm::StringMap<ImportFn>;

void addElementwiseOps(OpTable &table);
/// Evaluates integer shape computations whose inputs are all constants
/// (Shape -> Gather -> Concat -> Reshape); an empty result if it does not
/// apply, so the node is imported as ops.
Results foldIntegerNode(NodeContext &ctx);
/// An ONNX tensor (raw, typed or external data; `modelDir` resolves external
/// files) as a dense attribute.
mlir::FailureOr<mlir::DenseElementsAttr>
tensorToAttr(const onnx::TensorProto &t, llvm::StringRef modelDir,
             Location loc);
void addTensorOps(OpTable &table);
void addNeuralNetOps(OpTable &table);
void addIndexOps(OpTable &table);
/// Resize/Upsample, TopK, GatherND, ScatterElements/Scatter, ScatterND.
void addResizeScatterOps(OpTable &table);

// -- builders -----------------------------------------------------------------

/// `arith.constant` of a dense attribute.
Value constantOf(OpBuilder &b, Location loc, mlir::DenseElementsAttr value);
/// A scalar (not tensor) constant of an int or float element type.
Value scalarConstant(OpBuilder &b, Location loc, Type elem, double value);
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elem);
/// A tensor filled with `value` (linalg.fill).
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elem, double value);

/// Multidirectional (numpy) broadcast of shapes; failure if incompatible.
mlir::FailureOr<SmallVector<int64_t>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes);

/// Computes the body of an elementwise op from one scalar per operand.
using ScalarFn =
    std::function<Value(OpBuilder &, Location, mlir::ValueRange args)>;
/// A linalg.generic over `resultShape` (which every operand broadcasts to)
/// yielding `body` of the operands' elements. Broadcast dimensions are
/// collapsed away so that every indexing map is a projected permutation.
Value elementwise(OpBuilder &b, Location loc, mlir::ValueRange operands,
                  ArrayRef<int64_t> resultShape, Type resultElem,
                  const ScalarFn &body);

/// Any static reshape (collapse to one dimension, expand to the target).
Value reshape(OpBuilder &b, Location loc, Value input,
              ArrayRef<int64_t> shape);
/// linalg.transpose by `perm` (result dim i = input dim perm[i]).
Value transpose(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> perm);

/// A reduction over `axes` (sorted, distinct, in range) of `prologue(x)` for
/// each element x, combined with `combine(acc, v)` from `init`; the result
/// keeps the reduced dimensions as size 1 if `keepDims`.
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             bool keepDims, double init,
             const std::function<Value(OpBuilder &, Location, Value, Value)>
                 &combine,
             const std::function<Value(OpBuilder &, Location, Value)>
                 &prologue = nullptr);

/// The element index for an indices value `raw` (any integer type) of a
/// dimension of size `dim`, negative values counting from the end.
Value normalizedIndex(OpBuilder &b, Location loc, Value raw, int64_t dim);
/// normalizedIndex clamped into [0, dim), so that a read stays in bounds.
Value clampedIndex(OpBuilder &b, Location loc, Value raw, int64_t dim);
/// Converts a scalar between ONNX element types (Cast's semantics).
Value convertScalar(OpBuilder &b, Location loc, Value v, DType from, DType to);
/// Converts a whole tensor between ONNX element types.
Value convertTensor(OpBuilder &b, Location loc, Value v, DType from, DType to);

int64_t product(ArrayRef<int64_t> dims);

/// log(softmax(x)) over `axes` (max-shifted, so large inputs do not
/// overflow).
Value logSoftmax(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes);

} // namespace mp::onnx_import

#endif // MP_LIB_TARGET_ONNX_ONNXIMPORTER_H
