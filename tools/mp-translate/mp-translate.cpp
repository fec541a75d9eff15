//===- mp-translate.cpp - translations into MLIR --------------------------===//
//
// mp-translate --import-onnx model.onnx [--input-shape x=1x3x8x8]
//              [--params-as-arguments=false] [-o model.mlir]
// mp-translate --list-onnx-ops
//
//===----------------------------------------------------------------------===//

#include "mp/Target/ONNX/ImportOnnx.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

int main(int argc, char **argv) {
  // --list-onnx-ops: the op types --import-onnx takes, one a line.
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--list-onnx-ops")) {
      for (const std::string &op : mp::onnxSupportedOps())
        llvm::outs() << op << "\n";
      return 0;
    }
  mp::registerImportOnnxTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "mp-translate: models into MLIR"));
}
