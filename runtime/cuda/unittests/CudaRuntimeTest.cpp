//===- CudaRuntimeTest.cpp - libmprt_cuda: mgpu ABI, pool, cuBLASLt ------===//
//
// Without a driver or GPU the tests check the errors and skip the device
// tests with the reason. With a GPU they launch the PTX that
// `mp-opt --mp-lower-gpu` produced (Inputs/bias_relu_f16.ptx) and run
// cuBLASLt gemms, comparing with host references.
//
//===----------------------------------------------------------------------===//

#include "mprt/mgpu.h"
#include "mprt/mprt_cuda.h"
#include "pool.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A checked-in input: in $MP_CUDA_TEST_INPUTS, else in the source tree the
/// test was built from, else beside a relocated build (the GPU bundle keeps
/// them in share/mp/cuda-test-inputs). Empty text where none is found.
std::string readInput(const std::string &name) {
  std::vector<std::string> dirs;
  if (const char *dir = std::getenv("MP_CUDA_TEST_INPUTS"))
    dirs.push_back(dir);
  dirs.push_back(MP_CUDA_TEST_INPUTS);
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length > 0) {
    std::string exe(self, length);
    dirs.push_back(exe.substr(0, exe.rfind('/')) +
                   "/../share/mp/cuda-test-inputs");
  }
  for (const std::string &dir : dirs) {
    std::string text = readFile(dir + "/" + name);
    if (!text.empty())
      return text;
  }
  return "";
}

std::string unavailableReason() {
  char why[512];
  return mprt_cuda_available(why, sizeof(why)) ? "" : why;
}

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    std::string why = unavailableReason();                                     \
    if (!why.empty())                                                          \
      GTEST_SKIP() << "no usable GPU: " << why;                                \
  } while (0)

class CudaRuntime : public ::testing::Test {
protected:
  void SetUp() override {
    mprt_cuda_set_error_mode(MPRT_CUDA_ERRORS_RECORD);
    mprt_cuda_check(); // start without a pending error
  }
  /// Fails the test with the pending mgpu error, if any.
  void expectNoError() {
    EXPECT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
  }
};

//===----------------------------------------------------------------------===//
// Without a GPU (run everywhere)
//===----------------------------------------------------------------------===//

TEST_F(CudaRuntime, AvailabilityHasAReason) {
  char why[512];
  memset(why, 'x', sizeof(why));
  int ok = mprt_cuda_available(why, sizeof(why));
  if (ok) {
    EXPECT_STREQ(why, "");
  } else {
    // "cannot load the CUDA driver libcuda.so.1: ...", "no CUDA device", ...
    EXPECT_GT(strlen(why), 10u) << why;
    EXPECT_TRUE(strstr(why, "CUDA") || strstr(why, "cu")) << why;
  }
  // A short buffer is truncated, never overrun; NULL is accepted.
  char small[4] = {'x', 'x', 'x', 'x'};
  EXPECT_EQ(mprt_cuda_available(small, sizeof(small)), ok);
  EXPECT_LT(strlen(small), sizeof(small));
  EXPECT_EQ(mprt_cuda_available(nullptr, 0), ok);
}

TEST_F(CudaRuntime, NoDriverErrorsAreRecorded) {
  std::string why = unavailableReason();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable: this test checks the no-GPU path";
  std::string ptx = readInput("bias_relu_f16.ptx");
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(mgpuModuleLoadJIT(ptx.data(), 2), nullptr);
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_EQ(std::string(mprt_last_error()),
            "mgpuModuleLoadJIT: no usable GPU: " + why);
  // Checked once: the error is cleared.
  EXPECT_EQ(mprt_cuda_check(), MPRT_OK);
  EXPECT_STREQ(mprt_last_error(), "");

  // What the host code of a lowered function does next: every step fails
  // without touching a device, and the first error is kept.
  void *function = mgpuModuleGetFunction(nullptr, "bias_relu_f16_kernel");
  EXPECT_EQ(function, nullptr);
  void *stream = mgpuStreamCreate();
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(mgpuMemAlloc(1024, stream, false), nullptr);
  mgpuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr, 0);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_NE(strstr(mprt_last_error(), "mgpuModuleGetFunction("
                                      "bias_relu_f16_kernel): the module did "
                                      "not load (and 4 later errors)"),
            nullptr)
      << mprt_last_error();

  EXPECT_EQ(
      mprt_cuda_gemm(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, MPRT_GEMM_F32, nullptr),
      MPRT_ERROR_DEVICE);
  EXPECT_EQ(std::string(mprt_last_error()),
            "mprt_cuda_gemm: no usable GPU: " + why);
  EXPECT_EQ(mprt_cuda_pool_trim(), MPRT_OK);
}

using CudaRuntimeDeathTest = CudaRuntime;

TEST_F(CudaRuntimeDeathTest, ExitModeStopsWithTheMessage) {
  std::string why = unavailableReason();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable: this test checks the no-GPU path";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        mprt_cuda_set_error_mode(MPRT_CUDA_ERRORS_EXIT);
        mgpuStreamCreate();
      },
      ::testing::ExitedWithCode(1),
      "mprt-cuda: error: mgpuStreamCreate: no usable GPU: .*\n"
      "mprt-cuda: exiting");
}

