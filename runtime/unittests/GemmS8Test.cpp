//===- GemmS8Test.cpp - int8 mprt_gemm and CPU features -------------------===//

#include "internal.h"
#include "mprt/mprt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

int64_t address(const void *p) { return reinterpret_cast<int64_t>(p); }

/// C += op(A) op(B) in int32, A m x k (k x m transposed), B k x n.
void reference(const std::vector<int8_t> &a, const std::vector<int8_t> &b,
               std::vector<int32_t> &c, int m, int n, int k, bool ta, bool tb) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      int32_t s = 0;
      for (int r = 0; r < k; ++r)
        s += int32_t(ta ? a[r * m + i] : a[i * k + r]) *
             int32_t(tb ? b[j * k + r] : b[r * n + j]);
      c[i * n + j] += s;
    }
}

TEST(GemmS8, MatchesExactIntegerProductsWithTransposes) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-127, 127);
  const int m = 37, n = 29, k = 300; // sums beyond int16, odd sizes
  for (int flags = 0; flags < 4; ++flags) {
    bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
    std::vector<int8_t> a(m * k), b(k * n);
    for (int8_t &x : a)
      x = static_cast<int8_t>(value(rng));
    for (int8_t &x : b)
      x = static_cast<int8_t>(value(rng));
    std::vector<int32_t> c(m * n), expected(m * n);
    for (int i = 0; i < m * n; ++i)
      c[i] = expected[i] = i - 100; // accumulates into C
    reference(a, b, expected, m, n, k, ta, tb);
    ASSERT_EQ(mprt_gemm(address(a.data()), ta ? m : k, address(b.data()),
                        tb ? k : n, address(c.data()), n, m, n, k, flags,
                        MPRT_GEMM_S8),
              MPRT_OK)
        << mprt_last_error();
    EXPECT_EQ(c, expected) << "flags " << flags;
  }
}

// The kernel that runs without int8 dot-product instructions, both
// variants on every machine: odd sizes (a lone last row, columns beyond
// the 4-wide blocks, k not a multiple of 16), both transposes, a block
// large enough to be shared among threads, and -128 everywhere.
TEST(GemmS8, WidenedKernelsAreExact) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> value(-128, 127);
  bool avx2 = mprt_cpu_features() & MPRT_CPU_AVX2;
  struct Shape {
    int m, n, k;
  };
  for (Shape s : {Shape{37, 29, 300}, Shape{1, 3, 5}, Shape{64, 130, 513}}) {
    for (int flags = 0; flags < 4; ++flags) {
      bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
      std::vector<int8_t> a(s.m * s.k), b(s.k * s.n);
      for (int8_t &x : a)
        x = static_cast<int8_t>(value(rng));
      for (int8_t &x : b)
        x = static_cast<int8_t>(value(rng));
      if (flags == 3)
        std::fill(a.begin(), a.end(), -128),
            std::fill(b.begin(), b.end(), -128);
      std::vector<int32_t> expected(s.m * s.n);
      for (int i = 0; i < s.m * s.n; ++i)
        expected[i] = 3 * i - 7;
      std::vector<int32_t> initial = expected;
      reference(a, b, expected, s.m, s.n, s.k, ta, tb);
      for (bool vector : {false, true}) {
        if (vector && !avx2)
          continue; // the CPU has no AVX2: only the portable loops run here
        std::vector<int32_t> c = initial;
        mprt::gemmS8Widened(a.data(), ta ? s.m : s.k, b.data(), tb ? s.k : s.n,
                            c.data(), s.n, s.m, s.n, s.k, ta, tb, vector);
        EXPECT_EQ(c, expected) << s.m << "x" << s.n << "x" << s.k << " flags "
                               << flags << (vector ? " avx2" : " portable");
      }
    }
  }
}

