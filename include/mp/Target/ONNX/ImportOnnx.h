//===- ImportOnnx.h - ONNX models as MLIR on tensors ------------*- C++ -*-===//
//
// An ONNX model (a ModelProto file, opsets 7 to 17) becomes one function on
// tensors in linalg, tensor, arith and math, the form mp's passes take as it
// is. Graph inputs are the function's leading arguments, in the graph's
// order; float initializers become trailing `mp.param` arguments (or dense
// constants); graph outputs are its results. Shapes are static: a dynamic
// input dimension must be fixed with `inputShapes`. An operator or attribute
// the importer does not take is an error naming the node, its op type and
// opset and what is missing; nothing is approximated.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TARGET_ONNX_IMPORTONNX_H
#define MP_TARGET_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>
#include <vector>

namespace mp {

struct OnnxImportOptions {
  /// Float initializers become `mp.param = "<initializer name>"` arguments
  /// after the graph inputs (so the model can be trained); otherwise they
  /// are dense constants. Integer initializers are always constants.
  bool paramsAsArguments = true;
  /// Static shapes for graph inputs whose dimensions are symbolic or
  /// unknown ("name" -> dims); an input named here takes exactly this shape.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Name of the function; it is marked `mp.predict`.
  std::string functionName = "predict";
  /// With paramsAsArguments: each parameter argument also carries its
  /// value as `mp.initial_value`, so sessions start from the model's
  /// weights.
  bool initialValues = true;
  /// A dynamic first dimension of a graph input (the batch, as exporters
  /// write it) becomes this size; 0: dynamic dimensions are errors unless
  /// inputShapes fixes them.
  int64_t batchSize = 0;
};

/// Imports the serialized ModelProto in `bytes`; `fileName` is used in
/// locations and diagnostics. Errors are emitted on the context's
/// diagnostic handler; returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(llvm::StringRef bytes, llvm::StringRef fileName,
                mlir::MLIRContext *context, const OnnxImportOptions &options);

/// The ONNX op types (default domain) the importer takes, sorted.
std::vector<std::string> onnxSupportedOps();

/// Registers the dialects the imported IR uses.
void registerOnnxImportDialects(mlir::DialectRegistry &registry);

/// Registers the `--import-onnx` translation (and its options
/// --params-as-arguments, --input-shape, --onnx-function) for
/// mlirTranslateMain.
void registerImportOnnxTranslation();

} // namespace mp

#endif // MP_TARGET_ONNX_IMPORTONNX_H
