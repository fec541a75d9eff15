// Every diagnostic of the precision analysis' options (mp.precision is
// verified by the dialect: test/Dialect/MP/invalid.mlir).
// RUN: not mp-opt %s --mp-analyze-precision=dtype=f8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: for the --dtype option: Cannot find option named 'f8'!
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

func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
