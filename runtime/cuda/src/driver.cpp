//===- driver.cpp - Loading the CUDA driver; errors of mgpu calls --------===//

#include "driver.h"
#include "../../src/internal.h"
#include "mprt/mgpu.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <unistd.h>

namespace mprt::cuda {
namespace {

#define MPRT_CUDA_STRINGIZE2(x) #x
#define MPRT_CUDA_STRINGIZE(x) MPRT_CUDA_STRINGIZE2(x)

struct DriverState {
  Driver driver;
  bool ok = false;
  std::string why;
  CUcontext context = nullptr;
  CUdevice device = 0;
};

std::atomic<int> requestedDevice{0};

// resultText for the driver being loaded (state() is not ready then).
std::string describe(const Driver &d, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}
std::atomic<bool> initialized{false};

DriverState &state() {
  // Never destroyed: other libraries' static destructors (the JIT's module
  // unload) may still call in at exit.
  static DriverState *s = [] {
    auto *st = new DriverState;
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *err = dlerror();
      st->why = std::string("cannot load the CUDA driver libcuda.so.1: ") +
                (err ? err : "unknown dlopen error");
      return st;
    }
    Driver &d = st->driver;
#define MPRT_CUDA_LOAD(name)                                                   \
  d.name = reinterpret_cast<decltype(d.name)>(                                 \
      dlsym(handle, MPRT_CUDA_STRINGIZE(name)));                               \
  if (!d.name) {                                                               \
    st->why = "the CUDA driver libcuda.so.1 lacks " MPRT_CUDA_STRINGIZE(       \
        name) " (driver too old?)";                                            \
    return st;                                                                 \
  }
    MPRT_CUDA_DRIVER_FUNCTIONS(MPRT_CUDA_LOAD)
#undef MPRT_CUDA_LOAD
    CUresult r = d.cuInit(0);
    if (r != CUDA_SUCCESS) {
      st->why = "cuInit failed: " + describe(d, r);
      return st;
    }
    int count = 0;
    r = d.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
      st->why = "cuDeviceGetCount failed: " + describe(d, r);
      return st;
    }
    int ordinal = requestedDevice.load();
    if (count == 0) {
      st->why = "no CUDA device";
      return st;
    }
    if (ordinal < 0 || ordinal >= count) {
      st->why = "CUDA device " + std::to_string(ordinal) + " does not exist (" +
                std::to_string(count) + " found)";
      return st;
    }
    CUdevice device = 0;
    r = d.cuDeviceGet(&device, ordinal);
    if (r == CUDA_SUCCESS)
      r = d.cuDevicePrimaryCtxRetain(&st->context, device);
    st->device = device;
    if (r != CUDA_SUCCESS) {
      st->why = "cannot open CUDA device " + std::to_string(ordinal) + ": " +
                describe(d, r);
      return st;
    }
    st->ok = true;
    return st;
  }();
  initialized = true;
  return *s;
}

// The pending mgpu error: the first message, and how many followed.
std::mutex errorMutex;
std::string pendingError;
unsigned pendingCount = 0;
std::atomic<bool> pending{false};

mprt_cuda_error_mode initialMode() {
  const char *env = getenv("MPRT_CUDA_ERRORS");
  if (env && strcmp(env, "record") == 0)
    return MPRT_CUDA_ERRORS_RECORD;
  return MPRT_CUDA_ERRORS_EXIT;
}
std::atomic<int> errorMode{initialMode()};

} // namespace

const Driver *driver(std::string *why) {
  DriverState &s = state();
  if (!s.ok) {
    if (why)
      *why = s.why;
    return nullptr;
  }
  return &s.driver;
}

CUcontext primaryContext() { return state().context; }

CUdevice currentDevice() { return state().device; }

std::string resultText(CUresult result) {
  return describe(state().driver, result);
}

ScopedContext::ScopedContext(const char *function) {
  std::string why;
  const Driver *d = driver(&why);
  if (!d) {
    recordError("%s: no usable GPU: %s", function, why.c_str());
    return;
  }
  pushed = check(d->cuCtxPushCurrent(primaryContext()), function,
                 "cuCtxPushCurrent");
}

ScopedContext::~ScopedContext() {
  if (pushed) {
    CUcontext previous;
    state().driver.cuCtxPopCurrent(&previous);
  }
}

