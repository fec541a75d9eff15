//===- MPAttrs.td - mp attributes and enums ----------------*- tablegen -*-===//
//
// The enums and attributes that passes hand each other: precision decisions,
// the user's precision override, the loss-scaling settings, and the choices
// pass options offer.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPATTRS_TD
#define MP_DIALECT_MP_IR_MPATTRS_TD

include "mp/Dialect/MP/IR/MPDialect.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def MP_PrecisionClass : I32EnumAttr<"PrecisionClass",
    "how an op's precision may be chosen", [
  I32EnumAttrCase<"Allow", 0, "allow">,
  I32EnumAttrCase<"Infer", 1, "infer">,
  I32EnumAttrCase<"Clear", 2, "clear">,
  I32EnumAttrCase<"Deny", 3, "deny">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
  let description = [{
    * `allow`: compute-bound, gains from low precision (contractions);
    * `infer`: low precision only where its float inputs are already low
      (elementwise arithmetic, activations, bias add);
    * `clear`: precision-neutral data movement (reshape, transpose, slice);
    * `deny`: numerically sensitive or unknown; stays FP32.
  }];
}

def MP_FloatPrecision : I32EnumAttr<"FloatPrecision",
    "a floating-point type an op computes in", [
  I32EnumAttrCase<"F32", 0, "f32">,
  I32EnumAttrCase<"F16", 1, "f16">,
  I32EnumAttrCase<"BF16", 2, "bf16">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
  let description = [{
    The user's per-op override (`mp.precision`), the type the mixed-precision
    passes lower to (`dtype=`; `f32` in `--mp-train-pipeline` means no
    mixed precision) and the precision INT8 fallbacks run in.
  }];
}

def MP_LossScalingMode : I32EnumAttr<"LossScalingMode",
    "how the loss scale moves", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Static", 1, "static">,
  I32EnumAttrCase<"Dynamic", 2, "dynamic">,
  I32EnumAttrCase<"Auto", 3, "auto">,
  I32EnumAttrCase<"Adaptive", 4, "adaptive">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
  let description = [{
    * `none`: no scaling;
    * `static`: a fixed scale;
    * `dynamic`: the scale backs off on inf/nan and grows after clean steps;
    * `adaptive`: the scale is set from the largest finite gradient
      magnitude each step measures (`mp.adapt_scale`), and backs off on
      inf/nan;
    * `auto`: only as a pass option: `dynamic` for f16, `none` otherwise.
  }];
}

def MP_OptimizerAlgorithm : I32EnumAttr<"OptimizerAlgorithm",
    "the update --mp-optimizer builds", [
  I32EnumAttrCase<"Sgd", 0, "sgd">,
  I32EnumAttrCase<"Adam", 1, "adam">,
  I32EnumAttrCase<"AdamW", 2, "adamw">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
}

def MP_LossKind : I32EnumAttr<"LossKind",
    "the loss --mp-add-loss wraps a model's mp.predict function in", [
  I32EnumAttrCase<"CrossEntropy", 0, "cross-entropy">,
  I32EnumAttrCase<"MeanSquaredError", 1, "mse">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
}

def MP_QuantizationMode : I32EnumAttr<"QuantizationMode",
    "the integer type --mp-quantize quantizes to", [
  I32EnumAttrCase<"Int8", 0, "int8">,
  I32EnumAttrCase<"Int8Dynamic", 1, "int8-dynamic">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
}

def MP_QuantizationMethod : I32EnumAttr<"QuantizationMethod",
    "how --mp-quantize picks an activation's clipping threshold", [
  I32EnumAttrCase<"MinMax", 0, "minmax">,
  I32EnumAttrCase<"Percentile", 1, "percentile">,
  I32EnumAttrCase<"Entropy", 2, "entropy">
]> {
  let cppNamespace = "::mlir::mp";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def MP_PrecisionAttr : EnumAttr<MP_Dialect, MP_FloatPrecision, "precision"> {
  let summary = "the type an op must compute in, set by the user";
  let description = [{
    An op's `mp.precision` wins over every rule of the precision analysis
    (`--mp-optimizer` marks its FP32 master-weight updates with it).

    Example: `linalg.matmul {mp.precision = #mp.precision<f32>} ...`
  }];
  let assemblyFormat = "`<` $value `>`";
}

def MP_PrecisionDecisionAttr : AttrDef<MP_Dialect, "PrecisionDecision"> {
  let mnemonic = "decision";
  let summary = "precision class of an op and the type it computes in";
  let description = [{
    The analysis' verdict for one op: its class and the floating-point type
    its arithmetic runs in (`f16`, `bf16` or `f32`). Contractions marked
    `f16` or `bf16` still accumulate in `f32`. The class is what the rules
    said; the type is the decision, which a user override
    (`mp.precision`) may set against the class.

    Example: `linalg.matmul {mp.decision = #mp.decision<allow, f16>} ...`
  }];
  let parameters = (ins
    EnumParameter<MP_PrecisionClass>:$precisionClass,
    "::mlir::Type":$computeType);
  let assemblyFormat = "`<` $precisionClass `,` $computeType `>`";
  let genVerifyDecl = 1;
}

// A double (as an APFloat, which hashes) written as an MLIR float literal
// (65536.0, 5.000000e-01).
def MP_F64Parameter : APFloatParameter<"a 64-bit float"> {
  let parser = [{[&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }()}];
  let printer = "$_printer.printFloat($_self)";
}

// The same, optional: absent from the text and std::nullopt when unset.
def MP_OptionalF64Parameter
    : OptionalParameter<"std::optional<::llvm::APFloat>", "a 64-bit float"> {
  let parser = [{[&]() -> ::mlir::FailureOr<std::optional<::llvm::APFloat>> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return std::optional<::llvm::APFloat>(::llvm::APFloat(value));
  }()}];
  let printer = "$_printer.printFloat(*$_self)";
}

def MP_LossScalingAttr : AttrDef<MP_Dialect, "LossScaling"> {
  let mnemonic = "loss_scaling";
  let summary = "the loss-scaling settings applied to a gradient function";
  let description = [{
    `--mp-loss-scaling` records on the gradient function how it scaled it;
    `--mp-optimizer` reads the mode (whether a scale argument and a
    `found_inf` result exist, whether `mp.update_scale` or, in adaptive
    mode, `mp.adapt_scale` moves the scale) and the scaler's factors and
    interval; `margin` and `hysteresis`, the adaptive scaler's (see
    `mp.adapt_scale`), are recorded in adaptive mode and only there.

    Example:

    ```mlir
    func.func @loss_grad(...) attributes {mp.loss_scaling =
        #mp.loss_scaling<mode = adaptive, init_scale = 65536.0,
                         growth_factor = 2.0, backoff_factor = 0.5,
                         growth_interval = 2000, clip_norm = 0.0,
                         margin = 8.0, hysteresis = 2>}
    ```
  }];
  let parameters = (ins
    EnumParameter<MP_LossScalingMode>:$mode,
    MP_F64Parameter:$init_scale,
    MP_F64Parameter:$growth_factor,
    MP_F64Parameter:$backoff_factor,
    "int64_t":$growth_interval,
    MP_F64Parameter:$clip_norm,
    MP_OptionalF64Parameter:$margin,
    OptionalParameter<"std::optional<int64_t>">:$hysteresis);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // MP_DIALECT_MP_IR_MPATTRS_TD
