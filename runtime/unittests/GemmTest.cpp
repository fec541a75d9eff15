//===- GemmTest.cpp - mprt_gemm against a naive product -------------------===//

#include "mprt/mprt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

uint16_t toBf16(float f) { // truncation is exact for the values used
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t toF16(float f) { // exact for small integers and halves
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  uint32_t sign = (bits >> 16) & 0x8000u;
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = (bits >> 13) & 0x3ffu;
  if ((bits & 0x7fffffffu) == 0)
    return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (exponent << 10) | mantissa);
}

int64_t address(const void *p) { return reinterpret_cast<int64_t>(p); }

/// op(A) x op(B) accumulated into C; A is m x k (k x m transposed), B k x n.
void reference(const std::vector<float> &a, const std::vector<float> &b,
               std::vector<float> &c, int m, int n, int k, bool ta, bool tb) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int r = 0; r < k; ++r)
        s += (ta ? a[r * m + i] : a[i * k + r]) *
             (tb ? b[j * k + r] : b[r * n + j]);
      c[i * n + j] += s;
    }
}

class GemmTest : public ::testing::TestWithParam<int> {};

TEST_P(GemmTest, MatchesNaiveProductForEveryTypeAndTranspose) {
  int flags = GetParam();
  bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
  const int m = 5, n = 7, k = 9;
  std::mt19937 rng(flags);
  std::uniform_int_distribution<int> small(-4, 4);
  // Small halves: exact in f16, bf16 and f32, so every type agrees exactly.
  std::vector<float> a(m * k), b(k * n), c0(m * n);
  for (float &v : a)
    v = small(rng) * 0.5f;
  for (float &v : b)
    v = small(rng) * 0.5f;
  for (float &v : c0)
    v = small(rng);
  std::vector<float> expected = c0;
  reference(a, b, expected, m, n, k, ta, tb);
  int lda = ta ? m : k, ldb = tb ? k : n;

  for (int type : {MPRT_GEMM_F32, MPRT_GEMM_F16, MPRT_GEMM_BF16}) {
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      a16[i] = type == MPRT_GEMM_F16 ? toF16(a[i]) : toBf16(a[i]);
    for (size_t i = 0; i < b.size(); ++i)
      b16[i] = type == MPRT_GEMM_F16 ? toF16(b[i]) : toBf16(b[i]);
    const void *pa = type == MPRT_GEMM_F32 ? static_cast<const void *>(a.data())
                                           : a16.data();
    const void *pb = type == MPRT_GEMM_F32 ? static_cast<const void *>(b.data())
                                           : b16.data();
    std::vector<float> c = c0;
    ASSERT_EQ(mprt_gemm(address(pa), lda, address(pb), ldb, address(c.data()),
                        n, m, n, k, flags, type),
              MPRT_OK)
        << mprt_last_error();
    for (int i = 0; i < m * n; ++i)
      EXPECT_EQ(c[i], expected[i]) << "type " << type << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Transposes, GemmTest, ::testing::Values(0, 1, 2, 3));

TEST(Gemm, LeadingDimensionSelectsASubmatrix) {
  // A is the left 2x2 block of a 2x4 buffer (lda 4).
  float a[] = {1, 2, 99, 99, 3, 4, 99, 99};
  float b[] = {1, 0, 0, 1};
  float c[4] = {};
  ASSERT_EQ(mprt_gemm(address(a), 4, address(b), 2, address(c), 2, 2, 2, 2, 0,
                      MPRT_GEMM_F32),
            MPRT_OK);
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[1], 2);
  EXPECT_EQ(c[2], 3);
  EXPECT_EQ(c[3], 4);
}

TEST(Gemm, RejectsBadArguments) {
  float x[4] = {};
  EXPECT_EQ(mprt_gemm(address(x), 2, address(x), 2, address(x), 2, -1, 2, 2, 0,
                      MPRT_GEMM_F32),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("m=-1"), std::string::npos);
  EXPECT_EQ(
      mprt_gemm(address(x), 2, address(x), 2, address(x), 2, 2, 2, 2, 0, 7),
      MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("type=7"), std::string::npos);
  EXPECT_EQ(
      mprt_gemm(0, 2, address(x), 2, address(x), 2, 2, 2, 2, 0, MPRT_GEMM_F32),
      MPRT_ERROR_ARGUMENT);
}

TEST(Gemm, EmptyProductLeavesCUnchanged) {
  float c[1] = {5};
  float x[1] = {1};
  // Every type (a 16-bit primitive with k = 0 used to stop the process).
  for (int type : {MPRT_GEMM_F32, MPRT_GEMM_F16, MPRT_GEMM_BF16}) {
    ASSERT_EQ(mprt_gemm(address(x), 1, address(x), 1, address(c), 1, 1, 1, 0,
                        0, type),
              MPRT_OK);
    EXPECT_EQ(c[0], 5);
  }
}

