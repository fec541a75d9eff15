//===- MPOps.td - mp dialect operations --------------------*- tablegen -*-===//
//
// Loss scaling, calibration and fake-quantization ops.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPOPS_TD
#define MP_DIALECT_MP_IR_MPOPS_TD

include "mp/Dialect/MP/IR/MPDialect.td"
include "mp/Dialect/MP/IR/MPAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def MP_FloatScalarOrTensor : AnyTypeOf<[AnyFloat, RankedTensorOf<[AnyFloat]>]>;
def MP_FloatTensor : RankedTensorOf<[AnyFloat]>;
def MP_GrowthTracker : AnyTypeOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// mp.scale_loss
//===----------------------------------------------------------------------===//

def MP_ScaleLossOp : MP_Op<"scale_loss",
    [Pure, AllTypesMatch<["loss", "result"]>]> {
  let summary = "multiply the loss by the current loss scale";
  let description = [{
    Returns `loss * scale`. The backward pass of a mixed-precision training
    step starts from the scaled loss, so that FP16 gradients smaller than
    2^-24 do not flush to zero. `scale` is always `f32`; the product is
    rounded to the loss' element type.

    Example:

    ```mlir
    %scaled = mp.scale_loss %loss, %scale : f32
    %scaled_t = mp.scale_loss %loss_t, %scale : tensor<f32>
    ```
  }];
  let arguments = (ins MP_FloatScalarOrTensor:$loss, F32:$scale);
  let results = (outs MP_FloatScalarOrTensor:$result);
  let assemblyFormat = "$loss `,` $scale attr-dict `:` type($loss)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// mp.unscale
//===----------------------------------------------------------------------===//

def MP_UnscaleOp : MP_Op<"unscale", [Pure, AttrSizedResultSegments]> {
  let summary = "divide gradients by the loss scale and detect inf/nan";
  let description = [{
    Multiplies each gradient by `1 / scale`, computing in FP32 (or FP64 for
    FP64 results), and returns the unscaled gradients together with
    `found_inf`: true when any element of any unscaled gradient is inf or
    nan. A training step updates its parameters only when `found_inf` is
    false.

    Each result has the shape of its gradient. Its element type is the
    gradient's, or a wider float (`f32`, `f64`) so that FP16 gradients reach
    the FP32 master weights without another cast.

    With an `amax` result (adaptive loss scaling), the op also returns the
    largest magnitude of the *scaled* gradients, `max |g|` over every
    element of every gradient, measured in the same pass over the elements
    as the inf/nan check (the lowering folds both into one reduction per
    gradient). It is meaningful only when `found_inf` is false.

    Example:

    ```mlir
    %g:2, %found_inf = mp.unscale %dw1, %dw2 by %scale
        : tensor<64x32xf16>, tensor<32xf32> -> tensor<64x32xf32>, tensor<32xf32>
    %h, %inf, %amax = mp.unscale %dw by %scale
        : tensor<64x32xf16> -> tensor<64x32xf32> amax f32
    ```
  }];
  let arguments = (ins Variadic<MP_FloatTensor>:$grads, F32:$scale);
  let results = (outs Variadic<MP_FloatTensor>:$unscaled, I1:$found_inf,
                 Optional<F32>:$amax);
  let assemblyFormat = [{
    $grads `by` $scale attr-dict `:` type($grads) `->` type($unscaled)
    (`amax` type($amax)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// mp.update_scale
//===----------------------------------------------------------------------===//

def MP_UpdateScaleOp : MP_Op<"update_scale",
    [Pure, AllTypesMatch<["growth_tracker", "new_growth_tracker"]>]> {
  let summary = "advance the dynamic loss-scale state machine by one step";
  let description = [{
    Given the current scale, the number of clean steps since the last change
    (`growth_tracker`) and this step's `found_inf`:

    * `found_inf` true: the scale is multiplied by `backoff_factor` (not
      below `min_scale`) and the tracker resets to 0; the step was skipped;
    * otherwise the tracker counts the clean step; when it reaches
      `growth_interval` the scale is multiplied by `growth_factor` (not above
      `max_scale`) and the tracker resets to 0.

    Defaults follow common practice (PyTorch's GradScaler): growth 2.0 every
    2000 clean steps, backoff 0.5. `min_scale` (1.0) keeps a model with a
    persistent inf from driving the scale to zero; `max_scale` (2^24) bounds
    growth over long runs of clean steps.

    Example:

    ```mlir
    %new_scale, %new_tracker = mp.update_scale %scale, %tracker, %found_inf
        {growth_interval = 1000 : i64} : i32
    ```
  }];
  let arguments = (ins F32:$scale, MP_GrowthTracker:$growth_tracker,
                   I1:$found_inf,
                   DefaultValuedAttr<F32Attr, "2.0">:$growth_factor,
                   DefaultValuedAttr<F32Attr, "0.5">:$backoff_factor,
                   DefaultValuedAttr<I64Attr, "2000">:$growth_interval,
                   DefaultValuedAttr<F32Attr, "1.0">:$min_scale,
                   DefaultValuedAttr<F32Attr, "16777216.0">:$max_scale);
  let results = (outs F32:$new_scale, MP_GrowthTracker:$new_growth_tracker);
  let assemblyFormat = [{
    $scale `,` $growth_tracker `,` $found_inf attr-dict `:`
    type($growth_tracker)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// mp.adapt_scale
//===----------------------------------------------------------------------===//

def MP_AdaptScaleOp : MP_Op<"adapt_scale",
    [Pure, AllTypesMatch<["growth_tracker", "new_growth_tracker"]>]> {
  let summary = "set the next loss scale from the measured gradient amax";
  let description = [{
    Adaptive loss scaling: instead of growing the scale until it overflows,
    the step measures `amax`, the largest magnitude of its scaled gradients
    (`mp.unscale ... amax f32`), and this op picks the next scale from it.
    The target is the largest power of two `p` with

        amax * (p / scale) <= limit / margin

    (the gradients rescaled to `p` stay `margin` times below `limit`, f16's
    largest finite value by default), clamped to [`min_scale`,
    `max_scale`]. Given this step's `found_inf`:

    * `found_inf` true: the step was skipped; the scale is multiplied by
      `backoff_factor` (not below `min_scale`), as in dynamic scaling, and
      the tracker becomes `-growth_interval`: a cool-down during which the
      scale may fall but does not grow;
    * cooling down (tracker < 0): the scale becomes min(scale, target) and
      the tracker counts up towards 0;
    * otherwise, a target above the scale is approached by one power of
      two a step (one step with unusually small gradients does not raise
      the scale far for the next), tracker 0; a target below it is taken
      only after `hysteresis` clean steps in a row asked for less (the
      tracker counts them), so that one outlier does not lower the scale.

    A step whose `amax` is zero (or not positive) measured nothing: its
    target is the current scale. The growth tracker is the session's loss
    scaling scalar, so adaptive and dynamic steps have one signature.
    `updateAdaptiveLossScale` (MPOps.h) is the reference the folder and the
    lowering follow.

    Example:

    ```mlir
    %new_scale, %new_tracker = mp.adapt_scale %scale, %tracker, %found_inf,
        %amax {margin = 8.0 : f32, hysteresis = 2 : i64} : i32
    ```
  }];
  let arguments = (ins F32:$scale, MP_GrowthTracker:$growth_tracker,
                   I1:$found_inf, F32:$amax,
                   F32Attr:$margin,
                   I64Attr:$hysteresis,
                   DefaultValuedAttr<F32Attr, "0.5">:$backoff_factor,
                   DefaultValuedAttr<I64Attr, "2000">:$growth_interval,
                   DefaultValuedAttr<F32Attr, "1.0">:$min_scale,
                   DefaultValuedAttr<F32Attr, "16777216.0">:$max_scale,
                   DefaultValuedAttr<F32Attr, "65504.0">:$limit);
  let results = (outs F32:$new_scale, MP_GrowthTracker:$new_growth_tracker);
  let assemblyFormat = [{
    $scale `,` $growth_tracker `,` $found_inf `,` $amax attr-dict `:`
    type($growth_tracker)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// mp.observe
//===----------------------------------------------------------------------===//

def MP_ObserveOp : MP_Op<"observe", [AllTypesMatch<["input", "output"]>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "calibration probe: record a tensor's value range";
  let description = [{
    Passes `input` through unchanged. A calibration run records, per probe
    `id`, the minimum, maximum and a histogram of |x| of every tensor that
    flows through it; `--mp-quantize` reads those statistics back by id. The
    id must be non-empty and is kept stable across passes.

    The probe has a side effect (it writes the statistics), so it is neither
    removed when its result is unused nor merged with another probe.

    Example:

    ```mlir
    %x1 = mp.observe %x as "fc1.input" : tensor<64x512xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$id);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "$input `as` $id attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// mp.quant_scale
//===----------------------------------------------------------------------===//

def MP_QuantScaleOp : MP_Op<"quant_scale", [Pure]> {
  let summary = "symmetric int8 scale of a tensor (per tensor or per channel)";
  let description = [{
    Returns `max |x| / 127` over the whole tensor (a rank-0 result), or with
    `axis` over each slice along that dimension (a 1-D result of its size);
    1 where that maximum is 0. The scale is a constant to differentiation:
    no gradient flows through it (quantization-aware training's observers,
    as in PyTorch's FakeQuantize).

    With `observer` (per tensor only) the scale is an activation's: a
    training step made by `--mp-quant-observers` takes it from the named
    moving-average observer (optimizer state of that name) instead of from
    this batch; everywhere else it is this tensor's own.

    Example:

    ```mlir
    %sw = mp.quant_scale %w {axis = 1 : i64} : tensor<64x512xf32> -> tensor<512xf32>
    %sx = mp.quant_scale %x {observer = "w1.input_amax"} : tensor<64x64xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins MP_FloatTensor:$input, OptionalAttr<I64Attr>:$axis,
                   OptionalAttr<StrAttr>:$observer);
  let results = (outs RankedTensorOf<[F32]>:$scale);
  let assemblyFormat =
      "$input attr-dict `:` type($input) `->` type($scale)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// mp.fake_quant
//===----------------------------------------------------------------------===//

def MP_FakeQuantOp : MP_Op<"fake_quant",
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "round to the symmetric int8 grid and back (QAT)";
  let description = [{
    Returns `clamp(roundeven(x / s), -127, 127) * s` elementwise, where `s`
    is a rank-0 scale, or with `axis` a 1-D scale indexed by that
    dimension: what int8 inference computes with the same scales, kept in
    floating point so that training sees the rounding. Its derivative is
    the straight-through estimator clipped to the representable range:
    `dx = dy` where `roundeven(x / s)` lies in [-127, 127], 0 elsewhere; no
    gradient flows to the scale.

    Example:

    ```mlir
    %wq = mp.fake_quant %w, %sw {axis = 1 : i64} : tensor<64x512xf32>, tensor<512xf32>
    ```
  }];
  let arguments = (ins MP_FloatTensor:$input, RankedTensorOf<[F32]>:$scale,
                   OptionalAttr<I64Attr>:$axis);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat =
      "$input `,` $scale attr-dict `:` type($input) `,` type($scale)";
  let hasVerifier = 1;
}

def MP_DropoutOp : MP_Op<"dropout", [AllTypesMatch<["input", "output"]>]> {
  let summary = "inverted dropout with a counter-based random mask";
  let description = [{
    In a training step, zeroes each element with probability `ratio` and
    scales the others by `1 / (1 - ratio)`; everywhere else (prediction,
    evaluation) it is the identity. The mask is not stored: element `i` is
    kept when the first word of Philox4x32-10 with counter
    `(i, stream, step, 0)` and key `(seed low, seed high)` is at least
    `round(ratio * 2^32)`, so it depends on the seed, the op's `stream`, the
    training step and the element's position only: the same on any number
    of threads, after a resume, and in the backward pass, whose derivative
    is `mp.dropout` of the gradient with the same `stream`.

    `--mp-autodiff` numbers a loss function's dropouts that have no
    `stream` (in order, after the largest given); `--mp-lower-dropout`
    expands them. The op has no `Pure` trait: two dropouts of one value
    without streams are two draws, not one.

    Example:

    ```mlir
    %y = mp.dropout %x {ratio = 1.000000e-01 : f64} : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins MP_FloatTensor:$input, F64Attr:$ratio,
                   OptionalAttr<I64Attr>:$stream);
  let results = (outs MP_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // MP_DIALECT_MP_IR_MPOPS_TD
