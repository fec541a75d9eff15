//===- SessionPipelines.h - what a session compiles, as pipelines -*- C++
//-*-===//
//
// An inference session compiles @predict with `mp-session-infer{OPTIONS}`
// (InferOptions.def), and lowers it the same way.
//
// A training session compiles its step with the registered pipeline
// `mp-session-train{OPTIONS}`, whose options are the session's own options
// string (TrainOptions.def: the step, derived and device options), and
// lowers it with `mp-lower-cpu{...}` or `mp-lower-gpu{...}`. mp-opt with the
// same pipeline text produces the same IR (python/tests/test_runtime.py,
// test_mp_opt_reproduces_the_sessions_step).
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_SESSIONPIPELINES_H
#define MP_SESSION_SESSIONPIPELINES_H

#include "mp/Session/Options.h"

#include "mlir/Pass/PassManager.h"

#include <string>

namespace mp {

/// mp-session-train: (loss) --mp-add-loss, (keep-f32) --mp-keep-f32, the
/// training pipeline (--mp-train-pipeline's passes), (probes)
/// --mp-check-numerics, --mp-train-entries, --mp-inline-entries and, for a
/// CPU step without probes that keeps its weight copies,
/// --mp-keep-step-weight-copies. Fails through `errorHandler` on options
/// a pipeline cannot take (precision=auto, which the session resolves; a
/// loss scale f32 does not use).
mlir::LogicalResult buildSessionTrainPipeline(
    mlir::OpPassManager &pm, const TrainOptions &options,
    llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler);

/// The options string of `options` that mp-session-train reads: every
/// step and derived option, and the device.
std::string sessionTrainOptionsText(const TrainOptions &options);

/// `mp-session-train{<sessionTrainOptionsText>}`: the pipeline's element,
/// which parsePassPipeline adds to a module's pass manager.
std::string sessionTrainPipelineElement(const TrainOptions &options);

/// `builtin.module(<sessionTrainPipelineElement>)`, as mp-opt's
/// --pass-pipeline takes it.
std::string sessionTrainPipeline(const TrainOptions &options);

/// mp-session-infer: --mp-keep-prediction, the rewrite of precision's
/// mode (f16/bf16: --mp-auto-mixed-precision and --mp-convert-weights-once;
/// calibrate: --mp-calibrate; int8: --mp-quantize with the quant-*
/// options), --mp-infer-entries and --mp-inline-entries. Fails through
/// `errorHandler` on precision=auto and on what verifyInferOptions refuses.
mlir::LogicalResult buildSessionInferPipeline(
    mlir::OpPassManager &pm, const InferOptions &options,
    llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler);

/// `mp-session-infer{OPTIONS}` for `options` (its step and derived
/// options): the element parsePassPipeline adds to a module's pass manager.
std::string sessionInferPipelineElement(const InferOptions &options);

/// `builtin.module(<sessionInferPipelineElement>)`, as mp-opt's
/// --pass-pipeline takes it.
std::string sessionInferPipeline(const InferOptions &options);

/// Registers mp-session-train and mp-session-infer (mp-opt, the sessions).
void registerSessionPipelines();

} // namespace mp

#endif // MP_SESSION_SESSIONPIPELINES_H
