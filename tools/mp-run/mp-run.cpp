//===- mp-run.cpp - train a model in mixed precision ----------------------===//
//
// mp-run train MODEL.mlir [options]: compiles the model's mp.loss function
// into a training step (autodiff, loss scaling, optimizer, AMP), JIT-compiles
// it for this CPU and trains on a data set, printing a line per epoch and
// the held-out accuracy.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "mprt/mprt.h"

#include "mp/InitAll.h"

#include "mlir/InitAllPasses.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

namespace cl = llvm::cl;

static cl::opt<std::string> command(cl::Positional, cl::Required,
                                    cl::desc("<train>"));
static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"));
static cl::opt<std::string> precision("precision", cl::desc("f32 | f16 | bf16"),
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
    dataPath("data",
             cl::desc("digits (the default data set) or FILE.npz with "
                      "x_train, y_train, x_test, y_test (f32, labels "
                      "one-hot)"),
             cl::init("digits"));

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

int fail(const std::string &message) {
  std::fprintf(stderr, "mp-run: error: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The CPU lowering is a textual pipeline of upstream and mp passes.
  mlir::registerAllPasses();
  mlir::mp::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv,
                              "mp-run: train models in mixed precision\n");
  if (command != "train")
    return fail("unknown command '" + command + "': expected 'train'");

  mp::TrainOptions options;
  options.precision = precision;
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

  std::printf("mp-run: %s, precision %s, %lld train / %lld test rows, batch "
              "%lld, compiled in %.1f s\n",
              modelPath.c_str(), precision.c_str(), (long long)train.rows,
              (long long)test.rows, (long long)b, compileSeconds);

  std::mt19937_64 rng(seed);
  std::vector<int64_t> order(train.rows);
  std::vector<float> x(b * f), y(b * c);
  int64_t skipped = 0;
  double trainSeconds = 0;
  int64_t trained = 0;
  for (unsigned epoch = 1; epoch <= epochs; ++epoch) {
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
  }
  double acc = accuracy(*session, test, error);
  std::printf("held-out accuracy %.2f%% (%s), %.0f samples/s, %lld skipped "
              "steps\n",
              acc, precision.c_str(), trained / std::max(trainSeconds, 1e-9),
              (long long)skipped);
  return 0;
}
