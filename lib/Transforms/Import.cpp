//===- Import.cpp - tosa to linalg on tensors, canonical form -------------===//

#include "mp/Transforms/Passes.h"

#include "mlir/Conversion/TosaToArith/TosaToArith.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Conversion/TosaToSCF/TosaToSCF.h"
#include "mlir/Conversion/TosaToTensor/TosaToTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Quant/IR/QuantTypes.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Tosa/Transforms/Passes.h"
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
    buildValidation().getDependentDialects(registry);
    buildPipeline().getDependentDialects(registry);
  }

  /// Unranked results get their shapes, then upstream's TOSA validation
  /// says what is wrong with each op it refuses (it changes nothing).
  static OpPassManager buildValidation() {
    OpPassManager pm(ModuleOp::getOperationName());
    pm.nest<func::FuncOp>().addPass(tosa::createTosaInferShapesPass());
    pm.addPass(tosa::createTosaValidation());
    return pm;
  }

  static OpPassManager buildPipeline() {
    OpPassManager pm(ModuleOp::getOperationName());
    OpPassManager &func = pm.nest<func::FuncOp>();
    // Control flow and scatter become scf (their bodies' tosa ops are
    // converted below like any other).
    func.addPass(createTosaToSCFPass());
    func.addPass(tosa::createTosaToLinalgNamed());
    func.addPass(tosa::createTosaToLinalg());
    func.addPass(createTosaToArithPass());
    func.addPass(createTosaToTensorPass());
    pm.addPass(createCanonicalizerPass());
    return pm;
  }

  /// The quantized element type of one of `op`'s operands or results.
  static Type quantizedType(Operation *op) {
    for (TypeRange types :
         {TypeRange(op->getOperandTypes()), TypeRange(op->getResultTypes())})
      for (Type type : types)
        if (isa<quant::QuantizedType>(getElementTypeOrSelf(type)))
          return getElementTypeOrSelf(type);
    return {};
  }

  void runOnOperation() override {
    // Upstream's tosa-to-linalg crashes on quantized element types (TFLite
    // int8 models): refuse them here, naming the op and the type.
    WalkResult quantized = getOperation().walk([](Operation *op) {
      if (!isa<tosa::TosaDialect>(op->getDialect()))
        return WalkResult::advance();
      Type type = quantizedType(op);
      if (!type)
        return WalkResult::advance();
      op->emitOpError() << "on the quantized type " << type
                        << ": mp imports float and integer TOSA only "
                           "(dequantize the model, or give its int8 "
                           "tensors as plain i8 with explicit rescales)";
      return WalkResult::interrupt();
    });
    if (quantized.wasInterrupted())
      return signalPassFailure();

    // The conversion's refusal of an op only says "failed to legalize".
    // Validation knows why (a zero point that is no constant, an op or
    // type outside the profile, a level exceeded), but is stricter than
    // the conversion: its findings are kept aside, and only an op the
    // conversion refuses gets them, as notes.
    MLIRContext *context = &getContext();
    llvm::DenseMap<Location, std::vector<std::string>> findings;
    {
      ScopedDiagnosticHandler collect(context, [&](Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
          findings[diagnostic.getLocation()].push_back(diagnostic.str());
        return success(); // not shown unless the conversion refuses
      });
      OpPassManager validation = buildValidation();
      (void)runPipeline(validation, getOperation());
    }
    ScopedDiagnosticHandler explain(context, [&](Diagnostic &diagnostic) {
      auto found = findings.find(diagnostic.getLocation());
      if (diagnostic.getSeverity() == DiagnosticSeverity::Error &&
          found != findings.end())
        for (const std::string &finding : found->second)
          diagnostic.attachNote() << "TOSA validation: " << finding;
      return failure(); // shown by the handlers before this one
    });
    OpPassManager pipeline = buildPipeline();
    if (failed(runPipeline(pipeline, getOperation())))
      return signalPassFailure();
  }
};
} // namespace
