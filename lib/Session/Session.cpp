//===- Session.cpp - compile, JIT and call a training step ----------------===//

#include "mp/Session/Session.h"
#include "StepBackend.h"
#include "mp/Session/CudaDevice.h"
#include "mp/Session/Hardware.h"
#include "mp/Session/JitEntry.h"
#include "mp/Session/PrecisionPins.h"

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
  // An ONNX model only predicts: it is trained with softmax cross-entropy
  // unless the options say otherwise.
  std::optional<mlir::mp::LossKind> lossKind = options.addLoss;
  if (!lossKind && isOnnxModel(modelPath))
    lossKind = mlir::mp::LossKind::CrossEntropy;
  if (lossKind) {
    mlir::mp::MPAddLossOptions addLoss;
    addLoss.loss = *lossKind;
    PassManager pm(context.get());
    pm.addPass(mlir::mp::createMPAddLoss(addLoss));
    if (failed(pm.run(*module))) {
      error = "adding the loss failed\n" + diagnostics;
      return false;
    }
  }
  if (!pinOpsToF32(*module, options.keepF32, error))
    return false;

  func::FuncOp loss, predictFn;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func->hasAttr(mlir::mp::kLossAttrName))
      loss = func;
    if (func->hasAttr(mlir::mp::kPredictAttrName))
      predictFn = func;
  }
  if (!loss) {
    error = "model '" + modelPath +
            "' has no function marked mp.loss (mp-run --loss cross-entropy|mse "
            "adds one around its mp.predict)";
    return false;
  }
  // Signature: (x: B x F, labels: B x C, parameters...).
  auto inputType = dyn_cast<RankedTensorType>(
      loss.getNumArguments() > 1 ? loss.getArgument(0).getType() : Type());
  auto labelType = dyn_cast<RankedTensorType>(
      loss.getNumArguments() > 1 ? loss.getArgument(1).getType() : Type());
  if (!inputType || !labelType || inputType.getRank() < 2 ||
      labelType.getRank() != 2 || !inputType.hasStaticShape() ||
      !labelType.hasStaticShape() ||
      inputType.getDimSize(0) != labelType.getDimSize(0)) {
    error = "@" + loss.getSymName().str() +
            " must take (x: tensor<Bx...>, labels: tensor<BxC>, "
            "parameters...) with static shapes";
    return false;
  }
  // x may be images (B x C x H x W): each data row fills one sample.
  entries.inputShape.assign(inputType.getShape().begin(),
                            inputType.getShape().end());
  entries.batch = inputType.getDimSize(0);
  entries.features = inputType.getNumElements() / entries.batch;
  entries.classes = labelType.getDimSize(1);
  for (unsigned i = 2; i < loss.getNumArguments(); ++i) {
    auto name = loss.getArgAttrOfType<StringAttr>(i, mlir::mp::kParamAttrName);
    auto type = dyn_cast<RankedTensorType>(loss.getArgument(i).getType());
    if (!name || !type || !type.hasStaticShape() ||
        !type.getElementType().isF32()) {
      error = "argument #" + std::to_string(i) + " of @" +
              loss.getSymName().str() +
              " must be a static f32 tensor marked mp.param";
      return false;
    }
    HostTensor param;
    param.name = name.str();
    param.shape.assign(type.getShape().begin(), type.getShape().end());
    param.data.assign(param.numElements(), 0.0f);
    training.params.push_back(param);
  }
  hasPredict = static_cast<bool>(predictFn);

  // The training pipeline mp-opt's --mp-train-pipeline runs; f32 is the
  // same step without the precision rewrite.
  mlir::mp::TrainPipelineOptions pipeline;
  pipeline.dtype = options.precision;
  pipeline.lossScale = scaleMode;
  pipeline.initScale = options.lossScale.initial;
  pipeline.margin = options.scaleMargin;
  pipeline.hysteresis = options.scaleHysteresis;
  pipeline.optimizer = options.optimizer;
  pipeline.lr = options.lr;
  pipeline.momentum = options.momentum;
  pipeline.weightDecay = options.weightDecay;
  pipeline.accumulate = options.accumulate;
  pipeline.qat = options.qat;
  pipeline.qatFreezeAfter = options.qatFreezeAfter;
  pipeline.ranks = options.ranks;
  PassManager pm(context.get());
  mlir::mp::buildTrainPipeline(pm, pipeline);
  if (failed(pm.run(*module))) {
    error = "compiling the training step failed\n" + diagnostics;
    return false;
  }
  bool gpu = options.device == Device::Cuda;
  if (gpu && options.probes != TrainOptions::Probes::None) {
    error = "--check-numerics and compare run on the CPU; drop --device cuda";
    return false;
  }
  if (options.probes != TrainOptions::Probes::None) {
    mlir::mp::MPCheckNumericsOptions probeOptions;
    probeOptions.skipConversions =
        options.probes == TrainOptions::Probes::ComputeOps;
    PassManager probes(context.get());
    probes.addPass(mlir::mp::createMPCheckNumerics(probeOptions));
    if (failed(probes.run(*module))) {
      error = "inserting numerics probes failed\n" + diagnostics;
      return false;
    }
    module->walk([&](mlir::mp::ObserveOp observe) {
      ProbeSite site;
      if (auto func = observe->getParentOfType<func::FuncOp>())
        site.function = func.getSymName().str();
      Value input = observe.getInput();
      if (Operation *producer = input.getDefiningOp())
        site.op = producer->getName().getStringRef().str();
      site.location = mlir::mp::fileLocationText(observe.getLoc());
      Type element = cast<RankedTensorType>(input.getType()).getElementType();
      site.lowPrecision = element.isF16() || element.isBF16();
      sites[observe.getId().str()] = site;
    });
  }
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  // The step's first results are the new parameters and state, in the
  // order of its arguments after x and labels; the accumulation's first
  // results are the new sums, in the order of its sum arguments: say so,
  // for mp-in-place-updates.
  auto markUpdates = [&](func::FuncOp callee, StringRef name,
                         unsigned firstUpdated, unsigned updated) {
    addEntry(*module, callee, name);
    auto entry = module->lookupSymbol<func::FuncOp>(name);
    OpBuilder b(context.get());
    unsigned numArgs = callee.getNumArguments();
    for (unsigned i = 0; i < updated; ++i)
      if (entry.getArgument(numArgs + i).getType() ==
          entry.getArgument(firstUpdated + i).getType())
        entry.setArgAttr(numArgs + i, mlir::mp::kUpdateOfAttrName,
                         b.getI64IntegerAttr(firstUpdated + i));
  };
  unsigned updated = 0;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, mlir::mp::kParamAttrName) ||
        step.getArgAttr(i, mlir::mp::kStateAttrName))
      ++updated;
  markUpdates(step, "mp_train_entry", 2, updated);
  entries.window = options.accumulate;
  entries.windowOverflow = scaleMode != LossScalingMode::None;
  entries.windowAmax = scaleMode == LossScalingMode::Adaptive;
  if (options.accumulate > 1) {
    auto accumulate =
        module->lookupSymbol<func::FuncOp>("train_step_accumulate");
    // x, labels, the parameters and the scale come before the sums.
    markUpdates(accumulate, "mp_accumulate_entry",
                3 + static_cast<unsigned>(training.params.size()),
                static_cast<unsigned>(training.params.size()));
    training.sums.clear();
    for (const HostTensor &p : training.params) {
      HostTensor sum = p;
      sum.name = p.name + ".accumulator";
      std::fill(sum.data.begin(), sum.data.end(), 0.0f);
      training.sums.push_back(sum);
    }
  }
  // A CPU session predicts from f16/bf16 copies of its weights, made again
  // only after the parameters change; the GPU and probed steps convert
  // them in every call.
  if (predictFn &&
      !addPredictEntry(*module, predictFn,
                       !gpu && options.probes == TrainOptions::Probes::None,
                       error))
    return false;
  // Optimizer state: every train_step argument marked mp.state (read
  // here: inlining removes train_step).
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (auto name =
            step.getArgAttrOfType<StringAttr>(i, mlir::mp::kStateAttrName)) {
      auto type = cast<RankedTensorType>(step.getArgument(i).getType());
      HostTensor s;
      s.name = name.str();
      s.shape.assign(type.getShape().begin(), type.getShape().end());
      s.data.assign(s.numElements(), 0.0f);
      training.state.push_back(s);
    }
  // The new parameters and state are then written straight into the
  // caller's buffers (eliminate-empty-tensors in --mp-lower-cpu), not into
  // heap buffers copied out at the end.
  if (!inlineEntries(*module,
                     {"mp_train_entry", "mp_accumulate_entry",
                      "mp_predict_entry", "mp_predict_weights_entry"})) {
    error = "inlining the training step failed\n" + diagnostics;
    return false;
  }
  // A CPU f16/bf16 step reads 16-bit weight copies its update writes
  // (GPU and probed steps convert every step).
  entries.trainCopies = nullptr;
  entries.stepCopies.clear();
  std::vector<std::pair<int64_t, int64_t>> stepCopies;
  if (!gpu && options.probes == TrainOptions::Probes::None &&
      options.weightCopies == WeightCopies::Keep &&
      keepStepWeightCopies(*module, 2, training.params.size(), stepCopies))
    for (auto [param, bytes] : stepCopies)
      entries.stepCopies.push_back({param, bytes});
  training.scalars.scale = scaleMode == LossScalingMode::None
                               ? 1.0f
                               : static_cast<float>(options.lossScale.initial);

  // MP_DUMP_STEP_IR=FILE: the module on tensors that is about to be lowered
  // (train and predict entries, after every mp pass), for debugging.
  if (!dumpModuleIfAsked(*module, "MP_DUMP_STEP_IR", error))
    return false;
  if (!lowerModule(module, gpu, diagnostics, vectorized)) {
    error = std::string("lowering the training step") +
            (gpu ? " for the GPU" : "") + " failed\n" + diagnostics;
    return false;
  }
  // MP_IN_PLACE_UPDATES=0 keeps two sets of buffers anyway (to compare).
  const char *inPlace = std::getenv("MP_IN_PLACE_UPDATES");
  auto inPlaceEntry = [&](StringRef name) {
    auto entry = module->lookupSymbol<LLVM::LLVMFuncOp>(name);
    return entry && entry->hasAttr(mlir::mp::kInPlaceUpdatesAttrName) &&
           !(inPlace && std::string(inPlace) == "0");
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

bool Session::compile(const std::string &modelPath,
                      const TrainOptions &requested, std::string &error) {
  // The GPU is opened after lowering, so that a machine without one still
  // compiles the step (and says so) before it reports the missing device;
  // unless the precision or TF32 depends on what the GPU is.
  if (!verifyTrainOptions(requested, error))
    return false;
  model = modelPath;
  // The parameters' starting values come with the step: lower() reads them
  // from the model, a cache entry carries them (the model's bytes are in
  // its key).
  std::unique_ptr<CudaDevice> cuda;
  HardwareInfo hardware = detectCpu();
  bool gpu = requested.device == Device::Cuda;
  if (gpu && (requested.automaticPrecision || requested.tf32.value_or(false))) {
    GpuProperties properties;
    if (!(cuda = CudaDevice::open(error)) ||
        !cuda->properties(properties, error))
      return false;
    hardware.gpu = properties;
  }
  TrainOptions options = requested;
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
  if (options.distributed && !joinJob(modelPath, options, error))
    return false;

  // A CPU step without probes comes from the compile cache when it is
  // there, and goes into it when it is not (CompileCache.h). A cached entry
  // exists only for options that compiled, so the checks in lower() hold
  // for it too. MP_DUMP_STEP_IR asks for the lowering itself;
  // MP_PARALLEL_LOOPS=0 and MP_APPROXIMATE_MATH=0 for a lowering the
  // cache key does not describe.
  std::string cacheDir;
  if (!gpu && options.probes == TrainOptions::Probes::None &&
      !std::getenv("MP_DUMP_STEP_IR") && defaultLowering())
    cacheDir = resolveCacheDir(options.cache);
  if (!cacheDir.empty()) {
    std::string problem;
    cachePath = compileCachePath(cacheDir, modelPath, options, problem);
    // An unreadable model: lower() below says so.
    if (!cachePath.empty() && llvm::sys::fs::exists(cachePath) &&
        loadFromCache(cachePath, options))
      return createBackend(nullptr, error);
  }

  OwningOpRef<ModuleOp> module;
  if (!lower(modelPath, options, module, error))
    return false;
  if (!cachePath.empty() && storeInCache(*module, cachePath))
    return createBackend(nullptr, error);
  if (gpu && !cuda && !(cuda = CudaDevice::open(error)))
    return false;
  if (!(engine = compileModule(*module, cuda.get(), error)))
    return false;
  if (!lookUpEntry(*engine, "mp_train_entry", entries.train, error) ||
      (entries.window > 1 && !lookUpEntry(*engine, "mp_accumulate_entry",
                                          entries.accumulate, error)) ||
      (hasPredict &&
       !lookUpEntry(*engine, "mp_predict_entry", entries.predict, error)) ||
      (hasPredict && !entries.weightCopies.empty() &&
       !lookUpEntry(*engine, "mp_predict_weights_entry", entries.predictWeights,
                    error)) ||
      (!entries.stepCopies.empty() &&
       !lookUpEntry(*engine, "mp_train_copies_entry", entries.trainCopies,
                    error)))
    return false;
  return createBackend(std::move(cuda), error);
}

bool Session::addPredictEntry(ModuleOp module, func::FuncOp predictFn,
                              bool convertWeights, std::string &error) {
  entries.predictWeights = nullptr;
  entries.weightsArguments.clear();
  entries.weightCopies.clear();
  entries.predictArguments.clear();
  if (!convertWeights) {
    addEntry(module, predictFn, "mp_predict_entry");
    return true;
  }
  // The loss calls @predict as it is: the pass rewrites a copy of it, the
  // one function left marked mp.predict.
  func::FuncOp body = predictFn.clone();
  body.setName("mp_predict_body");
  body.setPrivate();
  module.push_back(body);
  predictFn->removeAttr(mlir::mp::kPredictAttrName);
  DiagnosticText collected(module.getContext());
  PassManager pm(module.getContext());
  pm.addPass(mlir::mp::createMPConvertWeightsOnce());
  if (failed(pm.run(module))) {
    error =
        "converting the prediction's weights once failed\n" + collected.text;
    return false;
  }
  addEntry(module, body, "mp_predict_entry");
  auto weightsRef =
      body->getAttrOfType<FlatSymbolRefAttr>(mlir::mp::kConvertWeightsAttrName);
  if (!weightsRef) // f32, or nothing converted
    return true;
  auto weightsFn = module.lookupSymbol<func::FuncOp>(weightsRef);
  auto paramIndex = [&](StringAttr name) -> int64_t {
    for (auto [i, p] : llvm::enumerate(training.params))
      if (name && p.name == name.getValue())
        return static_cast<int64_t>(i);
    return -1;
  };
  for (unsigned i = 0; i < weightsFn.getNumArguments(); ++i) {
    int64_t param = paramIndex(
        weightsFn.getArgAttrOfType<StringAttr>(i, mlir::mp::kParamAttrName));
    if (param < 0) {
      error = "the prediction's weight conversion takes an argument that is "
              "not a parameter";
      return false;
    }
    entries.weightsArguments.push_back(param);
  }
  for (unsigned i = 0; i < weightsFn.getNumResults(); ++i) {
    int64_t param = paramIndex(weightsFn.getResultAttrOfType<StringAttr>(
        i, mlir::mp::kConvertedAttrName));
    auto type = cast<RankedTensorType>(weightsFn.getResultTypes()[i]);
    if (param < 0 ||
        type.getShape() != ArrayRef<int64_t>(training.params[param].shape)) {
      error = "the prediction's weight conversion returns a copy of no "
              "parameter";
      return false;
    }
    entries.weightCopies.push_back({param, type.getElementTypeBitWidth() / 8});
  }
  for (unsigned i = 1; i < body.getNumArguments(); ++i) {
    CompiledEntries::PredictArgument argument;
    if (auto copy = body.getArgAttrOfType<StringAttr>(
            i, mlir::mp::kConvertedAttrName)) {
      int64_t param = paramIndex(copy);
      auto found = llvm::find_if(entries.weightCopies,
                                 [&](const CompiledEntries::WeightCopy &c) {
                                   return c.param == param;
                                 });
      if (found == entries.weightCopies.end()) {
        error = "the prediction reads a weight copy nothing makes";
        return false;
      }
      argument = {true, found - entries.weightCopies.begin()};
    } else {
      argument.index = paramIndex(
          body.getArgAttrOfType<StringAttr>(i, mlir::mp::kParamAttrName));
      if (argument.index < 0) {
        error = "argument #" + std::to_string(i) +
                " of the prediction is not a parameter";
        return false;
      }
    }
    entries.predictArguments.push_back(argument);
  }
  addEntry(module, weightsFn, "mp_predict_weights_entry");
  return true;
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
  pruneCompileCache(dir.str(), compileCacheLimitBytes());
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

bool Session::trainStep(const float *x, const float *labels, StepResult &result,
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

bool Session::predict(const float *x, float *logits, std::string &error) {
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

bool Session::loadCheckpoint(const std::string &path, bool withState,
                             RunPosition &position, std::string &error,
                             std::vector<std::string> *keptF32) {
  syncToHost(); // what is not loaded keeps its device values
  mprt_checkpoint *checkpoint = nullptr;
  if (mprt_checkpoint_load(path.c_str(), &checkpoint) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  // Everything is checked before anything changes.
  std::vector<std::pair<HostTensor *, const float *>> updates;
  auto find = [&](HostTensor &t) {
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
    return true;
  };
  bool ok = true;
  for (HostTensor &t : training.params)
    ok = ok && find(t);
  if (withState)
    for (HostTensor &t : training.state)
      ok = ok && find(t);
  std::optional<int64_t> step, tracker;
  std::optional<double> scale;
  llvm::json::Object metadata;
  if (ok) {
    const char *text = mprt_checkpoint_metadata(checkpoint);
    llvm::Expected<llvm::json::Value> meta =
        llvm::json::parse(text ? text : "");
    if (!meta)
      llvm::consumeError(meta.takeError());
    else if (llvm::json::Object *object = meta->getAsObject())
      metadata = std::move(*object);
    step = metadata.getInteger("step");
    scale = metadata.getNumber("scale");
    tracker = metadata.getInteger("growth_tracker");
    // A data-parallel run's position counts global batches of its size.
    int64_t savedRanks = metadata.getInteger("ranks").value_or(1);
    if (withState && savedRanks != ranks()) {
      error = "checkpoint '" + path + "' was saved by a run of " +
              std::to_string(savedRanks) +
              " rank(s); resume it with the "
              "same number (this run has " +
              std::to_string(ranks()) + ")";
      ok = false;
    }
    if (!step || !scale || !tracker) {
      error = "checkpoint '" + path +
              "' lacks its training metadata (step, scale, growth_tracker)";
      ok = false;
    }
  }
  // A checkpoint taken inside an accumulation window continues it: its
  // sums, with the same window (absent before accumulation existed: none).
  int64_t micro = metadata.getInteger("micro").value_or(0);
  if (ok && withState && micro > 0) {
    if (micro >= entries.window) {
      error = "checkpoint '" + path + "' was saved after " +
              std::to_string(micro) +
              " micro-batches of an accumulation window; this session "
              "accumulates " +
              std::to_string(entries.window) +
              " per step: resume with the --accumulate it was saved with";
      ok = false;
    }
    for (HostTensor &t : training.sums)
      ok = ok && find(t);
  }
  if (ok) {
    for (auto [tensor, data] : updates)
      std::copy(data, data + tensor->numElements(), tensor->data.begin());
    if (withState) {
      training.scalars.step = static_cast<int32_t>(*step);
      training.scalars.scale = static_cast<float>(*scale);
      training.scalars.growthTracker = static_cast<int32_t>(*tracker);
      // Absent in checkpoints written before the session counted skips.
      training.scalars.skipped = metadata.getInteger("skipped").value_or(0);
      training.scalars.micro = micro;
      training.scalars.windowOverflow = static_cast<int32_t>(
          metadata.getInteger("window_overflow").value_or(0));
      training.scalars.windowAmax =
          static_cast<float>(metadata.getNumber("window_amax").value_or(0));
      if (micro == 0)
        for (HostTensor &t : training.sums)
          std::fill(t.data.begin(), t.data.end(), 0.0f);
    }
    if (keptF32) {
      keptF32->clear();
      const llvm::json::Object *options = metadata.getObject("options");
      TrainOptions pins;
      std::string ignored;
      if (std::optional<llvm::StringRef> text =
              options ? options->getString("keep-f32") : std::nullopt) {
        if (setTrainOption(pins, "keep-f32", *text, ignored))
          *keptF32 = pins.keepF32;
      } else if (const llvm::json::Array *kept =
                     options ? options->getArray("keep_f32") : nullptr) {
        // Checkpoints written before the options were declared once.
        for (const llvm::json::Value &pin : *kept)
          if (std::optional<llvm::StringRef> location = pin.getAsString())
            keptF32->push_back(location->str());
      }
    }
    position.epoch = metadata.getInteger("epoch").value_or(-1);
    // Absent in checkpoints written before saves inside an epoch existed.
    position.batch = metadata.getInteger("batch").value_or(0);
  }
  mprt_checkpoint_free(checkpoint);
  return ok;
}

} // namespace mp
