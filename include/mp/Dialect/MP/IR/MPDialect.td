//===- MPDialect.td - the mp dialect -----------------------*- tablegen -*-===//
//
// The mp dialect holds what upstream MLIR lacks for mixed-precision training
// and inference: loss scaling, calibration probes and precision decisions.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPDIALECT_TD
#define MP_DIALECT_MP_IR_MPDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def MP_Dialect : Dialect {
  let name = "mp";
  let cppNamespace = "::mlir::mp";
  let summary = "Automatic mixed precision: loss scaling, calibration probes, "
                "precision decisions";
  let description = [{
    The `mp` dialect carries the parts of a mixed-precision program that
    upstream MLIR has no ops for:

    * dynamic and adaptive loss scaling for FP16 training (`mp.scale_loss`,
      `mp.unscale`, `mp.update_scale`, `mp.adapt_scale`), written as explicit IR so that the skipped step and
      the scale update can be seen, tested and lowered like any other code;
    * calibration probes for INT8 quantization (`mp.observe`);
    * attributes that record the precision decided for each op
      (`#mp.decision<...>`) or forced by the user (`#mp.precision<...>`);
    * the contract between the training passes and the runtime: discardable
      `mp.*` attributes on functions, arguments, results and ops, each with
      one spelling and one type, verified by the dialect wherever it
      appears (`#mp.loss_scaling<...>`, role markers, parameter names).

    Every op lowers to upstream `arith`, `linalg` and `tensor` with
    `--mp-convert-to-upstream`, so modules that use them run with upstream
    tools.
  }];
  let useDefaultAttributePrinterParser = 1;
  // The passes' contract: each name is spelled here once; MPDialect.cpp
  // verifies the value wherever the name appears.
  let discardableAttrs = (ins
    // Functions.
    "::mlir::UnitAttr":$loss,
    "::mlir::UnitAttr":$predict,
    "::mlir::FlatSymbolRefAttr":$gradient_of,
    "::mlir::mp::LossScalingAttr":$loss_scaling,
    "::mlir::FlatSymbolRefAttr":$quantize_weights,
    "::mlir::FlatSymbolRefAttr":$convert_weights,
    "::mlir::UnitAttr":$in_place_updates,
    "::mlir::FlatSymbolRefAttr":$accumulation_of,
    "::mlir::IntegerAttr":$accumulate,
    // A session entry (--mp-train-entries, --mp-infer-entries): host code
    // calls it on buffers; its first `entry` arguments are inputs, the rest
    // the buffers its results are written to. --mp-inline-entries keeps
    // only entries public.
    "::mlir::IntegerAttr":$entry,
    // The CPU lowering's parallel loops (--mp-parallelize-loops): a loop's
    // outlined body and the declaration its launches call.
    "::mlir::UnitAttr":$parallel_body,
    "::mlir::FlatSymbolRefAttr":$parallel_launch,
    // On a body: positions of its LLVM arguments (memref descriptors
    // expanded) that point to a buffer no other argument reaches.
    "::mlir::DenseI64ArrayAttr":$parallel_noalias,
    // Arguments and results: a model's named inputs and outputs (the names
    // an imported ONNX graph gives them), parameters and what is made from
    // them.
    "::mlir::StringAttr":$input,
    "::mlir::StringAttr":$output,
    "::mlir::StringAttr":$param,
    // A parameter's starting value (an imported model's weights); sessions
    // start from it instead of their initialisation scheme.
    "::mlir::DenseElementsAttr":$initial_value,
    "::mlir::StringAttr":$grad,
    "::mlir::StringAttr":$state,
    "::mlir::StringAttr":$qweight,
    "::mlir::StringAttr":$qscale,
    "::mlir::StringAttr":$converted,
    "::mlir::IntegerAttr":$update_of,
    "::mlir::StringAttr":$accumulator,
    // On a training entry's argument: the 16-bit copy of this parameter
    // that the step reads (--mp-keep-step-weight-copies).
    "::mlir::StringAttr":$copy_of,
    // Roles of the training step's scalars.
    "::mlir::UnitAttr":$step,
    "::mlir::UnitAttr":$loss_scale,
    "::mlir::UnitAttr":$growth_tracker,
    "::mlir::UnitAttr":$stepped,
    "::mlir::UnitAttr":$found_inf,
    "::mlir::UnitAttr":$grad_amax,
    "::mlir::UnitAttr":$grad_norm,
    "::mlir::UnitAttr":$window_overflow,
    "::mlir::UnitAttr":$window_amax,
    // Ops.
    "::mlir::UnitAttr":$seed,
    "::mlir::UnitAttr":$saved,
    "::mlir::UnitAttr":$parallel_chunk,
    "::mlir::mp::FloatPrecisionAttr":$precision,
    "::mlir::mp::PrecisionDecisionAttr":$decision,
    "::mlir::StringAttr":$id
  );
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  // Folded loss-scale state is materialized as arith.constant.
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class MP_Op<string mnemonic, list<Trait> traits = []>
    : Op<MP_Dialect, mnemonic, traits>;

#endif // MP_DIALECT_MP_IR_MPDIALECT_TD
