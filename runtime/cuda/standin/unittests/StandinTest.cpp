//===- StandinTest.cpp - The CUDA driver and cuBLASLt stand-ins -----------===//
//
// Calls the stand-ins directly (the test links them): legal sequences leave
// no violation, each kind of misuse is caught, fails the call and counts,
// and the exit summary (checked in a fresh process) has the format and
// numbers the documentation promises.
//
//===----------------------------------------------------------------------===//

#include "standin.h"

#include <cublasLt.h>
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

/// A kernel like the ones --mp-lower-gpu emits: parameter 0 is an unused
/// pointer (a memref's `allocated`), 1 a pointer it reads, 2 a scalar.
const char *kPtx = R"(
.version 8.0
.target sm_80
.address_size 64

	// .globl	scale
.visible .entry scale(
	.param .u64 .ptr .align 1 scale_param_0,
	.param .u64 .ptr .align 1 scale_param_1,
	.param .u32 scale_param_2
)
.maxntid 128, 1, 1
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<2>;
	ld.param.u64 	%rd1, [scale_param_1];
	ld.param.u32 	%r1, [scale_param_2];
	ret;
}
)";

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Where violations of in-process tests go (set for the whole binary, so
/// that they do not clutter stderr and can be read back).
std::string logPath() {
  return ::testing::TempDir() + "cuda-standin-test-" +
         std::to_string(getpid()) + ".log";
}

/// Removes the log at the end; the exit summary then goes nowhere (the
/// in-process tests leave violations on purpose).
class LogCleanup : public ::testing::Environment {
  void TearDown() override {
    setenv("MPRT_CUDA_STANDIN_LOG", "/dev/null", 1);
    remove(logPath().c_str());
  }
};
const auto *logCleanup = ::testing::AddGlobalTestEnvironment(new LogCleanup);

class Standin : public ::testing::Test {
protected:
  void SetUp() override {
    setenv("MPRT_CUDA_STANDIN_LOG", logPath().c_str(), 1);
    logStart = readFile(logPath()).size();
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxPushCurrent(context), CUDA_SUCCESS);
    mp_cuda_standin_get_stats(&before);
  }
  void TearDown() override {
    CUcontext popped;
    EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  }

  /// What changed since SetUp.
  mp_cuda_standin_stats delta() {
    mp_cuda_standin_stats now;
    mp_cuda_standin_get_stats(&now);
    return {now.modules_loaded - before.modules_loaded,
            now.functions - before.functions,
            now.launches - before.launches,
            now.allocations - before.allocations,
            now.live_allocations - before.live_allocations,
            now.live_bytes - before.live_bytes,
            now.invalid_pointers - before.invalid_pointers,
            now.violations - before.violations};
  }
  /// The log lines written since SetUp.
  std::string newLog() { return readFile(logPath()).substr(logStart); }

  CUmodule load() {
    CUmodule module = nullptr;
    EXPECT_EQ(cuModuleLoadData(&module, kPtx), CUDA_SUCCESS);
    return module;
  }
  CUfunction function(CUmodule module) {
    CUfunction f = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&f, module, "scale"), CUDA_SUCCESS);
    return f;
  }

  CUcontext context = nullptr;
  mp_cuda_standin_stats before;
  size_t logStart = 0;
};

TEST_F(Standin, DeviceLooksLikeAnSm90) {
  int count = 0, value = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  char name[64];
  ASSERT_EQ(cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "mp CUDA stand-in");
  cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
  EXPECT_EQ(value, 9);
  cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  EXPECT_EQ(value, 132);
  cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0);
  EXPECT_EQ(value, 0);
  const char *text = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(delta().violations, 0u);
}

