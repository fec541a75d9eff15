//===- MgpuOnStandinTest.cpp - libmprt_cuda's mgpu ABI on the stand-in ----===//
//
// The parts of libmprt_cuda (runtime/cuda) that lowered code reaches only
// on a GPU, run on the CUDA driver and cuBLASLt stand-ins (ctest sets
// LD_LIBRARY_PATH=build/lib/cuda-standin; the stand-in device gets 256 MiB
// here): events, managed memory, memsets, host registration of memrefs,
// cubin loading, the pool running out of memory, and the errors each
// entry point records (mprt_cuda_check) instead of faulting the device.
// Kernels do not run on the stand-in; copies and memsets do, so memory
// contents are checked.
//
//===----------------------------------------------------------------------===//

#include "StandinFixture.h"

#include "mprt/mgpu.h"
#include "mprt/mprt_cuda.h"
#include "standin.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using mprt_test::readFile;

// The stand-in reads its memory size at its first allocation: 256 MiB, so
// that running out of memory is cheap to test.
const bool kSmallDevice = [] {
  setenv("MPRT_CUDA_STANDIN_MEMORY_MB", "256", /*overwrite=*/1);
  return true;
}();

class MgpuOnStandin : public mprt_test::CudaStandinTest {
protected:
  void TearDown() override {
    CudaStandinTest::TearDown();
    mprt_cuda_release_cached();
  }

  /// The recorded error(s), cleared; "" when none is pending.
  static std::string takeError() {
    if (mprt_cuda_check() == MPRT_OK)
      return "";
    return mprt_last_error();
  }
};

#define EXPECT_CONTAINS(text, part)                                            \
  do {                                                                         \
    std::string whole = (text);                                                \
    EXPECT_NE(whole.find(part), std::string::npos)                             \
        << "'" << whole << "' lacks '" << (part) << "'";                       \
  } while (0)

TEST_F(MgpuOnStandin, EventsOrderStreamsWithoutError) {
  void *producer = mgpuStreamCreate();
  void *consumer = mgpuStreamCreate();
  ASSERT_NE(producer, nullptr);
  ASSERT_NE(consumer, nullptr);
  void *event = mgpuEventCreate();
  ASSERT_NE(event, nullptr);

  std::vector<uint32_t> host(256, 7);
  void *device = mgpuMemAlloc(host.size() * 4, producer, false);
  ASSERT_NE(device, nullptr);
  mgpuMemcpy(device, host.data(), host.size() * 4, producer);
  mgpuEventRecord(event, producer);
  mgpuStreamWaitEvent(consumer, event);
  std::vector<uint32_t> back(256, 0);
  mgpuMemcpy(back.data(), device, back.size() * 4, consumer);
  mgpuEventSynchronize(event);
  mgpuStreamSynchronize(consumer);
  EXPECT_EQ(back, host);

  mgpuMemFree(device, consumer);
  mgpuEventDestroy(event);
  mgpuStreamDestroy(producer);
  mgpuStreamDestroy(consumer);
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MgpuOnStandin, MissingEventsAreRecordedNotPassedOn) {
  void *stream = mgpuStreamCreate();
  mgpuStreamWaitEvent(stream, nullptr);
  mgpuEventRecord(nullptr, stream);
  mgpuEventSynchronize(nullptr);
  // Destroying what a failed create left (null) is no error.
  mgpuEventDestroy(nullptr);
  mgpuStreamDestroy(nullptr);
  mgpuStreamDestroy(stream);
  std::string error = takeError();
  // The first error, and a count of the later ones.
  EXPECT_CONTAINS(error, "mgpuStreamWaitEvent: no event (its creation failed)");
  EXPECT_CONTAINS(error, "(and 2 later errors)");
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MgpuOnStandin, MemsetsFillDeviceAndManagedMemory) {
  constexpr size_t n = 1000;
  void *device = mgpuMemAlloc(n * 4, nullptr, false);
  void *managed = mgpuMemAlloc(n * 2, nullptr, true);
  ASSERT_NE(device, nullptr);
  ASSERT_NE(managed, nullptr);
  mgpuMemset32(device, 0xdeadbeefu, n, nullptr);
  mgpuMemset16(managed, 0x3c00, n, nullptr);
  std::vector<uint32_t> words(n);
  mgpuMemcpy(words.data(), device, n * 4, nullptr);
  mgpuStreamSynchronize(nullptr);
  EXPECT_EQ(words, std::vector<uint32_t>(n, 0xdeadbeefu));
  // Managed memory is readable from the host directly.
  const uint16_t *halves = static_cast<const uint16_t *>(managed);
  EXPECT_EQ(std::vector<uint16_t>(halves, halves + n),
            std::vector<uint16_t>(n, 0x3c00));
  // A zero-byte copy is skipped (no pointer is looked at).
  mgpuMemcpy(nullptr, nullptr, 0, nullptr);

  mp_cuda_standin_stats mid = now();
  void *stream = mgpuStreamCreate();
  mgpuMemFree(managed, stream); // managed blocks go back to the driver
  mgpuMemFree(device, nullptr); // pool blocks stay cached
  mgpuStreamDestroy(stream);
  EXPECT_EQ(now().live_allocations, mid.live_allocations - 1);
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MgpuOnStandin, EmptyAllocationsAreDistinct) {
  void *a = mgpuMemAlloc(0, nullptr, false);
  void *b = mgpuMemAlloc(0, nullptr, false);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  mgpuMemFree(a, nullptr);
  mgpuMemFree(b, nullptr);
  mgpuMemFree(nullptr, nullptr); // a failed allocation's result
  EXPECT_EQ(takeError(), "");
}