TEST(GemmS8, ExtremesDoNotOverflow) {
  // -128 * -128 * k stays exact in int32 for k = 1000.
  const int m = 2, n = 3, k = 1000;
  std::vector<int8_t> a(m * k, -128), b(k * n, -128);
  std::vector<int32_t> c(m * n, 0);
  ASSERT_EQ(mprt_gemm(address(a.data()), k, address(b.data()), n,
                      address(c.data()), n, m, n, k, 0, MPRT_GEMM_S8),
            MPRT_OK);
  for (int32_t v : c)
    EXPECT_EQ(v, 128 * 128 * k);
}

TEST(GemmS8, LeadingDimensionsSelectSubmatrices) {
  // A 2 x 2 product out of 4-wide rows.
  std::vector<int8_t> a = {1, 2, 9, 9, 3, 4, 9, 9};
  std::vector<int8_t> b = {5, 6, 9, 9, 7, 8, 9, 9};
  std::vector<int32_t> c(2 * 5, 0);
  ASSERT_EQ(mprt_gemm(address(a.data()), 4, address(b.data()), 4,
                      address(c.data()), 5, 2, 2, 2, 0, MPRT_GEMM_S8),
            MPRT_OK);
  EXPECT_EQ(c[0], 19);
  EXPECT_EQ(c[1], 22);
  EXPECT_EQ(c[5], 43);
  EXPECT_EQ(c[6], 50);
  EXPECT_EQ(c[2], 0); // outside the submatrix
}

TEST(GemmS8, BadArguments) {
  int8_t a[4] = {};
  int32_t c[4] = {};
  EXPECT_EQ(
      mprt_gemm(address(a), 2, 0, 2, address(c), 2, 2, 2, 2, 0, MPRT_GEMM_S8),
      MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("mprt_gemm (s8)"),
            std::string::npos);
  EXPECT_EQ(mprt_gemm(address(a), 1, address(a), 2, address(c), 2, 2, 2, 2, 0,
                      MPRT_GEMM_S8),
            MPRT_ERROR_ARGUMENT); // lda < k
  EXPECT_EQ(mprt_gemm(address(a), 2, address(a), 2, address(c), 2, 0, 2, 2, 0,
                      MPRT_GEMM_S8),
            MPRT_OK); // empty product
}

