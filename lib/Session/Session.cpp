//===- Session.cpp - compile, JIT and call a training step ----------------===//

#include "mp/Session/Session.h"
#include "StepBackend.h"
#include "mp/Session/CudaDevice.h"
#include "mp/Session/Hardware.h"
#include "mp/Session/JitEntry.h"
#include "mp/Session/PrecisionPins.h"
#include "mp/Session/SessionPipelines.h"

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"
#include "mp/Transforms/Pipelines.h"
#include "mprt/mprt.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <random>
#include <sys/time.h>

using namespace mlir;

namespace mp {

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::unique_ptr<Session> Session::create(const std::string &modelPath,
                                         const TrainOptions &options,
                                         std::string &error) {
  std::unique_ptr<Session> session(new Session());
  if (!session->compile(modelPath, options, error))
    return nullptr;
  // batch-size fixes an ONNX model's dynamic batch; a static one must
  // agree with it (data-parallel: the global batch, the model's each
  // rank's share).
  int64_t global = session->batchSize() * session->ranks();
  if (options.modelBatch != 0 && options.modelBatch != global) {
    error = "--batch-size " + std::to_string(options.modelBatch) +
            " does not match the model's static batch of " +
            std::to_string(session->batchSize()) +
            (session->ranks() > 1 ? " per rank" : "");
    return nullptr;
  }
  session->initialiseParameters(options.seed);
  // Data-parallel: every rank starts from rank 0's parameters.
  if (!session->broadcastTrainingState(error))
    return nullptr;
  return session;
}

// Out of line: StepBackend is complete only here.
Session::Session() = default;

Session::~Session() {
  // The backend's buffers go first; the JIT's code goes with the engine, an
  // artifact's with its library.
  backend.reset();
  if (library)
    dlclose(library);
}

/// What mp-session-train compiles `modelPath` with: `options`, and an ONNX
/// model, which only predicts, is trained with softmax cross-entropy
/// unless the options say otherwise.
static TrainOptions stepOptions(const std::string &modelPath,
                                const TrainOptions &options) {
  TrainOptions step = options;
  if (!step.addLoss && isOnnxModel(modelPath))
    step.addLoss = mlir::mp::LossKind::CrossEntropy;
  return step;
}

/// Whether `module` has a function marked mp.loss.
static bool hasLossFunction(ModuleOp module) {
  return llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp func) {
    return func->hasAttr(mlir::mp::kLossAttrName);
  });
}

bool Session::lower(const std::string &modelPath, const TrainOptions &options,
                    OwningOpRef<ModuleOp> &module, std::string &error) {
  if (!resolveLossScale(options.lossScale, options.precision, scaleMode, error))
    return false;
  compiledOptions = options;
  context = createSessionContext();
  // Diagnostics become the error message.
  DiagnosticText collected(context.get());
  std::string &diagnostics = collected.text;
  if (!(module = parseModel(modelPath, context.get(), collected, error,
                            options.modelBatch)))
    return false;
  // The parameters' starting values (an ONNX model's weights): kept for
  // initialiseParameters and for the artifact or cache entry written from
  // this lowering; the pipelines do not need them.
  initialValues = takeInitialValues(*module);
  TrainOptions step = stepOptions(modelPath, options);
  if (!step.addLoss && !hasLossFunction(*module)) {
    error = "model '" + modelPath +
            "' has no function marked mp.loss (mp-run --loss cross-entropy|mse "
            "adds one around its mp.predict)";
    return false;
  }
  // The step on tensors: mp-session-train, parsed from its text as mp-opt
  // would parse it (SessionPipelines.h).
  pipelineText = sessionTrainPipeline(step);
  registerSessionPipelines();
  PassManager pm(context.get());
  llvm::raw_string_ostream parseErrors(diagnostics);
  if (failed(parsePassPipeline(sessionTrainPipelineElement(step), pm,
                               parseErrors)) ||
      failed(pm.run(*module))) {
    error = "compiling the training step failed\n" + diagnostics;
    return false;
  }
  entries.window = options.accumulate;
  entries.windowOverflow = scaleMode != LossScalingMode::None;
  entries.windowAmax = scaleMode == LossScalingMode::Adaptive;
  if (!readTrainEntry(*module, error) || !readPredictEntries(*module, error))
    return false;
  readProbeSites(*module);
  entries.trainCopies = nullptr;
  training.scalars.scale = scaleMode == LossScalingMode::None
                               ? 1.0f
                               : static_cast<float>(options.lossScale.initial);
  // dump-ir=FILE: the module on tensors that is about to be lowered (train
  // and predict entries, after every mp pass), for debugging.
  if (!dumpModuleIfAsked(*module, options.dumpIr, error))
    return false;
  if (!lowerStep(module, options, diagnostics)) {
    error = std::string("lowering the training step") +
            (options.device == Device::Cuda ? " for the GPU" : "") +
            " failed\n" + diagnostics;
    return false;
  }
  return true;
}

