//===- Passes.td - mp mixed-precision passes ---------------*- tablegen -*-===//

#ifndef MP_TRANSFORMS_PASSES_TD
#define MP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// Choices of enum options: --help lists them and the option parser refuses
// any other spelling.
defvar LowPrecisionValues = [{::llvm::cl::values(
    clEnumValN(::mlir::mp::FloatPrecision::F16, "f16", "IEEE half precision"),
    clEnumValN(::mlir::mp::FloatPrecision::BF16, "bf16", "bfloat16"))}];
defvar TrainingPrecisionValues = [{::llvm::cl::values(
    clEnumValN(::mlir::mp::FloatPrecision::F32, "f32",
               "FP32 throughout (no mixed precision)"),
    clEnumValN(::mlir::mp::FloatPrecision::F16, "f16", "IEEE half precision"),
    clEnumValN(::mlir::mp::FloatPrecision::BF16, "bf16", "bfloat16"))}];

def MPImport : Pass<"mp-import", "::mlir::ModuleOp"> {
  let summary = "Bring a tosa model to linalg on tensors in canonical form";
  let description = [{
    Runs upstream `tosa-infer-shapes` (unranked results get shapes),
    `tosa-to-scf` (`tosa.cond_if`, `tosa.while_loop` and `tosa.scatter`
    become scf; their bodies' tosa ops are converted like the rest),
    `tosa-to-linalg-named`, `tosa-to-linalg`, `tosa-to-arith` and
    `tosa-to-tensor` on every function, then canonicalization, so that
    the mixed-precision passes see one form (linalg, tensor, arith, math)
    whatever the frontend produced. A module without tosa ops is only
    canonicalized. A tosa op on a quantized element type
    (`!quant.uniform`, as TFLite int8 models give) is refused with an error
    naming the op and the type (upstream's conversion crashes on them).
    An op the conversion refuses ("failed to legalize") gets notes with what
    upstream's `tosa-validate` finds wrong with it (a zero point that is no
    constant, an op or type outside the profile); validation's findings on
    ops the conversion takes are not reported, since it is stricter (levels).

    Before:

    ```mlir
    %0 = tosa.matmul %a, %b, %azp, %bzp
        : (tensor<1x8x64xf32>, tensor<1x64x32xf32>, tensor<1xf32>,
           tensor<1xf32>) -> tensor<1x8x32xf32>
    ```

    After:

    ```mlir
    %1 = linalg.batch_matmul ins(%a, %b : tensor<1x8x64xf32>,
        tensor<1x64x32xf32>) outs(%0 : tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

// Options the analysis and the rewrite share.
defvar MPAnalysisOptions = [
  Option<"dtype", "dtype", "::mlir::mp::FloatPrecision",
         /*default=*/"::mlir::mp::FloatPrecision::F16",
         "Low-precision type", LowPrecisionValues>,
  ListOption<"allowOps", "allow-ops", "std::string",
             "Op names forced into the allow class (e.g. linalg.generic)">,
  ListOption<"denyOps", "deny-ops", "std::string",
             "Op names forced into the deny class (kept in f32)">,
  Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
         "Calibration statistics file (JSON, see docs/calibration-stats.md); "
         "values beyond f16's safe range keep their ops in f32">,
  Option<"f16SafeMax", "f16-safe-max", "double", /*default=*/"32752.0",
         "Largest |x| treated as safe in f16 (65504 with a 2x margin)">,
  Option<"report", "report", "std::string", /*default=*/"\"\"",
         "Write a JSON report of every decision to this path">,
  Option<"keepSignature", "keep-signature", "bool", /*default=*/"true",
         "Keep function argument and result types (f32); when false, "
         "arguments and results may become low precision">
];

def MPAnalyzePrecision : Pass<"mp-analyze-precision", "::mlir::ModuleOp"> {
  let summary = "Classify every op (allow, infer, clear, deny) and decide "
                "the type it computes in";
  let description = [{
    Gives every op on float tensors a precision class and records the
    decision as an `mp.decision` attribute:

    * `allow`: contractions (matmul, batch_matmul, transposed variants,
      convolutions, and `linalg.generic` found to be a multiply-add
      reduction) take low-precision inputs and accumulate in f32;
    * `infer`: elementwise arithmetic, activations (relu, tanh, sigmoid,
      gelu), broadcasts and bias adds;
    * `clear`: reshapes, transposes, slices, concat, pad, fill, max-pool;
    * `deny`: exp, log, pow, sqrt/rsqrt, division by a computed value
      (softmax, normalisation), sum/mean/variance reductions, and every op
      the analysis does not know (a warning names it; it stays f32).

    `allow-ops=` / `deny-ops=` override classes by op name, and an op's own
    `mp.precision = #mp.precision<f32 | f16 | bf16>` attribute wins over
    every rule.
    With `calibration=` (f16 only), a value whose measured |x| exceeds
    `f16-safe-max`, or whose non-zero values are mostly below f16's normal
    range, keeps its producer and consumers in f32.

    Infer and clear ops are then placed by a minimum cut over the op graph:
    each op may compute in the low type or in f32; a conversion costs the
    bytes it reads and writes, and an op that runs low saves half of the
    bytes it moves. Contraction inputs are fixed low and their results f32,
    deny ops are fixed f32. The cheapest placement of precision boundaries
    is exact, unlike greedy painting.

    Before:

    ```mlir
    %0 = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>)
                       outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
    ```

    After:

    ```mlir
    %0 = linalg.matmul {mp.decision = #mp.decision<allow, f16>}
        ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>)
        outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
    ```
  }];
  let options = MPAnalysisOptions;
  let dependentDialects = ["::mlir::mp::MPDialect"];
  let statistics = [
    Statistic<"numAllow", "allow-ops", "Ops classified allow">,
    Statistic<"numInfer", "infer-ops", "Ops classified infer">,
    Statistic<"numClear", "clear-ops", "Ops classified clear">,
    Statistic<"numDeny", "deny-ops", "Ops classified deny">,
    Statistic<"numLow", "low-precision-ops", "Ops decided low precision">
  ];
}

def AutoMixedPrecision : Pass<"mp-auto-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Rewrite a model to f16/bf16 compute with f32 accumulation";
  let description = [{
    Runs `--mp-import` when the module holds tosa ops, then the precision
    analysis (see `--mp-analyze-precision`; decisions already present as
    `mp.decision` attributes are kept), then rewrites:

    * contractions get low-precision inputs and keep their f32 accumulator
      and result (named ops are rebuilt, so their bodies extend the inputs);
    * low-precision infer and clear ops read and write the low type;
      `linalg.generic` bodies keep their arithmetic and round once on the
      way out;
    * a value is converted at most once per type, cast pairs that cancel
      are removed, casts of constants are folded into the constants, and a
      cast next to a `linalg.generic` is folded into that op's body so no
      stand-alone cast kernel remains where a neighbour can absorb it;
    * a warning names every op that would accumulate in f16/bf16 over a
      reduction longer than `warn-reduction-size`.

    Function signatures are kept by default (`keep-signature=false` lets
    arguments and results take the low type).

    Before:

    ```mlir
    %0 = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>)
                       outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
    ```

    After (`dtype=f16`):

    ```mlir
    %xh = linalg.generic ... ins(%x : tensor<8x64xf32>)
                            outs(%e0 : tensor<8x64xf16>) { arith.truncf }
    %wh = linalg.generic ... ins(%w : tensor<64x32xf32>)
                            outs(%e1 : tensor<64x32xf16>) { arith.truncf }
    %0 = linalg.matmul ins(%xh, %wh : tensor<8x64xf16>, tensor<64x32xf16>)
                       outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
    ```
  }];
  let options = !listconcat(MPAnalysisOptions, [
    Option<"warnReductionSize", "warn-reduction-size", "int64_t",
           /*default=*/"2048",
           "Warn when an op accumulates in f16/bf16 over more elements">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "Emit a remark with class totals, casts and bytes converted">
  ]);
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::mp::MPDialect"
  ];
  let statistics = [
    Statistic<"numCasts", "casts-inserted",
              "Stand-alone cast ops left in the rewritten IR">,
    Statistic<"numFusedCasts", "casts-fused",
              "Conversions folded into neighbouring linalg.generic ops">,
    Statistic<"numBytesConverted", "bytes-converted",
              "Bytes read plus written by stand-alone casts">,
    Statistic<"numDemoted", "ops-demoted",
              "Ops that now compute in (or read) the low type">
  ];
}

