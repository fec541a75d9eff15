//===- Calibration.cpp - INT8 calibration, measured errors ----------------===//

#include "mp/Session/Calibration.h"

#include "mprt/mprt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>

namespace mp {

namespace {

/// The runtime's observer is one process-wide hook.
std::mutex observerMutex;

/// Tensors of the int8 model's output probes, then errors of the f32
/// model's tensors of the same ids against them.
struct ErrorCapture {
  bool comparing = false;
  std::map<std::string, std::vector<std::vector<float>>> quantized;
  std::map<std::string, size_t> seen;
  std::map<std::string, std::pair<double, double>> sums; // noise, signal
};

void captureObserver(void *user, const char *id, const void *data,
                     int64_t numElements, mprt_dtype dtype) {
  auto *capture = static_cast<ErrorCapture *>(user);
  if (dtype != MPRT_DTYPE_F32)
    return;
  const float *values = static_cast<const float *>(data);
  if (!capture->comparing) {
    capture->quantized[id].emplace_back(values, values + numElements);
    return;
  }
  auto it = capture->quantized.find(id);
  if (it == capture->quantized.end())
    return; // an input probe of the f32 model
  size_t call = capture->seen[id]++;
  if (call >= it->second.size() ||
      it->second[call].size() != static_cast<size_t>(numElements))
    return;
  auto &[noise, signal] = capture->sums[id];
  for (int64_t i = 0; i < numElements; ++i) {
    double reference = values[i], difference = it->second[call][i] - values[i];
    noise += difference * difference;
    signal += reference * reference;
  }
}

} // namespace

bool runBatches(InferSession &session, const DataRows &data, int64_t batches,
                std::string &error) {
  int64_t b = session.batchSize(), f = session.numFeatures(),
          c = session.numClasses();
  if (data.rows < 1) {
    error = "no rows to run";
    return false;
  }
  std::vector<float> x(b * f), logits(b * c);
  for (int64_t i = 0; i < batches; ++i) {
    for (int64_t r = 0; r < b; ++r) {
      int64_t row = (i * b + r) % data.rows;
      std::copy_n(data.x + row * f, f, x.begin() + r * f);
    }
    if (!session.predict(x.data(), logits.data(), error))
      return false;
  }
  return true;
}

int64_t writeCalibration(InferSession &session, const DataRows &data,
                         int64_t batches, const std::string &outPath,
                         std::string &error) {
  mprt_stats *stats = nullptr;
  if (mprt_stats_create(&stats) != MPRT_OK) {
    error = mprt_last_error();
    return -1;
  }
  bool ran;
  {
    std::lock_guard<std::mutex> lock(observerMutex);
    mprt_set_observer(mprt_stats_observer, stats);
    ran = runBatches(session, data, batches, error);
    mprt_set_observer(nullptr, nullptr);
  }
  int64_t probes = static_cast<int64_t>(mprt_stats_count(stats));
  if (!ran)
    probes = -1;
  else if (const char *statsError = mprt_stats_error(stats)) {
    error = std::string("calibration: ") + statsError;
    probes = -1;
  } else if (mprt_stats_write_json(stats, outPath.c_str()) != MPRT_OK) {
    error = mprt_last_error();
    probes = -1;
  }
  mprt_stats_free(stats);
  return probes;
}

bool measureInt8Errors(const std::string &modelPath,
                       const std::vector<HostTensor> &params,
                       InferOptions options, const DataRows &data,
                       int64_t batches, std::map<std::string, double> &errors,
                       std::string &error) {
  // Every eligible op in int8 (whatever its estimate), probed, on the CPU.
  options.probeOutputs = true;
  options.maxError = std::numeric_limits<double>::max(); // none falls back
  options.reportPath.clear();
  options.dumpIr.clear(); // the session that runs dumps, not these
  options.device = Device::Cpu;
  std::unique_ptr<InferSession> quantized =
      InferSession::create(modelPath, options, params, error);
  // The same model, batch and lowering, in f32 with probes on results.
  InferOptions reference;
  reference.mode = InferOptions::Mode::Calibrate;
  reference.modelBatch = options.modelBatch;
  copyLoweringOptions(reference, options);
  std::unique_ptr<InferSession> f32 =
      quantized ? InferSession::create(modelPath, reference, params, error)
                : nullptr;
  if (!f32)
    return false;
  ErrorCapture capture;
  bool ok;
  {
    std::lock_guard<std::mutex> lock(observerMutex);
    mprt_set_observer(captureObserver, &capture);
    ok = runBatches(*quantized, data, batches, error);
    capture.comparing = true;
    ok = ok && runBatches(*f32, data, batches, error);
    mprt_set_observer(nullptr, nullptr);
  }
  for (const auto &[id, sums] : capture.sums)
    errors[id] = sums.second > 0 ? std::sqrt(sums.first / sums.second) : 0.0;
  return ok;
}

bool planMeasuredFallback(const std::string &modelPath,
                          const std::vector<HostTensor> &params,
                          InferOptions &options, const DataRows &data,
                          int64_t batches,
                          std::map<std::string, double> &errors,
                          std::string &error) {
  if (!measureInt8Errors(modelPath, params, options, data, batches, errors,
                         error))
    return false;
  for (const auto &[id, e] : errors)
    if (e > options.maxError)
      options.fallbackOps.push_back(id);
  return true;
}

} // namespace mp
