//===- parallel.cpp - compiled parallel loops on the OpenMP threads -------===//
//
// libgomp's threads, the ones oneDNN 2.6 (Debian) runs its products on:
// one pool, one OMP_NUM_THREADS, and no thread of one runtime spinning
// while the other's work waits.
//
//===----------------------------------------------------------------------===//

#include "mprt/mprt.h"

#include <algorithm>

#include <omp.h>

void mprt_parallel_for(int64_t n, mprt_loop_body body, void *context) {
  if (n <= 0)
    return;
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (static_cast<int64_t>(threads) > n)
    threads = static_cast<int>(n);
  if (threads <= 1) {
    body(0, n, context);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    // Share t is [n t / T, n (t + 1) / T): sizes differ by at most one.
    int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    int64_t begin = n / count * t + std::min(t, n % count);
    int64_t end = begin + n / count + (t < n % count ? 1 : 0);
    if (begin < end)
      body(begin, end, context);
  }
}
