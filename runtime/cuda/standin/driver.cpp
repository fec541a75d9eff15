//===- driver.cpp - A CUDA driver stand-in for machines without a GPU -----===//
//
// libcuda.so.1 for tests on machines without a GPU or driver:
// LD_LIBRARY_PATH=build/lib/cuda-standin makes libmprt_cuda's
// dlopen("libcuda.so.1") find it. It has one device ("mp CUDA stand-in",
// sm_90) whose memory is host memory, so copies and memsets really happen;
// kernels do not run. What the host side asks of the driver is checked
// instead: a launched function comes from a loaded module and the module
// has a kernel of that name, launch shapes are legal, device pointers lie in
// live allocations, handles are used between their creation and
// destruction, context pushes and pops pair up. A violation fails the call
// with the error code a real driver gives (or would give where it checks)
// and is recorded:
//
//   cuda-standin: violation: cuMemcpyAsync: destination 0x7e3e4c812000 (64
//   bytes) is not inside a live allocation: it lies in the 512-byte
//   allocation at 0x7e3e4c812000 (#3), which was freed
//
// At exit (a destructor, after every atexit handler and static destructor)
// comes a line per allocation still live (and, if libmprt_cuda is loaded,
// what its pool holds) and the summary:
//
//   cuda-standin: summary: modules_loaded=N functions=N launches=N
//   allocations=N leaks=N invalid_pointers=N violations=N
//
// (one line each). With MPRT_CUDA_STANDIN_LOG=FILE all of it is appended
// to FILE, each violation as it happens, so a process that _exit()s keeps
// them; without it violations go to stderr, and the rest too if there were
// any. MPRT_CUDA_STANDIN_MEMORY_MB=N gives the device N MiB (default 80
// GiB), so tests can run out of it. MPRT_CUDA_STANDIN_PAGEABLE=1 gives the
// device pageable memory access (attribute PAGEABLE_MEMORY_ACCESS = 1): host
// pointers are then accepted where the device reads memory.
// MPRT_CUDA_STANDIN_COMPUTE_CAPABILITY=M.N (e.g. 7.5, 8.0) makes the device
// report that compute capability (attributes COMPUTE_CAPABILITY_MAJOR and
// MINOR, read at each query, so a test may change it in between) instead of
// 9.0, for tests of what is chosen by the hardware; modules are still
// loaded and checked as for sm_90, the target the lowering supports.
// MPRT_CUDA_STANDIN_PTXAS=PATH assembles each PTX module with that ptxas for
// sm_90 (a real check of the PTX, at the cost of a process per module); its
// errors fail the load with CUDA_ERROR_INVALID_PTX and are the JIT log, as with
// a driver.
//
//===----------------------------------------------------------------------===//

#include "image.h"
#include "standin.h"

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

using namespace mp::standin;

namespace {

//===----------------------------------------------------------------------===//
// The device
//===----------------------------------------------------------------------===//

constexpr const char *kDeviceName = "mp CUDA stand-in";
constexpr uint64_t kMaxBlock[3] = {1024, 1024, 64};
constexpr uint64_t kMaxGrid[3] = {2147483647, 65535, 65535};
constexpr uint64_t kMaxThreadsPerBlock = 1024;
constexpr int kDefaultSharedBytes = 48 << 10, kMaxSharedOptin = 227 << 10;
constexpr uintptr_t kPage = 4096;
/// Violation lines written before further ones are only counted.
constexpr uint64_t kMaxLoggedViolations = 10000;

/// The device's memory: $MPRT_CUDA_STANDIN_MEMORY_MB (tests of running out
/// of it), else 80 GiB.
uint64_t totalMemory() {
  static const uint64_t bytes = [] {
    const char *env = getenv("MPRT_CUDA_STANDIN_MEMORY_MB");
    return env && *env ? strtoull(env, nullptr, 10) << 20 : 80ull << 30;
  }();
  return bytes;
}

bool pageableAccess() {
  const char *env = getenv("MPRT_CUDA_STANDIN_PAGEABLE");
  return env && strcmp(env, "1") == 0;
}

/// The compute capability the device reports, as major * 10 + minor:
/// $MPRT_CUDA_STANDIN_COMPUTE_CAPABILITY ("7.5"), else kDeviceArch. Read at
/// each call; a malformed value is reported once and ignored.
int computeCapability() {
  const char *env = getenv("MPRT_CUDA_STANDIN_COMPUTE_CAPABILITY");
  if (!env || !*env)
    return kDeviceArch;
  unsigned major = 0, minor = 0;
  char end = 0;
  if (sscanf(env, "%u.%u%c", &major, &minor, &end) == 2 && major >= 1 &&
      major <= 99 && minor <= 9)
    return static_cast<int>(major * 10 + minor);
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    fprintf(stderr,
            "cuda-standin: MPRT_CUDA_STANDIN_COMPUTE_CAPABILITY=%s is not "
            "MAJOR.MINOR (e.g. 7.5); the device stays at %d.%d\n",
            env, kDeviceArch / 10, kDeviceArch % 10);
  return kDeviceArch;
}

int deviceAttribute(CUdevice_attribute attribute) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    return kMaxThreadsPerBlock;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    return kMaxBlock[attribute - CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
    return kMaxGrid[attribute - CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    return kDefaultSharedBytes;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    return kMaxSharedOptin;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
    return 228 << 10;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
    return 64 << 10;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
    return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
    return 1980000;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    return 2619000;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    return 5120;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    return 50 << 20;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
    return 512;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    return 132;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    return 2048;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
    return 32;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
    return 1024;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
    return 3;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    return computeCapability() / 10;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    return computeCapability() % 10;
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
    return pageableAccess() ? 1 : 0;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
    return 1;
  default:
    return 0;
  }
}

struct ErrorText {
  CUresult code;
  const char *name, *text;
};

const ErrorText kErrors[] = {
#define MP_STANDIN_ERROR(code, text)                                           \
  { code, #code, text }
    MP_STANDIN_ERROR(CUDA_SUCCESS, "no error"),
    MP_STANDIN_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    MP_STANDIN_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    MP_STANDIN_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    MP_STANDIN_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    MP_STANDIN_ERROR(CUDA_ERROR_NO_DEVICE,
                     "no CUDA-capable device is detected"),
    MP_STANDIN_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    MP_STANDIN_ERROR(CUDA_ERROR_INVALID_IMAGE,
                     "device kernel image is invalid"),
    MP_STANDIN_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    MP_STANDIN_ERROR(
        CUDA_ERROR_NO_BINARY_FOR_GPU,
        "no kernel image is available for execution on the device"),
    MP_STANDIN_ERROR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    MP_STANDIN_ERROR(
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        "the provided PTX was compiled with an unsupported toolchain."),
    MP_STANDIN_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    MP_STANDIN_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    MP_STANDIN_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    MP_STANDIN_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS,
                     "an illegal memory access was encountered"),
    MP_STANDIN_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                     "too many resources requested for launch"),
    MP_STANDIN_ERROR(
        CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        "part or all of the requested memory range is already mapped"),
    MP_STANDIN_ERROR(
        CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
        "pointer does not correspond to a registered memory region"),
    MP_STANDIN_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    MP_STANDIN_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef MP_STANDIN_ERROR
};

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

