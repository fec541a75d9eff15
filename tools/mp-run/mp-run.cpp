//===- mp-run.cpp - train a model in mixed precision ----------------------===//
//
// mp-run train MODEL.mlir|MODEL.onnx [options]: compiles the model's mp.loss
// function (an ONNX model's: --loss around its prediction)
// into a training step (autodiff, loss scaling, optimizer, AMP), JIT-compiles
// it for this CPU and trains on a data set, printing a line per epoch and
// the held-out accuracy; with --checkpoint it saves after every epoch (and
// every --checkpoint-every steps) and --resume continues from there.
// mp-run infer MODEL.mlir --checkpoint FILE: held-out accuracy of the
// checkpoint's parameters through the model's mp.predict function (an ONNX
// model's own weights without --checkpoint); with
// --calibrate N it writes INT8 calibration statistics instead, with
// --precision int8 --calibration FILE it runs the quantized model
// (docs/quantization.md).
// mp-run compare MODEL.mlir --precision f16|bf16: the ops of mp.predict
// listed by how far their mixed-precision output is from FP32's.
// --check-numerics (train, infer): the first op per step whose output had
// inf/nan or left FP16's range.
// train's stability monitor (--monitor, on by default) warns on stderr of a
// non-finite loss, loss spikes, repeated overflow, a loss scale pinned at
// its floor and underflowing gradients; --stats FILE writes the run's
// history as JSON (scripts/plot_training.py plots it).
//
//===----------------------------------------------------------------------===//

#include "mp/Session/Calibration.h"
#include "mp/Session/Hardware.h"
#include "mp/Session/InferSession.h"
#include "mp/Session/JitEntry.h"
#include "mp/Session/MonitorObserver.h"
#include "mp/Session/Numerics.h"
#include "mp/Session/OptionFlags.h"
#include "mp/Session/Session.h"
#include "mp/Session/Trainer.h"

#include "mprt/mprt.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

namespace cl = llvm::cl;

// Every default is the session library's (TrainOptions, TrainerOptions,
// InferOptions).
static const mp::TrainerOptions trainerDefaults;
static const mp::InferOptions inferDefaults;
static const mp::MonitorOptions monitorDefaults;

// Only these show in --help (LLVM registers hundreds of its own).
static cl::OptionCategory mpRunOptions("mp-run options");

static cl::opt<std::string> command(cl::Positional, cl::Required,
                                    cl::cat(mpRunOptions),
                                    cl::desc("<train|infer|compare|info>"));
static cl::opt<std::string>
    modelPath(cl::Positional, cl::Optional, cl::cat(mpRunOptions),
              cl::desc("<model.mlir | artifact.mpa (from mp-compile)>"));
static cl::opt<std::string> precision(
    "precision", cl::cat(mpRunOptions),
    cl::desc("f32 | f16 | bf16 | auto (what the hardware has: "
             "bf16 units, else f16 ones, else f32; `mp-run info` "
             "shows the choice) (infer also: int8, from --calibration; "
             "int8-dynamic, activation scales at run time)"),
    cl::init("f32"));
static cl::opt<bool> checkReplicas(
    "check-replicas", cl::cat(mpRunOptions),
    cl::desc("--distributed: after every step, check that all ranks hold "
             "bitwise equal parameters"),
    cl::init(false));
static cl::opt<std::string> initFrom(
    "init-from", cl::cat(mpRunOptions),
    cl::desc("train: start from this checkpoint's parameters (fine-tuning); "
             "optimizer state, step and epoch start afresh"),
    cl::value_desc("FILE"));
static cl::opt<unsigned> epochs("epochs", cl::cat(mpRunOptions),
                                cl::desc("Passes over the data"),
                                cl::init(trainerDefaults.epochs));
static cl::opt<std::string>
    initScheme("init", cl::cat(mpRunOptions),
               cl::desc("Weight initialisation: he-uniform (default), "
                        "he-normal, xavier-uniform, xavier-normal or zeros; "
                        "biases start at zero"),
               cl::init("he-uniform"));
static cl::opt<std::string>
    checkpointPath("checkpoint", cl::cat(mpRunOptions),
                   cl::desc("Checkpoint file (.npz), or a directory (an "
                            "existing one, or a path ending in '/') for "
                            "DIR/checkpoint.npz: train saves it after every "
                            "epoch (atomically), infer reads it"),
                   cl::init(""));
static cl::opt<unsigned> checkpointEvery(
    "checkpoint-every", cl::cat(mpRunOptions),
    cl::desc("Also save the checkpoint every N optimizer steps (0: only at "
             "the end of each epoch); the one it replaces is kept as "
             "FILE.prev"),
    cl::init(trainerDefaults.checkpointEvery));
static cl::opt<bool> checkNumerics(
    "check-numerics", cl::cat(mpRunOptions),
    cl::desc("Probe every op's output (--mp-check-numerics) and report, per "
             "step, the first op whose output had inf/nan or went beyond "
             "FP16's range, with a summary at the end"),
    cl::init(false));

// The stability monitor (train only; docs/training.md).
enum class MonitorSwitch { Off, On };
static cl::opt<MonitorSwitch>
    monitor("monitor", cl::cat(mpRunOptions),
            cl::desc("train: warn (stderr) of a non-finite loss, loss spikes, "
                     "repeated overflow, a loss scale pinned at its floor and "
                     "gradients underflowing to zero"),
            cl::values(clEnumValN(MonitorSwitch::On, "on", "check every step"),
                       clEnumValN(MonitorSwitch::Off, "off", "no checks")),
            cl::init(MonitorSwitch::On));
