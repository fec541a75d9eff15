//===- gemm.cpp - matrix products for compiled code (oneDNN) --------------===//
//
// Compiled training steps hand their contractions here: oneDNN's sgemm is
// blocked and vectorized for the running CPU, where the compiler's own loops
// are scalar. bf16 inputs go to oneDNN's matmul primitive (AMX or AVX-512
// BF16 where the CPU has them), primitives cached per shape. f16 inputs take
// the path the CPU's features pick (mprt_gemm_f16_mode): oneDNN's f16
// primitive with AVX512-FP16, else rounded to bf16 for the bf16 primitive
// with AVX512-BF16 or AMX-BF16, else widened to f32 for sgemm. Where oneDNN
// has no kernel, the inputs are widened to f32. Accumulation is f32 in
// every case.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "onednn_matmul.h"

#include <oneapi/dnnl/dnnl.h>

#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
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

/// f16 -> f32 for one row with the F16C instructions, 8 lanes at a time.
__attribute__((target("f16c,avx"))) void
widenHalfRowF16C(const uint16_t *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(src + i))));
  for (; i < n; ++i)
    dst[i] = halfToFloat(src[i]);
}

/// Picked once from the CPU this process runs on.
bool hasF16C() {
  static const bool supported = __builtin_cpu_supports("f16c");
  return supported;
}

/// Copies a rows x cols matrix with leading dimension ld into dense f32.
void widen(const uint16_t *src, int64_t rows, int64_t cols, int64_t ld,
           int32_t type, std::vector<float> &dst) {
  dst.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *row = src + r * ld;
    float *out = dst.data() + r * cols;
    if (type == MPRT_GEMM_F16 && hasF16C()) {
      widenHalfRowF16C(row, out, cols);
      continue;
    }
    for (int64_t c = 0; c < cols; ++c)
      out[c] =
          type == MPRT_GEMM_F16 ? halfToFloat(row[c]) : bfloatToFloat(row[c]);
  }
}

/// A matmul primitive for one shape, layout and type, and its memories
/// (their data pointers change per call).
/// f32 -> bf16, rounding to nearest even (nan stays a quiet nan).
uint16_t floatToBfloat(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// f16 -> bf16 for one row, 16 lanes at a time (AVX-512 F16 to F32, then
/// the AVX512-BF16 round to nearest even).
__attribute__((target("avx512f,avx512bf16,f16c,avx"))) void
halfRowToBfloatAvx512(const uint16_t *src, uint16_t *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i half =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i));
    __m512 wide = _mm512_cvtph_ps(half);
    __m256bh narrow = _mm512_cvtneps_pbh(wide);
    std::memcpy(dst + i, &narrow, sizeof(narrow));
  }
  for (; i < n; ++i)
    dst[i] = floatToBfloat(halfToFloat(src[i]));
}

/// A rows x cols f16 matrix (leading dimension ld) as a dense bf16 one.
void halfToBfloat(const uint16_t *src, int64_t rows, int64_t cols, int64_t ld,
                  std::vector<uint16_t> &dst, bool vectorized) {
  dst.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *row = src + r * ld;
    uint16_t *out = dst.data() + r * cols;
    if (vectorized) {
      halfRowToBfloatAvx512(row, out, cols);
      continue;
    }
    for (int64_t c = 0; c < cols; ++c)
      out[c] = floatToBfloat(halfToFloat(row[c]));
  }
}

/// f32 -> f16, rounding to nearest even (as arith.truncf): overflow to
/// inf, subnormals kept, nan stays a quiet nan.
uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  uint32_t sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) // 65520 and up round to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) { // normal: rebias the exponent, round
    uint32_t rebiased = magnitude - 0x38000000u;
    return static_cast<uint16_t>(
        sign | ((rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13));
  }
  // Subnormal: the significand in units of 2^-24, rounded to nearest even.
  int shift = 126 - static_cast<int>(magnitude >> 23);
  if (shift > 24)
    return static_cast<uint16_t>(sign);
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t result = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (result & 1u)))
    ++result;
  return static_cast<uint16_t>(sign | result);
}

