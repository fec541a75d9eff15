//===- InferSession.cpp - compile and call mp.predict alone ---------------===//

#include "mp/Session/InferSession.h"
#include "mp/Session/ArtifactFile.h"
#include "mp/Session/Hardware.h"
#include "mp/Session/JitEntry.h"
#include "mp/Session/SessionPipelines.h"
#include "mp/Transforms/Entries.h"

#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"
#include "mp/Transforms/PrecisionAnalysis.h"
#include "mp/Transforms/Quantization.h"
#include "mprt/mprt.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <set>
#include <sys/time.h>

using namespace mlir;

namespace mp {

namespace {

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

std::unique_ptr<InferSession>
InferSession::create(const std::string &modelPath, const InferOptions &options,
                     const std::vector<HostTensor> &params,
                     std::string &error) {
  // Option combinations first, with the same messages for every front end.
  if (!verifyInferOptions(options, error))
    return nullptr;
  std::unique_ptr<InferSession> session(new InferSession());
  InferOptions resolved = options;
  if (resolved.automaticPrecision &&
      resolved.mode == InferOptions::Mode::Float) {
    // The GPU's capability when the predictions run there.
    HardwareInfo hardware =
        options.device == Device::Cuda ? detectHardware() : detectCpu();
    PrecisionChoice choice = choosePrecision(hardware, options.device);
    resolved.precision = choice.precision;
    session->decision = choice.line();
  }
  resolved.automaticPrecision = false;
  if (resolved.mode == InferOptions::Mode::Float)
    session->computePrecision = resolved.precision;
  if (!session->compile(modelPath, resolved, error) ||
      !session->bind(params, error))
    return nullptr;
  return session;
}

bool readCheckpointScalars(const std::string &path,
                           std::map<std::string, float> &scalars,
                           std::string &error) {
  mprt_checkpoint *checkpoint = nullptr;
  if (mprt_checkpoint_load(path.c_str(), &checkpoint) != MPRT_OK) {
    error = mprt_last_error();
    return false;
  }
  for (size_t i = 0; i < mprt_checkpoint_count(checkpoint); ++i) {
    const mprt_tensor *tensor = mprt_checkpoint_tensor(checkpoint, i);
    if (mprt_tensor_rank(tensor) == 0 &&
        mprt_tensor_dtype(tensor) == MPRT_DTYPE_F32)
      scalars[mprt_checkpoint_name(checkpoint, i)] =
          *static_cast<const float *>(mprt_tensor_data(tensor));
  }
  mprt_checkpoint_free(checkpoint);
  return true;
}

std::map<std::string, float>
scalarStateTensors(const std::vector<HostTensor> &state) {
  std::map<std::string, float> scalars;
  for (const HostTensor &t : state)
    if (t.shape.empty() && t.data.size() == 1)
      scalars[t.name] = t.data.front();
  return scalars;
}

bool InferSession::writeQatCalibration(
    func::FuncOp predictFn, const std::map<std::string, float> &observers,
    std::string &error) {
  llvm::DenseMap<Value, std::string> ids = mlir::mp::valueIds(predictFn);
  llvm::json::Object values;
  SmallVector<mlir::mp::FakeQuantTarget> targets =
      mlir::mp::fakeQuantTargets(predictFn);
  if (llvm::none_of(targets, [&](const mlir::mp::FakeQuantTarget &target) {
        return observers.count(target.observer);
      })) {
    error = "no QAT observers for @" + predictFn.getSymName().str() +
            "'s contractions (a checkpoint of mp-run train --qat holds "
            "them): int8 needs calibration statistics otherwise";
    return false;
  }
  for (mlir::mp::FakeQuantTarget &target : targets) {
    auto found = observers.find(target.observer);
    if (found == observers.end()) {
      error = "the QAT observers have no '" + target.observer +
              "' (the input of @" + predictFn.getSymName().str() + "'s " +
              target.op->getName().getStringRef().str() + " with weight '" +
              target.param +
              "'): train with --qat on this model, or give --calibration";
      return false;
    }
    double amax = found->second;
    if (!(amax >= 0) || !std::isfinite(amax)) {
      error = "QAT observer '" + target.observer + "' holds " +
              std::to_string(amax) + ", not a finite max |x|";
      return false;
    }
    values[ids.lookup(target.op.getDpsInputOperand(0)->get())] =
        llvm::json::Object{{"min", -amax}, {"max", amax}, {"abs_max", amax}};
  }
  llvm::SmallString<128> path;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "mp-qat-calibration", "json", fd, path)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  qatCalibrationPath = path.str().str();
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << llvm::json::Value(llvm::json::Object{{"values", std::move(values)}});
  os.flush();
  if (os.has_error()) {
    error = "cannot write '" + qatCalibrationPath + "'";
    os.clear_error();
    return false;
  }
  return true;
}

bool InferSession::useQatObservers(ModuleOp module, InferOptions &options,
                                   std::string &error) {
  if (options.qatObservers.empty() || !options.calibrationPath.empty() ||
      options.mode != InferOptions::Mode::Int8 ||
      options.quantization != mlir::mp::QuantizationMode::Int8)
    return true;
  func::FuncOp predictFn;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(mlir::mp::kPredictAttrName) && !predictFn)
      predictFn = func;
  if (!predictFn)
    return true; // --mp-keep-prediction says so
  // The ranges QAT observed become the calibration file, clipped at exactly
  // their max (minmax) with the weights per channel, as the training step
  // rounded them.
  if (!writeQatCalibration(predictFn, options.qatObservers, error))
    return false;
  options.calibrationPath = qatCalibrationPath;
  options.method = QuantizationMethod::MinMax;
  options.perChannel = true;
  return true;
}