/// Handles are tagged numbers, not pointers to objects: ids are never
/// reused, so a destroyed handle stays recognisable, and one kind of handle
/// passed for another is caught. Nothing dereferences them.
enum class Kind : uintptr_t { Context = 1, Module, Function, Stream, Event };

template <typename Handle> Handle makeHandle(Kind kind, uint64_t id) {
  return reinterpret_cast<Handle>((static_cast<uintptr_t>(kind) << 40) |
                                  (id << 4));
}

/// The id of a handle of `kind`, or 0 if it is not one.
uint64_t handleId(const void *handle, Kind kind) {
  uintptr_t v = reinterpret_cast<uintptr_t>(handle);
  if ((v >> 40) != static_cast<uintptr_t>(kind) || (v & 15))
    return 0;
  return (v & ((uintptr_t(1) << 40) - 1)) >> 4;
}

constexpr uint64_t kPrimaryContextId = 1;

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

struct Allocation {
  uint64_t bytes;
  bool managed;
  uint64_t serial; // the allocation's number, from 1
  void *caller;    // return address of the allocating call
};

struct Module {
  Image image;
};

struct Function {
  uint64_t module;
  std::string name;
  Kernel kernel;
  bool known; // false: from a module whose kernels could not be read
  int maxDynamicShared = kDefaultSharedBytes;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  int primaryRetains = 0;
  /// Device memory is [base, base + reserved): one address range reserved
  /// at the first allocation, handed out upwards with a guard page between
  /// blocks and never reused.
  uintptr_t base = 0, next = 0, reserved = 0;
  std::map<uintptr_t, Allocation> live, freed;
  uint64_t liveBytes = 0;
  std::map<uintptr_t, uint64_t> registered; // cuMemHostRegister ranges
  std::unordered_map<uint64_t, Module> modules;
  std::unordered_map<uint64_t, Function> functions;
  std::map<std::pair<uint64_t, std::string>, uint64_t> functionIds;
  std::unordered_set<uint64_t> streams, events;
  uint64_t nextId = kPrimaryContextId + 1;
  mp_cuda_standin_stats stats = {};
};

State &state() {
  // Never destroyed: the summary is written by a destructor that runs after
  // static destructors, which may still call in.
  static State *s = new State;
  return *s;
}

/// Contexts pushed on this thread and not popped; cuCtxSetCurrent's.
thread_local int pushDepth = 0;
thread_local bool setCurrent = false;
std::atomic<long> pushedOnAllThreads{0};

std::string vformat(const char *format, va_list args) {
  char buffer[1024];
  vsnprintf(buffer, sizeof(buffer), format, args);
  return buffer;
}

std::string format(const char *format, ...)
    __attribute__((format(printf, 1, 2)));
std::string format(const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::string s = vformat(format, args);
  va_end(args);
  return s;
}

/// Appends `text` to $MPRT_CUDA_STANDIN_LOG, else to stderr if `toStderr`.
void writeLog(const std::string &text, bool toStderr) {
  const char *path = getenv("MPRT_CUDA_STANDIN_LOG");
  if (path && *path) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      // One write per call: O_APPEND keeps lines of processes sharing the
      // file whole.
      ssize_t ignored = write(fd, text.data(), text.size());
      (void)ignored;
      close(fd);
      return;
    }
  }
  if (toStderr) {
    fputs(text.c_str(), stderr);
    fflush(stderr);
  }
}

/// Records a violation of `function`; called with the mutex held.
void vrecord(State &s, const char *function, bool pointer, const char *fmt,
             va_list args) {
  s.stats.violations++;
  if (pointer)
    s.stats.invalid_pointers++;
  if (s.stats.violations > kMaxLoggedViolations)
    return;
  std::string line = std::string("cuda-standin: violation: ") + function +
                     ": " + vformat(fmt, args) + "\n";
  if (s.stats.violations == kMaxLoggedViolations)
    line += "cuda-standin: violation: (further violations are counted, not "
            "listed)\n";
  writeLog(line, /*toStderr=*/true);
}

/// Records a violation and returns `code` for the call to fail with.
CUresult fail(State &s, CUresult code, const char *function, const char *fmt,
              ...) __attribute__((format(printf, 4, 5)));
CUresult fail(State &s, CUresult code, const char *function, const char *fmt,
              ...) {
  va_list args;
  va_start(args, fmt);
  vrecord(s, function, /*pointer=*/false, fmt, args);
  va_end(args);
  return code;
}

/// The same, counted as an invalid pointer too.
CUresult failPointer(State &s, CUresult code, const char *function,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
CUresult failPointer(State &s, CUresult code, const char *function,
                     const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vrecord(s, function, /*pointer=*/true, fmt, args);
  va_end(args);
  return code;
}

/// Takes the mutex for the rest of the scope and names `s`.
#define MP_STANDIN_LOCK                                                        \
  State &s = state();                                                          \
  std::lock_guard<std::mutex> lock(s.mutex)

/// Returns from the enclosing function with `expr`'s error, if any.
#define MP_STANDIN_TRY(expr)                                                   \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS)                                                    \
      return r_;                                                               \
  } while (0)

CUresult needInit(State &s, const char *function) {
  if (!s.initialized)
    return fail(s, CUDA_ERROR_NOT_INITIALIZED, function,
                "called before cuInit");
  return CUDA_SUCCESS;
}

/// Calls that act on "the current context" need one on the calling thread.
CUresult needContext(State &s, const char *function) {
  MP_STANDIN_TRY(needInit(s, function));
  if (pushDepth == 0 && !setCurrent)
    return fail(s, CUDA_ERROR_INVALID_CONTEXT, function,
                "no context is current on this thread (cuCtxPushCurrent or "
                "cuCtxSetCurrent first)");
  return CUDA_SUCCESS;
}