TEST_F(Standin, LegalSequenceHasNoViolation) {
  CUmodule module = load();
  CUfunction f = function(module);
  CUstream stream;
  CUevent event;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUdeviceptr buffer;
  ASSERT_EQ(cuMemAlloc(&buffer, 64), CUDA_SUCCESS);
  std::vector<uint32_t> host(16, 7), back(16, 0);
  ASSERT_EQ(cuMemcpyAsync(buffer, (CUdeviceptr)host.data(), 64, stream),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(buffer + 32, 9, 8, stream), CUDA_SUCCESS);
  // Parameter 0 is not read by the kernel: anything may be passed there.
  void *unused = (void *)0xdeadbeef;
  uint32_t n = 16;
  void *params[] = {&unused, &buffer, &n};
  ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, params, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(nullptr, event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyAsync((CUdeviceptr)back.data(), buffer, 64, stream),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 7u);
  EXPECT_EQ(back[15], 9u) << "copies and memsets really happen";
  ASSERT_EQ(cuMemFree(buffer), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  ASSERT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  mp_cuda_standin_stats d = delta();
  EXPECT_EQ(d.violations, 0u) << newLog();
  EXPECT_EQ(d.modules_loaded, 1u);
  EXPECT_EQ(d.functions, 1u);
  EXPECT_EQ(d.launches, 1u);
  EXPECT_EQ(d.allocations, 1u);
  EXPECT_EQ(d.live_allocations, 0u);
}

TEST_F(Standin, LaunchOfAFunctionNoModuleLoadedIsAViolation) {
  // What a launch before any module load has: a handle that is no function.
  CUfunction bogus = reinterpret_cast<CUfunction>(0x1000);
  EXPECT_EQ(
      cuLaunchKernel(bogus, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
      CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(delta().violations, 1u);
  EXPECT_NE(newLog().find("cuda-standin: violation: cuLaunchKernel: 0x1000 is "
                          "not a function from cuModuleGetFunction"),
            std::string::npos)
      << newLog();
  // A function whose module was unloaded.
  CUmodule module = load();
  CUfunction f = function(module);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(delta().violations, 2u);
  EXPECT_EQ(delta().launches, 0u);
}

TEST_F(Standin, UnknownKernelNameIsAViolation) {
  CUmodule module = load();
  CUfunction f;
  EXPECT_EQ(cuModuleGetFunction(&f, module, "scale_f16"), CUDA_ERROR_NOT_FOUND);
  EXPECT_NE(newLog().find("has no kernel 'scale_f16' (it has: scale)"),
            std::string::npos)
      << newLog();
  cuModuleUnload(module);
  EXPECT_EQ(delta().violations, 1u);
}

TEST_F(Standin, LaunchShapesAreChecked) {
  CUmodule module = load();
  CUfunction f = function(module);
  CUdeviceptr buffer;
  ASSERT_EQ(cuMemAlloc(&buffer, 64), CUDA_SUCCESS);
  void *unused = nullptr;
  uint32_t n = 16;
  void *params[] = {&unused, &buffer, &n};
  // Over the kernel's .maxntid 128, then over the device's limits.
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 2000, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      cuLaunchKernel(f, 1, 65536, 1, 1, 1, 1, 0, nullptr, params, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 64 << 10, nullptr, params, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  // Parameters: missing, or a pointer the kernel reads that is not device
  // memory.
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  std::vector<float> host(16);
  float *hostPointer = host.data();
  void *hostParams[] = {&unused, &hostPointer, &n};
  EXPECT_EQ(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, hostParams, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(delta().violations, 7u) << newLog();
  EXPECT_EQ(delta().invalid_pointers, 2u);
  EXPECT_EQ(delta().launches, 0u);
  EXPECT_EQ(cuLaunchKernel(f, 2147483647, 65535, 1, 128, 1, 1, 48 << 10,
                           nullptr, params, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(delta().launches, 1u);
  cuMemFree(buffer);
  cuModuleUnload(module);
  EXPECT_EQ(delta().violations, 7u);
}

TEST_F(Standin, UseAfterFreeDoubleFreeAndOverrunsAreViolations) {
  CUdeviceptr buffer;
  ASSERT_EQ(cuMemAlloc(&buffer, 64), CUDA_SUCCESS);
  std::vector<char> host(128);
  // 64 bytes fit, 65 do not.
  EXPECT_EQ(cuMemcpyHtoD(buffer, host.data(), 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoDAsync(buffer + 8, host.data(), 64, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(newLog().find("cuda-standin: violation: cuMemcpyHtoDAsync: "
                          "destination 0x"),
            std::string::npos);
  EXPECT_NE(newLog().find("(64 bytes) is not inside a live allocation: it runs "
                          "8 bytes past the end of the 64-byte allocation"),
            std::string::npos)
      << newLog();
  ASSERT_EQ(cuMemFree(buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyAsync(buffer, (CUdeviceptr)host.data(), 16, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(newLog().find("which was freed"), std::string::npos) << newLog();
  EXPECT_EQ(cuMemsetD32(buffer, 0, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(buffer), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(newLog().find("was already freed (double free)"),
            std::string::npos);
  int local;
  EXPECT_EQ(cuMemFree((CUdeviceptr)&local), CUDA_ERROR_INVALID_VALUE);
  // A host pointer of a host-to-device copy may not be NULL.
  CUdeviceptr other;
  ASSERT_EQ(cuMemAlloc(&other, 16), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD(other, nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(other), CUDA_SUCCESS);
  mp_cuda_standin_stats d = delta();
  EXPECT_EQ(d.violations, 6u) << newLog();
  EXPECT_EQ(d.invalid_pointers, 6u);
  EXPECT_EQ(d.live_allocations, 0u);
}

TEST_F(Standin, PitchedCopiesCheckEveryRow) {
  // 3 rows of 8 bytes from a host matrix with pitch 16 into a device one
  // with pitch 12 (the last row ends at byte 32).
  std::vector<uint8_t> host(48);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = uint8_t(i);
  CUdeviceptr device;
  ASSERT_EQ(cuMemAlloc(&device, 32), CUDA_SUCCESS);
  CUDA_MEMCPY2D m = {};
  m.srcMemoryType = CU_MEMORYTYPE_HOST;
  m.srcHost = host.data();
  m.srcPitch = 16;
  m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  m.dstDevice = device;
  m.dstPitch = 12;
  m.WidthInBytes = 8;
  m.Height = 3;
  ASSERT_EQ(cuMemcpy2DAsync(&m, nullptr), CUDA_SUCCESS);
  std::vector<uint8_t> back(32);
  cuMemcpyDtoH(back.data(), device, 32);
  EXPECT_EQ(back[24], 32) << "row 2 starts at host byte 32";
  EXPECT_EQ(back[31], 39);
  // A fourth row would end at byte 44 of a 32-byte allocation.
  m.Height = 4;
  EXPECT_EQ(cuMemcpy2DAsync(&m, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(newLog().find("cuMemcpy2DAsync: destination 0x"), std::string::npos)
      << newLog();
  cuMemFree(device);
  EXPECT_EQ(delta().violations, 1u) << newLog();
}

TEST_F(Standin, HandlesAreUsedBetweenCreateAndDestroy) {
  CUstream stream;
  CUevent event;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(event, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  // An event is not a stream.
  CUevent live;
  ASSERT_EQ(cuEventCreate(&live, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(reinterpret_cast<CUstream>(live)),
            CUDA_ERROR_INVALID_HANDLE);
  cuEventDestroy(live);
  EXPECT_EQ(delta().violations, 4u) << newLog();
}

TEST_F(Standin, ContextsMustBeCurrentAndBalanced) {
  CUcontext popped;
  ASSERT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  // Nothing current: allocations fail, and so does a second pop.
  CUdeviceptr p;
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(delta().violations, 2u) << newLog();
  ASSERT_EQ(cuCtxPushCurrent(context), CUDA_SUCCESS); // for TearDown
}

TEST_F(Standin, ThreadsShareTheDevice) {
  // Each thread makes the context current itself, as libmprt_cuda does.
  auto work = [this] {
    EXPECT_EQ(cuCtxPushCurrent(context), CUDA_SUCCESS);
    std::vector<uint32_t> host(256, 3), back(256);
    for (int i = 0; i < 200; ++i) {
      CUdeviceptr p;
      ASSERT_EQ(cuMemAlloc(&p, 1024), CUDA_SUCCESS);
      ASSERT_EQ(cuMemcpyHtoD(p, host.data(), 1024), CUDA_SUCCESS);
      ASSERT_EQ(cuMemcpyDtoH(back.data(), p, 1024), CUDA_SUCCESS);
      ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
    }
    EXPECT_EQ(back[255], 3u);
    CUcontext popped;
    EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back(work);
  for (std::thread &t : threads)
    t.join();
  mp_cuda_standin_stats d = delta();
  EXPECT_EQ(d.allocations, 800u);
  EXPECT_EQ(d.live_allocations, 0u);
  EXPECT_EQ(d.violations, 0u) << newLog();
}

//===----------------------------------------------------------------------===//
// Binary images (with the toolkit's ptxas and fatbinary, where present)
//===----------------------------------------------------------------------===//

/// Runs the toolkit's `tool` with `args`; false if it is missing or fails.
bool runTool(const char *tool, const std::string &args) {
  std::string path = std::string(MP_CUDA_TOOLKIT_BIN "/") + tool;
  if (access(path.c_str(), X_OK) != 0)
    return false;
  return system((path + " " + args + " >/dev/null 2>&1").c_str()) == 0;
}

std::string writePtx() {
  std::string path = ::testing::TempDir() + "cuda-standin-" +
                     std::to_string(getpid()) + ".ptx";
  std::ofstream(path) << kPtx;
  return path;
}

TEST_F(Standin, CubinAndFatbinNameTheirKernels) {
  std::string ptx = writePtx(), base = ptx.substr(0, ptx.size() - 4);
  if (!runTool("ptxas", "-arch=sm_90 -o " + base + ".sm90.cubin " + ptx) ||
      !runTool("ptxas", "-arch=sm_80 -o " + base + ".sm80.cubin " + ptx))
    GTEST_SKIP() << "no ptxas in " MP_CUDA_TOOLKIT_BIN;
  std::string cubin = readFile(base + ".sm90.cubin");
  CUmodule module;
  ASSERT_EQ(cuModuleLoadData(&module, cubin.data()), CUDA_SUCCESS);
  CUfunction f, missing;
  ASSERT_EQ(cuModuleGetFunction(&f, module, "scale"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&missing, module, "other"),
            CUDA_ERROR_NOT_FOUND);
  // The cubin's .nv.info: three parameters and .maxntid 128.
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr buffer;
  ASSERT_EQ(cuMemAlloc(&buffer, 64), CUDA_SUCCESS);
  uint32_t n = 16;
  void *params[] = {&buffer, &buffer, &n};
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr),
            CUDA_SUCCESS);
  cuModuleUnload(module);
  // SASS for sm_80 does not run on sm_90 (not a misuse: no violation).
  std::string old = readFile(base + ".sm80.cubin");
  EXPECT_EQ(cuModuleLoadData(&module, old.data()),
            CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(delta().violations, 3u) << newLog();
  // A fatbin with the sm_80 cubin and the PTX (compressed or not).
  for (const char *compress : {"--compress=false", "--compress=true"}) {
    std::string fatbin = base + ".fatbin";
    ASSERT_TRUE(runTool("fatbinary",
                        std::string("-64 ") + compress + " --create=" + fatbin +
                            " --image3=kind=elf,sm=80,file=" + base +
                            ".sm80.cubin" +
                            " --image3=kind=ptx,sm=80,file=" + ptx));
    std::string image = readFile(fatbin);
    ASSERT_EQ(cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
    EXPECT_EQ(cuModuleGetFunction(&f, module, "scale"), CUDA_SUCCESS);
    // Compressed PTX cannot be read: any name is accepted then.
    bool compressed = strcmp(compress, "--compress=true") == 0;
    EXPECT_EQ(cuModuleGetFunction(&missing, module, "other"),
              compressed ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND);
    cuModuleUnload(module);
    remove(fatbin.c_str());
  }
  cuMemFree(buffer);
  EXPECT_EQ(delta().violations, 4u) << newLog();
  for (const char *suffix : {".ptx", ".sm90.cubin", ".sm80.cubin"})
    remove((base + suffix).c_str());
}

TEST_F(Standin, PtxasChecksPtxWhenAsked) {
  if (access(MP_CUDA_TOOLKIT_BIN "/ptxas", X_OK) != 0)
    GTEST_SKIP() << "no ptxas in " MP_CUDA_TOOLKIT_BIN;
  setenv("MPRT_CUDA_STANDIN_PTXAS", MP_CUDA_TOOLKIT_BIN "/ptxas", 1);
  std::string bad = ".version 8.0\n.target sm_80\n.address_size 64\n"
                    ".visible .entry k() { bogus; }\n";
  char log[1024] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
  CUmodule module;
  EXPECT_EQ(cuModuleLoadDataEx(&module, bad.data(), 2, options, values),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("bogus"), std::string::npos) << log;
  EXPECT_EQ(cuModuleLoadData(&module, kPtx), CUDA_SUCCESS);
  cuModuleUnload(module);
  unsetenv("MPRT_CUDA_STANDIN_PTXAS");
  // Without ptxas the text is only read, not assembled.
  EXPECT_EQ(cuModuleLoadData(&module, bad.data()), CUDA_SUCCESS);
  cuModuleUnload(module);
  EXPECT_EQ(delta().violations, 0u) << newLog();
}

//===----------------------------------------------------------------------===//
// cuBLASLt
//===----------------------------------------------------------------------===//

/// A column-major f32 product D = A B (m x k times k x n) with everything
/// the caller can get wrong left to the test.
struct Gemm {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
  int64_t m, n, k;

  Gemm(int64_t m, int64_t n, int64_t k, cudaDataType type = CUDA_R_32F,
       cublasOperation_t opA = CUBLAS_OP_N)
      : m(m), n(n), k(k) {
    cublasComputeType_t compute =
        type == CUDA_R_8I ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
    cudaDataType out = type == CUDA_R_8I ? CUDA_R_32I : CUDA_R_32F;
    EXPECT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescCreate(&desc, compute, out),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                             &opA, sizeof(opA)),
              CUBLAS_STATUS_SUCCESS);
    if (opA == CUBLAS_OP_N)
      cublasLtMatrixLayoutCreate(&a, type, m, k, m);
    else
      cublasLtMatrixLayoutCreate(&a, type, k, m, k);
    cublasLtMatrixLayoutCreate(&b, type, k, n, k);
    cublasLtMatrixLayoutCreate(&c, out, m, n, m);
  }
  ~Gemm() {
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(handle);
  }
  /// The heuristic's answer: status and algorithm count.
  cublasStatus_t heuristic(int &count, uint64_t workspace = 1 << 20) {
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
        sizeof(workspace));
    cublasLtMatmulHeuristicResult_t result;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        handle, desc, a, b, c, c, pref, 1, &result, &count);
    algo = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return st;
  }
  cublasStatus_t run(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C,
                     CUdeviceptr workspace, size_t workspaceBytes) {
    float alpha = 1, beta = 0;
    return cublasLtMatmul(handle, desc, &alpha, (void *)A, a, (void *)B, b,
                          &beta, (void *)C, c, (void *)C, c, &algo,
                          (void *)workspace, workspaceBytes, nullptr);
  }
};

TEST_F(Standin, CublasLtComputesAndChecksExtents) {
  constexpr int64_t m = 4, n = 3, k = 5;
  Gemm gemm(m, n, k);
  int count = 0;
  ASSERT_EQ(gemm.heuristic(count), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(count, 1);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i % 5) - 2;
  CUdeviceptr da, db, dc, dw;
  ASSERT_EQ(cuMemAlloc(&da, a.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&db, b.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&dc, c.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&dw, 1 << 20), CUDA_SUCCESS);
  cuMemcpyHtoD(da, a.data(), a.size() * 4);
  cuMemcpyHtoD(db, b.data(), b.size() * 4);
  ASSERT_EQ(gemm.run(da, db, dc, dw, 1 << 20), CUBLAS_STATUS_SUCCESS);
  cuMemcpyDtoH(c.data(), dc, c.size() * 4);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float want = 0;
      for (int64_t l = 0; l < k; ++l)
        want += a[i + l * m] * b[l + j * k];
      EXPECT_EQ(c[i + j * m], want) << i << ", " << j;
    }
  EXPECT_EQ(delta().violations, 0u) << newLog();

  // B one element too short: its last column runs past the allocation.
  CUdeviceptr shortB;
  ASSERT_EQ(cuMemAlloc(&shortB, b.size() * 4 - 4), CUDA_SUCCESS);
  EXPECT_EQ(gemm.run(da, shortB, dc, dw, 1 << 20), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(newLog().find("cublasLtMatmul: B (5x3, ld 5, batch 1"),
            std::string::npos)
      << newLog();
  // A off the 256-byte alignment the algorithm assumes; a freed workspace.
  EXPECT_EQ(gemm.run(da + 4, db, dc, dw, 1 << 20), CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(cuMemFree(dw), CUDA_SUCCESS);
  EXPECT_EQ(gemm.run(da, db, dc, dw, 1 << 20), CUBLAS_STATUS_INVALID_VALUE);
  // An attribute of the wrong size (an int64_t batch count).
  int64_t batch = 2;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(gemm.a,
                                             CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                             &batch, sizeof(batch)),
            CUBLAS_STATUS_INVALID_VALUE);
  mp_cuda_standin_stats d = delta();
  EXPECT_EQ(d.violations, 4u) << newLog();
  EXPECT_EQ(d.invalid_pointers, 3u);
  for (CUdeviceptr p : {da, db, dc, shortB})
    cuMemFree(p);
}

TEST_F(Standin, CublasLtOffersInt8InTheTnFormOnly) {
  int count = -1;
  Gemm nn(4, 4, 4, CUDA_R_8I, CUBLAS_OP_N);
  EXPECT_EQ(nn.heuristic(count), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(count, 0);
  Gemm tn(4, 4, 4, CUDA_R_8I, CUBLAS_OP_T);
  EXPECT_EQ(tn.heuristic(count), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(delta().violations, 0u) << newLog();
}

//===----------------------------------------------------------------------===//
// The exit summary, in a fresh process
//===----------------------------------------------------------------------===//

/// One of each: a launch of a function no module loaded, a copy to a freed
/// pointer, a double free and a leak; plus one legal launch.
void misbehave() {
  CUcontext context;
  cuInit(0);
  cuDevicePrimaryCtxRetain(&context, 0);
  cuCtxPushCurrent(context);
  cuLaunchKernel(reinterpret_cast<CUfunction>(0x1000), 1, 1, 1, 1, 1, 1, 0,
                 nullptr, nullptr, nullptr);
  CUmodule module;
  CUfunction f;
  cuModuleLoadData(&module, kPtx);
  cuModuleGetFunction(&f, module, "scale");
  CUdeviceptr freed, leaked;
  cuMemAlloc(&freed, 64);
  cuMemAlloc(&leaked, 1000);
  uint32_t n = 0;
  void *params[] = {&leaked, &leaked, &n};
  cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr);
  cuMemFree(freed);
  char host[16] = {};
  cuMemcpyHtoD(freed, host, sizeof(host));
  cuMemFree(freed);
  cuCtxPopCurrent(&context);
}

TEST(StandinDeathTest, ExitSummaryCountsEachViolationAndTheLeak) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::string path = ::testing::TempDir() + "cuda-standin-exit-summary.log";
  remove(path.c_str());
  EXPECT_EXIT(
      {
        setenv("MPRT_CUDA_STANDIN_LOG", path.c_str(), 1);
        misbehave();
        exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  std::string log = readFile(path);
  EXPECT_NE(log.find("cuda-standin: violation: cuLaunchKernel: 0x1000 is not "
                     "a function"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("cuda-standin: violation: cuMemcpyHtoD: destination 0x"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("cuda-standin: violation: cuMemFree: 0x"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("cuda-standin: leak: 0x"), std::string::npos) << log;
  EXPECT_NE(log.find(" (1000 bytes, allocation #2, by "), std::string::npos)
      << log;
  // The last line, exactly.
  ASSERT_GT(log.size(), 2u);
  EXPECT_EQ(log.substr(log.rfind('\n', log.size() - 2) + 1),
            "cuda-standin: summary: modules_loaded=1 functions=1 launches=1 "
            "allocations=2 leaks=1 invalid_pointers=2 violations=3\n")
      << log;
  remove(path.c_str());
}

TEST(StandinDeathTest, WithoutALogViolationsGoToStderr) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsetenv("MPRT_CUDA_STANDIN_LOG");
        misbehave();
        exit(0);
      },
      ::testing::ExitedWithCode(0),
      "cuda-standin: violation: cuMemFree: .*double free.*\n"
      "cuda-standin: leak: .*\n"
      "cuda-standin: summary: .* violations=3\n");
}

TEST(StandinDeathTest, CleanProcessesPrintNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsetenv("MPRT_CUDA_STANDIN_LOG");
        CUcontext context;
        cuInit(0);
        cuDevicePrimaryCtxRetain(&context, 0);
        cuCtxPushCurrent(context);
        CUdeviceptr p;
        cuMemAlloc(&p, 16);
        cuMemFree(p);
        cuCtxPopCurrent(&context);
        fprintf(stderr, "done\n");
        exit(0);
      },
      ::testing::ExitedWithCode(0), "^done\n$");
}

} // namespace