// The dequantized product equals its definition bit for bit, through
// oneDNN's primitive (where the CPU has int8 dot products) and through the
// steps the other CPUs take: the exact int32 sum and the bias each
// rounded to f32, added, times the column's scale, ReLU'd on request.
// Every transpose, with and without a bias; a case whose sums pass 2^24
// (where the two roundings show), and a D wider than n (left alone).
TEST(GemmS8, DequantizedProductFollowsItsDefinition) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> value(-127, 127), near(120, 127);
  struct Shape {
    int m, n, k;
    bool large;
  };
  for (Shape s : {Shape{19, 37, 300, false}, Shape{8, 16, 2048, true}})
    for (int flags = 0; flags < 8; ++flags)
      for (bool withBias : {false, true}) {
        bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
        int32_t all = (flags & 3) | (flags & 4 ? MPRT_GEMM_RELU : 0);
        SCOPED_TRACE("m " + std::to_string(s.m) + " flags " +
                     std::to_string(all) + " bias " + std::to_string(withBias));
        std::vector<int8_t> a(s.m * s.k), b(s.k * s.n);
        for (int8_t &x : a)
          x = static_cast<int8_t>(s.large ? near(rng) : value(rng));
        for (int8_t &x : b)
          x = static_cast<int8_t>(s.large ? near(rng) : value(rng));
        std::vector<int32_t> bias(s.n);
        std::vector<float> scales(s.n);
        for (int j = 0; j < s.n; ++j) {
          bias[j] = (s.large ? 16777217 : 1001) * (j % 3 - 1) + 7 * j;
          scales[j] = 0.0123f * (j + 1);
        }
        std::vector<int32_t> sums(s.m * s.n, 0);
        reference(a, b, sums, s.m, s.n, s.k, ta, tb);
        const int ldd = s.n + 3;
        std::vector<float> want(s.m * ldd, -5.0f);
        for (int i = 0; i < s.m; ++i)
          for (int j = 0; j < s.n; ++j) {
            float x = static_cast<float>(sums[i * s.n + j]);
            if (withBias)
              x += static_cast<float>(bias[j]);
            x *= scales[j];
            want[i * ldd + j] = (all & MPRT_GEMM_RELU) ? std::max(x, 0.0f) : x;
          }
        int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
        int64_t biasAddress = withBias ? address(bias.data()) : 0;
        std::vector<float> got(s.m * ldd, -5.0f), steps(s.m * ldd, -5.0f);
        int64_t callsBefore = 0, callsAfter = 0;
        mprt_gemm_totals(&callsBefore, nullptr);
        ASSERT_EQ(mprt_gemm_s8_dequantize(
                      address(a.data()), lda, address(b.data()), ldb,
                      address(got.data()), ldd, s.m, s.n, s.k, all, biasAddress,
                      address(scales.data())),
                  MPRT_OK)
            << mprt_last_error();
        mprt_gemm_totals(&callsAfter, nullptr);
        EXPECT_EQ(callsAfter, callsBefore + 1); // one product for the totals
        ASSERT_EQ(mprt::gemmS8DequantizeSteps(
                      address(a.data()), lda, address(b.data()), ldb,
                      steps.data(), ldd, s.m, s.n, s.k, all,
                      withBias ? bias.data() : nullptr, scales.data()),
                  MPRT_OK);
        EXPECT_EQ(got, want);
        EXPECT_EQ(steps, want);
      }
}

// The largest magnitudes per lane follow their definition, the loop they
// replace: partials[i][j % lanes] = maximumf(., |D[i, j]|) over j, from
// the partials' old values (-inf, or a larger value that stays). D is the
// same as mprt_gemm_s8_dequantize's, bit for bit. 16 lanes (AVX-512 in
// registers where the CPU has it) and 4 (the scalar pass); negative
// scales, so that magnitudes come from negative values without ReLU; a NaN
// scale in column 7, whose lane must come out NaN (a vmaxps would drop it).
TEST(GemmS8, DequantizedAbsMaxFollowsItsDefinition) {
  const int m = 5, n = 48, k = 33, ldd = n + 2;
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> value(-127, 127);
  std::vector<int8_t> a(m * k), b(k * n);
  for (int8_t &x : a)
    x = static_cast<int8_t>(value(rng));
  for (int8_t &x : b)
    x = static_cast<int8_t>(value(rng));
  std::vector<int32_t> bias(n);
  std::vector<float> scales(n);
  for (int j = 0; j < n; ++j) {
    bias[j] = 97 * (j % 5 - 2);
    scales[j] = 0.0071f * (j % 2 ? -1.0f : 1.0f) * (j + 1);
  }
  auto maximumF = [](float x, float y) {
    if (std::isnan(x) || std::isnan(y))
      return std::numeric_limits<float>::quiet_NaN();
    return std::max(x, y);
  };
  for (bool nanColumn : {false, true})
    for (int lanes : {16, 4})
      for (int32_t flags : {0, MPRT_GEMM_RELU}) {
        SCOPED_TRACE("lanes " + std::to_string(lanes) + " flags " +
                     std::to_string(flags) + " nan " +
                     std::to_string(nanColumn));
        std::vector<float> columnScales = scales;
        if (nanColumn)
          columnScales[7] = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> plain(m * ldd, -5.0f), got(m * ldd, -5.0f);
        ASSERT_EQ(mprt_gemm_s8_dequantize(
                      address(a.data()), k, address(b.data()), n,
                      address(plain.data()), ldd, m, n, k, flags,
                      address(bias.data()), address(columnScales.data())),
                  MPRT_OK)
            << mprt_last_error();
        std::vector<float> partials(m * lanes,
                                    -std::numeric_limits<float>::infinity());
        partials[1] = 1e30f; // larger than any |D|: stays
        std::vector<float> want = partials;
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j)
            want[i * lanes + j % lanes] = maximumF(
                want[i * lanes + j % lanes], std::fabs(plain[i * ldd + j]));
        ASSERT_EQ(mprt_gemm_s8_dequantize_absmax(
                      address(a.data()), k, address(b.data()), n,
                      address(got.data()), ldd, m, n, k, flags,
                      address(bias.data()), address(columnScales.data()),
                      address(partials.data()), lanes),
                  MPRT_OK)
            << mprt_last_error();
        EXPECT_EQ(0, std::memcmp(got.data(), plain.data(),
                                 got.size() * sizeof(float)));
        for (size_t q = 0; q < want.size(); ++q) {
          if (std::isnan(want[q]))
            EXPECT_TRUE(std::isnan(partials[q])) << "partial " << q;
          else
            EXPECT_EQ(partials[q], want[q]) << "partial " << q;
        }
        if (nanColumn) // column 7's lane in every row
          EXPECT_TRUE(std::isnan(partials[lanes + 7 % lanes]));
      }
  // n not a multiple of the lanes, no partials.
  float partials[16];
  EXPECT_EQ(mprt_gemm_s8_dequantize_absmax(
                address(a.data()), k, address(b.data()), n,
                address(partials), n, m, n, k, 0, 0, address(scales.data()),
                address(partials), 5),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("multiple of lanes"),
            std::string::npos);
  EXPECT_EQ(mprt_gemm_s8_dequantize_absmax(
                address(a.data()), k, address(b.data()), n,
                address(partials), n, m, n, k, 0, 0, address(scales.data()), 0,
                16),
            MPRT_ERROR_ARGUMENT);
}