CUresult notNull(State &s, const void *p, const char *function,
                 const char *what) {
  if (!p)
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, function, "%s is NULL",
                       what);
  return CUDA_SUCCESS;
}

/// Device ordinals and CUdevice values are both 0 for the one device.
CUresult checkDevice(State &s, CUdevice device, const char *function) {
  MP_STANDIN_TRY(needInit(s, function));
  if (device != 0)
    return fail(s, CUDA_ERROR_INVALID_DEVICE, function,
                "device %d does not exist (there is one device, 0)", device);
  return CUDA_SUCCESS;
}

CUresult checkContext(State &s, CUcontext ctx, const char *function) {
  MP_STANDIN_TRY(needInit(s, function));
  if (handleId(ctx, Kind::Context) != kPrimaryContextId)
    return fail(s, CUDA_ERROR_INVALID_CONTEXT, function,
                "%p is not the primary context (cuDevicePrimaryCtxRetain)",
                (void *)ctx);
  if (s.primaryRetains == 0)
    return fail(s, CUDA_ERROR_INVALID_CONTEXT, function,
                "the primary context was released");
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

bool isDeviceAddress(const State &s, uintptr_t p) {
  return p >= s.base && p < s.base + s.reserved;
}

/// Why [p, p + bytes) is not inside one live allocation (p is a device
/// address); empty when it is.
std::string whyNotLive(const State &s, uintptr_t p, uint64_t bytes) {
  auto it = s.live.upper_bound(p);
  if (it != s.live.begin()) {
    --it;
    uint64_t end = it->first + it->second.bytes;
    if (p < end) {
      if (bytes <= end - p)
        return "";
      return format("it runs %llu bytes past the end of the %llu-byte "
                    "allocation at 0x%llx",
                    (unsigned long long)(bytes - (end - p)),
                    (unsigned long long)it->second.bytes,
                    (unsigned long long)it->first);
    }
  }
  auto f = s.freed.upper_bound(p);
  if (f != s.freed.begin()) {
    --f;
    if (p < f->first + f->second.bytes)
      return format("it lies in the %llu-byte allocation at 0x%llx (#%llu), "
                    "which was freed",
                    (unsigned long long)f->second.bytes,
                    (unsigned long long)f->first,
                    (unsigned long long)f->second.serial);
  }
  return "no allocation was ever there";
}

bool isRegistered(const State &s, uintptr_t p, uint64_t bytes) {
  auto it = s.registered.upper_bound(p);
  if (it == s.registered.begin())
    return false;
  --it;
  return p >= it->first && p - it->first + bytes <= it->second;
}

/// Where a pointer may point: device memory only (kernels, memsets,
/// cuBLASLt; registered host memory and, with pageable access, any host
/// memory count as device-readable), or anywhere (the host side of a copy).
enum class Where { DeviceReadable, Anywhere };

/// Checks that [p, p + bytes) may be used as `what` by `function`.
CUresult checkRange(State &s, const char *function, const char *what,
                    uintptr_t p, uint64_t bytes, Where where) {
  if (!p)
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, function, "%s is NULL",
                       what);
  if (isDeviceAddress(s, p)) {
    std::string why = whyNotLive(s, p, bytes ? bytes : 1);
    if (!why.empty())
      return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                         "%s 0x%llx (%llu bytes) is not inside a live "
                         "allocation: %s",
                         what, (unsigned long long)p, (unsigned long long)bytes,
                         why.c_str());
    return CUDA_SUCCESS;
  }
  if (where == Where::Anywhere || pageableAccess() || isRegistered(s, p, bytes))
    return CUDA_SUCCESS;
  return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                     "%s 0x%llx (%llu bytes) is host memory that is not "
                     "registered, and the device has no pageable memory "
                     "access",
                     what, (unsigned long long)p, (unsigned long long)bytes);
}

bool reserveDeviceMemory(State &s) {
  if (s.base)
    return true;
  // As much address space as the system lets us reserve (no memory is
  // committed until a block is handed out).
  for (int shift = 40; shift >= 32; --shift) {
    void *p = mmap(nullptr, uintptr_t(1) << shift, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      s.base = s.next = reinterpret_cast<uintptr_t>(p);
      s.reserved = uintptr_t(1) << shift;
      return true;
    }
  }
  return false;
}

CUresult allocate(State &s, const char *function, CUdeviceptr *out,
                  size_t bytes, bool managed, void *caller) {
  MP_STANDIN_TRY(needContext(s, function));
  MP_STANDIN_TRY(notNull(s, out, function, "the result pointer"));
  if (bytes == 0)
    return fail(s, CUDA_ERROR_INVALID_VALUE, function, "a 0-byte allocation");
  uint64_t size = (bytes + kPage - 1) / kPage * kPage;
  if (s.liveBytes + bytes > totalMemory() || !reserveDeviceMemory(s) ||
      s.next + size + kPage > s.base + s.reserved ||
      mprotect(reinterpret_cast<void *>(s.next), size,
               PROT_READ | PROT_WRITE) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY; // not a violation
  uintptr_t p = s.next;
  s.next += size + kPage; // a guard page: an overrun on the host faults
  s.stats.allocations++;
  s.live[p] = Allocation{bytes, managed, s.stats.allocations, caller};
  s.liveBytes += bytes;
  *out = p;
  return CUDA_SUCCESS;
}

CUresult release(State &s, const char *function, CUdeviceptr p) {
  MP_STANDIN_TRY(needInit(s, function));
  auto it = s.live.find(p);
  if (it == s.live.end()) {
    if (!p)
      return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                         "the pointer is NULL");
    if (s.freed.count(p))
      return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                         "0x%llx (allocation #%llu) was already freed "
                         "(double free)",
                         (unsigned long long)p,
                         (unsigned long long)s.freed[p].serial);
    std::string why = isDeviceAddress(s, p) ? whyNotLive(s, p, 1) : "";
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                       "0x%llx is not the start of a live allocation%s%s",
                       (unsigned long long)p, why.empty() ? "" : ": ",
                       why.empty() ? "" : why.c_str());
  }
  uint64_t size = (it->second.bytes + kPage - 1) / kPage * kPage;
  void *block = reinterpret_cast<void *>(p);
  // Give the memory back and make the range fault on host access.
  madvise(block, size, MADV_DONTNEED);
  mprotect(block, size, PROT_NONE);
  s.liveBytes -= it->second.bytes;
  s.freed[p] = it->second;
  s.live.erase(it);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