static cl::opt<mp::RepairMode> autoPrecisionRepair(
    "auto-precision-repair", cl::cat(mpRunOptions),
    cl::desc("train: when steps keep failing in a way loss scaling cannot "
             "cure (inf/nan loss, overflow at the scale's floor), find the "
             "f16/bf16 ops responsible with probes, keep them in f32, "
             "recompile and continue (default: on with --precision auto)"),
    cl::values(clEnumValN(mp::RepairMode::On, "on", "repair"),
               clEnumValN(mp::RepairMode::Off, "off", "never repair")),
    cl::init(mp::RepairMode::Auto));
// Named in mp_run_main (claimStatsFlag): LLVM registers a -stats of its own.
static cl::opt<std::string>
    statsPath(cl::cat(mpRunOptions),
              cl::desc("train: write the run's history (per step loss, "
                       "gradient norm, scale, skipped; the monitor's reports; "
                       "per epoch figures) as JSON to FILE, after every "
                       "epoch (atomically)"),
              cl::value_desc("FILE"), cl::init(""));
static cl::opt<double>
    spikeFactor("spike-factor", cl::cat(mpRunOptions),
                cl::desc("Monitor: a loss above this factor times the "
                         "median of the recent steps is a spike"),
                cl::init(monitorDefaults.spikeFactor));
static cl::opt<int> overflowWindow(
    "overflow-window", cl::cat(mpRunOptions),
    cl::desc("Monitor: the steps in which --overflow-limit skipped steps "
             "are repeated overflow"),
    cl::init(monitorDefaults.overflowWindow));
static cl::opt<int>
    overflowLimit("overflow-limit", cl::cat(mpRunOptions),
                  cl::desc("Monitor: skipped steps within --overflow-window "
                           "that are reported as repeated overflow"),
                  cl::init(monitorDefaults.overflowLimit));
static cl::opt<unsigned>
    compareTop("top", cl::cat(mpRunOptions),
               cl::desc("compare: how many ops to list (0: all)"),
               cl::init(20));
static cl::opt<bool>
    noCache("no-cache", cl::cat(mpRunOptions),
            cl::desc("Compile the training step and inference code without "
                     "the compile cache (also MP_CACHE=off)"),
            cl::init(false));
static cl::opt<bool> resume("resume", cl::cat(mpRunOptions),
                            cl::desc("Continue training from --checkpoint"),
                            cl::init(false));
static cl::opt<std::string>
    dataPath("data", cl::cat(mpRunOptions),
             cl::desc("digits (the default data set) or FILE.npz with "
                      "x_train, y_train, x_test, y_test (f32, labels "
                      "one-hot)"),
             cl::init("digits"));

// INT8 inference and calibration (infer only).
static cl::opt<unsigned>
    calibrateBatches("calibrate", cl::cat(mpRunOptions),
                     cl::desc("infer: run N batches of the training split "
                              "through mp.predict with probes and write "
                              "calibration statistics (--calibration-out)"),
                     cl::init(0));
static cl::opt<std::string>
    calibrationOut("calibration-out", cl::cat(mpRunOptions),
                   cl::desc("Where --calibrate writes the statistics"),
                   cl::init("calibration.json"));
static cl::opt<std::string>
    calibrationPath("calibration", cl::cat(mpRunOptions),
                    cl::desc("Calibration statistics for --precision int8"),
                    cl::init(""));
static cl::opt<std::string> quantMethod(
    "quant-method", cl::cat(mpRunOptions),
    cl::desc("int8 activation threshold: minmax | percentile | "
             "entropy"),
    cl::init(
        mlir::mp::stringifyQuantizationMethod(inferDefaults.method).str()));
static cl::opt<double> quantPercentile("quant-percentile",
                                       cl::cat(mpRunOptions),
                                       cl::desc("Percentile for "
                                                "--quant-method percentile"),
                                       cl::init(inferDefaults.percentile));
static cl::opt<bool> quantPerChannel("quant-per-channel", cl::cat(mpRunOptions),
                                     cl::desc("int8 weights: one scale per "
                                              "output channel"),
                                     cl::init(inferDefaults.perChannel));
static cl::opt<double>
    quantMaxError("quant-max-error", cl::cat(mpRunOptions),
                  cl::desc("int8: ops with a larger estimated relative error "
                           "fall back (--quant-fallback)"),
                  cl::init(inferDefaults.maxError));
static cl::opt<std::string> quantFallback(
    "quant-fallback", cl::cat(mpRunOptions),
    cl::desc("Precision of ops that fall back: f32 | f16"),
    cl::init(mlir::mp::stringifyFloatPrecision(inferDefaults.fallback).str()));
static cl::opt<std::string>
    quantReport("quant-report", cl::cat(mpRunOptions),
                cl::desc("int8: write --mp-quantize's JSON report here"),
                cl::init(""));
static cl::opt<unsigned> quantMeasure(
    "quant-measure", cl::cat(mpRunOptions),
    cl::desc("int8: run N calibration batches through the int8 and the f32 "
             "model, measure each quantized op's output error against f32, "
             "and let ops above --quant-max-error fall back (default 4; 0: "
             "the compile-time estimates only)"),
    cl::init(4));
