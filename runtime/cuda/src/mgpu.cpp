//===- mgpu.cpp - MLIR's GPU runtime ABI on the CUDA driver API ----------===//
//
// The functions `gpu-to-llvm` and the gpu.binary translation of MLIR 22
// call. Signatures follow what MLIR 22 emits (checked by lowering gpu ops
// with mlir-opt/mlir-translate 22): index arguments are intptr_t, a PTX
// module is loaded with mgpuModuleLoadJIT(data, optLevel) and a fatbin with
// mgpuModuleLoad(data, size), mgpuLaunchKernel ends with the parameter
// count, mgpuMemAlloc takes an isHostShared flag.
//
// The ABI returns void or a bare handle, so a failure cannot be returned:
// it goes to recordError (exit with the message, or record it for
// mprt_cuda_check; see mprt/mprt_cuda.h), and handles come back NULL.
//
//===----------------------------------------------------------------------===//

#include "mprt/mgpu.h"
#include "driver.h"
#include "pool.h"

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <unordered_set>
#include <vector>

using namespace mprt::cuda;

namespace {

// Blocks from cuMemAllocManaged (gpu.alloc host_shared) are not pooled.
std::mutex managedMutex;
std::unordered_set<CUdeviceptr> &managedBlocks() {
  static auto *s = new std::unordered_set<CUdeviceptr>;
  return *s;
}

const Driver &d() { return *driver(); }

/// Byte extent of a strided memref descriptor of `rank` (MLIR's
/// {allocated, aligned, offset, sizes[rank], strides[rank]}): from the first
/// element to one past the last, 0 if it has no element.
struct MemRefDescriptor {
  void *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; // sizes[rank] then strides[rank]
};

bool memRefExtent(int64_t rank, const MemRefDescriptor *desc,
                  int64_t elementSize, char *&begin, uint64_t &bytes) {
  if (!desc || rank < 0 || elementSize <= 0)
    return false;
  begin = desc->aligned + desc->offset * elementSize;
  const int64_t *sizes = desc->sizesAndStrides;
  const int64_t *strides = sizes + rank;
  int64_t last = 0; // offset of the last element, in elements
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] <= 0) {
      bytes = 0;
      return true;
    }
    if (strides[i] < 0)
      return false;
    last += (sizes[i] - 1) * strides[i];
  }
  bytes = static_cast<uint64_t>(last + 1) * elementSize;
  return true;
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Modules and launches
//===----------------------------------------------------------------------===//

/// A cubin or fatbin (gpu-module-to-binary format=bin|fatbin).
void *mgpuModuleLoad(void *data, size_t /*size*/) {
  ScopedContext context("mgpuModuleLoad");
  if (!context.ok())
    return nullptr;
  CUmodule module = nullptr;
  if (!check(d().cuModuleLoadData(&module, data), "mgpuModuleLoad",
             "cuModuleLoadData"))
    return nullptr;
  return module;
}

/// PTX text (format=isa), compiled by the driver's JIT at `optLevel`; its
/// log is part of the error message.
void *mgpuModuleLoadJIT(void *data, int optLevel) {
  ScopedContext context("mgpuModuleLoadJIT");
  if (!context.ok())
    return nullptr;
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1),
                    reinterpret_cast<void *>(static_cast<intptr_t>(
                        optLevel < 0 ? 0 : (optLevel > 4 ? 4 : optLevel)))};
  CUmodule module = nullptr;
  CUresult r = d().cuModuleLoadDataEx(&module, data, 3, options, values);
  if (r != CUDA_SUCCESS) {
    recordError("mgpuModuleLoadJIT: cuModuleLoadDataEx failed: %s%s%s",
                resultText(r).c_str(), log[0] ? "; PTX JIT log: " : "", log);
    return nullptr;
  }
  return module;
}