CUresult checkStream(State &s, CUstream stream, const char *function) {
  if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return needContext(s, function); // the current context's null stream
  MP_STANDIN_TRY(needInit(s, function));
  uint64_t id = handleId(stream, Kind::Stream);
  if (!id || id >= s.nextId)
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "%p is not a stream from cuStreamCreate", (void *)stream);
  if (!s.streams.count(id))
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "stream %p was destroyed", (void *)stream);
  return CUDA_SUCCESS;
}

CUresult checkEvent(State &s, CUevent event, const char *function) {
  MP_STANDIN_TRY(needInit(s, function));
  uint64_t id = handleId(event, Kind::Event);
  if (!id || id >= s.nextId)
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "%p is not an event from cuEventCreate", (void *)event);
  if (!s.events.count(id))
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "event %p was destroyed", (void *)event);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Copies and memsets
//===----------------------------------------------------------------------===//

CUresult copy(const char *function, CUdeviceptr dst, Where dstWhere,
              CUdeviceptr src, Where srcWhere, size_t bytes, CUstream stream,
              bool async) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(async ? checkStream(s, stream, function)
                       : needContext(s, function));
  if (bytes == 0)
    return CUDA_SUCCESS;
  MP_STANDIN_TRY(checkRange(s, function, "destination", dst, bytes, dstWhere));
  MP_STANDIN_TRY(checkRange(s, function, "source", src, bytes, srcWhere));
  if (dst < src + bytes && src < dst + bytes)
    return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                "source 0x%llx and destination 0x%llx (%llu bytes) overlap",
                (unsigned long long)src, (unsigned long long)dst,
                (unsigned long long)bytes);
  memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src),
         bytes);
  return CUDA_SUCCESS;
}

/// One side of a 2D copy: its first byte, and where it may point.
CUresult copy2DSide(State &s, const char *function, const char *what,
                    CUmemorytype type, uintptr_t host, CUdeviceptr device,
                    size_t x, size_t y, size_t pitch, size_t width,
                    size_t height, uintptr_t &first) {
  if (type == CU_MEMORYTYPE_ARRAY ||
      (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE &&
       type != CU_MEMORYTYPE_UNIFIED))
    return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                "%s: memory type %d is not handled (no CUDA arrays here)", what,
                type);
  if (height > 1 && pitch < width)
    return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                "%s: pitch %zu is less than the width %zu", what, pitch, width);
  uintptr_t base = type == CU_MEMORYTYPE_HOST ? host : device;
  if (!base)
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, function, "%s is NULL",
                       what);
  first = base + x + y * pitch;
  uint64_t extent = (height - 1) * pitch + width;
  return checkRange(s, function, what, first, extent,
                    type == CU_MEMORYTYPE_DEVICE ? Where::DeviceReadable
                                                 : Where::Anywhere);
}

/// cuMemcpy2D(Async): `Height` rows of `WidthInBytes` bytes, `pitch` apart.
CUresult copy2D(const char *function, const CUDA_MEMCPY2D *m, CUstream stream,
                bool async) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(async ? checkStream(s, stream, function)
                       : needContext(s, function));
  MP_STANDIN_TRY(notNull(s, m, function, "pCopy"));
  if (m->WidthInBytes == 0 || m->Height == 0)
    return CUDA_SUCCESS;
  uintptr_t src, dst;
  MP_STANDIN_TRY(copy2DSide(s, function, "source", m->srcMemoryType,
                            reinterpret_cast<uintptr_t>(m->srcHost),
                            m->srcDevice, m->srcXInBytes, m->srcY, m->srcPitch,
                            m->WidthInBytes, m->Height, src));
  MP_STANDIN_TRY(copy2DSide(s, function, "destination", m->dstMemoryType,
                            reinterpret_cast<uintptr_t>(m->dstHost),
                            m->dstDevice, m->dstXInBytes, m->dstY, m->dstPitch,
                            m->WidthInBytes, m->Height, dst));
  for (size_t row = 0; row < m->Height; ++row)
    memmove(reinterpret_cast<void *>(dst + row * m->dstPitch),
            reinterpret_cast<const void *>(src + row * m->srcPitch),
            m->WidthInBytes);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult fill(const char *function, CUdeviceptr dst, T value, size_t count,
              CUstream stream, bool async) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(async ? checkStream(s, stream, function)
                       : needContext(s, function));
  if (count == 0)
    return CUDA_SUCCESS;
  if (dst % sizeof(T))
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                       "destination 0x%llx is not %zu-byte aligned",
                       (unsigned long long)dst, sizeof(T));
  MP_STANDIN_TRY(checkRange(s, function, "destination", dst, count * sizeof(T),
                            Where::DeviceReadable));
  T *p = reinterpret_cast<T *>(dst);
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Modules and launches
//===----------------------------------------------------------------------===//

/// Assembles PTX `text` with $MPRT_CUDA_STANDIN_PTXAS, if set; false (and
/// ptxas's messages in `log`) when that fails.
bool assembles(const char *text, std::string &log) {
  const char *ptxas = getenv("MPRT_CUDA_STANDIN_PTXAS");
  if (!ptxas || !*ptxas)
    return true;
  if (strchr(ptxas, '\'')) {
    log = "cuda-standin: MPRT_CUDA_STANDIN_PTXAS may not contain a quote";
    return false;
  }
  char path[] = "/tmp/cuda-standin-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    log = "cuda-standin: cannot write the PTX for ptxas";
    return false;
  }
  size_t size = strlen(text);
  bool written = write(fd, text, size) == static_cast<ssize_t>(size);
  close(fd);
  std::string command = format("'%s' -arch=sm_%d -o /dev/null '%s' 2>&1", ptxas,
                               kDeviceArch, path);
  FILE *pipe = written ? popen(command.c_str(), "r") : nullptr;
  log.clear();
  char buffer[512];
  while (pipe && fgets(buffer, sizeof(buffer), pipe))
    log += buffer;
  int status = pipe ? pclose(pipe) : -1;
  unlink(path);
  if (status == 0)
    return true;
  if (log.empty())
    log = format("cuda-standin: %s failed (status %d)", ptxas, status);
  return false;
}

/// Writes `text` into a JIT log buffer of `size` bytes.
void writeJitLog(void *buffer, uintptr_t size, const std::string &text) {
  if (!buffer || size == 0)
    return;
  size_t n = std::min<size_t>(text.size(), size - 1);
  memcpy(buffer, text.data(), n);
  static_cast<char *>(buffer)[n] = 0;
}

