/*===- mprt_cuda.h - mp runtime: the CUDA device ---------------*- C -*-===*
 *
 * libmprt_cuda.so: the `mgpu*` functions that MLIR's GPU host code calls
 * (what `mp-opt --mp-lower-gpu` emits), implemented on the CUDA driver API,
 * plus a device memory pool and cuBLASLt contractions.
 *
 * The library does not link libcuda: the driver (libcuda.so.1) and
 * cuBLASLt (libcublasLt.so.13) are loaded with dlopen on first use, so the
 * library builds and loads on machines without a GPU. There every call
 * fails cleanly: functions below return an mprt_status with the reason in
 * mprt_last_error(); the void `mgpu*` functions print the failure and exit
 * with status 1, or record it for mprt_cuda_check and return NULL handles
 * (mprt_cuda_error_mode).
 *
 * See docs/gpu.md.
 *===----------------------------------------------------------------------===*/

#ifndef MPRT_MPRT_CUDA_H
#define MPRT_MPRT_CUDA_H

#include "mprt/mprt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if the CUDA driver loads and device 0 can be used, else 0 with the
 * reason ("cannot load the CUDA driver libcuda.so.1: ...", "no CUDA
 * device", ...) written to `why` (NUL-terminated, at most `n` bytes; `why`
 * may be NULL). Initializes the driver on first use; never aborts. */
int mprt_cuda_available(char *why, size_t n);

/* What to do when an `mgpu*` function (whose ABI returns void or a bare
 * handle) meets an error. */
typedef enum mprt_cuda_error_mode MPRT_ENUM_BASE {
  /* Print the error to stderr, record the first one for mprt_cuda_check and
   * carry on with NULL handles; launches are skipped while an error is
   * pending (no kernel runs on a failed allocation). For drivers that check
   * after each step. */
  MPRT_CUDA_ERRORS_RECORD = 0,
  /* Print the error and exit the process with status 1 (the default):
   * compiled code run by a plain JIT (mlir-runner) cannot check, and going
   * on would print wrong numbers. The environment variable
   * MPRT_CUDA_ERRORS=record|exit sets the mode a process starts in. */
  MPRT_CUDA_ERRORS_EXIT = 1
} mprt_cuda_error_mode;

void mprt_cuda_set_error_mode(mprt_cuda_error_mode mode);

/* MPRT_OK if no `mgpu*` call failed since the last check; otherwise
 * MPRT_ERROR_DEVICE with the first failure in mprt_last_error() (how many
 * more followed is appended), and the pending error is cleared. */
mprt_status mprt_cuda_check(void);

/* Device memory pool behind mgpuMemAlloc/mgpuMemFree. Blocks are rounded
 * up to a size class (powers of two from 512 bytes to 1 MiB, then 2 MiB
 * multiples) and kept on free lists when freed; a failing cuMemAlloc
 * empties the free lists and retries once. */
typedef struct mprt_cuda_pool_stats {
  uint64_t bytes_in_use;   /* size classes of live blocks */
  uint64_t bytes_cached;   /* free blocks kept for reuse */
  uint64_t peak_bytes;     /* max of bytes_in_use + bytes_cached */
  uint64_t device_allocs;  /* cuMemAlloc calls */
  uint64_t pool_hits;      /* mgpuMemAlloc served from a free list */
} mprt_cuda_pool_stats;

void mprt_cuda_pool_get_stats(mprt_cuda_pool_stats *out);

/* Returns all cached free blocks to the driver. */
mprt_status mprt_cuda_pool_trim(void);

/* Waits for the device's work, gives back what the library keeps between
 * calls (the cuBLASLt workspaces and mprt_cuda_gemm_sync's stream; the next
 * product makes them again), then trims the pool: afterwards the driver
 * holds only blocks the caller has not freed. For drivers that close their
 * last session (mp-run, the C API) and leak checks. */
mprt_status mprt_cuda_release_cached(void);

