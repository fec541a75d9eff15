//===- AttrNames.h - attribute names the mp passes share --------*- C++ -*-===//
//
// One spelling per attribute: autodiff, loss scaling, the optimizer, the
// precision analysis and mp-run read what the others write. The spellings
// and types are the mp dialect's (MPDialect.td, discardableAttrs), which
// verifies every one of them wherever it appears.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_ATTRNAMES_H
#define MP_TRANSFORMS_ATTRNAMES_H

#include "mp/Dialect/MP/IR/MPDialect.h"

#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace mp {

/// On a function: it is the loss to differentiate (returns one f32).
constexpr llvm::StringLiteral kLossAttrName =
    MPDialect::LossAttrHelper::getNameStr();
/// On a function: it computes the logits mp-run measures accuracy with.
constexpr llvm::StringLiteral kPredictAttrName =
    MPDialect::PredictAttrHelper::getNameStr();
/// On an argument: a trainable parameter, with its name.
constexpr llvm::StringLiteral kParamAttrName =
    MPDialect::ParamAttrHelper::getNameStr();
/// On a parameter argument: its starting value (dense f32 elements).
constexpr llvm::StringLiteral kInitialValueAttrName =
    MPDialect::InitialValueAttrHelper::getNameStr();
/// On an argument / result: the model input / output of that name.
constexpr llvm::StringLiteral kInputAttrName =
    MPDialect::InputAttrHelper::getNameStr();
constexpr llvm::StringLiteral kOutputAttrName =
    MPDialect::OutputAttrHelper::getNameStr();
/// On a result: the gradient of the named parameter.
constexpr llvm::StringLiteral kGradAttrName =
    MPDialect::GradAttrHelper::getNameStr();
/// On a gradient function: the loss function it differentiates.
constexpr llvm::StringLiteral kGradientOfAttrName =
    MPDialect::GradientOfAttrHelper::getNameStr();
/// On the op making the backward seed (d loss / d loss = 1).
constexpr llvm::StringLiteral kSeedAttrName =
    MPDialect::SeedAttrHelper::getNameStr();
/// On a gradient function: the loss-scaling settings applied to it
/// (#mp.loss_scaling<...>).
constexpr llvm::StringLiteral kLossScalingAttrName =
    MPDialect::LossScalingAttrHelper::getNameStr();
/// On a train_step argument/result: optimizer state "<param>.<slot>".
constexpr llvm::StringLiteral kStateAttrName =
    MPDialect::StateAttrHelper::getNameStr();
/// The user's per-op override (#mp.precision<f32|f16|bf16>).
constexpr llvm::StringLiteral kPrecisionAttrName =
    MPDialect::PrecisionAttrHelper::getNameStr();
/// A recorded decision (#mp.decision<...>).
constexpr llvm::StringLiteral kDecisionAttrName =
    MPDialect::DecisionAttrHelper::getNameStr();
/// On an argument of a quantized function: int8 weights of the named
/// parameter, and their f32 scales (one per output channel).
constexpr llvm::StringLiteral kQWeightAttrName =
    MPDialect::QweightAttrHelper::getNameStr();
constexpr llvm::StringLiteral kQScaleAttrName =
    MPDialect::QscaleAttrHelper::getNameStr();
/// On a quantized function: the function that makes its int8 weights from
/// the f32 parameters, to be called once (--mp-quantize).
constexpr llvm::StringLiteral kQuantizeWeightsAttrName =
    MPDialect::QuantizeWeightsAttrHelper::getNameStr();

/// On an inference function: the function that makes its f16/bf16 weight
/// copies from the f32 parameters, to be called once
/// (--mp-convert-weights-once); on its results and on the matching
/// arguments: the parameter each copy was made from.
constexpr llvm::StringLiteral kConvertWeightsAttrName =
    MPDialect::ConvertWeightsAttrHelper::getNameStr();
constexpr llvm::StringLiteral kConvertedAttrName =
    MPDialect::ConvertedAttrHelper::getNameStr();
/// On the op that stores a value saved for the backward pass in f16/bf16
/// (--mp-save-low-precision): it is not to be fused into its readers.
constexpr llvm::StringLiteral kSavedAttrName =
    MPDialect::SavedAttrHelper::getNameStr();

/// Roles of the training step's scalar arguments and results
/// (--mp-loss-scaling, --mp-optimizer): the step counter, the loss scale
/// and its growth tracker, the loss, whether the step was taken, and the
/// inf/nan flag of the unscaled gradients and (adaptive loss scaling) the
/// largest magnitude of the scaled gradients.
constexpr llvm::StringLiteral kStepAttrName =
    MPDialect::StepAttrHelper::getNameStr();
