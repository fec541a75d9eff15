//===- Trainer.h - epochs, resume, checkpoints and evaluation ---*- C++ -*-===//
//
// The training loop that mp-run, the C API and Python share: the epoch
// order of the training rows (a Fisher-Yates shuffle over SplitMix64, so
// any language can replay it; docs/training.md), batches of that order
// through Session::trainStep, a checkpoint after every epoch and every N
// steps, resuming from inside an epoch, held-out accuracy and the progress
// line of each epoch. It also reads data sets (.npz) and resolves
// checkpoint paths for the tools.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_TRAINER_H
#define MP_SESSION_TRAINER_H

#include "mp/Session/InferSession.h"
#include "mp/Session/PrecisionRepair.h"
#include "mp/Session/Session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mp {

/// Labelled rows, row-major f32, not owned: `x` is rows x features and `y`
/// rows x classes (one-hot, or the loss's target).
struct LabelledRows {
  const float *x = nullptr;
  const float *y = nullptr;
  int64_t rows = 0;
};

/// A split read from a data file (owns its rows).
struct DataSplit {
  std::vector<float> x, y;
  int64_t rows = 0;
  LabelledRows view() const { return {x.data(), y.data(), rows}; }
};

/// Reads `x_train`, `y_train`, `x_test` and `y_test` from an .npz: f32
/// matrices with `features` (x) and `classes` (y) columns, as many label
/// rows as samples.
bool loadDataset(const std::string &path, int64_t features, int64_t classes,
                 DataSplit &train, DataSplit &test, std::string &error);

/// The order in which epoch `epoch` (1, 2, ...) of a run seeded `seed`
/// visits `rows` training rows: a Fisher-Yates shuffle of 0..rows-1 driven
/// by SplitMix64 seeded with seed * 1000003 + epoch (docs/training.md
/// spells it out; python/tests/mprun_order.py replays it). Seeded per
/// epoch, so a resumed run visits the rows as an uninterrupted one.
std::vector<int64_t> epochOrder(int64_t rows, uint64_t seed, int64_t epoch);

struct EpochReport;

/// Called around the trainer's steps and predictions (memory meters,
/// numerics checkers). Steps count from 1 over the whole run; prediction
/// batches from 1 within one evaluation.
class RunObserver {
public:
  virtual ~RunObserver();
  /// Before the first step of epoch `epoch` (1, 2, ...; also when a
  /// resumed run starts inside it).
  virtual void beforeEpoch(int64_t epoch) {}
  virtual void beforeStep(int64_t step) {}
  virtual void afterStep(int64_t step, const StepResult &result) {}
  /// After a precision repair (or an attempt that found nothing to fix)
  /// that followed step `report.step`.
  virtual void afterRepair(const RepairReport &report) {}
  /// After the epoch's evaluation and checkpoint; false with `error` fails
  /// the epoch (the stats file could not be written).
  virtual bool afterEpoch(const EpochReport &report, std::string &error) {
    return true;
  }
  /// Around a held-out evaluation inside training (not training steps).
  virtual void beforeEvaluation() {}
  virtual void afterEvaluation() {}
  virtual void beforePrediction(int64_t batch) {}
  virtual void afterPrediction(int64_t batch) {}
};

/// Percentage of `test` rows whose largest logit is their label's class,
/// batch by batch (the last batch padded with zero rows). -1 with `error`
/// when a prediction fails.
double accuracy(Session &session, const LabelledRows &test, std::string &error,
                RunObserver *observer = nullptr);
double accuracy(InferSession &session, const LabelledRows &test,
                std::string &error, RunObserver *observer = nullptr);

/// A checkpoint path that names a directory (an existing one, or a path
/// ending in '/') stands for DIR/checkpoint.npz; with `create` the
/// directory is made.
bool resolveCheckpointPath(std::string &path, bool create, std::string &error);

/// Session::loadCheckpoint with a way out: when `path` is damaged and the
/// checkpoint it replaced (FILE.prev) is intact, the error names it; a
/// checkpoint without its run position (epoch) is an error. `keptF32` as
/// Session::loadCheckpoint's.
bool restoreCheckpoint(Session &session, const std::string &path,
                       bool withState, RunPosition &position,
                       std::string &error,
                       std::vector<std::string> *keptF32 = nullptr);

/// Where saves inside a run keep the checkpoint they replace.
std::string previousCheckpointPath(const std::string &path);