/* C[m x n] += op(A)[m x k] * op(B)[k x n] on the device with cuBLASLt,
 * with the conventions of mprt_gemm (row-major, leading dimensions, flags
 * MPRT_GEMM_TRANS_A/B, type an mprt_gemm_type): f32, f16 or bf16 A and B
 * with f32 C and f32 compute; s8 A and B with s32 C. With
 * MPRT_GEMM_ROUNDED_C, f16 or bf16 C = round(op(A) op(B)) (f32 compute,
 * beta 0: C is written, not read). Pointers are device
 * addresses as integers; `stream` is a CUstream (0: the legacy default
 * stream). The call is asynchronous on `stream`. Handles, layouts, the
 * chosen algorithm and a 32 MiB workspace are cached per shape.
 * Errors: MPRT_ERROR_ARGUMENT (bad sizes, type or flags), MPRT_ERROR_DEVICE
 * (no driver or cuBLASLt, no algorithm for the shape, a failing call). */
mprt_status mprt_cuda_gemm(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                           int64_t c, int64_t ldc, int64_t m, int64_t n,
                           int64_t k, int32_t flags, int32_t type,
                           void *stream);

/* A strided batch of mprt_cuda_gemm products in one cuBLASLt call:
 * C[p] += op(A[p]) op(B[p]) for p < batch, where X[p] starts stride_x
 * elements after X[p - 1]. A stride of A or B may be 0 (one matrix shared
 * by the batch); C's must keep the results apart (at least
 * (m - 1) * ldc + n). With batch 1 the strides are ignored; batch 0 does
 * nothing. Asynchronous on `stream`; errors as for mprt_cuda_gemm. */
mprt_status mprt_cuda_gemm_batched(int64_t a, int64_t lda, int64_t b,
                                   int64_t ldb, int64_t c, int64_t ldc,
                                   int64_t m, int64_t n, int64_t k,
                                   int32_t flags, int32_t type, int64_t batch,
                                   int64_t stride_a, int64_t stride_b,
                                   int64_t stride_c, void *stream);

/* What `mp-opt --mp-lower-gpu` (--mp-contractions-to-runtime{runtime=cuda})
 * calls for matrix products: mprt_cuda_gemm_batched on a non-blocking
 * stream of the runtime's own, returning only when the product is done, so
 * that it is ordered with the kernels before and after it (the generated
 * host code waits for each launch on streams of its own). Compiled code
 * does not check the status: a failure is reported like a failing `mgpu*`
 * function (printed, then the process exits with status 1, or it is
 * recorded for mprt_cuda_check; see mprt_cuda_error_mode), and while an
 * error is pending the product is skipped. The status and mprt_last_error()
 * are set too, for C callers. */
mprt_status mprt_cuda_gemm_sync(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                                int64_t c, int64_t ldc, int64_t m, int64_t n,
                                int64_t k, int32_t flags, int32_t type,
                                int64_t batch, int64_t stride_a,
                                int64_t stride_b, int64_t stride_c);

/* What the device the library drives is (cuDeviceGetName and
 * cuDeviceGetAttribute), for choosing a precision by the hardware
 * (`mp-run --precision auto`, `mp-run info`). */
typedef struct mprt_cuda_device_info {
  char name[256];        /* NUL-terminated */
  int32_t compute_major; /* compute capability, e.g. 9 and 0 for sm_90 */
  int32_t compute_minor;
  int32_t multiprocessors;
  uint64_t total_bytes; /* device memory */
} mprt_cuda_device_info;

/* Fills `out` for the device in use (device 0 unless
 * mgpuSetDefaultDevice chose another). Errors: MPRT_ERROR_ARGUMENT (NULL
 * out), MPRT_ERROR_DEVICE (no driver or device, a failing query). */
mprt_status mprt_cuda_get_device_info(mprt_cuda_device_info *out);

/* Whether f32 products (MPRT_GEMM_F32) run on TF32 tensor cores:
 * cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32 instead of CUBLAS_COMPUTE_32F
 * (inputs rounded to 10-bit significands, f32 accumulation; sm_80 and
 * newer). Off by default; the environment variable MPRT_CUDA_TF32=1 turns
 * it on at the first product; mprt_cuda_gemm_set_tf32 sets it later for
 * the products that follow (plans are cached per compute type).
 * f16, bf16 and s8 products are unaffected. */
void mprt_cuda_gemm_set_tf32(int32_t enabled);
int32_t mprt_cuda_gemm_tf32(void);

#ifdef __cplusplus
}
#endif

#endif /* MPRT_MPRT_CUDA_H */
