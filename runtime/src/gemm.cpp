//===- gemm.cpp - matrix products for compiled code (oneDNN) --------------===//
//
// Compiled training steps hand their contractions here: oneDNN's sgemm is
// blocked and vectorized for the running CPU, where the compiler's own loops
// are scalar. f16/bf16 inputs are widened to f32 (accumulation is f32 in
// every case).
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstring>
#include <vector>

namespace {

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13); // inf, nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign; // zero
  } else {
    // Subnormal: normalise.
    int shift = 0;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | ((113 - shift) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float bfloatToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Copies a rows x cols matrix with leading dimension ld into dense f32.
void widen(const uint16_t *src, int64_t rows, int64_t cols, int64_t ld,
           int32_t type, std::vector<float> &dst) {
  dst.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint16_t v = src[r * ld + c];
      dst[r * cols + c] =
          type == MPRT_GEMM_F16 ? halfToFloat(v) : bfloatToFloat(v);
    }
}

} // namespace

extern "C" mprt_status mprt_gemm(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                                 int64_t c, int64_t ldc, int64_t m, int64_t n,
                                 int64_t k, int32_t flags, int32_t type) {
  mprt::clearError();
  if (m < 0 || n < 0 || k < 0 || !a || !b || !c ||
      (type != MPRT_GEMM_F32 && type != MPRT_GEMM_F16 &&
       type != MPRT_GEMM_BF16))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm: bad arguments (m=%lld n=%lld k=%lld "
                      "type=%d)",
                      (long long)m, (long long)n, (long long)k, type);
  if (m == 0 || n == 0)
    return MPRT_OK;
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  const float *pa = reinterpret_cast<const float *>(a);
  const float *pb = reinterpret_cast<const float *>(b);
  // Reused per thread: a training step calls this many times.
  thread_local std::vector<float> wideA, wideB;
  if (type != MPRT_GEMM_F32) {
    widen(reinterpret_cast<const uint16_t *>(a), transA ? k : m, transA ? m : k,
          lda, type, wideA);
    widen(reinterpret_cast<const uint16_t *>(b), transB ? n : k, transB ? k : n,
          ldb, type, wideB);
    pa = wideA.data();
    pb = wideB.data();
    lda = transA ? m : k;
    ldb = transB ? k : n;
  }
  dnnl_status_t status =
      dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f, pa, lda,
                 pb, ldb, 1.0f, reinterpret_cast<float *>(c), ldc);
  if (status != dnnl_success)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm: oneDNN sgemm failed with status %d",
                      static_cast<int>(status));
  return MPRT_OK;
}
