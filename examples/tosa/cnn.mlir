// Small CNN classifier, TOSA form (same computation and signature as examples/cnn.mlir).
//   x   : tensor<4x1x8x8xf32>  NCHW batch of 4 images
//   W   : tensor<8x1x3x3xf32>  conv filters (FCHW), b : tensor<8xf32>
//   Wfc : tensor<72x10xf32>,   bfc : tensor<10xf32>
//   conv3x3 (stride 1, no padding) + bias + relu -> 4x8x6x6
//   maxpool 2x2 stride 2                          -> 4x8x3x3
//   flatten (C,H,W) to 4x72, matmul Wfc + bfc     -> logits tensor<4x10xf32>
// TOSA convolutions are NHWC / OHWI, so x and W are transposed on entry and
// the pooled activations are transposed back to NCHW before flattening, which
// keeps the flatten order (and thus Wfc) identical to the linalg version.
// forward(x, W, b, Wfc, bfc) -> tensor<4x10xf32>

func.func @forward(%x: tensor<4x1x8x8xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8xf32>,
                   %wfc: tensor<72x10xf32>, %bfc: tensor<10xf32>) -> tensor<4x10xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s_flat = tosa.const_shape {values = dense<[1, 4, 72]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_wfc = tosa.const_shape {values = dense<[1, 72, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_bfc = tosa.const_shape {values = dense<[1, 1, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_out = tosa.const_shape {values = dense<[4, 10]> : tensor<2xindex>} : () -> !tosa.shape<2>

  // NCHW -> NHWC, FCHW -> OHWI.
  %xh = tosa.transpose %x {perms = array<i32: 0, 2, 3, 1>}
      : (tensor<4x1x8x8xf32>) -> tensor<4x8x8x1xf32>
  %wh = tosa.transpose %w {perms = array<i32: 0, 2, 3, 1>}
      : (tensor<8x1x3x3xf32>) -> tensor<8x3x3x1xf32>

  // Convolution (bias fused) + relu.
  %conv = tosa.conv2d %xh, %wh, %b, %zp, %zp
      {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>,
       stride = array<i64: 1, 1>}
      : (tensor<4x8x8x1xf32>, tensor<8x3x3x1xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>)
      -> tensor<4x6x6x8xf32>
  %act = tosa.clamp %conv {min_val = 0.0 : f32, max_val = 3.40282347e+38 : f32}
      : (tensor<4x6x6x8xf32>) -> tensor<4x6x6x8xf32>

  // 2x2 max pooling, stride 2.
  %pool = tosa.max_pool2d %act
      {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}
      : (tensor<4x6x6x8xf32>) -> tensor<4x3x3x8xf32>

  // Back to NCHW, flatten (C, H, W) -> 72, fully connected layer.
  %pn = tosa.transpose %pool {perms = array<i32: 0, 3, 1, 2>}
      : (tensor<4x3x3x8xf32>) -> tensor<4x8x3x3xf32>
  %flat = tosa.reshape %pn, %s_flat : (tensor<4x8x3x3xf32>, !tosa.shape<3>) -> tensor<1x4x72xf32>
  %wfc3 = tosa.reshape %wfc, %s_wfc : (tensor<72x10xf32>, !tosa.shape<3>) -> tensor<1x72x10xf32>
  %bfc3 = tosa.reshape %bfc, %s_bfc : (tensor<10xf32>, !tosa.shape<3>) -> tensor<1x1x10xf32>
  %mm = tosa.matmul %flat, %wfc3, %zp, %zp
      : (tensor<1x4x72xf32>, tensor<1x72x10xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x10xf32>
  %logits = tosa.add %mm, %bfc3 : (tensor<1x4x10xf32>, tensor<1x1x10xf32>) -> tensor<1x4x10xf32>
  %out = tosa.reshape %logits, %s_out : (tensor<1x4x10xf32>, !tosa.shape<2>) -> tensor<4x10xf32>
  return %out : tensor<4x10xf32>
}
