//===- CudaDevice.cpp - libmprt_cuda for mp-run's --device cuda -----------===//

#include "mp/Session/CudaDevice.h"
#include "mprt/mprt_cuda.h" // the types only: the functions come from dlsym

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>

namespace mp {

namespace {

/// Devices open in this process (sessions of the C API may overlap).
std::atomic<int> openDevices{0};

/// Where libmprt_cuda.so is: $MPRT_CUDA_LIBRARY, else next to the binary
/// that holds this code (mp-run in build/bin: ../lib; libmp_session.so in
/// build/lib: the same folder).
std::string libraryPath() {
  if (const char *path = std::getenv("MPRT_CUDA_LIBRARY"))
    return path;
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&libraryPath), &info) || !info.dli_fname)
    return "libmprt_cuda.so";
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(info.dli_fname));
  for (const char *candidate : {"libmprt_cuda.so", "../lib/libmprt_cuda.so"}) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, candidate);
    if (llvm::sys::fs::exists(path))
      return std::string(path);
  }
  return "libmprt_cuda.so";
}

} // namespace

std::unique_ptr<CudaDevice> CudaDevice::open(std::string &error) {
  std::string path = libraryPath();
  // RTLD_GLOBAL: the JIT resolves the step's mgpu* calls in the process.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    const char *why = dlerror();
    error = "--device cuda needs libmprt_cuda.so (built when the CUDA "
            "toolkit's headers are present; MPRT_CUDA_LIBRARY names it): " +
            std::string(why ? why : path);
    return nullptr;
  }
  std::unique_ptr<CudaDevice> device(new CudaDevice());
  device->library = library;
  bool ok = true;
  auto bind = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(library, name));
    if (!fn && ok) {
      error = path + " lacks " + name;
      ok = false;
    }
  };
  bind(device->available, "mprt_cuda_available");
  bind(device->setErrorMode, "mprt_cuda_set_error_mode");
  bind(device->checkErrors, "mprt_cuda_check");
  bind(device->lastError, "mprt_last_error");
  bind(device->memAlloc, "mgpuMemAlloc");
  bind(device->memFree, "mgpuMemFree");
  bind(device->memcpy, "mgpuMemcpy");
  bind(device->streamCreate, "mgpuStreamCreate");
  bind(device->streamSynchronize, "mgpuStreamSynchronize");
  bind(device->streamDestroy, "mgpuStreamDestroy");
  bind(device->releaseCached, "mprt_cuda_release_cached");
  bind(device->poolStats, "mprt_cuda_pool_get_stats");
  bind(device->deviceInfo, "mprt_cuda_get_device_info");
  bind(device->setTf32Mode, "mprt_cuda_gemm_set_tf32");
  bind(device->tf32Mode, "mprt_cuda_gemm_tf32");
  if (!ok)
    return nullptr;
  char why[512] = "";
  if (!device->available(why, sizeof(why))) {
    error = std::string("--device cuda: no usable GPU: ") + why;
    return nullptr;
  }
  // The session checks after every step instead of the process exiting.
  device->setErrorMode(0 /* MPRT_CUDA_ERRORS_RECORD */);
  device->stream = device->streamCreate();
  device->counted = true;
  ++openDevices;
  if (!device->check(error))
    return nullptr;
  return device;
}

CudaDevice::~CudaDevice() {
  if (!counted)
    return; // open() failed before the device was used
  if (stream)
    streamDestroy(stream);
  if (--openDevices == 0)
    releaseCached();
}

void *CudaDevice::allocate(size_t bytes) {
  return memAlloc(bytes ? bytes : 1, stream, false);
}

void CudaDevice::release(void *device) {
  if (device)
    memFree(device, stream);
}

void CudaDevice::upload(void *device, const void *host, size_t bytes) {
  memcpy(device, const_cast<void *>(host), bytes, stream);
  streamSynchronize(stream);
}

void CudaDevice::download(void *host, const void *device, size_t bytes) {
  memcpy(host, const_cast<void *>(device), bytes, stream);
  streamSynchronize(stream);
}

uint64_t CudaDevice::poolPeakBytes() {
  mprt_cuda_pool_stats stats = {};
  poolStats(&stats);
  return stats.peak_bytes;
}

bool CudaDevice::properties(GpuProperties &out, std::string &error) {
  mprt_cuda_device_info info = {};
  if (deviceInfo(&info) != MPRT_OK) {
    error = std::string("CUDA: ") + lastError();
    return false;
  }
  out.name = info.name;
  out.computeMajor = info.compute_major;
  out.computeMinor = info.compute_minor;
  out.multiprocessors = info.multiprocessors;
  out.totalBytes = info.total_bytes;
  return true;
}

void CudaDevice::setTf32(bool enabled) { setTf32Mode(enabled ? 1 : 0); }

bool CudaDevice::tf32() { return tf32Mode() != 0; }

bool CudaDevice::check(std::string &error) {
  if (checkErrors() == 0)
    return true;
  error = std::string("CUDA: ") + lastError();
  return false;
}

} // namespace mp