TEST_F(MgpuOnStandin, FreeingForeignMemoryIsAnError) {
  std::vector<float> host(16);
  mgpuMemFree(host.data(), nullptr);
  EXPECT_CONTAINS(takeError(), "was not allocated by mgpuMemAlloc");
  void *device = mgpuMemAlloc(64, nullptr, false);
  mgpuMemFree(device, nullptr);
  mgpuMemFree(device, nullptr);
  EXPECT_CONTAINS(takeError(), "(or was freed twice)");
}

/// MLIR's ranked memref descriptor of rank 2.
struct MemRef2 {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

TEST_F(MgpuOnStandin, HostRegisteredMemRefsAreDeviceReadable) {
  std::vector<float> buffer(10 * 8);
  // Rows 2..5 of a 10 x 8 buffer, every other column: from element 16 to
  // element 16 + 3 * 8 + 3 * 2 = 46.
  MemRef2 view{buffer.data(), buffer.data(), 16, {4, 4}, {8, 2}};
  const float *first = buffer.data() + 16;
  ASSERT_EQ(checkRange(first, 31 * 4, "test", "before registration"), 0);
  mgpuMemHostRegisterMemRef(2, &view, 4);
  // Registering again (the memref passed to another function) is no error.
  mgpuMemHostRegisterMemRef(2, &view, 4);
  EXPECT_EQ(checkRange(first, 31 * 4, "test", "the registered view"), 1);
  EXPECT_EQ(checkRange(first, 32 * 4, "test", "one element past it"), 0);
  mgpuMemHostUnregisterMemRef(2, &view, 4);
  EXPECT_EQ(checkRange(first, 4, "test", "after unregistering"), 0);
  // Unregistering what is not registered is not an error either.
  mgpuMemHostUnregister(buffer.data());
  EXPECT_EQ(takeError(), "");
  // The three checks above that were meant to fail, and nothing else.
  EXPECT_EQ(now().violations, before.violations + 3);
}

TEST_F(MgpuOnStandin, EmptyAndBadMemRefs) {
  std::vector<float> buffer(8);
  mp_cuda_standin_stats start = now();
  // No element: nothing to register or unregister.
  MemRef2 empty{buffer.data(), buffer.data(), 0, {0, 8}, {8, 1}};
  mgpuMemHostRegisterMemRef(2, &empty, 4);
  mgpuMemHostUnregisterMemRef(2, &empty, 4);
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().violations, start.violations);

  MemRef2 negative{buffer.data(), buffer.data(), 7, {2, 4}, {4, -1}};
  mgpuMemHostRegisterMemRef(2, &negative, 4);
  EXPECT_CONTAINS(takeError(), "mgpuMemHostRegisterMemRef: bad memref (rank "
                               "2, element size 4, or a negative stride)");
  mgpuMemHostUnregisterMemRef(2, &negative, 4);
  EXPECT_CONTAINS(takeError(), "mgpuMemHostUnregisterMemRef: bad memref");
  mgpuMemHostRegisterMemRef(2, nullptr, 4);
  EXPECT_CONTAINS(takeError(), "bad memref");
  MemRef2 fine{buffer.data(), buffer.data(), 0, {2, 4}, {4, 1}};
  mgpuMemHostRegisterMemRef(2, &fine, 0);
  EXPECT_CONTAINS(takeError(), "element size 0");
}

TEST_F(MgpuOnStandin, RegisteringDeviceMemoryIsRejected) {
  void *device = mgpuMemAlloc(256, nullptr, false);
  ASSERT_NE(device, nullptr);
  mgpuMemHostRegister(device, 256);
  EXPECT_CONTAINS(takeError(), "mgpuMemHostRegister: 256 bytes at");
  mgpuMemHostRegister(nullptr, 256); // nothing to register
  mgpuMemHostRegister(device, 0);
  EXPECT_EQ(takeError(), "");
  mgpuMemFree(device, nullptr);
}

