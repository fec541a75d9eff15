//===- dist.cpp - data-parallel training over MPI -------------------------===//
//
// The process side of --mp-data-parallel: MPI is initialized here (once),
// ranks agree on the step and the starting parameters, and the compiled
// step's MPI_Allreduce calls come through mprt_dist_mpi_allreduce. MPICH's
// ABI (integer handles), the one upstream's mpi lowering emits.
//
//===----------------------------------------------------------------------===//

#include "gomp.h"
#include "internal.h"
#include "mprt/mprt.h"

#include <cstdio>
#include <cstdlib>
#include <thread>

#ifdef MPRT_HAS_MPI
#include <mpi.h>
#endif

namespace {
#ifdef MPRT_HAS_MPI
bool initializedHere = false;

bool launched() {
  for (const char *var : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"})
    if (std::getenv(var))
      return true;
  return false;
}
#endif
} // namespace

#ifndef MPRT_HAS_MPI
static mprt_status unavailable(const char *fn) {
  return mprt::fail(MPRT_ERROR_ARGUMENT,
                    "%s: this mp was built without MPI (install MPICH, "
                    "libmpich-dev, and configure again)",
                    fn);
}
#endif

extern "C" int32_t mprt_dist_available(void) {
#ifdef MPRT_HAS_MPI
  return 1;
#else
  return 0;
#endif
}

extern "C" mprt_status mprt_dist_init(int32_t *rank, int32_t *size) {
  mprt::clearError();
#ifdef MPRT_HAS_MPI
  if (!rank || !size)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_dist_init: null output");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!launched())
      return mprt::fail(MPRT_ERROR_ARGUMENT,
                        "distributed training needs an MPI launcher: run it "
                        "as `mpirun -np N ...` (no PMI_RANK, PMIX_RANK or "
                        "OMPI_COMM_WORLD_SIZE in the environment)");
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE, "MPI_Init failed");
    initializedHere = true;
    std::atexit(mprt_dist_finalize);
  }
  int r = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  // Ranks on one host share its cores: unless MPRT_NUM_THREADS or
  // OMP_NUM_THREADS says otherwise, each takes its share (N ranks of all
  // cores each would oversubscribe them N times, and MPI's waits spin).
  if (initializedHere && !mprt::threadsFromEnvironment()) {
    MPI_Comm host;
    int local = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r,
                            MPI_INFO_NULL, &host) == MPI_SUCCESS) {
      MPI_Comm_size(host, &local);
      MPI_Comm_free(&host);
    }
    unsigned cores = std::thread::hardware_concurrency();
    int threads = cores > 0 ? static_cast<int>(cores) / local : 1;
    mprt_set_threads(threads > 0 ? threads : 1);
  }
  *rank = r;
  *size = n;
  return MPRT_OK;
#else
  (void)rank;
  (void)size;
  return unavailable("mprt_dist_init");
#endif
}

extern "C" mprt_status mprt_dist_same(uint64_t value, int32_t *same) {
  mprt::clearError();
#ifdef MPRT_HAS_MPI
  unsigned long long mine = value, low = 0, high = 0;
  if (MPI_Allreduce(&mine, &low, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                    MPI_COMM_WORLD) != MPI_SUCCESS ||
      MPI_Allreduce(&mine, &high, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                    MPI_COMM_WORLD) != MPI_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "mprt_dist_same: MPI_Allreduce failed");
  *same = low == high;
  return MPRT_OK;
#else
  (void)value;
  (void)same;
  return unavailable("mprt_dist_same");
#endif
}

extern "C" mprt_status mprt_dist_broadcast_f32(float *data, int64_t count) {
  mprt::clearError();
#ifdef MPRT_HAS_MPI
  // MPI counts are ints: large tensors go in pieces.
  constexpr int64_t piece = 1 << 30;
  for (int64_t first = 0; first < count; first += piece) {
    int n = static_cast<int>(count - first < piece ? count - first : piece);
    if (MPI_Bcast(data + first, n, MPI_FLOAT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "mprt_dist_broadcast_f32: MPI_Bcast failed");
  }
  return MPRT_OK;
#else
  (void)data;
  (void)count;
  return unavailable("mprt_dist_broadcast_f32");
#endif
}

extern "C" int mprt_dist_mpi_allreduce(const void *send, void *receive,
                                       int count, int datatype, int op,
                                       int comm) {
#ifdef MPRT_HAS_MPI
  int status = MPI_Allreduce(send, receive, count, datatype, op, comm);
  if (status != MPI_SUCCESS)
    mprt::fail(MPRT_ERROR_DEVICE,
               "MPI_Allreduce of %d elements failed (MPI error %d)", count,
               status);
  return status;
#else
  (void)send;
  (void)receive;
  (void)count;
  (void)datatype;
  (void)op;
  (void)comm;
  unavailable("MPI_Allreduce");
  return 1;
#endif
}

extern "C" void mprt_dist_finalize(void) {
#ifdef MPRT_HAS_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initializedHere && !finalized)
    MPI_Finalize();
#endif
}

extern "C" void mprt_dist_abort(int code) {
#ifdef MPRT_HAS_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initializedHere && !finalized) {
    // Leave without MPI_Finalize: the launcher then ends the job, where
    // MPI_Finalize would wait for ranks that wait for this one in a
    // collective. Not MPI_Abort: with it, hydra dropped what the ranks had
    // just written (the error) before forwarding it.
    std::fflush(nullptr);
    std::_Exit(code);
  }
#else
  (void)code;
#endif
}
