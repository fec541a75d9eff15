//===- TranslateRegistration.cpp - `--import-onnx` for mp-translate ------===//

#include "mp/Target/ONNX/ImportOnnx.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace mp {

namespace {
llvm::cl::OptionCategory onnxCategory("ONNX import options (--import-onnx)");

llvm::cl::opt<bool> paramsAsArguments(
    "params-as-arguments",
    llvm::cl::desc("Float initializers become mp.param arguments after the "
                   "graph inputs (default); =false makes them constants"),
    llvm::cl::init(true), llvm::cl::cat(onnxCategory));

llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Fix a graph input's shape: NAME=D0xD1x... (repeatable; "
                   "needed for dynamic dimensions)"),
    llvm::cl::cat(onnxCategory));

llvm::cl::opt<bool> initialValues(
    "initial-values",
    llvm::cl::desc("Parameter arguments carry the initializers' values as "
                   "mp.initial_value (default), so sessions start from them"),
    llvm::cl::init(true), llvm::cl::cat(onnxCategory));

llvm::cl::opt<int64_t> batchSize(
    "batch-size",
    llvm::cl::desc("A dynamic first dimension of a graph input becomes this "
                   "size (default 0: an error unless --input-shape fixes it)"),
    llvm::cl::init(0), llvm::cl::cat(onnxCategory));

llvm::cl::opt<std::string>
    functionName("onnx-function",
                 llvm::cl::desc("Name of the imported function (marked "
                                "mp.predict; default: predict)"),
                 llvm::cl::init("predict"), llvm::cl::cat(onnxCategory));

/// "x=1x3x8x8" -> ("x", {1, 3, 8, 8}).
LogicalResult parseShape(llvm::StringRef text, OnnxImportOptions &options,
                         Location loc) {
  auto [name, dims] = text.rsplit('=');
  if (name.empty() || dims.empty() || !text.contains('='))
    return emitError(loc) << "--input-shape '" << text
                          << "' is not NAME=D0xD1x...";
  std::vector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, 'x');
  for (llvm::StringRef part : parts) {
    int64_t d;
    if (part.getAsInteger(10, d) || d < 0)
      return emitError(loc) << "--input-shape '" << text << "': '" << part
                            << "' is not a dimension size";
    shape.push_back(d);
  }
  if (dims == "scalar")
    shape.clear();
  options.inputShapes[name.str()] = shape;
  return success();
}
} // namespace

void registerImportOnnxTranslation() {
  static TranslateToMLIRRegistration registration(
      "import-onnx", "ONNX model (ModelProto) -> MLIR on tensors",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        llvm::StringRef fileName = buffer->getBufferIdentifier();
        OnnxImportOptions options;
        options.paramsAsArguments = paramsAsArguments;
        options.functionName = functionName;
        options.initialValues = initialValues;
        options.batchSize = batchSize;
        Location loc = FileLineColLoc::get(context, fileName, 0, 0);
        for (const std::string &shape : inputShapes)
          if (failed(parseShape(shape, options, loc)))
            return nullptr;
        return importOnnxModel(buffer->getBuffer(), fileName, context, options);
      },
      [](DialectRegistry &registry) { registerOnnxImportDialects(registry); });
}

} // namespace mp
