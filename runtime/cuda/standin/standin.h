/*===- standin.h - CUDA driver stand-in: its own C API -------------*- C -*-===*
 *
 * What the driver stand-in (libcuda.so.1 in build/lib/cuda-standin) exports
 * besides the CUDA driver API: the range and stream checks the cuBLASLt
 * stand-in (libcublasLt.so.13, linked against it) shares, and the counters
 * its tests read. Not part of libmprt_cuda; see driver.cpp for the checks.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_CUDA_STANDIN_H
#define MP_CUDA_STANDIN_H

#include <cuda.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the exit summary line prints, at any time. */
typedef struct mp_cuda_standin_stats {
  uint64_t modules_loaded;   /* successful cuModuleLoadData(Ex) calls */
  uint64_t functions;        /* distinct CUfunction handles handed out */
  uint64_t launches;         /* accepted cuLaunchKernel calls */
  uint64_t allocations;      /* successful cuMemAlloc(Managed) calls */
  uint64_t live_allocations; /* not freed yet: the exit summary's leaks */
  uint64_t live_bytes;       /* bytes of those */
  uint64_t invalid_pointers; /* violations about a pointer or its range */
  uint64_t violations;       /* all violations, invalid_pointers included */
} mp_cuda_standin_stats;

void mp_cuda_standin_get_stats(mp_cuda_standin_stats *out);

/* 1 if [ptr, ptr + bytes) lies inside one live device or managed
 * allocation, or in registered host memory (or anywhere on the host when
 * MPRT_CUDA_STANDIN_PAGEABLE=1); else records a violation of `function`
 * naming `what` and returns 0. */
int mp_cuda_standin_check_range(const void *ptr, uint64_t bytes,
                                const char *function, const char *what);

/* 1 if `stream` is 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a live
 * stream; else records a violation and returns 0. */
int mp_cuda_standin_check_stream(CUstream stream, const char *function);

/* The compute capability the device reports, major * 10 + minor (90, or
 * MPRT_CUDA_STANDIN_COMPUTE_CAPABILITY's), without the checks of
 * cuDeviceGetAttribute: what the cuBLASLt stand-in computes depends on it. */
int mp_cuda_standin_compute_capability(void);

/* Records a violation of `function` (printf-style message); `pointer` says
 * whether it counts as an invalid pointer too. */
void mp_cuda_standin_violation(const char *function, int pointer,
                               const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif /* MP_CUDA_STANDIN_H */
