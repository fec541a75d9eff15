//===- AttrNames.h - attribute names the mp passes share --------*- C++ -*-===//
//
// One spelling per attribute: autodiff, loss scaling, the optimizer, the
// precision analysis and mp-run read what the others write.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_ATTRNAMES_H
#define MP_TRANSFORMS_ATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace mp {

/// On a function: it is the loss to differentiate (returns one f32).
constexpr llvm::StringLiteral kLossAttrName = "mp.loss";
/// On a function: it computes the logits mp-run measures accuracy with.
constexpr llvm::StringLiteral kPredictAttrName = "mp.predict";
/// On an argument: a trainable parameter, with its name.
constexpr llvm::StringLiteral kParamAttrName = "mp.param";
/// On a result: the gradient of the named parameter.
constexpr llvm::StringLiteral kGradAttrName = "mp.grad";
/// On a gradient function: the loss function it differentiates.
constexpr llvm::StringLiteral kGradientOfAttrName = "mp.gradient_of";
/// On the op making the backward seed (d loss / d loss = 1).
constexpr llvm::StringLiteral kSeedAttrName = "mp.seed";
/// On a gradient function: the loss-scaling settings applied to it.
constexpr llvm::StringLiteral kLossScalingAttrName = "mp.loss_scaling";
/// On a train_step argument/result: optimizer state "<param>.<slot>".
constexpr llvm::StringLiteral kStateAttrName = "mp.state";
/// The user's per-op override: "f32", "f16" or "bf16".
constexpr llvm::StringLiteral kPrecisionAttrName = "mp.precision";
/// A recorded decision (#mp.decision<...>).
constexpr llvm::StringLiteral kDecisionAttrName = "mp.decision";
/// On an argument of a quantized function: int8 weights of the named
/// parameter, and their f32 scales (one per output channel).
constexpr llvm::StringLiteral kQWeightAttrName = "mp.qweight";
constexpr llvm::StringLiteral kQScaleAttrName = "mp.qscale";
/// On a quantized function: the function that makes its int8 weights from
/// the f32 parameters, to be called once (--mp-quantize).
constexpr llvm::StringLiteral kQuantizeWeightsAttrName = "mp.quantize_weights";

/// On an inference function: the function that makes its f16/bf16 weight
/// copies from the f32 parameters, to be called once
/// (--mp-convert-weights-once); on its results and on the matching
/// arguments: the parameter each copy was made from.
constexpr llvm::StringLiteral kConvertWeightsAttrName = "mp.convert_weights";
constexpr llvm::StringLiteral kConvertedAttrName = "mp.converted";
/// On the op that stores a value saved for the backward pass in f16/bf16
/// (--mp-save-low-precision): it is not to be fused into its readers.
constexpr llvm::StringLiteral kSavedAttrName = "mp.saved";

/// Roles of the training step's scalar arguments and results
/// (--mp-loss-scaling, --mp-optimizer): the step counter, the loss scale
/// and its growth tracker, the loss, whether the step was taken, and the
/// inf/nan flag of the unscaled gradients.
constexpr llvm::StringLiteral kStepAttrName = "mp.step";
constexpr llvm::StringLiteral kLossScaleAttrName = "mp.loss_scale";
constexpr llvm::StringLiteral kGrowthTrackerAttrName = "mp.growth_tracker";
constexpr llvm::StringLiteral kSteppedAttrName = "mp.stepped";
constexpr llvm::StringLiteral kFoundInfAttrName = "mp.found_inf";

/// On a session entry's argument: the index of the argument whose buffer
/// this new value may overwrite (the session); on the entry, after
/// --mp-in-place-updates: that every such overwrite is safe.
constexpr llvm::StringLiteral kUpdateOfAttrName = "mp.update_of";
constexpr llvm::StringLiteral kInPlaceUpdatesAttrName = "mp.in_place_updates";

/// A value's stable id for calibration statistics, set by the user.
constexpr llvm::StringLiteral kIdAttrName = "mp.id";

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_ATTRNAMES_H
