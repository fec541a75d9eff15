// Options and diagnostics of --mp-auto-mixed-precision.
// RUN: mp-opt %s --mp-auto-mixed-precision=keep-signature=false | FileCheck %s --check-prefix=SIG
// RUN: mp-opt %s --mp-auto-mixed-precision="summary report=%t.json" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: not mp-opt %s --mp-auto-mixed-precision=dtype=fp8 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not mp-opt %s --mp-auto-mixed-precision=warn-reduction-size=0 2>&1 | FileCheck %s --check-prefix=WARNSIZE
// RUN: mp-opt %s --mp-auto-mixed-precision=warn-reduction-size=8 --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOWARN --allow-empty

// Arguments used only by contractions take f16 when the signature may
// change; the f32 result stays.
// SIG-LABEL: func.func @sig
// SIG-SAME: (%[[X:.*]]: tensor<8x16xf16>, %[[W:.*]]: tensor<16x4xf16>, %[[ACC:.*]]: tensor<8x4xf32>) -> tensor<8x4xf32>
// SIG-NEXT: %[[R:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<8x16xf16>, tensor<16x4xf16>) outs(%[[ACC]] : tensor<8x4xf32>)
// SIG-NEXT: return %[[R]]
func.func @sig(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %acc: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// SUMMARY: remark: mp-auto-mixed-precision (f16): 1 allow, 0 infer, 0 clear, 0 deny ops; 1 ops demoted, 2 casts inserted (1152 bytes converted), 0 conversions folded into neighbours
// REPORT: "rewrite": {
// REPORT-NEXT: "bytes_converted": 1152,
// REPORT-NEXT: "casts_inserted": 2,
// REPORT-NEXT: "conversions_folded": 0,
// REPORT-NEXT: "ops_demoted": 1
// DTYPE: for the --dtype option: Cannot find option named 'fp8'!
// WARNSIZE: error: warn-reduction-size must be at least 1, got 0
// Contractions accumulate in f32, so even a small limit warns about nothing.
// NOWARN-NOT: warning

