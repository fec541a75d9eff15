// Diagnostics of --mp-loss-scaling.
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-loss-scaling 2>&1 | FileCheck %s --check-prefix=NOGRAD
// NOGRAD: error: no gradient function ('mp.gradient_of') in the module: run --mp-autodiff first
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: for the --mode option: Cannot find option named 'sometimes'!
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=dtype=f8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: for the --dtype option: Cannot find option named 'f8'!
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=backoff-factor=2 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: loss scaling needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, growth_interval >= 1 and clip_norm >= 0
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=0.5" 2>&1 | FileCheck %s --check-prefix=MARGIN
// MARGIN: error: adaptive loss scaling needs 1 <= margin < inf and hysteresis >= 1
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive hysteresis=0" 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=inf" 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=1e300" 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=nan" 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive growth-interval=4294967296" 2>&1 | FileCheck %s --check-prefix=TRACKER
// TRACKER: error: adaptive loss scaling needs growth_interval and hysteresis to fit the step's i32 growth tracker
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=two" 2>&1 | FileCheck %s --check-prefix=TYPED
// TYPED: for the --margin option: 'two' value invalid for floating point argument!
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling --mp-loss-scaling --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: loss scaling was already applied to this gradient function
