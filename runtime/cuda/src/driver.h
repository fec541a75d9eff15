//===- driver.h - The CUDA driver, loaded with dlopen -----------*- C++ -*-===//
//
// libmprt_cuda does not link libcuda: the driver's entry points are looked
// up in libcuda.so.1 at first use, so the library loads on machines without
// a GPU. The prototypes come from cuda.h (decltype), and the symbol names
// too: cuda.h maps cuMemAlloc to cuMemAlloc_v2 etc. with macros, and the
// names are stringized after macro expansion.
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_CUDA_DRIVER_H
#define MPRT_CUDA_DRIVER_H

#include "mprt/mprt_cuda.h"

#include <cuda.h>

#include <string>

namespace mprt::cuda {

// X(name) for every driver function the runtime calls.
#define MPRT_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventSynchronize)                                                        \
  X(cuEventRecord)                                                             \
  X(cuEventQuery)                                                              \
  X(cuMemAlloc)                                                                \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree)                                                                 \
  X(cuMemcpyAsync)                                                             \
  X(cuMemcpy2DAsync)                                                           \
  X(cuMemsetD16Async)                                                          \
  X(cuMemsetD32Async)                                                          \
  X(cuMemHostRegister)                                                         \
  X(cuMemHostUnregister)

/// The driver's entry points; all non-null once load() succeeded.
struct Driver {
#define MPRT_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  MPRT_CUDA_DRIVER_FUNCTIONS(MPRT_CUDA_DECLARE)
#undef MPRT_CUDA_DECLARE
};

/// The driver with cuInit done and device 0's primary context retained, or
/// null (then `why` says what failed). Thread-safe; tried once per process.
const Driver *driver(std::string *why = nullptr);

/// The primary context of the default device (valid once driver() is).
CUcontext primaryContext();

/// The device in use: the one mgpuSetDefaultDevice asked for before the
/// driver started, else device 0 (valid once driver() is).
CUdevice currentDevice();

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code.
std::string resultText(CUresult result);

/// Makes the primary context current for the scope (and restores the
/// previous one), as each mgpu function must: the JIT's threads never made
/// a context current themselves.
class ScopedContext {
public:
  explicit ScopedContext(const char *function);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;
  /// False when there is no driver (an error was recorded then).
  bool ok() const { return pushed; }

private:
  bool pushed = false;
};

/// Records an error of a void mgpu function (see mprt_cuda_error_mode):
/// "mgpuLaunchKernel: cuLaunchKernel failed: CUDA_ERROR_...".
void recordError(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// Records `what` failed with `result` unless it is CUDA_SUCCESS; returns
/// whether it succeeded.
bool check(CUresult result, const char *function, const char *what);

/// True when an mgpu error is pending (launches are skipped then).
bool errorPending();

} // namespace mprt::cuda

#endif // MPRT_CUDA_DRIVER_H
