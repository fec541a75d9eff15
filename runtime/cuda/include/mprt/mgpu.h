/*===- mgpu.h - mp runtime: MLIR's GPU runtime ABI -------------*- C -*-===*
 *
 * The `mgpu*` functions that host code from MLIR 22's gpu-to-llvm and
 * gpu.binary translation calls, as libmprt_cuda.so implements them
 * (docs/gpu.md, "The mgpu* ABI"). Handles are opaque pointers; index
 * arguments are 64-bit. Declared here for C and C++ callers (drivers,
 * tests); compiled code resolves them by name.
 *===----------------------------------------------------------------------===*/

#ifndef MPRT_MGPU_H
#define MPRT_MGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);

void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventRecord(void *event, void *stream);
void mgpuEventSynchronize(void *event);

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostUnregister(void *ptr);
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes);
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes);
void mgpuSetDefaultDevice(int32_t device);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MPRT_MGPU_H */