def MPAutodiff : Pass<"mp-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a loss function on tensors";
  let description = [{
    For every function marked `mp.loss` (it returns one f32 scalar or a 0-d
    f32 tensor), whose trainable arguments carry `mp.param = "<name>"`,
    adds a function `@<name>_grad` with the same arguments that returns the
    loss followed by the gradient of every parameter, in argument order.
    Each gradient result carries `mp.grad = "<name>"`; the new function
    carries `mp.gradient_of = @<name>`, and the op making the backward seed
    (d loss / d loss = 1) carries `mp.seed`, for `--mp-loss-scaling`.

    Differentiation works on the IR as written (run it before
    `--mp-auto-mixed-precision`, see docs/training.md):

    * every `linalg` op on tensors: named contractions (matmul,
      batch_matmul, transposed variants), convolutions, pooling,
      elementwise generics, broadcasts, transposes and reductions. One rule
      covers them: the gradient of an input is a `linalg.generic` over the
      forward iteration space whose body is the reverse derivative of the
      forward body, reduced over the loops the input does not index
      directly. So the gradient of a matmul's input is again a contraction,
      a bias-add's bias gradient sums over the batch, and a convolution's
      input gradient scatters over its window (`oh + kh`);
    * scalar and body ops: addf, subf, mulf, divf, negf, maximumf/minimumf
      (and max/min reductions: the elements equal to the result share
      the gradient evenly), select, exp, log, tanh, sqrt, rsqrt, erf, absf, powf,
      fma, extf, truncf;
    * `tensor.expand_shape`, `tensor.collapse_shape`, `tensor.extract`,
      `tensor.pad` with a constant padding value (the gradient is the
      interior: a generic reading at offset `low`);
      `tensor.empty`, fills and constants have no gradient;
    * data movement: `tensor.extract_slice` (the gradient inserted into
      zeros at the slice), `tensor.insert_slice` (the slice of the
      gradient; the destination's window zeroed), `tensor.concat` (a slice
      per operand);
    * a gather: a parallel generic whose body yields one `tensor.extract`
      of a table it does not take as an operand (an embedding lookup, ONNX
      `Gather`): the table's gradient is a scatter-add, an `scf.for` nest
      over the gather's loops that adds each element of the gradient at
      the index read, in order, so repeated indices add up;
    * `linalg.softmax` through its decomposition.

    An op on the path from a parameter to the loss that has no rule is an
    error naming the op, at its location.

    Before:

    ```mlir
    func.func @loss(%x: tensor<4x6xf32>, %w: tensor<6x3xf32> {mp.param = "w"})
        -> f32 attributes {mp.loss} { ... }
    ```

    After (added):

    ```mlir
    func.func @loss_grad(%x: tensor<4x6xf32>, %w: tensor<6x3xf32> {mp.param = "w"})
        -> (f32, tensor<6x3xf32> {mp.grad = "w"}) { ... }
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MPLossScaling : Pass<"mp-loss-scaling", "::mlir::ModuleOp"> {
  let summary = "Scale the backward seed and unscale gradients with inf/nan "
                "detection";
  let description = [{
    Rewrites every gradient function made by `--mp-autodiff` (marked
    `mp.gradient_of`) for loss scaling:

    * a new last argument `%scale: f32 {mp.loss_scale}` multiplies the
      backward seed (`mp.scale_loss`), so small FP16 gradients stay above
      2^-24;
    * the gradients are unscaled in FP32 by one `mp.unscale`, whose
      `found_inf` becomes a new last result `{mp.found_inf}`;
    * `clip-norm=C` is recorded for `--mp-optimizer`, which scales the
      gradient its update uses by min(1, C / (||g||_2 + 1e-6)) over all
      parameters together (0: off).

    The function records its settings in `mp.loss_scaling`, a
    `#mp.loss_scaling<mode = ..., init_scale = ..., ...>` (mode, initial
    scale, growth and backoff factors, growth interval, clip norm, margin,
    hysteresis) for `--mp-optimizer`, which guards the update with
    `found_inf` and moves the scale with `mp.update_scale` (dynamic mode) or
    `mp.adapt_scale` (adaptive mode).

    `mode=adaptive` measures, in the same reduction as the inf/nan check,
    the largest magnitude of the scaled gradients (`mp.unscale ... amax
    f32`), returned as a last result `f32 {mp.grad_amax}`; the scale
    aims at the largest power of two that keeps it `margin` times below
    f16's largest value (65504), within [1, 2^24]: it grows towards it by
    one power of two a step, and falls to it once `hysteresis` clean steps
    in a row ask for less; a step with inf/nan is skipped and halves the
    scale (backoff-factor), after which the scale does not grow for
    growth-interval clean steps.

    `mode=auto` (the default) is `dynamic` for `dtype=f16` and `none` for
    `dtype=bf16`, whose range equals FP32's, and for `dtype=f32`; any mode
    can be forced.

    Before:

    ```mlir
    func.func @loss_grad(%x: ..., %w: ... {mp.param = "w"})
        -> (f32, tensor<6x3xf32> {mp.grad = "w"}) attributes {mp.gradient_of = @loss}
    ```

    After:

    ```mlir
    func.func @loss_grad(%x: ..., %w: ..., %scale: f32 {mp.loss_scale})
        -> (f32, tensor<6x3xf32> {mp.grad = "w"}, i1 {mp.found_inf})
    ```

    After, with `mode=adaptive`:

    ```mlir
    func.func @loss_grad(%x: ..., %w: ..., %scale: f32 {mp.loss_scale})
        -> (f32, tensor<6x3xf32> {mp.grad = "w"}, i1 {mp.found_inf},
            f32 {mp.grad_amax})
    ```
  }];
  let options = [
    Option<"mode", "mode", "::mlir::mp::LossScalingMode",
           /*default=*/"::mlir::mp::LossScalingMode::Auto",
           "How the loss scale moves", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::LossScalingMode::Auto, "auto",
                 "dynamic for dtype=f16, none otherwise"),
      clEnumValN(::mlir::mp::LossScalingMode::Dynamic, "dynamic",
                 "back off on inf/nan, grow after clean steps"),
      clEnumValN(::mlir::mp::LossScalingMode::Adaptive, "adaptive",
                 "the largest power of two that keeps the measured "
                 "gradient amax margin below f16's maximum"),
      clEnumValN(::mlir::mp::LossScalingMode::Static, "static",
                 "a fixed scale (init-scale)"),
      clEnumValN(::mlir::mp::LossScalingMode::None, "none", "no scaling"))}]>,
    Option<"dtype", "dtype", "::mlir::mp::FloatPrecision",
           /*default=*/"::mlir::mp::FloatPrecision::F16",
           "Type training computes in (chooses mode=auto)",
           TrainingPrecisionValues>,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "Initial (dynamic) or fixed (static) loss scale">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Scale multiplier after growth-interval clean steps">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Scale multiplier after a step with inf/nan">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "Clean steps before the scale grows (adaptive: clean steps after "
           "an overflow before it may grow again)">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Global L2 norm --mp-optimizer clips the update's gradient to "
           "(0: off)">,
    Option<"margin", "margin", "double", /*default=*/"8.0",
           "Adaptive: the scaled gradients' amax is kept this many times "
           "below f16's maximum (>= 1)">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"2",
           "Adaptive: clean steps in a row that must ask for a lower scale "
           "before it falls (>= 1)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::mp::MPDialect"
  ];
}