/// bf16 nearest-even rounding of an f32 value (the test's own oracle).
float roundToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// f16 products in each mode against a double-precision product of the
// operands as that mode sees them: exact f16 values (F32 mode) or those
// values rounded to bf16 (BF16 mode). The values n/1024 need up to 11
// significant bits: exact in f16, not in bf16, so the rounding is tested.
TEST(Gemm, F16ModesRoundAsDocumented) {
  const int m = 13, n = 37, k = 70; // k > 16 and odd sizes: vector tails
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-2047, 2047);
  std::vector<float> a(m * k), b(k * n);
  for (float &v : a)
    v = value(rng) / 1024.0f;
  for (float &v : b)
    v = value(rng) / 1024.0f;
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    a16[i] = toF16(a[i]);
  for (size_t i = 0; i < b.size(); ++i)
    b16[i] = toF16(b[i]);
  auto expect = [&](bool roundBf16) {
    std::vector<double> out(m * n, 0.0);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        for (int r = 0; r < k; ++r) {
          float x = a[i * k + r], y = b[r * n + j];
          if (roundBf16) {
            x = roundToBf16(x);
            y = roundToBf16(y);
          }
          out[i * n + j] += static_cast<double>(x) * y;
        }
    return out;
  };
  std::vector<double> exact = expect(false), rounded = expect(true);
  double largestGap = 0;
  for (int i = 0; i < m * n; ++i)
    largestGap = std::max(largestGap, std::fabs(exact[i] - rounded[i]));
  ASSERT_GT(largestGap, 1e-3) << "the data must tell the modes apart";

  for (int mode : {MPRT_F16_GEMM_F32, MPRT_F16_GEMM_BF16}) {
    mprt_gemm_set_f16_mode(mode);
    ASSERT_EQ(mprt_gemm_f16_mode(), mode);
    std::vector<float> c(m * n, 0.0f);
    ASSERT_EQ(mprt_gemm(address(a16.data()), k, address(b16.data()), n,
                        address(c.data()), n, m, n, k, 0, MPRT_GEMM_F16),
              MPRT_OK)
        << mprt_last_error();
    const std::vector<double> &want =
        mode == MPRT_F16_GEMM_BF16 ? rounded : exact;
    for (int i = 0; i < m * n; ++i) // f32 accumulation of k terms
      EXPECT_NEAR(c[i], want[i], 1e-5 * k)
          << "mode " << mode << " element " << i;
  }
  mprt_gemm_set_f16_mode(MPRT_F16_GEMM_AUTO);
}

/// The test's own f32 -> 16-bit oracles: the compiler's _Float16
/// conversion (round to nearest even) and roundToBf16.
uint16_t halfBits(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}
uint16_t bfloatBits(float f) {
  float r = roundToBf16(f);
  uint32_t bits;
  std::memcpy(&bits, &r, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

// MPRT_GEMM_ROUNDED_C: C (the operands' type, leading dimension beyond n)
// is the f32 product of the same call without the flag, rounded once to
// nearest even; the padding is left alone. Every f16 mode, bf16, every
// transpose, a batch.
TEST(Gemm, RoundedCIsTheF32ProductRoundedOnce) {
  const int m = 5, n = 19, k = 300, ldc = 24, batch = 2;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-2047, 2047);
  std::vector<float> a(batch * m * k), b(batch * k * n);
  for (float &v : a)
    v = value(rng) / 256.0f;
  for (float &v : b)
    v = value(rng) / 256.0f;
  struct Case {
    int type, f16Mode;
  };
  for (Case test : {Case{MPRT_GEMM_F16, MPRT_F16_GEMM_F32},
                    Case{MPRT_GEMM_F16, MPRT_F16_GEMM_BF16},
                    Case{MPRT_GEMM_F16, MPRT_F16_GEMM_AUTO},
                    Case{MPRT_GEMM_BF16, MPRT_F16_GEMM_AUTO}}) {
    mprt_gemm_set_f16_mode(test.f16Mode);
    bool half = test.type == MPRT_GEMM_F16;
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      a16[i] = half ? halfBits(a[i]) : bfloatBits(a[i]);
    for (size_t i = 0; i < b.size(); ++i)
      b16[i] = half ? halfBits(b[i]) : bfloatBits(b[i]);
    for (int flags = 0; flags < 4; ++flags) {
      bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
      int lda = ta ? m : k, ldb = tb ? k : n;
      std::vector<uint16_t> c(batch * m * ldc, 0x1234);
      ASSERT_EQ(mprt_gemm_batched(address(a16.data()), lda,
                                  address(b16.data()), ldb, address(c.data()),
                                  ldc, m, n, k, flags | MPRT_GEMM_ROUNDED_C,
                                  test.type, batch, m * k, k * n, m * ldc),
                MPRT_OK)
          << mprt_last_error();
      for (int p = 0; p < batch; ++p) {
        std::vector<float> product(m * n, 0.0f);
        ASSERT_EQ(mprt_gemm(address(a16.data() + p * m * k), lda,
                            address(b16.data() + p * k * n), ldb,
                            address(product.data()), n, m, n, k, flags,
                            test.type),
                  MPRT_OK);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < ldc; ++j) {
            uint16_t want =
                j < n ? (half ? halfBits(product[i * n + j])
                              : bfloatBits(product[i * n + j]))
                      : 0x1234;
            ASSERT_EQ(c[p * m * ldc + i * ldc + j], want)
                << "type " << test.type << " mode " << test.f16Mode
                << " flags " << flags << " at " << p << "," << i << "," << j;
          }
      }
    }
  }
  mprt_gemm_set_f16_mode(MPRT_F16_GEMM_AUTO);
}