/// f32 -> f16 for one row with F16C, 8 lanes at a time.
__attribute__((target("f16c,avx"))) void
narrowRowToHalfF16C(const float *src, uint16_t *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                     _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC));
  for (; i < n; ++i)
    dst[i] = floatToHalf(src[i]);
}

/// Stores a dense m x n f32 product into 16-bit C (leading dimension ldc),
/// each element rounded once to nearest even.
void storeRounded(const float *product, int64_t m, int64_t n, uint16_t *c,
                  int64_t ldc, int32_t type) {
  for (int64_t i = 0; i < m; ++i) {
    const float *row = product + i * n;
    uint16_t *out = c + i * ldc;
    if (type == MPRT_GEMM_F16 && hasF16C()) {
      narrowRowToHalfF16C(row, out, n);
      continue;
    }
    for (int64_t j = 0; j < n; ++j)
      out[j] = type == MPRT_GEMM_F16 ? floatToHalf(row[j])
                                     : floatToBfloat(row[j]);
  }
}

/// The mode set by mprt_gemm_set_f16_mode or MPRT_F16_GEMM (AUTO until
/// resolved).
std::atomic<int> requestedF16Mode{-1};

int f16ModeFromEnvironment() {
  const char *text = std::getenv("MPRT_F16_GEMM");
  if (!text)
    return MPRT_F16_GEMM_AUTO;
  if (!std::strcmp(text, "native"))
    return MPRT_F16_GEMM_NATIVE;
  if (!std::strcmp(text, "bf16"))
    return MPRT_F16_GEMM_BF16;
  if (!std::strcmp(text, "f32"))
    return MPRT_F16_GEMM_F32;
  if (std::strcmp(text, "auto") && std::strcmp(text, ""))
    std::fprintf(stderr,
                 "mprt: warning: MPRT_F16_GEMM='%s' is not auto, native, "
                 "bf16 or f32; using auto\n",
                 text);
  return MPRT_F16_GEMM_AUTO;
}

/// Runs a cached 16-bit matmul; false when oneDNN cannot (then widen).
bool matmul16(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,
              int64_t ldc, int64_t m, int64_t n, int64_t k, bool transA,
              bool transB, int32_t type, bool accumulate) {
  return mprt::runCachedMatmul(
      reinterpret_cast<const void *>(a), lda, reinterpret_cast<const void *>(b),
      ldb, reinterpret_cast<void *>(c), ldc, m, n, k, transA, transB,
      type == MPRT_GEMM_BF16 ? dnnl_bf16 : dnnl_f16, dnnl_f32, accumulate);
}

constexpr int32_t kKnownFlags = MPRT_GEMM_TRANS_A | MPRT_GEMM_TRANS_B |
                                MPRT_GEMM_ROUNDED_C | MPRT_GEMM_OVERWRITE_C;

/// What mprt_gemm_totals reports.
std::atomic<int64_t> totalCalls{0}, totalNanoseconds{0};

/// Nesting depth of GEMM calls on this thread.
thread_local int callDepth = 0;

} // namespace

mprt::GemmCallTimer::GemmCallTimer() {
  if (callDepth++ == 0)
    start = std::chrono::steady_clock::now();
}

mprt::GemmCallTimer::~GemmCallTimer() {
  if (--callDepth != 0)
    return;
  auto elapsed = std::chrono::steady_clock::now() - start;
  totalNanoseconds +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  ++totalCalls;
}

extern "C" void mprt_gemm_totals(int64_t *calls, double *seconds) {
  if (calls)
    *calls = totalCalls.load();
  if (seconds)
    *seconds = static_cast<double>(totalNanoseconds.load()) * 1e-9;
}