/// How a named argument of an entry is bound: a parameter, an int8 weight
/// (or an f16/bf16 copy, which lives with them: made once in bind()), a
/// scale; anything else is the input.
InferSession::Binding InferSession::entryBinding(func::FuncOp entry,
                                                 unsigned i) {
  auto type = cast<ShapedType>(entry.getArgumentTypes()[i]);
  Binding binding{ArgKind::Input, "", {}, 0};
  binding.shape.assign(type.getShape().begin(), type.getShape().end());
  binding.elementBytes =
      std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  static const std::pair<llvm::StringLiteral, ArgKind> kKinds[] = {
      {mlir::mp::kParamAttrName, ArgKind::Param},
      {mlir::mp::kQWeightAttrName, ArgKind::QWeight},
      {mlir::mp::kConvertedAttrName, ArgKind::QWeight},
      {mlir::mp::kQScaleAttrName, ArgKind::QScale}};
  for (auto [attr, kind] : kKinds)
    if (auto name = entry.getArgAttrOfType<StringAttr>(i, attr)) {
      binding.kind = kind;
      binding.name = name.str();
      break;
    }
  return binding;
}

void InferSession::readEntries(ModuleOp module) {
  auto bindings = [](func::FuncOp entry, unsigned begin, unsigned end) {
    std::vector<Binding> result;
    for (unsigned i = begin; i < end; ++i)
      result.push_back(entryBinding(entry, i));
    return result;
  };
  auto predict = module.lookupSymbol<func::FuncOp>("mp_infer_predict_entry");
  unsigned inputs = mlir::mp::entryInputCount(predict);
  predictArgs = bindings(predict, 0, inputs);
  inputShape = predictArgs[0].shape;
  batch = inputShape[0];
  features = 1;
  for (int64_t d : inputShape)
    features *= d;
  features /= batch;
  classes = cast<ShapedType>(predict.getArgumentTypes()[inputs]).getDimSize(1);
  auto weights = module.lookupSymbol<func::FuncOp>("mp_infer_weights_entry");
  hasWeightsFunction = static_cast<bool>(weights);
  if (weights) {
    unsigned weightInputs = mlir::mp::entryInputCount(weights);
    weightsArgs = bindings(weights, 0, weightInputs);
    weightsResults = bindings(weights, weightInputs, weights.getNumArguments());
  }
}