bool Session::lowerStep(OwningOpRef<ModuleOp> &module,
                        const TrainOptions &options, std::string &diagnostics) {
  std::string lowering;
  if (!lowerModule(module, options.device == Device::Cuda,
                   loweringChoices(options), diagnostics, vectorized, lowering))
    return false;
  pipelineText += "\n" + lowering;
  // in-place-updates=false keeps two sets of buffers anyway (to compare).
  auto inPlaceEntry = [&](StringRef name) {
    auto entry = module->lookupSymbol<LLVM::LLVMFuncOp>(name);
    return entry && entry->hasAttr(mlir::mp::kInPlaceUpdatesAttrName) &&
           options.inPlaceUpdates;
  };
  entries.inPlaceUpdates = inPlaceEntry("mp_train_entry");
  entries.accumulateInPlace = inPlaceEntry("mp_accumulate_entry");
  return true;
}

bool Session::joinJob(const std::string &modelPath, TrainOptions &options,
                      std::string &error) {
  if (options.probes != TrainOptions::Probes::None) {
    error = "--check-numerics and compare run in one process; drop "
            "--distributed";
    return false;
  }
  int32_t rank = 0, size = 0;
  if (mprt_dist_init(&rank, &size) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  distRank = rank;
  distRanks = size;
  options.ranks = size;
  // A dynamic batch (ONNX, --batch-size) is the global batch: each rank
  // computes its share. A model's static batch is each rank's.
  if (options.modelBatch > 0) {
    if (options.modelBatch % size != 0) {
      error = "the global batch of " + std::to_string(options.modelBatch) +
              " rows is not divisible by the job's " + std::to_string(size) +
              " ranks";
      return false;
    }
    options.modelBatch /= size;
  }
  // Every rank must build the same step: the model's bytes and the options
  // that shape the step (the seed only initializes, and rank 0's
  // parameters are broadcast).
  auto bytes = llvm::MemoryBuffer::getFile(modelPath, /*IsText=*/false);
  if (!bytes) {
    error = "cannot read model '" + modelPath + "'";
    return false;
  }
  std::string key;
  llvm::raw_string_ostream os(key);
  os << llvm::json::Value(compileOptionsJson(options));
  uint64_t hash = llvm::xxh3_64bits((*bytes)->getBuffer()) ^
                  (llvm::xxh3_64bits(key) * 0x9e3779b97f4a7c15ULL);
  return sameOnEveryRank(
      hash,
      "the ranks of this job compile different steps (another model file or "
      "other compile options on some rank); every rank must run the same "
      "command",
      error);
}

bool Session::sameOnEveryRank(uint64_t value, const std::string &disagreement,
                              std::string &error) {
  int32_t same = 0;
  if (mprt_dist_same(value, &same) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  if (!same)
    error = disagreement;
  return same;
}

bool Session::broadcastTrainingState(std::string &error) {
  if (!isDistributed())
    return true;
  syncToHost();
  for (std::vector<HostTensor> *group : {&training.params, &training.state})
    for (HostTensor &t : *group)
      if (mprt_dist_broadcast_f32(t.data.data(), t.numElements()) != MPRT_OK) {
        error = mprt_last_error();
        return false;
      }
  return true;
}

uint64_t Session::parameterChecksum() {
  syncToHost();
  uint64_t hash = 0;
  for (const HostTensor &t : training.params)
    hash = hash * 0x100000001b3ULL ^
           llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
               reinterpret_cast<const uint8_t *>(t.data.data()),
               t.data.size() * sizeof(float)));
  return hash;
}

