//===- Common.h - what mp-run's commands share ------------------*- C++ -*-===//
//
// mp-run's commands (mp-run.cpp dispatches; Train.cpp, Infer.cpp,
// Compare.cpp, Info.cpp run them) share the flags every command takes, the
// training options' flags (TrainOptions.def, through mp::TrainOptionFlags),
// and the steps that train and infer both take: the options read and
// checked, the session compiled or loaded, the data read, memory metered
// and numerics reported (Flags.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MP_RUN_COMMON_H
#define MP_TOOLS_MP_RUN_COMMON_H

#include "mp/Session/Numerics.h"
#include "mp/Session/OptionFlags.h"
#include "mp/Session/Session.h"
#include "mp/Session/Trainer.h"

#include "mprt/mprt.h"

#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace mprun {

namespace cl = llvm::cl;

/// The flags' categories, for --help: those every command that runs a model
/// takes, and each command's own (a flag two commands take is in both).
extern cl::OptionCategory commonOptions, trainOptions, inferOptions,
    compareOptions;

/// The model or artifact (mp-run.cpp).
extern cl::opt<std::string> modelPath;
// Flags of every command that runs a model (Flags.cpp).
extern cl::opt<std::string> precision, checkpointPath, dataPath;
extern cl::opt<bool> noCache;
// Flags of train and infer (Flags.cpp: openSession reads them).
extern cl::opt<std::string> initScheme;
extern cl::opt<bool> checkNumerics;

/// The training options' flags (TrainOptions.def), registered by
/// mp_run_main before the command line is parsed.
extern mp::TrainOptionFlags *trainFlags;
/// The inference options' flags but those the training options have.
extern mp::InferOptionFlags *inferFlags;

// The commands (argv0 finds the default data set).
int runTrain(const char *argv0);
int runInfer(const char *argv0);
int runCompare(const char *argv0);
int runInfo(const char *argv0);

// Train.cpp: what only train takes.
/// The training options that only train takes (--qat, ...): listed with
/// train's flags in --help, refused by the other commands.
extern const char *const trainOnlyOptions[4];
/// The other commands refuse train's flags: 1 (after printing why) when
/// one was given, else 0.
int refuseTrainFlags();
/// LLVM's -stats makes way for train's --stats.
void claimStatsFlag();

/// Prints "mp-run: error: MESSAGE" and returns 1, mp-run's failing status.
int fail(const std::string &message);

/// True for an artifact (mp-compile): by its trailer, or by its extension,
/// so that a damaged one gets the artifact's errors.
bool isArtifact(const std::string &path);

/// The flags' text as TrainOptions (the precision is already in `options`):
/// the training options' flags applied, their combinations checked by the
/// library (mp::verifyTrainOptions) before anything is compiled, and
/// --no-cache. 1 after printing why, else 0.
int readTrainOptions(mp::TrainOptions &options);
/// What --device cuda cannot do: load an artifact, and, where `probes` or
/// `calibrating`, run numerics probes or calibration. 1 after printing why.
int refuseOnGpu(const mp::TrainOptions &options, bool probes, bool calibrating);
/// --checkpoint as a file (DIR/ -> DIR/checkpoint.npz; `create` makes DIR).
int resolveCheckpoint(bool create);

/// train's and infer's session: the model compiled with `options`, or the
/// artifact loaded and the options given checked against it; --init
/// applied; --precision auto's choice printed; --batch-size and mp.predict
/// checked.
struct OpenedSession {
  std::unique_ptr<mp::Session> session;
  bool fromArtifact = false;
  double compileSeconds = 0;
  /// The precision the session runs in (an artifact's, or auto's choice).
  std::string precision;
};
int openSession(const mp::TrainOptions &options, OpenedSession &opened);

/// --data's splits for `session`'s features and classes.
int loadData(const char *argv0, const mp::Session &session,
             mp::DataSplit &train, mp::DataSplit &test);

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
/// The memory of predictions (train's evaluations, infer's batches).
extern PeakMeter predictMemory;

/// Meters the memory of every prediction.
struct PredictionMeter : mp::RunObserver {
  void beforePrediction(int64_t) override { predictMemory.begin(); }
  void afterPrediction(int64_t) override { predictMemory.end(); }
};

/// One line for a step (`what`: "step", "batch") the numerics checker
/// flagged; the first few only.
void reportNumerics(const mp::NumericsEvent &event, const char *what,
                    int64_t &reported);

inline double megabytes(int64_t bytes) { return bytes / (1024.0 * 1024.0); }
/// The bytes of f32 host tensors.
int64_t hostBytes(const std::vector<mp::HostTensor> &tensors);

} // namespace mprun

#endif // MP_TOOLS_MP_RUN_COMMON_H
