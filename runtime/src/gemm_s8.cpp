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
// There mp's own exact kernel runs instead: operands widened to int16,
// pairs of products summed in int32 (vpmaddwd on AVX2 with B's pairs of k
// interleaved in blocks of 16 columns, shared among the OpenMP threads and
// multiplied by 4 rows at a time), half the rate of an int8 dot product
// but exact.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "onednn_matmul.h"

#include <oneapi/dnnl/dnnl.h>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

bool mprt::hasInt8DotProducts() {
  return mprt_cpu_features() &
         (MPRT_CPU_AVX512_VNNI | MPRT_CPU_AVX_VNNI | MPRT_CPU_AMX_INT8);
}

namespace {

/// The product's operands widened to int16, k padded to an even count
/// with zeros: the rows of op(A) contiguous, and op(B) in blocks of 16
/// columns, each block's pairs of k interleaved (`block[q * 32 + j * 2 +
/// p % 2]` for column j of the block and q = p / 2), so that one vpmaddwd
/// of a broadcast (a[i][p], a[i][p + 1]) with 16 values of a block adds
/// a[i][p] b[p][j] + a[i][p + 1] b[p + 1][j] for 8 columns at once.
constexpr int64_t kColumns = 16, kRows = 4;

struct Product {
  std::vector<int16_t> a; // m rows of 2 * kPairs
  const int8_t *b;
  int64_t ldb;
  bool transB;
  int32_t *c;
  int64_t ldc, m, n, k, kPairs;
};

/// Block `jb` of op(B), widened and interleaved into `block` (kPairs * 32).
void widenBlock(const Product &p, int64_t jb, int16_t *block) {
  std::fill(block, block + p.kPairs * 2 * kColumns, int16_t(0));
  int64_t j0 = jb * kColumns, width = std::min(kColumns, p.n - j0);
  for (int64_t q = 0; q < p.kPairs; ++q)
    for (int64_t half = 0; half < 2; ++half) {
      int64_t row = 2 * q + half;
      if (row >= p.k)
        break;
      int16_t *out = block + q * 2 * kColumns + half;
      for (int64_t j = 0; j < width; ++j)
        out[2 * j] =
            p.transB ? p.b[(j0 + j) * p.ldb + row] : p.b[row * p.ldb + j0 + j];
    }
}

/// C[i0 .. i0 + rows)[j0 .. j0 + width) += A rows times the block, one
/// element at a time (no AVX2).
void blockPortable(const Product &p, const int16_t *block, int64_t i0,
                   int64_t rows, int64_t j0, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    const int16_t *row = p.a.data() + (i0 + r) * 2 * p.kPairs;
    for (int64_t j = 0; j < width; ++j) {
      int32_t sum = 0;
      for (int64_t q = 0; q < p.kPairs; ++q) {
        const int16_t *pair = block + q * 2 * kColumns + 2 * j;
        sum +=
            int32_t(row[2 * q]) * pair[0] + int32_t(row[2 * q + 1]) * pair[1];
      }
      p.c[(i0 + r) * p.ldc + j0 + j] += sum;
    }
  }
}

/// The same with AVX2 for `Rows` rows (a compile-time count, so the 2 x
/// Rows accumulators stay in registers). |a b| <= 2^14: a pair never
/// reaches vpmaddwd's one overflow (-2^15 squared twice).
template <int Rows>
__attribute__((target("avx2"))) void blockAvx2(const Product &p,
                                               const int16_t *block, int64_t i0,
                                               int64_t j0, int64_t width) {
  __m256i acc[Rows][2];
  for (int r = 0; r < Rows; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const int16_t *rows[Rows];
  for (int r = 0; r < Rows; ++r)
    rows[r] = p.a.data() + (i0 + r) * 2 * p.kPairs;
  for (int64_t q = 0; q < p.kPairs; ++q) {
    const int16_t *pairs = block + q * 2 * kColumns;
    __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(pairs));
    __m256i b1 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(pairs + 16));
    for (int r = 0; r < Rows; ++r) {
      int32_t pair;
      std::memcpy(&pair, rows[r] + 2 * q, sizeof(pair));
      __m256i a = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a, b1));
    }
  }
  // Lane l of acc[r][0] is column j0 + l, of acc[r][1] column j0 + 8 + l.
  for (int r = 0; r < Rows; ++r) {
    int32_t *out = p.c + (i0 + r) * p.ldc + j0;
    if (width == kColumns) {
      for (int h = 0; h < 2; ++h) {
        __m256i *at = reinterpret_cast<__m256i *>(out + 8 * h);
        _mm256_storeu_si256(
            at, _mm256_add_epi32(_mm256_loadu_si256(at), acc[r][h]));
      }
      continue;
    }
    int32_t sums[kColumns];
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(sums), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(sums + 8), acc[r][1]);
    for (int64_t j = 0; j < width; ++j)
      out[j] += sums[j];
  }
}

