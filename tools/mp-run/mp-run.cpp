//===- mp-run.cpp - train a model in mixed precision ----------------------===//
//
// mp-run train MODEL.mlir [options]: compiles the model's mp.loss function
// into a training step (autodiff, loss scaling, optimizer, AMP), JIT-compiles
// it for this CPU and trains on a data set, printing a line per epoch and
// the held-out accuracy; with --checkpoint it saves after every epoch and
// --resume continues from there.
// mp-run infer MODEL.mlir --checkpoint FILE: held-out accuracy of the
// checkpoint's parameters through the model's mp.predict function; with
// --calibrate N it writes INT8 calibration statistics instead, with
// --precision int8 --calibration FILE it runs the quantized model
// (docs/quantization.md).
//
//===----------------------------------------------------------------------===//

#include "InferSession.h"
#include "Session.h"

#include "mprt/mprt.h"

#include "mp/InitAll.h"

#include "mlir/InitAllPasses.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>

namespace cl = llvm::cl;

static cl::opt<std::string> command(cl::Positional, cl::Required,
                                    cl::desc("<train|infer>"));
static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"));
static cl::opt<std::string> precision("precision",
                                      cl::desc("f32 | f16 | bf16 (infer "
                                               "also: int8)"),
                                      cl::init("f32"));
static cl::opt<std::string>
    lossScale("loss-scale",
              cl::desc("dynamic | static:N | none (default: dynamic for "
                       "f16, none for bf16 and f32)"),
              cl::init(""));
static cl::opt<std::string>
    optimizer("optimizer", cl::desc("sgd | adam | adamw"), cl::init("sgd"));
static cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(0.05));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"),
                                cl::init(0.9));
static cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                                   cl::init(0.0));
static cl::opt<unsigned> epochs("epochs", cl::desc("Passes over the data"),
                                cl::init(10));
static cl::opt<int>
    batchSize("batch-size",
              cl::desc("Batch size (must match the model's static batch)"),
              cl::init(0));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed for initialisation and "
                                       "shuffling"),
                              cl::init(0));
static cl::opt<std::string>
    checkpointPath("checkpoint",
                   cl::desc("Checkpoint file (.npz): train saves it after "
                            "every epoch (atomically), infer reads it"),
                   cl::init(""));
static cl::opt<bool> resume("resume",
                            cl::desc("Continue training from --checkpoint"),
                            cl::init(false));
static cl::opt<std::string>
    dataPath("data",
             cl::desc("digits (the default data set) or FILE.npz with "
                      "x_train, y_train, x_test, y_test (f32, labels "
                      "one-hot)"),
             cl::init("digits"));

// INT8 inference and calibration (infer only).
static cl::opt<unsigned>
    calibrateBatches("calibrate",
                     cl::desc("infer: run N batches of the training split "
                              "through mp.predict with probes and write "
                              "calibration statistics (--calibration-out)"),
                     cl::init(0));
static cl::opt<std::string>
    calibrationOut("calibration-out",
                   cl::desc("Where --calibrate writes the statistics"),
                   cl::init("calibration.json"));
static cl::opt<std::string>
    calibrationPath("calibration",
                    cl::desc("Calibration statistics for --precision int8"),
                    cl::init(""));
static cl::opt<std::string>
    quantMethod("quant-method",
                cl::desc("int8 activation threshold: minmax | percentile | "
                         "entropy"),
                cl::init("minmax"));
static cl::opt<double> quantPercentile("quant-percentile",
                                       cl::desc("Percentile for "
                                                "--quant-method percentile"),
                                       cl::init(99.99));
static cl::opt<bool> quantPerChannel("quant-per-channel",
                                     cl::desc("int8 weights: one scale per "
                                              "output channel"),
                                     cl::init(true));
static cl::opt<double>
    quantMaxError("quant-max-error",
                  cl::desc("int8: ops with a larger estimated relative error "
                           "fall back (--quant-fallback)"),
                  cl::init(0.05));
static cl::opt<std::string>
    quantFallback("quant-fallback",
                  cl::desc("Precision of ops that fall back: f32 | f16"),
                  cl::init("f32"));
