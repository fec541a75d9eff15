// Input of pass-aliases.test: an mp op for --mp-convert-to-upstream, a long
// sum for --mp-split-reductions.

func.func @scale(%loss: tensor<16xf32>, %scale: f32) -> tensor<16xf32> {
  %0 = mp.scale_loss %loss, %scale : tensor<16xf32>
  return %0 : tensor<16xf32>
}

func.func @sum(%x: tensor<4096xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%x : tensor<4096xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