bool Session::resolveHardwareOptions(const TrainOptions &requested,
                                     TrainOptions &options,
                                     std::unique_ptr<CudaDevice> &cuda,
                                     std::string &error) {
  // The GPU is opened after lowering, so that a machine without one still
  // compiles the step (and says so) before it reports the missing device;
  // unless the precision or TF32 depends on what the GPU is.
  HardwareInfo hardware = detectCpu();
  bool gpu = requested.device == Device::Cuda;
  if (gpu && (requested.automaticPrecision || requested.tf32.value_or(false))) {
    GpuProperties properties;
    if (!(cuda = CudaDevice::open(error)) ||
        !cuda->properties(properties, error))
      return false;
    hardware.gpu = properties;
  }
  options = requested;
  if (options.automaticPrecision) {
    PrecisionChoice choice = choosePrecision(hardware, options.device);
    options.precision = choice.precision;
    options.automaticPrecision = false;
    if (!options.tf32 && gpu)
      options.tf32 = choice.tf32;
    decision = choice.line();
  }
  if (options.tf32.value_or(false) &&
      !checkTf32(hardware, options.device, error))
    return false;
  entries.tf32 = options.tf32.value_or(false);
  return true;
}

bool Session::loadCachedStep(const std::string &modelPath,
                             const TrainOptions &options) {
  // A CPU step without probes comes from the compile cache when it is
  // there, and goes into it when it is not (CompileCache.h). A cached entry
  // exists only for options that compiled, so the checks in lower() hold
  // for it too. dump-ir asks for the lowering itself.
  if (options.device != Device::Cpu ||
      options.probes != TrainOptions::Probes::None || !options.dumpIr.empty())
    return false;
  std::string cacheDir = resolveCacheDir(options.cache), problem;
  if (cacheDir.empty())
    return false;
  // An unreadable model: lower() says so.
  cachePath = compileCachePath(cacheDir, modelPath, options, problem);
  if (cachePath.empty() || !llvm::sys::fs::exists(cachePath) ||
      !loadFromCache(cachePath, options))
    return false;
  // The step on tensors is what this pipeline made; the lowering was that
  // of the process that filled the cache.
  pipelineText = sessionTrainPipeline(stepOptions(modelPath, options));
  return true;
}

bool Session::lookUpTrainEntries(std::string &error) {
  auto lookUp = [&](bool wanted, StringRef name,
                    CompiledEntries::PackedFn &fn) {
    return !wanted || lookUpEntry(*engine, name, fn, error);
  };
  return lookUp(true, "mp_train_entry", entries.train) &&
         lookUp(entries.window > 1, "mp_accumulate_entry",
                entries.accumulate) &&
         lookUp(hasPredict, "mp_predict_entry", entries.predict) &&
         lookUp(hasPredict && !entries.weightCopies.empty(),
                "mp_predict_weights_entry", entries.predictWeights) &&
         lookUp(!entries.stepCopies.empty(), "mp_train_copies_entry",
                entries.trainCopies);
}

