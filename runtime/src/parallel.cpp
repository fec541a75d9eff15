//===- parallel.cpp - compiled parallel loops on the OpenMP threads -------===//
//
// libgomp's threads, the ones oneDNN 2.6 (Debian) runs its products on:
// one pool, one OMP_NUM_THREADS, and no thread of one runtime spinning
// while the other's work waits.
//
//===----------------------------------------------------------------------===//

#include "gomp.h"
#include "internal.h"
#include "mprt/mprt.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

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

namespace {
std::atomic<int32_t> chosenThreads{0};

int32_t threadsFrom(const char *variable) {
  const char *text = std::getenv(variable);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10); // "4" or "4,2": the first level
  return end != text && value > 0 ? static_cast<int32_t>(value) : 0;
}
} // namespace

int32_t mprt::threadsFromEnvironment() {
  int32_t threads = threadsFrom("MPRT_NUM_THREADS");
  return threads ? threads : threadsFrom("OMP_NUM_THREADS");
}

int32_t mprt_threads(void) {
  if (int32_t chosen = chosenThreads.load())
    return chosen;
  int32_t threads = mprt::threadsFromEnvironment();
  if (!threads)
    threads = std::max(1, omp_get_num_procs());
  chosenThreads.store(threads);
  return threads;
}

void mprt_set_threads(int32_t n) { chosenThreads.store(n > 0 ? n : 1); }

int32_t mprt_threads_enter(void) {
  int32_t previous = omp_get_max_threads();
  int32_t threads = mprt_threads();
  if (threads != previous)
    omp_set_num_threads(threads);
  return previous;
}

void mprt_threads_leave(int32_t previous) {
  if (previous > 0 && previous != omp_get_max_threads())
    omp_set_num_threads(previous);
}

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