TEST_F(CudaRuntime, GemmRejectsBadArguments) {
  // Checked before the device is looked at, so these run everywhere.
  EXPECT_EQ(mprt_cuda_gemm(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, 7, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_gemm: bad type 7");
  EXPECT_EQ(
      mprt_cuda_gemm(1, 4, 1, 4, 1, 4, 4, 4, 4, 8, MPRT_GEMM_F16, nullptr),
      MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(
      mprt_cuda_gemm(1, 4, 1, 4, 1, 4, -1, 4, 4, 0, MPRT_GEMM_F16, nullptr),
      MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(
      mprt_cuda_gemm(1, 3, 1, 4, 1, 4, 4, 4, 4, 0, MPRT_GEMM_F32, nullptr),
      MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(),
               "mprt_cuda_gemm: leading dimensions lda=3 ldb=4 ldc=4 too "
               "small for m=4 n=4 k=4");
  // With A transposed, A is stored k x m: lda must cover m.
  EXPECT_EQ(mprt_cuda_gemm(1, 2, 1, 8, 1, 8, 4, 8, 2, MPRT_GEMM_TRANS_A,
                           MPRT_GEMM_S8, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(
      mprt_cuda_gemm(0, 4, 0, 4, 0, 4, 4, 0, 4, 0, MPRT_GEMM_F32, nullptr),
      MPRT_OK)
      << "an empty product is a no-op";
  EXPECT_EQ(
      mprt_cuda_gemm(0, 4, 8, 4, 8, 4, 4, 4, 4, 0, MPRT_GEMM_F32, nullptr),
      MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_gemm: null pointer");
  // A rounded C has the operands' 16-bit type: not for f32 or s8.
  EXPECT_EQ(mprt_cuda_gemm(1, 4, 1, 4, 1, 4, 4, 4, 4, MPRT_GEMM_ROUNDED_C,
                           MPRT_GEMM_F32, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_gemm: a rounded C needs f16 or "
                                  "bf16 operands, not f32");
  EXPECT_EQ(mprt_cuda_gemm(1, 4, 1, 4, 1, 4, 4, 4, 4, MPRT_GEMM_ROUNDED_C,
                           MPRT_GEMM_S8, nullptr),
            MPRT_ERROR_ARGUMENT);
}

TEST_F(CudaRuntime, BatchedGemmRejectsBadArguments) {
  EXPECT_EQ(mprt_cuda_gemm_batched(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, MPRT_GEMM_F32,
                                   -1, 16, 16, 16, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(),
               "mprt_cuda_gemm_batched: batch -1 is not in [0, 2^31)");
  EXPECT_EQ(mprt_cuda_gemm_batched(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, MPRT_GEMM_F32,
                                   int64_t(1) << 31, 16, 16, 16, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_cuda_gemm_batched(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, MPRT_GEMM_F32,
                                   2, -16, 16, 16, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(),
               "mprt_cuda_gemm_batched: negative batch stride -16, 16, 16");
  // Results of a batch may not overlap; shared inputs (stride 0) may.
  EXPECT_EQ(mprt_cuda_gemm_batched(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, MPRT_GEMM_F32,
                                   2, 0, 0, 15, nullptr),
            MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(),
               "mprt_cuda_gemm_batched: the batch stride of C, 15, is less "
               "than one 4 x 4 matrix with ldc=4: results would overlap");
  EXPECT_EQ(mprt_cuda_gemm_batched(0, 4, 0, 4, 0, 4, 4, 4, 4, 0, MPRT_GEMM_F32,
                                   0, 0, 0, 0, nullptr),
            MPRT_OK)
      << "an empty batch is a no-op";
  // With one matrix the strides are not used.
  EXPECT_EQ(mprt_cuda_gemm_batched(1, 4, 1, 4, 1, 4, 4, 4, 0, 0, MPRT_GEMM_F32,
                                   1, -1, -1, -1, nullptr),
            MPRT_OK);
}

TEST_F(CudaRuntime, GemmSyncRecordsArgumentErrors) {
  // Checked before the device is looked at, so this runs everywhere: the
  // error goes where mgpu errors go, and the status says it too.
  EXPECT_EQ(mprt_cuda_gemm_sync(1, 4, 1, 4, 1, 4, 4, 4, 4, 0, 7, 1, 0, 0, 0),
            MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_gemm_sync: bad type 7");
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_gemm_sync: bad type 7");
  // An empty product is no error.
  EXPECT_EQ(mprt_cuda_gemm_sync(0, 4, 0, 4, 0, 4, 0, 4, 4, 0, MPRT_GEMM_F16, 1,
                                0, 0, 0),
            MPRT_OK);
  expectNoError();
}

TEST_F(CudaRuntime, GemmSyncWithoutGpuIsRecorded) {
  std::string why = unavailableReason();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable: this test checks the no-GPU path";
  // What --mp-lower-gpu's host code calls for a 4 x 4 x 4 f16 product.
  EXPECT_EQ(mprt_cuda_gemm_sync(64, 4, 64, 4, 64, 4, 4, 4, 4, 0, MPRT_GEMM_F16,
                                1, 0, 0, 0),
            MPRT_ERROR_DEVICE);
  EXPECT_EQ(std::string(mprt_last_error()),
            "mprt_cuda_gemm_sync: no usable GPU: " + why);
  // While that error is pending, the next product is skipped (no device
  // call is tried) and counted.
  EXPECT_EQ(mprt_cuda_gemm_sync(64, 4, 64, 4, 64, 4, 4, 4, 4, 0, MPRT_GEMM_S8,
                                2, 16, 16, 16),
            MPRT_ERROR_DEVICE);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_gemm_sync: product skipped after "
                                  "an earlier error");
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_EQ(std::string(mprt_last_error()),
            "mprt_cuda_gemm_sync: no usable GPU: " + why +
                " (and 1 later error)");
  expectNoError();
}

TEST_F(CudaRuntime, DeviceInfoErrors) {
  // NULL is refused before the driver is asked, everywhere.
  EXPECT_EQ(mprt_cuda_get_device_info(nullptr), MPRT_ERROR_ARGUMENT);
  EXPECT_STREQ(mprt_last_error(), "mprt_cuda_get_device_info: out is NULL");
  std::string why = unavailableReason();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable: the no-GPU error is not checked";
  mprt_cuda_device_info info;
  EXPECT_EQ(mprt_cuda_get_device_info(&info), MPRT_ERROR_DEVICE);
  EXPECT_EQ(std::string(mprt_last_error()),
            "mprt_cuda_get_device_info: no usable GPU: " + why);
}

TEST_F(CudaRuntimeDeathTest, GemmSyncExitsWithTheMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // A bad argument exits in every environment.
  EXPECT_EXIT(
      {
        mprt_cuda_set_error_mode(MPRT_CUDA_ERRORS_EXIT);
        mprt_cuda_gemm_sync(64, 4, 64, 4, 64, 4, 4, 4, 4, 8, MPRT_GEMM_F32, 1,
                            0, 0, 0);
      },
      ::testing::ExitedWithCode(1),
      "mprt-cuda: error: mprt_cuda_gemm_sync: bad flags 8\n"
      "mprt-cuda: exiting");
  std::string why = unavailableReason();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable: the no-GPU exit is not checked";
  EXPECT_EXIT(
      {
        mprt_cuda_set_error_mode(MPRT_CUDA_ERRORS_EXIT);
        mprt_cuda_gemm_sync(64, 4, 64, 4, 64, 4, 4, 4, 4, 0, MPRT_GEMM_BF16, 1,
                            0, 0, 0);
      },
      ::testing::ExitedWithCode(1),
      "mprt-cuda: error: mprt_cuda_gemm_sync: no usable GPU: .*\n"
      "mprt-cuda: exiting");
}

TEST(CudaPool, SizeClasses) {
  using mprt::cuda::sizeClass;
  EXPECT_EQ(sizeClass(0), 512u);
  EXPECT_EQ(sizeClass(1), 512u);
  EXPECT_EQ(sizeClass(512), 512u);
  EXPECT_EQ(sizeClass(513), 1024u);
  EXPECT_EQ(sizeClass(1000000), 1u << 20);
  EXPECT_EQ(sizeClass((1u << 20) + 1), 2u << 20);
  EXPECT_EQ(sizeClass(5u << 20), 6u << 20);
  EXPECT_EQ(sizeClass(6u << 20), 6u << 20);
}

//===----------------------------------------------------------------------===//
// With a GPU
//===----------------------------------------------------------------------===//

/// A device buffer from mgpuMemAlloc.
struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    ptr = mgpuMemAlloc(n, nullptr, false);
  }
  ~DeviceBuffer() { mgpuMemFree(ptr, nullptr); }
  template <typename T> void upload(const std::vector<T> &v) {
    mgpuMemcpy(ptr, const_cast<T *>(v.data()), v.size() * sizeof(T), nullptr);
    // mgpu streams are non-blocking: they do not wait for the null stream.
    mgpuStreamSynchronize(nullptr);
  }
  template <typename T> void download(std::vector<T> &v) {
    mgpuMemcpy(v.data(), ptr, v.size() * sizeof(T), nullptr);
    mgpuStreamSynchronize(nullptr);
  }
  int64_t address() const { return reinterpret_cast<int64_t>(ptr); }
};

TEST_F(CudaRuntime, LaunchesLoweredPtx) {
  SKIP_WITHOUT_GPU();
  std::string ptx = readInput("bias_relu_f16.ptx");
  ASSERT_FALSE(ptx.empty());
  void *module = mgpuModuleLoadJIT(ptx.data(), 2);
  ASSERT_NE(module, nullptr) << (mprt_cuda_check(), mprt_last_error());
  void *function = mgpuModuleGetFunction(module, "bias_relu_f16_kernel");
  ASSERT_NE(function, nullptr);

  constexpr int64_t rows = 64, cols = 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<__half> x(rows * cols);
  std::vector<float> bias(cols);
  for (auto &v : x)
    v = __float2half(dist(rng));
  for (auto &v : bias)
    v = dist(rng);
  DeviceBuffer dx(x.size() * 2), db(bias.size() * 4), dy(x.size() * 2);
  dx.upload(x);
  db.upload(bias);
  // Poison the output so a kernel that writes nothing fails the test.
  mgpuMemset16(dy.ptr, 0x7e00, x.size(), nullptr);
  mgpuStreamSynchronize(nullptr);

  // The kernel takes the three memref descriptors expanded: {allocated,
  // aligned, offset, sizes..., strides...}.
  int64_t zero = 0, r = rows, c = cols, one = 1;
  void *xp = dx.ptr, *bp = db.ptr, *yp = dy.ptr;
  void *params[] = {&xp, &xp, &zero, &r, &c,   &c, &one,  // x
                    &bp, &bp, &zero, &c, &one,            // bias
                    &yp, &yp, &zero, &r, &c,   &c, &one}; // result
  void *stream = mgpuStreamCreate();
  mgpuLaunchKernel(function, rows * cols / 256, 1, 1, 256, 1, 1, 0, stream,
                   params, nullptr, 19);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  std::vector<__half> y(x.size());
  dy.download(y);
  expectNoError();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float want = std::max(__half2float(x[i * cols + j]) + bias[j], 0.0f);
      ASSERT_EQ(__half2float(y[i * cols + j]), __half2float(__float2half(want)))
          << "at " << i << ", " << j;
    }
  mgpuModuleUnload(module);
  expectNoError();
}

TEST_F(CudaRuntime, ModuleLoadReportsTheJitLog) {
  SKIP_WITHOUT_GPU();
  std::string bad = ".version 8.0\n.target sm_80\n.address_size 64\n"
                    ".visible .entry k() { bogus; }\n";
  EXPECT_EQ(mgpuModuleLoadJIT(bad.data(), 2), nullptr);
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_NE(strstr(mprt_last_error(), "mgpuModuleLoadJIT: cuModuleLoadDataEx "
                                      "failed: CUDA_ERROR_INVALID_PTX"),
            nullptr)
      << mprt_last_error();
}

TEST_F(CudaRuntime, PoolReusesFreedBlocks) {
  SKIP_WITHOUT_GPU();
  mprt_cuda_pool_stats before, after;
  mprt_cuda_pool_get_stats(&before);
  void *stream = mgpuStreamCreate();
  void *a = mgpuMemAlloc(3000, stream, false);
  ASSERT_NE(a, nullptr);
  mgpuMemset32(a, 0x12345678, 750, stream);
  mgpuMemFree(a, stream);
  // Same size class (4096): the block comes back, ordered after the memset.
  void *b = mgpuMemAlloc(4000, stream, false);
  EXPECT_EQ(a, b);
  mprt_cuda_pool_get_stats(&after);
  EXPECT_EQ(after.pool_hits, before.pool_hits + 1);
  std::vector<uint32_t> host(1000);
  mgpuMemcpy(host.data(), b, 4000, stream);
  mgpuStreamSynchronize(stream);
  EXPECT_EQ(host[0], 0x12345678u);
  EXPECT_EQ(host[749], 0x12345678u);
  mgpuMemFree(b, stream);
  mgpuStreamDestroy(stream);
  // Freeing what the pool did not hand out is an error, not a crash.
  int local;
  mgpuMemFree(&local, nullptr);
  ASSERT_EQ(mprt_cuda_check(), MPRT_ERROR_DEVICE);
  EXPECT_NE(strstr(mprt_last_error(), "was not allocated by mgpuMemAlloc"),
            nullptr);
  EXPECT_EQ(mprt_cuda_pool_trim(), MPRT_OK);
  mprt_cuda_pool_get_stats(&after);
  EXPECT_EQ(after.bytes_cached, 0u);
}

TEST_F(CudaRuntime, EventsOrderStreams) {
  SKIP_WITHOUT_GPU();
  void *s1 = mgpuStreamCreate(), *s2 = mgpuStreamCreate();
  void *event = mgpuEventCreate();
  void *buf = mgpuMemAlloc(1 << 20, s1, false);
  mgpuMemset32(buf, 7, (1 << 20) / 4, s1);
  mgpuEventRecord(event, s1);
  mgpuStreamWaitEvent(s2, event);
  std::vector<uint32_t> host((1 << 20) / 4);
  mgpuMemcpy(host.data(), buf, 1 << 20, s2);
  mgpuStreamSynchronize(s2);
  mgpuEventSynchronize(event);
  EXPECT_EQ(host.back(), 7u);
  mgpuMemFree(buf, s2);
  mgpuEventDestroy(event);
  mgpuStreamDestroy(s1);
  mgpuStreamDestroy(s2);
  expectNoError();
}

TEST_F(CudaRuntime, HostRegisterMemRef) {
  SKIP_WITHOUT_GPU();
  std::vector<float> data(4096, 1.0f);
  struct {
    float *allocated, *aligned;
    int64_t offset, sizes[2], strides[2];
  } desc = {data.data(), data.data(), 0, {64, 64}, {64, 1}};
  mgpuMemHostRegisterMemRef(2, &desc, 4);
  // Registering twice is accepted (a buffer passed to two functions).
  mgpuMemHostRegisterMemRef(2, &desc, 4);
  mgpuMemHostUnregisterMemRef(2, &desc, 4);
  expectNoError();
}

//===----------------------------------------------------------------------===//
// cuBLASLt
//===----------------------------------------------------------------------===//

template <typename T> float toFloat(T v) { return static_cast<float>(v); }
template <> float toFloat(__half v) { return __half2float(v); }
template <> float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Runs C += op(A) op(B) for row-major m x k by k x n on the device and
/// compares with a double-precision host reference.
template <typename In, typename Out>
void checkGemm(int32_t type, int64_t m, int64_t n, int64_t k, int32_t flags,
               double tolerance) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dist(-8, 8);
  bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
  int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
  std::vector<In> a(m * k), b(k * n);
  std::vector<Out> c(m * n);
  for (auto &v : a)
    v = In(dist(rng) / (sizeof(In) == 1 ? 1.0f : 4.0f));
  for (auto &v : b)
    v = In(dist(rng) / (sizeof(In) == 1 ? 1.0f : 4.0f));
  for (auto &v : c)
    v = Out(dist(rng));
  std::vector<double> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = toFloat(c[i * ldc + j]);
      for (int64_t p = 0; p < k; ++p)
        sum += double(toFloat(ta ? a[p * lda + i] : a[i * lda + p])) *
               toFloat(tb ? b[j * ldb + p] : b[p * ldb + j]);
      want[i * n + j] = sum;
    }
  DeviceBuffer da(a.size() * sizeof(In)), db(b.size() * sizeof(In)),
      dc(c.size() * sizeof(Out));
  da.upload(a);
  db.upload(b);
  dc.upload(c);
  ASSERT_EQ(mprt_cuda_gemm(da.address(), lda, db.address(), ldb, dc.address(),
                           ldc, m, n, k, flags, type, nullptr),
            MPRT_OK)
      << mprt_last_error();
  dc.download(c);
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_NEAR(toFloat(c[i]), want[i], tolerance * (1 + std::fabs(want[i])))
        << "type " << type << " flags " << flags << " element " << i;
}

TEST_F(CudaRuntime, GemmF32) {
  SKIP_WITHOUT_GPU();
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemm<float, float>(MPRT_GEMM_F32, 96, 80, 72, flags, 1e-5);
  expectNoError();
}

TEST_F(CudaRuntime, GemmF16) {
  SKIP_WITHOUT_GPU();
  // Inputs are exact in f16 and sums of products stay exact in f32.
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemm<__half, float>(MPRT_GEMM_F16, 128, 64, 256, flags, 1e-6);
}

TEST_F(CudaRuntime, GemmBF16) {
  SKIP_WITHOUT_GPU();
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemm<__nv_bfloat16, float>(MPRT_GEMM_BF16, 64, 128, 96, flags, 1e-6);
}

TEST_F(CudaRuntime, GemmS8) {
  SKIP_WITHOUT_GPU();
  // Exact integer arithmetic. With B transposed this shape meets the int8
  // kernels' rules and is read in place; the other forms stage copies.
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemm<int8_t, int32_t>(MPRT_GEMM_S8, 64, 32, 128, flags, 0);
}

/// Copies `device` into `host` on a fresh non-blocking stream, with no
/// wait on anything else: what mprt_cuda_gemm_sync wrote must be done when
/// it returns, as the next kernel of lowered code assumes.
template <typename T>
void readOnAnotherStream(std::vector<T> &host, void *device) {
  void *stream = mgpuStreamCreate();
  mgpuMemcpy(host.data(), device, host.size() * sizeof(T), stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// Uploads A, B and C, runs mprt_cuda_gemm_sync on them (as lowered code
/// does) and reads C back. No wait before the read: the call has finished
/// the product; C is read on a fresh non-blocking stream, as the next
/// kernel of lowered code would.
template <typename In, typename Out>
void gemmSyncOnDevice(const std::vector<In> &a, const std::vector<In> &b,
                      std::vector<Out> &c, int64_t lda, int64_t ldb,
                      int64_t ldc, int64_t m, int64_t n, int64_t k,
                      int32_t flags, int32_t type, int64_t batch, int64_t sa,
                      int64_t sb, int64_t sc) {
  DeviceBuffer da(a.size() * sizeof(In)), db(b.size() * sizeof(In)),
      dc(c.size() * sizeof(Out));
  da.upload(a);
  db.upload(b);
  dc.upload(c);
  ASSERT_EQ(mprt_cuda_gemm_sync(da.address(), lda, db.address(), ldb,
                                dc.address(), ldc, m, n, k, flags, type, batch,
                                sa, sb, sc),
            MPRT_OK)
      << mprt_last_error();
  readOnAnotherStream(c, dc.ptr);
}

/// Runs the strided batch C[p] += op(A[p]) op(B[p]) with
/// mprt_cuda_gemm_sync (as lowered code does) and compares with a
/// double-precision host reference. Matrices of a batch are `pad` elements
/// apart beyond their size; with `shareB` every product uses the same B
/// (stride 0).
template <typename In, typename Out>
void checkGemmSync(int32_t type, int64_t batch, int64_t m, int64_t n, int64_t k,
                   int32_t flags, double tolerance, bool shareB = false,
                   int64_t pad = 16) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> dist(-8, 8);
  bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
  int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
  int64_t sa = m * k + pad, sb = shareB ? 0 : k * n + pad, sc = m * n + pad;
  std::vector<In> a(batch * sa), b(shareB ? k * n : batch * sb);
  std::vector<Out> c(batch * sc);
  for (auto &v : a)
    v = In(dist(rng) / (sizeof(In) == 1 ? 1.0f : 4.0f));
  for (auto &v : b)
    v = In(dist(rng) / (sizeof(In) == 1 ? 1.0f : 4.0f));
  for (auto &v : c)
    v = Out(dist(rng));
  std::vector<double> want(c.size());
  for (size_t i = 0; i < c.size(); ++i)
    want[i] = toFloat(c[i]); // padding stays as it was
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const In *ap = &a[p * sa], *bp = &b[p * sb];
        double sum = toFloat(c[p * sc + i * ldc + j]);
        for (int64_t q = 0; q < k; ++q)
          sum += double(toFloat(ta ? ap[q * lda + i] : ap[i * lda + q])) *
                 toFloat(tb ? bp[j * ldb + q] : bp[q * ldb + j]);
        want[p * sc + i * ldc + j] = sum;
      }
  ASSERT_NO_FATAL_FAILURE(gemmSyncOnDevice(a, b, c, lda, ldb, ldc, m, n, k,
                                           flags, type, batch, sa, sb, sc));
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_NEAR(toFloat(c[i]), want[i], tolerance * (1 + std::fabs(want[i])))
        << "type " << type << " flags " << flags << " batch " << batch
        << " element " << i;
}

TEST_F(CudaRuntime, GemmSyncBatchedF32) {
  SKIP_WITHOUT_GPU();
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemmSync<float, float>(MPRT_GEMM_F32, 3, 48, 40, 24, flags, 1e-5);
  checkGemmSync<float, float>(MPRT_GEMM_F32, 1, 48, 40, 24, 0, 1e-5);
  expectNoError();
}

TEST_F(CudaRuntime, GemmSyncBatchedF16) {
  SKIP_WITHOUT_GPU();
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemmSync<__half, float>(MPRT_GEMM_F16, 4, 64, 32, 128, flags, 1e-6);
  checkGemmSync<__half, float>(MPRT_GEMM_F16, 4, 64, 32, 128, 0, 1e-6,
                               /*shareB=*/true);
  expectNoError();
}

TEST_F(CudaRuntime, GemmSyncBatchedBF16) {
  SKIP_WITHOUT_GPU();
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemmSync<__nv_bfloat16, float>(MPRT_GEMM_BF16, 2, 32, 64, 96, flags,
                                        1e-6);
  expectNoError();
}

TEST_F(CudaRuntime, GemmSyncBatchedS8) {
  SKIP_WITHOUT_GPU();
  // Sizes, leading dimensions and batch strides multiples of 16: flags 2
  // runs in place (see GemmS8AnyShape* for the rest).
  for (int32_t flags = 0; flags < 4; ++flags)
    checkGemmSync<int8_t, int32_t>(MPRT_GEMM_S8, 3, 64, 32, 128, flags, 0);
  expectNoError();
}

/// Runs the strided batch C[p] = round(op(A[p]) op(B[p])) with
/// MPRT_GEMM_ROUNDED_C (C of the operands' type; what a product whose f32
/// result is only rounded lowers to). The inputs are multiples of 1/4 and
/// the sums exact in f32, so each element must equal the host's
/// nearest-even rounding of the exact sum; the padding between matrices
/// must stay as it was (k == 0: zeros).
template <typename In>
void checkRoundedGemmSync(int32_t type, int64_t batch, int64_t m, int64_t n,
                          int64_t k, int32_t flags) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> dist(-40, 40);
  bool ta = flags & MPRT_GEMM_TRANS_A, tb = flags & MPRT_GEMM_TRANS_B;
  // Leading dimensions are at least 1, also for k == 0.
  int64_t lda = std::max<int64_t>(1, ta ? m : k),
          ldb = std::max<int64_t>(1, tb ? k : n), ldc = n, pad = 16;
  int64_t sa = m * k + pad, sb = k * n + pad, sc = m * n + pad;
  std::vector<In> a(std::max<int64_t>(1, batch * sa)),
      b(std::max<int64_t>(1, batch * sb)), c(batch * sc);
  for (auto &v : a)
    v = In(dist(rng) / 4.0f);
  for (auto &v : b)
    v = In(dist(rng) / 4.0f);
  for (auto &v : c)
    v = In(7.0f); // neither read nor kept, except in the padding
  std::vector<float> want(c.size(), 7.0f);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const In *ap = &a[p * sa], *bp = &b[p * sb];
        double sum = 0;
        for (int64_t q = 0; q < k; ++q)
          sum += double(toFloat(ta ? ap[q * lda + i] : ap[i * lda + q])) *
                 toFloat(tb ? bp[j * ldb + q] : bp[q * ldb + j]);
        want[p * sc + i * ldc + j] = toFloat(In(static_cast<float>(sum)));
      }
  ASSERT_NO_FATAL_FAILURE(gemmSyncOnDevice(a, b, c, lda, ldb, ldc, m, n, k,
                                           flags | MPRT_GEMM_ROUNDED_C, type,
                                           batch, sa, sb, sc));
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_EQ(toFloat(c[i]), want[i]) << "type " << type << " flags " << flags
                                      << " k " << k << " element " << i;
}

TEST_F(CudaRuntime, GemmSyncRoundedC) {
  SKIP_WITHOUT_GPU();
  // Sums of 200 products of up to 10 x 10 need more than f16's and bf16's
  // significands: the results are rounded.
  for (int32_t flags = 0; flags < 4; ++flags) {
    checkRoundedGemmSync<__half>(MPRT_GEMM_F16, 3, 64, 32, 200, flags);
    checkRoundedGemmSync<__nv_bfloat16>(MPRT_GEMM_BF16, 2, 32, 64, 200, flags);
  }
  checkRoundedGemmSync<__half>(MPRT_GEMM_F16, 2, 16, 8, 0, 0);
  expectNoError();
}

TEST_F(CudaRuntime, DeviceInfo) {
  SKIP_WITHOUT_GPU();
  mprt_cuda_device_info info;
  ASSERT_EQ(mprt_cuda_get_device_info(&info), MPRT_OK) << mprt_last_error();
  EXPECT_GT(strlen(info.name), 0u);
  EXPECT_GE(info.compute_major, 5);
  EXPECT_LE(info.compute_minor, 9);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.total_bytes, 1ull << 30);
  printf("device: %s, sm_%d%d, %d multiprocessors, %llu MiB\n", info.name,
         info.compute_major, info.compute_minor, info.multiprocessors,
         (unsigned long long)(info.total_bytes >> 20));
}

TEST_F(CudaRuntime, GemmF32OnTf32TensorCores) {
  SKIP_WITHOUT_GPU();
  mprt_cuda_device_info info;
  ASSERT_EQ(mprt_cuda_get_device_info(&info), MPRT_OK) << mprt_last_error();
  if (info.compute_major < 8)
    GTEST_SKIP() << "sm_" << info.compute_major << info.compute_minor
                 << " has no TF32 tensor cores";
  // 1 + 2^-12 is 1 in TF32 however the inputs are rounded (nearest or
  // truncated): each sum is k (TF32) or k (1 + 2^-12) (f32), both exact.
  constexpr int64_t m = 256, n = 256, k = 256;
  std::vector<float> a(m * k, 1 + std::ldexp(1.0f, -12)), b(k * n, 1.0f);
  DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(m * n * 4);
  da.upload(a);
  db.upload(b);
  for (bool tf32 : {false, true, false}) {
    mprt_cuda_gemm_set_tf32(tf32 ? 1 : 0);
    std::vector<float> c(m * n, 0.0f);
    dc.upload(c);
    ASSERT_EQ(mprt_cuda_gemm_sync(da.address(), k, db.address(), n,
                                  dc.address(), n, m, n, k, 0, MPRT_GEMM_F32, 1,
                                  0, 0, 0),
              MPRT_OK)
        << mprt_last_error();
    dc.download(c);
    float want = tf32 ? float(k) : float(k) * (1 + std::ldexp(1.0f, -12));
    for (int64_t i = 0; i < m * n; ++i)
      ASSERT_EQ(c[i], want)
          << (tf32 ? "TF32 (did cuBLASLt choose a kernel without TF32 "
                     "tensor cores?)"
                   : "f32")
          << " element " << i;
  }
  mprt_cuda_gemm_set_tf32(0);
  expectNoError();
}

TEST_F(CudaRuntime, GemmSyncIsDoneOnReturn) {
  SKIP_WITHOUT_GPU();
  // 2 x 2048 x 2048 x 4096 (69 GFLOP, about a millisecond): an unfinished
  // product would be read half done. Ones times ones: every element of C
  // becomes k, exactly, so the host check is cheap.
  constexpr int64_t batch = 2, m = 2048, n = 2048, k = 4096;
  std::vector<float> a(batch * m * k, 1.0f), b(batch * k * n, 1.0f),
      c(batch * m * n, 0.0f);
  DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c.size() * 4);
  da.upload(a);
  db.upload(b);
  dc.upload(c);
  ASSERT_EQ(mprt_cuda_gemm_sync(da.address(), k, db.address(), n, dc.address(),
                                n, m, n, k, 0, MPRT_GEMM_F32, batch, m * k,
                                k * n, m * n),
            MPRT_OK)
      << mprt_last_error();
  readOnAnotherStream(c, dc.ptr);
  size_t wrong = 0;
  for (float v : c)
    wrong += v != float(k);
  EXPECT_EQ(wrong, 0u) << "of " << c.size() << " elements";
  expectNoError();
}

//===----------------------------------------------------------------------===//
// Any shape, layout and alignment
//===----------------------------------------------------------------------===//

template <typename T> double toDouble(T v) { return static_cast<double>(v); }
template <> double toDouble(__half v) { return __half2float(v); }
template <> double toDouble(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Which entry point checkProduct calls.
enum class GemmApi { Plain, Batched, Sync };

/// A product for checkProduct: C[p] (+)= op(A[p]) op(B[p]) on row-major
/// operands whose rows are `extraLd` elements longer than needed, whose
/// matrices in a batch are `pad` elements apart beyond their extent (a
/// shared operand has stride 0), and which start `offsetX` elements into
/// their buffers.
struct GemmCase {
  int64_t m, n, k;
  int32_t flags = 0;
  int64_t extraLd = 0;
  int64_t batch = 1;
  bool shareA = false, shareB = false;
  int64_t pad = 0;
  int64_t offsetA = 0, offsetB = 0, offsetC = 0;
  GemmApi api = GemmApi::Plain;
};

std::ostream &operator<<(std::ostream &os, const GemmCase &g) {
  const char *api[] = {"mprt_cuda_gemm", "mprt_cuda_gemm_batched",
                       "mprt_cuda_gemm_sync"};
  return os << api[static_cast<int>(g.api)] << " m=" << g.m << " n=" << g.n
            << " k=" << g.k << " flags=" << g.flags << " extraLd=" << g.extraLd
            << " batch=" << g.batch << (g.shareA ? " shared-A" : "")
            << (g.shareB ? " shared-B" : "") << " pad=" << g.pad
            << " offsets=" << g.offsetA << "," << g.offsetB << "," << g.offsetC;
}

/// Runs \p g on the device and compares every element of C's buffer (the
/// gaps between rows and matrices must keep their values) with a host
/// reference: exact for s8, within \p tolerance (relative) otherwise. With
/// MPRT_GEMM_ROUNDED_C, Out is In and C is the rounded product.
template <typename In, typename Out>
void checkProduct(int32_t type, const GemmCase &g, double tolerance) {
  SCOPED_TRACE(::testing::Message() << g);
  bool ta = g.flags & MPRT_GEMM_TRANS_A, tb = g.flags & MPRT_GEMM_TRANS_B;
  bool rounded = g.flags & MPRT_GEMM_ROUNDED_C, s8 = type == MPRT_GEMM_S8;
  // Stored shapes: A is k x m when transposed, B is n x k.
  int64_t rowsA = ta ? g.k : g.m, widthA = ta ? g.m : g.k;
  int64_t rowsB = tb ? g.n : g.k, widthB = tb ? g.k : g.n;
  int64_t lda = widthA + g.extraLd, ldb = widthB + g.extraLd,
          ldc = g.n + g.extraLd;
  int64_t extentA = (rowsA - 1) * lda + widthA,
          extentB = (rowsB - 1) * ldb + widthB, extentC = (g.m - 1) * ldc + g.n;
  bool batched = g.batch > 1;
  int64_t sa = batched && !g.shareA ? extentA + g.pad : 0;
  int64_t sb = batched && !g.shareB ? extentB + g.pad : 0;
  int64_t sc = batched ? extentC + g.pad : 0;
  std::vector<In> a(g.offsetA + (g.batch - 1) * sa + extentA),
      b(g.offsetB + (g.batch - 1) * sb + extentB);
  std::vector<Out> c(g.offsetC + (g.batch - 1) * sc + extentC);
  std::mt19937 rng(19);
  // s8: the whole int8 range, and C values far beyond f32's exact
  // integers.
  std::uniform_int_distribution<int> small(-8, 8), byte(-128, 127);
  std::uniform_int_distribution<int32_t> wide(-(1 << 30), 1 << 30);
  for (auto &v : a)
    v = s8 ? In(byte(rng)) : In(small(rng) / 4.0f);
  for (auto &v : b)
    v = s8 ? In(byte(rng)) : In(small(rng) / 4.0f);
  for (auto &v : c)
    v = s8 ? Out(wide(rng)) : Out(float(small(rng)));
  std::vector<double> want(c.size());
  for (size_t i = 0; i < c.size(); ++i)
    want[i] = toDouble(c[i]);
  for (int64_t p = 0; p < g.batch; ++p) {
    const In *ap = &a[g.offsetA + p * sa], *bp = &b[g.offsetB + p * sb];
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < g.k; ++q)
          sum += toDouble(ta ? ap[q * lda + i] : ap[i * lda + q]) *
                 toDouble(tb ? bp[j * ldb + q] : bp[q * ldb + j]);
        double &w = want[g.offsetC + p * sc + i * ldc + j];
        w = rounded ? toDouble(Out(static_cast<float>(sum))) : w + sum;
      }
  }

  DeviceBuffer da(a.size() * sizeof(In)), db(b.size() * sizeof(In)),
      dc(c.size() * sizeof(Out));
  da.upload(a);
  db.upload(b);
  dc.upload(c);
  int64_t pa = da.address() + g.offsetA * int64_t(sizeof(In)),
          pb = db.address() + g.offsetB * int64_t(sizeof(In)),
          pc = dc.address() + g.offsetC * int64_t(sizeof(Out));
  switch (g.api) {
  case GemmApi::Plain:
    ASSERT_EQ(g.batch, 1);
    ASSERT_EQ(mprt_cuda_gemm(pa, lda, pb, ldb, pc, ldc, g.m, g.n, g.k, g.flags,
                             type, nullptr),
              MPRT_OK)
        << mprt_last_error();
    dc.download(c);
    break;
  case GemmApi::Batched:
    ASSERT_EQ(mprt_cuda_gemm_batched(pa, lda, pb, ldb, pc, ldc, g.m, g.n, g.k,
                                     g.flags, type, g.batch, sa, sb, sc,
                                     nullptr),
              MPRT_OK)
        << mprt_last_error();
    dc.download(c);
    break;
  case GemmApi::Sync: {
    ASSERT_EQ(mprt_cuda_gemm_sync(pa, lda, pb, ldb, pc, ldc, g.m, g.n, g.k,
                                  g.flags, type, g.batch, sa, sb, sc),
              MPRT_OK)
        << mprt_last_error();
    readOnAnotherStream(c, dc.ptr); // done on return
    break;
  }
  }
  for (size_t i = 0; i < c.size(); ++i) {
    if (s8)
      ASSERT_EQ(toDouble(c[i]), want[i]) << "element " << i;
    else
      ASSERT_NEAR(toDouble(c[i]), want[i], tolerance * (1 + std::fabs(want[i])))
          << "element " << i;
  }
}

// Shapes the int8 kernels cannot take as they are (m, n, k not multiples
// of 4: the digits classifier's n = 10), and some they can.
const int64_t kS8Shapes[][3] = {{64, 10, 64}, {7, 10, 13}, {1, 1, 1},
                                {5, 3, 2},    {17, 33, 9}, {64, 32, 128}};

TEST_F(CudaRuntime, GemmS8AnyShape) {
  SKIP_WITHOUT_GPU();
  for (const auto &[m, n, k] : kS8Shapes)
    for (int32_t flags = 0; flags < 4; ++flags)
      // Tight rows, rows 3 longer (odd leading dimensions), 4 longer.
      for (int64_t extraLd : {0, 3, 4}) {
        GemmCase g{m, n, k, flags};
        g.extraLd = extraLd;
        ASSERT_NO_FATAL_FAILURE(
            (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
      }
  expectNoError();
}

TEST_F(CudaRuntime, GemmS8AnyShapeBatched) {
  SKIP_WITHOUT_GPU();
  for (int32_t flags = 0; flags < 4; ++flags) {
    // Shared B (a layer's weight), odd sizes and strides.
    GemmCase g{7, 10, 13, flags};
    g.batch = 3;
    g.shareB = true;
    g.pad = 5;
    g.api = GemmApi::Sync;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
    g = GemmCase{64, 10, 64, flags};
    g.batch = 3;
    g.shareB = true;
    g.api = GemmApi::Batched;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
    // Shared A; rows one longer.
    g = GemmCase{16, 12, 20, flags};
    g.batch = 4;
    g.shareA = true;
    g.extraLd = 1;
    g.pad = 3;
    g.api = GemmApi::Sync;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
    // Multiples of 4 everywhere, strides too: in place for flags 2.
    g = GemmCase{64, 32, 128, flags};
    g.batch = 2;
    g.pad = 16;
    g.api = GemmApi::Batched;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
    // Strides that are not: each later matrix is misaligned.
    g.pad = 1;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
  }
  expectNoError();
}

TEST_F(CudaRuntime, GemmS8MisalignedOperands) {
  SKIP_WITHOUT_GPU();
  // A shape read in place when aligned (flags 2), then at offsets of 1 to
  // 3 bytes into the buffers (C at 4 and 8 bytes), then aligned again: a
  // plan cached for one alignment must not serve another.
  for (int32_t flags = 0; flags < 4; ++flags)
    for (int64_t offset : {0, 1, 2, 3, 0}) {
      GemmCase g{64, 32, 128, flags};
      g.offsetA = offset;
      g.offsetB = (offset + 1) % 4;
      g.offsetC = offset % 3;
      ASSERT_NO_FATAL_FAILURE(
          (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
    }
  // Misaligned dense batches: the staging copies cover whole batches.
  for (int32_t flags = 0; flags < 4; ++flags) {
    GemmCase g{64, 32, 64, flags};
    g.batch = 3;
    g.offsetA = g.offsetB = 1;
    g.api = GemmApi::Sync;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<int8_t, int32_t>(MPRT_GEMM_S8, g, 0)));
  }
  expectNoError();
}

/// Products of \p In at byte offsets 0, 2, 4, 8 and 0 again into their
/// buffers (rounded up to whole elements), on an aligned and an odd shape,
/// in every transposed form.
template <typename In> void checkMisaligned(int32_t type, double tolerance) {
  const int64_t shapes[][3] = {{64, 32, 128}, {7, 10, 13}};
  for (const auto &[m, n, k] : shapes)
    for (int64_t bytes : {0, 2, 4, 8, 0})
      for (int32_t flags = 0; flags < 4; ++flags) {
        GemmCase g{m, n, k, flags};
        g.offsetA = g.offsetB = (bytes + sizeof(In) - 1) / sizeof(In);
        g.offsetC = (bytes + 3) / 4;
        ASSERT_NO_FATAL_FAILURE((checkProduct<In, float>(type, g, tolerance)));
      }
  // A batch whose strides misalign every other matrix.
  GemmCase g{33, 17, 40, MPRT_GEMM_TRANS_B};
  g.batch = 4;
  g.pad = 1;
  g.offsetA = g.offsetB = g.offsetC = 1;
  g.api = GemmApi::Sync;
  ASSERT_NO_FATAL_FAILURE((checkProduct<In, float>(type, g, tolerance)));
}

TEST_F(CudaRuntime, GemmMisalignedF32) {
  SKIP_WITHOUT_GPU();
  checkMisaligned<float>(MPRT_GEMM_F32, 1e-5);
  expectNoError();
}

TEST_F(CudaRuntime, GemmMisalignedF16) {
  SKIP_WITHOUT_GPU();
  // Exact inputs and sums (see GemmF16).
  checkMisaligned<__half>(MPRT_GEMM_F16, 1e-6);
  expectNoError();
}

TEST_F(CudaRuntime, GemmMisalignedBF16) {
  SKIP_WITHOUT_GPU();
  checkMisaligned<__nv_bfloat16>(MPRT_GEMM_BF16, 1e-6);
  expectNoError();
}

TEST_F(CudaRuntime, GemmMisalignedRoundedC) {
  SKIP_WITHOUT_GPU();
  // A 16-bit C two bytes into its buffer, aligned first.
  for (int64_t offset : {0, 1, 2, 0}) {
    GemmCase g{32, 24, 40, MPRT_GEMM_ROUNDED_C | MPRT_GEMM_TRANS_B};
    g.batch = 2;
    g.pad = 2;
    g.offsetA = g.offsetB = g.offsetC = offset;
    g.api = GemmApi::Sync;
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<__half, __half>(MPRT_GEMM_F16, g, 0)));
    ASSERT_NO_FATAL_FAILURE(
        (checkProduct<__nv_bfloat16, __nv_bfloat16>(MPRT_GEMM_BF16, g, 0)));
  }
  expectNoError();
}

} // namespace
