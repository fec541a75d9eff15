// Every diagnostic of --mp-quantize.
// RUN: not mp-opt %s --mp-quantize 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: --mp-quantize: needs calibration=FILE {{.*}}, or mode=int8-dynamic
// RUN: not mp-opt %s --mp-quantize="mode=int8-dynamic calibration=%S/Inputs/stats.json" 2>&1 | FileCheck %s --check-prefix=DYNCAL
// DYNCAL: error: --mp-quantize: mode=int8-dynamic takes no calibration= (each activation is scaled by its own max |x| at run time); drop it, or use mode=int8
// RUN: not mp-opt %s --mp-quantize="mode=int4 calibration=%S/Inputs/stats.json" 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: for the --mode option: Cannot find option named 'int4'!
// RUN: not mp-opt %s --mp-quantize="method=mse calibration=%S/Inputs/stats.json" 2>&1 | FileCheck %s --check-prefix=METHOD
// METHOD: for the --method option: Cannot find option named 'mse'!
// RUN: not mp-opt %s --mp-quantize="method=percentile percentile=0 calibration=%S/Inputs/stats.json" 2>&1 | FileCheck %s --check-prefix=PCT
// PCT: error: --mp-quantize: percentile must lie in (0, 100], got 0
// RUN: not mp-opt %s --mp-quantize="max-error=-1 calibration=%S/Inputs/stats.json" 2>&1 | FileCheck %s --check-prefix=MAXERR
// MAXERR: error: --mp-quantize: max-error must be >= 0, got -1
// RUN: not mp-opt %s --mp-quantize="fallback=bf16 calibration=%S/Inputs/stats.json" 2>&1 | FileCheck %s --check-prefix=FALLBACK
// FALLBACK: for the --fallback option: Cannot find option named 'bf16'!
// RUN: not mp-opt %s --mp-quantize="calibration=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: --mp-quantize: cannot read calibration statistics '{{.*}}missing.json': No such file or directory
// RUN: not mp-opt %s --mp-quantize="calibration=%S/../AnalyzePrecision/Inputs/not-json.json" 2>&1 | FileCheck %s --check-prefix=NOTJSON
// NOTJSON: error: --mp-quantize: calibration statistics '{{.*}}not-json.json' are not valid JSON
// RUN: not mp-opt %s --mp-quantize="calibration=%S/../AnalyzePrecision/Inputs/bad-calibration.json" 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: --mp-quantize: calibration entry 'x' in '{{.*}}bad-calibration.json' needs numbers "min" and "max"
// RUN: not mp-opt %s --mp-quantize="calibration=%S/Inputs/bad-histogram.json" 2>&1 | FileCheck %s --check-prefix=HIST
// HIST: error: --mp-quantize: calibration entry 'x' in '{{.*}}bad-histogram.json': histogram counts must be non-negative numbers
// RUN: not mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json report=/nonexistent/dir/r.json" 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: error: --mp-quantize: cannot write report '/nonexistent/dir/r.json'
// RUN: mp-opt %s --split-input-file --verify-diagnostics --mp-quantize="calibration=%S/Inputs/stats.json" -o /dev/null

func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// An eligible op whose input has no calibration entry.
func.func @nocal(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{no calibration data for 'nocal/arg0', the input of this linalg.matmul; calibrate this module first}}
  %mm = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %mm : tensor<2x4xf32>
}

// -----

// tosa contractions must be imported first.
func.func @tosa(%a: tensor<1x2x3xf32>, %b: tensor<1x3x4xf32>) -> tensor<1x2x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  // expected-error @+1 {{tosa.matmul must be imported to linalg before quantization; run --mp-import first}}
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x4xf32>
  return %0 : tensor<1x2x4xf32>
}
