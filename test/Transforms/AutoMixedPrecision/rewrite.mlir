// The rewrite of --mp-auto-mixed-precision.
// RUN: mp-opt %s --mp-auto-mixed-precision --split-input-file --verify-diagnostics | FileCheck %s
// RUN: mp-opt %s --mp-auto-mixed-precision=dtype=bf16 --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=BF16

// A contraction takes f16 inputs and keeps its f32 accumulator and result;
// a value used twice is converted once.
// CHECK-LABEL: func.func @shared_input
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W1:.*]]: tensor<16x4xf32>, %[[W2:.*]]: tensor<16x4xf32>, %[[ACC:.*]]: tensor<8x4xf32>)
// CHECK-SAME: -> (tensor<8x4xf32>, tensor<8x4xf32>)
// CHECK-DAG: %[[W2H:.*]] = linalg.generic {{.*}} ins(%[[W2]] : tensor<16x4xf32>) outs(%{{.*}} : tensor<16x4xf16>)
// CHECK-DAG: %[[W1H:.*]] = linalg.generic {{.*}} ins(%[[W1]] : tensor<16x4xf32>) outs(%{{.*}} : tensor<16x4xf16>)
// CHECK-DAG: %[[XH:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xf16>)
// CHECK: %[[R0:.*]] = linalg.matmul ins(%[[XH]], %[[W1H]] : tensor<8x16xf16>, tensor<16x4xf16>) outs(%[[ACC]] : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[R1:.*]] = linalg.matmul ins(%[[XH]], %[[W2H]] : tensor<8x16xf16>, tensor<16x4xf16>) outs(%[[ACC]] : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[R0]], %[[R1]]
// BF16-LABEL: func.func @shared_input
// BF16: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%{{.*}} : tensor<8x4xf32>) -> tensor<8x4xf32>
func.func @shared_input(%x: tensor<8x16xf32>, %w1: tensor<16x4xf32>, %w2: tensor<16x4xf32>, %acc: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A cast of a constant is folded into the constant.
// CHECK-LABEL: func.func @constant_weight
// CHECK: %[[W:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [5.000000e-01, 2.500000e-01], [3.000000e+00, 1.024000e+03]]> : tensor<3x2xf16>
// CHECK: linalg.matmul ins(%{{.*}}, %[[W]] : tensor<2x3xf16>, tensor<3x2xf16>)
func.func @constant_weight(%x: tensor<2x3xf32>, %acc: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = arith.constant dense<[[1.0, 2.0], [0.5, 0.25], [3.0, 1024.0]]> : tensor<3x2xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x2xf32>) outs(%acc : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// A constant beyond f16's range would fold to inf: its consumer stays f32
// for f16 (bf16 has f32's range).
// CHECK-LABEL: func.func @constant_out_of_range
// CHECK: arith.constant {{.*}} : tensor<3x2xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3x2xf32>)
// BF16-LABEL: func.func @constant_out_of_range
// BF16: arith.constant {{.*}} : tensor<3x2xbf16>
func.func @constant_out_of_range(%x: tensor<2x3xf32>, %acc: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = arith.constant dense<[[1.0, 2.0], [0.5, 0.25], [3.0, 65536.0]]> : tensor<3x2xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x2xf32>) outs(%acc : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Infer ops between contractions run low; the conversion after the first
// contraction is folded into the bias-add body, and the relu writes f16
// straight to the second contraction: no stand-alone cast between them.
// CHECK-LABEL: func.func @mlp_layer
// CHECK: %[[H:.*]] = linalg.matmul ins({{.*}} : tensor<8x16xf16>, tensor<16x32xf16>) outs({{.*}} : tensor<8x32xf32>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[H]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>) outs(%{{.*}} : tensor<8x32xf16>)
// CHECK: ^bb0(%[[P:.*]]: f32, %[[Q:.*]]: f32, %{{.*}}: f16):
// CHECK:   %[[S:.*]] = arith.addf %[[P]], %[[Q]] : f32
// CHECK:   %[[T:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK:   linalg.yield %[[T]] : f16
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<8x32xf16>) outs(%{{.*}} : tensor<8x32xf16>)
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul ins(%[[R]], %{{.*}} : tensor<8x32xf16>, tensor<32x4xf16>) outs(%{{.*}} : tensor<8x4xf32>)
func.func @mlp_layer(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %bias: tensor<32xf32>, %w2: tensor<32x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %bias : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x32xf32>, tensor<32x4xf32>) outs(%acc2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Named elementwise ops are rebuilt in f16; reshapes between contractions
// follow.
// CHECK-LABEL: func.func @named_and_reshape
// CHECK: linalg.add ins(%{{.*}}, %{{.*}} : tensor<8x16xf16>, tensor<8x16xf16>) outs(%{{.*}} : tensor<8x16xf16>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf16> into tensor<2x4x16xf16>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x4x16xf16> into tensor<8x16xf16>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf16>, tensor<16x4xf16>)
func.func @named_and_reshape(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x4xf32>, %acc: tensor<8x16xf32>, %acc2: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %0 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
  %1 = linalg.add ins(%0, %0 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = tensor.expand_shape %1 [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %r2 = tensor.collapse_shape %r [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %3 = linalg.matmul ins(%r2, %w2 : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Deny ops keep f32 arithmetic: exp and the sum reduction read f32, and the
// division writes f16 directly for the contraction that consumes it.
// CHECK-LABEL: func.func @softmax_then_matmul
// CHECK: math.exp %{{.*}} : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf16>)
// CHECK:   arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.matmul ins(%[[P]], %{{.*}} : tensor<4x8xf16>, tensor<8x2xf16>)
func.func @softmax_then_matmul(%x: tensor<4x8xf32>, %v: tensor<8x2xf32>, %acc: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = math.exp %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%p: f32, %a: f32):
    %s = arith.addf %p, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %probs = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %d = arith.divf %p, %s : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %y = linalg.matmul ins(%probs, %v : tensor<4x8xf32>, tensor<8x2xf32>) outs(%acc : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A user who forces a long contraction to f16 gets it, and a warning.
// CHECK-LABEL: func.func @forced_f16_long_reduction
// CHECK: linalg.matmul {mp.precision = #mp.precision<f16>} ins(%{{.*}}, %{{.*}} : tensor<4x4096xf16>, tensor<4096x4xf16>) outs(%{{.*}} : tensor<4x4xf16>)
func.func @forced_f16_long_reduction(%x: tensor<4x4096xf32>, %w: tensor<4096x4xf32>, %acc: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-warning @+1 {{accumulates in 'f16' over 4096 elements (warn-reduction-size = 2048); keep its accumulator in f32 (mp.precision = #mp.precision<f32>)}}
  %0 = linalg.matmul {mp.precision = #mp.precision<f16>} ins(%x, %w : tensor<4x4096xf32>, tensor<4096x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Control flow carries f32 across its boundaries, without a warning; the
// contraction inside the loop is rewritten on its own.
// CHECK-LABEL: func.func @loop
// CHECK: scf.for {{.*}} -> (tensor<4x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf16>, tensor<4x4xf16>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK: scf.yield %{{.*}} : tensor<4x4xf32>
func.func @loop(%x: tensor<4x4xf32>, %n: index) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4x4xf32> {
    %e = tensor.empty() : tensor<4x4xf32>
    %m = linalg.matmul ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    scf.yield %m : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// Dynamic shapes: conversions take their sizes from the value.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[D:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x16xf32>
// CHECK: tensor.empty(%[[D]]) : tensor<?x16xf16>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x16xf16>, tensor<16x4xf16>) outs(%{{.*}} : tensor<?x4xf32>)
func.func @dynamic(%x: tensor<?x16xf32>, %w: tensor<16x4xf32>, %acc: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = linalg.matmul ins(%x, %w : tensor<?x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
