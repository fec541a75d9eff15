//===- Train.cpp - mp-run train -------------------------------------------===//
//
// mp-run train MODEL.mlir|MODEL.onnx|ARTIFACT.mpa [options]: compiles the
// model's training step (or loads an artifact's), trains on a data set
// through the library's Trainer, printing a line per epoch and the
// held-out accuracy, with checkpoints (--checkpoint, --resume, --init-from),
// the stability monitor (--monitor, --stats) and the numerics checker
// (--check-numerics). Also what only train takes: its flags, refused by
// the other commands.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "mp/Session/MonitorObserver.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

namespace mprun {
namespace {

// Every default is the session library's (TrainerOptions, MonitorOptions).
const mp::TrainerOptions trainerDefaults;
const mp::MonitorOptions monitorDefaults;

cl::opt<unsigned> epochs("epochs", cl::cat(trainOptions),
                         cl::desc("Passes over the data"),
                         cl::init(trainerDefaults.epochs));
cl::opt<std::string> initFrom(
    "init-from", cl::cat(trainOptions),
    cl::desc("train: start from this checkpoint's parameters (fine-tuning); "
             "optimizer state, step and epoch start afresh"),
    cl::value_desc("FILE"));
cl::opt<unsigned> checkpointEvery(
    "checkpoint-every", cl::cat(trainOptions),
    cl::desc("Also save the checkpoint every N optimizer steps (0: only at "
             "the end of each epoch); the one it replaces is kept as "
             "FILE.prev"),
    cl::init(trainerDefaults.checkpointEvery));
cl::opt<bool> resume("resume", cl::cat(trainOptions),
                     cl::desc("Continue training from --checkpoint"),
                     cl::init(false));
cl::opt<bool> checkReplicas(
    "check-replicas", cl::cat(trainOptions),
    cl::desc("--distributed: after every step, check that all ranks hold "
             "bitwise equal parameters"),
    cl::init(false));
cl::opt<mp::RepairMode> autoPrecisionRepair(
    "auto-precision-repair", cl::cat(trainOptions),
    cl::desc("train: when steps keep failing in a way loss scaling cannot "
             "cure (inf/nan loss, overflow at the scale's floor), find the "
             "f16/bf16 ops responsible with probes, keep them in f32, "
             "recompile and continue (default: on with --precision auto)"),
    cl::values(clEnumValN(mp::RepairMode::On, "on", "repair"),
               clEnumValN(mp::RepairMode::Off, "off", "never repair")),
    cl::init(mp::RepairMode::Auto));

// The stability monitor (docs/training.md).
enum class MonitorSwitch { Off, On };
cl::opt<MonitorSwitch>
    monitor("monitor", cl::cat(trainOptions),
            cl::desc("train: warn (stderr) of a non-finite loss, loss spikes, "
                     "repeated overflow, a loss scale pinned at its floor and "
                     "gradients underflowing to zero"),
            cl::values(clEnumValN(MonitorSwitch::On, "on", "check every step"),
                       clEnumValN(MonitorSwitch::Off, "off", "no checks")),
            cl::init(MonitorSwitch::On));
// Named in claimStatsFlag: LLVM registers a -stats of its own.
cl::opt<std::string>
    statsPath(cl::cat(trainOptions),
              cl::desc("train: write the run's history (per step loss, "
                       "gradient norm, scale, skipped; the monitor's reports; "
                       "per epoch figures) as JSON to FILE, after every "
                       "epoch (atomically)"),
              cl::value_desc("FILE"), cl::init(""));
cl::opt<double>
    spikeFactor("spike-factor", cl::cat(trainOptions),
                cl::desc("Monitor: a loss above this factor times the "
                         "median of the recent steps is a spike"),
                cl::init(monitorDefaults.spikeFactor));
cl::opt<int> overflowWindow(
    "overflow-window", cl::cat(trainOptions),
    cl::desc("Monitor: the steps in which --overflow-limit skipped steps "
             "are repeated overflow"),
    cl::init(monitorDefaults.overflowWindow));
cl::opt<int>
    overflowLimit("overflow-limit", cl::cat(trainOptions),
                  cl::desc("Monitor: skipped steps within --overflow-window "
                           "that are reported as repeated overflow"),
                  cl::init(monitorDefaults.overflowLimit));

/// Memory of training steps.
PeakMeter trainMemory;

/// Memory of steps and predictions, and the numerics checker's report per
/// step (evaluations are not steps).
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

/// What the run is about to do: the model, data and compilation, then
/// what it starts from and how it trains.
void printHeader(const OpenedSession &opened, const mp::Trainer &trainer,
                 const mp::DataSplit &train, const mp::DataSplit &test) {
  const mp::Session &session = *opened.session;
  int64_t b = session.batchSize();
  // A step from the compile cache was loaded, like an artifact.
  mp::CacheUse cache = session.cacheUse();
  bool loaded = opened.fromArtifact || cache == mp::CacheUse::Loaded;
  std::printf("mp-run: %s, precision %s, %lld train / %lld test rows, batch "
              "%lld, %s in %.*f s%s%s\n",
              modelPath.c_str(), opened.precision.c_str(),
              (long long)train.rows, (long long)test.rows, (long long)b,
              opened.fromArtifact             ? "loaded"
              : cache == mp::CacheUse::Loaded ? "loaded from the compile cache"
                                              : "compiled",
              loaded ? 3 : 1, opened.compileSeconds,
              cache == mp::CacheUse::Stored ? " (kept in the compile cache)"
                                            : "",
              session.isVectorized() ? "" : " (scalar loops)");
  if (cache == mp::CacheUse::Unusable)
    std::fprintf(stderr, "mp-run: note: compiled without the cache: %s\n",
                 session.cacheNote().c_str());
  if (session.isDistributed())
    std::printf("data-parallel over %lld MPI ranks: global batch %lld (%lld "
                "rows per rank), gradients averaged by one all-reduce a "
                "step; %lld steps an epoch\n",
                (long long)session.ranks(), (long long)(b * session.ranks()),
                (long long)b, (long long)trainer.batchesPerEpoch());
  if (!initFrom.empty())
    std::printf("starting from the parameters of %s\n", initFrom.c_str());
  // The session's options: an artifact compiled with --qat trains so too.
  const mp::TrainOptions &compiled = session.trainOptions();
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
                (long long)trainer.position().epoch + 1,
                (long long)trainer.position().batch, checkpointPath.c_str());
  if (!trainer.resumedPins().empty()) {
    std::printf("recompiled: the checkpoint keeps in f32");
    for (const std::string &pin : trainer.resumedPins())
      std::printf(" %s", pin.c_str());
    std::printf("\n");
  }
  if (trainer.repairing())
    std::printf("precision repair: on (steps that fail in f16/bf16 are "
                "probed and their ops kept in f32)\n");
  std::fflush(stdout); // a supervisor (scripts/kill_resume.py) waits for it
}

/// The memory the run held: on the GPU, or in host buffers and compiled
/// code.
void printMemory(mp::Session &session) {
  int64_t params = hostBytes(session.parameters()),
          state = hostBytes(session.optimizerState());
  const char *updates =
      session.updatesInPlace() ? "updated in place" : "held twice, old and new";
  if (session.onDevice()) {
    std::printf("memory: parameters %.3f MB and optimizer state %.3f MB "
                "stay in GPU memory (%s); the device pool held at most %llu "
                "bytes\n",
                megabytes(params), megabytes(state), updates,
                (unsigned long long)session.devicePeakBytes());
    return;
  }
  // A 16-bit step keeps copies of its weights between steps: say so.
  uint64_t copies = session.stepCopyBytes();
  std::string copiesText =
      copies ? ", 16-bit weight copies " +
                   llvm::formatv("{0:F3}", megabytes(copies)).str() +
                   " MB (--weight-copies convert: none)"
             : "";
  std::printf("memory: parameters %.3f MB and optimizer state %.3f MB (f32 "
              "host buffers, %s)%s; compiled code held at most %.3f MB in a "
              "training step and %.3f MB in a prediction\n",
              megabytes(params), megabytes(state), updates, copiesText.c_str(),
              megabytes(trainMemory.peak), megabytes(predictMemory.peak));
  // The bytes bench/memory_bench.py reads (docs/memory.md): the weights a
  // step reads, 16-bit copies included.
  std::printf("memory: weights %lld bytes (f32 parameters%s); compiled code "
              "held at most %lld bytes in a training step (batch %lld)\n",
              (long long)(params + copies),
              copies ? " and their 16-bit copies" : "",
              (long long)trainMemory.peak, (long long)session.batchSize());
}

} // namespace