TEST_F(MgpuOnStandin, LaunchErrorsSkipTheLaunch) {
  std::string ptx = readFile(MP_CUDA_TEST_INPUTS "/bias_relu_f16.ptx");
  ASSERT_FALSE(ptx.empty());
  void *module = mgpuModuleLoadJIT(ptx.data(), 9); // clamped to 4
  ASSERT_NE(module, nullptr) << takeError();
  void *function = mgpuModuleGetFunction(module, "bias_relu_f16_kernel");
  ASSERT_NE(function, nullptr) << takeError();

  mgpuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  EXPECT_CONTAINS(takeError(), "mgpuLaunchKernel: no kernel");
  mgpuLaunchKernel(function, 0, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr,
                   19);
  EXPECT_CONTAINS(takeError(), "mgpuLaunchKernel: bad launch shape grid (0, "
                               "1, 1) block (256, 1, 1)");
  mgpuLaunchKernel(function, 1, 1, 1, 1, 1, int64_t(1) << 40, 0, nullptr,
                   nullptr, nullptr, 19);
  EXPECT_CONTAINS(takeError(), "bad launch shape");

  // A pending error (here: a kernel the module lacks) skips later launches.
  EXPECT_EQ(mgpuModuleGetFunction(module, "no_such_kernel"), nullptr);
  mgpuLaunchKernel(function, 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr,
                   19);
  std::string error = takeError();
  EXPECT_CONTAINS(error, "mgpuModuleGetFunction: kernel 'no_such_kernel'");
  EXPECT_CONTAINS(error, "(and 1 later error)");

  EXPECT_EQ(mgpuModuleGetFunction(nullptr, "bias_relu_f16_kernel"), nullptr);
  EXPECT_CONTAINS(takeError(),
                  "mgpuModuleGetFunction(bias_relu_f16_kernel): the module "
                  "did not load");
  mgpuModuleUnload(module);
  mgpuModuleUnload(nullptr); // a failed load's result
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().launches, before.launches);
}

TEST_F(MgpuOnStandin, BadImagesFailToLoad) {
  char garbage[] = "\x7f"
                   "not a cubin, fatbin or PTX";
  EXPECT_EQ(mgpuModuleLoad(garbage, sizeof(garbage)), nullptr);
  EXPECT_CONTAINS(takeError(), "mgpuModuleLoad: cuModuleLoadData failed");
  EXPECT_EQ(mgpuModuleLoadJIT(garbage, 2), nullptr);
  std::string error = takeError();
  EXPECT_CONTAINS(error, "mgpuModuleLoadJIT: cuModuleLoadDataEx failed");
  // The driver's JIT log is part of the message.
  EXPECT_CONTAINS(error, "; PTX JIT log: cuda-standin: not PTX");
  EXPECT_EQ(now().modules_loaded, before.modules_loaded);
}

TEST_F(MgpuOnStandin, CubinsLoad) {
  // gpu-module-to-binary format=bin: a cubin from the toolkit's ptxas.
  std::string ptxas = MP_CUDA_TOOLKIT_BIN "/ptxas";
  if (access(ptxas.c_str(), X_OK) != 0)
    GTEST_SKIP() << "no " << ptxas;
  std::string cubin = ::testing::TempDir() + "mgpu_on_standin.cubin";
  std::string command = ptxas + " -arch=sm_90 -o " + cubin + " " +
                        MP_CUDA_TEST_INPUTS "/bias_relu_f16.ptx";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::string image = readFile(cubin);
  std::remove(cubin.c_str());
  ASSERT_FALSE(image.empty());
  void *module = mgpuModuleLoad(image.data(), image.size());
  ASSERT_NE(module, nullptr) << takeError();
  EXPECT_NE(mgpuModuleGetFunction(module, "bias_relu_f16_kernel"), nullptr);
  mgpuModuleUnload(module);
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().modules_loaded, before.modules_loaded + 1);
  EXPECT_EQ(now().violations, before.violations);
}