// The rounding of a rounded C at the edges of f16: the largest finite
// value, ties to inf, to zero and to even subnormals. diag(256, 2^-14)
// times two rows of 24 values: row 0 holds 256 y, row 1 2^-14 y, each
// product exact in f32 (k = 2, the other term 0). Checked as rows of 24
// (the F16C path) and one column at a time (the scalar rounding).
TEST(Gemm, RoundedCF16Edges) {
  mprt_gemm_set_f16_mode(MPRT_F16_GEMM_F32); // operands exact
  const float scale[2] = {256, 1.0f / 16384};
  std::vector<float> big = {255.875f,   // 65504, the largest f16
                            255.9375f,  // 65520: ties to even, inf
                            -255.9375f, // -inf
                            255.90625f, // 65512: 65504
                            0.333251953125f};
  std::vector<float> small = {1.0f / 2048,     // 2^-25: ties to 0
                              3.0f / 4096,     // 0.75 2^-24: 2^-24
                              5.0f / 4096,     // 1.25 2^-24: 2^-24
                              3.0f / 2048,     // 1.5 2^-24: ties to 2 2^-24
                              -3.0f / 4096,    // -2^-24
                              1023.0f / 1024,  // subnormal, exact
                              2047.0f / 2048}; // ties up to 2^-14, normal
  const int n = 24, k = 2;
  std::vector<float> b(k * n, 0.0f);
  for (int j = 0; j < n; ++j) {
    b[j] = j < static_cast<int>(big.size()) ? big[j] : (j + 1) / 3.0f;
    b[n + j] = j < static_cast<int>(small.size()) ? small[j] : (j + 1) / 7.0f;
  }
  std::vector<uint16_t> a16 = {halfBits(scale[0]), 0, 0, halfBits(scale[1])};
  std::vector<uint16_t> b16(b.size()), want(2 * n);
  for (size_t i = 0; i < b.size(); ++i)
    b16[i] = halfBits(b[i]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < n; ++j) // the f16 value of b times the scale: exact
      want[i * n + j] = halfBits(scale[i] * static_cast<float>(
                                                static_cast<_Float16>(b[i * n + j])));
  std::vector<uint16_t> rows(2 * n, 0x1234);
  ASSERT_EQ(mprt_gemm(address(a16.data()), k, address(b16.data()), n,
                      address(rows.data()), n, 2, n, k, MPRT_GEMM_ROUNDED_C,
                      MPRT_GEMM_F16),
            MPRT_OK)
      << mprt_last_error();
  std::vector<uint16_t> columns(2 * n, 0x1234);
  for (int j = 0; j < n; ++j)
    ASSERT_EQ(mprt_gemm(address(a16.data()), k, address(b16.data() + j), n,
                        address(columns.data() + j), n, 2, 1, k,
                        MPRT_GEMM_ROUNDED_C, MPRT_GEMM_F16),
              MPRT_OK);
  for (int i = 0; i < 2 * n; ++i) {
    EXPECT_EQ(rows[i], want[i]) << "row path, element " << i;
    EXPECT_EQ(columns[i], want[i]) << "scalar path, element " << i;
  }
  EXPECT_EQ(want[1], 0x7c00) << "the oracle rounds 65520 to inf";
  EXPECT_EQ(want[n], 0) << "the oracle rounds 2^-25 to zero";
  mprt_gemm_set_f16_mode(MPRT_F16_GEMM_AUTO);
}

TEST(Gemm, RoundedCArgumentsAndEmptySums) {
  uint16_t x[4] = {}, c[4] = {1, 1, 1, 1};
  float f[4] = {};
  EXPECT_EQ(mprt_gemm(address(f), 2, address(f), 2, address(f), 2, 2, 2, 2,
                      MPRT_GEMM_ROUNDED_C, MPRT_GEMM_F32),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("rounded C needs f16 or bf16"),
            std::string::npos);
  EXPECT_EQ(mprt_gemm(address(x), 2, address(x), 2, address(c), 2, 2, 2, 2, 16,
                      MPRT_GEMM_F16),
            MPRT_ERROR_ARGUMENT);
  // k = 0: C = round(empty sum) = +0, not "unchanged" as for C +=.
  ASSERT_EQ(mprt_gemm(address(x), 1, address(x), 2, address(c), 2, 2, 2, 0,
                      MPRT_GEMM_ROUNDED_C, MPRT_GEMM_BF16),
            MPRT_OK);
  for (uint16_t v : c)
    EXPECT_EQ(v, 0);
}