def MPAddLoss : Pass<"mp-add-loss", "::mlir::ModuleOp"> {
  let summary = "Wrap a model's mp.predict function in an mp.loss function";
  let description = [{
    A model that only predicts (an imported ONNX model, say) gets the loss
    the training pipeline differentiates: `@loss` copies the body of the
    function marked `mp.predict`, which must take the input first and then
    only `mp.param` arguments and return one `tensor<BxCxf32>`, and reduces
    its result against the labels:

    * `cross-entropy`: the mean over the batch of softmax cross-entropy
      against one-hot (or soft) labels;
    * `mse`: the mean over all elements of (y - labels)^2.

    ```mlir
    func.func @predict(%x: tensor<64x64xf32>,
        %w: tensor<64x10xf32> {mp.param = "w"}) -> tensor<64x10xf32>
        attributes {mp.predict}
    // becomes, beside it:
    func.func @loss(%x: tensor<64x64xf32>, %labels: tensor<64x10xf32>,
        %w: tensor<64x10xf32> {mp.param = "w"}) -> f32 attributes {mp.loss}
    ```

    Logits of rank 3 or more (`tensor<BxTxVxf32>`: a language model's
    scores over its vocabulary at every position) take integer targets
    instead, one class id per position (`tensor<BxTxi64>`), as PyTorch's
    `cross_entropy` does: the loss is the mean over the positions whose id
    is not `ignore-index` of `logsumexp(logits[p]) - logits[p, id]`,
    computed in f32 from the logits (no one-hot tensor; the target's score
    is a gather), and 0 when every position is ignored. An id outside
    [0, V) other than `ignore-index` reads the nearest class (clamped): the
    step cannot stop on it.

    A module that already has an `mp.loss` function is left as it is.
  }];
  let options = [
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "Class id of positions the token cross-entropy leaves out">,
    Option<"loss", "loss", "::mlir::mp::LossKind",
           /*default=*/"::mlir::mp::LossKind::CrossEntropy",
           "The loss", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::LossKind::CrossEntropy, "cross-entropy",
                 "softmax cross-entropy, mean over the batch"),
      clEnumValN(::mlir::mp::LossKind::MeanSquaredError, "mse",
                 "mean squared error over all elements"))}]>
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MPOptimizer : Pass<"mp-optimizer", "::mlir::ModuleOp"> {
  let summary = "Build @train_step: gradients, loss-scale guard and an FP32 "
                "optimizer update";
  let description = [{
    From the gradient function made by `--mp-autodiff` (and, optionally,
    `--mp-loss-scaling`), builds one function that runs a whole training
    step:

    ```
    @train_step(<loss arguments>, <optimizer state per parameter>,
                %step: i32, %scale: f32, %growth_tracker: i32)
      -> (<new parameters>, <new optimizer state>, new step, new scale,
          new growth tracker, loss: f32, stepped: i1, grad_norm: f32)
    ```

    * `sgd`: v = momentum * v + (g + weight_decay * w); w -= lr * v
      (one state tensor per parameter, `mp.state = "<name>.momentum"`);
    * `adam` / `adamw`: m, v moments with bias correction from `%step`
      (`<name>.m`, `<name>.v`); `adam` adds weight_decay * w to the
      gradient, `adamw` decays the weight directly.

    Parameters, gradients and state are FP32 master copies; every update op
    carries `mp.precision = #mp.precision<f32>` so `--mp-auto-mixed-precision`
    keeps it
    there. With loss scaling, the update is applied only when `found_inf`
    is false (otherwise parameters, state and step are returned unchanged,
    bit for bit) and the scale moves with `mp.update_scale` (dynamic mode)
    or with `mp.adapt_scale` from the gradients' measured amax (adaptive
    mode; the growth tracker is its hysteresis and cool-down counter).
    Without loss scaling the scale and tracker pass through and `stepped`
    is true.

    `grad_norm` (`mp.grad_norm`) is the global L2 norm of the unscaled
    gradient the update uses, before clipping (inf or nan when it
    overflowed); with the `clip-norm` that `--mp-loss-scaling` recorded,
    the gradient is scaled by min(1, clip / (grad_norm + 1e-6)).

    `accumulate=N` (N >= 2) trains on windows of N micro-batches: a second
    function `@<name>_accumulate` (`mp.accumulation_of = @<name>`) adds a
    micro-batch's f32 gradients to the window's, and `@<name>` (`mp.accumulate
    = N`) takes the last micro-batch and applies the update to the window's
    mean gradient, (sum + g) / N, once. Both take the window's state after
    their other arguments: one f32 sum per parameter (`mp.accumulator =
    "<name>"`), with loss scaling an i32 overflow flag
    (`mp.window_overflow`: a window with an overflow is skipped as a whole)
    and with adaptive scaling the window's amax (`mp.window_amax`). The
    caller keeps the scale fixed across a window and zeroes the window's
    state after each update:

    ```
    @train_step_accumulate(<loss arguments>, %scale: f32, <window state>)
      -> (<new window state>, loss: f32)
    ```
  }];
  let options = [
    Option<"algorithm", "algorithm", "::mlir::mp::OptimizerAlgorithm",
           /*default=*/"::mlir::mp::OptimizerAlgorithm::Sgd",
           "Update rule", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::OptimizerAlgorithm::Sgd, "sgd",
                 "SGD with momentum"),
      clEnumValN(::mlir::mp::OptimizerAlgorithm::Adam, "adam",
                 "Adam (L2 weight decay)"),
      clEnumValN(::mlir::mp::OptimizerAlgorithm::AdamW, "adamw",
                 "Adam with decoupled weight decay"))}]>,
    Option<"learningRate", "lr", "double", /*default=*/"0.05",
           "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 weight decay (decoupled for adamw)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "Adam first-moment decay">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "Adam second-moment decay">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8",
           "Adam denominator epsilon">,
    Option<"stepName", "name", "std::string", /*default=*/"\"train_step\"",
           "Name of the function to build">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step (>= 2 also builds "
           "@<name>_accumulate)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::mp::MPDialect"
  ];
}