static cl::opt<unsigned>
    timeBatches("time-batches", cl::cat(mpRunOptions),
                cl::desc("infer: also time N predictions of one batch in "
                         "the predict-only session and print samples/s"),
                cl::init(0));

/// The training options' flags, registered by runCommandLine.
static mp::TrainOptionFlags *trainFlags = nullptr;

namespace {

/// The digits data exported by scripts/setup.sh next to the tools.
std::string defaultDataPath(const char *argv0) {
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, (void *)&command);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "data", "digits.npz");
  return std::string(path);
}

void reportNumerics(const mp::NumericsEvent &event, const char *what,
                    int64_t &reported);

/// The most bytes compiled code held during any one measured call (its
/// malloc/free go to libmprt's counted heap).
struct PeakMeter {
  int64_t start = 0, peak = 0;
  void begin() {
    mprt_memory_reset_peak();
    mprt_memory m;
    mprt_memory_stats(&m);
    start = m.current_bytes;
  }
  void end() {
    mprt_memory m;
    mprt_memory_stats(&m);
    peak = std::max(peak, m.peak_bytes - start);
  }
};
PeakMeter trainMemory, predictMemory;

/// Meters the memory of every prediction.
struct PredictionMeter : mp::RunObserver {
  void beforePrediction(int64_t) override { predictMemory.begin(); }
  void afterPrediction(int64_t) override { predictMemory.end(); }
};

/// mp-run infer --check-numerics: each prediction batch is a step of the
/// checker's report.
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

/// mp-run train: memory of steps and predictions, and the numerics
/// checker's report per step (evaluations are not steps).
struct TrainingObserver : PredictionMeter {
  mp::Session *session = nullptr;
  mp::NumericsChecker *checker = nullptr;
  int64_t reported = 0;
  void beforeStep(int64_t step) override {
    if (checker)
      checker->beginStep(step);
    trainMemory.begin();
  }
  void afterRepair(const mp::RepairReport &report) override {
    std::printf("%s\n", report.line().c_str());
    std::fflush(stdout);
  }
  void afterStep(int64_t step, const mp::StepResult &result) override {
    trainMemory.end();
    mp::NumericsEvent event;
    if (checker && checker->endStep(event)) {
      reportNumerics(event, "step", reported);
      if (!result.stepped && reported <= 10)
        std::printf("numerics: step %lld was skipped; loss scale now %g\n",
                    (long long)step, session->stepState().scale);
    }
  }
  void beforeEvaluation() override {
    if (checker)
      checker->pause();
  }
  void afterEvaluation() override {
    if (checker)
      checker->resume();
  }
};

double megabytes(int64_t bytes) { return bytes / (1024.0 * 1024.0); }

int64_t hostBytes(const std::vector<mp::HostTensor> &tensors) {
  int64_t bytes = 0;
  for (const mp::HostTensor &t : tensors)
    bytes += t.numElements() * static_cast<int64_t>(sizeof(float));
  return bytes;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "mp-run: error: %s\n", message.c_str());
  return 1;
}

/// One line for a step the numerics checker flagged; the first few only.
void reportNumerics(const mp::NumericsEvent &event, const char *what,
                    int64_t &reported) {
  constexpr int64_t kMaxLines = 10;
  if (++reported > kMaxLines) {
    if (reported == kMaxLines + 1)
      std::printf("numerics: (further steps only in the summary)\n");
    return;
  }
  if (event.nonfinite)
    std::printf("numerics: %s %lld: first inf/nan in the output of %s "
                "(%lld of %lld %s elements)\n",
                what, (long long)event.step, event.id.c_str(),
                (long long)event.nonfinite, (long long)event.numElements,
                mp::dtypeName(event.dtype));
  else
    std::printf("numerics: %s %lld: first output beyond FP16's range: %s "
                "(max |x| %.4g, %s)\n",
                what, (long long)event.step, event.id.c_str(), event.absMax,
                mp::dtypeName(event.dtype));
}

/// mp-run compare: one batch of the test split through mp.predict in FP32
/// and in mixed precision, with the same parameters, and the ops listed by
/// how far the mixed run's output is from FP32's.
/// An artifact fixes the compile options: given ones must agree with it,
/// and what needs the model itself (probes, INT8) is an error.
int checkArtifactOptions(const mp::Session &session,
                         const mp::TrainOptions &given) {
  const mp::TrainOptions &compiled = session.trainOptions();
  if (given.automaticPrecision)
    return fail("artifact '" + modelPath + "' was compiled with --precision " +
                mlir::mp::stringifyFloatPrecision(compiled.precision).str() +
                ": --precision auto chooses when compiling (mp-compile "
                "--precision auto)");
  // The step's options given here must be the artifact's.
  std::vector<std::string> stepFlags;
  for (const std::string &name : trainFlags->given())
    if (mp::findTrainOption(name)->scope == mp::OptionScope::Step)
      stepFlags.push_back(name);
  if ((precision.getNumOccurrences() &&
       given.precision != compiled.precision) ||
      !mp::firstDifferentOption(given, compiled, stepFlags).empty())
    return fail(
        "artifact '" + modelPath + "' was compiled with --precision " +
        mlir::mp::stringifyFloatPrecision(compiled.precision).str() +
        " --optimizer " +
        mlir::mp::stringifyOptimizerAlgorithm(compiled.optimizer).str() +
        " (and its loss scale and hyperparameters): compile options cannot "
        "change when it runs; run mp-compile again");
  if (given.tf32.value_or(false))
    return fail("--tf32: artifacts are CPU code, and the CPU has no TF32");
  if (checkNumerics)
    return fail("--check-numerics needs the model (.mlir), not an artifact");
  if (calibrateBatches > 0 || timeBatches > 0)
    return fail("--calibrate and --time-batches need the model (.mlir), not "
                "an artifact");
  return 0;
}

