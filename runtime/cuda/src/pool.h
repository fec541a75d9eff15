//===- pool.h - Caching device allocator ------------------------*- C++ -*-===//

#ifndef MPRT_CUDA_POOL_H
#define MPRT_CUDA_POOL_H

#include "driver.h"

#include <cstdint>

namespace mprt::cuda {

/// The size class a request of `bytes` is served from: powers of two from
/// 512 bytes to 1 MiB, then multiples of 2 MiB.
uint64_t sizeClass(uint64_t bytes);

/// A device block of at least `bytes` for work on `stream`, from the free
/// list of its size class or a new cuMemAlloc (after emptying the free lists
/// once if the device is full). Needs a current context. Returns 0 and sets
/// `result` on failure.
CUdeviceptr poolAllocate(uint64_t bytes, CUstream stream, CUresult &result);

/// Puts a block from poolAllocate back on its free list once the work
/// queued on `stream` so far is done (an event orders reuse). False if
/// `ptr` is not a live pool block.
bool poolFree(CUdeviceptr ptr, CUstream stream, CUresult &result);

} // namespace mprt::cuda

#endif // MPRT_CUDA_POOL_H
