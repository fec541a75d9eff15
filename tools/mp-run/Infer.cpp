//===- Infer.cpp - mp-run infer -------------------------------------------===//
//
// mp-run infer MODEL.mlir --checkpoint FILE: held-out accuracy of the
// checkpoint's parameters through the model's mp.predict function (an ONNX
// model's own weights without --checkpoint); with --calibrate N it writes
// INT8 calibration statistics instead, with --precision int8 --calibration
// FILE it runs the quantized model, with --time-batches N it times the
// predict-only session (mp::InferSession; docs/quantization.md).
// --check-numerics reports the first op per batch whose output had inf/nan
// or left FP16's range.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "mp/Session/Calibration.h"
#include "mp/Session/Environment.h"
#include "mp/Session/InferSession.h"

#include <chrono>
#include <cstdio>
#include <map>

namespace mprun {
namespace {

// The inference options' flags (--calibration, --quant-method, ...) come
// from InferOptions.def (mp-run.cpp registers them: inferFlags); these are
// the infer command's own.
// INT8 inference and calibration.
cl::opt<unsigned>
    calibrateBatches("calibrate", cl::cat(inferOptions),
                     cl::desc("infer: run N batches of the training split "
                              "through mp.predict with probes and write "
                              "calibration statistics (--calibration-out)"),
                     cl::init(0));
cl::opt<std::string>
    calibrationOut("calibration-out", cl::cat(inferOptions),
                   cl::desc("Where --calibrate writes the statistics"),
                   cl::init("calibration.json"));
cl::opt<unsigned> quantMeasure(
    "quant-measure", cl::cat(inferOptions),
    cl::desc("int8: run N calibration batches through the int8 and the f32 "
             "model, measure each quantized op's output error against f32, "
             "and let ops above --quant-max-error fall back (default 4; 0: "
             "the compile-time estimates only)"),
    cl::init(4));
cl::opt<unsigned>
    timeBatches("time-batches", cl::cat(inferOptions),
                cl::desc("infer: also time N predictions of one batch in "
                         "the predict-only session and print samples/s"),
                cl::init(0));

/// Each prediction batch is a step of the numerics checker's report.
struct InferenceObserver : PredictionMeter {
  mp::NumericsChecker *checker = nullptr;
  int64_t reported = 0;
  void beforePrediction(int64_t batch) override {
    if (checker)
      checker->beginStep(batch);
    PredictionMeter::beforePrediction(batch);
  }
  void afterPrediction(int64_t batch) override {
    PredictionMeter::afterPrediction(batch);
    mp::NumericsEvent event;
    if (checker && checker->endStep(event))
      reportNumerics(event, "batch", reported);
  }
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// A split's rows, as the library's calibration functions take them.
mp::DataRows rowsOf(const mp::DataSplit &split) {
  return {split.x.data(), split.rows};
}

/// --precision int8: where the activations' scales come from, and the
/// quantization flags, in `options`.
int setUpInt8(mp::Session &trained, mp::InferOptions &options,
              const mp::DataSplit &train) {
  std::string error;
  bool dynamic =
      options.quantization == mlir::mp::QuantizationMode::Int8Dynamic;
  bool calibrated = !options.calibrationPath.empty();
  // A QAT checkpoint carries its activation ranges.
  if (!dynamic && !calibrated && !checkpointPath.empty() &&
      !mp::readCheckpointScalars(checkpointPath, options.qatObservers, error))
    return fail(error);
  if (!dynamic && !calibrated && options.qatObservers.empty())
    return fail("--precision int8 needs --calibration FILE (write one "
                "with --calibrate N), a checkpoint of mp-run train --qat, "
                "or --precision int8-dynamic");
  if (!options.qatObservers.empty())
    std::printf("int8 scales from quantization-aware training: %zu "
                "activation observers in %s, weights per channel\n",
                options.qatObservers.size(), checkpointPath.c_str());
  if (quantMeasure == 0)
    return 0;
  std::map<std::string, double> errors;
  if (!mp::planMeasuredFallback(modelPath, trained.parameters(), options,
                                rowsOf(train), quantMeasure, errors, error))
    return fail(error);
  for (const auto &[id, e] : errors)
    std::printf("measured error of '%s' against f32: %.4f%s\n", id.c_str(), e,
                e > options.maxError ? " (falls back)" : "");
  return 0;
}

/// mp-run infer with --calibrate, --precision int8 or --time-batches: a
/// predict-only session (mp::InferSession) on the trained parameters.
int runInferSession(mp::Session &trained, mp::InferOptions options,
                    const std::string &precisionName,
                    const mp::DataSplit &train, const mp::DataSplit &test) {
  std::string error;
  bool int8 = options.mode == mp::InferOptions::Mode::Int8;
  if (calibrateBatches > 0) {
    if (int8 || options.precision != mp::FloatPrecision::F32)
      return fail("--calibrate measures the f32 model; drop --precision");
    options.mode = mp::InferOptions::Mode::Calibrate;
  } else if (int8) {
    if (int status = setUpInt8(trained, options, train))
      return status;
  }
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<mp::InferSession> session =
      mp::InferSession::create(modelPath, options, trained.parameters(), error);
  if (!session)
    return fail(error);
  double compileSeconds = secondsSince(start);

  if (calibrateBatches > 0) {
    int64_t probes = mp::writeCalibration(
        *session, rowsOf(train), calibrateBatches, calibrationOut, error);
    if (probes < 0)
      return fail(error);
    std::printf("calibrated %u batches (%lld rows of the training split): "
                "%lld probes written to %s\n",
                (unsigned)calibrateBatches,
                (long long)calibrateBatches * session->batchSize(),
                (long long)probes, calibrationOut.c_str());
    return 0;
  }

  if (int8) {
    // The f32 reference, from the trained session.
    double reference = mp::accuracy(trained, test.view(), error);
    if (reference < 0)
      return fail(error);
    std::printf("held-out accuracy %.2f%% (f32 reference)\n", reference);
  }
  auto inferStart = std::chrono::steady_clock::now();
  PredictionMeter meter;
  double acc = mp::accuracy(*session, test.view(), error, &meter);
  if (acc < 0)
    return fail(error);
  double seconds = secondsSince(inferStart);
  mp::CacheUse cache = session->cacheUse();
  std::printf("held-out accuracy %.2f%% (%s inference), %lld rows, %.0f "
              "samples/s, %s in %.*f s%s\n",
              acc, precisionName.c_str(), (long long)test.rows,
              test.rows / std::max(seconds, 1e-9),
              cache == mp::CacheUse::Loaded ? "loaded from the compile cache"
                                            : "compiled",
              cache == mp::CacheUse::Loaded ? 3 : 1, compileSeconds,
              cache == mp::CacheUse::Stored ? " (kept in the compile cache)"
                                            : "");
  if (cache == mp::CacheUse::Unusable)
    std::fprintf(stderr, "mp-run: note: compiled without the cache: %s\n",
                 session->cacheNote().c_str());
  int64_t f32Bytes = hostBytes(trained.parameters());
  std::printf("weights read per prediction: %lld bytes (f32 parameters: "
              "%lld bytes, %.2fx)\n",
              (long long)session->weightBytes(), (long long)f32Bytes,
              f32Bytes / std::max<double>(session->weightBytes(), 1));
  // The bytes bench/memory_bench.py reads (docs/memory.md).
  std::printf("memory: weights %lld bytes held by the session; compiled "
              "code held at most %lld bytes in a prediction (batch %lld)\n",
              (long long)session->weightBytes(), (long long)predictMemory.peak,
              (long long)session->batchSize());
  if (timeBatches == 0)
    return 0;
  if (!mp::runBatches(*session, rowsOf(test), 3, error)) // warm-up
    return fail(error);
  auto timed = std::chrono::steady_clock::now();
  if (!mp::runBatches(*session, rowsOf(test), timeBatches, error))
    return fail(error);
  std::printf("timed %u batches of %lld: %.0f samples/s (%s)\n",
              (unsigned)timeBatches, (long long)session->batchSize(),
              timeBatches * session->batchSize() /
                  std::max(secondsSince(timed), 1e-9),
              precisionName.c_str());
  return 0;
}

} // namespace

int runInfer(const char *argv0) {
  if (int status = refuseTrainFlags())
    return status;
  if (int status = resolveCheckpoint(/*create=*/false))
    return status;
  // The flags' text, parsed by the library. int8 runs on f32 parameters;
  // the quantized model is compiled apart.
  mp::TrainOptions options;
  mp::InferOptions inferOptions;
  std::string error;
  bool automatic = precision == "auto";
  if (!(automatic ? mp::parseTrainPrecision(precision, options, error)
                  : mp::parseInferPrecision(precision, inferOptions, error)) ||
      !inferFlags->apply(inferOptions, error))
    return fail(error);
  if (!automatic)
    options.precision = inferOptions.precision;
  if (int status = readTrainOptions(options))
    return status;
  bool int8 = inferOptions.mode == mp::InferOptions::Mode::Int8;
  inferOptions.modelBatch = options.modelBatch;
  // The lowering and the cache as the flags and the environment say
  // (MP_DUMP_PREDICT_IR names the predict-only session's dump).
  if (!mp::readOptionEnvironment(inferOptions, error))
    return fail(error);
  inferOptions.cache = options.cache;
  mp::copyLoweringOptions(inferOptions, options);
  // The measurements of --quant-measure run on the CPU; the session itself
  // runs where --device says.
  inferOptions.device = options.device;
  if (int status = refuseOnGpu(options, checkNumerics, calibrateBatches > 0))
    return status;
  if (checkNumerics)
    options.probes = mp::TrainOptions::Probes::EveryOp;

  OpenedSession opened;
  mp::DataSplit train, test;
  if (int status = openSession(options, opened))
    return status;
  mp::Session &session = *opened.session;
  if (opened.fromArtifact && (calibrateBatches > 0 || timeBatches > 0))
    return fail("--calibrate and --time-batches need the model (.mlir), not "
                "an artifact");
  std::string precisionName = precision;
  if (!int8) {
    precisionName = opened.precision;
    inferOptions.precision = session.trainOptions().precision;
  }
  if (int status = loadData(argv0, session, train, test))
    return status;
  if (train.rows < session.batchSize())
    return fail("the training set has fewer rows than one batch");
  std::unique_ptr<mp::NumericsChecker> checker;
  if (checkNumerics)
    checker = std::make_unique<mp::NumericsChecker>();

  // The trained parameters, or the model's own weights (an ONNX model's).
  mp::RunPosition position;
  if (checkpointPath.empty() && !session.hasInitialValues())
    return fail("infer needs --checkpoint (the trained parameters); only "
                "a model with its own weights (ONNX) runs without one");
  if (!checkpointPath.empty() &&
      !mp::restoreCheckpoint(session, checkpointPath, /*withState=*/false,
                             position, error))
    return fail(error);
  if (calibrateBatches > 0 || int8 || timeBatches > 0)
    return runInferSession(session, inferOptions, precisionName, train, test);
  auto inferStart = std::chrono::steady_clock::now();
  InferenceObserver observer;
  observer.checker = checker.get();
  double acc = mp::accuracy(session, test.view(), error, &observer);
  if (acc < 0)
    return fail(error);
  double seconds = secondsSince(inferStart);
  std::printf("held-out accuracy %.2f%% (%s inference), %lld rows, %.0f "
              "samples/s\n",
              acc, precisionName.c_str(), (long long)test.rows,
              test.rows / std::max(seconds, 1e-9));
  std::printf("memory: parameters %.3f MB (f32 host buffers)",
              megabytes(hostBytes(session.parameters())));
  if (uint64_t copies = session.predictionCopyBytes())
    std::printf(
        " and their %s copies %.3f MB",
        // ODS spellings are string literals.
        mlir::mp::stringifyFloatPrecision(session.trainOptions().precision)
            .data(),
        megabytes(copies));
  std::printf("; compiled code held at most %.3f MB in a prediction\n",
              megabytes(predictMemory.peak));
  if (checker)
    checker->printSummary(stdout);
  return 0;
}

} // namespace mprun