/// mp-run info: what the machine offers and what --precision auto picks.
int runInfo() {
  std::printf("%s", mp::describeHardware(mp::detectHardware()).c_str());
  return 0;
}

int runCompare(const mp::TrainOptions &mixedOptions, const char *argv0) {
  if (mixedOptions.precision == mp::FloatPrecision::F32)
    return fail("compare needs --precision f16 or bf16 (it compares against "
                "f32)");
  mp::TrainOptions f32Options = mixedOptions;
  f32Options.precision = mp::FloatPrecision::F32;
  f32Options.lossScale = mp::LossScaleOption();
  std::string error;
  std::unique_ptr<mp::Session> reference =
      mp::Session::create(modelPath, f32Options, error);
  if (!reference)
    return fail(error);
  std::unique_ptr<mp::Session> mixed =
      mp::Session::create(modelPath, mixedOptions, error);
  if (!mixed)
    return fail(error);
  if (!mixed->canPredict())
    return fail("the model has no function marked mp.predict to compare");
  int64_t b = mixed->batchSize(), f = mixed->numFeatures(),
          c = mixed->numClasses();
  std::string path =
      dataPath == "digits" ? defaultDataPath(argv0) : std::string(dataPath);
  mp::DataSplit train, test;
  if (!mp::loadDataset(path, f, c, train, test, error))
    return fail(error);
  if (test.rows < b)
    return fail("the test split has fewer rows than one batch");
  mp::RunPosition position;
  if (!checkpointPath.empty() &&
      (!mp::restoreCheckpoint(*reference, checkpointPath, false, position,
                              error) ||
       !mp::restoreCheckpoint(*mixed, checkpointPath, false, position,
                              error)))
    return fail(error);

  std::vector<float> x(test.x.begin(), test.x.begin() + b * f), logits(b * c);
  mp::ProbeRecorder referenceRun;
  if (!reference->predict(x.data(), logits.data(), error))
    return fail(error);
  mp::ProbeRecorder mixedRun;
  if (!mixed->predict(x.data(), logits.data(), error))
    return fail(error);
  std::printf("per-op comparison of %s against f32: one batch of %lld test "
              "rows through mp.predict, parameters from %s; relative error "
              "= ||%s - f32|| / ||f32||\n",
              precision.c_str(), (long long)b,
              checkpointPath.empty() ? "the seed" : checkpointPath.c_str(),
              precision.c_str());
  if (mp::printComparison(referenceRun, mixedRun, compareTop, stdout) == 0)
    return fail("no probed op of the mixed-precision run matched the f32 run");
  return 0;
}

//===----------------------------------------------------------------------===//
// Calibration, INT8 inference and timed inference (mp::InferSession)
//===----------------------------------------------------------------------===//

/// Runs `batches` batches of `split` (from its first row, wrapping).
/// A split's rows, as the library's calibration functions take them.
mp::DataRows rowsOf(const mp::DataSplit &split) {
  return {split.x.data(), split.rows};
}

