//===- Passes.td - mp lowering passes ----------------------*- tablegen -*-===//

#ifndef MP_CONVERSION_PASSES_TD
#define MP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMPToUpstream : Pass<"convert-mp-to-upstream"> {
  let summary = "Lower mp ops to upstream arith, linalg and tensor";
  let description = [{
    Rewrites every `mp` op into upstream ops so a module that uses them can
    be bufferized, lowered and executed with upstream tools alone:

    * `mp.scale_loss` becomes `arith.mulf` (a `linalg.generic` on tensors);
    * `mp.unscale` becomes one `linalg.generic` per gradient that multiplies
      by `1 / scale` in FP32, and one reduction per gradient that ORs
      "|x| is not below +inf" (true for inf and nan) into `found_inf`;
    * `mp.update_scale` becomes `arith.select` chains over the state machine;
    * `mp.observe` is dropped (its input is forwarded). The runtime's
      calibration lowering records statistics instead.

    Before:

    ```mlir
    %s, %t = mp.update_scale %scale, %tracker, %found_inf : i32
    ```

    After:

    ```mlir
    %grown = arith.addi %tracker, %c1_i32 : i32
    %grow = arith.cmpi sge, %grown, %c2000_i32 : i32
    %up = arith.mulf %scale, %cst_2 : f32
    %up_clamped = arith.minimumf %up, %cst_max : f32
    ...
    %s = arith.select %found_inf, %down_clamped, %clean_scale : f32
    %t = arith.select %found_inf, %c0_i32, %clean_tracker : i32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numOpsLowered", "ops-lowered", "mp ops lowered">
  ];
}

def ConvertContractionsToRuntime
    : Pass<"mp-contractions-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Replace matrix products on buffers with calls to libmprt's "
                "mprt_gemm (oneDNN)";
  let description = [{
    Runs after bufferization. Every linalg op on memrefs that is a matrix
    product — `linalg.matmul` (with transposed operands too) or a
    `linalg.generic` with one reduction loop and a multiply-add body, as
    `--mp-autodiff` emits for gradients — whose inputs are both f32, f16 or
    bf16, whose accumulator is f32 and whose rows are contiguous, becomes a
    call

    ```mlir
    func.call @mprt_gemm(%a, %lda, %b, %ldb, %c, %ldc, %m, %n, %k, %flags,
                         %type) : (i64, ..., i32, i32) -> i32
    ```

    passing aligned base pointers plus offsets as integers. Other
    contractions stay loops. The call accumulates into C, as the linalg op
    does. The program must be linked (or JIT-resolved) with libmprt.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let statistics = [
    Statistic<"numCalls", "gemm-calls", "Contractions replaced by mprt_gemm">
  ];
}

#endif // MP_CONVERSION_PASSES_TD
