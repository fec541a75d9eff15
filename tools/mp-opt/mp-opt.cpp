//===- mp-opt.cpp - the mp optimizer driver -------------------------------===//
//
// mlir-opt with every upstream dialect and pass plus mp's, so upstream passes
// chain freely with the mixed-precision pipeline.
//
//===----------------------------------------------------------------------===//

#include "mp/InitAll.h"
#include "mp/Session/SessionPipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::mp::registerAllPasses();
  // mp-session-train: what a training session compiles.
  mp::registerSessionPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::mp::registerAllDialects(registry);
  // gpu-module-to-binary (--mp-lower-gpu) translates kernels to LLVM IR.
  mlir::registerAllGPUToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "mp optimizer driver: automatic mixed precision\n",
      registry));
}
