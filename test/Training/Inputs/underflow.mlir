// A loss whose true gradients lie below 2^-24 (FP16's smallest subnormal):
// loss = 1e-9 * sum(x W), so dL/dW[k, n] = 1e-9 * sum_m x[m, k].
func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x4xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %tiny = arith.constant 1.0e-9 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<4x4xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %acc2: f32):
    %r = arith.addf %a, %acc2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %sum = tensor.extract %s[] : tensor<f32>
  %l = arith.mulf %sum, %tiny : f32
  return %l : f32
}