namespace {

/// Whether `count` m x n results (rows `ldc` apart) `stride` elements apart
/// never share an element: stacked, each after the last row of the one
/// before, or side by side within the rows (attention's heads in the
/// [tokens, heads x features] layout).
bool resultsApart(int64_t m, int64_t n, int64_t ldc, int64_t count,
                  int64_t stride) {
  return count <= 1 || stride >= (m - 1) * ldc + n ||
         (stride >= n && (count - 1) * stride + n <= ldc);
}

/// mprt_gemm_batched and mprt_gemm_batched_2d (`name`, for errors).
mprt_status gemmBatch(const char *name, int64_t a, int64_t lda, int64_t b,
                      int64_t ldb, int64_t c, int64_t ldc, int64_t m, int64_t n,
                      int64_t k, int32_t flags, int32_t type,
                      const mprt::MatmulBatch &batch) {
  mprt::GemmCallTimer timer;
  mprt::clearError();
  // One outer block of results ends before the next starts.
  int64_t blockExtent = (batch.count - 1) * batch.strideC + (m - 1) * ldc + n;
  if (batch.count < 0 || batch.strideA < 0 || batch.strideB < 0 ||
      batch.strideC < 0 || batch.outer < 0 || batch.outerStrideA < 0 ||
      batch.outerStrideB < 0 || batch.outerStrideC < 0 ||
      !resultsApart(m, n, ldc, batch.count, batch.strideC) ||
      (batch.outer > 1 && batch.outerStrideC < blockExtent))
    return mprt::fail(
        MPRT_ERROR_ARGUMENT,
        "%s: bad batch %lld, outer %lld or strides (a=%lld,%lld "
        "b=%lld,%lld c=%lld,%lld; outer, inner) for m=%lld n=%lld ldc=%lld: "
        "results would overlap",
        name, (long long)batch.count, (long long)batch.outer,
        (long long)batch.outerStrideA, (long long)batch.strideA,
        (long long)batch.outerStrideB, (long long)batch.strideB,
        (long long)batch.outerStrideC, (long long)batch.strideC, (long long)m,
        (long long)n, (long long)ldc);
  // bf16 and f32 on oneDNN's matmul primitive: the whole batch in one call
  // (bf16 as every product alone would run, or rounded to bf16 by oneDNN;
  // f32 on the primitive's kernels, not sgemm's: an attention's 128 small
  // products were 128 sgemm calls).
  bool rounded = flags & MPRT_GEMM_ROUNDED_C;
  bool overwrite = rounded || (flags & MPRT_GEMM_OVERWRITE_C);
  dnnl_data_type_t abType = type == MPRT_GEMM_BF16 ? dnnl_bf16 : dnnl_f32;
  if ((type == MPRT_GEMM_BF16 || (type == MPRT_GEMM_F32 && !rounded)) &&
      (batch.count > 1 || batch.outer > 1) && m > 0 && n > 0 && k > 0 && a &&
      b && c && !(flags & ~kKnownFlags) &&
      mprt::runCachedMatmul(
          reinterpret_cast<const void *>(a), lda,
          reinterpret_cast<const void *>(b), ldb, reinterpret_cast<void *>(c),
          ldc, m, n, k, flags & MPRT_GEMM_TRANS_A, flags & MPRT_GEMM_TRANS_B,
          abType, rounded ? dnnl_bf16 : dnnl_f32, /*accumulate=*/!overwrite,
          batch))
    return MPRT_OK;
  // Bytes per element of A and B; C is f32 or s32, or A's type when
  // rounded.
  int64_t inBytes = type == MPRT_GEMM_F32 ? 4 : type == MPRT_GEMM_S8 ? 1 : 2;
  int64_t outBytes = (flags & MPRT_GEMM_ROUNDED_C) ? inBytes : 4;
  for (int64_t q = 0; q < batch.outer; ++q) {
    for (int64_t p = 0; p < batch.count; ++p) {
      int64_t offsetA = q * batch.outerStrideA + p * batch.strideA,
              offsetB = q * batch.outerStrideB + p * batch.strideB,
              offsetC = q * batch.outerStrideC + p * batch.strideC;
      mprt_status status =
          mprt_gemm(a + offsetA * inBytes, lda, b + offsetB * inBytes, ldb,
                    c + offsetC * outBytes, ldc, m, n, k, flags, type);
      if (status != MPRT_OK)
        return status;
    }
  }
  return MPRT_OK;
}

} // namespace