void recordError(const char *format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  fprintf(stderr, "mprt-cuda: error: %s\n", message);
  if (errorMode.load() == MPRT_CUDA_ERRORS_EXIT) {
    fprintf(stderr, "mprt-cuda: exiting (set MPRT_CUDA_ERRORS=record or "
                    "call mprt_cuda_set_error_mode to handle errors)\n");
    // Not abort(): a JIT's crash handler would dress a clean error up as a
    // crash. What the program printed so far is kept.
    fflush(nullptr);
    _exit(1);
  }
  std::lock_guard<std::mutex> lock(errorMutex);
  if (pendingCount++ == 0)
    pendingError = message;
  pending = true;
}

bool check(CUresult result, const char *function, const char *what) {
  if (result == CUDA_SUCCESS)
    return true;
  recordError("%s: %s failed: %s", function, what, resultText(result).c_str());
  return false;
}

bool errorPending() { return pending.load(); }

} // namespace mprt::cuda

using namespace mprt::cuda;

extern "C" {

int mprt_cuda_available(char *why, size_t n) {
  std::string reason;
  bool ok = driver(&reason) != nullptr;
  if (why && n > 0) {
    snprintf(why, n, "%s", ok ? "" : reason.c_str());
  }
  return ok ? 1 : 0;
}

void mprt_cuda_set_error_mode(mprt_cuda_error_mode mode) {
  errorMode = mode == MPRT_CUDA_ERRORS_EXIT ? MPRT_CUDA_ERRORS_EXIT
                                            : MPRT_CUDA_ERRORS_RECORD;
}

mprt_status mprt_cuda_check(void) {
  mprt::clearError();
  std::lock_guard<std::mutex> lock(errorMutex);
  if (pendingCount == 0)
    return MPRT_OK;
  unsigned more = pendingCount - 1;
  std::string message = pendingError;
  pendingError.clear();
  pendingCount = 0;
  pending = false;
  if (more)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s (and %u later error%s)",
                      message.c_str(), more, more == 1 ? "" : "s");
  return mprt::fail(MPRT_ERROR_DEVICE, "%s", message.c_str());
}

mprt_status mprt_cuda_get_device_info(mprt_cuda_device_info *out) {
  constexpr const char *fn = "mprt_cuda_get_device_info";
  mprt::clearError();
  if (!out)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "%s: out is NULL", fn);
  std::string why;
  const Driver *d = driver(&why);
  if (!d)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: no usable GPU: %s", fn,
                      why.c_str());
  // Filled aside: `out` is only written when every query succeeded.
  mprt_cuda_device_info info;
  memset(&info, 0, sizeof(info));
  CUdevice device = currentDevice();
  CUresult r = d->cuDeviceGetName(info.name, sizeof(info.name), device);
  if (r != CUDA_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuDeviceGetName failed: %s", fn,
                      resultText(r).c_str());
  info.name[sizeof(info.name) - 1] = 0;
  const struct {
    CUdevice_attribute attribute;
    const char *name;
    int32_t *to;
  } attributes[] = {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                     "COMPUTE_CAPABILITY_MAJOR", &info.compute_major},
                    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                     "COMPUTE_CAPABILITY_MINOR", &info.compute_minor},
                    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                     "MULTIPROCESSOR_COUNT", &info.multiprocessors}};
  for (const auto &a : attributes) {
    int value = 0;
    r = d->cuDeviceGetAttribute(&value, a.attribute, device);
    if (r != CUDA_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "%s: cuDeviceGetAttribute(%s) failed: %s", fn, a.name,
                        resultText(r).c_str());
    *a.to = value;
  }
  size_t bytes = 0;
  r = d->cuDeviceTotalMem(&bytes, device);
  if (r != CUDA_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuDeviceTotalMem failed: %s", fn,
                      resultText(r).c_str());
  info.total_bytes = bytes;
  *out = info;
  return MPRT_OK;
}

/// MLIR's gpu.set_default_device. One device per process here: choosing
/// another after the driver started is recorded as an error.
void mgpuSetDefaultDevice(int32_t device) {
  if (!initialized.load()) {
    requestedDevice = device;
    return;
  }
  if (device != requestedDevice.load())
    recordError("mgpuSetDefaultDevice(%d): device %d is already in use; "
                "libmprt_cuda drives one device per process",
                device, requestedDevice.load());
}

} // extern "C"
