// Training form of a small CNN classifier (NCHW): two 3x3 convolutions with
// bias and relu, 2x2 max pooling, a linear layer and softmax cross-entropy.
//   x : tensor<2x1x6x6xf32>, labels : tensor<2x3xf32>
//   K1 4x1x3x3, c1 4, K2 4x4x3x3, c2 4, W 4x3, b 3
//   6x6 -conv-> 4x4 -conv-> 2x2 -maxpool-> 1x1 -> 4 features -> 3 classes

#nchw = affine_map<(n, c, h, w) -> (n, c, h, w)>
#chan = affine_map<(n, c, h, w) -> (c)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

func.func @loss(%x: tensor<2x1x6x6xf32>, %labels: tensor<2x3xf32>,
                %k1: tensor<4x1x3x3xf32> {mp.param = "k1"}, %c1: tensor<4xf32> {mp.param = "c1"},
                %k2: tensor<4x4x3x3xf32> {mp.param = "k2"}, %c2: tensor<4xf32> {mp.param = "c2"},
                %w: tensor<4x3xf32> {mp.param = "w"}, %b: tensor<3xf32> {mp.param = "b"})
    -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.5 : f32

  %e1 = tensor.empty() : tensor<2x4x4x4xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %y1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k1 : tensor<2x1x6x6xf32>, tensor<4x1x3x3xf32>) outs(%z1 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %h1 = linalg.generic {indexing_maps = [#nchw, #chan, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y1, %c1 : tensor<2x4x4x4xf32>, tensor<4xf32>) outs(%e1 : tensor<2x4x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4x4xf32>

  %e2 = tensor.empty() : tensor<2x4x2x2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x2x2xf32>) -> tensor<2x4x2x2xf32>
  %y2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%h1, %k2 : tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>) outs(%z2 : tensor<2x4x2x2xf32>) -> tensor<2x4x2x2xf32>
  %h2 = linalg.generic {indexing_maps = [#nchw, #chan, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y2, %c2 : tensor<2x4x2x2xf32>, tensor<4xf32>) outs(%e2 : tensor<2x4x2x2xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x4x2x2xf32>

  %ep = tensor.empty() : tensor<2x4x1x1xf32>
  %zp = linalg.fill ins(%ninf : f32) outs(%ep : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%h2, %win : tensor<2x4x2x2xf32>, tensor<2x2xf32>) outs(%zp : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %feat = tensor.collapse_shape %pool [[0], [1, 2, 3]] : tensor<2x4x1x1xf32> into tensor<2x4xf32>

  %el = tensor.empty() : tensor<2x3xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%feat, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%zl : tensor<2x3xf32>) -> tensor<2x3xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%el : tensor<2x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>

  %er = tensor.empty() : tensor<2xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %rowmax = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<2x3xf32>) outs(%maxinit : tensor<2xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %suminit = linalg.fill ins(%zero : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %rowmax : tensor<2x3xf32>, tensor<2xf32>) outs(%suminit : tensor<2xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %x2 = math.exp %d : f32
    %r = arith.addf %x2, %s : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nll = linalg.generic {indexing_maps = [#id, #row, #row, #id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%logits, %rowmax, %rowsum, %labels : tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x3xf32>) outs(%init0 : tensor<f32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %t: f32, %acc: f32):
    %l = math.log %s : f32
    %d = arith.subf %a, %m : f32
    %lp = arith.subf %d, %l : f32
    %p = arith.mulf %lp, %t : f32
    %r = arith.subf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %total = tensor.extract %nll[] : tensor<f32>
  %mean = arith.mulf %total, %inv_batch : f32
  return %mean : f32
}
