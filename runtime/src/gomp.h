//===- gomp.h - the libgomp entry points libmprt calls ---------*- C++ -*-===//
//
// libgomp's (GCC's OpenMP runtime, the one Debian's oneDNN is built with)
// stable C ABI, declared here instead of including omp.h and compiling with
// -fopenmp: clang's -fopenmp means LLVM's libomp, a second runtime with
// threads of its own, and its omp.h is not installed beside GCC's.
// GOMP_parallel is what GCC emits for `#pragma omp parallel` (GCC >= 4.9).
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_GOMP_H
#define MPRT_GOMP_H

extern "C" {
void GOMP_parallel(void (*fn)(void *), void *data, unsigned numThreads,
                   unsigned flags);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_get_max_threads(void);
int omp_in_parallel(void);
int omp_get_num_procs(void);
void omp_set_num_threads(int count);
}

#endif // MPRT_GOMP_H
