//===- Session.cpp - compile, JIT and call a training step ----------------===//

#include "mp/Session/Session.h"
#include "StepBackend.h"
#include "mp/Session/CudaDevice.h"
#include "mp/Session/JitEntry.h"

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
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <random>

using namespace mlir;

namespace mp {

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

bool parseLossScale(const std::string &text, const std::string &precision,
                    std::string &mode, double &initScale, std::string &error) {
  initScale = 65536.0;
  if (precision == "f32") {
    if (!text.empty() && text != "none") {
      error = "--loss-scale needs --precision f16 or bf16 (f32 does not "
              "underflow)";
      return false;
    }
    mode = "none";
    return true;
  }
  if (text.empty() || text == "dynamic" || text == "adaptive" ||
      text == "none") {
    // Default: dynamic for f16; none for bf16, whose range is FP32's.
    mode = !text.empty() ? text : precision == "f16" ? "dynamic" : "none";
    return true;
  }
  if (text.rfind("static:", 0) == 0) {
    char *end = nullptr;
    initScale = std::strtod(text.c_str() + 7, &end);
    if (end && *end == '\0' && initScale > 0 && std::isfinite(initScale)) {
      mode = "static";
      return true;
    }
  }
  error = "bad --loss-scale '" + text +
          "': expected dynamic, adaptive, none or static:N with N > 0";
  return false;
}

} // namespace

std::unique_ptr<Session> Session::create(const std::string &modelPath,
                                         const TrainOptions &options,
                                         std::string &error) {
  std::unique_ptr<Session> session(new Session());
  if (!session->compile(modelPath, options, error))
    return nullptr;
  session->initialiseParameters(options.seed);
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
  if (options.precision != "f32" && options.precision != "f16" &&
      options.precision != "bf16") {
    error = "bad --precision '" + options.precision +
            "': expected f32, f16 or bf16";
    return false;
  }
  std::string mode;
  if (!parseLossScale(options.lossScale, options.precision, mode, initScale,
                      error))
    return false;
  std::optional<mlir::mp::OptimizerAlgorithm> algorithm =
      mlir::mp::symbolizeOptimizerAlgorithm(options.optimizer);
  if (!algorithm) {
    error = "bad --optimizer '" + options.optimizer +
            "': expected sgd, adam or adamw";
    return false;
  }
  compiledOptions = options;
  scaleMode = mode;

  context = createSessionContext();

  // Diagnostics become the error message.
  DiagnosticText collected(context.get());
  std::string &diagnostics = collected.text;
  if (!(module = parseModel(modelPath, context.get(), collected, error)))
    return false;

  func::FuncOp loss, predictFn;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func->hasAttr(mlir::mp::kLossAttrName))
      loss = func;
    if (func->hasAttr(mlir::mp::kPredictAttrName))
      predictFn = func;
  }
  if (!loss) {
    error = "model '" + modelPath + "' has no function marked mp.loss";
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
  pipeline.dtype = *mlir::mp::symbolizeFloatPrecision(options.precision);
  pipeline.lossScale = *mlir::mp::symbolizeLossScalingMode(mode);
  pipeline.initScale = initScale;
  pipeline.optimizer = *algorithm;
  pipeline.lr = options.lr;
  pipeline.momentum = options.momentum;
  pipeline.weightDecay = options.weightDecay;
  PassManager pm(context.get());
  mlir::mp::buildTrainPipeline(pm, pipeline);
  if (failed(pm.run(*module))) {
    error = "compiling the training step failed\n" + diagnostics;
    return false;
  }
  if (options.device != "cpu" && options.device != "cuda") {
    error = "bad --device '" + options.device + "': expected cpu or cuda";
    return false;
  }
  bool gpu = options.device == "cuda";
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
  }
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  addEntry(*module, step, "mp_train_entry");
  {
    // The step's first results are the new parameters and state, in the
    // order of its arguments after x and labels: say so, for
    // mp-in-place-updates.
    auto entry = module->lookupSymbol<func::FuncOp>("mp_train_entry");
    unsigned updated = 0;
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (step.getArgAttr(i, mlir::mp::kParamAttrName) ||
          step.getArgAttr(i, mlir::mp::kStateAttrName))
        ++updated;
    OpBuilder b(context.get());
    for (unsigned i = 0; i < updated; ++i)
      if (entry.getArgument(step.getNumArguments() + i).getType() ==
          entry.getArgument(2 + i).getType())
        entry.setArgAttr(step.getNumArguments() + i,
                         mlir::mp::kUpdateOfAttrName,
                         b.getI64IntegerAttr(2 + i));
  }
  if (predictFn)
    addEntry(*module, predictFn, "mp_predict_entry");
  // The new parameters and state are then written straight into the
  // caller's buffers (eliminate-empty-tensors in --mp-lower-cpu), not into
  // heap buffers copied out at the end.
  if (!inlineEntries(*module)) {
    error = "inlining the training step failed\n" + diagnostics;
    return false;
  }
  // Optimizer state: every train_step argument marked mp.state.
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
  training.scalars.scale =
      mode == "none" ? 1.0f : static_cast<float>(initScale);

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
  auto entry = module->lookupSymbol<LLVM::LLVMFuncOp>("mp_train_entry");
  entries.inPlaceUpdates = entry &&
                           entry->hasAttr(mlir::mp::kInPlaceUpdatesAttrName) &&
                           !(inPlace && std::string(inPlace) == "0");
  return true;
}

