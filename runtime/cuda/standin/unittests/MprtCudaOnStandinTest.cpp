//===- MprtCudaOnStandinTest.cpp - libmprt_cuda on the CUDA stand-ins -----===//
//
// Runs libmprt_cuda's host side on the driver and cuBLASLt stand-ins (ctest
// sets LD_LIBRARY_PATH=build/lib/cuda-standin): what lowered code does, a
// launch of the checked-in lowered PTX and cuBLASLt products, with no
// violation, and a misuse that the stand-in must catch. Kernels do not run
// there, so only the products' numbers are checked.
//
//===----------------------------------------------------------------------===//

#include "StandinFixture.h"

#include "mprt/mgpu.h"
#include "mprt/mprt_cuda.h"
#include "standin.h"

#include <gtest/gtest.h>

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

} // namespace