extern "C" mprt_status mprt_gemm_batched(int64_t a, int64_t lda, int64_t b,
                                         int64_t ldb, int64_t c, int64_t ldc,
                                         int64_t m, int64_t n, int64_t k,
                                         int32_t flags, int32_t type,
                                         int64_t batch, int64_t strideA,
                                         int64_t strideB, int64_t strideC) {
  return gemmBatch("mprt_gemm_batched", a, lda, b, ldb, c, ldc, m, n, k, flags,
                   type, mprt::MatmulBatch{batch, strideA, strideB, strideC});
}

extern "C" mprt_status mprt_gemm_batched_2d(
    int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c, int64_t ldc,
    int64_t m, int64_t n, int64_t k, int32_t flags, int32_t type, int64_t outer,
    int64_t outerStrideA, int64_t outerStrideB, int64_t outerStrideC,
    int64_t batch, int64_t strideA, int64_t strideB, int64_t strideC) {
  return gemmBatch("mprt_gemm_batched_2d", a, lda, b, ldb, c, ldc, m, n, k,
                   flags, type,
                   mprt::MatmulBatch{batch, strideA, strideB, strideC, outer,
                                     outerStrideA, outerStrideB, outerStrideC});
}

extern "C" mprt_status mprt_gemm_bias(int64_t a, int64_t lda, int64_t b,
                                      int64_t ldb, int64_t c, int64_t ldc,
                                      int64_t m, int64_t n, int64_t k,
                                      int32_t flags, int32_t type,
                                      int64_t bias) {
  mprt::GemmCallTimer timer;
  mprt::clearError();
  if ((flags & ~kKnownFlags) ||
      (type != MPRT_GEMM_F16 && type != MPRT_GEMM_BF16) || !bias)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_bias: bad flags %d, type %d or bias (needs "
                      "f16 or bf16 operands and an f32 bias)",
                      flags, type);
  if (m < 0 || n < 0 || k < 0 || !a || !b || !c)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_bias: bad arguments (m=%lld n=%lld k=%lld)",
                      (long long)m, (long long)n, (long long)k);
  if (m == 0 || n == 0)
    return MPRT_OK;
  bool rounded = flags & MPRT_GEMM_ROUNDED_C;
  const float *biasValues = reinterpret_cast<const float *>(bias);
  if (type == MPRT_GEMM_BF16 && k > 0 &&
      mprt::runCachedMatmul(
          reinterpret_cast<const void *>(a), lda,
          reinterpret_cast<const void *>(b), ldb, reinterpret_cast<void *>(c),
          ldc, m, n, k, flags & MPRT_GEMM_TRANS_A, flags & MPRT_GEMM_TRANS_B,
          dnnl_bf16, rounded ? dnnl_bf16 : dnnl_f32, /*accumulate=*/false,
          mprt::MatmulBatch(), mprt::MatmulEpilogue{biasValues}))
    return MPRT_OK;
  // Elsewhere the steps one by one: the f32 product (in C, or in a scratch
  // buffer when it is rounded), the bias, the rounding.
  std::unique_ptr<float[]> scratch;
  float *product = reinterpret_cast<float *>(c);
  int64_t ldp = ldc;
  if (rounded) {
    scratch.reset(new float[static_cast<size_t>(m * n)]);
    product = scratch.get();
    ldp = n;
  }
  mprt_status status = mprt_gemm(
      a, lda, b, ldb, reinterpret_cast<int64_t>(product), ldp, m, n, k,
      (flags & ~MPRT_GEMM_ROUNDED_C) | MPRT_GEMM_OVERWRITE_C, type);
  if (status != MPRT_OK)
    return status;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      product[i * ldp + j] += biasValues[j];
  if (rounded)
    storeRounded(product, m, n, reinterpret_cast<uint16_t *>(c), ldc, type);
  return MPRT_OK;
}

extern "C" void mprt_gemm_set_f16_mode(int32_t mode) {
  if (mode < MPRT_F16_GEMM_AUTO || mode > MPRT_F16_GEMM_F32)
    mode = MPRT_F16_GEMM_AUTO;
  requestedF16Mode.store(mode);
}

