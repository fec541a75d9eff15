//===- Calibration.h - INT8 calibration, measured errors --------*- C++ -*-===//
//
// What mp-run, the C API and Python share for INT8 inference: running
// batches of a data set through an InferSession, writing calibration
// statistics (docs/calibration-stats.md) from the f32 model's probes, and
// measuring each eligible op's error in the int8 model against the f32
// model, so that ops above the threshold fall back to f32.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_CALIBRATION_H
#define MP_SESSION_CALIBRATION_H

#include "mp/Session/InferSession.h"

#include <map>
#include <string>
#include <vector>

namespace mp {

/// Rows of a data set, row-major: `rows` rows of the session's feature
/// count. Batch i takes rows (i * batch + r) % rows, so a short data set
/// wraps around.
struct DataRows {
  const float *x = nullptr;
  int64_t rows = 0;
};

/// Predicts `batches` batches of `data` (the logits are dropped: the
/// session's probes are what is wanted).
bool runBatches(InferSession &session, const DataRows &data, int64_t batches,
                std::string &error);

/// Runs `batches` batches through `session` (an f32 model compiled with
/// InferOptions::Mode::Calibrate) with the statistics observer and writes
/// the statistics to `outPath`. Returns the number of probes, or -1 with
/// `error`. The observer is process-wide: one calibration or measurement
/// at a time (they are serialised).
int64_t writeCalibration(InferSession &session, const DataRows &data,
                         int64_t batches, const std::string &outPath,
                         std::string &error);

/// The relative RMS error of each eligible op's output in the int8 model
/// (`options`, every eligible op quantized) against the f32 model, over
/// `batches` batches of `data`; by op id.
bool measureInt8Errors(const std::string &modelPath,
                       const std::vector<HostTensor> &params,
                       InferOptions options, const DataRows &data,
                       int64_t batches, std::map<std::string, double> &errors,
                       std::string &error);

/// The INT8 planner's measured-error fallback: measures (above) and adds
/// every op whose error exceeds `options.maxError` to
/// `options.fallbackOps`; `errors` gets every measurement.
bool planMeasuredFallback(const std::string &modelPath,
                          const std::vector<HostTensor> &params,
                          InferOptions &options, const DataRows &data,
                          int64_t batches,
                          std::map<std::string, double> &errors,
                          std::string &error);

} // namespace mp

#endif // MP_SESSION_CALIBRATION_H