TEST(Gemm, F16AutoModeFollowsCpuFeatures) {
  mprt_gemm_set_f16_mode(MPRT_F16_GEMM_AUTO);
  uint32_t features = mprt_cpu_features();
  int expected = (features & MPRT_CPU_AVX512_FP16) ? MPRT_F16_GEMM_NATIVE
                 : (features & (MPRT_CPU_AVX512_BF16 | MPRT_CPU_AMX_BF16))
                     ? MPRT_F16_GEMM_BF16
                     : MPRT_F16_GEMM_F32;
  EXPECT_EQ(mprt_gemm_f16_mode(), expected)
      << "features: " << mprt_cpu_features_string();
  mprt_gemm_set_f16_mode(42); // unknown: back to AUTO
  EXPECT_EQ(mprt_gemm_f16_mode(), expected);
}

} // namespace

namespace {

// Three products with a shared A (stride 0) and batched B and C, in f32 and
// s8, against one mprt_gemm call per batch element.
TEST(Gemm, BatchedMatchesOneCallPerElement) {
  const int m = 3, n = 4, k = 5, batch = 3;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-4, 4);
  // bf16 and f32 run the whole batch as one oneDNN primitive (A shared: a
  // batch dimension of 1), s8 one product at a time. Small integers: exact
  // in any order of summation, so the primitive equals sgemm here.
  for (int type : {MPRT_GEMM_F32, MPRT_GEMM_S8, MPRT_GEMM_BF16}) {
    std::vector<float> af(m * k), bf(batch * k * n);
    std::vector<int8_t> a8(af.size()), b8(bf.size());
    std::vector<uint16_t> a16(af.size()), b16(bf.size());
    for (size_t i = 0; i < af.size(); ++i) {
      a8[i] = static_cast<int8_t>(af[i] = small(rng));
      a16[i] = bfloatBits(af[i]);
    }
    for (size_t i = 0; i < bf.size(); ++i) {
      b8[i] = static_cast<int8_t>(bf[i] = small(rng));
      b16[i] = bfloatBits(bf[i]);
    }
    const void *pa =
        type == MPRT_GEMM_F32    ? static_cast<const void *>(af.data())
        : type == MPRT_GEMM_BF16 ? static_cast<const void *>(a16.data())
                                 : a8.data();
    const void *pb =
        type == MPRT_GEMM_F32    ? static_cast<const void *>(bf.data())
        : type == MPRT_GEMM_BF16 ? static_cast<const void *>(b16.data())
                                 : b8.data();
    int64_t elt = type == MPRT_GEMM_F32 ? 4 : type == MPRT_GEMM_BF16 ? 2 : 1;
    std::vector<int32_t> c(batch * m * n, 1), expected(batch * m * n, 1);
    ASSERT_EQ(mprt_gemm_batched(address(pa), k, address(pb), n,
                                address(c.data()), n, m, n, k, 0, type, batch,
                                0, k * n, m * n),
              MPRT_OK)
        << mprt_last_error();
    for (int p = 0; p < batch; ++p)
      ASSERT_EQ(mprt_gemm(address(pa), k, address(pb) + p * k * n * elt, n,
                          address(expected.data() + p * m * n), n, m, n, k, 0,
                          type),
                MPRT_OK);
    // f32 results are compared as the bits mprt_gemm wrote: identical.
    EXPECT_EQ(c, expected) << "type " << type;
  }
}

