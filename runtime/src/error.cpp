//===- error.cpp - Status names and the thread-local last error -----------===//

#include "internal.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace {
// A fixed buffer: recording an error must not itself allocate or fail. Long
// messages (deep paths) are truncated.
constexpr size_t kMessageCapacity = 2048;
thread_local char lastError[kMessageCapacity];
} // namespace

namespace mprt {

void clearError() { lastError[0] = '\0'; }

mprt_status fail(mprt_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(lastError, kMessageCapacity, format, args);
  va_end(args);
  return status;
}

void prefixError(const char *format, ...) {
  char prefix[kMessageCapacity];
  va_list args;
  va_start(args, format);
  vsnprintf(prefix, sizeof(prefix), format, args);
  va_end(args);
  // Shift the message right and put the prefix in front, truncating the
  // message if the two do not fit.
  size_t prefixLength = strlen(prefix);
  size_t keep =
      std::min(strlen(lastError), kMessageCapacity - 1 - prefixLength);
  memmove(lastError + prefixLength, lastError, keep);
  memcpy(lastError, prefix, prefixLength);
  lastError[prefixLength + keep] = '\0';
}

} // namespace mprt

extern "C" {

const char *mprt_status_name(mprt_status status) {
  switch (status) {
  case MPRT_OK:
    return "OK";
  case MPRT_ERROR_IO:
    return "ERROR_IO";
  case MPRT_ERROR_FORMAT:
    return "ERROR_FORMAT";
  case MPRT_ERROR_SHAPE:
    return "ERROR_SHAPE";
  case MPRT_ERROR_DTYPE:
    return "ERROR_DTYPE";
  case MPRT_ERROR_ARGUMENT:
    return "ERROR_ARGUMENT";
  case MPRT_ERROR_NOT_FOUND:
    return "ERROR_NOT_FOUND";
  case MPRT_ERROR_OUT_OF_MEMORY:
    return "ERROR_OUT_OF_MEMORY";
  case MPRT_ERROR_DEVICE:
    return "ERROR_DEVICE";
  }
  return "UNKNOWN";
}

const char *mprt_last_error(void) { return lastError; }

} // extern "C"
