// Every diagnostic of the precision analysis' options and overrides.
// RUN: not mp-opt %s --mp-analyze-precision=dtype=f8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: unknown dtype 'f8': expected f16 or bf16
// RUN: not mp-opt %s --mp-analyze-precision="allow-ops=linalg.exp deny-ops=linalg.exp" 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: op 'linalg.exp' is named in both allow-ops and deny-ops
// RUN: not mp-opt %s --mp-analyze-precision=f16-safe-max=70000 2>&1 | FileCheck %s --check-prefix=SAFE
// SAFE: error: f16-safe-max must lie in (0, 65504], got 70000
// RUN: not mp-opt %s --mp-analyze-precision=calibration=%S/Inputs/missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: cannot read calibration statistics '{{.*}}missing.json': No such file or directory
// RUN: not mp-opt %s --mp-analyze-precision=calibration=%S/Inputs/not-json.json 2>&1 | FileCheck %s --check-prefix=NOTJSON
// NOTJSON: error: calibration statistics '{{.*}}not-json.json' are not valid JSON
// RUN: not mp-opt %s --mp-analyze-precision=calibration=%S/Inputs/bad-calibration.json 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: calibration entry 'x' in '{{.*}}bad-calibration.json' needs numbers "min" and "max"
// RUN: not mp-opt %s --split-input-file --mp-analyze-precision=report=/nonexistent/dir/report.json 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: error: cannot write report '/nonexistent/dir/report.json': No such file or directory
// RUN: mp-opt %s --split-input-file --verify-diagnostics --mp-analyze-precision -o /dev/null

func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @bad_precision(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'mp.precision' must be "f32", "f16" or "bf16", got "fp8"}}
  %0 = linalg.exp {mp.precision = "fp8"} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bad_precision_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'mp.precision' must be "f32", "f16" or "bf16", got 16 : i64}}
  %0 = linalg.exp {mp.precision = 16} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