CUresult loadModule(const char *function, CUmodule *module, const void *data,
                    unsigned numOptions, CUjit_option *options, void **values) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needContext(s, function));
  MP_STANDIN_TRY(notNull(s, module, function, "the module pointer"));
  MP_STANDIN_TRY(notNull(s, data, function, "the image"));
  if (numOptions && (!options || !values))
    return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                "%u JIT options but no option or value array", numOptions);
  void *errorLog = nullptr;
  uintptr_t errorLogSize = 0;
  for (unsigned i = 0; i < numOptions; ++i) {
    uintptr_t value = reinterpret_cast<uintptr_t>(values[i]);
    switch (options[i]) {
    case CU_JIT_ERROR_LOG_BUFFER:
      errorLog = values[i];
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      errorLogSize = value;
      break;
    case CU_JIT_OPTIMIZATION_LEVEL:
      if (value > 4)
        return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                    "JIT optimization level %llu is not in [0, 4]",
                    (unsigned long long)value);
      break;
    default:
      break;
    }
  }
  if (errorLog && !errorLogSize)
    return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                "CU_JIT_ERROR_LOG_BUFFER without "
                "CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES");
  Image image = readImage(data);
  if (image.result == CUDA_SUCCESS && strcmp(image.kind, "PTX") == 0 &&
      !assembles(static_cast<const char *>(data), image.log))
    image.result = CUDA_ERROR_INVALID_PTX;
  writeJitLog(errorLog, errorLogSize, image.log);
  if (image.result != CUDA_SUCCESS)
    return image.result; // a bad image, not a misuse of the API
  uint64_t id = s.nextId++;
  s.modules[id] = Module{std::move(image)};
  s.stats.modules_loaded++;
  *module = makeHandle<CUmodule>(Kind::Module, id);
  return CUDA_SUCCESS;
}

CUresult checkModule(State &s, CUmodule module, const char *function,
                     uint64_t &id) {
  MP_STANDIN_TRY(needInit(s, function));
  id = handleId(module, Kind::Module);
  if (!id || id >= s.nextId)
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "%p is not a module from cuModuleLoadData(Ex)", (void *)module);
  if (!s.modules.count(id))
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "module %p was unloaded", (void *)module);
  return CUDA_SUCCESS;
}

/// The function behind a handle, if its module is still loaded.
CUresult checkFunction(State &s, CUfunction f, const char *function,
                       Function *&out) {
  MP_STANDIN_TRY(needInit(s, function));
  uint64_t id = handleId(f, Kind::Function);
  auto it = s.functions.find(id);
  if (it == s.functions.end())
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "%p is not a function from cuModuleGetFunction (was a "
                "module loaded?)",
                (void *)f);
  if (!s.modules.count(it->second.module))
    return fail(s, CUDA_ERROR_INVALID_HANDLE, function,
                "kernel '%s' belongs to module %p, which was unloaded",
                it->second.name.c_str(),
                (void *)makeHandle<CUmodule>(Kind::Module, it->second.module));
  out = &it->second;
  return CUDA_SUCCESS;
}

std::string kernelNames(const Image &image) {
  std::string names;
  for (const auto &[name, kernel] : image.kernels)
    names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

/// Checks the arguments of a launch of `f` (kernelParams form).
CUresult checkParams(State &s, const Function &f, void **params, void **extra,
                     const char *function) {
  if (params && extra)
    return fail(s, CUDA_ERROR_INVALID_VALUE, function,
                "kernel '%s': both kernelParams and extra are given",
                f.name.c_str());
  if (!f.known || !f.kernel.paramsKnown || extra)
    return CUDA_SUCCESS;
  const std::vector<KernelParam> &list = f.kernel.params;
  if (!list.empty() && !params)
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                       "kernel '%s' takes %zu parameters but kernelParams "
                       "is NULL",
                       f.name.c_str(), list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!params[i])
      return failPointer(s, CUDA_ERROR_INVALID_VALUE, function,
                         "kernel '%s': kernelParams[%zu] (%s) is NULL",
                         f.name.c_str(), i, list[i].name.c_str());
    if (!list[i].pointer || !list[i].used || list[i].size != 8)
      continue;
    // A pointer the kernel reads: it must point at memory the device can
    // read (where it points to at least one byte). NULL may be a legal
    // "no buffer"; only an address elsewhere is wrong.
    uint64_t value;
    memcpy(&value, params[i], sizeof(value));
    if (!value)
      continue;
    std::string what = format("kernel '%s' parameter %zu (%s)", f.name.c_str(),
                              i, list[i].name.c_str());
    MP_STANDIN_TRY(
        checkRange(s, function, what.c_str(), value, 1, Where::DeviceReadable));
  }
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Exit summary
//===----------------------------------------------------------------------===//

/// "mprt::cuda::poolAllocate" or "libfoo.so+0x1234" for a return address.
std::string describeCaller(void *address) {
  Dl_info info;
  if (!address || !dladdr(address, &info))
    return "";
  if (info.dli_sname) {
    int status = 0;
    char *demangled =
        abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string name = status == 0 && demangled ? demangled : info.dli_sname;
    free(demangled);
    return name.substr(0, name.find('('));
  }
  const char *file = info.dli_fname ? strrchr(info.dli_fname, '/') : nullptr;
  return format(
      "%s+0x%llx", file ? file + 1 : (info.dli_fname ? info.dli_fname : "?"),
      (unsigned long long)(reinterpret_cast<uintptr_t>(address) -
                           reinterpret_cast<uintptr_t>(info.dli_fbase)));
}

/// What libmprt_cuda's pool holds, when that library is loaded globally:
/// blocks it keeps cached on purpose are among the leaks.
std::string poolNote() {
  // mprt_cuda_pool_stats is five uint64_t: in use, cached, peak, ...
  using GetStats = void (*)(uint64_t *);
  auto get = reinterpret_cast<GetStats>(
      dlsym(RTLD_DEFAULT, "mprt_cuda_pool_get_stats"));
  if (!get)
    return "";
  uint64_t stats[5] = {};
  get(stats);
  return format("cuda-standin: note: libmprt_cuda's pool holds %llu bytes in "
                "use and %llu bytes of cached free blocks\n",
                (unsigned long long)stats[0], (unsigned long long)stats[1]);
}