def MPFakeQuant : Pass<"mp-fake-quant", "::mlir::ModuleOp"> {
  let summary = "Quantization-aware training: fake-quantize the inputs of "
                "the loss function's int8-eligible contractions";
  let description = [{
    In the `mp.loss` function, each contraction that `--mp-quantize` would
    rewrite to int8 — a `linalg.matmul` (plain, or with B indexed (n, k) as
    PyTorch's nn.Linear exports), a plain `linalg.batch_matmul` or a
    `linalg.conv_2d_nchw_fchw` on f32, with a zero-filled accumulator and an
    `mp.param` argument as its weight — reads its operands through
    `mp.fake_quant`:

    * the weight per output channel (matmul and batch_matmul: B's n
      dimension, one scale across a batched weight's batch; convolution:
      F), with the scale `mp.quant_scale` computes from the current weight
      on every step, as int8 inference does once;
    * the activation per tensor, with an `mp.quant_scale` that names an
      observer, `<weight>.input_amax` (`.2`, `.3`, ... when a weight feeds
      several contractions): `--mp-quant-observers` makes that scale a
      moving average kept as optimizer state, which `mp-run infer
      --precision int8` later reads from the checkpoint.

    Run it before `--mp-autodiff`: the gradient goes through the rounding by
    the clipped straight-through estimator (mp.fake_quant's rule). Products
    of two activations (attention) stay in floating point, as in
    `--mp-quantize`.
    A module without an `mp.loss` function, or one without any eligible
    contraction, is an error.

    Before:

    ```mlir
    %mm = linalg.matmul ins(%x, %w1 : tensor<64x64xf32>, tensor<64x512xf32>)
        outs(%z : tensor<64x512xf32>) -> tensor<64x512xf32>
    ```

    After:

    ```mlir
    %sx = mp.quant_scale %x {observer = "w1.input_amax"} : tensor<64x64xf32> -> tensor<f32>
    %xq = mp.fake_quant %x, %sx : tensor<64x64xf32>, tensor<f32>
    %sw = mp.quant_scale %w1 {axis = 1 : i64} : tensor<64x512xf32> -> tensor<512xf32>
    %wq = mp.fake_quant %w1, %sw {axis = 1 : i64} : tensor<64x512xf32>, tensor<512xf32>
    %mm = linalg.matmul ins(%xq, %wq : tensor<64x64xf32>, tensor<64x512xf32>)
        outs(%z : tensor<64x512xf32>) -> tensor<64x512xf32>
    ```
  }];
  let dependentDialects = ["::mlir::mp::MPDialect"];
  let statistics = [
    Statistic<"numFakeQuantized", "contractions",
              "contractions whose inputs are fake-quantized">
  ];
}

def MPLowerDropout : Pass<"mp-lower-dropout", "::mlir::ModuleOp"> {
  let summary = "Expand mp.dropout: a counter-based random mask in training "
                "steps, the identity elsewhere";
  let description = [{
    In a function with an `mp.step` argument (the training step
    `--mp-optimizer` built), each `mp.dropout` becomes an elementwise
    `linalg.generic` that draws its mask from Philox4x32-10 (Salmon et al.,
    "Parallel random numbers: as easy as 1, 2, 3", SC 2011) inside the
    loop body: counter `(linear index, stream, step, 0)`, key the two
    32-bit halves of `seed`; the element is kept when the first output word
    is at least `round(ratio * 2^32)`, and then multiplied by
    `1 / (1 - ratio)`. Nothing is stored between the forward and the
    backward pass: the backward dropout regenerates the same bits. A
    dropout with ratio 0, and every dropout in a function without a step
    counter (prediction, evaluation), is replaced by its input. A gradient
    accumulation step (`mp.accumulation_of`) with a dropout is an error:
    its micro-batches have no step counter of their own yet.

    Before:

    ```mlir
    func.func @train_step(..., %step: i32 {mp.step}, ...) {
      %y = mp.dropout %x {ratio = 1.000000e-01 : f64, stream = 0 : i64} : tensor<8x64xf32>
    ```

    After: `%y = linalg.generic ... { linalg.index, arith.mului_extended,
    arith.xori ... arith.cmpi uge ... arith.select }`.
  }];
  let options = [
    Option<"seed", "seed", "uint64_t", "0",
           "Key of the random masks (training option dropout-seed)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numMasks", "masks", "dropouts expanded with a random mask">
  ];
}

def MPQuantObservers : Pass<"mp-quant-observers", "::mlir::ModuleOp"> {
  let summary = "Keep the activation scales of quantization-aware training "
                "as moving-average observers in the training step's state";
  let description = [{
    In the training step `--mp-optimizer` built (the function with an
    `mp.step` argument), each `mp.quant_scale` that names an observer gets
    a state argument and result `mp.state = "<observer>"` (a rank-0 f32
    tensor: the running max |x|, 0 before the first step), placed after the
    optimizer's state so the session saves, restores and updates it like
    momentum. Each step updates it as PyTorch's
    MovingAverageMinMaxObserver does (symmetric):

        amax' = amax == 0 ? max|x| : amax + c (max|x| - amax)

    with `c` = `averaging-constant`, and the activation is fake-quantized
    with the scale `amax' / 127` (1 while it is 0). From step
    `freeze-after` on (when positive) the observers keep their value, as
    PyTorch's `disable_observer`. An accumulation step
    (`--mp-optimizer accumulate > 1`) is refused: its micro-batches have no
    state to update.
  }];
  let options = [
    Option<"averagingConstant", "averaging-constant", "double", "0.01",
           "Weight of the newest batch in the moving average (0, 1]">,
    Option<"freezeAfter", "freeze-after", "int64_t", "0",
           "Optimizer steps after which the observers stop moving "
           "(0: never)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numObservers", "observers", "observers threaded as state">
  ];
}

def MPDataParallel : Pass<"mp-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Data-parallel training: the gradient function's gradients "
                "are averaged over the ranks of an MPI job (mpi.allreduce)";
  let description = [{
    For a job of `ranks` processes that each run the same step on their own
    shard of a global batch. In each gradient function (`mp.gradient_of`,
    after `--mp-autodiff` and `--mp-loss-scaling`), the f32 gradients it
    returns (`mp.grad` results), and the loss (its first result), are
    packed into one flat f32 buffer, summed over the ranks by one
    `mpi.allreduce` (MPI_SUM) and divided by `ranks`;
    an `mp.found_inf` result is reduced with MPI_MAX (as an i32, since MPI
    has no i1), so every rank skips the same steps and keeps the same loss
    scale. The optimizer (`--mp-optimizer`, next) then updates identical
    parameters on every rank.

    The module gets `dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">`,
    the ABI upstream's MPI-to-LLVM lowering emits (`--mp-lower-cpu` runs it
    through `--mp-collectives-to-llvm`). The buffers are 1-D and
    contiguous, as that lowering requires. A gradient that is not f32, or a
    module without a gradient function, is an error.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Processes in the job (MPI_Comm_size of MPI_COMM_WORLD): the "
           "summed gradients are divided by it">
  ];
  let dependentDialects = [
    "::mlir::DLTIDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::mpi::MPIDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numReduced", "reduced-gradients",
              "gradients averaged over the ranks">
  ];
}

def MPCalibrate : Pass<"mp-calibrate", "::mlir::ModuleOp"> {
  let summary = "Insert mp.observe probes on the inputs and outputs of every "
                "op INT8 quantization may rewrite";
  let description = [{
    Every eligible op — `linalg.matmul`, `linalg.batch_matmul`, the
    `linalg.conv_2d_*` convolutions and their tosa forms (`tosa.matmul`,
    `tosa.conv2d`, `tosa.depthwise_conv2d`) — on float tensors gets an
    `mp.observe` on each input (weights included) and on its result. A
    probe's id is the value's calibration id (docs/calibration-stats.md:
    `mp.id`, name location, or `<function>/<ordinal>`, computed before
    probes are inserted), so the statistics a run gathers are the ones
    `--mp-quantize` and `--mp-analyze-precision` look up. A value feeding
    several eligible ops in one block is probed once. `--mp-lower-cpu` turns
    the probes into runtime calls; `mp-run infer --calibrate N` runs them
    and writes the statistics file.

    Before:

    ```mlir
    %mm = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x512xf32>)
        outs(%z : tensor<64x512xf32>) -> tensor<64x512xf32>
    ```

    After:

    ```mlir
    %0 = mp.observe %x as "predict/arg0" : tensor<64x64xf32>
    %1 = mp.observe %w as "predict/arg1" : tensor<64x512xf32>
    %mm = linalg.matmul ins(%0, %1 : tensor<64x64xf32>, tensor<64x512xf32>)
        outs(%z : tensor<64x512xf32>) -> tensor<64x512xf32>
    %2 = mp.observe %mm as "predict/1" : tensor<64x512xf32>
    ```
  }];
  let dependentDialects = ["::mlir::mp::MPDialect"];
  let statistics = [
    Statistic<"numProbes", "probes", "mp.observe probes inserted">
  ];
}

def MPQuantize : Pass<"mp-quantize", "::mlir::ModuleOp"> {
  let summary = "INT8 post-training quantization of matmuls and convolutions "
                "from calibration statistics, with sensitivity fallback";
  let description = [{
    Rewrites each `linalg.matmul` (plain, or with B indexed (n, k)),
    `linalg.batch_matmul` whose B is a weight (a constant or an `mp.param`
    argument; attention's products of two activations stay f32) and
    `linalg.conv_2d_nchw_fchw` on f32 tensors (run `--mp-import` first for
    tosa models) to an i8 x i8 -> i32 contraction:

    * activations (the first input): symmetric signed 8-bit, one scale per
      tensor, `scale = T / 127`, where the clipping threshold `T` comes from
      the calibration statistics (`calibration=`) by `method`: `minmax`
      (T = max |x|), `percentile` (the `percentile`-th percentile of the
      |x| histogram) or `entropy` (the threshold minimising the KL
      divergence between the histogram and its 128-level quantized form);
    * weights (the second input): symmetric signed 8-bit, one scale per
      output channel (`per-channel=true`; a batched weight's n dimension,
      shared across its batch) or per tensor. A constant weight
      is quantized at compile time; a weight that is a function argument
      (an `mp.param`) is quantized once, by a generated function
      `@<f>_quantize_weights` (marked `mp.quantize_weights`) that maps the
      f32 weights to `i8` weights and `f32` scales, which `@<f>` then takes
      as arguments (`mp.qweight` / `mp.qscale`) instead of the f32 weight;
      any other weight is quantized inline;
    * the accumulator is i32. When the result's only user is a
      `linalg.generic` that adds a per-output-channel bias to it, the bias
      is quantized to i32 (scale `s_x * s_w`) and becomes the accumulator's
      initial value; the dequantization (`sitofp`, times `s_x * s_w[c]`) is
      fused into that consumer's body. Otherwise a dequantizing
      `linalg.generic` follows the contraction.

    Sensitivity: for each op the pass estimates, from the calibration
    histograms, the relative RMS error that quantizing its inputs causes
    (rounding noise `scale^2 / 12` for values inside the threshold, the
    excess `|x| - T` for clipped values, zeros exact; weights measured from
    their histogram with one per-tensor scale, an upper bound for
    per-channel scales; activation and weight errors added in quadrature).
    An op whose estimate exceeds `max-error` stays in `fallback` precision
    (f32, or f16 inputs with f32 accumulation). First and last layers are
    treated like any other. `report=` writes every decision, with the
    scales, thresholds and estimated errors, as JSON.

    `fallback-ops=` names ops (by result id) that fall back whatever their
    estimate; `mp-run infer --precision int8 --quant-measure` fills it from
    errors it measures against the f32 model on the calibration batches,
    with models compiled with `probe-outputs=true` (a probe on each eligible
    op's f32 result, named by its result id as `--mp-calibrate` names it).

    An eligible op whose activation has no calibration entry is an error
    naming the op and the missing id.

    `mode=int8-dynamic` needs no calibration (the mode of PyTorch's
    `quantize_dynamic`): each activation's scale is computed in the IR from
    the tensor's own `max |x|` on every call (`s_x = max|x| / 127`, 1 for
    an all-zero tensor), so nothing is clipped; weights are quantized as
    above. The sensitivity estimate then has only the weights' error (exact
    for constant weights); ops still fall back by `max-error` on it and by
    `fallback-ops`.

    Before:

    ```mlir
    %mm = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x512xf32>)
        outs(%z : tensor<64x512xf32>) -> tensor<64x512xf32>
    %h = linalg.generic ... ins(%mm, %b : ...) { addf, maximumf } 
    ```

    After:

    ```mlir
    %xq = linalg.generic ... ins(%x) -> tensor<64x64xi8>      // round, clamp
    %bq = linalg.generic ... ins(%b, %scale) -> tensor<512xi32>
    %acc0 = linalg.generic ... ins(%bq) -> tensor<64x512xi32> // bias init
    %acc = linalg.matmul ins(%xq, %wq : tensor<64x64xi8>, tensor<64x512xi8>)
        outs(%acc0 : tensor<64x512xi32>) -> tensor<64x512xi32>
    %h = linalg.generic ... ins(%acc, %b, %scale) { sitofp, mulf, maximumf }
    ```
  }];
  let options = [
    Option<"mode", "mode", "::mlir::mp::QuantizationMode",
           /*default=*/"::mlir::mp::QuantizationMode::Int8",
           "Quantization mode", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::QuantizationMode::Int8, "int8",
                 "signed 8-bit, symmetric, activation scales from "
                 "calibration"),
      clEnumValN(::mlir::mp::QuantizationMode::Int8Dynamic, "int8-dynamic",
                 "signed 8-bit, symmetric, each activation's scale from its "
                 "own max |x| at run time (no calibration)"))}]>,
    Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
           "Calibration statistics file (required for mode=int8; "
           "docs/calibration-stats.md)">,
    Option<"method", "method", "::mlir::mp::QuantizationMethod",
           /*default=*/"::mlir::mp::QuantizationMethod::MinMax",
           "Activation threshold", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::QuantizationMethod::MinMax, "minmax",
                 "max |x|"),
      clEnumValN(::mlir::mp::QuantizationMethod::Percentile, "percentile",
                 "the percentile-th percentile of |x|"),
      clEnumValN(::mlir::mp::QuantizationMethod::Entropy, "entropy",
                 "the threshold of least KL divergence"))}]>,
    Option<"percentile", "percentile", "double", /*default=*/"99.99",
           "Percentile of |x| used by method=percentile (0, 100]">,
    Option<"perChannel", "per-channel", "bool", /*default=*/"true",
           "One weight scale per output channel (else one per tensor)">,
    Option<"maxError", "max-error", "double", /*default=*/"0.05",
           "Largest estimated relative RMS error an op may have in int8; "
           "above it the op falls back">,
    Option<"fallback", "fallback", "::mlir::mp::FloatPrecision",
           /*default=*/"::mlir::mp::FloatPrecision::F32",
           "Precision of ops that fall back", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::FloatPrecision::F32, "f32", "FP32"),
      clEnumValN(::mlir::mp::FloatPrecision::F16, "f16",
                 "f16 inputs, f32 accumulation"))}]>,
    Option<"hoistWeights", "hoist-weights", "bool", /*default=*/"true",
           "Quantize argument weights once in @<f>_quantize_weights instead "
           "of on every call">,
    ListOption<"fallbackOps", "fallback-ops", "std::string",
               "Result ids of eligible ops that fall back whatever their "
               "estimate (e.g. from errors measured by mp-run)">,
    Option<"probeOutputs", "probe-outputs", "bool", /*default=*/"false",
           "Put an mp.observe, named by the op's result id, on the f32 "
           "result of every eligible op (dequantization then stays a "
           "separate op), to measure errors against the f32 model">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write a JSON report of every decision to this path">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::mp::MPDialect", // mp.observe probes (probe-outputs)
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numQuantized", "quantized", "Contractions rewritten to int8">,
    Statistic<"numFallbacks", "fallbacks", "Contractions kept in f32/f16">,
    Statistic<"numOutputProbes", "output-probes", "Probes on results (probe-outputs)">
  ];
}

