// A forward op pinned with mp.precision pins the ops of its derivative: the
// products that read the same values would otherwise be left to AMP and
// overflow where the forward op no longer does (#20 §3).
// RUN: mp-opt %s --mp-autodiff --mlir-print-local-scope | FileCheck %s
// Through the f16 training pipeline: the pinned product and its two
// gradient products stay f32; the unpinned one and its gradients run f16.
// RUN: mp-opt %s --mp-train-pipeline=dtype=f16 | FileCheck %s --check-prefix=F16

// CHECK-LABEL: func.func @loss_grad
// The forward ops are cloned as they are.
// CHECK: linalg.matmul {mp.precision = #mp.precision<f32>} ins(%{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<6x5xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x5xf32>, tensor<5x3xf32>)
// The second product's gradients (built first, in reverse: of its input
// h, then of w2): unpinned.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x5xf32>) {{{$}}
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<5x3xf32>) {{{$}}
// The pinned product's gradient of w1 (x is no parameter): pinned too.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<6x5xf32>) attrs = {mp.precision = #mp.precision<f32>} {{{$}}

// F16-LABEL: func.func @train_step
// F16: linalg.matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<6x5xf32>)
// F16: linalg.matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<4x5xf16>, tensor<5x3xf16>)
// F16: ins(%{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<4x5xf32>) outs(%{{.*}} : tensor<6x5xf32>)

#all = affine_map<(d0, d1) -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @loss(%x: tensor<4x6xf32>, %w1: tensor<6x5xf32> {mp.param = "w1"},
                %w2: tensor<5x3xf32> {mp.param = "w2"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x5xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %h = linalg.matmul {mp.precision = #mp.precision<f32>} ins(%x, %w1 : tensor<4x6xf32>, tensor<6x5xf32>) outs(%z1 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<4x5xf32>, tensor<5x3xf32>) outs(%z2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<4x3xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %out = tensor.extract %s[] : tensor<f32>
  return %out : f32
}