/// mp-run infer with --calibrate, --precision int8 or --time-batches.
int runInferSession(mp::Session &trained, mp::InferOptions options,
                    const mp::DataSplit &train, const mp::DataSplit &test) {
  std::string error;
  bool int8 = options.mode == mp::InferOptions::Mode::Int8;
  if (calibrateBatches > 0) {
    if (int8 || options.precision != mp::FloatPrecision::F32)
      return fail("--calibrate measures the f32 model; drop --precision");
    options.mode = mp::InferOptions::Mode::Calibrate;
  } else if (int8) {
    bool dynamic =
        options.quantization == mlir::mp::QuantizationMode::Int8Dynamic;
    // A QAT checkpoint carries its activation ranges.
    if (!dynamic && calibrationPath.empty() && !checkpointPath.empty() &&
        !mp::readCheckpointScalars(checkpointPath, options.qatObservers, error))
      return fail(error);
    if (!dynamic && calibrationPath.empty() && options.qatObservers.empty())
      return fail("--precision int8 needs --calibration FILE (write one "
                  "with --calibrate N), a checkpoint of mp-run train --qat, "
                  "or --precision int8-dynamic");
    if (!options.qatObservers.empty())
      std::printf("int8 scales from quantization-aware training: %zu "
                  "activation observers in %s, weights per channel\n",
                  options.qatObservers.size(), checkpointPath.c_str());
    if (dynamic && !calibrationPath.empty())
      return fail("--precision int8-dynamic takes no --calibration (each "
                  "activation is scaled by its own max |x| at run time)");
    options.calibrationPath = calibrationPath;
    options.percentile = quantPercentile;
    options.perChannel = quantPerChannel;
    options.maxError = quantMaxError;
    options.reportPath = quantReport;
    if (quantMeasure > 0) {
      std::map<std::string, double> errors;
      if (!mp::planMeasuredFallback(modelPath, trained.parameters(), options,
                                    rowsOf(train), quantMeasure, errors, error))
        return fail(error);
      for (const auto &[id, e] : errors)
        std::printf("measured error of '%s' against f32: %.4f%s\n", id.c_str(),
                    e, e > quantMaxError ? " (falls back)" : "");
    }
  }
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<mp::InferSession> session =
      mp::InferSession::create(modelPath, options, trained.parameters(), error);
  if (!session)
    return fail(error);
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

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
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - inferStart)
                       .count();
  mp::CacheUse cache = session->cacheUse();
  std::printf("held-out accuracy %.2f%% (%s inference), %lld rows, %.0f "
              "samples/s, %s in %.*f s%s\n",
              acc, precision.c_str(), (long long)test.rows,
              test.rows / std::max(seconds, 1e-9),
              cache == mp::CacheUse::Loaded ? "loaded from the compile cache"
                                            : "compiled",
              cache == mp::CacheUse::Loaded ? 3 : 1, compileSeconds,
              cache == mp::CacheUse::Stored ? " (kept in the compile cache)"
                                            : "");
  if (cache == mp::CacheUse::Unusable)
    std::fprintf(stderr, "mp-run: note: compiled without the cache: %s\n",
                 session->cacheNote().c_str());
  int64_t f32Bytes = 0;
  for (const mp::HostTensor &p : trained.parameters())
    f32Bytes += p.numElements() * 4;
  std::printf("weights read per prediction: %lld bytes (f32 parameters: "
              "%lld bytes, %.2fx)\n",
              (long long)session->weightBytes(), (long long)f32Bytes,
              f32Bytes / std::max<double>(session->weightBytes(), 1));
  // The bytes bench/memory_bench.py reads (docs/memory.md).
  std::printf("memory: weights %lld bytes held by the session; compiled "
              "code held at most %lld bytes in a prediction (batch %lld)\n",
              (long long)session->weightBytes(), (long long)predictMemory.peak,
              (long long)session->batchSize());
  if (timeBatches > 0) {
    if (!mp::runBatches(*session, rowsOf(test), 3, error)) // warm-up
      return fail(error);
    auto timed = std::chrono::steady_clock::now();
    if (!mp::runBatches(*session, rowsOf(test), timeBatches, error))
      return fail(error);
    double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - timed)
            .count();
    std::printf("timed %u batches of %lld: %.0f samples/s (%s)\n",
                (unsigned)timeBatches, (long long)session->batchSize(),
                timeBatches * session->batchSize() / std::max(t, 1e-9),
                precision.c_str());
  }
  return 0;
}

/// LLVM's -stats (its statistics, which Debian's LLVM compiles out) is
/// registered with LLVM's common options, after mp-run's static ones: it
/// is dropped so that --stats names mp-run's stats file.
void claimStatsFlag() {
  auto &registered = cl::getRegisteredOptions();
  auto llvmStats = registered.find("stats");
  if (llvmStats != registered.end() && llvmStats->second != &statsPath)
    llvmStats->second->removeArgument();
  statsPath.setArgStr("stats");
}

} // namespace

static int runCommandLine(int argc, char **argv);

/// mp-run's whole command line. The tool's main only calls this, so the
/// device bundle's one shared library (scripts/gpu_bundle.sh) holds mp-run
/// and the launcher stays a few bytes.
extern "C" int mp_run_main(int argc, char **argv) {
  int status = runCommandLine(argc, argv);
  // A data-parallel rank that fails ends the job: the others would wait
  // for it in the next all-reduce.
  if (status != 0)
    mprt_dist_abort(status);
  return status;
}