extern "C" int32_t mprt_gemm_f16_mode(void) {
  int mode = requestedF16Mode.load();
  if (mode < 0) {
    mode = f16ModeFromEnvironment();
    requestedF16Mode.store(mode);
  }
  if (mode != MPRT_F16_GEMM_AUTO)
    return mode;
  uint32_t features = mprt_cpu_features();
  if (features & MPRT_CPU_AVX512_FP16)
    return MPRT_F16_GEMM_NATIVE;
  if (features & (MPRT_CPU_AVX512_BF16 | MPRT_CPU_AMX_BF16))
    return MPRT_F16_GEMM_BF16;
  return MPRT_F16_GEMM_F32;
}

extern "C" mprt_status mprt_gemm_describe(int32_t type, char *out,
                                          size_t n) {
  mprt::clearError();
  if (!out || n == 0)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_describe: no output buffer");
  auto kernel = [](dnnl_data_type_t ab, dnnl_data_type_t c) {
    std::string name = mprt::matmulImplementation(ab, c);
    return name.empty() ? std::string() : "oneDNN matmul " + name;
  };
  const std::string sgemm = "oneDNN sgemm";
  std::string text;
  switch (type) {
  case MPRT_GEMM_F32:
    text = sgemm + " (f32)";
    break;
  case MPRT_GEMM_BF16:
    text = kernel(dnnl_bf16, dnnl_f32);
    text = text.empty() ? "inputs widened to f32, " + sgemm
                        : text + " (bf16 inputs, f32 accumulation)";
    break;
  case MPRT_GEMM_F16:
    switch (mprt_gemm_f16_mode()) {
    case MPRT_F16_GEMM_NATIVE:
      text = kernel(dnnl_f16, dnnl_f32);
      if (!text.empty()) {
        text += " (f16 inputs, f32 accumulation)";
        break;
      }
      [[fallthrough]];
    case MPRT_F16_GEMM_BF16:
      text = kernel(dnnl_bf16, dnnl_f32);
      if (!text.empty()) {
        text = "inputs rounded to bf16, " + text + " (f32 accumulation)";
        break;
      }
      [[fallthrough]];
    default:
      text = std::string("inputs widened to f32") +
             (hasF16C() ? " (F16C)" : "") + ", " + sgemm;
    }
    break;
  case MPRT_GEMM_S8:
    if (!mprt::hasInt8DotProducts()) {
      text = "mprt's exact kernel (int16 products, int32 accumulation; "
             "oneDNN's s8 kernels saturate without VNNI)";
      break;
    }
    text = kernel(dnnl_s8, dnnl_s32);
    text = text.empty() ? "oneDNN gemm_s8s8s32 (int32 accumulation)"
                        : text + " (s8 inputs, int32 accumulation)";
    break;
  default:
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_describe: bad type %d", type);
  }
  std::snprintf(out, n, "%s", text.c_str());
  return MPRT_OK;
}