bool InferSession::loadCachedPredict(const std::string &modelPath,
                                     const InferOptions &options,
                                     std::string &cachePath) {
  // @predict on the CPU, without probes or a report (which compiling
  // writes), comes from the compile cache when it is there and goes into
  // it when it is not. dump-ir asks for the lowering itself.
  if (options.device != Device::Cpu ||
      options.mode == InferOptions::Mode::Calibrate || options.probeOutputs ||
      !options.reportPath.empty() || !options.dumpIr.empty())
    return false;
  std::string cacheDir = resolveCacheDir(options.cache), problem;
  // An unreadable model or calibration file: compiling says so.
  if (!cacheDir.empty())
    cachePath = inferCachePath(cacheDir, modelPath, options, problem);
  return !cachePath.empty() && llvm::sys::fs::exists(cachePath) &&
         loadFromCache(cachePath);
}

bool InferSession::compilePrediction(ModuleOp module,
                                     const std::string &modelPath,
                                     const InferOptions &options,
                                     std::string &diagnostics,
                                     std::string &error) {
  InferOptions compiled = options;
  if (!useQatObservers(module, compiled, error))
    return false;
  // @predict on tensors: mp-session-infer, parsed from its text as mp-opt
  // would parse it (SessionPipelines.h).
  pipelineText = sessionInferPipeline(compiled);
  registerSessionPipelines();
  PassManager pm(module.getContext());
  llvm::raw_string_ostream parseErrors(diagnostics);
  bool compiledOk =
      succeeded(parsePassPipeline(sessionInferPipelineElement(compiled), pm,
                                  parseErrors)) &&
      succeeded(pm.run(module));
  if (!qatCalibrationPath.empty())
    llvm::sys::fs::remove(qatCalibrationPath);
  if (!compiledOk) {
    error = "compiling @predict failed\n" + diagnostics;
    return false;
  }
  if (!module.lookupSymbol("mp_infer_predict_entry")) {
    error = "compiling @predict made no mp_infer_predict_entry";
    return false;
  }
  readEntries(module);
  return true;
}

bool InferSession::compile(const std::string &modelPath,
                           const InferOptions &options, std::string &error) {
  std::string cachePath;
  if (loadCachedPredict(modelPath, options, cachePath))
    return true;
  context = createSessionContext();
  // Diagnostics become the error message.
  DiagnosticText collected(context.get());
  std::string &diagnostics = collected.text;
  OwningOpRef<ModuleOp> module = parseModel(modelPath, context.get(), collected,
                                            error, options.modelBatch);
  if (!module)
    return false;
  // The parameters come from the caller, not from starting values.
  takeInitialValues(*module);
  if (!compilePrediction(*module, modelPath, options, diagnostics, error))
    return false;
  // dump-ir=FILE: the module about to be lowered (debugging).
  if (!dumpModuleIfAsked(*module, options.dumpIr, error))
    return false;
  bool gpu = options.device == Device::Cuda;
  bool vectorized = true;
  std::string lowering;
  if (!lowerModule(module, gpu, loweringChoices(options), diagnostics,
                   vectorized, lowering)) {
    error = std::string("lowering @predict") + (gpu ? " for the GPU" : "") +
            " failed\n" + diagnostics;
    return false;
  }
  pipelineText += "\n" + lowering;
  // Opened after lowering: without a GPU the model still compiles first.
  if (gpu && !(cuda = CudaDevice::open(error)))
    return false;
  cacheLimitBytes = options.cache.maxBytes();
  if (!cachePath.empty() && storeInCache(*module, cachePath, modelPath))
    return true;
  engine = compileModule(*module, cuda.get(), error);
  return engine && lookUpEntries(error);
}

bool InferSession::lookUpEntries(std::string &error) {
  return lookUpEntry(*engine, "mp_infer_predict_entry", predictEntry, error) &&
         (!hasWeightsFunction ||
          lookUpEntry(*engine, "mp_infer_weights_entry", weightsEntry, error));
}

