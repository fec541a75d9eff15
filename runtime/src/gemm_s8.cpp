//===- gemm_s8.cpp - int8 matrix products for quantized code --------------===//
//
// --mp-quantize turns matmuls into i8 x i8 -> i32 contractions. They run on
// oneDNN's matmul primitive (s8 source and weights, s32 destination,
// accumulating through a sum post-op), which picks AMX-INT8, AVX512-VNNI or
// AVX-VNNI kernels by what the CPU has at run time; primitives are cached
// per shape and layout. Where no primitive can be built, oneDNN's
// gemm_s8s8s32 runs instead. Accumulation is exact int32 in both.
//
// Without int8 dot-product instructions (AVX512-VNNI, AVX-VNNI, AMX-INT8),
// oneDNN 2.6's kernels multiply with vpmaddubsw, whose pairwise sums
// saturate at 16 bits: on such CPUs (an AVX2-only EPYC, or VNNI disabled
// through MPRT_CPU_DISABLE) its results were measured wrong by thousands.
// There an exact portable kernel runs instead: operands widened to int16,
// products summed in int32 (pmaddwd), slower but exact.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "onednn_matmul.h"

#include <oneapi/dnnl/dnnl.h>

#include <vector>

bool mprt::hasInt8DotProducts() {
  return mprt_cpu_features() &
         (MPRT_CPU_AVX512_VNNI | MPRT_CPU_AVX_VNNI | MPRT_CPU_AMX_INT8);
}

namespace {

/// C += A B exactly: rows of A and columns of B packed as contiguous int16,
/// so each element is a dot product the compiler vectorizes.
void gemmS8Exact(const int8_t *a, int64_t lda, const int8_t *b, int64_t ldb,
                 int32_t *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                 bool transA, bool transB) {
  std::vector<int16_t> columns(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p)
      columns[j * k + p] = transB ? b[j * ldb + p] : b[p * ldb + j];
  std::vector<int16_t> row(static_cast<size_t>(k));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p)
      row[p] = transA ? a[p * lda + i] : a[i * lda + p];
    for (int64_t j = 0; j < n; ++j) {
      const int16_t *column = columns.data() + j * k;
      int32_t sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<int32_t>(row[p]) * column[p];
      c[i * ldc + j] += sum;
    }
  }
}

} // namespace

mprt_status mprt::gemmS8(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                         int64_t c, int64_t ldc, int64_t m, int64_t n,
                         int64_t k, int32_t flags) {
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  if (m < 0 || n < 0 || k < 0 || !a || !b || !c || ldc < n ||
      lda < (transA ? m : k) || ldb < (transB ? k : n))
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_gemm (s8): bad arguments (m=%lld n=%lld k=%lld "
                "lda=%lld ldb=%lld ldc=%lld)",
                (long long)m, (long long)n, (long long)k, (long long)lda,
                (long long)ldb, (long long)ldc);
  if (m == 0 || n == 0)
    return MPRT_OK;
  if (!mprt::hasInt8DotProducts()) {
    gemmS8Exact(reinterpret_cast<const int8_t *>(a), lda,
                reinterpret_cast<const int8_t *>(b), ldb,
                reinterpret_cast<int32_t *>(c), ldc, m, n, k, transA, transB);
    return MPRT_OK;
  }
  if (k > 0 && mprt::runCachedMatmul(reinterpret_cast<const void *>(a), lda,
                                     reinterpret_cast<const void *>(b), ldb,
                                     reinterpret_cast<void *>(c), ldc, m, n, k,
                                     transA, transB, dnnl_s8, dnnl_s32))
    return MPRT_OK;
  const int32_t zero = 0;
  // Row-major C += A B (beta 1), no zero points: symmetric quantization.
  dnnl_status_t status =
      dnnl_gemm_s8s8s32(transA ? 'T' : 'N', transB ? 'T' : 'N', 'F', m, n, k,
                        1.0f, reinterpret_cast<const int8_t *>(a), lda, 0,
                        reinterpret_cast<const int8_t *>(b), ldb, 0, 1.0f,
                        reinterpret_cast<int32_t *>(c), ldc, &zero);
  if (status != dnnl_success)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_gemm (s8): oneDNN gemm_s8s8s32 failed with status %d",
                static_cast<int>(status));
  return MPRT_OK;
}