// Attention's products in the projections' layout: 3 sequences x 4 heads,
// Q and K read from [tokens, heads x features] matrices (Q K^T, the head
// stride 8 inside the rows, the sequence stride 5 rows), the scores dense;
// then P V written side by side into the same layout. Against one
// mprt_gemm per (sequence, head): bf16 and f32 on oneDNN's 4-D primitive,
// f16 one product at a time. Small integers: exact in any order.
TEST(Gemm, Batched2dReadsAndWritesHeadsInPlace) {
  const int64_t seqs = 3, heads = 4, tokens = 5, features = 8;
  const int64_t width = heads * features, rows = seqs * tokens;
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> q(rows * width), kMat(rows * width), v(rows * width),
      p(seqs * heads * tokens * tokens);
  for (auto *values : {&q, &kMat, &v, &p})
    for (float &x : *values)
      x = static_cast<float>(small(rng));
  for (int type : {MPRT_GEMM_BF16, MPRT_GEMM_F32, MPRT_GEMM_F16}) {
    int64_t elt = type == MPRT_GEMM_F32 ? 4 : 2;
    auto encode = [&](const std::vector<float> &values) {
      std::vector<uint8_t> bytes(values.size() * elt);
      for (size_t i = 0; i < values.size(); ++i) {
        if (type == MPRT_GEMM_F32) {
          std::memcpy(bytes.data() + i * 4, &values[i], 4);
        } else {
          uint16_t bits = type == MPRT_GEMM_BF16 ? bfloatBits(values[i])
                                                 : halfBits(values[i]);
          std::memcpy(bytes.data() + i * 2, &bits, 2);
        }
      }
      return bytes;
    };
    std::vector<uint8_t> qb = encode(q), kb = encode(kMat), vb = encode(v),
                         pb = encode(p);
    // Scores S[s][h] = Q[s][h] K[s][h]^T: f32, dense [3, 4, 5, 5].
    std::vector<float> scores(seqs * heads * tokens * tokens, 7.0f),
        want(scores.size(), 7.0f);
    int32_t flags = MPRT_GEMM_TRANS_B | MPRT_GEMM_OVERWRITE_C;
    ASSERT_EQ(mprt_gemm_batched_2d(
                  address(qb.data()), width, address(kb.data()), width,
                  address(scores.data()), tokens, tokens, tokens, features,
                  flags, type, seqs, tokens * width, tokens * width,
                  heads * tokens * tokens, heads, features, features,
                  tokens * tokens),
              MPRT_OK)
        << mprt_last_error();
    for (int64_t s = 0; s < seqs; ++s)
      for (int64_t h = 0; h < heads; ++h) {
        int64_t in = (s * tokens * width + h * features) * elt;
        ASSERT_EQ(
            mprt_gemm(address(qb.data()) + in, width, address(kb.data()) + in,
                      width,
                      address(want.data() + (s * heads + h) * tokens * tokens),
                      tokens, tokens, tokens, features, flags, type),
            MPRT_OK)
            << mprt_last_error();
      }
    EXPECT_EQ(scores, want) << "type " << type;
    // O[s][h] = P[s][h] V[s][h], rounded (16-bit) into [tokens, heads x
    // features]; a column past the heads stays untouched.
    if (type == MPRT_GEMM_F32)
      continue; // rounded results are 16-bit
    const int64_t ldo = width + 1;
    std::vector<uint16_t> out(rows * ldo, 0xbeef), expected(out);
    flags = MPRT_GEMM_ROUNDED_C;
    ASSERT_EQ(mprt_gemm_batched_2d(
                  address(pb.data()), tokens, address(vb.data()), width,
                  address(out.data()), ldo, tokens, features, tokens, flags,
                  type, seqs, heads * tokens * tokens, tokens * width,
                  tokens * ldo, heads, tokens * tokens, features, features),
              MPRT_OK)
        << mprt_last_error();
    for (int64_t s = 0; s < seqs; ++s)
      for (int64_t h = 0; h < heads; ++h)
        ASSERT_EQ(
            mprt_gemm(
                address(pb.data()) + (s * heads + h) * tokens * tokens * elt,
                tokens,
                address(vb.data()) + (s * tokens * width + h * features) * elt,
                width,
                address(expected.data() + s * tokens * ldo + h * features), ldo,
                tokens, features, tokens, flags, type),
            MPRT_OK)
            << mprt_last_error();
    EXPECT_EQ(out, expected) << "type " << type;
  }
}

TEST(Gemm, Batched2dRejectsOverlappingResults) {
  float a[64] = {}, c[64] = {};
  // Heads side by side, but the sequences' blocks overlap (outer stride 4 <
  // 1 * 2 + 1 * 4 + 2).
  EXPECT_EQ(mprt_gemm_batched_2d(address(a), 4, address(a), 4, address(c), 4, 2,
                                 2, 2, 0, MPRT_GEMM_F32, 2, 8, 8, 4, 2, 2, 2,
                                 2),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("results would overlap"),
            std::string::npos);
  // Heads that share columns.
  EXPECT_EQ(mprt_gemm_batched_2d(address(a), 4, address(a), 4, address(c), 4, 2,
                                 2, 2, 0, MPRT_GEMM_F32, 2, 8, 8, 8, 2, 1, 1,
                                 1),
            MPRT_ERROR_ARGUMENT);
  // Apart: heads side by side in rows of 4, sequences 8 apart.
  EXPECT_EQ(mprt_gemm_batched_2d(address(a), 4, address(a), 4, address(c), 4, 2,
                                 2, 2, 0, MPRT_GEMM_F32, 2, 8, 8, 8, 2, 2, 2,
                                 2),
            MPRT_OK)
      << mprt_last_error();
}