/// Runs after every atexit handler and static destructor (the loader's
/// fini), so what the program frees at exit is not counted as leaked.
__attribute__((destructor)) void writeSummary() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (long pushed = pushedOnAllThreads.load())
    fail(s, CUDA_SUCCESS, "exit",
         "%ld cuCtxPushCurrent call(s) were never popped", pushed);
  std::string text;
  constexpr size_t kMaxLeakLines = 20;
  size_t listed = 0;
  for (const auto &[p, a] : s.live) {
    if (listed++ == kMaxLeakLines) {
      text += format("cuda-standin: leak: ... and %zu more\n",
                     s.live.size() - kMaxLeakLines);
      break;
    }
    std::string caller = describeCaller(a.caller);
    text += format("cuda-standin: leak: 0x%llx (%llu bytes, %s #%llu%s%s) "
                   "was never freed\n",
                   (unsigned long long)p, (unsigned long long)a.bytes,
                   a.managed ? "managed allocation" : "allocation",
                   (unsigned long long)a.serial, caller.empty() ? "" : ", by ",
                   caller.c_str());
  }
  if (!s.live.empty())
    text += poolNote();
  text += format("cuda-standin: summary: modules_loaded=%llu functions=%llu "
                 "launches=%llu allocations=%llu leaks=%zu "
                 "invalid_pointers=%llu violations=%llu\n",
                 (unsigned long long)s.stats.modules_loaded,
                 (unsigned long long)s.stats.functions,
                 (unsigned long long)s.stats.launches,
                 (unsigned long long)s.stats.allocations, s.live.size(),
                 (unsigned long long)s.stats.invalid_pointers,
                 (unsigned long long)s.stats.violations);
  writeLog(text, /*toStderr=*/s.stats.violations > 0);
}

} // namespace

//===----------------------------------------------------------------------===//
// The driver API
//===----------------------------------------------------------------------===//

extern "C" {

CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) {
    MP_STANDIN_LOCK;
    return notNull(s, pStr, "cuGetErrorName", "pStr");
  }
  for (const ErrorText &entry : kErrors)
    if (entry.code == error) {
      *pStr = entry.name;
      return CUDA_SUCCESS;
    }
  *pStr = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) {
    MP_STANDIN_LOCK;
    return notNull(s, pStr, "cuGetErrorString", "pStr");
  }
  for (const ErrorText &entry : kErrors)
    if (entry.code == error) {
      *pStr = entry.text;
      return CUDA_SUCCESS;
    }
  *pStr = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned int flags) {
  MP_STANDIN_LOCK;
  if (flags != 0)
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuInit", "flags %u are not 0",
                flags);
  s.initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(notNull(s, version, "cuDriverGetVersion", "version"));
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needInit(s, "cuDeviceGetCount"));
  MP_STANDIN_TRY(notNull(s, count, "cuDeviceGetCount", "count"));
  *count = 1;
  return CUDA_SUCCESS;
}

int mp_cuda_standin_compute_capability(void) { return computeCapability(); }

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkDevice(s, ordinal, "cuDeviceGet"));
  MP_STANDIN_TRY(notNull(s, device, "cuDeviceGet", "device"));
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkDevice(s, dev, "cuDeviceGetName"));
  MP_STANDIN_TRY(notNull(s, name, "cuDeviceGetName", "name"));
  if (len <= 0)
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName",
                "len %d is not positive", len);
  snprintf(name, len, "%s", kDeviceName);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkDevice(s, dev, "cuDeviceTotalMem"));
  MP_STANDIN_TRY(notNull(s, bytes, "cuDeviceTotalMem", "bytes"));
  *bytes = totalMemory();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                              CUdevice dev) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkDevice(s, dev, "cuDeviceGetAttribute"));
  MP_STANDIN_TRY(notNull(s, pi, "cuDeviceGetAttribute", "pi"));
  if (attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute",
                "attribute %d does not exist", attrib);
  *pi = deviceAttribute(attrib);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkDevice(s, dev, "cuDevicePrimaryCtxRetain"));
  MP_STANDIN_TRY(notNull(s, pctx, "cuDevicePrimaryCtxRetain", "pctx"));
  s.primaryRetains++;
  *pctx = makeHandle<CUcontext>(Kind::Context, kPrimaryContextId);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkDevice(s, dev, "cuDevicePrimaryCtxRelease"));
  if (s.primaryRetains == 0)
    return fail(s, CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease",
                "the primary context is not retained");
  s.primaryRetains--;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkContext(s, ctx, "cuCtxPushCurrent"));
  pushDepth++;
  pushedOnAllThreads++;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needInit(s, "cuCtxPopCurrent"));
  if (pushDepth == 0)
    return fail(s, CUDA_ERROR_INVALID_CONTEXT, "cuCtxPopCurrent",
                "no context was pushed on this thread (a pop without its "
                "cuCtxPushCurrent)");
  pushDepth--;
  pushedOnAllThreads--;
  if (pctx)
    *pctx = makeHandle<CUcontext>(Kind::Context, kPrimaryContextId);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needInit(s, "cuCtxGetCurrent"));
  MP_STANDIN_TRY(notNull(s, pctx, "cuCtxGetCurrent", "pctx"));
  *pctx = pushDepth || setCurrent
              ? makeHandle<CUcontext>(Kind::Context, kPrimaryContextId)
              : nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  MP_STANDIN_LOCK;
  if (ctx)
    MP_STANDIN_TRY(checkContext(s, ctx, "cuCtxSetCurrent"));
  setCurrent = ctx != nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needContext(s, "cuCtxGetDevice"));
  MP_STANDIN_TRY(notNull(s, device, "cuCtxGetDevice", "device"));
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  MP_STANDIN_LOCK;
  return needContext(s, "cuCtxSynchronize");
}

//===----------------------------------------------------------------------===//
// Modules and launches
//===----------------------------------------------------------------------===//

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  return loadModule("cuModuleLoadData", module, image, 0, nullptr, nullptr);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int numOptions, CUjit_option *options,
                            void **optionValues) {
  return loadModule("cuModuleLoadDataEx", module, image, numOptions, options,
                    optionValues);
}

