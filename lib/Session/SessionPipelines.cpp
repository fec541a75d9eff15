//===- SessionPipelines.cpp - what a session compiles, as pipelines -------===//

#include "mp/Session/SessionPipelines.h"

#include "mp/Transforms/Passes.h"
#include "mp/Transforms/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace mp {

namespace {

/// The training pipeline's passes as `options` configure them, its loss
/// scaling mode resolved: each step option that a pass of it reads is one
/// line here.
mlir::mp::TrainPasses trainPasses(const TrainOptions &options,
                                  LossScalingMode mode) {
  mlir::mp::TrainPasses passes;
  passes.dtype = options.precision;
  passes.qat = options.qat;
  passes.observers.freezeAfter = options.qatFreezeAfter;
  passes.lossScaling.mode = mode;
  passes.lossScaling.initScale = options.lossScale.initial;
  passes.lossScaling.margin = options.scaleMargin;
  passes.lossScaling.hysteresis = options.scaleHysteresis;
  passes.lossScaling.clipNorm = options.clipNorm;
  passes.dataParallel.ranks = options.ranks;
  passes.optimizer.algorithm = options.optimizer;
  passes.optimizer.learningRate = options.lr;
  passes.optimizer.momentum = options.momentum;
  passes.optimizer.weightDecay = options.weightDecay;
  passes.optimizer.accumulate = options.accumulate;
  passes.dropout.seed = options.dropoutSeed;
  return passes;
}

/// What comes before the step: the loss around a model that only predicts,
/// and the ops the options keep in f32.
void addModelPasses(OpPassManager &pm, const TrainOptions &options) {
  if (options.addLoss) {
    mlir::mp::MPAddLossOptions addLoss;
    addLoss.loss = *options.addLoss;
    addLoss.ignoreIndex = options.ignoreIndex;
    pm.addPass(mlir::mp::createMPAddLoss(addLoss));
  }
  if (!options.keepF32.empty()) {
    mlir::mp::MPKeepF32Options keep;
    keep.locations.assign(options.keepF32.begin(), options.keepF32.end());
    pm.addPass(mlir::mp::createMPKeepF32(keep));
  }
}

/// What comes after the step: probes, entries for host code, inlining,
/// and kept weight copies. A CPU step without probes predicts from 16-bit
/// weight copies made once, and keeps its step's copies between steps;
/// GPU and probed steps convert their weights in every call.
void addEntryPasses(OpPassManager &pm, const TrainOptions &options) {
  bool probed = options.probes != TrainOptions::Probes::None;
  if (probed) {
    mlir::mp::MPCheckNumericsOptions probes;
    probes.skipConversions = options.probes == TrainOptions::Probes::ComputeOps;
    pm.addPass(mlir::mp::createMPCheckNumerics(probes));
  }
  bool convertOnce = options.device == Device::Cpu && !probed;
  mlir::mp::MPTrainEntriesOptions entries;
  entries.accumulate = options.accumulate;
  entries.predictWeightCopies = convertOnce;
  pm.addPass(mlir::mp::createMPTrainEntries(entries));
  pm.addPass(mlir::mp::createMPInlineEntries());
  if (convertOnce && options.weightCopies == WeightCopies::Keep)
    pm.addPass(mlir::mp::createMPKeepStepWeightCopies());
}

} // namespace

LogicalResult buildSessionTrainPipeline(
    OpPassManager &pm, const TrainOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (options.automaticPrecision)
    return errorHandler("mp-session-train: precision=auto depends on the "
                        "hardware, which a session resolves; give f32, f16 "
                        "or bf16");
  std::string error;
  LossScalingMode mode;
  // The pipeline's options carry the job's size, not `distributed`.
  TrainOptions checked = options;
  checked.distributed = options.ranks > 0;
  if (!verifyTrainOptions(checked, error) ||
      !resolveLossScale(options.lossScale, options.precision, mode, error))
    return errorHandler("mp-session-train: " + error);
  addModelPasses(pm, options);
  mlir::mp::buildTrainPipeline(pm, trainPasses(options, mode));
  addEntryPasses(pm, options);
  return success();
}