bool Session::compile(const std::string &modelPath,
                      const TrainOptions &requested, std::string &error) {
  if (!verifyTrainOptions(requested, error))
    return false;
  model = modelPath;
  // The parameters' starting values come with the step: lower() reads them
  // from the model, a cache entry carries them (the model's bytes are in
  // its key).
  std::unique_ptr<CudaDevice> cuda;
  TrainOptions options;
  if (!resolveHardwareOptions(requested, options, cuda, error) ||
      (options.distributed && !joinJob(modelPath, options, error)))
    return false;
  if (loadCachedStep(modelPath, options))
    return createBackend(nullptr, error);
  OwningOpRef<ModuleOp> module;
  if (!lower(modelPath, options, module, error))
    return false;
  if (!cachePath.empty() && storeInCache(*module, cachePath))
    return createBackend(nullptr, error);
  if (options.device == Device::Cuda && !cuda &&
      !(cuda = CudaDevice::open(error)))
    return false;
  if (!(engine = compileModule(*module, cuda.get(), error)) ||
      !lookUpTrainEntries(error))
    return false;
  return createBackend(std::move(cuda), error);
}

bool Session::loadFromCache(const std::string &path,
                            const TrainOptions &options) {
  // Loaded into a session of its own, so that a stale or damaged entry
  // leaves this one untouched; then compiled again and replaced.
  std::unique_ptr<Session> cached(new Session());
  std::string problem;
  if (!cached->loadArtifact(path, /*codeOnly=*/false, problem)) {
    cacheUsed = CacheUse::Unusable;
    cacheProblem = "cache entry '" + path + "' " + problem;
    return false;
  }
  std::swap(entries, cached->entries);
  std::swap(library, cached->library);
  std::swap(training, cached->training);
  std::swap(initialValues, cached->initialValues);
  scaleMode = cached->scaleMode;
  hasPredict = cached->hasPredict;
  vectorized = cached->vectorized;
  compiledOptions = options;
  // Recently used: pruning removes the oldest first.
  ::utimes(path.c_str(), nullptr);
  cacheUsed = CacheUse::Loaded;
  cacheProblem.clear();
  return true;
}

bool Session::storeInCache(ModuleOp module, const std::string &path) {
  auto unusable = [&](const std::string &why) {
    cacheUsed = CacheUse::Unusable;
    cacheProblem = why;
    return false;
  };
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName(kDefaultLinker);
  if (!cc)
    return unusable(std::string("no C compiler '") + kDefaultLinker +
                    "' on PATH to link the cached step");
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return unusable("cannot create the cache directory '" + dir.str() +
                    "': " + ec.message());
  std::string problem;
  if (!emitArtifact(module, model, *cc, path, problem,
                    [](const std::string &) {}))
    return unusable(problem);
  if (!loadArtifact(path, /*codeOnly=*/true, problem))
    return unusable("cache entry '" + path + "' " + problem);
  cacheUsed = CacheUse::Stored;
  cacheProblem.clear();
  pruneCompileCache(dir.str(), compiledOptions.cache.maxBytes());
  return true;
}

bool Session::keepInF32(const std::vector<std::string> &locations,
                        std::string &error) {
  if (model.empty()) {
    error = "an artifact's precision plan was fixed when it was compiled: "
            "compile it again with --keep-f32";
    return false;
  }
  TrainOptions options = compiledOptions; // --precision auto resolved
  size_t kept = options.keepF32.size();
  for (const std::string &location : locations)
    if (std::find(options.keepF32.begin(), options.keepF32.end(), location) ==
        options.keepF32.end())
      options.keepF32.push_back(location);
  if (options.keepF32.size() == kept)
    return true;
  // A second session is compiled beside this one and takes its state;
  // then the two swap what they compiled, and the old code goes with it.
  std::unique_ptr<Session> fresh(new Session());
  if (!fresh->compile(model, options, error))
    return false;
  syncToHost();
  auto sameShapes = [](const std::vector<HostTensor> &a,
                       const std::vector<HostTensor> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].name != b[i].name || a[i].shape != b[i].shape)
        return false;
    return true;
  };
  TrainingState &next = fresh->training;
  if (!sameShapes(next.params, training.params) ||
      !sameShapes(next.state, training.state) ||
      !sameShapes(next.sums, training.sums)) {
    error = "recompiling '" + model +
            "' changed its parameters or optimizer state (was the file "
            "edited during the run?)";
    return false;
  }
  std::swap(entries, fresh->entries);
  std::swap(sites, fresh->sites);
  std::swap(context, fresh->context);
  std::swap(engine, fresh->engine);
  std::swap(library, fresh->library);
  std::swap(cacheUsed, fresh->cacheUsed);
  std::swap(cacheProblem, fresh->cacheProblem);
  std::swap(cachePath, fresh->cachePath);
  std::swap(compiledOptions, fresh->compiledOptions);
  std::swap(scaleMode, fresh->scaleMode);
  std::swap(hasPredict, fresh->hasPredict);
  std::swap(vectorized, fresh->vectorized);
  std::swap(backend, fresh->backend);
  // The backends keep no reference to the state: it is passed to every
  // call. A GPU backend uploads the host copies before its first step.
  syncToHost();
  return true;
}

