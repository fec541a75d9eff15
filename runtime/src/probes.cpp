//===- probes.cpp - probe dispatch and calibration statistics -------------===//
//
// Compiled `mp.observe` probes call mprt_observe; the driver decides what a
// probe does by installing an observer. The statistics collector is the
// observer of calibration runs: per probe id it keeps min, max, counts and a
// histogram of |x| whose range doubles as larger values arrive.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

std::atomic<mprt_observer_fn> observerFn{nullptr};
std::atomic<void *> observerUser{nullptr};

double halfToDouble(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double bfloatToDouble(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Element `i` of `data` as a double.
double element(const void *data, int64_t i, mprt_dtype dtype) {
  switch (dtype) {
  case MPRT_DTYPE_F32:
    return static_cast<const float *>(data)[i];
  case MPRT_DTYPE_F16:
    return halfToDouble(static_cast<const uint16_t *>(data)[i]);
  case MPRT_DTYPE_BF16:
    return bfloatToDouble(static_cast<const uint16_t *>(data)[i]);
  case MPRT_DTYPE_F64:
    return static_cast<const double *>(data)[i];
  case MPRT_DTYPE_I32:
    return static_cast<const int32_t *>(data)[i];
  case MPRT_DTYPE_I64:
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  case MPRT_DTYPE_U8:
    return static_cast<const uint8_t *>(data)[i];
  case MPRT_DTYPE_I8:
    return static_cast<const int8_t *>(data)[i];
  }
  return 0;
}

struct Probe {
  std::string id;
  mprt_dtype dtype;
  int64_t calls = 0, count = 0, nonfinite = 0, zeros = 0, belowF16Normal = 0;
  double min = 0, max = 0, absMax = 0;
  double histMax = 0;
  std::vector<int64_t> bins = std::vector<int64_t>(MPRT_STATS_BINS, 0);

  void add(const void *data, int64_t n);
  /// Widens the histogram's range to cover `value` by merging bins.
  void growTo(double value);
};

void Probe::growTo(double value) {
  if (histMax == 0) {
    histMax = value; // zeros counted so far sit in bin 0 of any range
    return;
  }
  if (value <= histMax)
    return;
  // Smallest k with histMax * 2^k >= value; bins merge 2^k to one.
  int k = 0;
  double range = histMax;
  while (range < value && k < 64) {
    range *= 2;
    ++k;
  }
  if (range < value)
    range = value; // only for absurd ratios; everything merges into bin 0
  std::vector<int64_t> merged(MPRT_STATS_BINS, 0);
  for (int64_t b = 0; b < MPRT_STATS_BINS; ++b) {
    int64_t target = k >= 12 ? 0 : (b >> k);
    merged[target] += bins[b];
  }
  bins.swap(merged);
  histMax = range;
}

void Probe::add(const void *data, int64_t n) {
  ++calls;
  double batchAbsMax = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = element(data, i, dtype);
    if (!std::isfinite(x)) {
      ++nonfinite;
      continue;
    }
    if (count == 0) {
      min = max = x;
    } else {
      min = std::min(min, x);
      max = std::max(max, x);
    }
    ++count;
    double a = std::fabs(x);
    batchAbsMax = std::max(batchAbsMax, a);
    if (a == 0)
      ++zeros;
    else if (a < 0x1p-14)
      ++belowF16Normal;
  }
  absMax = std::max(absMax, batchAbsMax);
  if (batchAbsMax > 0)
    growTo(batchAbsMax);
  double perBin = histMax > 0 ? MPRT_STATS_BINS / histMax : 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = element(data, i, dtype);
    if (!std::isfinite(x))
      continue;
    int64_t bin = static_cast<int64_t>(std::fabs(x) * perBin);
    ++bins[std::min<int64_t>(bin, MPRT_STATS_BINS - 1)];
  }
}

void appendNumber(std::string &out, double value) {
  char buffer[40];
  // Integers print exactly; other values round-trip as doubles.
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
  else
    std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  out += buffer;
}

