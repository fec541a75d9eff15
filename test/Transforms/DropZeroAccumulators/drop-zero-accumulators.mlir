// RUN: mp-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(mp-drop-zero-accumulators))" | FileCheck %s

// A gradient as --mp-autodiff writes it (a relu's: 0 + select(x >= 0, g, 0))
// where every element is written once: the addition and the fill go, the
// op writes into the empty tensor.
// CHECK-LABEL: func.func @relu_gradient
// CHECK-NOT: linalg.fill
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<4x8xf32>)
// CHECK: %[[G:.*]] = arith.select
// CHECK-NEXT: linalg.yield %[[G]] : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @relu_gradient(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%xv: f32, %gv: f32, %acc: f32):
    %c = arith.cmpf oge, %xv, %zero : f32
    %s = arith.select %c, %gv, %zero : f32
    %sum = arith.addf %acc, %s : f32
    linalg.yield %sum : f32
  } -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}

// -----

// After AMP: a bf16 accumulator widened in the body, filled with an f32
// zero rounded to bf16; the result is still rounded once. A transposed init
// (a permutation) is written once too.
// CHECK-LABEL: func.func @bf16_transposed
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[W]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[N]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
func.func @bf16_transposed(%g: tensor<4x8xbf16>) -> tensor<8x4xbf16> {
  %zero = arith.constant 0.0 : f32
  %zero16 = arith.truncf %zero : f32 to bf16
  %e = tensor.empty() : tensor<8x4xbf16>
  %z = linalg.fill ins(%zero16 : bf16) outs(%e : tensor<8x4xbf16>) -> tensor<8x4xbf16>
  %dx = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<4x8xbf16>) outs(%z : tensor<8x4xbf16>) {
  ^bb0(%in: bf16, %acc: bf16):
    %a = arith.extf %acc : bf16 to f32
    %w = arith.extf %in : bf16 to f32
    %n = arith.negf %w : f32
    %sum = arith.addf %a, %n : f32
    %r = arith.truncf %sum : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<8x4xbf16>
  return %dx : tensor<8x4xbf16>
}

// -----

// The gradient of an addition or a reshape: once it no longer adds to
// zeros it is a copy, f32 or rounded back to the same 16-bit type, and goes.
// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[G:.*]]: tensor<4x8xf32>, %[[H:.*]]: tensor<4x8xf16>)
// CHECK-NOT: linalg.
// CHECK: return %[[G]], %[[H]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @copies(%g: tensor<4x8xf32>, %h: tensor<4x8xf16>) -> (tensor<4x8xf32>, tensor<4x8xf16>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<4x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sum = arith.addf %acc, %in : f32
    linalg.yield %sum : f32
  } -> tensor<4x8xf32>
  %zero16 = arith.truncf %zero : f32 to f16
  %e16 = tensor.empty() : tensor<4x8xf16>
  %z16 = linalg.fill ins(%zero16 : f16) outs(%e16 : tensor<4x8xf16>) -> tensor<4x8xf16>
  %dh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x8xf16>) outs(%z16 : tensor<4x8xf16>) {
  ^bb0(%in: f16, %acc: f16):
    %a = arith.extf %acc : f16 to f32
    %w = arith.extf %in : f16 to f32
    %sum = arith.addf %a, %w : f32
    %r = arith.truncf %sum : f32 to f16
    linalg.yield %r : f16
  } -> tensor<4x8xf16>
  return %dx, %dh : tensor<4x8xf32>, tensor<4x8xf16>
}

// -----

// A filled init the body never reads (a forward bias add written into a
// zero-filled tensor) needs no fill.
// CHECK-LABEL: func.func @unread_init
// CHECK-NOT: linalg.fill
// CHECK: %[[EMPTY:.*]] = tensor.empty
// CHECK: outs(%[[EMPTY]] :
func.func @unread_init(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%xv: f32, %bv: f32, %acc: f32):
    %s = arith.addf %xv, %bv : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Kept: a reduction (elements are summed into), an init broadcast over a
// loop (written more than once), a fill with 1, an accumulator read twice.
// Their fills stay.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.fill
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.fill
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.fill
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
func.func @kept(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %bcast = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                           iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %o = linalg.fill ins(%one : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %plus1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%o : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %twice = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    %t = arith.mulf %s, %acc : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %sum, %bcast, %plus1, %twice : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
