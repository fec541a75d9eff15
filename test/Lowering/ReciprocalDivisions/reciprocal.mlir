// RUN: mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-reciprocal-divisions))' | FileCheck %s
// RUN: not mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-reciprocal-divisions{min-reuse=1}))' 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: mp-reciprocal-divisions: min-reuse must be at least 2, got 1

// Softmax's last step: every element of a row divided by the row's sum,
// read 16 times each. The sums' reciprocals are computed once (a generic of
// their own) and read in the sums' place, through the same map; the
// division becomes a multiplication.
// CHECK-LABEL: func.func @softmax_rows
// CHECK-SAME: (%[[E:.*]]: tensor<4x16xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>) outs(%[[EMPTY]] : tensor<4xf32>)
// CHECK: %[[ONE:.*]] = arith.constant 1.0
// CHECK: arith.divf %[[ONE]], %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[E]], %[[R]] : tensor<4x16xf32>, tensor<4xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[RIN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[IN]], %[[RIN]] : f32
// CHECK-NEXT: linalg.yield %[[P]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @softmax_rows(%e: tensor<4x16xf32>, %s: tensor<4xf32>) -> tensor<4x16xf32> {
  %init = tensor.empty() : tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<4x16xf32>, tensor<4xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %d = arith.divf %x, %sum : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Its gradient's reduction divides by the sum twice, and keeps using it
// for something else: the reciprocals are read as one more input, both
// divisions multiply by them, the other use reads the sum.
// CHECK-LABEL: func.func @gradient_sum
// CHECK-SAME: (%[[E:.*]]: tensor<4x16xf32>, %[[G:.*]]: tensor<4x16xf32>, %[[S:.*]]: tensor<4xf32>, %{{.*}}: tensor<4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[E]], %[[G]], %[[S]], %[[R]] :
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[SUM:.*]]: f32, %[[RIN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X]], %[[RIN]] : f32
// CHECK-NEXT: %[[Q:.*]] = arith.mulf %[[Y]], %[[P]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.mulf %[[Q]], %[[RIN]] : f32
// CHECK-NEXT: arith.addf %[[T]], %[[SUM]] : f32
// CHECK-NOT: arith.divf
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @gradient_sum(%e: tensor<4x16xf32>, %g: tensor<4x16xf32>, %s: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e, %g, %s : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %sum: f32, %out: f32):
    %p = arith.divf %x, %sum : f32
    %q = arith.mulf %y, %p : f32
    %t = arith.divf %q, %sum : f32
    %u = arith.addf %t, %sum : f32
    %v = arith.addf %out, %u : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Left as they are: a divisor each iteration reads an element of its own,
// one read by fewer than min-reuse (8) iterations, a bf16 divisor, and a
// divided input (not a divisor).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: arith.divf
// CHECK-NOT: arith.mulf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @kept(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %short: tensor<4x4xf32>, %s: tensor<4xf32>, %h: tensor<4xbf16>, %hs: tensor<4x16xbf16>) -> (tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x16xbf16>, tensor<4x16xf32>) {
  %init = tensor.empty() : tensor<4x16xf32>
  %own = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %d = arith.divf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  %init4 = tensor.empty() : tensor<4x4xf32>
  %few = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%short, %s : tensor<4x4xf32>, tensor<4xf32>) outs(%init4 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %d = arith.divf %x, %sum : f32
    linalg.yield %d : f32
  } -> tensor<4x4xf32>
  %inith = tensor.empty() : tensor<4x16xbf16>
  %half = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hs, %h : tensor<4x16xbf16>, tensor<4xbf16>) outs(%inith : tensor<4x16xbf16>) {
  ^bb0(%x: bf16, %sum: bf16, %out: bf16):
    %d = arith.divf %x, %sum : bf16
    linalg.yield %d : bf16
  } -> tensor<4x16xbf16>
  %numerator = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %a : tensor<4xf32>, tensor<4x16xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%sum: f32, %x: f32, %out: f32):
    %d = arith.divf %sum, %x : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  return %own, %few, %half, %numerator : tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x16xbf16>, tensor<4x16xf32>
}