static cl::opt<std::string>
    quantReport("quant-report",
                cl::desc("int8: write --mp-quantize's JSON report here"),
                cl::init(""));
static cl::opt<unsigned> quantMeasure(
    "quant-measure",
    cl::desc("int8: run N calibration batches through the int8 and the f32 "
             "model, measure each quantized op's output error against f32, "
             "and let ops above --quant-max-error fall back (0: off)"),
    cl::init(0));
static cl::opt<unsigned>
    timeBatches("time-batches",
                cl::desc("infer: also time N predictions of one batch in "
                         "the predict-only session and print samples/s"),
                cl::init(0));

namespace {

struct Split {
  std::vector<float> x, y; // rows x features, rows x classes
  int64_t rows = 0;
};

/// Reads member `name` as an f32 matrix with `columns` columns.
bool readMatrix(mprt_npz *npz, const char *name, int64_t columns,
                std::vector<float> &out, int64_t &rows, std::string &error) {
  mprt_tensor *tensor = nullptr;
  if (mprt_npz_get(npz, name, &tensor) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  const int64_t *shape = mprt_tensor_shape(tensor);
  bool ok = mprt_tensor_dtype(tensor) == MPRT_DTYPE_F32 &&
            mprt_tensor_rank(tensor) == 2 && shape[1] == columns;
  if (!ok) {
    error = std::string("data member '") + name +
            "' must be an f32 matrix with " + std::to_string(columns) +
            " columns";
  } else {
    rows = shape[0];
    const float *data = static_cast<const float *>(mprt_tensor_data(tensor));
    out.assign(data, data + rows * columns);
  }
  mprt_tensor_free(tensor);
  return ok;
}

bool loadData(const std::string &path, int64_t features, int64_t classes,
              Split &train, Split &test, std::string &error) {
  mprt_npz *npz = nullptr;
  if (mprt_npz_open(path.c_str(), &npz) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  int64_t rows = 0;
  bool ok = readMatrix(npz, "x_train", features, train.x, train.rows, error) &&
            readMatrix(npz, "y_train", classes, train.y, rows, error) &&
            readMatrix(npz, "x_test", features, test.x, test.rows, error) &&
            readMatrix(npz, "y_test", classes, test.y, rows, error);
  mprt_npz_close(npz);
  return ok;
}

/// The digits data exported by scripts/setup.sh next to the tools.
std::string defaultDataPath(const char *argv0) {
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, (void *)&command);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "data", "digits.npz");
  return std::string(path);
}

/// Share of test rows whose largest logit is the labelled class.
double accuracy(mp::Session &session, const Split &test, std::string &error) {
  int64_t b = session.batchSize(), f = session.numFeatures(),
          c = session.numClasses();
  std::vector<float> x(b * f), logits(b * c);
  int64_t correct = 0;
  for (int64_t start = 0; start < test.rows; start += b) {
    int64_t n = std::min(b, test.rows - start);
    std::fill(x.begin(), x.end(), 0.0f); // pad the last batch
    std::copy(test.x.begin() + start * f, test.x.begin() + (start + n) * f,
              x.begin());
    if (!session.predict(x.data(), logits.data(), error))
      return -1;
    for (int64_t r = 0; r < n; ++r) {
      const float *row = logits.data() + r * c;
      const float *truth = test.y.data() + (start + r) * c;
      if (std::max_element(row, row + c) - row ==
          std::max_element(truth, truth + c) - truth)
        ++correct;
    }
  }
  return 100.0 * correct / std::max<int64_t>(test.rows, 1);
}

/// Saves parameters, optimizer state and the step's scalars (metadata).
bool saveCheckpoint(const std::string &path, mp::Session &session,
                    unsigned epoch, std::string &error) {
  std::vector<mprt_tensor *> tensors;
  std::vector<const char *> names;
  auto add = [&](mp::HostTensor &t) {
    mprt_tensor *tensor = nullptr;
    if (mprt_tensor_create(MPRT_DTYPE_F32, t.shape.size(), t.shape.data(),
                           &tensor) != MPRT_OK)
      return false;
    std::copy(t.data.begin(), t.data.end(),
              static_cast<float *>(mprt_tensor_data(tensor)));
    tensors.push_back(tensor);
    names.push_back(t.name.c_str());
    return true;
  };
  bool ok = true;
  for (mp::HostTensor &t : session.parameters())
    ok = ok && add(t);
  for (mp::HostTensor &t : session.optimizerState())
    ok = ok && add(t);
  const mp::StepState &s = session.stepState();
  std::string metadata;
  llvm::raw_string_ostream os(metadata);
  os << llvm::json::Value(
      llvm::json::Object{{"epoch", epoch},
                         {"step", s.step},
                         {"scale", static_cast<double>(s.scale)},
                         {"growth_tracker", s.growthTracker},
                         {"precision", precision.getValue()}});
  ok = ok && mprt_checkpoint_save(path.c_str(), names.data(), tensors.data(),
                                  tensors.size(), metadata.c_str()) == MPRT_OK;
  if (!ok)
    error = mprt_last_error();
  for (mprt_tensor *t : tensors)
    mprt_tensor_free(t);
  return ok;
}

/// Restores what saveCheckpoint wrote; returns the epoch it was saved after.
bool loadCheckpoint(const std::string &path, mp::Session &session,
                    bool withState, unsigned &epoch, std::string &error) {
  mprt_checkpoint *checkpoint = nullptr;
  if (mprt_checkpoint_load(path.c_str(), &checkpoint) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  auto restore = [&](mp::HostTensor &t) {
    const mprt_tensor *tensor = nullptr;
    if (mprt_checkpoint_find(checkpoint, t.name.c_str(), &tensor) != MPRT_OK) {
      error = "checkpoint '" + path + "' has no tensor '" + t.name + "'";
      return false;
    }
    std::vector<int64_t> shape(mprt_tensor_shape(tensor),
                               mprt_tensor_shape(tensor) +
                                   mprt_tensor_rank(tensor));
    if (mprt_tensor_dtype(tensor) != MPRT_DTYPE_F32 || shape != t.shape) {
      error = "checkpoint '" + path + "': tensor '" + t.name +
              "' does not match the model's f32 shape";
      return false;
    }
    const float *data = static_cast<const float *>(mprt_tensor_data(tensor));
    std::copy(data, data + t.numElements(), t.data.begin());
    return true;
  };
  bool ok = true;
  for (mp::HostTensor &t : session.parameters())
    ok = ok && restore(t);
  if (withState)
    for (mp::HostTensor &t : session.optimizerState())
      ok = ok && restore(t);
  if (ok) {
    const char *text = mprt_checkpoint_metadata(checkpoint);
    llvm::Expected<llvm::json::Value> meta =
        llvm::json::parse(text ? text : "");
    const llvm::json::Object *object = meta ? meta->getAsObject() : nullptr;
    std::optional<int64_t> e =
        object ? object->getInteger("epoch") : std::nullopt;
    std::optional<int64_t> step =
        object ? object->getInteger("step") : std::nullopt;
    std::optional<double> scale =
        object ? object->getNumber("scale") : std::nullopt;
    std::optional<int64_t> tracker =
        object ? object->getInteger("growth_tracker") : std::nullopt;
    if (!meta)
      llvm::consumeError(meta.takeError());
    if (!e || !step || !scale || !tracker) {
      error = "checkpoint '" + path +
              "' lacks its training metadata (epoch, step, scale)";
      ok = false;
    } else {
      epoch = static_cast<unsigned>(*e);
      if (withState) {
        session.stepState().step = static_cast<int32_t>(*step);
        session.stepState().scale = static_cast<float>(*scale);
        session.stepState().growthTracker = static_cast<int32_t>(*tracker);
      }
    }
  }
  mprt_checkpoint_free(checkpoint);
  return ok;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "mp-run: error: %s\n", message.c_str());
  return 1;
}

//===----------------------------------------------------------------------===//
// Calibration, INT8 inference and timed inference (mp::InferSession)
//===----------------------------------------------------------------------===//

/// Share of test rows whose largest logit is the labelled class.
double inferAccuracy(mp::InferSession &session, const Split &test,
                     std::string &error) {
  int64_t b = session.batchSize(), f = session.numFeatures(),
          c = session.numClasses();
  std::vector<float> x(b * f), logits(b * c);
  int64_t correct = 0;
  for (int64_t start = 0; start < test.rows; start += b) {
    int64_t n = std::min(b, test.rows - start);
    std::fill(x.begin(), x.end(), 0.0f);
    std::copy(test.x.begin() + start * f, test.x.begin() + (start + n) * f,
              x.begin());
    if (!session.predict(x.data(), logits.data(), error))
      return -1;
    for (int64_t r = 0; r < n; ++r) {
      const float *row = logits.data() + r * c;
      const float *truth = test.y.data() + (start + r) * c;
      if (std::max_element(row, row + c) - row ==
          std::max_element(truth, truth + c) - truth)
        ++correct;
    }
  }
  return 100.0 * correct / std::max<int64_t>(test.rows, 1);
}

/// Runs `batches` batches of `split` (from its first row, wrapping).
bool runBatches(mp::InferSession &session, const Split &split, unsigned batches,
                std::string &error) {
  int64_t b = session.batchSize(), f = session.numFeatures(),
          c = session.numClasses();
  std::vector<float> x(b * f), logits(b * c);
  for (unsigned i = 0; i < batches; ++i) {
    for (int64_t r = 0; r < b; ++r) {
      int64_t row = (static_cast<int64_t>(i) * b + r) % split.rows;
      std::copy_n(split.x.begin() + row * f, f, x.begin() + r * f);
    }
    if (!session.predict(x.data(), logits.data(), error))
      return false;
  }
  return true;
}

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

/// Relative RMS error of each eligible op's output in the int8 model
/// against the f32 model, over `batches` calibration batches.
bool measureErrors(mp::Session &trained, const Split &train,
                   mp::InferOptions options, unsigned batches,
                   std::map<std::string, double> &errors, std::string &error) {
  // Every eligible op in int8 (whatever its estimate), probed.
  options.probeOutputs = true;
  options.maxError = std::numeric_limits<double>::infinity();
  options.reportPath.clear();
  std::unique_ptr<mp::InferSession> quantized =
      mp::InferSession::create(modelPath, options, trained.parameters(), error);
  mp::InferOptions reference;
  reference.mode = mp::InferOptions::Mode::Calibrate; // probes on results
  std::unique_ptr<mp::InferSession> f32 =
      quantized ? mp::InferSession::create(modelPath, reference,
                                           trained.parameters(), error)
                : nullptr;
  if (!f32)
    return false;
  ErrorCapture capture;
  mprt_set_observer(captureObserver, &capture);
  bool ok = runBatches(*quantized, train, batches, error);
  capture.comparing = true;
  ok = ok && runBatches(*f32, train, batches, error);
  mprt_set_observer(nullptr, nullptr);
  for (const auto &[id, sums] : capture.sums)
    errors[id] = sums.second > 0 ? std::sqrt(sums.first / sums.second) : 0.0;
  return ok;
}

/// mp-run infer with --calibrate, --precision int8 or --time-batches.
int runInferSession(mp::Session &trained, const Split &train,
                    const Split &test) {
  std::string error;
  mp::InferOptions options;
  if (calibrateBatches > 0) {
    if (precision != "f32")
      return fail("--calibrate measures the f32 model; drop --precision");
    options.mode = mp::InferOptions::Mode::Calibrate;
  } else if (precision == "int8") {
    if (calibrationPath.empty())
      return fail("--precision int8 needs --calibration FILE (write one "
                  "with --calibrate N)");
    options.mode = mp::InferOptions::Mode::Int8;
    options.calibrationPath = calibrationPath;
    options.method = quantMethod;
    options.percentile = quantPercentile;
    options.perChannel = quantPerChannel;
    options.maxError = quantMaxError;
    options.fallback = quantFallback;
    options.reportPath = quantReport;
    if (quantMeasure > 0) {
      std::map<std::string, double> errors;
      if (!measureErrors(trained, train, options, quantMeasure, errors, error))
        return fail(error);
      for (const auto &[id, e] : errors) {
        bool fallsBack = e > quantMaxError;
        std::printf("measured error of '%s' against f32: %.4f%s\n", id.c_str(),
                    e, fallsBack ? " (falls back)" : "");
        if (fallsBack)
          options.fallbackOps.push_back(id);
      }
    }
  } else {
    options.precision = precision;
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
    mprt_stats *stats = nullptr;
    if (mprt_stats_create(&stats) != MPRT_OK)
      return fail(mprt_last_error());
    mprt_set_observer(mprt_stats_observer, stats);
    bool ran = runBatches(*session, train, calibrateBatches, error);
    mprt_set_observer(nullptr, nullptr);
    const char *statsError = mprt_stats_error(stats);
    bool written =
        ran && !statsError &&
        mprt_stats_write_json(stats, calibrationOut.c_str()) == MPRT_OK;
    std::string writeError = written ? "" : mprt_last_error();
    size_t probes = mprt_stats_count(stats);
    mprt_stats_free(stats);
    if (!ran)
      return fail(error);
    if (statsError)
      return fail(std::string("calibration: ") + statsError);
    if (!written)
      return fail(writeError);
    std::printf("calibrated %u batches (%lld rows of the training split): "
                "%zu probes written to %s\n",
                (unsigned)calibrateBatches,
                (long long)calibrateBatches * session->batchSize(), probes,
                calibrationOut.c_str());
    return 0;
  }

  if (precision == "int8") {
    // The f32 reference, from the trained session.
    double reference = accuracy(trained, test, error);
    if (reference < 0)
      return fail(error);
    std::printf("held-out accuracy %.2f%% (f32 reference)\n", reference);
  }
  auto inferStart = std::chrono::steady_clock::now();
  double acc = inferAccuracy(*session, test, error);
  if (acc < 0)
    return fail(error);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - inferStart)
                       .count();
  std::printf("held-out accuracy %.2f%% (%s inference), %lld rows, %.0f "
              "samples/s, compiled in %.1f s\n",
              acc, precision.c_str(), (long long)test.rows,
              test.rows / std::max(seconds, 1e-9), compileSeconds);
  int64_t f32Bytes = 0;
  for (const mp::HostTensor &p : trained.parameters())
    f32Bytes += p.numElements() * 4;
  std::printf("weights read per prediction: %lld bytes (f32 parameters: "
              "%lld bytes, %.2fx)\n",
              (long long)session->weightBytes(), (long long)f32Bytes,
              f32Bytes / std::max<double>(session->weightBytes(), 1));
  if (timeBatches > 0) {
    if (!runBatches(*session, test, 3, error)) // warm-up
      return fail(error);
    auto timed = std::chrono::steady_clock::now();
    if (!runBatches(*session, test, timeBatches, error))
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

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The CPU lowering is a textual pipeline of upstream and mp passes.
  mlir::registerAllPasses();
  mlir::mp::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv,
                              "mp-run: train models in mixed precision\n");
  if (command != "train" && command != "infer")
    return fail("unknown command '" + command +
                "': expected 'train' or 'infer'");
  if (command == "train" && precision == "int8")
    return fail("--precision int8 is for infer (post-training quantization "
                "of a trained checkpoint)");
  if (resume && checkpointPath.empty())
    return fail("--resume needs --checkpoint");
  if (command == "infer" && checkpointPath.empty())
    return fail("infer needs --checkpoint (the trained parameters)");