bool Session::createBackend(std::unique_ptr<CudaDevice> cuda,
                            std::string &error) {
  backend = cuda ? createCudaBackend(std::move(cuda), entries, training, error)
                 : createCpuBackend(entries, training);
  return backend != nullptr;
}

bool Session::onDevice() const { return backend && backend->onDevice(); }

uint64_t Session::devicePeakBytes() const {
  return backend ? backend->devicePeakBytes() : 0;
}

/// The bytes of `copies` of the parameters `params`.
static uint64_t
copyBytes(const std::vector<CompiledEntries::WeightCopy> &copies,
          const std::vector<HostTensor> &params) {
  uint64_t bytes = 0;
  for (const CompiledEntries::WeightCopy &c : copies)
    bytes += params[c.param].numElements() * c.elementBytes;
  return bytes;
}

uint64_t Session::stepCopyBytes() const {
  return copyBytes(entries.stepCopies, training.params);
}

uint64_t Session::predictionCopyBytes() const {
  return copyBytes(entries.weightCopies, training.params);
}

void Session::syncToHost() const {
  if (backend)
    backend->syncToHost(training);
}

bool parseInitScheme(const std::string &text, InitScheme &scheme) {
  static const std::pair<const char *, InitScheme> names[] = {
      {"zeros", InitScheme::Zeros},
      {"he-uniform", InitScheme::HeUniform},
      {"he-normal", InitScheme::HeNormal},
      {"xavier-uniform", InitScheme::XavierUniform},
      {"xavier-normal", InitScheme::XavierNormal}};
  for (auto [name, value] : names)
    if (text == name) {
      scheme = value;
      return true;
    }
  return false;
}

bool initialiseTensor(HostTensor &tensor, InitScheme scheme,
                      std::mt19937_64 &rng, std::string &error) {
  if (scheme == InitScheme::Zeros) {
    std::fill(tensor.data.begin(), tensor.data.end(), 0.0f);
    return true;
  }
  if (tensor.shape.size() < 2 || tensor.numElements() == 0) {
    error = "cannot initialise '" + tensor.name +
            "' by fan-in/fan-out: it is not a weight of rank 2 or more "
            "(use zeros)";
    return false;
  }
  double elements = static_cast<double>(tensor.numElements());
  double fanIn = elements / static_cast<double>(tensor.shape.back());
  double fanOut = static_cast<double>(tensor.shape.back());
  if (tensor.shape.size() == 4) { // conv kernels are F x C x kh x kw
    fanIn = elements / static_cast<double>(tensor.shape[0]);
    fanOut = elements / static_cast<double>(tensor.shape[1]);
  }
  bool he = scheme == InitScheme::HeUniform || scheme == InitScheme::HeNormal;
  bool uniform =
      scheme == InitScheme::HeUniform || scheme == InitScheme::XavierUniform;
  // Variance 2/fan_in (He, for ReLU) or 2/(fan_in + fan_out) (Xavier).
  double variance = he ? 2.0 / fanIn : 2.0 / (fanIn + fanOut);
  if (uniform) {
    double bound = std::sqrt(3.0 * variance);
    std::uniform_real_distribution<double> dist(-bound, bound);
    for (float &v : tensor.data)
      v = static_cast<float>(dist(rng));
  } else {
    std::normal_distribution<double> dist(0.0, std::sqrt(variance));
    for (float &v : tensor.data)
      v = static_cast<float>(dist(rng));
  }
  return true;
}