namespace {

/// How a cache entry names each ArgKind, in the enum's order.
constexpr const char *kArgKindNames[] = {"input", "param", "qweight", "qscale"};

} // namespace

llvm::json::Object
InferSession::cacheMetadata(const std::string &modelPath) const {
  auto bindingsJson = [](const std::vector<Binding> &bindings) {
    llvm::json::Array array;
    for (const Binding &b : bindings)
      array.push_back(
          llvm::json::Object{{"kind", kArgKindNames[static_cast<int>(b.kind)]},
                             {"name", b.name},
                             {"shape", artifactShape(b.shape)},
                             {"element_bytes", b.elementBytes}});
    return array;
  };
  return llvm::json::Object{
      {"format", kInferenceArtifactFormat},
      {"model", modelPath},
      {"precision", mlir::mp::stringifyFloatPrecision(computePrecision)},
      {"batch", batch},
      {"features", features},
      {"classes", classes},
      {"input_shape", artifactShape(inputShape)},
      {"predict_arguments", bindingsJson(predictArgs)},
      {"has_weights", hasWeightsFunction},
      {"weights_arguments", bindingsJson(weightsArgs)},
      {"weights_results", bindingsJson(weightsResults)}};
}

bool InferSession::readBinding(const llvm::json::Value &item,
                               Binding &binding) {
  const llvm::json::Object *object = item.getAsObject();
  if (!object)
    return false;
  std::optional<llvm::StringRef> kind = object->getString("kind");
  std::optional<llvm::StringRef> name = object->getString("name");
  std::optional<int64_t> bytes = object->getInteger("element_bytes");
  auto *known = llvm::find(kArgKindNames, kind.value_or(""));
  if (known == std::end(kArgKindNames) || !name || !bytes || *bytes < 1 ||
      *bytes > 8 || !readArtifactShape(object->get("shape"), binding.shape))
    return false;
  binding.kind = static_cast<ArgKind>(known - std::begin(kArgKindNames));
  binding.name = name->str();
  binding.elementBytes = *bytes;
  return true;
}

bool InferSession::readBindings(const llvm::json::Value *value,
                                std::vector<Binding> &bindings) {
  const llvm::json::Array *array = value ? value->getAsArray() : nullptr;
  if (!array)
    return false;
  bindings.clear();
  for (const llvm::json::Value &item : *array) {
    Binding binding{ArgKind::Input, "", {}, 0};
    if (!readBinding(item, binding))
      return false;
    bindings.push_back(std::move(binding));
  }
  return true;
}

bool InferSession::readCacheMetadata(const llvm::json::Object &metadata) {
  std::optional<int64_t> b = metadata.getInteger("batch");
  std::optional<int64_t> f = metadata.getInteger("features");
  std::optional<int64_t> c = metadata.getInteger("classes");
  std::optional<bool> weights = metadata.getBoolean("has_weights");
  if (!b || !f || !c || *b <= 0 || *f <= 0 || *c <= 0 || !weights)
    return false;
  bool shapes = readArtifactShape(metadata.get("input_shape"), inputShape) &&
                inputShape.size() >= 2 && inputShape[0] == *b &&
                numElements(inputShape) == *b * *f;
  if (!shapes ||
      !readBindings(metadata.get("predict_arguments"), predictArgs) ||
      predictArgs.empty() || predictArgs[0].kind != ArgKind::Input ||
      predictArgs[0].shape != inputShape ||
      !readBindings(metadata.get("weights_arguments"), weightsArgs) ||
      !readBindings(metadata.get("weights_results"), weightsResults))
    return false;
  batch = *b;
  features = *f;
  classes = *c;
  hasWeightsFunction = *weights;
  return true;
}