struct Share {
  const Product *product;
  bool avx2;
};

/// A thread's blocks of columns: each widened once into a buffer of its
/// own, then multiplied by every block of rows while it is in cache.
void runShare(int64_t begin, int64_t end, void *context) {
  const Share &share = *static_cast<const Share *>(context);
  const Product &p = *share.product;
  std::vector<int16_t> block(static_cast<size_t>(p.kPairs * 2 * kColumns));
  for (int64_t jb = begin; jb < end; ++jb) {
    widenBlock(p, jb, block.data());
    int64_t j0 = jb * kColumns, width = std::min(kColumns, p.n - j0);
    for (int64_t i0 = 0; i0 < p.m; i0 += kRows) {
      int64_t rows = std::min(kRows, p.m - i0);
      if (!share.avx2) {
        blockPortable(p, block.data(), i0, rows, j0, width);
        continue;
      }
      switch (rows) {
      case 4:
        blockAvx2<4>(p, block.data(), i0, j0, width);
        break;
      case 3:
        blockAvx2<3>(p, block.data(), i0, j0, width);
        break;
      case 2:
        blockAvx2<2>(p, block.data(), i0, j0, width);
        break;
      default:
        blockAvx2<1>(p, block.data(), i0, j0, width);
        break;
      }
    }
  }
}

} // namespace

void mprt::gemmS8Widened(const int8_t *a, int64_t lda, const int8_t *b,
                         int64_t ldb, int32_t *c, int64_t ldc, int64_t m,
                         int64_t n, int64_t k, bool transA, bool transB,
                         bool avx2) {
  Product p{{}, b, ldb, transB, c, ldc, m, n, k, (k + 1) / 2};
  int64_t kEven = 2 * p.kPairs;
  p.a.assign(static_cast<size_t>(m * kEven), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q)
      p.a[i * kEven + q] = transA ? a[q * lda + i] : a[i * lda + q];
  Share share{&p, avx2};
  mprt_parallel_for((n + kColumns - 1) / kColumns, runShare, &share);
}

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
  bool overwrite = flags & MPRT_GEMM_OVERWRITE_C;
  if (overwrite && (k == 0 || !mprt::hasInt8DotProducts()))
    for (int64_t i = 0; i < m; ++i)
      std::memset(reinterpret_cast<int32_t *>(c) + i * ldc, 0,
                  static_cast<size_t>(n) * sizeof(int32_t));
  if (!mprt::hasInt8DotProducts()) {
    mprt::gemmS8Widened(reinterpret_cast<const int8_t *>(a), lda,
                        reinterpret_cast<const int8_t *>(b), ldb,
                        reinterpret_cast<int32_t *>(c), ldc, m, n, k, transA,
                        transB, mprt_cpu_features() & MPRT_CPU_AVX2);
    return MPRT_OK;
  }
  if (k > 0 && mprt::runCachedMatmul(reinterpret_cast<const void *>(a), lda,
                                     reinterpret_cast<const void *>(b), ldb,
                                     reinterpret_cast<void *>(c), ldc, m, n, k,
                                     transA, transB, dnnl_s8, dnnl_s32,
                                     /*accumulate=*/!overwrite))
    return MPRT_OK;
  const int32_t zero = 0;
  // Row-major C += A B (beta 1; 0 to overwrite), no zero points: symmetric
  // quantization.
  dnnl_status_t status = dnnl_gemm_s8s8s32(
      transA ? 'T' : 'N', transB ? 'T' : 'N', 'F', m, n, k, 1.0f,
      reinterpret_cast<const int8_t *>(a), lda, 0,
      reinterpret_cast<const int8_t *>(b), ldb, 0, overwrite ? 0.0f : 1.0f,
      reinterpret_cast<int32_t *>(c), ldc, &zero);
  if (status != dnnl_success)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_gemm (s8): oneDNN gemm_s8s8s32 failed with status %d",
                static_cast<int>(status));
  return MPRT_OK;
}