def MPCheckNumerics : Pass<"mp-check-numerics", "::mlir::ModuleOp"> {
  let summary = "Probe every op's floating-point output for inf, nan and "
                "magnitude";
  let description = [{
    Inserts an `mp.observe` probe after every op that produces a floating-
    point tensor, so a run can find the first op whose output became inf or
    nan or left FP16's range (mp-run `--check-numerics`), or compare an FP32
    and a mixed-precision run op by op (mp-run `compare`). Run it after the
    precision rewrite, so the probes see the values the program computes.

    The probe id names the op for a person reading a report:
    `<function>#<n> <op name> at <location>`, where `n` counts the probed
    ops of the function in order; a conversion the mixed-precision rewrite
    inserted reads `conversion to f16` in place of the op name. Constants,
    `tensor.empty`, fills and reshapes (which copy or view another op's
    values) and existing probes are not probed.

    With `skip-conversions`, conversion-only ops (`arith.extf`/`truncf`
    and `linalg.generic` ops whose body only converts) are neither probed
    nor counted, so an FP32 module and its mixed-precision rewrite give the
    same op the same id.

    Before:

    ```mlir
    func.func @f(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %0 = linalg.matmul ins(%a, %b : ...) outs(%init : ...) -> tensor<4x4xf32>
      return %0 : tensor<4x4xf32>
    }
    ```

    After:

    ```mlir
      %0 = linalg.matmul ins(%a, %b : ...) outs(%init : ...) -> tensor<4x4xf32>
      %1 = mp.observe %0 as "f#0 linalg.matmul at model.mlir:3:8" : tensor<4x4xf32>
      return %1 : tensor<4x4xf32>
    ```
  }];
  let options = [
    Option<"skipConversions", "skip-conversions", "bool", /*default=*/"false",
           "Neither probe nor count conversion-only ops">,
    ListOption<"functions", "functions", "std::string",
               "Probe only these functions (default: all)">
  ];
  let dependentDialects = ["::mlir::mp::MPDialect"];
}

