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

    * dynamic loss scaling for FP16 training (`mp.scale_loss`, `mp.unscale`,
      `mp.update_scale`), written as explicit IR so that the skipped step and
      the scale update can be seen, tested and lowered like any other code;
    * calibration probes for INT8 quantization (`mp.observe`);
    * attributes that record the precision decided for each op
      (`#mp.class<...>`, `#mp.decision<...>`).

    Every op lowers to upstream `arith`, `linalg` and `tensor` with
    `--convert-mp-to-upstream`, so modules that use them run with upstream
    tools.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Folded loss-scale state is materialized as arith.constant.
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class MP_Op<string mnemonic, list<Trait> traits = []>
    : Op<MP_Dialect, mnemonic, traits>;

#endif // MP_DIALECT_MP_IR_MPDIALECT_TD