  mp::TrainOptions options;
  // int8 runs on f32 parameters; the quantized model is compiled apart.
  options.precision = precision == "int8" ? "f32" : precision.getValue();
  options.lossScale = lossScale;
  options.optimizer = optimizer;
  options.lr = lr;
  options.momentum = momentum;
  options.weightDecay = weightDecay;
  options.seed = seed;

  auto start = std::chrono::steady_clock::now();
  std::string error;
  std::unique_ptr<mp::Session> session =
      mp::Session::create(modelPath, options, error);
  if (!session)
    return fail(error);
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int64_t b = session->batchSize(), f = session->numFeatures(),
          c = session->numClasses();
  if (batchSize != 0 && batchSize != b)
    return fail("--batch-size " + std::to_string(batchSize) +
                " does not match the model's static batch of " +
                std::to_string(b));
  if (!session->canPredict())
    return fail("the model has no function marked mp.predict, so accuracy "
                "cannot be measured");

  std::string path =
      dataPath == "digits" ? defaultDataPath(argv[0]) : std::string(dataPath);
  Split train, test;
  if (!loadData(path, f, c, train, test, error))
    return fail(error + (dataPath == "digits"
                             ? " (run scripts/setup.sh to export the digits "
                               "data set)"
                             : ""));
  if (train.rows < b)
    return fail("the training set has fewer rows than one batch");

