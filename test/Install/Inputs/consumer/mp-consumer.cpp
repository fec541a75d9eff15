//===- mp-consumer.cpp - a downstream tool built on installed mp ----------===//
//
// Registers mp's dialect and passes into its own context and registry, runs
// the precision analysis (by name, from the registry) and the mixed-precision
// rewrite (by constructor, with typed options) on a model, and prints the
// result with a count of the f16/bf16 matrix products.
//
//===----------------------------------------------------------------------===//

#include "mp/InitAll.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: mp-consumer MODEL.mlir f16|bf16\n";
    return 2;
  }
  llvm::StringRef dtype = argv[2];
  if (dtype != "f16" && dtype != "bf16") {
    llvm::errs() << "mp-consumer: dtype must be f16 or bf16\n";
    return 2;
  }

  DialectRegistry registry;
  registry.insert<arith::ArithDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  tensor::TensorDialect>();
  mp::registerAllDialects(registry);
  mp::registerAllPasses();
  MLIRContext context(registry);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(argv[1], &context);
  if (!module)
    return 1;

  PassManager pm(&context);
  // By name, from the registry mp::registerAllPasses filled: the analysis
  // leaves its decisions on the ops...
  std::string analysis = "mp-analyze-precision{dtype=" + dtype.str() + "}";
  if (failed(parsePassPipeline(analysis, pm, llvm::errs())))
    return 1;
  // ... and the rewrite, by constructor with typed options, follows them.
  mp::AutoMixedPrecisionOptions options;
  options.dtype =
      dtype == "f16" ? mp::FloatPrecision::F16 : mp::FloatPrecision::BF16;
  pm.addPass(mp::createAutoMixedPrecision(options));
  if (failed(pm.run(*module)))
    return 1;

  int lowPrecisionProducts = 0;
  module->walk([&](linalg::MatmulOp matmul) {
    Type element = getElementTypeOrSelf(matmul.getInputs()[0].getType());
    if (element.isF16() || element.isBF16())
      ++lowPrecisionProducts;
  });
  module->print(llvm::outs());
  llvm::outs() << "\nmp-consumer: " << lowPrecisionProducts << " " << dtype
               << " matrix products\n";
  return 0;
}
