//===- MPAttrs.td - mp precision attributes ----------------*- tablegen -*-===//
//
// Attributes that record the precision analysis' decisions on ops.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPATTRS_TD
#define MP_DIALECT_MP_IR_MPATTRS_TD

include "mp/Dialect/MP/IR/MPDialect.td"
include "mlir/IR/EnumAttr.td"

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

def MP_PrecisionClassAttr : EnumAttr<MP_Dialect, MP_PrecisionClass, "class"> {
  let summary = "precision class of an op";
  let description = [{
    The class the precision analysis gave an op.

    Example: `linalg.matmul {mp.class = #mp.class<allow>} ...`
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

#endif // MP_DIALECT_MP_IR_MPATTRS_TD
