//===- pool.cpp - Caching device allocator behind mgpuMemAlloc ------------===//
//
// cuMemAlloc and cuMemFree synchronize the device and cost tens of
// microseconds; compiled code allocates and frees every temporary of every
// step. Freed blocks are therefore kept on per-size-class free lists. A
// block freed on a stream may still be read by kernels queued there, so the
// free records an event on that stream and the next user waits for it
// (cuStreamWaitEvent on its own stream: no host synchronization).
//
//===----------------------------------------------------------------------===//

#include "pool.h"
#include "../../src/internal.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mprt::cuda {
namespace {

struct FreeBlock {
  CUdeviceptr ptr;
  CUevent ready; // recorded on the freeing stream; null: ready now
};

struct Pool {
  std::mutex mutex;
  std::map<uint64_t, std::vector<FreeBlock>> freeLists;
  std::unordered_map<CUdeviceptr, uint64_t> live; // ptr -> size class
  mprt_cuda_pool_stats stats = {};
};

Pool &pool() {
  static Pool *p = new Pool; // outlives static destructors that free
  return *p;
}

void notePeak(Pool &p) {
  uint64_t total = p.stats.bytes_in_use + p.stats.bytes_cached;
  if (total > p.stats.peak_bytes)
    p.stats.peak_bytes = total;
}

// Returns every cached block to the driver; called with the mutex held and
// a context current.
CUresult releaseCached(Pool &p, const Driver &d) {
  CUresult first = CUDA_SUCCESS;
  for (auto &[size, blocks] : p.freeLists) {
    for (FreeBlock &block : blocks) {
      if (block.ready) {
        d.cuEventSynchronize(block.ready);
        d.cuEventDestroy(block.ready);
      }
      CUresult r = d.cuMemFree(block.ptr);
      if (r != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
      p.stats.bytes_cached -= size;
    }
  }
  p.freeLists.clear();
  return first;
}

} // namespace

uint64_t sizeClass(uint64_t bytes) {
  constexpr uint64_t kMin = 512, kSmallMax = 1 << 20, kLarge = 2 << 20;
  if (bytes <= kMin)
    return kMin;
  if (bytes <= kSmallMax) {
    uint64_t c = kMin;
    while (c < bytes)
      c <<= 1;
    return c;
  }
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

CUdeviceptr poolAllocate(uint64_t bytes, CUstream stream, CUresult &result) {
  const Driver &d = *driver();
  Pool &p = pool();
  uint64_t size = sizeClass(bytes);
  std::lock_guard<std::mutex> lock(p.mutex);
  result = CUDA_SUCCESS;
  auto it = p.freeLists.find(size);
  if (it != p.freeLists.end() && !it->second.empty()) {
    FreeBlock block = it->second.back();
    it->second.pop_back();
    if (block.ready) {
      // Work on the freeing stream may still use the block: order after it.
      result = stream ? d.cuStreamWaitEvent(stream, block.ready, 0)
                      : d.cuEventSynchronize(block.ready);
      d.cuEventDestroy(block.ready);
    }
    p.stats.bytes_cached -= size;
    if (result != CUDA_SUCCESS) {
      d.cuMemFree(block.ptr);
      return 0;
    }
    p.stats.bytes_in_use += size;
    p.stats.pool_hits++;
    p.live[block.ptr] = size;
    return block.ptr;
  }
  CUdeviceptr ptr = 0;
  result = d.cuMemAlloc(&ptr, size);
  if (result == CUDA_ERROR_OUT_OF_MEMORY && !p.freeLists.empty()) {
    releaseCached(p, d);
    result = d.cuMemAlloc(&ptr, size);
  }
  if (result != CUDA_SUCCESS)
    return 0;
  p.stats.device_allocs++;
  p.stats.bytes_in_use += size;
  p.live[ptr] = size;
  notePeak(p);
  return ptr;
}

bool poolFree(CUdeviceptr ptr, CUstream stream, CUresult &result) {
  const Driver &d = *driver();
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  result = CUDA_SUCCESS;
  auto it = p.live.find(ptr);
  if (it == p.live.end())
    return false;
  uint64_t size = it->second;
  p.live.erase(it);
  p.stats.bytes_in_use -= size;
  FreeBlock block{ptr, nullptr};
  if (stream) {
    result = d.cuEventCreate(&block.ready, CU_EVENT_DISABLE_TIMING);
    if (result == CUDA_SUCCESS)
      result = d.cuEventRecord(block.ready, stream);
  } else {
    // The legacy stream does not order the non-blocking streams mgpu
    // creates; wait for all work, as cuMemFree itself would.
    result = d.cuCtxSynchronize();
  }
  if (result != CUDA_SUCCESS) {
    if (block.ready)
      d.cuEventDestroy(block.ready);
    d.cuMemFree(ptr);
    return true;
  }
  p.freeLists[size].push_back(block);
  p.stats.bytes_cached += size;
  return true;
}

} // namespace mprt::cuda

using namespace mprt::cuda;

extern "C" {

void mprt_cuda_pool_get_stats(mprt_cuda_pool_stats *out) {
  if (!out)
    return;
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  *out = p.stats;
}

mprt_status mprt_cuda_pool_trim(void) {
  mprt::clearError();
  std::string why;
  const Driver *d = driver(&why);
  if (!d)
    return MPRT_OK; // nothing can have been cached
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  CUcontext previous;
  if (d->cuCtxPushCurrent(primaryContext()) != CUDA_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE, "mprt_cuda_pool_trim: no context");
  CUresult r = releaseCached(p, *d);
  d->cuCtxPopCurrent(&previous);
  if (r != CUDA_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE, "mprt_cuda_pool_trim: cuMemFree: %s",
                      resultText(r).c_str());
  return MPRT_OK;
}

} // extern "C"