  unsigned firstEpoch = 1;
  if (command == "infer" || resume) {
    unsigned saved = 0;
    if (!loadCheckpoint(checkpointPath, *session, command == "train", saved,
                        error))
      return fail(error);
    firstEpoch = saved + 1;
  }
  if (command == "infer" &&
      (calibrateBatches > 0 || precision == "int8" || timeBatches > 0))
    return runInferSession(*session, train, test);
  if (command == "infer") {
    auto inferStart = std::chrono::steady_clock::now();
    double acc = accuracy(*session, test, error);
    if (acc < 0)
      return fail(error);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - inferStart)
                         .count();
    std::printf("held-out accuracy %.2f%% (%s inference), %lld rows, %.0f "
                "samples/s\n",
                acc, precision.c_str(), (long long)test.rows,
                test.rows / std::max(seconds, 1e-9));
    return 0;
  }

  std::printf("mp-run: %s, precision %s, %lld train / %lld test rows, batch "
              "%lld, compiled in %.1f s%s\n",
              modelPath.c_str(), precision.c_str(), (long long)train.rows,
              (long long)test.rows, (long long)b, compileSeconds,
              session->isVectorized() ? "" : " (scalar loops)");

  std::vector<int64_t> order(train.rows);
  std::vector<float> x(b * f), y(b * c);
  int64_t skipped = 0;
  double trainSeconds = 0;
  int64_t trained = 0;
  if (firstEpoch > 1)
    std::printf("resuming after epoch %u from %s\n", firstEpoch - 1,
                checkpointPath.c_str());
  for (unsigned epoch = firstEpoch; epoch <= epochs; ++epoch) {
    // Seeded per epoch, so a resumed run shuffles as an uninterrupted one.
    std::mt19937_64 rng(seed * 1000003u + epoch);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    double lossSum = 0;
    int64_t steps = 0;
    auto epochStart = std::chrono::steady_clock::now();
    for (int64_t first = 0; first + b <= train.rows; first += b) {
      for (int64_t r = 0; r < b; ++r) {
        int64_t row = order[first + r];
        std::copy_n(train.x.begin() + row * f, f, x.begin() + r * f);
        std::copy_n(train.y.begin() + row * c, c, y.begin() + r * c);
      }
      mp::StepResult result;
      if (!session->trainStep(x.data(), y.data(), result, error))
        return fail(error);
      if (!result.stepped)
        ++skipped;
      lossSum += result.loss;
      ++steps;
    }
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - epochStart)
                         .count();
    trainSeconds += seconds;
    trained += steps * b;
    double acc = accuracy(*session, test, error);
    if (acc < 0)
      return fail(error);
    std::printf("epoch %u/%u  loss %.4f  test accuracy %.2f%%  %.0f "
                "samples/s  skipped %lld  scale %g\n",
                epoch, (unsigned)epochs, lossSum / std::max<int64_t>(steps, 1),
                acc, steps * b / std::max(seconds, 1e-9), (long long)skipped,
                session->stepState().scale);
    std::fflush(stdout);
    if (!checkpointPath.empty() &&
        !saveCheckpoint(checkpointPath, *session, epoch, error))
      return fail(error);
  }
  double acc = accuracy(*session, test, error);
  std::printf("held-out accuracy %.2f%% (%s), %.0f samples/s, %lld skipped "
              "steps\n",
              acc, precision.c_str(), trained / std::max(trainSeconds, 1e-9),
              (long long)skipped);
  return 0;
}