void mgpuModuleUnload(void *module) {
  // Module unloads run from global destructors; a null module is what a
  // failed load left behind and was reported then.
  if (!module)
    return;
  ScopedContext context("mgpuModuleUnload");
  if (context.ok())
    check(d().cuModuleUnload(static_cast<CUmodule>(module)), "mgpuModuleUnload",
          "cuModuleUnload");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module) {
    recordError("mgpuModuleGetFunction(%s): the module did not load", name);
    return nullptr;
  }
  ScopedContext context("mgpuModuleGetFunction");
  if (!context.ok())
    return nullptr;
  CUfunction function = nullptr;
  CUresult r =
      d().cuModuleGetFunction(&function, static_cast<CUmodule>(module), name);
  if (r != CUDA_SUCCESS) {
    recordError("mgpuModuleGetFunction: kernel '%s': %s", name,
                resultText(r).c_str());
    return nullptr;
  }
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  if (!function) {
    recordError("mgpuLaunchKernel: no kernel (its module or function did not "
                "load); launch skipped");
    return;
  }
  if (errorPending()) {
    // An earlier failure (an allocation, a copy) makes the arguments
    // suspect; running would fault the context or compute garbage.
    recordError("mgpuLaunchKernel: launch skipped after an earlier error");
    return;
  }
  auto fits = [](intptr_t v) { return v >= 1 && v <= INT32_MAX; };
  if (!fits(gridX) || !fits(gridY) || !fits(gridZ) || !fits(blockX) ||
      !fits(blockY) || !fits(blockZ)) {
    recordError("mgpuLaunchKernel: bad launch shape grid (%ld, %ld, %ld) "
                "block (%ld, %ld, %ld)",
                (long)gridX, (long)gridY, (long)gridZ, (long)blockX,
                (long)blockY, (long)blockZ);
    return;
  }
  ScopedContext context("mgpuLaunchKernel");
  if (!context.ok())
    return;
  check(d().cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY,
                           gridZ, blockX, blockY, blockZ, smem,
                           static_cast<CUstream>(stream), params, extra),
        "mgpuLaunchKernel", "cuLaunchKernel");
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

