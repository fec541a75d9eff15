// RUN: mp-opt %s --mp-autodiff | FileCheck %s

// Where the derivative is the result itself (exp) and reading the result
// reads fewer elements than recomputing it (here exp(x - b) also needs the
// row vector b), the backward generic reads the forward result: one exp in
// the whole gradient function, and x and b need not be kept for the
// backward pass. (A tie, exp(x) alone, keeps the recomputation.)
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all2 = affine_map<(d0, d1) -> ()>

// CHECK-LABEL: func.func @shifted_exp_sum_grad
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4xf32>)
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[E]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: math.exp
// CHECK: return
func.func @shifted_exp_sum(%x: tensor<4x8xf32> {mp.param = "x"}, %b: tensor<4xf32>) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<4xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %c : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id2, #all2], iterator_types = ["reduction", "reduction"]}
      ins(%e : tensor<4x8xf32>) outs(%s : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// The derivative of x * x needs x, not the result: the input is read.
// CHECK-LABEL: func.func @square_sum_grad
// CHECK: linalg.fill {mp.seed}
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[G]] : tensor<8xf32>, tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[G]] : tensor<8xf32>, tensor<8xf32>)
// CHECK: return
func.func @square_sum(%x: tensor<8xf32> {mp.param = "x"}) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%q : tensor<8xf32>) outs(%s : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}