const char *const trainOnlyOptions[4] = {"qat", "qat-freeze-after",
                                         "weight-copies", "distributed"};

int refuseTrainFlags() {
  if (trainFlags->wasGiven("qat") || trainFlags->wasGiven("qat-freeze-after") ||
      !initFrom.empty())
    return fail("--qat, --qat-freeze-after and --init-from are for train "
                "(infer --precision int8 reads a QAT checkpoint's scales)");
  if (autoPrecisionRepair.getNumOccurrences())
    return fail("--auto-precision-repair is for train");
  if (trainFlags->wasGiven("weight-copies"))
    return fail("--weight-copies is for train (predictions always convert "
                "their weights once)");
  if (!statsPath.empty() || monitor.getNumOccurrences() ||
      spikeFactor.getNumOccurrences() || overflowWindow.getNumOccurrences() ||
      overflowLimit.getNumOccurrences())
    return fail("--stats, --monitor, --spike-factor, --overflow-window and "
                "--overflow-limit are for train");
  if (trainFlags->wasGiven("distributed"))
    return fail("--distributed is for train");
  if (checkReplicas)
    return fail("--check-replicas is for train (with --distributed)");
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

int runTrain(const char *argv0) {
  if (resume && checkpointPath.empty())
    return fail("--resume needs --checkpoint");
  if (resume && !initFrom.empty())
    return fail("--init-from starts a new run from a checkpoint's "
                "parameters; --resume continues one: use one of them");
  mp::MonitorOptions monitorOptions;
  monitorOptions.spikeFactor = spikeFactor;
  monitorOptions.overflowWindow = overflowWindow;
  monitorOptions.overflowLimit = overflowLimit;
  std::string error; // refused before the model is compiled
  if (!mp::validateMonitorOptions(monitorOptions, error))
    return fail(error);
  if (int status = resolveCheckpoint(/*create=*/true))
    return status;
  if (llvm::StringRef(precision).starts_with("int8"))
    return fail("--precision int8 is for infer (post-training quantization "
                "of a trained checkpoint)");
  mp::TrainOptions options;
  if (!mp::parseTrainPrecision(precision, options, error))
    return fail(error);
  if (int status = readTrainOptions(options))
    return status;
  if (int status = refuseOnGpu(options, checkNumerics, false))
    return status;
  if (checkReplicas && !options.distributed)
    return fail("--check-replicas needs --distributed");
  if (options.distributed && isArtifact(modelPath))
    return fail("--distributed compiles the model (.mlir, .onnx): an "
                "artifact's step has no all-reduce");
  if (checkNumerics)
    options.probes = mp::TrainOptions::Probes::EveryOp;

  OpenedSession opened;
  mp::DataSplit train, test;
  if (int status = openSession(options, opened))
    return status;
  mp::Session &session = *opened.session;
  if (int status = loadData(argv0, session, train, test))
    return status;
  std::unique_ptr<mp::NumericsChecker> checker;
  if (checkNumerics)
    checker = std::make_unique<mp::NumericsChecker>();

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
  if (session.rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    return fail("cannot silence rank " + std::to_string(session.rank()));
  std::unique_ptr<mp::Trainer> trainer = mp::Trainer::create(
      session, train.view(), test.view(), trainerOptions, error);
  if (!trainer)
    return fail(error);
  printHeader(opened, *trainer, train, test);

  TrainingObserver observer;
  observer.session = &session;
  observer.checker = checker.get();
  mp::MonitorConfig monitorConfig;
  monitorConfig.checks = monitor == MonitorSwitch::On;
  monitorConfig.options = monitorOptions;
  monitorConfig.statsPath = statsPath;
  monitorConfig.header = mp::describeRun(modelPath, session.trainOptions());
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
  double acc = mp::accuracy(session, test.view(), error);
  if (acc < 0)
    return fail(error);
  std::printf("held-out accuracy %.2f%% (%s), %.0f samples/s, %lld skipped "
              "steps\n",
              acc, opened.precision.c_str(),
              trainer->samplesTrained() /
                  std::max(trainer->trainSeconds(), 1e-9),
              (long long)session.stepState().skipped);
  if (monitor == MonitorSwitch::On)
    std::printf("%s\n", monitorObserver->monitor().summary().c_str());
  if (!trainer->repairs().empty()) {
    const std::vector<std::string> &kept = session.trainOptions().keepF32;
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
  printMemory(session);
  if (checker)
    checker->printSummary(stdout);
  return 0;
}

} // namespace mprun