// The stand-in device has 256 MiB (kSmallDevice).
TEST_F(MgpuOnStandin, PoolReleasesCachedBlocksWhenTheDeviceIsFull) {
  mprt_cuda_pool_stats start;
  mprt_cuda_pool_get_stats(&start);
  void *first = mgpuMemAlloc(150u << 20, nullptr, false);
  ASSERT_NE(first, nullptr) << takeError();
  mgpuMemFree(first, nullptr);
  mprt_cuda_pool_stats cached;
  mprt_cuda_pool_get_stats(&cached);
  EXPECT_GE(cached.bytes_cached, 150u << 20);
  // 200 MiB fit only once the cached 150 MiB are given back.
  void *second = mgpuMemAlloc(200u << 20, nullptr, false);
  ASSERT_NE(second, nullptr) << takeError();
  mprt_cuda_pool_stats after;
  mprt_cuda_pool_get_stats(&after);
  EXPECT_EQ(after.bytes_cached, 0u);
  EXPECT_EQ(after.device_allocs, start.device_allocs + 2);
  mgpuMemFree(second, nullptr);
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(mprt_cuda_pool_trim(), MPRT_OK);
  mprt_cuda_pool_get_stats(&after);
  EXPECT_EQ(after.bytes_cached, 0u);
}

TEST_F(MgpuOnStandin, OutOfMemoryIsRecordedAndSkipsProducts) {
  EXPECT_EQ(mgpuMemAlloc(300u << 20, nullptr, false), nullptr);
  EXPECT_CONTAINS(takeError(), "mgpuMemAlloc: 314572800 bytes");
  EXPECT_EQ(mgpuMemAlloc(300u << 20, nullptr, true), nullptr);
  EXPECT_CONTAINS(takeError(),
                  "mgpuMemAlloc: cuMemAllocManaged of 314572800 bytes failed");

  // With the error pending, a product is skipped, and says so.
  EXPECT_EQ(mgpuMemAlloc(300u << 20, nullptr, false), nullptr);
  std::vector<float> a(4, 1), b(4, 1), c(4, 0);
  EXPECT_EQ(mprt_cuda_gemm_sync((int64_t)a.data(), 2, (int64_t)b.data(), 2,
                                (int64_t)c.data(), 2, 2, 2, 2, 0,
                                MPRT_GEMM_F32, 1, 0, 0, 0),
            MPRT_ERROR_DEVICE);
  EXPECT_CONTAINS(mprt_last_error(),
                  "mprt_cuda_gemm_sync: product skipped after an earlier "
                  "error");
  std::string error = takeError();
  EXPECT_CONTAINS(error, "mgpuMemAlloc: 314572800 bytes");
  EXPECT_CONTAINS(error, "(and 1 later error)");
  EXPECT_EQ(c, std::vector<float>(4, 0));
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MgpuOnStandin, RoundedProductOfAnEmptySumIsZero) {
  // C = round(A B) with k = 0: zeros, written without cuBLASLt (which
  // wants k > 0), synchronously.
  constexpr int64_t m = 3, n = 5, ldc = 8;
  std::vector<uint16_t> host(m * ldc, 0x3c00);
  void *c = mgpuMemAlloc(host.size() * 2, nullptr, false);
  mgpuMemcpy(c, host.data(), host.size() * 2, nullptr);
  uint16_t unused = 0;
  ASSERT_EQ(mprt_cuda_gemm_sync((int64_t)&unused, 1, (int64_t)&unused, n,
                                (int64_t)c, ldc, m, n, 0, MPRT_GEMM_ROUNDED_C,
                                MPRT_GEMM_F16, 1, 0, 0, 0),
            MPRT_OK)
      << mprt_last_error();
  mgpuMemcpy(host.data(), c, host.size() * 2, nullptr);
  mgpuStreamSynchronize(nullptr);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      EXPECT_EQ(host[i * ldc + j], j < n ? 0 : 0x3c00) << i << ", " << j;
  mgpuMemFree(c, nullptr);
  EXPECT_EQ(takeError(), "");
  EXPECT_EQ(now().violations, before.violations);
}

TEST_F(MgpuOnStandin, FailedSynchronousProductsAreRecorded) {
  // Compiled code ignores the status: the error is recorded for
  // mprt_cuda_check as well.
  float x = 0;
  EXPECT_EQ(mprt_cuda_gemm_sync((int64_t)&x, 1, (int64_t)&x, 1, (int64_t)&x,
                                1, 1, 1, 1, MPRT_GEMM_ROUNDED_C, MPRT_GEMM_F32,
                                1, 0, 0, 0),
            MPRT_ERROR_ARGUMENT);
  EXPECT_CONTAINS(takeError(),
                  "a rounded C needs f16 or bf16 operands, not f32");
}

TEST_F(MgpuOnStandin, AnotherDeviceAfterStartIsAnError) {
  mgpuSetDefaultDevice(0); // the one in use: fine
  EXPECT_EQ(takeError(), "");
  mgpuSetDefaultDevice(1);
  // The message names the device in use.
  EXPECT_CONTAINS(takeError(), "mgpuSetDefaultDevice(1): device 0 is already "
                               "in use");
}

} // namespace
