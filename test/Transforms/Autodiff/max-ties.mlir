// RUN: mp-opt %s --mp-autodiff | FileCheck %s

// A max pool's gradient is split evenly among the tied elements of each
// window: one generic counts the elements equal to each result, the
// gradient generic divides the upstream gradient by that count.

// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[POOL:.*]] = linalg.pooling_nchw_max
// CHECK: %[[COUNT:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[POOL]] : {{.*}}) outs(%{{.*}} : tensor<1x1x2x2xf32>)
// CHECK: %[[EQ:.*]] = arith.cmpf oeq, %[[IN:.*]], %[[MAX:.*]] : f32
// CHECK: %[[ONE:.*]] = arith.select %[[EQ]], %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %[[ONE]] : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[POOL]], %[[GRAD:.*]], %[[COUNT]] : {{.*}}) outs(%{{.*}} : tensor<1x1x4x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32, %[[M:.*]]: f32, %[[G:.*]]: f32, %[[N:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[TIE:.*]] = arith.cmpf oeq, %[[X]], %[[M]] : f32
// CHECK: %[[SHARE:.*]] = arith.divf %[[G]], %[[N]] : f32
// CHECK: %[[PICK:.*]] = arith.select %[[TIE]], %[[SHARE]], %{{.*}} : f32
// CHECK: arith.addf %[[ACC]], %[[PICK]] : f32
func.func @loss(%x: tensor<1x1x4x4xf32> {mp.param = "x"}) -> f32 attributes {mp.loss} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x2x2xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %w = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x2xf32>) outs(%f : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%p : tensor<1x1x2x2xf32>) outs(%s : tensor<f32>) dimensions = [0, 1, 2, 3]
    (%a: f32, %b: f32) {
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
    }
  %v = tensor.extract %r[] : tensor<f32>
  return %v : f32
}
