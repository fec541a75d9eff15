// A small CNN for the digits data: 3x3 convolution (8 channels) + bias +
// relu, 2x2 max pooling, a linear layer to 10 classes; batches of 64
// images of 1x8x8 (NCHW). mp-run feeds each 64-pixel row as one image.
//   @loss    : mean softmax cross-entropy against one-hot labels (mp.loss)
//   @predict : the logits (mp.predict)

#nchw = affine_map<(n, c, h, w) -> (n, c, h, w)>
#chan = affine_map<(n, c, h, w) -> (c)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

func.func @loss(%x: tensor<64x1x8x8xf32>, %labels: tensor<64x10xf32>,
    %k: tensor<8x1x3x3xf32> {mp.param = "k"}, %c: tensor<8xf32> {mp.param = "c"},
    %w: tensor<72x10xf32> {mp.param = "w"}, %b: tensor<10xf32> {mp.param = "b"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.015625 : f32
  %e1 = tensor.empty() : tensor<64x8x6x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
  %y1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%z1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
  %h1 = linalg.generic {indexing_maps = [#nchw, #chan, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y1, %c : tensor<64x8x6x6xf32>, tensor<8xf32>) outs(%e1 : tensor<64x8x6x6xf32>) {
  ^bb0(%a: f32, %cb: f32, %o: f32):
    %s = arith.addf %a, %cb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x8x6x6xf32>
  %ep = tensor.empty() : tensor<64x8x3x3xf32>
  %zp = linalg.fill ins(%ninf : f32) outs(%ep : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%h1, %win : tensor<64x8x6x6xf32>, tensor<2x2xf32>) outs(%zp : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
  %feat = tensor.collapse_shape %pool [[0], [1, 2, 3]] : tensor<64x8x3x3xf32> into tensor<64x72xf32>
  %el = tensor.empty() : tensor<64x10xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<64x10xf32>) -> tensor<64x10xf32>
  %mm = linalg.matmul ins(%feat, %w : tensor<64x72xf32>, tensor<72x10xf32>) outs(%zl : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<64x10xf32>, tensor<10xf32>) outs(%el : tensor<64x10xf32>) {
  ^bb0(%a: f32, %cb: f32, %o: f32):
    %s = arith.addf %a, %cb : f32
    linalg.yield %s : f32
  } -> tensor<64x10xf32>
  %er = tensor.empty() : tensor<64xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %rowmax = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<64x10xf32>) outs(%maxinit : tensor<64xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %suminit = linalg.fill ins(%zero : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %rowmax : tensor<64x10xf32>, tensor<64xf32>) outs(%suminit : tensor<64xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nll = linalg.generic {indexing_maps = [#id, #row, #row, #id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%logits, %rowmax, %rowsum, %labels : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x10xf32>) outs(%init0 : tensor<f32>) {
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

func.func @predict(%x: tensor<64x1x8x8xf32>,
    %k: tensor<8x1x3x3xf32> {mp.param = "k"}, %c: tensor<8xf32> {mp.param = "c"},
    %w: tensor<72x10xf32> {mp.param = "w"}, %b: tensor<10xf32> {mp.param = "b"}) -> tensor<64x10xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<64x8x6x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
  %y1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%z1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
  %h1 = linalg.generic {indexing_maps = [#nchw, #chan, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y1, %c : tensor<64x8x6x6xf32>, tensor<8xf32>) outs(%e1 : tensor<64x8x6x6xf32>) {
  ^bb0(%a: f32, %cb: f32, %o: f32):
    %s = arith.addf %a, %cb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x8x6x6xf32>
  %ep = tensor.empty() : tensor<64x8x3x3xf32>
  %zp = linalg.fill ins(%ninf : f32) outs(%ep : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%h1, %win : tensor<64x8x6x6xf32>, tensor<2x2xf32>) outs(%zp : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
  %feat = tensor.collapse_shape %pool [[0], [1, 2, 3]] : tensor<64x8x3x3xf32> into tensor<64x72xf32>
  %el = tensor.empty() : tensor<64x10xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<64x10xf32>) -> tensor<64x10xf32>
  %mm = linalg.matmul ins(%feat, %w : tensor<64x72xf32>, tensor<72x10xf32>) outs(%zl : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<64x10xf32>, tensor<10xf32>) outs(%el : tensor<64x10xf32>) {
  ^bb0(%a: f32, %cb: f32, %o: f32):
    %s = arith.addf %a, %cb : f32
    linalg.yield %s : f32
  } -> tensor<64x10xf32>
  return %logits : tensor<64x10xf32>
}