struct TrainerOptions {
  /// Epochs of the whole run (a resumed run counts the ones before).
  int64_t epochs = 10;
  /// Seeds the epoch order (mp-run's --seed also seeds initialisation).
  uint64_t seed = 0;
  /// Saved after every epoch (atomically; the one replaced is kept as
  /// FILE.prev) unless empty; a directory as resolveCheckpointPath says.
  std::string checkpointPath;
  /// Also saved every N optimizer steps inside an epoch (with gradient
  /// accumulation, every N windows; 0: only at epoch ends).
  int64_t checkpointEvery = 0;
  /// Continue from checkpointPath (parameters, optimizer state, the step's
  /// scalars and the position inside its epoch); the session is compiled
  /// again when the checkpoint keeps ops in f32 that it does not.
  bool resume = false;
  /// Without `resume`: start from this checkpoint's parameters only
  /// (fine-tuning, e.g. quantization-aware training from an f32 run); the
  /// optimizer state, step and position start afresh.
  std::string initFromPath;
  /// Self-healing precision (PrecisionRepair.h): when and how often.
  RepairOptions repair;
  /// Data-parallel: after every step, check that all ranks hold bitwise
  /// equal parameters (a checksum compared over MPI), failing if not.
  bool checkReplicas = false;
};

/// What one epoch did.
struct EpochReport {
  int64_t epoch = 0, epochs = 0;
  int64_t steps = 0, samples = 0;
  double meanLoss = 0;
  double seconds = 0;
  /// Held-out accuracy in percent after the epoch (-1: no test rows).
  double accuracy = -1;
  /// The session's skipped-step count and loss scale after the epoch.
  int64_t skipped = 0;
  float scale = 0;
};

/// mp-run's progress line for an epoch ("epoch 3/10  loss 0.1234  test
/// accuracy 97.50%  51234 samples/s  skipped 0  scale 1"; without the
/// accuracy when there were no test rows), no newline.
std::string formatEpochLine(const EpochReport &report);

class Trainer {
public:
  /// Checks the rows against the session's batch and, with
  /// `options.resume`, restores the checkpoint and its position (which
  /// must fit this data's batches an epoch). Null with `error` on failure.
  /// `session` and the rows must outlive the trainer.
  static std::unique_ptr<Trainer> create(Session &session,
                                         const LabelledRows &train,
                                         const LabelledRows &test,
                                         const TrainerOptions &options,
                                         std::string &error);

  /// Where the next step starts: completed epochs and the batch inside the
  /// next one.
  const RunPosition &position() const { return next; }
  bool resumed() const { return options.resume; }
  bool finished() const { return next.epoch >= options.epochs; }
  int64_t batchesPerEpoch() const { return batches; }

  /// Trains the rest of the current epoch, measures held-out accuracy when
  /// there are test rows, and saves the checkpoint.
  bool runEpoch(EpochReport &report, std::string &error,
                RunObserver *observer = nullptr);

  /// Whether failed steps are repaired (PrecisionRepair.h), still.
  bool repairing() const { return repairer && repairer->active(); }
  /// The run's repairs so far, in order.
  const std::vector<RepairReport> &repairs() const { return repaired; }
  /// Ops a resumed run keeps in f32 because its checkpoint did (the
  /// session was compiled again with them).
  const std::vector<std::string> &resumedPins() const {
    return pinsFromCheckpoint;
  }

  /// Seconds spent in training steps (not in repairs) and samples
  /// trained, over the epochs this trainer ran.
  double trainSeconds() const { return seconds; }
  int64_t samplesTrained() const { return samples; }

private:
  Trainer(Session &session, const LabelledRows &train,
          const LabelledRows &test, const TrainerOptions &options)
      : session(session), train(train), test(test), options(options) {}
  bool save(const RunPosition &position, std::string &error);
  bool agreeOnRun(std::string &error);
  // create's steps after the rows and options are checked.
  bool initFromCheckpoint(std::string &error);
  bool resumeFromCheckpoint(std::string &error);
  bool checkResumedPosition(const std::string &path, std::string &error);
  bool createRepairer(std::string &error);
  // runEpoch's steps: one batch's step, a repair after it, the saves.
  struct EpochProgress;
  bool trainBatch(int64_t batch, EpochProgress &progress, std::string &error,
                  RunObserver *observer);
  bool repairAfterStep(int64_t step, EpochProgress &progress,
                       std::string &error, RunObserver *observer);
  bool saveWithinEpoch(int64_t epoch, int64_t batch, int64_t step,
                       std::string &error);
  bool finishEpoch(EpochReport &report, std::string &error,
                   RunObserver *observer);

  Session &session;
  LabelledRows train, test;
  TrainerOptions options;
  RunPosition next;
  int64_t batches = 0;
  double seconds = 0;
  int64_t samples = 0;
  std::unique_ptr<PrecisionRepairer> repairer;
  std::vector<RepairReport> repaired;
  std::vector<std::string> pinsFromCheckpoint;
};

} // namespace mp

#endif // MP_SESSION_TRAINER_H