void Session::initialiseParameters(uint64_t seed, InitScheme scheme) {
  // One generator for all weights, in parameter order; biases zero; the
  // model's own starting values where it has them.
  std::mt19937_64 rng(seed);
  std::string error;
  for (HostTensor &p : parameters()) { // marks a GPU session's copies stale
    auto given = initialValues.find(p.name);
    if (given != initialValues.end() &&
        (int64_t)given->second.size() == p.numElements())
      p.data = given->second;
    else if (p.shape.size() < 2 || !initialiseTensor(p, scheme, rng, error))
      std::fill(p.data.begin(), p.data.end(), 0.0f);
  }
}

bool Session::hasInitialValues() const {
  for (const HostTensor &p : training.params)
    if (!initialValues.count(p.name))
      return false;
  return !training.params.empty();
}

bool Session::trainStep(const void *x, const void *labels, StepResult &result,
                        std::string &error) {
  StepState &scalars = training.scalars;
  if (scalars.micro + 1 < entries.window) {
    // A micro-batch inside the window: its gradients join the window's.
    result = StepResult();
    result.scale = scalars.scale;
    result.optimizerStep = false;
    if (!backend->accumulate(training, x, labels, result, error))
      return false;
    ++scalars.micro;
    return true;
  }
  // The last one (or the only one) updates; the window starts again.
  if (!backend->trainStep(training, x, labels, result, error))
    return false;
  result.optimizerStep = true;
  scalars.micro = 0;
  scalars.windowOverflow = 0;
  scalars.windowAmax = 0;
  return true;
}

bool Session::predict(const void *x, float *logits, std::string &error) {
  if (!hasPredict) {
    error = "the model has no function marked mp.predict";
    return false;
  }
  return backend->predict(training, x, logits, error);
}

bool Session::saveCheckpoint(const std::string &path,
                             const RunPosition &position,
                             const std::string &previousPath,
                             std::string &error) const {
  syncToHost();
  std::vector<mprt_tensor *> tensors;
  std::vector<const char *> names;
  auto add = [&](const HostTensor &t) {
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
  for (const HostTensor &t : training.params)
    ok = ok && add(t);
  for (const HostTensor &t : training.state)
    ok = ok && add(t);
  // Inside an accumulation window: the window's sums so far.
  for (const HostTensor &t : training.sums)
    ok = ok && add(t);
  llvm::json::Object metadata{
      {"epoch", position.epoch},
      {"batch", position.batch},
      {"precision",
       mlir::mp::stringifyFloatPrecision(compiledOptions.precision)},
      {"step", training.scalars.step},
      {"scale", static_cast<double>(training.scalars.scale)},
      {"growth_tracker", training.scalars.growthTracker},
      {"skipped", training.scalars.skipped},
      {"micro", training.scalars.micro},
      {"window_overflow", training.scalars.windowOverflow},
      {"window_amax", static_cast<double>(training.scalars.windowAmax)},
      {"ranks", ranks()},
      {"loss_scale_mode", mlir::mp::stringifyLossScalingMode(scaleMode)},
      // What the step was compiled with, for the reader (loading ignores
      // it: a resumed run may change them).
      {"options", trainOptionsJson(compiledOptions, OptionScope::Step)}};
  metadata.getObject("options")->try_emplace(
      "seed", findTrainOption("seed")->print(compiledOptions));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(metadata));
  ok = ok &&
       mprt_checkpoint_save_rotate(
           path.c_str(), names.data(), tensors.data(), tensors.size(),
           text.c_str(),
           previousPath.empty() ? nullptr : previousPath.c_str()) == MPRT_OK;
  if (!ok)
    error = mprt_last_error();
  for (mprt_tensor *t : tensors)
    mprt_tensor_free(t);
  return ok;
}