TEST(Gemm, BatchedRejectsOverlappingResults) {
  float x[16] = {};
  EXPECT_EQ(mprt_gemm_batched(address(x), 2, address(x), 2, address(x), 2, 2, 2,
                              2, 0, MPRT_GEMM_F32, 2, 0, 0, 1),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("bad batch 2"),
            std::string::npos);
  EXPECT_EQ(mprt_gemm_batched(address(x), 2, address(x), 2, address(x), 2, 2, 2,
                              2, 0, MPRT_GEMM_F32, 0, 0, 0, 0),
            MPRT_OK);
}

} // namespace

namespace {

// MPRT_GEMM_OVERWRITE_C: C = op(A) op(B) without reading C. C starts as NaN
// bit patterns with a leading dimension beyond n; the result must equal the
// product accumulated into zeros, bit for bit (no product here is -0), and
// the gap between rows must stay as it was. Every type (f16 in each mode),
// every transpose, one call and a batch with A shared; k = 0 stores zeros.
TEST(Gemm, OverwriteCEqualsTheProductIntoZeros) {
  const int m = 5, n = 7, k = 19, ldc = 9, batch = 3;
  const uint32_t garbage = 0x7fc00123u; // a NaN, and an odd int32
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-4, 4);
  struct Case {
    int type, f16Mode;
  };
  for (Case c : {Case{MPRT_GEMM_F32, 0}, Case{MPRT_GEMM_BF16, 0},
                 Case{MPRT_GEMM_S8, 0}, Case{MPRT_GEMM_F16, 1},
                 Case{MPRT_GEMM_F16, 2}, Case{MPRT_GEMM_F16, 3}}) {
    if (c.type == MPRT_GEMM_F16)
      mprt_gemm_set_f16_mode(c.f16Mode);
    for (int flags = 0; flags < 4; ++flags)
      for (int kk : {k, 0}) {
        SCOPED_TRACE("type " + std::to_string(c.type) + " f16 mode " +
                     std::to_string(c.f16Mode) + " flags " +
                     std::to_string(flags) + " k " + std::to_string(kk));
        bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
        std::vector<float> af(m * k), bf(batch * k * n);
        for (float &v : af)
          v = small(rng) + 0.5f; // never 0: no -0 products
        for (float &v : bf)
          v = small(rng) + 0.5f;
        std::vector<int8_t> a8(af.size()), b8(bf.size());
        std::vector<uint16_t> a16(af.size()), b16(bf.size());
        for (size_t i = 0; i < af.size(); ++i) {
          a8[i] = static_cast<int8_t>(2 * af[i]);
          a16[i] =
              c.type == MPRT_GEMM_F16 ? halfBits(af[i]) : bfloatBits(af[i]);
        }
        for (size_t i = 0; i < bf.size(); ++i) {
          b8[i] = static_cast<int8_t>(2 * bf[i]);
          b16[i] =
              c.type == MPRT_GEMM_F16 ? halfBits(bf[i]) : bfloatBits(bf[i]);
        }
        const void *pa =
            c.type == MPRT_GEMM_F32  ? static_cast<const void *>(af.data())
            : c.type == MPRT_GEMM_S8 ? static_cast<const void *>(a8.data())
                                     : a16.data();
        const void *pb =
            c.type == MPRT_GEMM_F32  ? static_cast<const void *>(bf.data())
            : c.type == MPRT_GEMM_S8 ? static_cast<const void *>(b8.data())
                                     : b16.data();
        int64_t elt = c.type == MPRT_GEMM_F32  ? 4
                      : c.type == MPRT_GEMM_S8 ? 1
                                               : 2;
        int64_t lda = ta ? m : kk, ldb = tb ? kk : n;
        lda = std::max<int64_t>(lda, 1);
        ldb = std::max<int64_t>(ldb, 1);
        int64_t cSize = batch * m * ldc;
        std::vector<uint32_t> got(cSize, garbage), want(cSize, garbage);
        for (int64_t i = 0; i < cSize; ++i)
          if (i % ldc < n)
            want[i] = 0; // +0.0f and int32 0 alike
        // The expected result: one accumulating call per product.
        for (int p = 0; p < batch; ++p)
          ASSERT_EQ(mprt_gemm(address(pa), lda, address(pb) + p * k * n * elt,
                              ldb, address(want.data() + p * m * ldc), ldc, m,
                              n, kk, flags, c.type),
                    MPRT_OK)
              << mprt_last_error();
        // One call: the first product.
        ASSERT_EQ(mprt_gemm(address(pa), lda, address(pb), ldb,
                            address(got.data()), ldc, m, n, kk,
                            flags | MPRT_GEMM_OVERWRITE_C, c.type),
                  MPRT_OK)
            << mprt_last_error();
        EXPECT_TRUE(
            std::equal(got.begin(), got.begin() + m * ldc, want.begin()));
        // The batch, A shared.
        std::fill(got.begin(), got.end(), garbage);
        ASSERT_EQ(mprt_gemm_batched(address(pa), lda, address(pb), ldb,
                                    address(got.data()), ldc, m, n, kk,
                                    flags | MPRT_GEMM_OVERWRITE_C, c.type,
                                    batch, 0, k * n, m * ldc),
                  MPRT_OK)
            << mprt_last_error();
        EXPECT_EQ(got, want);
      }
  }
  mprt_gemm_set_f16_mode(MPRT_F16_GEMM_AUTO);
}

} // namespace

