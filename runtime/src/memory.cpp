//===- memory.cpp - counted heap for compiled code ------------------------===//
//
// Compiled code allocates its buffers (activations, gradients, low-precision
// copies) with malloc/free; a driver that routes those two symbols here
// learns how many bytes a step holds at its peak. Each block carries a
// 16-byte header with its size, so alignment stays what malloc gives.
//
// Freed blocks of 64 KiB and more are kept for reuse: a training step
// allocates the same big buffers every iteration, and malloc returns blocks
// above its mmap threshold to the kernel, so each step page-faulted and
// zeroed all of them again (2.5x the digits MLP's step time in bf16).
//
//===----------------------------------------------------------------------===//

#include "mprt/mprt.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kHeader = 16; // keeps malloc's 16-byte alignment

std::atomic<int64_t> current{0}, peak{0}, total{0};

void raisePeak(int64_t now) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen &&
         !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed))
    ;
}

constexpr size_t kReuseMin = 64 * 1024;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPRT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MPRT_ASAN 1
#endif

/// The most bytes kept for reuse: $MPRT_HEAP_CACHE_MB (0 turns reuse off),
/// 1024 MiB by default. ASan builds keep nothing, so that a use after free
/// is still reported.
size_t reuseLimit() {
#ifdef MPRT_ASAN
  return 0;
#else
  static const size_t limit = [] {
    size_t megabytes = 1024;
    if (const char *text = std::getenv("MPRT_HEAP_CACHE_MB")) {
      char *end = nullptr;
      long long value = std::strtoll(text, &end, 10);
      if (end == text || *end != '\0' || value < 0 || value > (1ll << 30))
        std::fprintf(stderr,
                     "mprt: MPRT_HEAP_CACHE_MB='%s' is not a number of MiB "
                     "in [0, 2^30]; using %zu\n",
                     text, megabytes);
      else
        megabytes = static_cast<size_t>(value);
    }
    return megabytes << 20;
  }();
  return limit;
#endif
}

/// Freed big blocks (with their headers) by exact size.
struct ReuseCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<char *>> blocks;
  size_t bytes = 0;

  char *take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = blocks.find(size);
    if (found == blocks.end() || found->second.empty())
      return nullptr;
    char *block = found->second.back();
    found->second.pop_back();
    bytes -= size + kHeader;
    return block;
  }

  bool keep(char *block, size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    if (bytes + size + kHeader > reuseLimit())
      return false;
    blocks[size].push_back(block);
    bytes += size + kHeader;
    return true;
  }

  int64_t release() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[size, list] : blocks)
      for (char *block : list)
        std::free(block);
    blocks.clear();
    int64_t released = static_cast<int64_t>(bytes);
    bytes = 0;
    return released;
  }

  ~ReuseCache() { release(); }
};

ReuseCache &reuseCache() {
  static ReuseCache cache;
  return cache;
}

} // namespace

extern "C" {

void *mprt_counted_malloc(size_t size) {
  if (size > SIZE_MAX - kHeader)
    return nullptr;
  char *block = size >= kReuseMin ? reuseCache().take(size) : nullptr;
  if (!block)
    block = static_cast<char *>(std::malloc(size + kHeader));
  if (!block)
    return nullptr;
  std::memcpy(block, &size, sizeof(size));
  int64_t bytes = static_cast<int64_t>(size);
  raisePeak(current.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  total.fetch_add(bytes, std::memory_order_relaxed);
  return block + kHeader;
}

void mprt_counted_free(void *pointer) {
  if (!pointer)
    return;
  char *block = static_cast<char *>(pointer) - kHeader;
  size_t size;
  std::memcpy(&size, block, sizeof(size));
  current.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
  if (size < kReuseMin || !reuseCache().keep(block, size))
    std::free(block);
}

int64_t mprt_memory_trim(void) { return reuseCache().release(); }

void mprt_memory_stats(mprt_memory *out) {
  if (!out)
    return;
  out->current_bytes = current.load(std::memory_order_relaxed);
  out->peak_bytes = peak.load(std::memory_order_relaxed);
  out->allocated_bytes = total.load(std::memory_order_relaxed);
}

void mprt_memory_reset_peak(void) {
  peak.store(current.load(std::memory_order_relaxed),
             std::memory_order_relaxed);
}

} // extern "C"
