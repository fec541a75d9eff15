// RUN: mp-opt %s --mp-autodiff | FileCheck %s

// The loss's dropouts are numbered after the largest stream given; each
// gradient is mp.dropout of the result's gradient with the same stream,
// so --mp-lower-dropout draws the same mask twice instead of storing it.
// CHECK-LABEL: func.func @loss
// CHECK: mp.dropout %{{.*}} {ratio = 5.000000e-01 : f64, stream = 4 : i64}
// CHECK: mp.dropout %{{.*}} {ratio = 1.000000e-01 : f64, stream = 5 : i64}
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[A:.*]] = mp.dropout %{{.*}} {ratio = 5.000000e-01 : f64, stream = 4 : i64}
// CHECK: %[[B:.*]] = mp.dropout %[[A]] {ratio = 1.000000e-01 : f64, stream = 5 : i64}
// CHECK: %[[DB:.*]] = linalg.generic {{.*}} ins(%[[B]], %{{.*}} : tensor<8xf32>, tensor<f32>)
// CHECK: %[[DA:.*]] = mp.dropout %[[DB]] {ratio = 1.000000e-01 : f64, stream = 5 : i64}
// CHECK: %[[DW:.*]] = mp.dropout %[[DA]] {ratio = 5.000000e-01 : f64, stream = 4 : i64}
// CHECK: return %{{.*}}, %[[DW]]
#v = affine_map<(d0) -> (d0)>
func.func @loss(%w: tensor<8xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %a = mp.dropout %w {ratio = 5.000000e-01 : f64, stream = 4 : i64} : tensor<8xf32>
  %b = mp.dropout %a {ratio = 1.000000e-01 : f64} : tensor<8xf32>
  %e = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#v, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%b : tensor<8xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%x: f32, %r: f32):
    %p = arith.mulf %x, %x : f32
    %t = arith.addf %p, %r : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}