void appendString(std::string &out, const std::string &text) {
  out += '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

} // namespace

struct mprt_stats {
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Probe>> probes; // in order of first appearance
  std::map<std::string, size_t> index;
  std::string firstError;
};

namespace {

void snapshot(const Probe &p, mprt_probe_stats *out) {
  out->id = p.id.c_str();
  out->dtype = p.dtype;
  out->calls = p.calls;
  out->count = p.count;
  out->nonfinite_count = p.nonfinite;
  out->zero_count = p.zeros;
  out->below_f16_normal_count = p.belowF16Normal;
  out->min = p.min;
  out->max = p.max;
  out->abs_max = p.absMax;
  out->hist_max = p.histMax;
  out->histogram = p.bins.data();
}

} // namespace

extern "C" {

void mprt_set_observer(mprt_observer_fn fn, void *user) {
  // Clear first, so no call sees the new function with the old user data.
  observerFn.store(nullptr, std::memory_order_release);
  observerUser.store(user, std::memory_order_release);
  observerFn.store(fn, std::memory_order_release);
}

void mprt_get_observer(mprt_observer_fn *fn, void **user) {
  if (fn)
    *fn = observerFn.load(std::memory_order_acquire);
  if (user)
    *user = observerUser.load(std::memory_order_acquire);
}

void mprt_observe(const char *id, const void *data, int64_t numElements,
                  int32_t dtype) {
  mprt_observer_fn fn = observerFn.load(std::memory_order_acquire);
  if (!fn || numElements < 0 || dtype < 0 || dtype >= MPRT_DTYPE_COUNT)
    return;
  fn(observerUser.load(std::memory_order_acquire), id, data, numElements,
     static_cast<mprt_dtype>(dtype));
}

mprt_status mprt_stats_create(mprt_stats **out) {
  mprt::clearError();
  if (!out)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_stats_create: NULL output");
  *out = new (std::nothrow) mprt_stats();
  if (!*out)
    return mprt::fail(MPRT_ERROR_OUT_OF_MEMORY, "mprt_stats_create: no memory");
  return MPRT_OK;
}

void mprt_stats_free(mprt_stats *stats) { delete stats; }

mprt_status mprt_stats_add(mprt_stats *stats, const char *id, const void *data,
                           int64_t numElements, mprt_dtype dtype) {
  mprt::clearError();
  if (!stats || !id || !*id || numElements < 0 || (!data && numElements > 0))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_stats_add: bad arguments (probe '%s', %lld "
                      "elements)",
                      id ? id : "(null)", (long long)numElements);
  if (!mprt::isValidDtype(dtype))
    return mprt::fail(MPRT_ERROR_DTYPE, "probe '%s': invalid dtype %d", id,
                      static_cast<int>(dtype));
  std::lock_guard<std::mutex> lock(stats->mutex);
  auto [it, inserted] = stats->index.emplace(id, stats->probes.size());
  if (inserted) {
    auto probe = std::make_unique<Probe>();
    probe->id = id;
    probe->dtype = dtype;
    stats->probes.push_back(std::move(probe));
  }
  Probe &probe = *stats->probes[it->second];
  if (probe.dtype != dtype)
    return mprt::fail(MPRT_ERROR_DTYPE,
                      "probe '%s' saw %s data before, now %s: one probe "
                      "observes one element type",
                      id, mprt_dtype_name(probe.dtype), mprt_dtype_name(dtype));
  probe.add(data, numElements);
  return MPRT_OK;
}

void mprt_stats_observer(void *user, const char *id, const void *data,
                         int64_t numElements, mprt_dtype dtype) {
  auto *stats = static_cast<mprt_stats *>(user);
  if (!stats)
    return;
  if (mprt_stats_add(stats, id, data, numElements, dtype) != MPRT_OK) {
    std::lock_guard<std::mutex> lock(stats->mutex);
    if (stats->firstError.empty())
      stats->firstError = mprt_last_error();
  }
}

const char *mprt_stats_error(const mprt_stats *stats) {
  if (!stats)
    return nullptr;
  std::lock_guard<std::mutex> lock(stats->mutex);
  return stats->firstError.empty() ? nullptr : stats->firstError.c_str();
}

size_t mprt_stats_count(const mprt_stats *stats) {
  if (!stats)
    return 0;
  std::lock_guard<std::mutex> lock(stats->mutex);
  return stats->probes.size();
}

mprt_status mprt_stats_get(const mprt_stats *stats, size_t index,
                           mprt_probe_stats *out) {
  mprt::clearError();
  if (!stats || !out)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_stats_get: NULL argument");
  std::lock_guard<std::mutex> lock(stats->mutex);
  if (index >= stats->probes.size())
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_stats_get: index %zu out of range (%zu probes)",
                      index, stats->probes.size());
  snapshot(*stats->probes[index], out);
  return MPRT_OK;
}

