// RUN: mp-opt %s --mp-auto-mixed-precision="dtype=f16" | FileCheck %s

// A contraction written as a linalg.generic (what --mp-autodiff makes of a
// matmul's gradient) keeps both matrix operands in f16 when one comes from
// an f32 op (exp stays f32, and its f32 result is also returned): the conversion is not folded into the
// contraction's body, where it would leave an f16 x f32 product that no
// runtime GEMM takes.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @gradient_product
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK: math.exp
// CHECK: %[[LOW:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xf16>)
// CHECK: arith.truncf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[LOW]], %{{.*}} : tensor<64x64xf16>, tensor<64x32xf16>) outs(%{{.*}} : tensor<64x32xf32>)
func.func @gradient_product(%s: tensor<64x64xf32>, %v: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64x64xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<64x64xf32>) outs(%e0 : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  %c0 = tensor.empty() : tensor<64x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%c0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e, %v : tensor<64x64xf32>, tensor<64x32xf32>) outs(%acc : tensor<64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  return %p, %e : tensor<64x32xf32>, tensor<64x64xf32>
}
