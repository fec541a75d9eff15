//===- GpuRequireLibdevice.cpp - no libdevice calls without a toolkit -----===//
//
// Upstream's gpu-module-to-binary links libdevice only when it knows a CUDA
// toolkit; without one it leaves calls to __nv_* functions in the PTX, and
// the failure surfaces only when a driver loads the module. --mp-lower-gpu
// runs this pass when it found no toolkit so that the error comes at
// compile time, at the launch site of the kernel.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPGPUREQUIRELIBDEVICE
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

struct GpuRequireLibdevicePass
    : public mp::impl::MPGpuRequireLibdeviceBase<GpuRequireLibdevicePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool failed = false;
    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      auto libdeviceCall = llvm::find_if(
          kernels.getOps<LLVM::LLVMFuncOp>(), [](LLVM::LLVMFuncOp func) {
            return func.isExternal() && func.getName().starts_with("__nv_");
          });
      if (libdeviceCall == kernels.getOps<LLVM::LLVMFuncOp>().end())
        continue;
      // Kernel bodies lost their locations (strip-debuginfo); the host
      // launch keeps the location of the op the kernel came from.
      Operation *at = kernels;
      module.walk([&](gpu::LaunchFuncOp launch) {
        if (launch.getKernelModuleName() == kernels.getNameAttr()) {
          at = launch;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      at->emitError() << "kernel module '" << kernels.getName()
                      << "' calls libdevice function '"
                      << (*libdeviceCall).getName()
                      << "' (from a math op), but no CUDA toolkit with "
                         "nvvm/libdevice/libdevice.10.bc was found; set "
                         "CUDA_HOME or pass toolkit=DIR to --mp-lower-gpu";
      failed = true;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
