//===- MprtCudaOnStandinTest.cpp - libmprt_cuda on the CUDA stand-ins -----===//
//
// Runs libmprt_cuda's host side on the driver and cuBLASLt stand-ins (ctest
// sets LD_LIBRARY_PATH=build/lib/cuda-standin): what lowered code does, a
// launch of the checked-in lowered PTX and cuBLASLt products, with no
// violation, and a misuse that the stand-in must catch. Kernels do not run
// there, so only the products' numbers are checked. Also the device's
// description (mprt_cuda_get_device_info) and the TF32 switch of f32
// products, which the cuBLASLt stand-in emulates by rounding the inputs.
//
//===----------------------------------------------------------------------===//

#include "StandinFixture.h"

#include "mprt/mgpu.h"
#include "mprt/mprt_cuda.h"
#include "standin.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using MprtCudaOnStandin = mprt_test::CudaStandinTest;
using mprt_test::readFile;

template <typename T> void *upload(const std::vector<T> &v) {
  void *p = mgpuMemAlloc(v.size() * sizeof(T), nullptr, false);
  mgpuMemcpy(p, const_cast<T *>(v.data()), v.size() * sizeof(T), nullptr);
  return p;
}

template <typename T> std::vector<T> download(void *p, size_t n) {
  std::vector<T> v(n);
  mgpuMemcpy(v.data(), p, n * sizeof(T), nullptr);
  mgpuStreamSynchronize(nullptr);
  return v;
}