CUresult cuModuleUnload(CUmodule hmod) {
  MP_STANDIN_LOCK;
  uint64_t id;
  MP_STANDIN_TRY(checkModule(s, hmod, "cuModuleUnload", id));
  s.modules.erase(id);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                             const char *name) {
  MP_STANDIN_LOCK;
  constexpr const char *fn = "cuModuleGetFunction";
  uint64_t moduleId;
  MP_STANDIN_TRY(checkModule(s, hmod, fn, moduleId));
  MP_STANDIN_TRY(notNull(s, hfunc, fn, "hfunc"));
  MP_STANDIN_TRY(notNull(s, name, fn, "name"));
  const Image &image = s.modules[moduleId].image;
  auto kernel = image.kernels.find(name);
  if (kernel == image.kernels.end() && !image.anyName)
    return fail(s, CUDA_ERROR_NOT_FOUND, fn,
                "module %p (%s) has no kernel '%s' (it has: %s)", (void *)hmod,
                image.kind, name, kernelNames(image).c_str());
  // One handle per module and name, as the driver does.
  uint64_t &id = s.functionIds[{moduleId, name}];
  if (!id) {
    id = s.nextId++;
    Function f;
    f.module = moduleId;
    f.name = name;
    f.known = kernel != image.kernels.end();
    if (f.known)
      f.kernel = kernel->second;
    s.functions[id] = f;
    s.stats.functions++;
  }
  *hfunc = makeHandle<CUfunction>(Kind::Function, id);
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                            int value) {
  MP_STANDIN_LOCK;
  Function *f;
  MP_STANDIN_TRY(checkFunction(s, hfunc, "cuFuncSetAttribute", f));
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > kMaxSharedOptin)
      return fail(s, CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute",
                  "%d bytes of dynamic shared memory is more than the "
                  "device's %d",
                  value, kMaxSharedOptin);
    f->maxDynamicShared = value;
  }
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                            CUfunction hfunc) {
  MP_STANDIN_LOCK;
  Function *f;
  MP_STANDIN_TRY(checkFunction(s, hfunc, "cuFuncGetAttribute", f));
  MP_STANDIN_TRY(notNull(s, pi, "cuFuncGetAttribute", "pi"));
  const uint32_t *max = f->kernel.maxThreads;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *pi = max[0] ? static_cast<int>(max[0] * max[1] * max[2])
                 : static_cast<int>(kMaxThreadsPerBlock);
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *pi = f->maxDynamicShared;
    break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *pi = 32;
    break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
    *pi = kDeviceArch;
    break;
  default:
    *pi = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes,
                        CUstream hStream, void **kernelParams, void **extra) {
  MP_STANDIN_LOCK;
  constexpr const char *fn = "cuLaunchKernel";
  Function *function;
  MP_STANDIN_TRY(checkFunction(s, f, fn, function));
  const char *name = function->name.c_str();
  uint64_t grid[3] = {gridDimX, gridDimY, gridDimZ};
  uint64_t block[3] = {blockDimX, blockDimY, blockDimZ};
  uint64_t threads = block[0] * block[1] * block[2];
  bool legal = threads > 0 && threads <= kMaxThreadsPerBlock;
  for (int i = 0; i < 3; ++i)
    legal = legal && grid[i] >= 1 && grid[i] <= kMaxGrid[i] && block[i] >= 1 &&
            block[i] <= kMaxBlock[i];
  if (!legal)
    return fail(s, CUDA_ERROR_INVALID_VALUE, fn,
                "kernel '%s': grid (%u, %u, %u) block (%u, %u, %u) is not a "
                "legal launch (grid <= (2^31-1, 65535, 65535), block <= "
                "(1024, 1024, 64), at most 1024 threads, none 0)",
                name, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                blockDimZ);
  const Kernel &kernel = function->kernel;
  const uint32_t *max = kernel.maxThreads, *req = kernel.reqThreads;
  if (max[0] && threads > uint64_t(max[0]) * max[1] * max[2])
    return fail(s, CUDA_ERROR_INVALID_VALUE, fn,
                "kernel '%s': block (%u, %u, %u) has more threads than its "
                ".maxntid %u, %u, %u",
                name, blockDimX, blockDimY, blockDimZ, max[0], max[1], max[2]);
  if (req[0] &&
      (block[0] != req[0] || block[1] != req[1] || block[2] != req[2]))
    return fail(s, CUDA_ERROR_INVALID_VALUE, fn,
                "kernel '%s': block (%u, %u, %u) is not its .reqntid %u, %u, "
                "%u",
                name, blockDimX, blockDimY, blockDimZ, req[0], req[1], req[2]);
  if (sharedMemBytes > static_cast<unsigned>(function->maxDynamicShared))
    return fail(s, CUDA_ERROR_INVALID_VALUE, fn,
                "kernel '%s': %u bytes of dynamic shared memory, more than "
                "the %d allowed (cuFuncSetAttribute raises it)",
                name, sharedMemBytes, function->maxDynamicShared);
  MP_STANDIN_TRY(checkStream(s, hStream, fn));
  MP_STANDIN_TRY(checkParams(s, *function, kernelParams, extra, fn));
  s.stats.launches++;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needContext(s, "cuStreamCreate"));
  MP_STANDIN_TRY(notNull(s, phStream, "cuStreamCreate", "phStream"));
  if (flags & ~unsigned(CU_STREAM_NON_BLOCKING))
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuStreamCreate",
                "unknown flags 0x%x", flags);
  uint64_t id = s.nextId++;
  s.streams.insert(id);
  *phStream = makeHandle<CUstream>(Kind::Stream, id);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) {
  MP_STANDIN_LOCK;
  if (!hStream || hStream == CU_STREAM_LEGACY ||
      hStream == CU_STREAM_PER_THREAD)
    return fail(s, CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy",
                "the null stream cannot be destroyed");
  MP_STANDIN_TRY(checkStream(s, hStream, "cuStreamDestroy"));
  s.streams.erase(handleId(hStream, Kind::Stream));
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  MP_STANDIN_LOCK;
  return checkStream(s, hStream, "cuStreamSynchronize");
}

CUresult cuStreamQuery(CUstream hStream) {
  MP_STANDIN_LOCK;
  return checkStream(s, hStream, "cuStreamQuery");
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                           unsigned int flags) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkStream(s, hStream, "cuStreamWaitEvent"));
  MP_STANDIN_TRY(checkEvent(s, hEvent, "cuStreamWaitEvent"));
  if (flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL))
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuStreamWaitEvent",
                "unknown flags 0x%x", flags);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int flags) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needContext(s, "cuEventCreate"));
  MP_STANDIN_TRY(notNull(s, phEvent, "cuEventCreate", "phEvent"));
  unsigned known =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if ((flags & ~known) ||
      ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuEventCreate", "bad flags 0x%x",
                flags);
  uint64_t id = s.nextId++;
  s.events.insert(id);
  *phEvent = makeHandle<CUevent>(Kind::Event, id);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkEvent(s, hEvent, "cuEventDestroy"));
  s.events.erase(handleId(hEvent, Kind::Event));
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(checkEvent(s, hEvent, "cuEventRecord"));
  return checkStream(s, hStream, "cuEventRecord");
}