void *mgpuStreamCreate() {
  ScopedContext context("mgpuStreamCreate");
  if (!context.ok())
    return nullptr;
  CUstream stream = nullptr;
  check(d().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "mgpuStreamCreate",
        "cuStreamCreate");
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  if (!stream)
    return; // a failed create, reported then
  ScopedContext context("mgpuStreamDestroy");
  if (context.ok())
    check(d().cuStreamDestroy(static_cast<CUstream>(stream)),
          "mgpuStreamDestroy", "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  ScopedContext context("mgpuStreamSynchronize");
  if (context.ok())
    // Errors of asynchronous work (a kernel's illegal address) surface here.
    check(d().cuStreamSynchronize(static_cast<CUstream>(stream)),
          "mgpuStreamSynchronize", "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  if (!event) {
    recordError("mgpuStreamWaitEvent: no event (its creation failed)");
    return;
  }
  ScopedContext context("mgpuStreamWaitEvent");
  if (context.ok())
    check(d().cuStreamWaitEvent(static_cast<CUstream>(stream),
                                static_cast<CUevent>(event), 0),
          "mgpuStreamWaitEvent", "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  ScopedContext context("mgpuEventCreate");
  if (!context.ok())
    return nullptr;
  CUevent event = nullptr;
  check(d().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "mgpuEventCreate",
        "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  if (!event)
    return;
  ScopedContext context("mgpuEventDestroy");
  if (context.ok())
    check(d().cuEventDestroy(static_cast<CUevent>(event)), "mgpuEventDestroy",
          "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  if (!event) {
    recordError("mgpuEventSynchronize: no event (its creation failed)");
    return;
  }
  ScopedContext context("mgpuEventSynchronize");
  if (context.ok())
    check(d().cuEventSynchronize(static_cast<CUevent>(event)),
          "mgpuEventSynchronize", "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  if (!event) {
    recordError("mgpuEventRecord: no event (its creation failed)");
    return;
  }
  ScopedContext context("mgpuEventRecord");
  if (context.ok())
    check(d().cuEventRecord(static_cast<CUevent>(event),
                            static_cast<CUstream>(stream)),
          "mgpuEventRecord", "cuEventRecord");
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// gpu.alloc: a pool block, or managed memory for `host_shared`.
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  ScopedContext context("mgpuMemAlloc");
  if (!context.ok())
    return nullptr;
  if (sizeBytes == 0)
    sizeBytes = 1; // a valid, distinct pointer for empty memrefs
  CUresult r;
  if (isHostShared) {
    CUdeviceptr ptr = 0;
    r = d().cuMemAllocManaged(&ptr, sizeBytes, CU_MEM_ATTACH_GLOBAL);
    if (r != CUDA_SUCCESS) {
      recordError("mgpuMemAlloc: cuMemAllocManaged of %llu bytes failed: %s",
                  (unsigned long long)sizeBytes, resultText(r).c_str());
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(managedMutex);
    managedBlocks().insert(ptr);
    return reinterpret_cast<void *>(ptr);
  }
  CUdeviceptr ptr = poolAllocate(sizeBytes, static_cast<CUstream>(stream), r);
  if (!ptr) {
    recordError("mgpuMemAlloc: %llu bytes: %s", (unsigned long long)sizeBytes,
                resultText(r).c_str());
    return nullptr;
  }
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  ScopedContext context("mgpuMemFree");
  if (!context.ok())
    return;
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  {
    std::lock_guard<std::mutex> lock(managedMutex);
    if (managedBlocks().erase(p)) {
      if (stream)
        check(d().cuStreamSynchronize(static_cast<CUstream>(stream)),
              "mgpuMemFree", "cuStreamSynchronize");
      check(d().cuMemFree(p), "mgpuMemFree", "cuMemFree");
      return;
    }
  }
  CUresult r;
  if (!poolFree(p, static_cast<CUstream>(stream), r)) {
    recordError("mgpuMemFree: %p was not allocated by mgpuMemAlloc (or was "
                "freed twice)",
                ptr);
    return;
  }
  check(r, "mgpuMemFree", "ordering the free after the stream's work");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  if (sizeBytes == 0)
    return;
  ScopedContext context("mgpuMemcpy");
  if (context.ok())
    // Unified addressing: the driver tells host from device pointers.
    check(d().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                            reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                            static_cast<CUstream>(stream)),
          "mgpuMemcpy", "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  ScopedContext context("mgpuMemset32");
  if (context.ok())
    check(d().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                               static_cast<CUstream>(stream)),
          "mgpuMemset32", "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  ScopedContext context("mgpuMemset16");
  if (context.ok())
    check(d().cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                               static_cast<CUstream>(stream)),
          "mgpuMemset16", "cuMemsetD16Async");
}

/// Page-locks host memory and maps it for the device (gpu.host_register).
/// Registering memory twice is not an error: a buffer may be passed to
/// several functions.
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  if (!ptr || sizeBytes == 0)
    return;
  ScopedContext context("mgpuMemHostRegister");
  if (!context.ok())
    return;
  CUresult r = d().cuMemHostRegister(ptr, sizeBytes,
                                     CU_MEMHOSTREGISTER_PORTABLE |
                                         CU_MEMHOSTREGISTER_DEVICEMAP);
  if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    return;
  if (r != CUDA_SUCCESS)
    recordError("mgpuMemHostRegister: %llu bytes at %p: %s",
                (unsigned long long)sizeBytes, ptr, resultText(r).c_str());
}

void mgpuMemHostUnregister(void *ptr) {
  if (!ptr)
    return;
  ScopedContext context("mgpuMemHostUnregister");
  if (!context.ok())
    return;
  CUresult r = d().cuMemHostUnregister(ptr);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
    recordError("mgpuMemHostUnregister: %p: %s", ptr, resultText(r).c_str());
}

/// gpu.host_register on a memref: `descriptor` points at a ranked memref
/// descriptor of `rank`. Any strides are accepted (the registered range
/// spans the first to the last element); rank 0 registers one element.
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes) {
  char *begin;
  uint64_t bytes;
  if (!memRefExtent(rank, static_cast<MemRefDescriptor *>(descriptor),
                    elementSizeBytes, begin, bytes)) {
    recordError("mgpuMemHostRegisterMemRef: bad memref (rank %lld, element "
                "size %lld, or a negative stride)",
                (long long)rank, (long long)elementSizeBytes);
    return;
  }
  mgpuMemHostRegister(begin, bytes);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes) {
  char *begin;
  uint64_t bytes;
  if (!memRefExtent(rank, static_cast<MemRefDescriptor *>(descriptor),
                    elementSizeBytes, begin, bytes)) {
    recordError("mgpuMemHostUnregisterMemRef: bad memref");
    return;
  }
  if (bytes)
    mgpuMemHostUnregister(begin);
}

} // extern "C"