TEST(GemmS8, DequantizedProductRejectsBadArguments) {
  int8_t a[4] = {1, 2, 3, 4};
  float d[4], scales[2] = {1, 1};
  EXPECT_EQ(mprt_gemm_s8_dequantize(address(a), 2, address(a), 2, address(d), 2,
                                    2, 2, 2, 0, 0, 0),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("scale=null"),
            std::string::npos);
  EXPECT_EQ(mprt_gemm_s8_dequantize(address(a), 2, address(a), 2, address(d), 2,
                                    2, 2, 2, MPRT_GEMM_OVERWRITE_C, 0,
                                    address(scales)),
            MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_gemm_s8_dequantize(address(a), 2, address(a), 2, address(d), 1,
                                    2, 2, 2, 0, 0, address(scales)),
            MPRT_ERROR_ARGUMENT);
  // k = 0: the bias times the scale (no bias: zeros).
  EXPECT_EQ(mprt_gemm_s8_dequantize(address(a), 2, address(a), 2, address(d), 2,
                                    2, 2, 0, 0, 0, address(scales)),
            MPRT_OK);
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(d[3], 0.0f);
}

TEST(CpuFeatures, StringMatchesBits) {
  uint32_t features = mprt_cpu_features();
  std::string text = mprt_cpu_features_string();
  EXPECT_EQ(features == 0, text == "none");
  EXPECT_EQ((features & MPRT_CPU_AVX512_VNNI) != 0,
            text.find("avx512_vnni") != std::string::npos);
  // Architectural implications that hold on any real CPU.
  if (features & MPRT_CPU_AVX512_VNNI) {
    EXPECT_TRUE(features & MPRT_CPU_AVX512F);
  }
#if defined(__x86_64__)
  EXPECT_EQ((features & MPRT_CPU_AVX2) != 0,
            __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ((features & MPRT_CPU_AVX512F) != 0,
            __builtin_cpu_supports("avx512f") != 0);
#endif
}

} // namespace
