// MLP classifier, TOSA form (same computation and signature as examples/mlp.mlir).
//   x  : tensor<8x64xf32>   batch of 8 flattened 8x8 images
//   W1 : tensor<64x32xf32>, b1 : tensor<32xf32>
//   W2 : tensor<32x10xf32>, b2 : tensor<10xf32>
//   forward(x, W1, b1, W2, b2) -> softmax(relu(x*W1 + b1)*W2 + b2) : tensor<8x10xf32>
// 2-D operands are reshaped to rank 3 (batch 1) for tosa.matmul; relu is
// tosa.clamp; softmax = reduce_max, sub, exp, reduce_sum, reciprocal, mul.

func.func @forward(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>,
                   %w2: tensor<32x10xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s_x = tosa.const_shape {values = dense<[1, 8, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_w1 = tosa.const_shape {values = dense<[1, 64, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_b1 = tosa.const_shape {values = dense<[1, 1, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_w2 = tosa.const_shape {values = dense<[1, 32, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_b2 = tosa.const_shape {values = dense<[1, 1, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_out = tosa.const_shape {values = dense<[8, 10]> : tensor<2xindex>} : () -> !tosa.shape<2>

  // Layer 1: h = relu(x * W1 + b1)
  %x3 = tosa.reshape %x, %s_x : (tensor<8x64xf32>, !tosa.shape<3>) -> tensor<1x8x64xf32>
  %w13 = tosa.reshape %w1, %s_w1 : (tensor<64x32xf32>, !tosa.shape<3>) -> tensor<1x64x32xf32>
  %b13 = tosa.reshape %b1, %s_b1 : (tensor<32xf32>, !tosa.shape<3>) -> tensor<1x1x32xf32>
  %mm1 = tosa.matmul %x3, %w13, %zp, %zp
      : (tensor<1x8x64xf32>, tensor<1x64x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %a1 = tosa.add %mm1, %b13 : (tensor<1x8x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %h1 = tosa.clamp %a1 {min_val = 0.0 : f32, max_val = 3.40282347e+38 : f32}
      : (tensor<1x8x32xf32>) -> tensor<1x8x32xf32>

  // Layer 2: logits = h * W2 + b2
  %w23 = tosa.reshape %w2, %s_w2 : (tensor<32x10xf32>, !tosa.shape<3>) -> tensor<1x32x10xf32>
  %b23 = tosa.reshape %b2, %s_b2 : (tensor<10xf32>, !tosa.shape<3>) -> tensor<1x1x10xf32>
  %mm2 = tosa.matmul %h1, %w23, %zp, %zp
      : (tensor<1x8x32xf32>, tensor<1x32x10xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x10xf32>
  %logits = tosa.add %mm2, %b23 : (tensor<1x8x10xf32>, tensor<1x1x10xf32>) -> tensor<1x8x10xf32>

  // Softmax over the class dimension.
  %mx = tosa.reduce_max %logits {axis = 2 : i32} : (tensor<1x8x10xf32>) -> tensor<1x8x1xf32>
  %sh = tosa.sub %logits, %mx : (tensor<1x8x10xf32>, tensor<1x8x1xf32>) -> tensor<1x8x10xf32>
  %ex = tosa.exp %sh : (tensor<1x8x10xf32>) -> tensor<1x8x10xf32>
  %sm = tosa.reduce_sum %ex {axis = 2 : i32} : (tensor<1x8x10xf32>) -> tensor<1x8x1xf32>
  %rc = tosa.reciprocal %sm : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %pr = tosa.mul %ex, %rc, %shift
      : (tensor<1x8x10xf32>, tensor<1x8x1xf32>, tensor<1xi8>) -> tensor<1x8x10xf32>
  %out = tosa.reshape %pr, %s_out : (tensor<1x8x10xf32>, !tosa.shape<2>) -> tensor<8x10xf32>
  return %out : tensor<8x10xf32>
}
