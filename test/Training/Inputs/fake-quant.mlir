// Loss for fake-quant-step.test: sum(c * fq(w)) with a fixed scale 0.01
// (w's -2 and 2 are clipped at +-1.27), plus sum(d * fq(m)) with m's own
// per-column scales (every element inside its range).
func.func @loss(%w: tensor<5xf32> {mp.param = "w"},
                %m: tensor<2x3xf32> {mp.param = "m"}) -> f32 attributes {mp.loss} {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %d = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = arith.constant dense<0.01> : tensor<f32>
  %wq = mp.fake_quant %w, %s : tensor<5xf32>, tensor<f32>
  %sm = mp.quant_scale %m {axis = 1 : i64} : tensor<2x3xf32> -> tensor<3xf32>
  %mq = mp.fake_quant %m, %sm {axis = 1 : i64} : tensor<2x3xf32>, tensor<3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sw = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%wq, %c : tensor<5xf32>, tensor<5xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %sm2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%mq, %d : tensor<2x3xf32>, tensor<2x3xf32>) outs(%sw : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %sm2[] : tensor<f32>
  return %l : f32
}
