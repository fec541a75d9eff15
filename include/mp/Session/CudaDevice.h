//===- CudaDevice.h - libmprt_cuda for mp-run's --device cuda ---*- C++ -*-===//
//
// mp-run links no CUDA code: `--device cuda` opens libmprt_cuda.so (next to
// mp-run, in ../lib, or $MPRT_CUDA_LIBRARY) with dlopen, RTLD_GLOBAL, so the
// JIT-compiled step finds its mgpu* and mprt_cuda_gemm_sync functions, and
// gives the session device buffers and copies through the same library.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_CUDADEVICE_H
#define MP_SESSION_CUDADEVICE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

// mprt_cuda.h's types, which lib/Session/CudaDevice.cpp includes.
struct mprt_cuda_pool_stats;
struct mprt_cuda_device_info;

namespace mp {

/// What the GPU is (mprt_cuda_get_device_info).
struct GpuProperties {
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  uint64_t totalBytes = 0;
};

class CudaDevice {
public:
  /// Loads libmprt_cuda.so and checks that device 0 can be used; on failure
  /// returns null with `error` saying why (no library, no driver, no GPU).
  static std::unique_ptr<CudaDevice> open(std::string &error);
  /// Destroys the stream; the last device of the process also has the
  /// runtime give its cached memory back (mprt_cuda_release_cached), so a
  /// closed session leaves nothing allocated on the device.
  ~CudaDevice();

  /// Device memory from the runtime's pool (mgpuMemAlloc); null on failure.
  void *allocate(size_t bytes);
  void release(void *device);
  /// Synchronous copies between host and device.
  void upload(void *device, const void *host, size_t bytes);
  void download(void *host, const void *device, size_t bytes);
  /// False with `error` when a CUDA call failed since the last check (the
  /// runtime records failures instead of exiting: mprt_cuda_check).
  bool check(std::string &error);
  /// The device pool's peak bytes (in use plus cached) so far.
  uint64_t poolPeakBytes();
  /// The device's name, compute capability and memory; false with `error`
  /// when the query fails.
  bool properties(GpuProperties &out, std::string &error);
  /// f32 products on TF32 tensor cores (cuBLASLt FAST_TF32) or in f32.
  void setTf32(bool enabled);
  bool tf32();

private:
  CudaDevice() = default;
  void *library = nullptr;
  int (*available)(char *, size_t) = nullptr;
  void (*setErrorMode)(int) = nullptr;
  int (*checkErrors)() = nullptr;
  const char *(*lastError)() = nullptr;
  void *(*memAlloc)(uint64_t, void *, bool) = nullptr;
  void (*memFree)(void *, void *) = nullptr;
  void (*memcpy)(void *, void *, size_t, void *) = nullptr;
  void *(*streamCreate)() = nullptr;
  void (*streamDestroy)(void *) = nullptr;
  int (*releaseCached)() = nullptr;
  void (*streamSynchronize)(void *) = nullptr;
  void (*poolStats)(mprt_cuda_pool_stats *) = nullptr;
  int (*deviceInfo)(mprt_cuda_device_info *) = nullptr;
  void (*setTf32Mode)(int32_t) = nullptr;
  int32_t (*tf32Mode)() = nullptr;
  void *stream = nullptr;
  bool counted = false; // in openDevices
};

} // namespace mp

#endif // MP_SESSION_CUDADEVICE_H
