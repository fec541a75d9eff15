// Diagnostics of --mp-loss-scaling.
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-loss-scaling 2>&1 | FileCheck %s --check-prefix=NOGRAD
// NOGRAD: error: no gradient function ('mp.gradient_of') in the module: run --mp-autodiff first
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: unknown mode 'sometimes': expected dynamic, static or none
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=dtype=f8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: unknown dtype 'f8': expected f16 or bf16
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=backoff-factor=2 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: loss scaling needs init-scale > 0, growth-factor > 1, 0 < backoff-factor < 1, growth-interval >= 1 and clip-norm >= 0
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling --mp-loss-scaling --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: loss scaling was already applied to this gradient function