/// Work is done when it is queued, so events are always complete (an event
/// never recorded is complete too, as with the driver).
CUresult cuEventSynchronize(CUevent hEvent) {
  MP_STANDIN_LOCK;
  return checkEvent(s, hEvent, "cuEventSynchronize");
}

CUresult cuEventQuery(CUevent hEvent) {
  MP_STANDIN_LOCK;
  return checkEvent(s, hEvent, "cuEventQuery");
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  MP_STANDIN_LOCK;
  return allocate(s, "cuMemAlloc", dptr, bytesize, /*managed=*/false,
                  __builtin_return_address(0));
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags) {
  MP_STANDIN_LOCK;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
    return fail(s, CUDA_ERROR_INVALID_VALUE, "cuMemAllocManaged",
                "flags 0x%x are not CU_MEM_ATTACH_GLOBAL or _HOST", flags);
  return allocate(s, "cuMemAllocManaged", dptr, bytesize, /*managed=*/true,
                  __builtin_return_address(0));
}

CUresult cuMemFree(CUdeviceptr dptr) {
  MP_STANDIN_LOCK;
  return release(s, "cuMemFree", dptr);
}

CUresult cuMemGetInfo(size_t *free, size_t *total) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needContext(s, "cuMemGetInfo"));
  MP_STANDIN_TRY(notNull(s, free, "cuMemGetInfo", "free"));
  MP_STANDIN_TRY(notNull(s, total, "cuMemGetInfo", "total"));
  *total = totalMemory();
  *free = totalMemory() - s.liveBytes;
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int flags) {
  MP_STANDIN_LOCK;
  constexpr const char *fn = "cuMemHostRegister";
  MP_STANDIN_TRY(needContext(s, fn));
  uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  if (!p || bytesize == 0)
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, fn,
                       "%p (%zu bytes) is an empty range", p, bytesize);
  unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (flags & ~known)
    return fail(s, CUDA_ERROR_INVALID_VALUE, fn, "unknown flags 0x%x", flags);
  if (isDeviceAddress(s, begin))
    return failPointer(s, CUDA_ERROR_INVALID_VALUE, fn,
                       "%p is device memory, not host memory", p);
  // Overlapping an earlier registration is an error the caller handles.
  auto it = s.registered.lower_bound(begin + bytesize);
  if (it != s.registered.begin() &&
      std::prev(it)->first + std::prev(it)->second > begin)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  s.registered[begin] = bytesize;
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p) {
  MP_STANDIN_LOCK;
  MP_STANDIN_TRY(needContext(s, "cuMemHostUnregister"));
  if (!s.registered.erase(reinterpret_cast<uintptr_t>(p)))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; // reported to the caller
  return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy("cuMemcpy", dst, Where::Anywhere, src, Where::Anywhere, ByteCount,
              nullptr, false);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                       CUstream hStream) {
  return copy("cuMemcpyAsync", dst, Where::Anywhere, src, Where::Anywhere,
              ByteCount, hStream, true);
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
                      size_t ByteCount) {
  return copy("cuMemcpyHtoD", dstDevice, Where::DeviceReadable,
              reinterpret_cast<CUdeviceptr>(srcHost), Where::Anywhere,
              ByteCount, nullptr, false);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                           size_t ByteCount, CUstream hStream) {
  return copy("cuMemcpyHtoDAsync", dstDevice, Where::DeviceReadable,
              reinterpret_cast<CUdeviceptr>(srcHost), Where::Anywhere,
              ByteCount, hStream, true);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy("cuMemcpyDtoH", reinterpret_cast<CUdeviceptr>(dstHost),
              Where::Anywhere, srcDevice, Where::DeviceReadable, ByteCount,
              nullptr, false);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice,
                           size_t ByteCount, CUstream hStream) {
  return copy("cuMemcpyDtoHAsync", reinterpret_cast<CUdeviceptr>(dstHost),
              Where::Anywhere, srcDevice, Where::DeviceReadable, ByteCount,
              hStream, true);
}

CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                      size_t ByteCount) {
  return copy("cuMemcpyDtoD", dstDevice, Where::DeviceReadable, srcDevice,
              Where::DeviceReadable, ByteCount, nullptr, false);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                           size_t ByteCount, CUstream hStream) {
  return copy("cuMemcpyDtoDAsync", dstDevice, Where::DeviceReadable, srcDevice,
              Where::DeviceReadable, ByteCount, hStream, true);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *pCopy) {
  return copy2D("cuMemcpy2D", pCopy, nullptr, false);
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
  return copy2D("cuMemcpy2DAsync", pCopy, hStream, true);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fill("cuMemsetD8", dstDevice, uc, N, nullptr, false);
}

CUresult cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return fill("cuMemsetD16", dstDevice, us, N, nullptr, false);
}

CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return fill("cuMemsetD32", dstDevice, ui, N, nullptr, false);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                         CUstream hStream) {
  return fill("cuMemsetD8Async", dstDevice, uc, N, hStream, true);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                          CUstream hStream) {
  return fill("cuMemsetD16Async", dstDevice, us, N, hStream, true);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                          CUstream hStream) {
  return fill("cuMemsetD32Async", dstDevice, ui, N, hStream, true);
}

//===----------------------------------------------------------------------===//
// The stand-in's own API (standin.h)
//===----------------------------------------------------------------------===//

void mp_cuda_standin_get_stats(mp_cuda_standin_stats *out) {
  MP_STANDIN_LOCK;
  if (!out)
    return;
  *out = s.stats;
  out->live_allocations = s.live.size();
  out->live_bytes = s.liveBytes;
}

int mp_cuda_standin_check_range(const void *ptr, uint64_t bytes,
                                const char *function, const char *what) {
  MP_STANDIN_LOCK;
  return checkRange(s, function, what, reinterpret_cast<uintptr_t>(ptr), bytes,
                    Where::DeviceReadable) == CUDA_SUCCESS;
}

int mp_cuda_standin_check_stream(CUstream stream, const char *function) {
  MP_STANDIN_LOCK;
  // cuBLASLt work on the null stream uses the context current when the call
  // is made, like any driver call.
  return checkStream(s, stream, function) == CUDA_SUCCESS;
}

void mp_cuda_standin_violation(const char *function, int pointer,
                               const char *format, ...) {
  MP_STANDIN_LOCK;
  va_list args;
  va_start(args, format);
  vrecord(s, function, pointer != 0, format, args);
  va_end(args);
}

} // extern "C"