namespace {

// mprt_gemm_bias: C = op(A) op(B) + bias, stored in f32 or rounded once.
// The reference is what the compiled loops computed before the call took
// them over: the f32 product (mprt_gemm into zeros), bias[j] added in f32,
// rounded to nearest even. Equal bit for bit for bf16 (oneDNN's bias
// input) and f16 (the steps one by one), every transpose; values with
// fractions so that the sums round; C's leading dimension beyond n and its
// gap untouched.
TEST(Gemm, BiasIsAddedInF32BeforeTheOneRounding) {
  const int m = 6, n = 20, k = 37, ldc = 23;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> value(-255, 255);
  for (int type : {MPRT_GEMM_BF16, MPRT_GEMM_F16})
    for (int flags = 0; flags < 4; ++flags)
      for (bool rounded : {false, true})
        for (int kk : {k, 0}) {
          SCOPED_TRACE("type " + std::to_string(type) + " flags " +
                       std::to_string(flags) + " rounded " +
                       std::to_string(rounded) + " k " + std::to_string(kk));
          bool half = type == MPRT_GEMM_F16;
          bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
          std::vector<uint16_t> a(m * k), b(k * n);
          for (uint16_t &v : a)
            v = half ? halfBits(value(rng) / 64.0f)
                     : bfloatBits(value(rng) / 64.0f);
          for (uint16_t &v : b)
            v = half ? halfBits(value(rng) / 64.0f)
                     : bfloatBits(value(rng) / 64.0f);
          std::vector<float> bias(n);
          for (float &v : bias)
            v = value(rng) / 1000.0f;
          int64_t lda = std::max(ta ? m : kk, 1),
                  ldb = std::max(tb ? kk : n, 1);
          // The reference: f32 product, + bias, rounded.
          std::vector<float> product(m * n, 0.0f);
          ASSERT_EQ(mprt_gemm(address(a.data()), lda, address(b.data()), ldb,
                              address(product.data()), n, m, n, kk, flags,
                              type),
                    MPRT_OK);
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j)
              product[i * n + j] += bias[j];
          if (rounded) {
            const uint16_t sentinel = 0x7fc1;
            std::vector<uint16_t> c(m * ldc, sentinel);
            ASSERT_EQ(mprt_gemm_bias(address(a.data()), lda, address(b.data()),
                                     ldb, address(c.data()), ldc, m, n, kk,
                                     flags | MPRT_GEMM_ROUNDED_C, type,
                                     address(bias.data())),
                      MPRT_OK)
                << mprt_last_error();
            for (int i = 0; i < m; ++i)
              for (int j = 0; j < ldc; ++j) {
                uint16_t want = j >= n ? sentinel
                                : half ? halfBits(product[i * n + j])
                                       : bfloatBits(product[i * n + j]);
                ASSERT_EQ(c[i * ldc + j], want) << i << "," << j;
              }
          } else {
            std::vector<float> c(m * ldc, std::nanf(""));
            ASSERT_EQ(mprt_gemm_bias(address(a.data()), lda, address(b.data()),
                                     ldb, address(c.data()), ldc, m, n, kk,
                                     flags, type, address(bias.data())),
                      MPRT_OK)
                << mprt_last_error();
            for (int i = 0; i < m; ++i)
              for (int j = 0; j < n; ++j)
                ASSERT_EQ(c[i * ldc + j], product[i * n + j]) << i << "," << j;
            EXPECT_TRUE(std::isnan(c[n]));
          }
        }
}

TEST(Gemm, BiasRejectsOtherTypesAndMissingBias) {
  float f[4] = {};
  EXPECT_EQ(mprt_gemm_bias(address(f), 2, address(f), 2, address(f), 2, 2, 2, 2,
                           0, MPRT_GEMM_F32, address(f)),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("f16 or bf16 operands"),
            std::string::npos);
  EXPECT_EQ(mprt_gemm_bias(address(f), 2, address(f), 2, address(f), 2, 2, 2, 2,
                           0, MPRT_GEMM_BF16, 0),
            MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_gemm_bias(address(f), 2, address(f), 2, address(f), 2, -1, 2,
                           2, 0, MPRT_GEMM_BF16, address(f)),
            MPRT_ERROR_ARGUMENT);
}

