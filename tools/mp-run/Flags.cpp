//===- Flags.cpp - the flags and steps mp-run's commands share ------------===//
//
// The flags of every command that runs a model (--precision, --checkpoint,
// --data, --no-cache) and of train and infer (--init, --check-numerics),
// and what train and infer both do with them: read the training options,
// refuse what the GPU cannot do, open the session, read the data, meter
// memory and report numerics (Common.h).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "mp/Session/Environment.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cstdio>

namespace mprun {

// Only these show in --help (LLVM registers hundreds of its own); per
// command, its own and the common ones (mp-run.cpp).
cl::OptionCategory commonOptions("Common options (train, infer, compare)");
cl::OptionCategory trainOptions("train options");
cl::OptionCategory inferOptions("infer options");
cl::OptionCategory compareOptions("compare options");

cl::opt<std::string> precision(
    "precision", cl::cat(commonOptions),
    cl::desc("f32 | f16 | bf16 | auto (what the hardware has: "
             "bf16 units, else f16 ones, else f32; `mp-run info` "
             "shows the choice) (infer also: int8, from --calibration; "
             "int8-dynamic, activation scales at run time)"),
    cl::init("f32"));
cl::opt<std::string>
    checkpointPath("checkpoint", cl::cat(commonOptions),
                   cl::desc("Checkpoint file (.npz), or a directory (an "
                            "existing one, or a path ending in '/') for "
                            "DIR/checkpoint.npz: train saves it after every "
                            "epoch (atomically), infer reads it"),
                   cl::init(""));
cl::opt<std::string>
    dataPath("data", cl::cat(commonOptions),
             cl::desc("digits (the default data set) or FILE.npz with "
                      "x_train, y_train, x_test, y_test (f32, labels "
                      "one-hot)"),
             cl::init("digits"));
cl::opt<bool>
    noCache("no-cache", cl::cat(commonOptions),
            cl::desc("Compile the training step and inference code without "
                     "the compile cache (also MP_CACHE=off)"),
            cl::init(false));
cl::opt<std::string>
    initScheme("init", cl::cat(trainOptions),
               cl::desc("Weight initialisation: he-uniform (default), "
                        "he-normal, xavier-uniform, xavier-normal or zeros; "
                        "biases start at zero"),
               cl::init("he-uniform"));
cl::opt<bool> checkNumerics(
    "check-numerics", cl::cat(trainOptions), cl::cat(inferOptions),
    cl::desc("Probe every op's output (--mp-check-numerics) and report, per "
             "step, the first op whose output had inf/nan or went beyond "
             "FP16's range, with a summary at the end"),
    cl::init(false));

mp::TrainOptionFlags *trainFlags = nullptr;
mp::InferOptionFlags *inferFlags = nullptr;
PeakMeter predictMemory;

int fail(const std::string &message) {
  std::fprintf(stderr, "mp-run: error: %s\n", message.c_str());
  return 1;
}

bool isArtifact(const std::string &path) {
  return llvm::StringRef(path).ends_with(".mpa") ||
         mp::Session::isArtifact(path);
}

int readTrainOptions(mp::TrainOptions &options) {
  std::string error;
  // Errors in option combinations come before the model is compiled. The
  // environment's switches (Environment.h) first: the flags win.
  if (!mp::readOptionEnvironment(options, error) ||
      !trainFlags->apply(options, error) ||
      !mp::verifyTrainOptions(options, error))
    return fail(error);
  if (noCache)
    options.cache.enabled = false;
  return 0;
}

int refuseOnGpu(const mp::TrainOptions &options, bool probes,
                bool calibrating) {
  if (options.device != mp::Device::Cuda)
    return 0;
  if (isArtifact(modelPath))
    return fail("--device cuda compiles the model (.mlir); artifacts are "
                "CPU code");
  if (calibrating)
    return fail("--device cuda: calibration runs on the CPU (drop --device "
                "cuda)");
  if (probes)
    return fail("--device cuda: --check-numerics and compare run on the "
                "CPU (drop --device cuda)");
  return 0;
}

int resolveCheckpoint(bool create) {
  std::string path = checkpointPath, error;
  if (!mp::resolveCheckpointPath(path, create, error))
    return fail(error);
  checkpointPath = path;
  return 0;
}

namespace {

/// An artifact fixes the compile options: given ones must agree with it,
/// and what needs the model itself (probes) is an error.
int checkArtifactOptions(const mp::Session &session,
                         const mp::TrainOptions &given) {
  const mp::TrainOptions &compiled = session.trainOptions();
  std::string compiledPrecision =
      mlir::mp::stringifyFloatPrecision(compiled.precision).str();
  if (given.automaticPrecision)
    return fail("artifact '" + modelPath + "' was compiled with --precision " +
                compiledPrecision +
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
        compiledPrecision + " --optimizer " +
        mlir::mp::stringifyOptimizerAlgorithm(compiled.optimizer).str() +
        " (and its loss scale and hyperparameters): compile options cannot "
        "change when it runs; run mp-compile again");
  if (given.tf32.value_or(false))
    return fail("--tf32: artifacts are CPU code, and the CPU has no TF32");
  if (checkNumerics)
    return fail("--check-numerics needs the model (.mlir), not an artifact");
  return 0;
}

/// The digits data exported by scripts/setup.sh next to the tools.
std::string defaultDataPath(const char *argv0) {
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, (void *)&dataPath);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "data", "digits.npz");
  return std::string(path);
}

} // namespace