static int runCommandLine(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The training options' flags (TrainOptions.def); --precision (infer
  // takes int8 too) and --no-cache are mp-run's own.
  mp::TrainOptionFlags flags(mpRunOptions, {"precision", "cache"});
  trainFlags = &flags;
  claimStatsFlag();
  cl::HideUnrelatedOptions(mpRunOptions);
  cl::ParseCommandLineOptions(argc, argv,
                              "mp-run: train models in mixed precision\n");
  if (command != "train" && command != "infer" && command != "compare" &&
      command != "info")
    return fail("unknown command '" + command +
                "': expected 'train', 'infer', 'compare' or 'info'");
  if (command == "info")
    return modelPath.empty() ? runInfo()
                             : fail("info takes no model: it describes the "
                                    "machine");
  if (modelPath.empty())
    return fail(command + " needs a model (.mlir, .onnx) or an artifact (.mpa)");
  if (resume && checkpointPath.empty())
    return fail("--resume needs --checkpoint");
  if (command != "train" &&
      (trainFlags->wasGiven("qat") || trainFlags->wasGiven("qat-freeze-after") ||
       !initFrom.empty()))
    return fail("--qat, --qat-freeze-after and --init-from are for train "
                "(infer --precision int8 reads a QAT checkpoint's scales)");
  if (resume && !initFrom.empty())
    return fail("--init-from starts a new run from a checkpoint's "
                "parameters; --resume continues one: use one of them");
  if (command != "train" && autoPrecisionRepair.getNumOccurrences())
    return fail("--auto-precision-repair is for train");
  if (command != "train" && trainFlags->wasGiven("weight-copies"))
    return fail("--weight-copies is for train (predictions always convert "
                "their weights once)");
  if (command != "train" &&
      (!statsPath.empty() || monitor.getNumOccurrences() ||
       spikeFactor.getNumOccurrences() || overflowWindow.getNumOccurrences() ||
       overflowLimit.getNumOccurrences()))
    return fail("--stats, --monitor, --spike-factor, --overflow-window and "
                "--overflow-limit are for train");
  mp::MonitorOptions monitorOptions;
  monitorOptions.spikeFactor = spikeFactor;
  monitorOptions.overflowWindow = overflowWindow;
  monitorOptions.overflowLimit = overflowLimit;
  {
    std::string error; // refused before the model is compiled
    if (!mp::validateMonitorOptions(monitorOptions, error))
      return fail(error);
  }
  mp::InitScheme scheme;
  if (!mp::parseInitScheme(initScheme, scheme))
    return fail("bad --init '" + initScheme +
                "': expected he-uniform, he-normal, xavier-uniform, "
                "xavier-normal or zeros");
  {
    std::string path = checkpointPath, error;
    if (!mp::resolveCheckpointPath(path, command == "train", error))
      return fail(error);
    checkpointPath = path;
  }

  // The flags' text, parsed by the library (the C API and Python parse
  // theirs there too). int8 runs on f32 parameters; the quantized model is
  // compiled apart.
  mp::TrainOptions options;
  mp::InferOptions inferOptions;
  std::string error;
  if (command == "train" && llvm::StringRef(precision).starts_with("int8"))
    return fail("--precision int8 is for infer (post-training quantization "
                "of a trained checkpoint)");
  bool parsedPrecision =
      command == "compare"
          ? mp::parsePrecision(precision, options.precision, error)
      : command == "infer" && precision != "auto"
          ? mp::parseInferPrecision(precision, inferOptions, error)
          : mp::parseTrainPrecision(precision, options, error);
  if (!parsedPrecision || !trainFlags->apply(options, error) ||
      !mp::parseQuantMethod(quantMethod, inferOptions.method, error) ||
      !mp::parseQuantFallback(quantFallback, inferOptions.fallback, error))
    return fail(error);
  bool int8 = inferOptions.mode == mp::InferOptions::Mode::Int8;
  if (command == "infer" && precision != "auto")
    options.precision = inferOptions.precision;
  // Errors in option combinations come before the model is compiled.
  if (!mp::verifyTrainOptions(options, error))
    return fail(error);
  inferOptions.modelBatch = options.modelBatch;
  if (noCache)
    options.cache.enabled = false;
  inferOptions.cache = options.cache;
  // The measurements of --quant-measure run on the CPU; the session itself
  // runs where --device says.
  inferOptions.device = options.device;
  if (options.device == mp::Device::Cuda) {
    if (llvm::StringRef(modelPath).ends_with(".mpa") ||
        mp::Session::isArtifact(modelPath))
      return fail("--device cuda compiles the model (.mlir); artifacts are "
                  "CPU code");
    if (command == "infer" && calibrateBatches > 0)
      return fail("--device cuda: calibration runs on the CPU (drop --device "
                  "cuda)");
    if (checkNumerics || command == "compare")
      return fail("--device cuda: --check-numerics and compare run on the "
                  "CPU (drop --device cuda)");
  }
  bool distributed = options.distributed;
  if (distributed && command != "train")
    return fail("--distributed is for train");
  if (checkReplicas && !distributed)
    return fail("--check-replicas needs --distributed");
  if (distributed && (llvm::StringRef(modelPath).ends_with(".mpa") ||
                      mp::Session::isArtifact(modelPath)))
    return fail("--distributed compiles the model (.mlir, .onnx): an "
                "artifact's step has no all-reduce");
  if (command == "compare") {
    if (llvm::StringRef(modelPath).ends_with(".mpa") ||
        mp::Session::isArtifact(modelPath))
      return fail("compare needs the model (.mlir), not an artifact");
    options.probes = mp::TrainOptions::Probes::ComputeOps;
    return runCompare(options, argv[0]);
  }
  if (checkNumerics)
    options.probes = mp::TrainOptions::Probes::EveryOp;

  // An artifact (mp-compile) is loaded, not compiled: by its trailer, or by
  // its extension so a damaged one gets the artifact's errors.
  bool fromArtifact = llvm::StringRef(modelPath).ends_with(".mpa") ||
                      mp::Session::isArtifact(modelPath);
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<mp::Session> session =
      fromArtifact ? mp::Session::open(modelPath, error, &options.seed)
                   : mp::Session::create(modelPath, options, error);
  if (!session)
    return fail(error);
  if (scheme != mp::InitScheme::HeUniform)
    session->initialiseParameters(options.seed, scheme);
  if (fromArtifact)
    if (int status = checkArtifactOptions(*session, options))
      return status;
  // The precision the session runs in (an artifact's, or auto's choice),
  // and why, first.
  if (!int8) {
    precision =
        mlir::mp::stringifyFloatPrecision(session->trainOptions().precision)
            .str();
    inferOptions.precision = session->trainOptions().precision;
  }
  if (!session->precisionDecision().empty()) {
    std::printf("%s\n", session->precisionDecision().c_str());
    std::fflush(stdout);
  }
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int64_t b = session->batchSize(), f = session->numFeatures(),
          c = session->numClasses();
  // Data-parallel: --batch-size is the global batch, b each rank's share.
  int64_t batchSize = options.modelBatch;
  if (batchSize != 0 && batchSize != b * session->ranks())
    return fail("--batch-size " + std::to_string(batchSize) +
                " does not match the model's static batch of " +
                std::to_string(b));
  if (!session->canPredict())
    return fail("the model has no function marked mp.predict, so accuracy "
                "cannot be measured");

  std::string path =
      dataPath == "digits" ? defaultDataPath(argv[0]) : std::string(dataPath);
  mp::DataSplit train, test;
  if (!mp::loadDataset(path, f, c, train, test, error))
    return fail(error + (dataPath == "digits"
                             ? " (run scripts/setup.sh to export the digits "
                               "data set)"
                             : ""));
  if (train.rows < b)
    return fail("the training set has fewer rows than one batch");

  std::unique_ptr<mp::NumericsChecker> checker;
  if (checkNumerics)
    checker = std::make_unique<mp::NumericsChecker>();
  if (command == "infer") {
    // The trained parameters, or the model's own weights (an ONNX model's).
    mp::RunPosition position;
    if (checkpointPath.empty() && !session->hasInitialValues())
      return fail("infer needs --checkpoint (the trained parameters); only "
                  "a model with its own weights (ONNX) runs without one");
    if (!checkpointPath.empty() &&
        !mp::restoreCheckpoint(*session, checkpointPath, /*withState=*/false,
                               position, error))
      return fail(error);
    if (calibrateBatches > 0 || int8 || timeBatches > 0)
      return runInferSession(*session, inferOptions, train, test);
    auto inferStart = std::chrono::steady_clock::now();
    InferenceObserver observer;
    observer.checker = checker.get();
    double acc = mp::accuracy(*session, test.view(), error, &observer);
    if (acc < 0)
      return fail(error);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - inferStart)
                         .count();
    std::printf("held-out accuracy %.2f%% (%s inference), %lld rows, %.0f "
                "samples/s\n",
                acc, precision.c_str(), (long long)test.rows,
                test.rows / std::max(seconds, 1e-9));
    std::printf("memory: parameters %.3f MB (f32 host buffers)",
                megabytes(hostBytes(session->parameters())));
    if (uint64_t copies = session->predictionCopyBytes())
      std::printf(
          " and their %s copies %.3f MB",
          mlir::mp::stringifyFloatPrecision(session->trainOptions().precision)
              .data(), // ODS spellings are string literals
          megabytes(copies));
    std::printf("; compiled code held at most %.3f MB in a prediction\n",
                megabytes(predictMemory.peak));
    if (checker)
      checker->printSummary(stdout);
    return 0;
  }

  mp::TrainerOptions trainerOptions;
  trainerOptions.epochs = epochs;
  trainerOptions.seed = options.seed;
  trainerOptions.checkpointPath = checkpointPath;
  trainerOptions.checkpointEvery = checkpointEvery;
  trainerOptions.resume = resume;
  trainerOptions.initFromPath = initFrom;
  trainerOptions.repair.mode = autoPrecisionRepair;
  trainerOptions.checkReplicas = checkReplicas;
  // Data-parallel: rank 0 speaks for the job (errors come from every rank).
  if (session->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    return fail("cannot silence rank " + std::to_string(session->rank()));
  std::unique_ptr<mp::Trainer> trainer = mp::Trainer::create(
      *session, train.view(), test.view(), trainerOptions, error);
  if (!trainer)
    return fail(error);

  // A step from the compile cache was loaded, like an artifact.
  mp::CacheUse cache = session->cacheUse();
  bool loaded = fromArtifact || cache == mp::CacheUse::Loaded;
  std::printf("mp-run: %s, precision %s, %lld train / %lld test rows, batch "
              "%lld, %s in %.*f s%s%s\n",
              modelPath.c_str(), precision.c_str(), (long long)train.rows,
              (long long)test.rows, (long long)b,
              fromArtifact                     ? "loaded"
              : cache == mp::CacheUse::Loaded ? "loaded from the compile cache"
                                               : "compiled",
              loaded ? 3 : 1, compileSeconds,
              cache == mp::CacheUse::Stored ? " (kept in the compile cache)"
                                            : "",
              session->isVectorized() ? "" : " (scalar loops)");
  if (cache == mp::CacheUse::Unusable)
    std::fprintf(stderr, "mp-run: note: compiled without the cache: %s\n",
                 session->cacheNote().c_str());
  if (session->isDistributed())
    std::printf("data-parallel over %lld MPI ranks: global batch %lld (%lld "
                "rows per rank), gradients averaged by one all-reduce a "
                "step; %lld steps an epoch\n",
                (long long)session->ranks(), (long long)(b * session->ranks()),
                (long long)b, (long long)trainer->batchesPerEpoch());
  if (!initFrom.empty())
    std::printf("starting from the parameters of %s\n", initFrom.c_str());
  // The session's options: an artifact compiled with --qat trains so too.
  const mp::TrainOptions &compiled = session->trainOptions();
  if (compiled.qat)
    std::printf("quantization-aware training: int8 fake quantization, "
                "weights per channel, activations through observers saved "
                "with the checkpoint%s\n",
                compiled.qatFreezeAfter > 0
                    ? (" (frozen after step " +
                       std::to_string(compiled.qatFreezeAfter) + ")")
                          .c_str()
                    : "");
  if (resume)
    std::printf("resuming at epoch %lld, batch %lld from %s\n",
                (long long)trainer->position().epoch + 1,
                (long long)trainer->position().batch, checkpointPath.c_str());
  if (!trainer->resumedPins().empty()) {
    std::printf("recompiled: the checkpoint keeps in f32");
    for (const std::string &pin : trainer->resumedPins())
      std::printf(" %s", pin.c_str());
    std::printf("\n");
  }
  if (trainer->repairing())
    std::printf("precision repair: on (steps that fail in f16/bf16 are "
                "probed and their ops kept in f32)\n");
  std::fflush(stdout); // a supervisor (scripts/kill_resume.py) waits for it
  TrainingObserver observer;
  observer.session = session.get();
  observer.checker = checker.get();
  mp::MonitorConfig monitorConfig;
  monitorConfig.checks = monitor == MonitorSwitch::On;
  monitorConfig.options = monitorOptions;
  monitorConfig.statsPath = statsPath;
  monitorConfig.header = mp::describeRun(modelPath, session->trainOptions());
  monitorConfig.numerics = checker.get();
  monitorConfig.onReport = [](const mp::StabilityReport &report) {
    std::fprintf(stderr, "mp-run: warning: %s\n",
                 mp::formatReport(report).c_str());
  };
  std::unique_ptr<mp::MonitorObserver> monitorObserver =
      mp::MonitorObserver::create(std::move(monitorConfig), &observer, *trainer,
                                  error);
  if (!monitorObserver)
    return fail(error);
  while (!trainer->finished()) {
    mp::EpochReport report;
    if (!trainer->runEpoch(report, error, monitorObserver.get())) {
      // What the run did up to the failure is worth plotting.
      std::string ignored;
      monitorObserver->writeStats(ignored);
      return fail(error);
    }
    std::printf("%s\n", mp::formatEpochLine(report).c_str());
    std::fflush(stdout);
  }
  if (checker)
    checker->pause();
  double acc = mp::accuracy(*session, test.view(), error);
  if (acc < 0)
    return fail(error);
  double trainSeconds = trainer->trainSeconds();
  int64_t trained = trainer->samplesTrained();
  std::printf("held-out accuracy %.2f%% (%s), %.0f samples/s, %lld skipped "
              "steps\n",
              acc, precision.c_str(), trained / std::max(trainSeconds, 1e-9),
              (long long)session->stepState().skipped);
  if (monitor == MonitorSwitch::On)
    std::printf("%s\n", monitorObserver->monitor().summary().c_str());
  if (!trainer->repairs().empty()) {
    const std::vector<std::string> &kept = session->trainOptions().keepF32;
    std::printf("precision repair: %zu repair%s; the run ends with %zu op%s "
                "kept in f32:",
                trainer->repairs().size(),
                trainer->repairs().size() == 1 ? "" : "s", kept.size(),
                kept.size() == 1 ? "" : "s");
    for (const std::string &pin : kept)
      std::printf(" %s", pin.c_str());
    std::printf("\n");
  }
  if (!statsPath.empty()) {
    if (!monitorObserver->writeStats(error))
      return fail(error);
    std::printf("stats: %zu steps written to %s\n",
                monitorObserver->monitor().steps().size(), statsPath.c_str());
  }
  if (session->onDevice()) {
    std::printf("memory: parameters %.3f MB and optimizer state %.3f MB "
                "stay in GPU memory (%s); the device pool held at most %llu "
                "bytes\n",
                megabytes(hostBytes(session->parameters())),
                megabytes(hostBytes(session->optimizerState())),
                session->updatesInPlace() ? "updated in place"
                                          : "held twice, old and new",
                (unsigned long long)session->devicePeakBytes());
    return 0;
  }
  // A 16-bit step keeps copies of its weights between steps: say so.
  uint64_t copies = session->stepCopyBytes();
  std::string copiesText =
      copies ? ", 16-bit weight copies " +
                   llvm::formatv("{0:F3}", megabytes(copies)).str() +
                   " MB (--weight-copies convert: none)"
             : "";
  std::printf("memory: parameters %.3f MB and optimizer state %.3f MB (f32 "
              "host buffers, %s)%s; compiled code held at most %.3f MB in a "
              "training step and %.3f MB in a prediction\n",
              megabytes(hostBytes(session->parameters())),
              megabytes(hostBytes(session->optimizerState())),
              session->updatesInPlace() ? "updated in place"
                                        : "held twice, old and new",
              copiesText.c_str(), megabytes(trainMemory.peak),
              megabytes(predictMemory.peak));
  // The bytes bench/memory_bench.py reads (docs/memory.md): the weights a
  // step reads, 16-bit copies included.
  std::printf("memory: weights %lld bytes (f32 parameters%s); compiled code "
              "held at most %lld bytes in a training step (batch %lld)\n",
              (long long)(hostBytes(session->parameters()) + copies),
              copies ? " and their 16-bit copies" : "",
              (long long)trainMemory.peak, (long long)b);
  if (checker)
    checker->printSummary(stdout);
  return 0;
}