bool InferSession::loadFromCache(const std::string &path) {
  void *handle = nullptr;
  llvm::json::Object metadata;
  std::string problem;
  if (openArtifactFile(path, kInferenceArtifactFormat, handle, metadata,
                       problem)) {
    library = handle;
    if (!readCacheMetadata(metadata))
      problem = "is corrupt: bad metadata";
    else if (!(predictEntry = artifactEntry(handle, metadata, "predict")) ||
             (hasWeightsFunction &&
              !(weightsEntry = artifactEntry(handle, metadata, "weights"))))
      problem = "lacks an entry";
  }
  if (!problem.empty()) {
    // Compiled again (and the entry replaced) with this session as new.
    if (library)
      dlclose(library);
    library = nullptr;
    predictEntry = weightsEntry = nullptr;
    hasWeightsFunction = false;
    weightsArgs.clear();
    weightsResults.clear();
    cacheUsed = CacheUse::Unusable;
    cacheProblem = "cache entry '" + path + "' " + problem;
    return false;
  }
  // Recently used: pruning removes the oldest first.
  ::utimes(path.c_str(), nullptr);
  cacheUsed = CacheUse::Loaded;
  cacheProblem.clear();
  return true;
}

bool InferSession::storeInCache(ModuleOp module, const std::string &path,
                                const std::string &modelPath) {
  auto unusable = [&](const std::string &why) {
    cacheUsed = CacheUse::Unusable;
    cacheProblem = why;
    return false;
  };
  llvm::ErrorOr<std::string> cc =
      llvm::sys::findProgramByName(Session::kDefaultLinker);
  if (!cc)
    return unusable(std::string("no C compiler '") + Session::kDefaultLinker +
                    "' on PATH to link the cached code");
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return unusable("cannot create the cache directory '" + dir.str() +
                    "': " + ec.message());
  llvm::json::Object functions{{"predict", "mp_infer_predict_entry"}};
  if (hasWeightsFunction)
    functions["weights"] = "mp_infer_weights_entry";
  std::string problem;
  if (!writeArtifactFile(module, *cc, cacheMetadata(modelPath), functions, path,
                         problem, [](const std::string &) {}))
    return unusable(problem);
  void *handle = nullptr;
  llvm::json::Object metadata;
  if (!openArtifactFile(path, kInferenceArtifactFormat, handle, metadata,
                        problem))
    return unusable("cache entry '" + path + "' " + problem);
  library = handle;
  predictEntry = artifactEntry(handle, metadata, "predict");
  weightsEntry = artifactEntry(handle, metadata, "weights");
  if (!predictEntry || (hasWeightsFunction && !weightsEntry)) {
    dlclose(library);
    library = nullptr;
    return unusable("cache entry '" + path + "' lacks an entry");
  }
  cacheUsed = CacheUse::Stored;
  cacheProblem.clear();
  pruneCompileCache(dir.str(), cacheLimitBytes);
  return true;
}