bool Session::compile(const std::string &modelPath, const TrainOptions &options,
                      std::string &error) {
  OwningOpRef<ModuleOp> module;
  if (!lower(modelPath, options, module, error))
    return false;
  // The GPU is opened after lowering, so that a machine without one still
  // compiles the step (and says so) before it reports the missing device.
  std::unique_ptr<CudaDevice> cuda;
  if (options.device == "cuda" && !(cuda = CudaDevice::open(error)))
    return false;
  if (!(engine = compileModule(*module, cuda.get(), error)))
    return false;
  auto train = engine->lookupPacked("mp_train_entry");
  if (!train) {
    error = "JIT compilation failed: " + llvm::toString(train.takeError());
    return false;
  }
  entries.train = *train;
  if (hasPredict) {
    auto predict = engine->lookupPacked("mp_predict_entry");
    if (!predict) {
      error = "JIT compilation failed: " + llvm::toString(predict.takeError());
      return false;
    }
    entries.predict = *predict;
  }
  return createBackend(std::move(cuda), error);
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
  // One generator for all weights, in parameter order; biases zero.
  std::mt19937_64 rng(seed);
  std::string error;
  for (HostTensor &p : parameters()) // marks a GPU session's copies stale
    if (p.shape.size() < 2 || !initialiseTensor(p, scheme, rng, error))
      std::fill(p.data.begin(), p.data.end(), 0.0f);
}

bool Session::trainStep(const float *x, const float *labels, StepResult &result,
                        std::string &error) {
  return backend->trainStep(training, x, labels, result, error);
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
  llvm::json::Object metadata{
      {"epoch", position.epoch},
      {"batch", position.batch},
      {"precision", compiledOptions.precision},
      {"step", training.scalars.step},
      {"scale", static_cast<double>(training.scalars.scale)},
      {"growth_tracker", training.scalars.growthTracker},
      {"skipped", training.scalars.skipped},
      // What the step was compiled with, for the reader (loading ignores
      // it: a resumed run may change them).
      {"options", llvm::json::Object{
                      {"optimizer", compiledOptions.optimizer},
                      {"lr", compiledOptions.lr},
                      {"momentum", compiledOptions.momentum},
                      {"weight_decay", compiledOptions.weightDecay},
                      {"loss_scale", scaleMode},
                      {"init_scale", initScale},
                      {"seed", static_cast<int64_t>(compiledOptions.seed)}}}};
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
                             RunPosition &position, std::string &error) {
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
    if (!step || !scale || !tracker) {
      error = "checkpoint '" + path +
              "' lacks its training metadata (step, scale, growth_tracker)";
      ok = false;
    }
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
    }
    position.epoch = metadata.getInteger("epoch").value_or(-1);
    // Absent in checkpoints written before saves inside an epoch existed.
    position.batch = metadata.getInteger("batch").value_or(0);
  }
  mprt_checkpoint_free(checkpoint);
  return ok;
}

} // namespace mp