mprt_status mprt_stats_find(const mprt_stats *stats, const char *id,
                            mprt_probe_stats *out) {
  mprt::clearError();
  if (!stats || !id || !out)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_stats_find: NULL argument");
  std::lock_guard<std::mutex> lock(stats->mutex);
  auto it = stats->index.find(id);
  if (it == stats->index.end())
    return mprt::fail(MPRT_ERROR_NOT_FOUND, "no tensor reached probe '%s'", id);
  snapshot(*stats->probes[it->second], out);
  return MPRT_OK;
}

mprt_status mprt_stats_write_json(const mprt_stats *stats, const char *path) {
  mprt::clearError();
  if (!stats || !path || !*path)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_stats_write_json: NULL statistics or path");
  std::string text = "{\n  \"version\": 1,\n  \"values\": {";
  {
    std::lock_guard<std::mutex> lock(stats->mutex);
    bool first = true;
    for (const auto &probe : stats->probes) {
      const Probe &p = *probe;
      text += first ? "\n    " : ",\n    ";
      first = false;
      appendString(text, p.id);
      text += ": {\"dtype\": ";
      appendString(text, mprt_dtype_name(p.dtype));
      auto field = [&](const char *name, double value) {
        text += ", \"";
        text += name;
        text += "\": ";
        appendNumber(text, value);
      };
      field("min", p.min);
      field("max", p.max);
      field("abs_max", p.absMax);
      field("count", static_cast<double>(p.count));
      field("zero_count", static_cast<double>(p.zeros));
      field("below_f16_normal_count", static_cast<double>(p.belowF16Normal));
      field("nonfinite_count", static_cast<double>(p.nonfinite));
      field("calls", static_cast<double>(p.calls));
      text += ",\n      \"histogram\": {\"bins\": ";
      appendNumber(text, MPRT_STATS_BINS);
      text += ", \"max\": ";
      appendNumber(text, p.histMax);
      text += ", \"counts\": [";
      for (size_t b = 0; b < p.bins.size(); ++b) {
        if (b)
          text += b % 32 ? ", " : ",\n        ";
        appendNumber(text, static_cast<double>(p.bins[b]));
      }
      text += "]}}";
    }
  }
  text += "\n  }\n}\n";

  std::string temporary = std::string(path) + ".tmp";
  mprt::FileWriter writer;
  mprt_status status = writer.open(temporary.c_str());
  if (status == MPRT_OK)
    status = writer.write(text.data(), text.size());
  if (status == MPRT_OK)
    status = writer.close(/*sync=*/false);
  else
    writer.discard();
  if (status != MPRT_OK)
    return status;
  if (std::rename(temporary.c_str(), path) != 0) {
    int saved = errno;
    ::unlink(temporary.c_str());
    return mprt::fail(MPRT_ERROR_IO, "%s: cannot rename '%s' into place: %s",
                      path, temporary.c_str(), std::strerror(saved));
  }
  return MPRT_OK;
}

} // extern "C"
