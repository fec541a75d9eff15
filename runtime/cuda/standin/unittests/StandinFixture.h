//===- StandinFixture.h - libmprt_cuda tests on the stand-ins ---*- C++ -*-===//
//
// The fixture of tests that run libmprt_cuda on the CUDA driver and cuBLASLt
// stand-ins (ctest sets LD_LIBRARY_PATH=build/lib/cuda-standin): errors are
// recorded, not fatal; the driver libmprt_cuda opened must be the stand-in;
// its counters are read before each test. Shared by MprtCudaOnStandinTest.cpp
// and unittests/MgpuOnStandinTest.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_CUDA_STANDIN_UNITTESTS_STANDINFIXTURE_H
#define MPRT_CUDA_STANDIN_UNITTESTS_STANDINFIXTURE_H

#include "mprt/mprt_cuda.h"
#include "standin.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fstream>
#include <sstream>
#include <string>

namespace mprt_test {

class CudaStandinTest : public ::testing::Test {
protected:
  void SetUp() override {
    mprt_cuda_set_error_mode(MPRT_CUDA_ERRORS_RECORD);
    char why[512];
    ASSERT_TRUE(mprt_cuda_available(why, sizeof(why))) << why;
    // The driver libmprt_cuda opened must be the stand-in.
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(driver, nullptr);
    getStats = reinterpret_cast<decltype(getStats)>(
        dlsym(driver, "mp_cuda_standin_get_stats"));
    checkRange = reinterpret_cast<decltype(checkRange)>(
        dlsym(driver, "mp_cuda_standin_check_range"));
    ASSERT_NE(getStats, nullptr)
        << "libcuda.so.1 is not the stand-in: is LD_LIBRARY_PATH "
           "build/lib/cuda-standin?";
    ASSERT_NE(checkRange, nullptr);
    ASSERT_EQ(mprt_cuda_check(), MPRT_OK) << mprt_last_error();
    getStats(&before);
  }
  void TearDown() override { mprt_cuda_check(); }

  /// The stand-in's counters now.
  mp_cuda_standin_stats now() {
    mp_cuda_standin_stats s;
    getStats(&s);
    return s;
  }

  void (*getStats)(mp_cuda_standin_stats *) = nullptr;
  int (*checkRange)(const void *, uint64_t, const char *,
                    const char *) = nullptr;
  /// The counters when the test began.
  mp_cuda_standin_stats before;
};

/// The whole file, "" when it cannot be read.
inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace mprt_test

#endif // MPRT_CUDA_STANDIN_UNITTESTS_STANDINFIXTURE_H