int openSession(const mp::TrainOptions &options, OpenedSession &opened) {
  mp::InitScheme scheme;
  if (!mp::parseInitScheme(initScheme, scheme))
    return fail("bad --init '" + initScheme +
                "': expected he-uniform, he-normal, xavier-uniform, "
                "xavier-normal or zeros");
  std::string error;
  auto start = std::chrono::steady_clock::now();
  opened.fromArtifact = isArtifact(modelPath);
  opened.session = opened.fromArtifact
                       ? mp::Session::open(modelPath, error, &options.seed)
                       : mp::Session::create(modelPath, options, error);
  mp::Session *session = opened.session.get();
  if (!session)
    return fail(error);
  if (scheme != mp::InitScheme::HeUniform)
    session->initialiseParameters(options.seed, scheme);
  if (opened.fromArtifact)
    if (int status = checkArtifactOptions(*session, options))
      return status;
  // The precision the session runs in, and why, first.
  opened.precision =
      mlir::mp::stringifyFloatPrecision(session->trainOptions().precision)
          .str();
  if (!session->precisionDecision().empty()) {
    std::printf("%s\n", session->precisionDecision().c_str());
    std::fflush(stdout);
  }
  opened.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // (The library checks --batch-size against the model's static batch.)
  // Before the data: a model without mp.predict may not fit it either.
  if (!session->canPredict())
    return fail("the model has no function marked mp.predict, so accuracy "
                "cannot be measured");
  return 0;
}

int loadData(const char *argv0, const mp::Session &session,
             mp::DataSplit &train, mp::DataSplit &test) {
  bool digits = dataPath == "digits";
  std::string path = digits ? defaultDataPath(argv0) : std::string(dataPath);
  std::string error;
  if (!mp::loadDataset(path, session.numFeatures(), session.numClasses(), train,
                       test, error))
    return fail(error + (digits ? " (run scripts/setup.sh to export the "
                                  "digits data set)"
                                : ""));
  return 0;
}

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

int64_t hostBytes(const std::vector<mp::HostTensor> &tensors) {
  int64_t bytes = 0;
  for (const mp::HostTensor &t : tensors)
    bytes += t.numElements() * static_cast<int64_t>(sizeof(float));
  return bytes;
}

} // namespace mprun