namespace {

/// Frees a loaded checkpoint (mprt_checkpoint_free) when it goes away.
struct CheckpointDeleter {
  void operator()(mprt_checkpoint *checkpoint) const {
    mprt_checkpoint_free(checkpoint);
  }
};
using LoadedCheckpoint = std::unique_ptr<mprt_checkpoint, CheckpointDeleter>;

/// Session tensors and the checkpoint data they take: loadCheckpoint
/// copies them once everything is checked.
using CheckpointUpdates = std::vector<std::pair<HostTensor *, const float *>>;

/// Finds each of `tensors` in the checkpoint with the model's f32 shape;
/// false with `error` at the first that is absent or different.
bool matchCheckpointTensors(mprt_checkpoint *checkpoint,
                            const std::string &path,
                            std::vector<HostTensor> &tensors,
                            CheckpointUpdates &updates, std::string &error) {
  for (HostTensor &t : tensors) {
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
    updates.emplace_back(&t,
                         static_cast<const float *>(mprt_tensor_data(tensor)));
  }
  return true;
}

/// The checkpoint's parameters and, with `withState`, its optimizer state.
bool matchTrainingTensors(mprt_checkpoint *checkpoint, const std::string &path,
                          TrainingState &training, bool withState,
                          CheckpointUpdates &updates, std::string &error) {
  return matchCheckpointTensors(checkpoint, path, training.params, updates,
                                error) &&
         (!withState || matchCheckpointTensors(checkpoint, path, training.state,
                                               updates, error));
}

void copyCheckpointTensors(const CheckpointUpdates &updates) {
  for (auto [tensor, data] : updates)
    std::copy(data, data + tensor->numElements(), tensor->data.begin());
}

/// What Session::saveCheckpoint records besides the tensors; defaults for
/// what checkpoints written before it existed lack.
struct CheckpointMetadata {
  std::optional<int64_t> step, growthTracker;
  std::optional<double> scale;
  int64_t ranks = 1, micro = 0, skipped = 0, windowOverflow = 0;
  double windowAmax = 0;
  int64_t epoch = -1, batch = 0;
  std::vector<std::string> keptF32;
};

/// The ops the run kept in f32, from the checkpoint's options.
std::vector<std::string> readCheckpointPins(const llvm::json::Object *options) {
  std::vector<std::string> pins;
  std::optional<llvm::StringRef> text =
      options ? options->getString("keep-f32") : std::nullopt;
  const llvm::json::Array *kept =
      options ? options->getArray("keep_f32") : nullptr;
  TrainOptions parsed;
  std::string ignored;
  if (text) {
    if (setTrainOption(parsed, "keep-f32", *text, ignored))
      pins = parsed.keepF32;
  } else if (kept) {
    // Checkpoints written before the options were declared once.
    for (const llvm::json::Value &pin : *kept)
      if (std::optional<llvm::StringRef> location = pin.getAsString())
        pins.push_back(location->str());
  }
  return pins;
}

/// The checkpoint's metadata text (JSON) read; what is not there (or not
/// JSON) is left unset or at its default.
CheckpointMetadata readCheckpointMetadata(const char *text) {
  llvm::json::Object metadata;
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(text ? text : "");
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  else if (llvm::json::Object *object = parsed->getAsObject())
    metadata = std::move(*object);
  CheckpointMetadata m;
  m.step = metadata.getInteger("step");
  m.scale = metadata.getNumber("scale");
  m.growthTracker = metadata.getInteger("growth_tracker");
  m.ranks = metadata.getInteger("ranks").value_or(1);
  m.micro = metadata.getInteger("micro").value_or(0);
  m.skipped = metadata.getInteger("skipped").value_or(0);
  m.windowOverflow = metadata.getInteger("window_overflow").value_or(0);
  m.windowAmax = metadata.getNumber("window_amax").value_or(0);
  m.epoch = metadata.getInteger("epoch").value_or(-1);
  m.batch = metadata.getInteger("batch").value_or(0);
  m.keptF32 = readCheckpointPins(metadata.getObject("options"));
  return m;
}

/// Whether the metadata fits this session: "" or why not.
std::string checkCheckpointMetadata(const CheckpointMetadata &m,
                                    const std::string &path, bool withState,
                                    int64_t ranks, int64_t window) {
  std::string problem;
  // A data-parallel run's position counts global batches of its size.
  if (withState && m.ranks != ranks)
    problem = "checkpoint '" + path + "' was saved by a run of " +
              std::to_string(m.ranks) +
              " rank(s); resume it with the "
              "same number (this run has " +
              std::to_string(ranks) + ")";
  if (!m.step || !m.scale || !m.growthTracker)
    problem = "checkpoint '" + path +
              "' lacks its training metadata (step, scale, growth_tracker)";
  // A checkpoint taken inside an accumulation window continues it, with
  // the same window.
  if (problem.empty() && withState && m.micro >= window && m.micro > 0)
    problem = "checkpoint '" + path + "' was saved after " +
              std::to_string(m.micro) +
              " micro-batches of an accumulation window; this session "
              "accumulates " +
              std::to_string(window) +
              " per step: resume with the --accumulate it was saved with";
  return problem;
}

/// The step's scalars as the checkpoint left them; a window's sums start
/// from zero unless it was saved inside one.
void restoreStepState(const CheckpointMetadata &m, TrainingState &training) {
  StepState &scalars = training.scalars;
  scalars.step = static_cast<int32_t>(*m.step);
  scalars.scale = static_cast<float>(*m.scale);
  scalars.growthTracker = static_cast<int32_t>(*m.growthTracker);
  // Absent in checkpoints written before the session counted skips.
  scalars.skipped = m.skipped;
  scalars.micro = m.micro;
  scalars.windowOverflow = static_cast<int32_t>(m.windowOverflow);
  scalars.windowAmax = static_cast<float>(m.windowAmax);
  if (m.micro == 0)
    for (HostTensor &t : training.sums)
      std::fill(t.data.begin(), t.data.end(), 0.0f);
}

} // namespace