extern "C" mprt_status mprt_gemm(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                                 int64_t c, int64_t ldc, int64_t m, int64_t n,
                                 int64_t k, int32_t flags, int32_t type) {
  mprt::GemmCallTimer timer;
  mprt::clearError();
  bool rounded = flags & MPRT_GEMM_ROUNDED_C;
  bool overwrite = rounded || (flags & MPRT_GEMM_OVERWRITE_C);
  if ((flags & ~kKnownFlags) ||
      (rounded && type != MPRT_GEMM_F16 && type != MPRT_GEMM_BF16))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm: bad flags %d for type %d (a rounded C needs "
                      "f16 or bf16 operands)",
                      flags, type);
  if (type == MPRT_GEMM_S8)
    return mprt::gemmS8(a, lda, b, ldb, c, ldc, m, n, k, flags);
  if (m < 0 || n < 0 || k < 0 || !a || !b || !c ||
      (type != MPRT_GEMM_F32 && type != MPRT_GEMM_F16 &&
       type != MPRT_GEMM_BF16))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm: bad arguments (m=%lld n=%lld k=%lld "
                      "type=%d)",
                      (long long)m, (long long)n, (long long)k, type);
  if (m == 0 || n == 0)
    return MPRT_OK;
  if (k == 0) {
    // An empty sum (oneDNN's 16-bit primitives must not see k = 0): C is
    // unchanged, or +0 when overwritten.
    size_t elementBytes = rounded ? sizeof(uint16_t) : sizeof(float);
    if (overwrite)
      for (int64_t i = 0; i < m; ++i)
        std::memset(reinterpret_cast<char *>(c) + i * ldc * elementBytes, 0,
                    static_cast<size_t>(n) * elementBytes);
    return MPRT_OK;
  }
  if (rounded && type == MPRT_GEMM_BF16 &&
      mprt::runCachedMatmul(reinterpret_cast<const void *>(a), lda,
                            reinterpret_cast<const void *>(b), ldb,
                            reinterpret_cast<void *>(c), ldc, m, n, k,
                            flags & MPRT_GEMM_TRANS_A,
                            flags & MPRT_GEMM_TRANS_B, dnnl_bf16, dnnl_bf16,
                            /*accumulate=*/false))
    return MPRT_OK; // oneDNN writes the bf16 result itself
  if (rounded) {
    // The f32 product in a scratch buffer that lives for this call only,
    // then rounded into C.
    std::unique_ptr<float[]> product(new float[static_cast<size_t>(m * n)]);
    mprt_status status = mprt_gemm(
        a, lda, b, ldb, reinterpret_cast<int64_t>(product.get()), n, m, n, k,
        (flags & ~MPRT_GEMM_ROUNDED_C) | MPRT_GEMM_OVERWRITE_C, type);
    if (status != MPRT_OK)
      return status;
    storeRounded(product.get(), m, n, reinterpret_cast<uint16_t *>(c), ldc,
                 type);
    return MPRT_OK;
  }
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  const float *pa = reinterpret_cast<const float *>(a);
  const float *pb = reinterpret_cast<const float *>(b);
  // Reused per thread: a training step calls this many times.
  thread_local std::vector<float> wideA, wideB;
  thread_local std::vector<uint16_t> bfloatA, bfloatB;
  int32_t f16Mode = type == MPRT_GEMM_F16 ? mprt_gemm_f16_mode() : -1;
  if (f16Mode == MPRT_F16_GEMM_BF16) {
    // f16 has no fast CPU kernel in oneDNN 2.6: round the operands to bf16
    // (same exponent range as f32, so only the last 3 significand bits go)
    // and run the bf16 primitive.
    bool vectorized = mprt_cpu_features() & MPRT_CPU_AVX512_BF16;
    int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
    int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
    halfToBfloat(reinterpret_cast<const uint16_t *>(a), rowsA, colsA, lda,
                 bfloatA, vectorized);
    halfToBfloat(reinterpret_cast<const uint16_t *>(b), rowsB, colsB, ldb,
                 bfloatB, vectorized);
    if (matmul16(reinterpret_cast<int64_t>(bfloatA.data()), colsA,
                 reinterpret_cast<int64_t>(bfloatB.data()), colsB, c, ldc, m, n,
                 k, transA, transB, MPRT_GEMM_BF16, !overwrite))
      return MPRT_OK;
    // No bf16 kernel after all: widen the rounded operands to f32.
    a = reinterpret_cast<int64_t>(bfloatA.data());
    b = reinterpret_cast<int64_t>(bfloatB.data());
    lda = colsA;
    ldb = colsB;
    type = MPRT_GEMM_BF16;
  } else if (type != MPRT_GEMM_F32 && f16Mode != MPRT_F16_GEMM_F32 &&
             matmul16(a, lda, b, ldb, c, ldc, m, n, k, transA, transB, type,
                      !overwrite)) {
    return MPRT_OK;
  }
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
  mprt::capOneDnnIsa();
  dnnl_status_t status = dnnl_sgemm(
      transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f, pa, lda, pb, ldb,
      overwrite ? 0.0f : 1.0f, reinterpret_cast<float *>(c), ldc);
  if (status != dnnl_success)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm: oneDNN sgemm failed with status %d",
                      static_cast<int>(status));
  return MPRT_OK;
}
