// Small CNN classifier (linalg on tensors) for 8x8 single-channel images.
//   x   : tensor<4x1x8x8xf32>  NCHW batch of 4 images
//   W   : tensor<8x1x3x3xf32>  conv filters (FCHW), b : tensor<8xf32>
//   Wfc : tensor<72x10xf32>,   bfc : tensor<10xf32>
//   conv3x3 (stride 1, no padding) + bias + relu -> 4x8x6x6
//   maxpool 2x2 stride 2                          -> 4x8x3x3
//   collapse to 4x72, matmul Wfc + bfc            -> logits tensor<4x10xf32>
// forward(x, W, b, Wfc, bfc) -> tensor<4x10xf32>

#map4_id = affine_map<(n, c, h, w) -> (n, c, h, w)>
#map4_chan = affine_map<(n, c, h, w) -> (c)>
#map_id = affine_map<(d0, d1) -> (d0, d1)>
#map_col = affine_map<(d0, d1) -> (d1)>

func.func @forward(%x: tensor<4x1x8x8xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8xf32>,
                   %wfc: tensor<72x10xf32>, %bfc: tensor<10xf32>) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32

  // Convolution + bias + relu.
  %ec = tensor.empty() : tensor<4x8x6x6xf32>
  %accc = linalg.fill ins(%zero : f32) outs(%ec : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                    strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<4x1x8x8xf32>, tensor<8x1x3x3xf32>)
      outs(%accc : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %act = linalg.generic {indexing_maps = [#map4_id, #map4_chan, #map4_id],
                         iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %b : tensor<4x8x6x6xf32>, tensor<8xf32>) outs(%ec : tensor<4x8x6x6xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8x6x6xf32>

  // 2x2 max pooling, stride 2.
  %ep = tensor.empty() : tensor<4x8x3x3xf32>
  %poolinit = linalg.fill ins(%ninf : f32) outs(%ep : tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>,
                                   strides = dense<2> : tensor<2xi64>}
      ins(%act, %window : tensor<4x8x6x6xf32>, tensor<2x2xf32>)
      outs(%poolinit : tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32>

  // Flatten (C, H, W) -> 72 and apply the fully connected layer.
  %flat = tensor.collapse_shape %pool [[0], [1, 2, 3]]
      : tensor<4x8x3x3xf32> into tensor<4x72xf32>
  %ef = tensor.empty() : tensor<4x10xf32>
  %accf = linalg.fill ins(%zero : f32) outs(%ef : tensor<4x10xf32>) -> tensor<4x10xf32>
  %mm = linalg.matmul ins(%flat, %wfc : tensor<4x72xf32>, tensor<72x10xf32>)
                      outs(%accf : tensor<4x10xf32>) -> tensor<4x10xf32>
  %logits = linalg.generic {indexing_maps = [#map_id, #map_col, #map_id],
                            iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bfc : tensor<4x10xf32>, tensor<10xf32>) outs(%ef : tensor<4x10xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    linalg.yield %s : f32
  } -> tensor<4x10xf32>
  return %logits : tensor<4x10xf32>
}