/// Launches the lowered bias + relu kernel on `x`, `bias` and `y` (64 x 128
/// f16, 128 f32, 64 x 128 f16).
void launchBiasRelu(void *function, void *x, void *bias, void *y) {
  int64_t zero = 0, rows = 64, cols = 128, one = 1;
  void *params[] = {&x,    &x,    &zero, &rows, &cols, &cols, &one,
                    &bias, &bias, &zero, &cols, &one,  &y,    &y,
                    &zero, &rows, &cols, &cols, &one};
  void *stream = mgpuStreamCreate();
  mgpuLaunchKernel(function, rows * cols / 256, 1, 1, 256, 1, 1, 0, stream,
                   params, nullptr, 19);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

TEST_F(MprtCudaOnStandin, LoweredKernelLaunchIsClean) {
  std::string ptx = readFile(MP_CUDA_TEST_INPUTS "/bias_relu_f16.ptx");
  ASSERT_FALSE(ptx.empty());
  void *module = mgpuModuleLoadJIT(ptx.data(), 2);
  void *function = mgpuModuleGetFunction(module, "bias_relu_f16_kernel");
  ASSERT_NE(function, nullptr) << (mprt_cuda_check(), mprt_last_error());
  void *x = upload(std::vector<uint16_t>(64 * 128, 0x3c00));
  void *bias = upload(std::vector<float>(128, 1.0f));
  void *y = mgpuMemAlloc(64 * 128 * 2, nullptr, false);
  launchBiasRelu(function, x, bias, y);
  for (void *p : {x, bias, y})
    mgpuMemFree(p, nullptr);
  mgpuModuleUnload(module);
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  mp_cuda_standin_stats after = now();
  EXPECT_EQ(after.violations, before.violations);
  EXPECT_EQ(after.launches, before.launches + 1);
  EXPECT_EQ(after.modules_loaded, before.modules_loaded + 1);
}

TEST_F(MprtCudaOnStandin, HostBufferInAKernelIsCaught) {
  // Without device-memory=true lowered code passes host buffers; a device
  // without pageable memory access cannot read them.
  std::string ptx = readFile(MP_CUDA_TEST_INPUTS "/bias_relu_f16.ptx");
  void *module = mgpuModuleLoadJIT(ptx.data(), 2);
  void *function = mgpuModuleGetFunction(module, "bias_relu_f16_kernel");
  ASSERT_NE(function, nullptr) << (mprt_cuda_check(), mprt_last_error());
  std::vector<uint16_t> x(64 * 128);
  void *bias = upload(std::vector<float>(128, 1.0f));
  void *y = mgpuMemAlloc(64 * 128 * 2, nullptr, false);
  launchBiasRelu(function, x.data(), bias, y);
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_NE(std::string(mprt_last_error())
                .find("mgpuLaunchKernel: cuLaunchKernel failed: "
                      "CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << mprt_last_error();
  mgpuMemFree(bias, nullptr);
  mgpuMemFree(y, nullptr);
  mgpuModuleUnload(module);
  mp_cuda_standin_stats after = now();
  EXPECT_EQ(after.violations, before.violations + 1);
  EXPECT_EQ(after.invalid_pointers, before.invalid_pointers + 1);
  EXPECT_EQ(after.launches, before.launches);
}

TEST_F(MprtCudaOnStandin, ProductsMatchAHostReference) {
  // f32, C += op(A) op(B) for each transpose combination.
  constexpr int64_t m = 5, n = 3, k = 4;
  for (int32_t flags = 0; flags < 4; ++flags) {
    bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    std::vector<float> a(m * k), b(k * n), c(m * n, 1.0f);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(i % 5) - 2;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(i % 3) + 1;
    void *da = upload(a), *db = upload(b), *dc = upload(c);
    ASSERT_EQ(mprt_cuda_gemm_sync((int64_t)da, lda, (int64_t)db, ldb,
                                  (int64_t)dc, n, m, n, k, flags, MPRT_GEMM_F32,
                                  1, 0, 0, 0),
              MPRT_OK)
        << mprt_last_error();
    std::vector<float> got = download<float>(dc, c.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float want = 1;
        for (int64_t l = 0; l < k; ++l)
          want += (ta ? a[l * lda + i] : a[i * lda + l]) *
                  (tb ? b[j * ldb + l] : b[l * ldb + j]);
        EXPECT_EQ(got[i * n + j], want) << "flags " << flags;
      }
    for (void *p : {da, db, dc})
      mgpuMemFree(p, nullptr);
  }
  // A batch of s8 products (the stand-in offers int8 in the TN form only,
  // so libmprt_cuda's transposed copies run) sharing B (stride 0).
  constexpr int64_t batch = 3, q = 8;
  std::vector<int8_t> a(batch * q * q), b(q * q);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = int8_t(int(i % 11) - 5);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = int8_t(int(i % 7) - 3);
  std::vector<int32_t> c(batch * q * q, 0);
  void *da = upload(a), *db = upload(b), *dc = upload(c);
  ASSERT_EQ(mprt_cuda_gemm_sync((int64_t)da, q, (int64_t)db, q, (int64_t)dc, q,
                                q, q, q, 0, MPRT_GEMM_S8, batch, q * q, 0,
                                q * q),
            MPRT_OK)
      << mprt_last_error();
  std::vector<int32_t> got = download<int32_t>(dc, c.size());
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < q; ++i)
      for (int64_t j = 0; j < q; ++j) {
        int32_t want = 0;
        for (int64_t l = 0; l < q; ++l)
          want += a[p * q * q + i * q + l] * b[l * q + j];
        EXPECT_EQ(got[p * q * q + i * q + j], want);
      }
  for (void *p : {da, db, dc})
    mgpuMemFree(p, nullptr);
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

/// C (m x n, row-major, ld n) += op(A) op(B) on int8 with a shared host
/// reference, through mprt_cuda_gemm_sync.
void checkS8(int64_t m, int64_t n, int64_t k, int32_t flags) {
  bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  std::vector<int8_t> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = int8_t(int(i * 7 % 23) - 11);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = int8_t(int(i * 5 % 17) - 8);
  std::vector<int32_t> c(m * n);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = int32_t(i) - 40;
  void *da = upload(a), *db = upload(b), *dc = upload(c);
  ASSERT_EQ(mprt_cuda_gemm_sync((int64_t)da, lda, (int64_t)db, ldb, (int64_t)dc,
                                n, m, n, k, flags, MPRT_GEMM_S8, 1, 0, 0, 0),
            MPRT_OK)
      << m << "x" << n << "x" << k << " flags " << flags << ": "
      << mprt_last_error();
  std::vector<int32_t> got = download<int32_t>(dc, c.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int32_t want = c[i * n + j];
      for (int64_t l = 0; l < k; ++l)
        want += (ta ? a[l * lda + i] : a[i * lda + l]) *
                (tb ? b[j * ldb + l] : b[l * ldb + j]);
      ASSERT_EQ(got[i * n + j], want) << m << "x" << n << "x" << k << " flags "
                                      << flags << " at " << i << "," << j;
    }
  for (void *p : {da, db, dc})
    mgpuMemFree(p, nullptr);
}

TEST_F(MprtCudaOnStandin, Int8ProductsOfAnyShape) {
  // The stand-in's heuristic offers int8 only as cuBLASLt documents it (TN,
  // m, k and leading dimensions multiples of 4): the digits classifier's
  // n = 10 and odd sizes go through libmprt_cuda's padded copies.
  const int64_t shapes[][3] = {{64, 10, 64}, {7, 10, 13}, {5, 3, 2}, {8, 8, 8}};
  for (const auto &shape : shapes)
    for (int32_t flags = 0; flags < 4; ++flags)
      checkS8(shape[0], shape[1], shape[2], flags);
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MprtCudaOnStandin, MisalignedOperandsAreDeclared) {
  // Lowered code passes an aligned base plus an offset: an f16 operand one
  // element into its buffer is 2-byte aligned. The same shape runs aligned
  // first, so a cached plan must not carry the 256-byte promise over (the
  // stand-in records a product on operands less aligned than its
  // algorithm was chosen for).
  constexpr int64_t m = 16, n = 8, k = 16;
  std::vector<uint16_t> a(m * k + 1), b(k * n + 1);
  // Small integers: exact in f16 (1.0 is 0x3c00, 2.0 is 0x4000).
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = i % 2 ? 0x3c00 : 0x4000;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = i % 3 ? 0x3c00 : 0;
  for (int64_t offset : {0, 1}) {
    std::vector<float> c(m * n + 1, 0.0f);
    void *da = upload(a), *db = upload(b), *dc = upload(c);
    auto at = [&](void *p, int64_t elements, int64_t bytes) {
      return (int64_t)p + elements * bytes;
    };
    ASSERT_EQ(mprt_cuda_gemm_sync(at(da, offset, 2), k, at(db, offset, 2), n,
                                  at(dc, offset, 4), n, m, n, k, 0,
                                  MPRT_GEMM_F16, 1, 0, 0, 0),
              MPRT_OK)
        << "offset " << offset << ": " << mprt_last_error();
    std::vector<float> got = download<float>(dc, c.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float want = 0;
        for (int64_t l = 0; l < k; ++l)
          want += (a[offset + i * k + l] == 0x3c00 ? 1.0f : 2.0f) *
                  (b[offset + l * n + j] == 0x3c00 ? 1.0f : 0.0f);
        ASSERT_EQ(got[offset + i * n + j], want) << "offset " << offset;
      }
    for (void *p : {da, db, dc})
      mgpuMemFree(p, nullptr);
  }
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

/// Sets (or, with nullopt, unsets) an environment variable for the scope
/// and restores what was there.
class ScopedEnv {
public:
  ScopedEnv(const char *name, std::optional<std::string> value) : name(name) {
    if (const char *old = getenv(name))
      saved = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      setenv(name, saved->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

constexpr const char *kCapabilityVariable =
    "MPRT_CUDA_STANDIN_COMPUTE_CAPABILITY";

TEST_F(MprtCudaOnStandin, DeviceInfoDescribesTheStandin) {
  // The stand-in's memory: MPRT_CUDA_STANDIN_MEMORY_MB, else 80 GiB.
  uint64_t memory = 80ull << 30;
  if (const char *mb = getenv("MPRT_CUDA_STANDIN_MEMORY_MB"); mb && *mb)
    memory = strtoull(mb, nullptr, 10) << 20;
  {
    ScopedEnv capability(kCapabilityVariable, std::nullopt);
    mprt_cuda_device_info info;
    memset(&info, 0x55, sizeof(info));
    ASSERT_EQ(mprt_cuda_get_device_info(&info), MPRT_OK) << mprt_last_error();
    EXPECT_STREQ(info.name, "mp CUDA stand-in");
    EXPECT_EQ(info.compute_major, 9);
    EXPECT_EQ(info.compute_minor, 0);
    EXPECT_EQ(info.multiprocessors, 132);
    EXPECT_EQ(info.total_bytes, memory);
  }
  // The stand-in reads its capability at each query, and libmprt_cuda asks
  // the driver each time: an older GPU for the same process.
  const struct {
    const char *value;
    int32_t major, minor;
  } older[] = {{"7.5", 7, 5}, {"8.0", 8, 0}, {"8.6", 8, 6}};
  for (const auto &gpu : older) {
    ScopedEnv capability(kCapabilityVariable, std::string(gpu.value));
    mprt_cuda_device_info info;
    ASSERT_EQ(mprt_cuda_get_device_info(&info), MPRT_OK) << mprt_last_error();
    EXPECT_EQ(info.compute_major, gpu.major) << gpu.value;
    EXPECT_EQ(info.compute_minor, gpu.minor) << gpu.value;
    EXPECT_STREQ(info.name, "mp CUDA stand-in");
    EXPECT_EQ(info.total_bytes, memory);
  }
  {
    // Back to the default once the variable is gone; a malformed value is
    // ignored (with a warning on stderr).
    ScopedEnv capability(kCapabilityVariable, std::string("sm_75"));
    mprt_cuda_device_info info;
    ASSERT_EQ(mprt_cuda_get_device_info(&info), MPRT_OK) << mprt_last_error();
    EXPECT_EQ(info.compute_major, 9);
    EXPECT_EQ(info.compute_minor, 0);
  }
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MprtCudaOnStandin, DeviceInfoWithoutOutIsAnError) {
  ASSERT_EQ(mprt_cuda_get_device_info(nullptr), MPRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(mprt_last_error()).find("mprt_cuda_get_device_info"),
            std::string::npos)
      << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

/// An f32 rounded to TF32 (10-bit significand, to nearest, ties to even),
/// written apart from the stand-in's.
float hostTf32(float x) {
  int exponent;
  double significand = std::frexp(static_cast<double>(x), &exponent);
  // |significand| in [0.5, 1): 11 significant bits are 2^11 steps of it.
  double steps = std::nearbyint(std::ldexp(significand, 11)); // ties to even
  return static_cast<float>(std::ldexp(steps, exponent - 11));
}

/// The f32 product C (m x n, ld n, starting from small integers) +=
/// op(A) op(B), on the device with the current TF32 setting, compared with
/// a host reference whose inputs are rounded to TF32 when \p tf32. Every
/// element of A in an even column and of B in an odd row has bits below
/// TF32's precision (17 to 20 significant bits, ties to even up and down
/// among them); the others are +-1 and +-2, so each product and sum is
/// exact in f32 with or without rounding and the comparison can be exact.
/// Returns "" or what went wrong; \p differing counts the results that
/// TF32 rounding changes.
std::string checkF32Product(int32_t flags, bool tf32, int *differing) {
  constexpr int64_t m = 6, n = 5, k = 4;
  bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  // 1 + f * 2^-19: the low 9 bits of f are below TF32's precision.
  auto rich = [](int t) {
    const uint32_t low[] = {0x100, 0x100, 0x0ff, 0x101, 0x1ff, 0x001, 0, 0x0a5};
    uint32_t f = ((uint32_t(t) * 37 + 5) & 0x3ff) << 9 | low[t % 8];
    float x = std::ldexp(float(f), -19) + 1.0f;
    return (t / 3) % 2 ? -x : x;
  };
  auto small = [](int t) {
    const float values[] = {1, 2, -1, -2};
    return values[t % 4];
  };
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t l = 0; l < k; ++l)
      (ta ? a[l * lda + i] : a[i * lda + l]) =
          l % 2 == 0 ? rich(int(i * k + l)) : small(int(i + l));
  for (int64_t l = 0; l < k; ++l)
    for (int64_t j = 0; j < n; ++j)
      (tb ? b[j * ldb + l] : b[l * ldb + j]) =
          l % 2 == 1 ? rich(int(100 + l * n + j)) : small(int(l + 2 * j));
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = float(int(i % 9) - 4);
  void *da = upload(a), *db = upload(b), *dc = upload(c);
  mprt_status st =
      mprt_cuda_gemm_sync((int64_t)da, lda, (int64_t)db, ldb, (int64_t)dc, n, m,
                          n, k, flags, MPRT_GEMM_F32, 1, 0, 0, 0);
  std::vector<float> got = download<float>(dc, c.size());
  for (void *p : {da, db, dc})
    mgpuMemFree(p, nullptr);
  std::ostringstream error;
  if (st != MPRT_OK) {
    error << "flags " << flags << ": " << mprt_last_error();
    return error.str();
  }
  *differing = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      // Exact in double, and the sums are exact in f32.
      double exact = c[i * n + j], rounded = c[i * n + j];
      for (int64_t l = 0; l < k; ++l) {
        float x = ta ? a[l * lda + i] : a[i * lda + l];
        float y = tb ? b[j * ldb + l] : b[l * ldb + j];
        exact += double(x) * y;
        rounded += double(hostTf32(x)) * hostTf32(y);
      }
      float want = float(tf32 ? rounded : exact);
      if (float(exact) != float(rounded))
        ++*differing;
      if (got[i * n + j] != want) {
        error.precision(10);
        error << "flags " << flags << (tf32 ? " tf32" : " f32") << " at " << i
              << "," << j << ": got " << got[i * n + j] << ", want " << want
              << " (f32 " << exact << ", tf32 " << rounded << ")";
        return error.str();
      }
    }
  return "";
}

TEST_F(MprtCudaOnStandin, Tf32RoundsTheInputsOfF32Products) {
  // The reference's rounding, by hand: 1 + 2^-11 is a tie that goes down
  // to 1 (even), 1 + 3 * 2^-11 one that goes up to 1 + 2^-9, 1 + 2^-12 and
  // 1 + 2^-11 + 2^-19 are below and above half a step.
  EXPECT_EQ(hostTf32(1 + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(hostTf32(1 + 3 * std::ldexp(1.0f, -11)), 1 + std::ldexp(1.0f, -9));
  EXPECT_EQ(hostTf32(1 + std::ldexp(1.0f, -12)), 1.0f);
  EXPECT_EQ(hostTf32(-(1 + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -19))),
            -(1 + std::ldexp(1.0f, -10)));

  mprt_cuda_gemm_set_tf32(0);
  ASSERT_EQ(mprt_cuda_gemm_tf32(), 0);
  // Off, on, off, on with the same shapes: the plans are cached per
  // compute type, so each switch takes effect at the next product.
  for (bool tf32 : {false, true, false, true}) {
    mprt_cuda_gemm_set_tf32(tf32 ? 1 : 0);
    ASSERT_EQ(mprt_cuda_gemm_tf32(), tf32 ? 1 : 0);
    for (int32_t flags = 0; flags < 4; ++flags) {
      int differing = 0;
      std::string error = checkF32Product(flags, tf32, &differing);
      ASSERT_EQ(error, "");
      // The inputs are chosen so that TF32 shows in most results.
      EXPECT_GT(differing, 6 * 5 / 2) << "flags " << flags;
    }
  }
  // f16 products are unaffected (their plans keep CUBLAS_COMPUTE_32F,
  // which the stand-in requires of f16 inputs).
  std::vector<uint16_t> h(4 * 4, 0x3c00); // 1.0
  std::vector<float> c(4 * 4, 0.0f);
  void *da = upload(h), *db = upload(h), *dc = upload(c);
  ASSERT_EQ(mprt_cuda_gemm_sync((int64_t)da, 4, (int64_t)db, 4, (int64_t)dc, 4,
                                4, 4, 4, 0, MPRT_GEMM_F16, 1, 0, 0, 0),
            MPRT_OK)
      << mprt_last_error();
  for (float x : download<float>(dc, c.size()))
    EXPECT_EQ(x, 4.0f);
  for (void *p : {da, db, dc})
    mgpuMemFree(p, nullptr);
  mprt_cuda_gemm_set_tf32(0);
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MprtCudaOnStandin, Tf32NeedsAnAmpereDevice) {
  // A device before sm_80 has no TF32 tensor cores: cuBLASLt (and the
  // stand-in) compute FAST_TF32 products in f32 there.
  ScopedEnv capability(kCapabilityVariable, std::string("7.5"));
  mprt_cuda_gemm_set_tf32(1);
  int differing = 0;
  EXPECT_EQ(checkF32Product(0, /*tf32=*/false, &differing), "");
  mprt_cuda_gemm_set_tf32(0);
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MprtCudaOnStandin, Tf32FromTheEnvironment) {
  // MPRT_CUDA_TF32=1 is read at the first product, which this process may
  // have run already: check it in a fresh one (the death test's child
  // re-runs only this test).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("MPRT_CUDA_TF32", "1", 1);
        int differing = 0;
        std::string error = checkF32Product(0, /*tf32=*/true, &differing);
        if (error.empty() && mprt_cuda_gemm_tf32() != 1)
          error = "mprt_cuda_gemm_tf32() is not 1";
        fprintf(stderr, "%s\n", error.empty() ? "tf32 on" : error.c_str());
        fflush(stderr);
        _exit(error.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "tf32 on");
  // Set before the first product, the switch wins over the variable.
  EXPECT_EXIT(
      {
        setenv("MPRT_CUDA_TF32", "1", 1);
        mprt_cuda_gemm_set_tf32(0);
        int differing = 0;
        std::string error = checkF32Product(0, /*tf32=*/false, &differing);
        fprintf(stderr, "%s\n", error.empty() ? "f32" : error.c_str());
        fflush(stderr);
        _exit(error.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "f32");
}

} // namespace