// A B declared constant is read from oneDNN's packed copy: equal to the
// plain product, untouched by later writes to B until released (the
// contract forbids those writes; the test makes them to see which copy is
// read), then the product follows B again. s8 and bf16, B transposed or
// not, plain and with a bias; small integers, so every path is exact.
TEST(Gemm, ConstantBIsPackedOnceUntilReleased) {
  const int m = 32, n = 48, k = 64;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-4, 4);
  uint32_t features = mprt_cpu_features();
  for (int type : {MPRT_GEMM_S8, MPRT_GEMM_BF16})
    for (int flags : {0, MPRT_GEMM_TRANS_B})
      for (bool bias : {false, true}) {
        if (bias && type == MPRT_GEMM_S8)
          continue; // mprt_gemm_bias takes 16-bit operands only
        SCOPED_TRACE("type " + std::to_string(type) + " flags " +
                     std::to_string(flags) + " bias " + std::to_string(bias));
        bool s8 = type == MPRT_GEMM_S8;
        std::vector<int8_t> a8(m * k), b8(k * n);
        std::vector<uint16_t> a16(m * k), b16(k * n);
        for (size_t i = 0; i < a8.size(); ++i)
          a16[i] = bfloatBits(a8[i] = static_cast<int8_t>(small(rng)));
        for (size_t i = 0; i < b8.size(); ++i)
          b16[i] = bfloatBits(b8[i] = static_cast<int8_t>(small(rng)));
        std::vector<float> biasValues(n);
        for (float &v : biasValues)
          v = small(rng);
        const void *pa = s8 ? static_cast<const void *>(a8.data()) : a16.data();
        void *pb = s8 ? static_cast<void *>(b8.data()) : b16.data();
        int64_t bBytes = s8 ? k * n : 2 * k * n;
        int64_t ldb = flags & MPRT_GEMM_TRANS_B ? k : n;
        // C in f32 (bits compared) or int32: 4 bytes an element either way.
        auto product = [&](std::vector<int32_t> &c) {
          c.assign(m * n, 7);
          mprt_status status =
              bias ? mprt_gemm_bias(address(pa), k, address(pb), ldb,
                                    address(c.data()), n, m, n, k, flags, type,
                                    address(biasValues.data()))
                   : mprt_gemm(address(pa), k, address(pb), ldb,
                               address(c.data()), n, m, n, k,
                               flags | MPRT_GEMM_OVERWRITE_C, type);
          ASSERT_EQ(status, MPRT_OK) << mprt_last_error();
        };
        std::vector<int32_t> plain, packed, after, changed;
        product(plain);
        ASSERT_EQ(mprt_gemm_declare_constant(pb, bBytes), MPRT_OK)
            << mprt_last_error();
        product(packed);
        EXPECT_EQ(packed, plain);
        // Where the product runs on oneDNN's matmul primitive, B's packed
        // copy is what it reads.
        bool primitive = s8 ? (features & MPRT_CPU_AVX512_VNNI)
                            : (features & MPRT_CPU_AVX512_BF16);
        if (s8)
          std::fill(b8.begin(), b8.end(), int8_t(1));
        else
          std::fill(b16.begin(), b16.end(), bfloatBits(1.0f));
        product(after);
        if (primitive)
          EXPECT_EQ(after, plain) << "the packed copy was not read";
        mprt_gemm_release_constant(pb);
        product(changed);
        // Every element of A B is now a row sum of A (+ the bias).
        for (int i = 0; i < m; ++i) {
          float sum = 0;
          for (int r = 0; r < k; ++r)
            sum += a8[i * k + r];
          for (int j = 0; j < n; ++j) {
            float want = sum + (bias ? biasValues[j] : 0.0f);
            int32_t got = changed[i * n + j];
            float gotValue;
            std::memcpy(&gotValue, &got, sizeof(gotValue));
            ASSERT_EQ(s8 ? static_cast<float>(got) : gotValue, want)
                << i << "," << j;
          }
        }
      }
}

TEST(Gemm, DeclaredConstantRangesMustNotOverlap) {
  std::vector<int8_t> memory(256);
  EXPECT_EQ(mprt_gemm_declare_constant(memory.data(), 0), MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_gemm_declare_constant(nullptr, 8), MPRT_ERROR_ARGUMENT);
  ASSERT_EQ(mprt_gemm_declare_constant(memory.data() + 64, 64), MPRT_OK);
  EXPECT_EQ(mprt_gemm_declare_constant(memory.data() + 100, 8),
            MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("overlaps"), std::string::npos);
  EXPECT_EQ(mprt_gemm_declare_constant(memory.data(), 65), MPRT_ERROR_ARGUMENT);
  // Adjacent ranges are fine; releasing an address that starts no range
  // does nothing.
  EXPECT_EQ(mprt_gemm_declare_constant(memory.data(), 64), MPRT_OK);
  EXPECT_EQ(mprt_gemm_declare_constant(memory.data() + 128, 64), MPRT_OK);
  mprt_gemm_release_constant(memory.data() + 1);
  for (int start : {0, 64, 128})
    mprt_gemm_release_constant(memory.data() + start);
  EXPECT_EQ(mprt_gemm_declare_constant(memory.data(), 256), MPRT_OK);
  mprt_gemm_release_constant(memory.data());
}

} // namespace
