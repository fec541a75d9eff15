//===- Import.cpp - tosa to linalg on tensors, canonical form -------------===//

#include "mp/Transforms/Passes.h"

#include "mlir/Conversion/TosaToArith/TosaToArith.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Conversion/TosaToTensor/TosaToTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPIMPORT
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {
struct ImportPass : mp::impl::MPImportBase<ImportPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    MPImportBase::getDependentDialects(registry);
    OpPassManager pm = buildPipeline();
    pm.getDependentDialects(registry);
  }

  static OpPassManager buildPipeline() {
    OpPassManager pm(ModuleOp::getOperationName());
    OpPassManager &func = pm.nest<func::FuncOp>();
    func.addPass(tosa::createTosaToLinalgNamed());
    func.addPass(tosa::createTosaToLinalg());
    func.addPass(createTosaToArithPass());
    func.addPass(createTosaToTensorPass());
    pm.addPass(createCanonicalizerPass());
    return pm;
  }

  void runOnOperation() override {
    OpPassManager pipeline = buildPipeline();
    if (failed(runPipeline(pipeline, getOperation())))
      return signalPassFailure();
  }
};
} // namespace