std::string sessionTrainOptionsText(const TrainOptions &options) {
  std::string text = printTrainOptionsInScopes(
      options, {OptionScope::Step, OptionScope::Derived});
  return text + " device=" + stringifyDevice(options.device).str();
}

std::string sessionTrainPipelineElement(const TrainOptions &options) {
  return "mp-session-train{" + sessionTrainOptionsText(options) + "}";
}

std::string sessionTrainPipeline(const TrainOptions &options) {
  return "builtin.module(" + sessionTrainPipelineElement(options) + ")";
}

namespace {

/// The rewrite of @predict that the options' mode asks for.
void addPredictionPasses(OpPassManager &pm, const InferOptions &options) {
  switch (options.mode) {
  case InferOptions::Mode::Float:
    if (options.precision != FloatPrecision::F32) {
      mlir::mp::AutoMixedPrecisionOptions amp;
      amp.dtype = options.precision;
      pm.addPass(mlir::mp::createAutoMixedPrecision(amp));
      // f16/bf16 weight copies are made once, by the weights entry.
      pm.addPass(mlir::mp::createMPConvertWeightsOnce());
    }
    return;
  case InferOptions::Mode::Calibrate:
    pm.addPass(mlir::mp::createMPCalibrate());
    return;
  case InferOptions::Mode::Int8: {
    mlir::mp::MPQuantizeOptions quantize;
    quantize.mode = options.quantization;
    quantize.calibration = options.calibrationPath;
    quantize.method = options.method;
    quantize.percentile = options.percentile;
    quantize.perChannel = options.perChannel;
    quantize.maxError = options.maxError;
    quantize.fallback = options.fallback;
    quantize.report = options.reportPath;
    quantize.fallbackOps.assign(options.fallbackOps.begin(),
                                options.fallbackOps.end());
    quantize.probeOutputs = options.probeOutputs;
    pm.addPass(mlir::mp::createMPQuantize(quantize));
    return;
  }
  }
}

} // namespace

LogicalResult buildSessionInferPipeline(
    OpPassManager &pm, const InferOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (options.automaticPrecision)
    return errorHandler("mp-session-infer: precision=auto depends on the "
                        "hardware, which a session resolves; give f32, f16, "
                        "bf16, int8 or int8-dynamic");
  std::string error;
  if (!verifyInferOptions(options, error))
    return errorHandler("mp-session-infer: " + error);
  pm.addPass(mlir::mp::createMPKeepPrediction());
  // A prediction is evaluation: dropout is the identity.
  pm.addPass(mlir::mp::createMPLowerDropout());
  addPredictionPasses(pm, options);
  // Entries that host code calls on buffers, and what they call inlined.
  pm.addPass(mlir::mp::createMPInferEntries());
  pm.addPass(mlir::mp::createMPInlineEntries());
  return success();
}

std::string sessionInferPipelineElement(const InferOptions &options) {
  return "mp-session-infer{" +
         printInferOptions(options, {OptionScope::Step, OptionScope::Derived}) +
         "}";
}

std::string sessionInferPipeline(const InferOptions &options) {
  return "builtin.module(" + sessionInferPipelineElement(options) + ")";
}

/// The registration itself, run once.
static bool registerOnce() {
  registerPassPipeline(
      "mp-session-train",
      "What a training session compiles before lowering (its options are "
      "the session's options string: docs/options.md)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainOptions options;
        std::string error;
        if (!parseTrainOptions(text, options, error))
          return errorHandler("mp-session-train: " + error);
        return buildSessionTrainPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
  registerPassPipeline(
      "mp-session-infer",
      "What an inference session compiles before lowering (its options are "
      "the inference options string: docs/options.md)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        InferOptions options;
        std::string error;
        if (!parseInferOptions(text, options, error))
          return errorHandler("mp-session-infer: " + error);
        return buildSessionInferPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
  return true;
}

void registerSessionPipelines() {
  // Sessions (in any thread) and mp-opt call this; the registry takes a
  // pipeline once.
  static const bool registered = registerOnce();
  (void)registered;
}

} // namespace mp
