//===- Pipelines.cpp - named mp pipelines ---------------------------------===//

#include "mp/Transforms/Pipelines.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::mp;

void mlir::mp::buildTrainPipeline(OpPassManager &pm,
                                  const TrainPipelineOptions &options) {
  pm.addPass(createMPAutodiff());
  MPLossScalingOptions scaling;
  scaling.mode = options.lossScale;
  scaling.dtype = options.dtype;
  scaling.initScale = options.initScale;
  scaling.growthInterval = options.growthInterval;
  scaling.clipNorm = options.clipNorm;
  pm.addPass(createMPLossScaling(scaling));
  MPOptimizerOptions optimizer;
  optimizer.algorithm = options.optimizer;
  optimizer.learningRate = options.lr;
  optimizer.momentum = options.momentum;
  optimizer.weightDecay = options.weightDecay;
  pm.addPass(createMPOptimizer(optimizer));
  AutoMixedPrecisionOptions amp;
  amp.dtype = options.dtype;
  pm.addPass(createAutoMixedPrecision(amp));
}

void mlir::mp::registerMPPipelines() {
  PassPipelineRegistration<TrainPipelineOptions>(
      "mp-train-pipeline",
      "Build a mixed-precision @train_step from an mp.loss function: "
      "autodiff, loss scaling, FP32 optimizer update, AMP rewrite",
      buildTrainPipeline);
}