bool InferSession::bind(const std::vector<HostTensor> &hostParams,
                        std::string &error) {
  for (const HostTensor &t : hostParams) {
    Buffer &buffer = params[t.name];
    buffer.name = t.name;
    buffer.shape = t.shape;
    buffer.elementBytes = 4;
    buffer.bytes.resize(t.data.size() * sizeof(float));
    std::memcpy(buffer.bytes.data(), t.data.data(), buffer.bytes.size());
  }
  auto param = [&](const Binding &b) -> Buffer * {
    auto it = params.find(b.name);
    if (it == params.end() || it->second.shape != b.shape) {
      error = "parameter '" + b.name + "' is missing or has another shape";
      return nullptr;
    }
    return &it->second;
  };
  if (!hasWeightsFunction)
    return true;
  // The one-time weight quantization (on a GPU session, on the device:
  // the results never leave it).
  PackedArgs args;
  for (const Binding &b : weightsArgs) {
    Buffer *buffer = param(b);
    if (!buffer)
      return false;
    args.addMemRef(argumentData(*buffer), buffer->shape);
  }
  for (const Binding &b : weightsResults) {
    auto &table = b.kind == ArgKind::QWeight ? qweights : qscales;
    Buffer &buffer = table[b.name];
    buffer.name = b.name;
    buffer.shape = b.shape;
    buffer.elementBytes = b.elementBytes;
    buffer.bytes.assign(numElements(b.shape) * b.elementBytes, 0);
    args.addMemRef(argumentData(buffer), buffer.shape);
  }
  StepThreads threads;
  weightsEntry(args.get().data());
  if (cuda && !cuda->check(error))
    return false;
  // Only what @predict reads stays: not the f32 weights it was made from.
  std::set<std::string> read;
  for (const Binding &b : predictArgs)
    if (b.kind == ArgKind::Param)
      read.insert(b.name);
  for (auto it = params.begin(); it != params.end();) {
    if (read.count(it->first)) {
      ++it;
      continue;
    }
    if (cuda)
      cuda->release(it->second.device);
    it = params.erase(it);
  }
  // The weights never change from here on: the runtime may keep them in the
  // layout its product kernels read instead of repacking them every call.
  if (!cuda)
    for (auto *table : {&params, &qweights, &qscales})
      for (auto &[name, buffer] : *table)
        if (!buffer.bytes.empty() &&
            mprt_gemm_declare_constant(buffer.bytes.data(),
                                       buffer.bytes.size()) != MPRT_OK) {
          error = std::string("declaring the weights constant: ") +
                  mprt_last_error();
          return false;
        }
  return true;
}

void *InferSession::argumentData(Buffer &buffer) {
  if (!cuda)
    return buffer.bytes.data();
  if (!buffer.device) {
    buffer.device = cuda->allocate(buffer.bytes.size());
    cuda->upload(buffer.device, buffer.bytes.data(), buffer.bytes.size());
  }
  return buffer.device;
}

InferSession::~InferSession() {
  if (!cuda) {
    for (auto *table : {&params, &qweights, &qscales})
      for (auto &[name, buffer] : *table)
        if (!buffer.bytes.empty())
          mprt_gemm_release_constant(buffer.bytes.data());
  } else {
    for (auto *table : {&params, &qweights, &qscales})
      for (auto &[name, buffer] : *table)
        cuda->release(buffer.device);
    cuda->release(deviceInput);
    cuda->release(deviceLogits);
  }
  // The code of a cache entry (a JIT engine frees its own).
  if (library)
    dlclose(library);
}

int64_t InferSession::weightBytes() const {
  int64_t total = 0;
  for (const Binding &b : predictArgs)
    if (b.kind != ArgKind::Input)
      total += numElements(b.shape) * b.elementBytes;
  return total;
}

bool InferSession::predict(const float *x, float *logits, std::string &error) {
  size_t inputBytes = static_cast<size_t>(batch * features) * sizeof(float);
  size_t logitBytes = static_cast<size_t>(batch * classes) * sizeof(float);
  if (cuda && !deviceInput) {
    deviceInput = cuda->allocate(inputBytes);
    deviceLogits = cuda->allocate(logitBytes);
  }
  PackedArgs args;
  for (const Binding &b : predictArgs) {
    if (b.kind == ArgKind::Input) {
      if (cuda)
        cuda->upload(deviceInput, x, inputBytes);
      args.addMemRef(cuda ? deviceInput : const_cast<float *>(x), inputShape);
      continue;
    }
    auto &table = b.kind == ArgKind::Param     ? params
                  : b.kind == ArgKind::QWeight ? qweights
                                               : qscales;
    auto it = table.find(b.name);
    if (it == table.end() || it->second.shape != b.shape) {
      error = "no buffer for argument '" + b.name + "' of @predict";
      return false;
    }
    args.addMemRef(argumentData(it->second), it->second.shape);
  }
  args.addMemRef(cuda ? deviceLogits : logits, {batch, classes});
  StepThreads threads;
  predictEntry(args.get().data());
  if (cuda) {
    cuda->download(logits, deviceLogits, logitBytes);
    return cuda->check(error);
  }
  return true;
}

} // namespace mp
