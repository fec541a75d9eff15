// loss = 0.5 * sum(w * w), so dL/dw = w: optimizer updates have closed forms.
func.func @loss(%w: tensor<1xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w : tensor<1xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %t = tensor.extract %s[] : tensor<f32>
  %l = arith.mulf %t, %half : f32
  return %l : f32
}