namespace {

struct ScaledColumns {
  float *d;
  int64_t ldd, n;
  const float *scales;
  bool relu, avx512;
  // With `partials`: each row's largest magnitude per lane, kept as
  // partials[i * lanes + j % lanes] = maximumf(., |D[i, j]|).
  float *partials;
  int64_t lanes;
};

/// arith.maximumf: NaN if either is, +0 above -0.
float maximumF(float a, float b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/// The lanes' largest magnitudes of one scaled row, into `partial`.
void absMaxRow(const float *row, int64_t n, float *partial, int64_t lanes) {
  for (int64_t j = 0; j < n; ++j)
    partial[j % lanes] = maximumF(partial[j % lanes], std::fabs(row[j]));
}

/// row[j] *= scales[j] from `first` on, then std::max(., 0) with `relu`
/// (a NaN or -0 stays).
void scaleRowFrom(float *row, const float *scales, int64_t first, int64_t n,
                  bool relu) {
  if (relu)
    for (int64_t j = first; j < n; ++j)
      row[j] = std::max(row[j] * scales[j], 0.0f);
  else
    for (int64_t j = first; j < n; ++j)
      row[j] *= scales[j];
}

/// The same 16 lanes at a time (the products do not depend on the width;
/// vmaxps(0, x) returns x for a NaN or -0 x, as std::max(x, 0) does).
__attribute__((target("avx512f"))) void
scaleRowAvx512(float *row, const float *scales, int64_t n, bool relu) {
  const __m512 zero = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 v =
        _mm512_mul_ps(_mm512_loadu_ps(row + j), _mm512_loadu_ps(scales + j));
    _mm512_storeu_ps(row + j, relu ? _mm512_max_ps(zero, v) : v);
  }
  scaleRowFrom(row, scales, j, n, relu);
}

/// The same with 16 lanes of largest magnitudes (n a multiple of 16), in
/// registers while the row is: vmaxps drops a NaN it meets second, so the
/// lanes that saw one are marked and made NaN at the end.
__attribute__((target("avx512f"))) void
scaleRowAbsMaxAvx512(float *row, const float *scales, int64_t n, bool relu,
                     float *partial) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  __m512 largest = zero; // |x| >= +0: +0 changes no maximum
  __mmask16 nan = 0;
  for (int64_t j = 0; j < n; j += 16) {
    __m512 v =
        _mm512_mul_ps(_mm512_loadu_ps(row + j), _mm512_loadu_ps(scales + j));
    if (relu)
      v = _mm512_max_ps(zero, v);
    _mm512_storeu_ps(row + j, v);
    __m512 size = _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(v), magnitude));
    nan |= _mm512_cmp_ps_mask(size, size, _CMP_UNORD_Q);
    largest = _mm512_max_ps(largest, size);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, largest);
  for (int p = 0; p < 16; ++p) {
    float value = (nan >> p) & 1 ? std::numeric_limits<float>::quiet_NaN()
                                 : lanes[p];
    partial[p] = maximumF(partial[p], value);
  }
}

void scaleRows(int64_t begin, int64_t end, void *context) {
  const auto &p = *static_cast<const ScaledColumns *>(context);
  for (int64_t i = begin; i < end; ++i) {
    float *row = p.d + i * p.ldd;
    float *partial = p.partials ? p.partials + i * p.lanes : nullptr;
    if (p.avx512 && partial && p.lanes == 16) {
      scaleRowAbsMaxAvx512(row, p.scales, p.n, p.relu, partial);
      continue;
    }
    if (p.avx512)
      scaleRowAvx512(row, p.scales, p.n, p.relu);
    else
      scaleRowFrom(row, p.scales, 0, p.n, p.relu);
    if (partial)
      absMaxRow(row, p.n, partial, p.lanes);
  }
}

/// D[i, j] *= scales[j], then max(., 0) with `relu`, rows shared among the
/// threads; with `partials`, each row's largest magnitudes per lane too.
void scaleColumns(float *d, int64_t ldd, int64_t m, int64_t n,
                  const float *scales, bool relu, float *partials = nullptr,
                  int64_t lanes = 0) {
  ScaledColumns context{d,
                        ldd,
                        n,
                        scales,
                        relu,
                        (mprt_cpu_features() & MPRT_CPU_AVX512F) != 0,
                        partials,
                        lanes};
  mprt_parallel_for(m, scaleRows, &context);
}