constexpr llvm::StringLiteral kLossScaleAttrName =
    MPDialect::LossScaleAttrHelper::getNameStr();
constexpr llvm::StringLiteral kGrowthTrackerAttrName =
    MPDialect::GrowthTrackerAttrHelper::getNameStr();
constexpr llvm::StringLiteral kSteppedAttrName =
    MPDialect::SteppedAttrHelper::getNameStr();
constexpr llvm::StringLiteral kFoundInfAttrName =
    MPDialect::FoundInfAttrHelper::getNameStr();
constexpr llvm::StringLiteral kGradAmaxAttrName =
    MPDialect::GradAmaxAttrHelper::getNameStr();
/// The global L2 norm of the unscaled gradients the update used (before
/// clipping), a result of every training step (--mp-optimizer).
constexpr llvm::StringLiteral kGradNormAttrName =
    MPDialect::GradNormAttrHelper::getNameStr();

/// Gradient accumulation (--mp-optimizer accumulate=N): on the step, its
/// window (micro-batches per update); on the function that only adds a
/// micro-batch's gradients, the step it accumulates for; on their
/// arguments and results, a parameter's f32 gradient sum and the window's
/// overflow flag (i32) and scaled-gradient amax.
constexpr llvm::StringLiteral kAccumulateAttrName =
    MPDialect::AccumulateAttrHelper::getNameStr();
constexpr llvm::StringLiteral kAccumulationOfAttrName =
    MPDialect::AccumulationOfAttrHelper::getNameStr();
constexpr llvm::StringLiteral kAccumulatorAttrName =
    MPDialect::AccumulatorAttrHelper::getNameStr();
constexpr llvm::StringLiteral kWindowOverflowAttrName =
    MPDialect::WindowOverflowAttrHelper::getNameStr();
constexpr llvm::StringLiteral kWindowAmaxAttrName =
    MPDialect::WindowAmaxAttrHelper::getNameStr();

/// On a session entry's argument: the index of the argument whose buffer
/// this new value may overwrite (the session); on the entry, after
/// --mp-in-place-updates: that every such overwrite is safe.
constexpr llvm::StringLiteral kUpdateOfAttrName =
    MPDialect::UpdateOfAttrHelper::getNameStr();
constexpr llvm::StringLiteral kInPlaceUpdatesAttrName =
    MPDialect::InPlaceUpdatesAttrHelper::getNameStr();
/// On a function: a session entry, called by host code on buffers
/// (--mp-train-entries, --mp-infer-entries); its value is how many of the
/// entry's arguments are inputs (the rest receive results).
constexpr llvm::StringLiteral kEntryAttrName =
    MPDialect::EntryAttrHelper::getNameStr();
/// On a training entry's argument: the 16-bit copy of the named parameter
/// the step reads, or (on the argument its update writes) the next one
/// (--mp-keep-step-weight-copies).
constexpr llvm::StringLiteral kCopyOfAttrName =
    MPDialect::CopyOfAttrHelper::getNameStr();

/// The CPU lowering's parallel loops (--mp-parallelize-loops): on an
/// outlined loop body (its first two arguments are the range of iterations
/// it runs); on the declaration that the loop's launch calls, the body it
/// runs (--mp-parallel-launches-to-runtime makes the call a
/// mprt_parallel_for); on the loop over a body's range, which the
/// vectorizer leaves alone (its bounds are the thread's share).
constexpr llvm::StringLiteral kParallelBodyAttrName =
    MPDialect::ParallelBodyAttrHelper::getNameStr();
constexpr llvm::StringLiteral kParallelLaunchAttrName =
    MPDialect::ParallelLaunchAttrHelper::getNameStr();
constexpr llvm::StringLiteral kParallelChunkAttrName =
    MPDialect::ParallelChunkAttrHelper::getNameStr();
/// On an outlined body: the positions, in its LLVM signature (memref
/// descriptors expanded into allocated pointer, aligned pointer, offset,
/// sizes, strides), of the pointers to buffers that no other argument of
/// the body reaches; --mp-parallel-launches-to-runtime marks them noalias.
constexpr llvm::StringLiteral kParallelNoaliasAttrName =
    MPDialect::ParallelNoaliasAttrHelper::getNameStr();

/// A value's stable id for calibration statistics, set by the user.
constexpr llvm::StringLiteral kIdAttrName =
    MPDialect::IdAttrHelper::getNameStr();

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_ATTRNAMES_H
