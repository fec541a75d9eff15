//===- FuzzUtil.h - checks shared by libmprt's fuzz targets -----*- C++ -*-===//
//
// A fuzz target fails by crashing: these checks abort with a message when a
// reader breaks a promise of mprt.h (a failed call must set *out to NULL and
// leave a message; a tensor's sizes must agree), so that libFuzzer saves the
// input. Memory errors are found by ASan and UBSan, which the targets are
// built with.
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_FUZZ_FUZZUTIL_H
#define MPRT_FUZZ_FUZZUTIL_H

#include "mprt/mprt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace mprt_fuzz {

/// Aborts with `what` unless `condition` holds.
inline void require(bool condition, const char *what) {
  if (!condition) {
    fprintf(stderr, "mprt fuzz check failed: %s (last error: '%s')\n", what,
            mprt_last_error());
    abort();
  }
}

/// The contract every status-returning call keeps.
template <typename T> void checkStatus(mprt_status status, T *out) {
  if (status == MPRT_OK) {
    require(out != nullptr, "MPRT_OK without an output");
    require(mprt_last_error()[0] == '\0', "MPRT_OK with an error message");
    return;
  }
  require(out == nullptr, "a failed call left *out set");
  require(mprt_last_error()[0] != '\0', "a failed call left no message");
  require(strcmp(mprt_status_name(status), "UNKNOWN") != 0,
          "status outside the enum");
}

/// The contract of calls without an output: a message exactly on failure.
inline void checkWriteStatus(mprt_status status) {
  require((status == MPRT_OK) == (mprt_last_error()[0] == '\0'),
          "a message must come with a failure and only with one");
}

/// A tensor's accessors agree with each other, and every byte of its data
/// can be read (ASan reports it when not).
inline unsigned checkTensor(const mprt_tensor *tensor) {
  require(tensor != nullptr, "NULL tensor");
  mprt_dtype dtype = mprt_tensor_dtype(tensor);
  require(mprt_dtype_name(dtype) != nullptr, "invalid dtype");
  size_t rank = mprt_tensor_rank(tensor);
  require(rank <= MPRT_MAX_RANK, "rank over MPRT_MAX_RANK");
  const int64_t *shape = mprt_tensor_shape(tensor);
  size_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    require(shape[i] >= 0, "negative extent");
    elements *= static_cast<size_t>(shape[i]);
  }
  require(elements == mprt_tensor_num_elements(tensor), "element count");
  require(elements * mprt_dtype_size(dtype) == mprt_tensor_byte_size(tensor),
          "byte size");
  const auto *data =
      static_cast<const unsigned char *>(mprt_tensor_data(tensor));
  require(data != nullptr, "NULL data");
  unsigned sum = 0;
  for (size_t i = 0, n = mprt_tensor_byte_size(tensor); i < n; ++i)
    sum += data[i];
  return sum;
}

/// Whether two tensors have the same dtype, shape and bytes.
inline bool sameTensor(const mprt_tensor *a, const mprt_tensor *b) {
  size_t rank = mprt_tensor_rank(a);
  return mprt_tensor_dtype(a) == mprt_tensor_dtype(b) &&
         rank == mprt_tensor_rank(b) &&
         memcmp(mprt_tensor_shape(a), mprt_tensor_shape(b),
                rank * sizeof(int64_t)) == 0 &&
         mprt_tensor_byte_size(a) == mprt_tensor_byte_size(b) &&
         memcmp(mprt_tensor_data(a), mprt_tensor_data(b),
                mprt_tensor_byte_size(a)) == 0;
}

/// A private scratch folder (in /dev/shm when there is one, so file-based
/// readers cost little), made once per process.
inline const std::string &scratchDir() {
  static std::string dir = [] {
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    if (const char *tmp = getenv("MPRT_FUZZ_TMPDIR"))
      base = tmp;
    std::string pattern = std::string(base) + "/mprt-fuzz-XXXXXX";
    require(mkdtemp(&pattern[0]) != nullptr, "cannot make a scratch folder");
    // Removed at exit; what is left inside is removed with it.
    static std::string toRemove = pattern;
    atexit([] {
      std::string command = "rm -rf '" + toRemove + "'";
      if (system(command.c_str()) != 0)
        fprintf(stderr, "mprt fuzz: could not remove %s\n", toRemove.c_str());
    });
    return pattern;
  }();
  return dir;
}

/// Writes `size` bytes to `path`, replacing it.
inline void writeFile(const std::string &path, const uint8_t *data,
                      size_t size) {
  FILE *file = fopen(path.c_str(), "wb");
  require(file != nullptr, "cannot write a scratch file");
  require(size == 0 || fwrite(data, 1, size, file) == size,
          "short write to a scratch file");
  require(fclose(file) == 0, "cannot close a scratch file");
}

} // namespace mprt_fuzz

#endif // MPRT_FUZZ_FUZZUTIL_H