/// mprt_gemm_s8_dequantize(_absmax) (`name`, for errors; no `partials`
/// for the first).
mprt_status dequantize(const char *name, int64_t a, int64_t lda, int64_t b,
                       int64_t ldb, int64_t d, int64_t ldd, int64_t m,
                       int64_t n, int64_t k, int32_t flags, int64_t bias,
                       int64_t scale, float *partials, int64_t lanes) {
  mprt::GemmCallTimer timer;
  mprt::clearError();
  constexpr int32_t known =
      MPRT_GEMM_TRANS_A | MPRT_GEMM_TRANS_B | MPRT_GEMM_RELU;
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  bool relu = flags & MPRT_GEMM_RELU;
  if ((flags & ~known) || m < 0 || n < 0 || k < 0 || !a || !b || !d || !scale ||
      ldd < n || lda < (transA ? m : k) || ldb < (transB ? k : n))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "%s: bad arguments (m=%lld n=%lld k=%lld lda=%lld "
                      "ldb=%lld ldd=%lld flags=%d scale=%s)",
                      name, (long long)m, (long long)n, (long long)k,
                      (long long)lda, (long long)ldb, (long long)ldd, flags,
                      scale ? "set" : "null");
  if (m == 0 || n == 0)
    return MPRT_OK;
  const auto *biasValues = reinterpret_cast<const int32_t *>(bias);
  const auto *scales = reinterpret_cast<const float *>(scale);
  float *out = reinterpret_cast<float *>(d);
  // oneDNN writes the f32 sum with the bias (its brgemm kernels take no
  // per-call scales), then one pass scales it.
  if (k > 0 && mprt::hasInt8DotProducts() &&
      mprt::runCachedMatmul(reinterpret_cast<const void *>(a), lda,
                            reinterpret_cast<const void *>(b), ldb, out, ldd, m,
                            n, k, transA, transB, dnnl_s8, dnnl_f32,
                            /*accumulate=*/false, mprt::MatmulBatch(),
                            mprt::MatmulEpilogue{biasValues, dnnl_s32})) {
    scaleColumns(out, ldd, m, n, scales, relu, partials, lanes);
    return MPRT_OK;
  }
  mprt_status status = mprt::gemmS8DequantizeSteps(
      a, lda, b, ldb, out, ldd, m, n, k, flags, biasValues, scales);
  if (status == MPRT_OK && partials)
    for (int64_t i = 0; i < m; ++i)
      absMaxRow(out + i * ldd, n, partials + i * lanes, lanes);
  return status;
}

} // namespace

extern "C" mprt_status
mprt_gemm_s8_dequantize(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                        int64_t d, int64_t ldd, int64_t m, int64_t n, int64_t k,
                        int32_t flags, int64_t bias, int64_t scale) {
  return dequantize("mprt_gemm_s8_dequantize", a, lda, b, ldb, d, ldd, m, n, k,
                    flags, bias, scale, /*partials=*/nullptr, /*lanes=*/0);
}

extern "C" mprt_status mprt_gemm_s8_dequantize_absmax(
    int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t d, int64_t ldd,
    int64_t m, int64_t n, int64_t k, int32_t flags, int64_t bias,
    int64_t scale, int64_t partials, int64_t lanes) {
  if (!partials || lanes <= 0 || n % lanes != 0) {
    mprt::clearError();
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_s8_dequantize_absmax: bad partials (%s) or "
                      "lanes %lld for n=%lld (n must be a multiple of lanes)",
                      partials ? "set" : "null", (long long)lanes,
                      (long long)n);
  }
  return dequantize("mprt_gemm_s8_dequantize_absmax", a, lda, b, ldb, d, ldd,
                    m, n, k, flags, bias, scale,
                    reinterpret_cast<float *>(partials), lanes);
}

mprt_status mprt::gemmS8DequantizeSteps(int64_t a, int64_t lda, int64_t b,
                                        int64_t ldb, float *d, int64_t ldd,
                                        int64_t m, int64_t n, int64_t k,
                                        int32_t flags, const int32_t *bias,
                                        const float *scales) {
  std::vector<int32_t> product(static_cast<size_t>(m * n));
  if (mprt_status status = gemmS8(
          a, lda, b, ldb, reinterpret_cast<int64_t>(product.data()), n, m, n, k,
          (flags & (MPRT_GEMM_TRANS_A | MPRT_GEMM_TRANS_B)) |
              MPRT_GEMM_OVERWRITE_C);
      status != MPRT_OK)
    return status;
  bool relu = flags & MPRT_GEMM_RELU;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float value = static_cast<float>(product[i * n + j]);
      if (bias)
        value += static_cast<float>(bias[j]);
      d[i * ldd + j] = value;
    }
  scaleColumns(d, ldd, m, n, scales, relu);
  return MPRT_OK;
}
