//===- parallel.cpp - compiled parallel loops on the OpenMP threads -------===//
//
// libgomp's threads, the ones oneDNN 2.6 (Debian) runs its products on:
// one pool, one OMP_NUM_THREADS, and no thread of one runtime spinning
// while the other's work waits.
//
//===----------------------------------------------------------------------===//

#include "gomp.h"
#include "mprt/mprt.h"

#include <algorithm>

namespace {

struct Loop {
  int64_t n;
  mprt_loop_body body;
  void *context;
};

/// Runs on every thread of the team: share t of T is
/// [n t / T, n (t + 1) / T), sizes at most one apart.
void runShare(void *data) {
  const Loop &loop = *static_cast<const Loop *>(data);
  int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
  int64_t size = loop.n / count, extra = loop.n % count;
  int64_t begin = size * t + std::min(t, extra);
  int64_t end = begin + size + (t < extra ? 1 : 0);
  if (begin < end)
    loop.body(begin, end, loop.context);
}

} // namespace

void mprt_parallel_for(int64_t n, mprt_loop_body body, void *context) {
  if (n <= 0)
    return;
  int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  threads = std::min(threads, n);
  if (threads <= 1) {
    body(0, n, context);
    return;
  }
  Loop loop{n, body, context};
  GOMP_parallel(runShare, &loop, static_cast<unsigned>(threads), 0);
}
