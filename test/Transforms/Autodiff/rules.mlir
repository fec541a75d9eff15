// Differentiation rules of --mp-autodiff.
// RUN: mp-opt %s --mp-autodiff --split-input-file --mlir-print-local-scope | FileCheck %s

// The gradient of a matmul's inputs is a contraction again: dA[m,k] =
// sum_n dC[m,n] * B[k,n] (n becomes a reduction loop).
// CHECK-LABEL: func.func @matmul_grad
// CHECK-SAME: (%[[A:.*]]: tensor<4x6xf32> {mp.param = "a"}, %[[B:.*]]: tensor<6x3xf32>)
// CHECK-SAME: -> (f32, tensor<4x6xf32> {mp.grad = "a"})
// CHECK: linalg.matmul
// CHECK: %[[DC:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x3xf32>)
// Unused inputs are dropped, so the gradient has exactly the two inputs
// and the multiply-add body of a contraction.
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[B]], %[[DC]] : tensor<6x3xf32>, tensor<4x3xf32>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: ^bb0(%[[BV:.*]]: f32, %[[G:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:   %[[P:.*]] = arith.mulf %[[G]], %[[BV]] : f32
// CHECK-NEXT:   %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:   linalg.yield %[[S]] : f32
#all = affine_map<(d0, d1) -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul(%a: tensor<4x6xf32> {mp.param = "a"}, %b: tensor<6x3xf32>) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x6xf32>, tensor<6x3xf32>) outs(%acc : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%c : tensor<4x3xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%x: f32, %acc2: f32):
    %r = arith.addf %x, %acc2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// A broadcast input (bias) gets its gradient summed over the loops it does
// not index; relu's derivative is a select on the comparison.
// CHECK-LABEL: func.func @bias_relu_grad
// CHECK: linalg.generic {indexing_maps = [{{.*}}, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: outs(%{{.*}} : tensor<3xf32>)
// CHECK:   arith.cmpf oge
// CHECK:   arith.select
func.func @bias_relu(%x: tensor<4x3xf32>, %b: tensor<3xf32> {mp.param = "b"}) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%h : tensor<4x3xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A parameter the loss does not depend on gets a zero gradient.
// CHECK-LABEL: func.func @unused_grad
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2xf32>)
// CHECK: return %{{.*}}, %[[Z]] : f32, tensor<2xf32>
func.func @unused(%x: f32, %w: tensor<2xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  return %x : f32
}

// -----

// linalg.softmax is differentiated through its decomposition.
// CHECK-LABEL: func.func @softmax_grad
// CHECK-NOT: linalg.softmax
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: return
func.func @softmax(%x: tensor<2x3xf32> {mp.param = "x"}, %t: tensor<2x3xf32>) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%s, %t : tensor<2x3xf32>, tensor<2x3xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %q = arith.addf %acc, %m : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// extf/truncf pass the gradient through in the other direction.
// CHECK-LABEL: func.func @casts_grad
// CHECK: linalg.generic
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @casts(%x: tensor<4xf32> {mp.param = "x"}) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %h = arith.truncf %a : f32 to f16
    %w = arith.extf %h : f16 to f32
    %q = arith.addf %acc, %w : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// tensor.pad (a convolution's zero padding): the source's gradient is the
// interior of the padded result's gradient, read at offset `low`.
// CHECK-LABEL: func.func @pad_grad
// CHECK-SAME: -> (f32, tensor<2x3xf32> {mp.grad = "w"})
// CHECK: %[[DP:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + 1, d1 + 2)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[DP]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   linalg.yield %[[IN]] : f32
// CHECK: return %{{.*}}, %[[DW]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @pad(%w: tensor<2x3xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %w low[1, 2] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<2x3xf32> to tensor<4x6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%p : tensor<4x6xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}

// -----

// A dimension padded only at its end (torch's padding='same' for an even
// kernel, F.pad): the high padding is sliced off before the copy, whose
// read map is then the identity there and sets no loop size of its own.
// CHECK-LABEL: func.func @pad_high_grad
// CHECK-SAME: -> (f32, tensor<2x3xf32> {mp.grad = "w"})
// CHECK: %[[DP:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3x5xf32>)
// CHECK: %[[IN:.*]] = tensor.extract_slice %[[DP]][0, 0] [3, 3] [1, 1] : tensor<3x5xf32> to tensor<3x3xf32>
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + 1, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[IN]] : tensor<3x3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: return %{{.*}}, %[[DW]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#all2 = affine_map<(d0, d1) -> ()>
func.func @pad_high(%w: tensor<2x3xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %w low[1, 0] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<2x3xf32> to tensor<3x5xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id2, #all2], iterator_types = ["reduction", "reduction"]}
      ins(%p : tensor<3x5xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}