def MPDropZeroAccumulators
    : Pass<"mp-drop-zero-accumulators", "::mlir::func::FuncOp"> {
  let summary = "Write once-written gradients directly instead of adding "
                "them to zeros";
  let description = [{
    `--mp-autodiff` writes each input gradient as `acc + dx` into a
    zero-filled tensor. Where every loop of the `linalg.generic` is parallel
    and its init is indexed by each loop (a permutation), each element is
    written once, so the sum is `0 + dx`: this pass drops the addition
    (and the widening of the accumulator, if any), gives the op the empty
    tensor the fill wrote into, and erases fills left unused. The gradient
    no longer needs a zero-filled buffer and a pass over it. A filled init
    that such an op does not read at all (a forward bias-and-activation
    written into a zero-filled tensor) loses its fill the same way.

    It runs in `--mp-lower-cpu` and `--mp-lower-gpu`, that is after
    `--mp-auto-mixed-precision`, whose choices were made on the accumulating
    form and stay as they were: the results are the same bit for bit,
    except that a gradient of -0 stays -0 (0 + -0 is +0).
  }];
  let statistics = [
    Statistic<"numDropped", "dropped", "Additions of a zero accumulator "
                                       "dropped">
  ];
}

def MPInPlaceUpdates : Pass<"mp-in-place-updates", "::mlir::func::FuncOp"> {
  let summary = "Mark a step whose new parameters and optimizer state may "
                "overwrite the old ones in the same buffers";
  let description = [{
    A training session calls its step with the parameters and optimizer
    state in one set of buffers and receives the new values in another, then
    swaps them: it holds both. This pass runs on buffers (after
    bufferization, before the products become runtime calls) on functions
    whose arguments carry `mp.update_of = i` (this argument receives the new
    value of argument `i`; mp-run's session entries have them). It marks the
    function `mp.in_place_updates` when every such pair may be one buffer:

    - the old buffer is never written;
    - the new one is not read before its first write;
    - after that write the old value is not read, except by the writer
      itself: a linalg op whose iterations each write an element of their
      own (the written map is a permutation), that reads the old argument
      at the element it writes (the optimizer's update, `p' = p - lr * m'`)
      and does not read what it overwrites. The two may be reached through
      identical chains of `memref.expand_shape`/`collapse_shape` (the
      update fused with the gradient norm's partial sums by
      `--mp-fuse-sibling-reductions` runs over expanded views of both).

    A use through a view counts as a use of the buffer; any other op that
    takes either buffer (a call, a pointer) counts as a read and a write.
    The body must be one block. The session then passes the same buffers
    for both sets (about 1.5 GiB less for a transformer block with d_model
    4096 and SGD momentum) and skips the swap. An `mp.update_of` that does
    not name a buffer argument of the same type is an error.
  }];
}

def MPEarlyDealloc : Pass<"mp-early-dealloc", "::mlir::func::FuncOp"> {
  let summary = "Free each buffer right after its last use and allocate it "
                "right before its first";
  let description = [{
    Upstream's ownership-based buffer deallocation
    (`buffer-deallocation-pipeline`) puts every `memref.dealloc` at the end
    of the block that allocates the buffer: in a straight-line training
    step, every activation, gradient and low-precision weight copy stays
    alive until the step returns, so the step's peak is the sum of all its
    buffers. This pass runs after it, on memrefs, and moves

    - each `memref.dealloc` of a `memref.alloc` in the same block to right
      after the buffer's last use in that block, and
    - each `memref.alloc` (static or with dominating sizes) to right before
      its first use,

    so the peak is the largest set of buffers alive at once.

    A use is any use of the buffer or of a value that may alias it: results
    of views (`subview`, `expand_shape`, casts, ...), conservatively every
    memref result of an op that reads it (calls included), block arguments
    of regions it is passed into, and results of the ops that enclose a
    use inside a region (an `scf.for` yielding it); a use nested in a loop
    counts as the loop. A buffer whose pointer leaves memref types
    (`memref.extract_aligned_pointer_as_index`, an
    `unrealized_conversion_cast`, LLVM ops), that is stored or returned,
    or that has another dealloc keeps its dealloc where it is.

    Before:

    ```mlir
    %a = memref.alloc() : memref<64x512xf32>
    %b = memref.alloc() : memref<64x512xf32>
    linalg.generic ... ins(%x) outs(%a)
    linalg.generic ... ins(%a) outs(%b)
    %c = memref.alloc() : memref<64x512xf32>
    linalg.generic ... ins(%b) outs(%c)
    memref.copy %c, %out
    memref.dealloc %a : memref<64x512xf32>
    memref.dealloc %b : memref<64x512xf32>
    memref.dealloc %c : memref<64x512xf32>
    ```

    After (at most two buffers alive, not three):

    ```mlir
    %a = memref.alloc() : memref<64x512xf32>
    linalg.generic ... ins(%x) outs(%a)
    %b = memref.alloc() : memref<64x512xf32>
    linalg.generic ... ins(%a) outs(%b)
    memref.dealloc %a : memref<64x512xf32>
    %c = memref.alloc() : memref<64x512xf32>
    linalg.generic ... ins(%b) outs(%c)
    memref.dealloc %b : memref<64x512xf32>
    memref.copy %c, %out
    memref.dealloc %c : memref<64x512xf32>
    ```

    `--mp-lower-cpu` runs it after bufferization and deallocation.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numDeallocsMoved", "deallocs-moved",
              "Deallocations moved up to the buffer's last use">,
    Statistic<"numAllocsMoved", "allocs-moved",
              "Allocations moved down to the buffer's first use">,
    Statistic<"numKept", "kept", "Deallocations left in place (the buffer "
              "may escape or is freed elsewhere)">
  ];
}

def MPSaveLowPrecision : Pass<"mp-save-low-precision", "::mlir::ModuleOp"> {
  let summary = "Keep values saved for the backward pass in f16/bf16";
  let description = [{
    In a training step (a function with an op marked `mp.seed`: the
    forward pass comes before it, the backward pass after it), a value the
    forward pass makes and the backward pass reads is alive for most of the
    step. After `--mp-auto-mixed-precision`, the big ones are the results of
    contractions (matmuls, convolutions): their inputs are f16/bf16 but
    they accumulate, and so are stored, in f32. The backward pass reads
    them for the activation's derivative (ReLU's mask, for instance).

    For every linalg op before the seed whose floating-point inputs are all
    f16 (or all bf16) and whose f32 result the backward pass reads, this
    pass stores a copy in that input type right after the op (marked
    `mp.saved`, so `mp-fuse-elementwise` does not fold it into a reader)
    and gives it to the backward readers: a `linalg.generic` input is
    widened element by element inside the generic's body, any other reader
    gets an `arith.extf` copy made just before it. The f32 result then dies
    after its forward readers; only the half-size copy crosses the step.

    The saved value was computed from f16/bf16 inputs, so it carries the
    precision of its inputs; rounding it once more to that type costs one
    rounding of the same size. Returned values and values computed in f32 from f32 inputs (the
    loss, softmax, reductions, everything the rewrite keeps in f32) are not
    touched. Run it after `--mp-auto-mixed-precision`; `mp-run train` does
    for f16 and bf16.

    Before (the MLP's first layer; `%mm` is read again by the backward
    pass):

    ```mlir
    %mm = linalg.matmul ins(%x16, %w16 : tensor<64x64xbf16>, tensor<64x512xbf16>)
        outs(%z : tensor<64x512xf32>) -> tensor<64x512xf32>
    %h = linalg.generic ... ins(%mm, %b ...) { addf, maximumf, truncf }
    %seed = arith.constant {mp.seed} 1.0 : f32
    ...
    %dpre = linalg.generic ... ins(%mm, %b, %dh : tensor<64x512xf32>, ...) {
    ^bb0(%m: f32, %c: f32, %g: f32, %o: bf16):
      %s = arith.addf %m, %c : f32
      ...
    ```

    After:

    ```mlir
    %mm = linalg.matmul ... -> tensor<64x512xf32>
    %saved = linalg.generic ... ins(%mm) outs(... tensor<64x512xbf16>)
        attrs = {mp.saved} { truncf }
    %h = linalg.generic ... ins(%mm, %b ...) { addf, maximumf, truncf }
    ...
    %dpre = linalg.generic ... ins(%saved, %b, %dh : tensor<64x512xbf16>, ...) {
    ^bb0(%m16: bf16, %c: f32, %g: f32, %o: bf16):
      %m = arith.extf %m16 : bf16 to f32
      %s = arith.addf %m, %c : f32
      ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numSaved", "saved", "Values saved for the backward pass in "
              "f16/bf16">,
    Statistic<"numBytesSaved", "bytes-saved", "Bytes no longer held across "
              "the step">
  ];
}

def MPConvertWeightsOnce : Pass<"mp-convert-weights-once", "::mlir::ModuleOp"> {
  let summary = "Convert f32 weights to f16/bf16 once, in a function of "
                "their own, instead of on every inference call";
  let description = [{
    After `--mp-auto-mixed-precision`, a function marked `mp.predict` converts
    each f32 weight (an argument marked `mp.param`) to f16/bf16 on every
    call: each call pays the conversion and holds the low-precision copy
    next to the f32 weight. This pass moves every such conversion (an
    elementwise `linalg.generic` that only truncates the whole argument)
    into a new function `@<f>_convert_weights` that takes the f32 weights
    and returns the copies, marks `<f>` with
    `mp.convert_weights = @<f>_convert_weights`, and gives `<f>` the copies
    as new arguments (marked `mp.converted = "<param>"`, like the results
    that make them). f32 weights `<f>` no longer reads (all but the biases
    the rewrite keeps in f32, typically) are dropped from it.

    A runtime calls `@<f>_convert_weights` once when it binds the weights
    and keeps only the copies: `mp-run infer` with an InferSession does.
    A weight converted to two different types keeps its second conversion
    inline.

    Before:

    ```mlir
    func.func @predict(%x: tensor<64x64xf32>,
        %w1: tensor<64x512xf32> {mp.param = "w1"}, ...) -> ... attributes {mp.predict} {
      %w1h = linalg.generic ... ins(%w1 : tensor<64x512xf32>)
          outs(%e : tensor<64x512xbf16>) { truncf }
      %mm = linalg.matmul ins(%xh, %w1h : ...) ...
    ```

    After:

    ```mlir
    func.func @predict(%x: tensor<64x64xf32>, ...,
        %w1h: tensor<64x512xbf16> {mp.converted = "w1"}) -> ...
        attributes {mp.convert_weights = @predict_convert_weights, mp.predict} {
      %mm = linalg.matmul ins(%xh, %w1h : ...) ...
    }
    func.func @predict_convert_weights(%w1: tensor<64x512xf32> {mp.param = "w1"}, ...)
        -> (tensor<64x512xbf16> {mp.converted = "w1"}, ...) {
      %w1h = linalg.generic ... { truncf }
      return %w1h, ...
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numConverted", "converted", "Weights converted once">,
    Statistic<"numBytesPerCall", "bytes-per-call",
              "Bytes of copies no longer made on every call">
  ];
}

//===----------------------------------------------------------------------===//
// A session's step: entries that host code calls (mp-session-train,
// mp-session-infer run these; docs/passes.md)
//===----------------------------------------------------------------------===//

def MPKeepF32 : Pass<"mp-keep-f32", "::mlir::ModuleOp"> {
  let summary = "Pin the ops at the given source locations to f32";
  let description = [{
    Sets `mp.precision = #mp.precision<f32>` on every op that produces
    values and stands at one of `locations`:
    - `FILE:LINE:COL` as `--mp-check-numerics` names it (FILE spelled as in
      the model or another path to the same file) or `LINE:COL` in any file;
    - a module path or node name, as `--mp-check-numerics` names an op with
      a named location (`loc("features.3.block.1"(...))` from the PyTorch
      frontend, an ONNX node's name): the ops whose location carries that
      name, and for a module path every op inside the module too
      (`features.3` takes `features.3.block.1`, not `features.30`);
    - `NAME at FILE:LINE:COL`, as the precision report's `loc` prints a
      named location: the ops with both.
    Autodiff then pins the op's derivative too (it keeps the location), and
    `--mp-auto-mixed-precision` keeps both in f32. This is how
    `mp-run --keep-f32` and a session's precision repair keep an op in f32.
    A location no op stands at is an error that says so.
  }];
  let options = [
    ListOption<"locations", "locations", "std::string",
               "Source locations (FILE:LINE:COL, LINE:COL, a module path or "
               "node name, or NAME at FILE:LINE:COL) of the ops to keep in "
               "f32">
  ];
  let dependentDialects = ["::mlir::mp::MPDialect"];
}

def MPTrainEntries : Pass<"mp-train-entries", "::mlir::ModuleOp"> {
  let summary = "Add the entries host code calls a training step through";
  let description = [{
    On a module after `--mp-train-pipeline` (a `@train_step(x, labels,
    parameters..., state..., scalars...)`), checks the step's signature
    (x: a static tensor of rank 2 or more, labels: static `BxC`, the same
    batch; every `mp.param` argument a static f32 tensor) and adds
    functions marked `mp.entry` that take and write memrefs (tensors
    become memrefs, scalars 0-d memrefs, i1 an i32), so that host code owns
    every buffer:

    - `@mp_train_entry(args..., results...)` calls `@train_step`; each
      result that is a new parameter or state value is marked
      `mp.update_of = <index of the argument it replaces>`
      (`--mp-in-place-updates` may then write it in place);
    - with `accumulate` > 1, `@mp_accumulate_entry` calls
      `@train_step_accumulate` (its new sums marked likewise);
    - with a function marked `mp.predict`, `@mp_predict_entry`; with
      `predict-weight-copies`, the prediction first goes through
      `--mp-convert-weights-once` (on a copy, the step keeps calling the
      original) and `@mp_predict_weights_entry` makes its 16-bit weights.

    Each entry's arguments carry the callee's argument attributes and then
    its result attributes (`mp.param`, `mp.state`, `mp.converted`), so that
    a session reads the parameters, the optimizer state and the weight
    copies from the entries alone. `--mp-inline-entries` comes next.
  }];
  let options = [
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step (the step's --mp-optimizer "
           "accumulate): above 1, also @mp_accumulate_entry">,
    Option<"predictWeightCopies", "predict-weight-copies", "bool",
           /*default=*/"false",
           "The prediction entry reads 16-bit weight copies that "
           "@mp_predict_weights_entry makes (a CPU session without probes)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def MPKeepPrediction : Pass<"mp-keep-prediction", "::mlir::ModuleOp"> {
  let summary = "Keep the prediction alone: erase the model's other functions";
  let description = [{
    The first step of an inference session (`mp-session-infer`): the first
    function marked `mp.predict` stays, every other function with a body
    (the loss, a training step) is erased, so that the passes after it
    rewrite and compile the prediction only. Declarations stay. A module
    without an `mp.predict` function is an error.
  }];
}

def MPInferEntries : Pass<"mp-infer-entries", "::mlir::ModuleOp"> {
  let summary = "Add the entries host code calls a prediction through";
  let description = [{
    Adds `@mp_infer_predict_entry`, marked `mp.entry`, that calls the
    function marked `mp.predict` on memrefs (as `--mp-train-entries`), and,
    when that function names a weight function (`mp.quantize_weights` or
    `mp.convert_weights`), `@mp_infer_weights_entry` calling it. Checks the
    prediction's signature first: static tensors only, `x` of rank 2 or
    more, one `BxC` result, every argument after `x` a parameter.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def MPInlineEntries : Pass<"mp-inline-entries", "::mlir::ModuleOp"> {
  let summary = "Inline what the entries call; drop what no entry uses";
  let description = [{
    Every defined function not marked `mp.entry` becomes private, then the
    inliner and symbol DCE run: the entries compute their results in the
    caller's buffers (bufferization writes them there directly and needs
    no run-time ownership checks of returned buffers, host code the GPU
    lowering cannot keep), and the model's own functions are not compiled
    a second time (they were more than half of a transformer block's code).
  }];
}

def MPKeepStepWeightCopies
    : Pass<"mp-keep-step-weight-copies", "::mlir::ModuleOp"> {
  let summary = "Keep 16-bit weight copies between training steps";
  let description = [{
    On the inlined `@mp_train_entry` of a bf16/f16 step (after
    `--mp-train-entries` and `--mp-inline-entries`): each parameter that the
    step converts to 16 bits once, and whose new value an all-parallel
    generic makes, is read from a new argument holding that copy, and the
    generic also writes the next step's copy into a second new argument
    (marked `mp.update_of` the first). Both new arguments are marked
    `mp.copy_of = "<parameter>"`; they come last: every copy read, then
    every copy written. Adds `@mp_train_copies_entry(parameters...,
    copies...)` that makes the copies from the parameters (the same
    conversion). One pass over the f32 weights a step fewer; the results
    are the same bit for bit. A step with no such parameter is unchanged.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numCopies", "copies", "Weights whose 16-bit copy is kept">
  ];
}

#endif // MP_TRANSFORMS_PASSES_TD
