//===- CollectivesToLLVM.cpp - mpi collectives to MPI calls ---------------===//
//
// The all-reduces of --mp-data-parallel become MPI_Allreduce calls through
// upstream's MPI-to-LLVM patterns. Upstream runs them only inside
// convert-to-llvm; mp's lowering converts dialect by dialect, so this pass
// applies them alone, and the memref operands' descriptors meet the
// finalize-memref-to-llvm conversion through unrealized casts.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPCOLLECTIVESTOLLVM
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

struct CollectivesToLLVMPass
    : mp::impl::MPCollectivesToLLVMBase<CollectivesToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    module.walk([&](Operation *op) {
      if (isa<mpi::MPIDialect>(op->getDialect()))
        any = true;
    });
    if (!any)
      return;
    LLVMTypeConverter converter(&getContext());
    RewritePatternSet patterns(&getContext());
    mpi::populateMPIToLLVMConversionPatterns(converter, patterns);
    ConversionTarget target(getContext());
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.addIllegalDialect<mpi::MPIDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
