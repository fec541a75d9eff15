// Folders of mp ops, and what canonicalization must keep.
// RUN: mp-opt %s --canonicalize --split-input-file | FileCheck %s

// Scaling by exactly 1 folds away.
// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[LOSS:.*]]: f32)
// CHECK-NOT: mp.scale_loss
// CHECK: return %[[LOSS]]
func.func @scale_by_one(%loss: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %0 = mp.scale_loss %loss, %one : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @scale_by_two
// CHECK: mp.scale_loss
func.func @scale_by_two(%loss: f32) -> f32 {
  %two = arith.constant 2.0 : f32
  %0 = mp.scale_loss %loss, %two : f32
  return %0 : f32
}

// -----

// A constant state folds through the state machine.
// CHECK-LABEL: func.func @fold_update_scale
// CHECK-DAG: %[[BACKOFF:.*]] = arith.constant 3.276800e+04 : f32
// CHECK-DAG: %[[GROWN:.*]] = arith.constant 1.310720e+05 : f32
// CHECK-DAG: %[[CLEAN:.*]] = arith.constant 6.553600e+04 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NOT: mp.update_scale
// CHECK: return %[[BACKOFF]], %[[ZERO]], %[[GROWN]], %[[ZERO]], %[[CLEAN]], %[[ONE]]
func.func @fold_update_scale() -> (f32, i32, f32, i32, f32, i32) {
  %scale = arith.constant 65536.0 : f32
  %t0 = arith.constant 0 : i32
  %t1 = arith.constant 1 : i32
  %true = arith.constant true
  %false = arith.constant false
  %s0, %n0 = mp.update_scale %scale, %t1, %true {growth_interval = 2 : i64} : i32
  %s1, %n1 = mp.update_scale %scale, %t1, %false {growth_interval = 2 : i64} : i32
  %s2, %n2 = mp.update_scale %scale, %t0, %false {growth_interval = 2 : i64} : i32
  return %s0, %n0, %s1, %n1, %s2, %n2 : f32, i32, f32, i32, f32, i32
}

// -----

// A constant state folds through the adaptive scaler too. At 1024 with
// margin 8: amax 1000 asks for 8192 (one power of two a step: 2048),
// amax 40000 for 128 (one such step only counts: hysteresis 2), an
// overflow halves and starts the cool-down (-growth_interval).
// CHECK-LABEL: func.func @fold_adapt_scale
// CHECK-DAG: %[[GROWN:.*]] = arith.constant 2.048000e+03 : f32
// CHECK-DAG: %[[SAME:.*]] = arith.constant 1.024000e+03 : f32
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.120000e+02 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[COOL:.*]] = arith.constant -2000 : i32
// CHECK-NOT: mp.adapt_scale
// CHECK: return %[[GROWN]], %[[ZERO]], %[[SAME]], %[[ONE]], %[[HALF]], %[[COOL]]
func.func @fold_adapt_scale() -> (f32, i32, f32, i32, f32, i32) {
  %scale = arith.constant 1024.0 : f32
  %t0 = arith.constant 0 : i32
  %true = arith.constant true
  %false = arith.constant false
  %small = arith.constant 1000.0 : f32
  %large = arith.constant 40000.0 : f32
  %s0, %n0 = mp.adapt_scale %scale, %t0, %false, %small {margin = 8.0 : f32, hysteresis = 2 : i64} : i32
  %s1, %n1 = mp.adapt_scale %scale, %t0, %false, %large {margin = 8.0 : f32, hysteresis = 2 : i64} : i32
  %s2, %n2 = mp.adapt_scale %scale, %t0, %true, %small {margin = 8.0 : f32, hysteresis = 2 : i64} : i32
  return %s0, %n0, %s1, %n1, %s2, %n2 : f32, i32, f32, i32, f32, i32
}

// A scale that is not constant stays.
// CHECK-LABEL: func.func @adapt_scale_not_constant
// CHECK: mp.adapt_scale
func.func @adapt_scale_not_constant(%scale: f32) -> (f32, i32) {
  %t0 = arith.constant 0 : i32
  %false = arith.constant false
  %amax = arith.constant 1.0 : f32
  %s, %n = mp.adapt_scale %scale, %t0, %false, %amax {margin = 8.0 : f32, hysteresis = 2 : i64} : i32
  return %s, %n : f32, i32
}

// -----

// An unused probe is kept (it records statistics); unused pure ops are not.
// CHECK-LABEL: func.func @probe_not_erased
// CHECK-NOT: mp.scale_loss
// CHECK: mp.observe %{{.*}} as "kept"
// CHECK-NOT: mp.scale_loss
func.func @probe_not_erased(%x: tensor<4xf32>, %l: f32, %s: f32) {
  %0 = mp.observe %x as "kept" : tensor<4xf32>
  %1 = mp.scale_loss %l, %s : f32
  return
}
