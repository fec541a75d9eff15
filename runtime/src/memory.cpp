//===- memory.cpp - counted heap for compiled code ------------------------===//
//
// Compiled code allocates its buffers (activations, gradients, low-precision
// copies) with malloc/free; a driver that routes those two symbols here
// learns how many bytes a step holds at its peak. Each block carries a
// 16-byte header with its size, so alignment stays what malloc gives.
//
//===----------------------------------------------------------------------===//

#include "mprt/mprt.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t kHeader = 16; // keeps malloc's 16-byte alignment

std::atomic<int64_t> current{0}, peak{0}, total{0};

void raisePeak(int64_t now) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen &&
         !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed))
    ;
}

} // namespace

extern "C" {

void *mprt_counted_malloc(size_t size) {
  if (size > SIZE_MAX - kHeader)
    return nullptr;
  char *block = static_cast<char *>(std::malloc(size + kHeader));
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
  std::free(block);
}

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
