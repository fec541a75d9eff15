// Options and overrides of --mp-analyze-precision.
// RUN: mp-opt %s --mp-analyze-precision="allow-ops=linalg.exp deny-ops=linalg.batch_matmul" | FileCheck %s --check-prefix=OVERRIDE
// RUN: mp-opt %s --mp-analyze-precision=dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %s --mp-analyze-precision="calibration=%S/Inputs/calibration.json" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=RANGE
// RUN: mp-opt %s --mp-analyze-precision="dtype=bf16 calibration=%S/Inputs/calibration.json" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=RANGE-BF16
// RUN: mp-opt %s --mp-analyze-precision="report=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

func.func @model(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %ba: tensor<2x8x16xf32>,
                 %bb: tensor<2x16x4xf32>, %acc: tensor<8x4xf32>, %bacc: tensor<2x8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<8x4xf32>
  // OVERRIDE: linalg.exp {mp.decision = #mp.decision<allow, f16>}
  // BF16: linalg.exp {mp.decision = #mp.decision<deny, f32>}
  %0 = linalg.exp ins(%acc : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  // BF16: linalg.matmul {mp.decision = #mp.decision<allow, bf16>}
  %1 = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  // OVERRIDE: linalg.batch_matmul {mp.decision = #mp.decision<deny, f32>}
  %2 = linalg.batch_matmul ins(%ba, %bb : tensor<2x8x16xf32>, tensor<2x16x4xf32>) outs(%bacc : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // The user's attribute wins over every rule and option.
  // OVERRIDE: linalg.matmul {mp.decision = #mp.decision<deny, f32>, mp.precision = #mp.precision<f32>}
  %3 = linalg.matmul {mp.precision = #mp.precision<f32>} ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  // OVERRIDE: linalg.exp {mp.decision = #mp.decision<allow, bf16>, mp.precision = #mp.precision<bf16>}
  %4 = linalg.exp {mp.precision = #mp.precision<bf16>} ins(%acc : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>

  // Range-aware (f16 only): |x| beyond the safe range or mostly below f16's
  // normal range keeps the producer and its consumers in f32.
  %big = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32> loc("big")
  // RANGE: linalg.matmul {mp.decision = #mp.decision<deny, f32>} {{.*}} loc("big")
  // RANGE-BF16: linalg.matmul {mp.decision = #mp.decision<allow, bf16>} {{.*}} loc("big")
  %tiny = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32> loc("tiny")
  // RANGE: linalg.matmul {mp.decision = #mp.decision<deny, f32>} {{.*}} loc("tiny")
  %fine = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32> loc("fine")
  // RANGE: linalg.matmul {mp.decision = #mp.decision<allow, f16>} {{.*}} loc("fine")
  // The consumer of a too-large value is kept in f32 too.
  // RANGE: linalg.add {mp.decision = #mp.decision<deny, f32>} {{.*}} loc("consumer")
  %c = linalg.add ins(%big, %fine : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32> loc("consumer")
  return %0, %1, %2, %3, %4, %c : tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// REPORT: "dtype": "f16"
// REPORT: "class": "deny"
// REPORT-NEXT: "decision": "f32"
// REPORT-NEXT: "function": "model"
// REPORT-NEXT: "loc": "{{.*}}options.mlir:15:8"
// REPORT-NEXT: "op": "linalg.exp"
// REPORT-NEXT: "reason": "math.exp is numerically sensitive; kept in f32"
// REPORT: "class": "allow"
// REPORT-NEXT: "decision": "f16"
// REPORT-NEXT: "function": "model"
// REPORT-NEXT: "loc": "{{.*}}options.mlir:17:8"
// REPORT-NEXT: "op": "linalg.matmul"
// REPORT-NEXT: "reason": "contraction: low-precision inputs, f32 accumulation"
// REPORT: "reason": "user attribute mp.precision = #mp.precision<f32>"
// REPORT: "decision": "bf16"
// REPORT: "reason": "user attribute mp.precision = #mp.precision<bf16>"
// REPORT: "class": "infer"
// REPORT-NEXT: "decision": "f32"
// REPORT-NEXT: "function": "model"
// REPORT-NEXT: "loc": "consumer"
// REPORT-NEXT: "op": "linalg.add"
// REPORT-NEXT: "reason": "elementwise arith.addf follows its inputs; f32: converting would move more bytes than running low saves (min-cut)"
// REPORT: "totals": {
// REPORT-NEXT: "class": {
// REPORT-NEXT: "allow": 5,
// REPORT-NEXT: "clear": 0,
// REPORT-NEXT: "deny": 3,
// REPORT-NEXT: "infer": 1
// REPORT: "decision": {
// REPORT-NEXT: "bf16": 1,
// REPORT-NEXT: "f16": 5,
// REPORT-NEXT: "f32": 3

// A lower f16-safe-max turns a measured range into a reason to stay f32.
// RUN: mp-opt %s --mp-analyze-precision="calibration=%S/Inputs/calibration.json f16-safe-max=2" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=SAFEMAX
// SAFEMAX: linalg.matmul {mp.decision = #mp.decision<deny, f32>} {{.*}} loc("fine")