bool Session::loadCheckpoint(const std::string &path, bool withState,
                             RunPosition &position, std::string &error,
                             std::vector<std::string> *keptF32) {
  syncToHost(); // what is not loaded keeps its device values
  mprt_checkpoint *loaded = nullptr;
  if (mprt_checkpoint_load(path.c_str(), &loaded) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  LoadedCheckpoint checkpoint(loaded);
  // Everything is checked before anything changes.
  CheckpointUpdates updates;
  if (!matchTrainingTensors(checkpoint.get(), path, training, withState,
                            updates, error))
    return false;
  CheckpointMetadata metadata =
      readCheckpointMetadata(mprt_checkpoint_metadata(checkpoint.get()));
  std::string problem = checkCheckpointMetadata(metadata, path, withState,
                                                ranks(), entries.window);
  if (!problem.empty()) {
    error = problem;
    return false;
  }
  // Saved inside an accumulation window: its sums (absent before
  // accumulation existed: none).
  if (withState && metadata.micro > 0 &&
      !matchCheckpointTensors(checkpoint.get(), path, training.sums, updates,
                              error))
    return false;
  copyCheckpointTensors(updates);
  if (withState)
    restoreStepState(metadata, training);
  if (keptF32)
    *keptF32 = metadata.keptF32;
  position.epoch = metadata.epoch;
  // Absent in checkpoints written before saves inside an epoch existed.
  position.batch = metadata.batch;
  return true;
}

} // namespace mp
