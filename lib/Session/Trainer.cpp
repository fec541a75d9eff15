//===- Trainer.cpp - epochs, resume, checkpoints and evaluation -----------===//

#include "mp/Session/Trainer.h"

#include "mprt/mprt.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

namespace mp {

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

/// Reads member `name` as an f32 matrix with `columns` columns.
static bool readMatrix(mprt_npz *npz, const char *name, int64_t columns,
                       std::vector<float> &out, int64_t &rows,
                       std::string &error) {
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

bool loadDataset(const std::string &path, int64_t features, int64_t classes,
                 DataSplit &train, DataSplit &test, std::string &error) {
  mprt_npz *npz = nullptr;
  if (mprt_npz_open(path.c_str(), &npz) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  int64_t trainLabels = 0, testLabels = 0;
  bool ok = readMatrix(npz, "x_train", features, train.x, train.rows, error) &&
            readMatrix(npz, "y_train", classes, train.y, trainLabels, error) &&
            readMatrix(npz, "x_test", features, test.x, test.rows, error) &&
            readMatrix(npz, "y_test", classes, test.y, testLabels, error);
  mprt_npz_close(npz);
  // Every sample needs its label row (the loops index both by sample).
  auto sameRows = [&](const char *x, int64_t xRows, const char *y,
                      int64_t yRows) {
    if (xRows == yRows)
      return true;
    error = "data '" + path + "': " + x + " has " + std::to_string(xRows) +
            " rows but " + y + " has " + std::to_string(yRows);
    return false;
  };
  return ok && sameRows("x_train", train.rows, "y_train", trainLabels) &&
         sameRows("x_test", test.rows, "y_test", testLabels);
}

/// SplitMix64 (Steele, Lea and Flood 2014): one 64-bit output per call.
static uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in [0, n) without modulo bias: draws below 2^64 mod n are
/// rejected, so every residue is equally likely.
static uint64_t uniformBelow(uint64_t n, uint64_t &state) {
  uint64_t threshold = (0 - n) % n; // 2^64 mod n
  for (;;) {
    uint64_t draw = splitMix64(state);
    if (draw >= threshold)
      return draw % n;
  }
}

std::vector<int64_t> epochOrder(int64_t rows, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(std::max<int64_t>(rows, 0));
  std::iota(order.begin(), order.end(), 0);
  uint64_t state = seed * 1000003u + static_cast<uint64_t>(epoch);
  for (int64_t i = rows - 1; i > 0; --i)
    std::swap(order[i], order[uniformBelow(i + 1, state)]);
  return order;
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

RunObserver::~RunObserver() = default;

/// The shared body of both accuracy()s: `predict` fills a batch of logits.
template <typename SessionT>
static double accuracyOf(SessionT &session, const LabelledRows &test,
                         std::string &error, RunObserver *observer) {
  int64_t b = session.batchSize(), f = session.numFeatures(),
          c = session.numClasses();
  std::vector<float> x(b * f), logits(b * c);
  int64_t correct = 0;
  for (int64_t start = 0; start < test.rows; start += b) {
    int64_t n = std::min(b, test.rows - start);
    std::fill(x.begin(), x.end(), 0.0f); // pad the last batch
    std::copy(test.x + start * f, test.x + (start + n) * f, x.begin());
    int64_t batch = start / b + 1;
    if (observer)
      observer->beforePrediction(batch);
    if (!session.predict(x.data(), logits.data(), error))
      return -1;
    if (observer)
      observer->afterPrediction(batch);
    for (int64_t r = 0; r < n; ++r) {
      const float *row = logits.data() + r * c;
      const float *truth = test.y + (start + r) * c;
      if (std::max_element(row, row + c) - row ==
          std::max_element(truth, truth + c) - truth)
        ++correct;
    }
  }
  return 100.0 * correct / std::max<int64_t>(test.rows, 1);
}

double accuracy(Session &session, const LabelledRows &test, std::string &error,
                RunObserver *observer) {
  return accuracyOf(session, test, error, observer);
}

double accuracy(InferSession &session, const LabelledRows &test,
                std::string &error, RunObserver *observer) {
  return accuracyOf(session, test, error, observer);
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

bool resolveCheckpointPath(std::string &path, bool create, std::string &error) {
  bool isDirectory =
      llvm::sys::fs::is_directory(path) || llvm::StringRef(path).ends_with("/");
  if (path.empty() || !isDirectory)
    return true;
  if (create) {
    if (std::error_code ec = llvm::sys::fs::create_directories(path)) {
      error =
          "cannot create checkpoint directory '" + path + "': " + ec.message();
      return false;
    }
  }
  llvm::SmallString<256> file(path);
  llvm::sys::path::append(file, "checkpoint.npz");
  path = std::string(file);
  return true;
}

std::string previousCheckpointPath(const std::string &path) {
  return path + ".prev";
}

bool restoreCheckpoint(Session &session, const std::string &path,
                       bool withState, RunPosition &position,
                       std::string &error, std::vector<std::string> *keptF32) {
  if (!session.loadCheckpoint(path, withState, position, error, keptF32)) {
    // Saves keep the checkpoint they replace: point the user at it.
    std::string previous = previousCheckpointPath(path);
    mprt_checkpoint *fallback = nullptr;
    if (mprt_checkpoint_load(previous.c_str(), &fallback) == MPRT_OK) {
      mprt_checkpoint_free(fallback);
      error += "; the previous checkpoint '" + previous +
               "' is intact: continue from it instead";
    }
    return false;
  }
  if (position.epoch < 0) {
    error = "checkpoint '" + path + "' lacks its training metadata (epoch)";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

std::string formatEpochLine(const EpochReport &report) {
  char accuracy[48] = "";
  if (report.accuracy >= 0) // a run without test rows measures none
    std::snprintf(accuracy, sizeof(accuracy), "  test accuracy %.2f%%",
                  report.accuracy);
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %lld/%lld  loss %.4f%s  %.0f samples/s  skipped %lld  "
                "scale %g",
                (long long)report.epoch, (long long)report.epochs,
                report.meanLoss, accuracy,
                report.samples / std::max(report.seconds, 1e-9),
                (long long)report.skipped, report.scale);
  return line;
}

/// Data-parallel: every rank must run the same steps on the same data. A
/// rank that planned fewer steps would finish while the others wait for it
/// in an all-reduce, and one that read other rows would train another model.
bool Trainer::agreeOnRun(std::string &error) {
  int64_t plan[] = {options.epochs, static_cast<int64_t>(options.seed),
                    batches,        next.epoch,
                    next.batch,     options.checkReplicas};
  uint64_t planHash = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(plan), sizeof(plan)));
  if (!Session::sameOnEveryRank(
          planHash,
          "the ranks of this job plan different runs (--epochs, --seed, "
          "--check-replicas, the resumed position or the number of training "
          "rows differ); every rank must run the same command",
          error))
    return false;
  auto bytesOf = [](const float *data, int64_t count) {
    return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data),
                                   count * sizeof(float));
  };
  int64_t f = session.numFeatures(), c = session.numClasses();
  uint64_t dataHash = llvm::xxh3_64bits(bytesOf(train.x, train.rows * f)) ^
                      llvm::xxh3_64bits(bytesOf(train.y, train.rows * c)) *
                          0x9e3779b97f4a7c15ULL;
  return Session::sameOnEveryRank(
      dataHash,
      "the ranks of this job read different training data (every rank reads "
      "the whole training set and takes its share of each global batch)",
      error);
}

namespace {

/// The rows a trainer refuses: "" or why.
std::string checkTrainerRows(const Session &session, const LabelledRows &train,
                             const LabelledRows &test) {
  int64_t b = session.batchSize();
  if (!train.x || !train.y || train.rows < b)
    return "the training set has fewer rows than one batch (" +
           std::to_string(train.rows) + " rows, batch " + std::to_string(b) +
           ")";
  if (test.rows < 0 || (test.rows > 0 && (!test.x || !test.y)))
    return "the test rows are missing";
  return "";
}

/// The options a trainer refuses: "" or why.
std::string checkTrainerOptions(const Session &session,
                                const LabelledRows &test,
                                const TrainerOptions &options) {
  if (options.epochs < 0 || options.checkpointEvery < 0)
    return "epochs and checkpoint-every must not be negative";
  if (options.resume && options.checkpointPath.empty())
    return "resuming needs a checkpoint path";
  if (test.rows > 0 && !session.canPredict())
    return "the model has no function marked mp.predict, so accuracy "
           "cannot be measured";
  return "";
}

/// The rows and options a trainer refuses: "" or why.
std::string checkTrainerInputs(const Session &session,
                               const LabelledRows &train,
                               const LabelledRows &test,
                               const TrainerOptions &options) {
  std::string problem = checkTrainerRows(session, train, test);
  return problem.empty() ? checkTrainerOptions(session, test, options)
                         : problem;
}

/// This rank's rows of global batch `batch` (b rows per rank, consecutive
/// in the epoch's `order`), copied into `x` and `y`.
void gatherBatch(const LabelledRows &train, const std::vector<int64_t> &order,
                 int64_t batch, const Session &session, float *x, float *y) {
  int64_t b = session.batchSize(), f = session.numFeatures(),
          c = session.numClasses();
  int64_t rank = session.rank(), ranks = session.ranks();
  for (int64_t r = 0; r < b; ++r) {
    int64_t row = order[(batch * ranks + rank) * b + r];
    std::copy_n(train.x + row * f, f, x + r * f);
    std::copy_n(train.y + row * c, c, y + r * c);
  }
}

} // namespace

std::unique_ptr<Trainer> Trainer::create(Session &session,
                                         const LabelledRows &train,
                                         const LabelledRows &test,
                                         const TrainerOptions &options,
                                         std::string &error) {
  std::string problem = checkTrainerInputs(session, train, test, options);
  if (!problem.empty()) {
    error = problem;
    return nullptr;
  }
  std::unique_ptr<Trainer> trainer(
      new Trainer(session, train, test, options));
  if (!resolveCheckpointPath(trainer->options.checkpointPath, true, error))
    return nullptr;
  // Data-parallel: a global batch is b rows per rank, consecutive in the
  // epoch's order; each rank reads its own b of them.
  trainer->batches = train.rows / (session.batchSize() * session.ranks());
  if (!trainer->initFromCheckpoint(error))
    return nullptr;
  if (!trainer->resumeFromCheckpoint(error))
    return nullptr;
  // Data-parallel: every rank starts from rank 0's state.
  if (!session.broadcastTrainingState(error))
    return nullptr;
  if (session.isDistributed() && !trainer->agreeOnRun(error))
    return nullptr;
  if (!trainer->createRepairer(error))
    return nullptr;
  return trainer;
}

/// --init-from: the parameters of a checkpoint, not its run.
bool Trainer::initFromCheckpoint(std::string &error) {
  if (options.initFromPath.empty())
    return true;
  if (options.resume) {
    error = "start from a checkpoint's parameters or resume a run, not "
            "both";
    return false;
  }
  RunPosition ignored;
  return restoreCheckpoint(session, options.initFromPath, /*withState=*/false,
                           ignored, error);
}

/// --resume: the checkpoint's state and position, and its precision plan.
bool Trainer::resumeFromCheckpoint(std::string &error) {
  if (!options.resume)
    return true;
  const std::string &path = options.checkpointPath;
  // The precision plan it was saved with, repairs included: the step is
  // compiled again with the ops it kept in f32 (the state carries over).
  std::vector<std::string> pins;
  if (!restoreCheckpoint(session, path, /*withState=*/true, next, error,
                         &pins))
    return false;
  const std::vector<std::string> &compiled = session.trainOptions().keepF32;
  for (const std::string &pin : pins)
    if (std::find(compiled.begin(), compiled.end(), pin) == compiled.end())
      pinsFromCheckpoint.push_back(pin);
  if (!pinsFromCheckpoint.empty() &&
      !session.keepInF32(pinsFromCheckpoint, error)) {
    error = "checkpoint '" + path + "' keeps ops in f32: " + error;
    return false;
  }
  return checkResumedPosition(path, error);
}

/// A resumed position must be a batch of this data's epochs, and its place
/// in an accumulation window must follow from it.
bool Trainer::checkResumedPosition(const std::string &path,
                                   std::string &error) {
  if (next.batch < 0 || next.batch >= batches) {
    error = "checkpoint '" + path + "' was saved after batch " +
            std::to_string(next.batch) +
            " of an epoch, but this data set has " + std::to_string(batches) +
            " batches an epoch";
    return false;
  }
  // Windows of micro-batches run over the whole run, epochs included: a
  // checkpoint's place in its window follows from its position.
  int64_t done = next.epoch * batches + next.batch;
  int64_t micro = session.stepState().micro;
  if (done % session.accumulation() != micro) {
    error = "checkpoint '" + path + "' was saved " + std::to_string(micro) +
            " micro-batches into an accumulation window, which does not "
            "fit --accumulate " +
            std::to_string(session.accumulation()) + " after " +
            std::to_string(done) +
            " batches: resume with the --accumulate it was saved with";
    return false;
  }
  return true;
}

bool Trainer::createRepairer(std::string &error) {
  // A repair would recompile one rank's step from its own statistics.
  RepairOptions repair = options.repair;
  if (session.isDistributed()) {
    if (repair.mode == RepairMode::On) {
      error = "precision repair is not supported in a data-parallel run yet";
      return false;
    }
    repair.mode = RepairMode::Off;
  }
  std::string refused;
  repairer = PrecisionRepairer::create(session, repair, refused);
  if (!refused.empty()) {
    error = refused;
    return false;
  }
  return true;
}

bool Trainer::save(const RunPosition &position, std::string &error) {
  // Every rank holds the same state: rank 0 writes it.
  if (session.rank() != 0)
    return true;
  return session.saveCheckpoint(options.checkpointPath, position,
                                previousCheckpointPath(options.checkpointPath),
                                error);
}

/// What runEpoch carries from one batch to the next.
struct Trainer::EpochProgress {
  int64_t epoch = 0;
  std::vector<int64_t> order;
  std::vector<float> x, y;
  double lossSum = 0, repairSeconds = 0;
  int64_t steps = 0;
};

bool Trainer::runEpoch(EpochReport &report, std::string &error,
                       RunObserver *observer) {
  if (finished()) {
    error = "the run has trained all its " + std::to_string(options.epochs) +
            " epochs";
    return false;
  }
  int64_t b = session.batchSize(), ranks = session.ranks();
  EpochProgress progress;
  progress.epoch = next.epoch + 1;
  progress.order = epochOrder(train.rows, options.seed, progress.epoch);
  progress.x.resize(b * session.numFeatures());
  progress.y.resize(b * session.numClasses());
  if (observer)
    observer->beforeEpoch(progress.epoch);
  auto start = std::chrono::steady_clock::now();
  for (int64_t batch = next.batch; batch < batches; ++batch)
    if (!trainBatch(batch, progress, error, observer))
      return false;
  double epochSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() -
      progress.repairSeconds;
  next = {progress.epoch, 0};
  seconds += epochSeconds;
  samples += progress.steps * b * ranks;

  report = EpochReport();
  report.epoch = progress.epoch;
  report.epochs = options.epochs;
  report.steps = progress.steps;
  report.samples = progress.steps * b * ranks;
  report.meanLoss = progress.lossSum / std::max<int64_t>(progress.steps, 1);
  report.seconds = epochSeconds;
  return finishEpoch(report, error, observer);
}

/// The step of `batch` (this rank's rows of it, in the epoch's order),
/// with the repair, replica check and save that may follow it.
bool Trainer::trainBatch(int64_t batch, EpochProgress &progress,
                         std::string &error, RunObserver *observer) {
  gatherBatch(train, progress.order, batch, session, progress.x.data(),
              progress.y.data());
  // Steps count from 1 over the whole run, resumed runs included.
  int64_t step = (progress.epoch - 1) * batches + batch + 1;
  if (observer)
    observer->beforeStep(step);
  StepResult result;
  StepState before = session.stepState();
  if (!session.trainStep(progress.x.data(), progress.y.data(), result, error))
    return false;
  if (observer)
    observer->afterStep(step, result);
  if (repairer &&
      repairer->afterStep(before, result, progress.x.data(),
                          progress.y.data()) &&
      !repairAfterStep(step, progress, error, observer))
    return false;
  if (options.checkReplicas && session.isDistributed() &&
      !Session::sameOnEveryRank(session.parameterChecksum(),
                                "the ranks' parameters differ after "
                                "step " +
                                    std::to_string(step),
                                error))
    return false;
  progress.lossSum += result.loss;
  ++progress.steps;
  next.batch = batch + 1;
  return saveWithinEpoch(progress.epoch, batch, step, error);
}

bool Trainer::repairAfterStep(int64_t step, EpochProgress &progress,
                              std::string &error, RunObserver *observer) {
  RepairReport repair;
  if (!repairer->repair(step, repair, error))
    return false;
  progress.repairSeconds += repair.seconds;
  repaired.push_back(repair);
  if (observer)
    observer->afterRepair(repair);
  return true;
}

/// Saves inside the epoch every N optimizer steps (windows, with gradient
/// accumulation); its last batch is saved at the epoch's end.
bool Trainer::saveWithinEpoch(int64_t epoch, int64_t batch, int64_t step,
                              std::string &error) {
  int64_t window = session.accumulation();
  bool due = !options.checkpointPath.empty() && options.checkpointEvery &&
             step % window == 0 &&
             (step / window) % options.checkpointEvery == 0 &&
             batch + 1 < batches;
  return !due || save({epoch - 1, batch + 1}, error);
}

/// The epoch's accuracy on the test rows (when there are some), its
/// skipped steps and scale, and the checkpoint at its end.
bool Trainer::finishEpoch(EpochReport &report, std::string &error,
                          RunObserver *observer) {
  if (test.rows > 0) {
    if (observer)
      observer->beforeEvaluation();
    report.accuracy = accuracy(session, test, error, observer);
    if (observer)
      observer->afterEvaluation();
    if (report.accuracy < 0)
      return false;
  }
  report.skipped = session.stepState().skipped;
  report.scale = session.stepState().scale;
  if (!options.checkpointPath.empty() && !save(next, error))
    return false;
  return !observer || observer->afterEpoch(report, error);
}

} // namespace mp
