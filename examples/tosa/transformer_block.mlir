// Single-head transformer encoder block (post-LN), TOSA form
// (same computation and signature as examples/transformer_block.mlir).
//   x          : tensor<8x16xf32>   sequence of 8 tokens, d_model 16
//   Wq,Wk,Wv,Wo: tensor<16x16xf32>
//   gamma,beta : tensor<16xf32>     layer-norm scale / shift (eps 1e-5)
//   W1 : tensor<16x32xf32>, b1 : tensor<32xf32>   FFN up-projection
//   W2 : tensor<32x16xf32>, b2 : tensor<16xf32>   FFN down-projection
// Computation:
//   Q,K,V = x*Wq, x*Wk, x*Wv
//   P     = softmax(Q*K^T / sqrt(16))
//   h     = layernorm(x + (P*V)*Wo) * gamma + beta
//   out   = h + (gelu_tanh(h*W1 + b1)*W2 + b2)     -> tensor<8x16xf32>
// Everything runs on rank-3 (batch 1) tensors because tosa.matmul is batched.
// forward(x, Wq, Wk, Wv, Wo, gamma, beta, W1, b1, W2, b2) -> tensor<8x16xf32>

func.func @forward(%x: tensor<8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>,
                   %wv: tensor<16x16xf32>, %wo: tensor<16x16xf32>,
                   %gamma: tensor<16xf32>, %beta: tensor<16xf32>,
                   %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
                   %w2: tensor<32x16xf32>, %b2: tensor<16xf32>) -> tensor<8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c_scale = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %c_inv_d = "tosa.const"() <{values = dense<0.0625> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %c_eps = "tosa.const"() <{values = dense<1.0e-5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %c_half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %c_one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %c_gk = "tosa.const"() <{values = dense<0.7978845608> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %c_gc = "tosa.const"() <{values = dense<0.044715> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s_x = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_dd = tosa.const_shape {values = dense<[1, 16, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_d = tosa.const_shape {values = dense<[1, 1, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_w1 = tosa.const_shape {values = dense<[1, 16, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_b1 = tosa.const_shape {values = dense<[1, 1, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_w2 = tosa.const_shape {values = dense<[1, 32, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_out = tosa.const_shape {values = dense<[8, 16]> : tensor<2xindex>} : () -> !tosa.shape<2>

  %x3 = tosa.reshape %x, %s_x : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %wq3 = tosa.reshape %wq, %s_dd : (tensor<16x16xf32>, !tosa.shape<3>) -> tensor<1x16x16xf32>
  %wk3 = tosa.reshape %wk, %s_dd : (tensor<16x16xf32>, !tosa.shape<3>) -> tensor<1x16x16xf32>
  %wv3 = tosa.reshape %wv, %s_dd : (tensor<16x16xf32>, !tosa.shape<3>) -> tensor<1x16x16xf32>
  %wo3 = tosa.reshape %wo, %s_dd : (tensor<16x16xf32>, !tosa.shape<3>) -> tensor<1x16x16xf32>
  %gamma3 = tosa.reshape %gamma, %s_d : (tensor<16xf32>, !tosa.shape<3>) -> tensor<1x1x16xf32>
  %beta3 = tosa.reshape %beta, %s_d : (tensor<16xf32>, !tosa.shape<3>) -> tensor<1x1x16xf32>
  %w13 = tosa.reshape %w1, %s_w1 : (tensor<16x32xf32>, !tosa.shape<3>) -> tensor<1x16x32xf32>
  %b13 = tosa.reshape %b1, %s_b1 : (tensor<32xf32>, !tosa.shape<3>) -> tensor<1x1x32xf32>
  %w23 = tosa.reshape %w2, %s_w2 : (tensor<32x16xf32>, !tosa.shape<3>) -> tensor<1x32x16xf32>
  %b23 = tosa.reshape %b2, %s_d : (tensor<16xf32>, !tosa.shape<3>) -> tensor<1x1x16xf32>

  // Projections.
  %q = tosa.matmul %x3, %wq3, %zp, %zp
      : (tensor<1x8x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %k = tosa.matmul %x3, %wk3, %zp, %zp
      : (tensor<1x8x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %v = tosa.matmul %x3, %wv3, %zp, %zp
      : (tensor<1x8x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>

  // scores = Q * K^T / sqrt(16)
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<1x8x16xf32>) -> tensor<1x16x8xf32>
  %qk = tosa.matmul %q, %kt, %zp, %zp
      : (tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8xf32>
  %scores = tosa.mul %qk, %c_scale, %shift
      : (tensor<1x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x8xf32>

  // Softmax over the key dimension.
  %mx = tosa.reduce_max %scores {axis = 2 : i32} : (tensor<1x8x8xf32>) -> tensor<1x8x1xf32>
  %sh = tosa.sub %scores, %mx : (tensor<1x8x8xf32>, tensor<1x8x1xf32>) -> tensor<1x8x8xf32>
  %ex = tosa.exp %sh : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %sm = tosa.reduce_sum %ex {axis = 2 : i32} : (tensor<1x8x8xf32>) -> tensor<1x8x1xf32>
  %rc = tosa.reciprocal %sm : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %probs = tosa.mul %ex, %rc, %shift
      : (tensor<1x8x8xf32>, tensor<1x8x1xf32>, tensor<1xi8>) -> tensor<1x8x8xf32>

  // attn = P * V, output projection, residual.
  %attn = tosa.matmul %probs, %v, %zp, %zp
      : (tensor<1x8x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %proj = tosa.matmul %attn, %wo3, %zp, %zp
      : (tensor<1x8x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %res1 = tosa.add %x3, %proj : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>

  // Layer norm over d_model.
  %sum1 = tosa.reduce_sum %res1 {axis = 2 : i32} : (tensor<1x8x16xf32>) -> tensor<1x8x1xf32>
  %mean = tosa.mul %sum1, %c_inv_d, %shift
      : (tensor<1x8x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x1xf32>
  %cen = tosa.sub %res1, %mean : (tensor<1x8x16xf32>, tensor<1x8x1xf32>) -> tensor<1x8x16xf32>
  %sq = tosa.mul %cen, %cen, %shift
      : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1xi8>) -> tensor<1x8x16xf32>
  %sumsq = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x8x16xf32>) -> tensor<1x8x1xf32>
  %var = tosa.mul %sumsq, %c_inv_d, %shift
      : (tensor<1x8x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x1xf32>
  %ve = tosa.add %var, %c_eps : (tensor<1x8x1xf32>, tensor<1x1x1xf32>) -> tensor<1x8x1xf32>
  %rstd = tosa.rsqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %nrm = tosa.mul %cen, %rstd, %shift
      : (tensor<1x8x16xf32>, tensor<1x8x1xf32>, tensor<1xi8>) -> tensor<1x8x16xf32>
  %scl = tosa.mul %nrm, %gamma3, %shift
      : (tensor<1x8x16xf32>, tensor<1x1x16xf32>, tensor<1xi8>) -> tensor<1x8x16xf32>
  %ln = tosa.add %scl, %beta3 : (tensor<1x8x16xf32>, tensor<1x1x16xf32>) -> tensor<1x8x16xf32>

  // FFN: gelu(h*W1 + b1) * W2 + b2, residual.
  %f1 = tosa.matmul %ln, %w13, %zp, %zp
      : (tensor<1x8x16xf32>, tensor<1x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x32xf32>
  %f1b = tosa.add %f1, %b13 : (tensor<1x8x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  // gelu(x) = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x^3)))
  %x2 = tosa.mul %f1b, %f1b, %shift
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1xi8>) -> tensor<1x8x32xf32>
  %xc = tosa.mul %x2, %f1b, %shift
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1xi8>) -> tensor<1x8x32xf32>
  %t0 = tosa.mul %xc, %c_gc, %shift
      : (tensor<1x8x32xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x32xf32>
  %t1 = tosa.add %f1b, %t0 : (tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  %t2 = tosa.mul %t1, %c_gk, %shift
      : (tensor<1x8x32xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x32xf32>
  %th = tosa.tanh %t2 : (tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  %t3 = tosa.add %th, %c_one : (tensor<1x8x32xf32>, tensor<1x1x1xf32>) -> tensor<1x8x32xf32>
  %hx = tosa.mul %f1b, %c_half, %shift
      : (tensor<1x8x32xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x32xf32>
  %gelu = tosa.mul %hx, %t3, %shift
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1xi8>) -> tensor<1x8x32xf32>
  %f2 = tosa.matmul %gelu, %w23, %zp, %zp
      : (tensor<1x8x32xf32>, tensor<1x32x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %f2b = tosa.add %f2, %b23 : (tensor<1x8x16xf32>, tensor<1x1x16xf32>) -> tensor<1x8x16xf32>
  %out3 = tosa.add %f2b, %ln : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %out = tosa.reshape %out3, %s_out : (tensor<1x8x16xf32>, !tosa.shape<2>) -> tensor<8x16xf32>
  return %out : tensor<8x16xf32>
}
