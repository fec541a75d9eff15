// Single-head transformer encoder block (post-LN), linalg on tensors.
//   x          : tensor<8x16xf32>   sequence of 8 tokens, d_model 16
//   Wq,Wk,Wv,Wo: tensor<16x16xf32>
//   gamma,beta : tensor<16xf32>     layer-norm scale / shift (eps 1e-5)
//   W1 : tensor<16x32xf32>, b1 : tensor<32xf32>   FFN up-projection
//   W2 : tensor<32x16xf32>, b2 : tensor<16xf32>   FFN down-projection
// Computation:
//   Q,K,V = x*Wq, x*Wk, x*Wv
//   P     = softmax(Q*K^T / sqrt(16))              (row-wise, as generics)
//   h     = layernorm(x + (P*V)*Wo) * gamma + beta
//   out   = h + (gelu_tanh(h*W1 + b1)*W2 + b2)     -> tensor<8x16xf32>
// forward(x, Wq, Wk, Wv, Wo, gamma, beta, W1, b1, W2, b2) -> tensor<8x16xf32>

#map_id = affine_map<(d0, d1) -> (d0, d1)>
#map_col = affine_map<(d0, d1) -> (d1)>
#map_row = affine_map<(d0, d1) -> (d0)>
#map_1d = affine_map<(d0) -> (d0)>

func.func @forward(%x: tensor<8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>,
                   %wv: tensor<16x16xf32>, %wo: tensor<16x16xf32>,
                   %gamma: tensor<16xf32>, %beta: tensor<16xf32>,
                   %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
                   %w2: tensor<32x16xf32>, %b2: tensor<16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32

  %e16 = tensor.empty() : tensor<8x16xf32>
  %z16 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<8x16xf32>) -> tensor<8x16xf32>

  // Projections.
  %q = linalg.matmul ins(%x, %wq : tensor<8x16xf32>, tensor<16x16xf32>)
                     outs(%z16 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<8x16xf32>, tensor<16x16xf32>)
                     outs(%z16 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<8x16xf32>, tensor<16x16xf32>)
                     outs(%z16 : tensor<8x16xf32>) -> tensor<8x16xf32>

  // scores = Q * K^T / sqrt(16)
  %ekt = tensor.empty() : tensor<16x8xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16xf32>) outs(%ekt : tensor<16x8xf32>)
                         permutation = [1, 0]
  %e8 = tensor.empty() : tensor<8x8xf32>
  %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %qk = linalg.matmul ins(%q, %kt : tensor<8x16xf32>, tensor<16x8xf32>)
                      outs(%z8 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %scores = linalg.generic {indexing_maps = [#map_id, #map_id],
                            iterator_types = ["parallel", "parallel"]}
      ins(%qk : tensor<8x8xf32>) outs(%e8 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %scale = arith.constant 0.25 : f32
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>

  // Softmax over the key dimension.
  %er = tensor.empty() : tensor<8xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %rowmax = linalg.generic {indexing_maps = [#map_id, #map_row],
                            iterator_types = ["parallel", "reduction"]}
      ins(%scores : tensor<8x8xf32>) outs(%maxinit : tensor<8xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %shifted = linalg.generic {indexing_maps = [#map_id, #map_row, #map_id],
                             iterator_types = ["parallel", "parallel"]}
      ins(%scores, %rowmax : tensor<8x8xf32>, tensor<8xf32>) outs(%e8 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %exps = linalg.generic {indexing_maps = [#map_id, #map_id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%shifted : tensor<8x8xf32>) outs(%e8 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %rowsum = linalg.generic {indexing_maps = [#map_id, #map_row],
                            iterator_types = ["parallel", "reduction"]}
      ins(%exps : tensor<8x8xf32>) outs(%zr : tensor<8xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %probs = linalg.generic {indexing_maps = [#map_id, #map_row, #map_id],
                           iterator_types = ["parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<8x8xf32>, tensor<8xf32>) outs(%e8 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>

  // attn = P * V, output projection, residual.
  %attn = linalg.matmul ins(%probs, %v : tensor<8x8xf32>, tensor<8x16xf32>)
                        outs(%z16 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %proj = linalg.matmul ins(%attn, %wo : tensor<8x16xf32>, tensor<16x16xf32>)
                        outs(%z16 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %res1 = linalg.generic {indexing_maps = [#map_id, #map_id, #map_id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%x, %proj : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e16 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>

  // Layer norm over d_model.
  %sum1 = linalg.generic {indexing_maps = [#map_id, #map_row],
                          iterator_types = ["parallel", "reduction"]}
      ins(%res1 : tensor<8x16xf32>) outs(%zr : tensor<8xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %mean = linalg.generic {indexing_maps = [#map_1d, #map_1d],
                          iterator_types = ["parallel"]}
      ins(%sum1 : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %centered = linalg.generic {indexing_maps = [#map_id, #map_row, #map_id],
                              iterator_types = ["parallel", "parallel"]}
      ins(%res1, %mean : tensor<8x16xf32>, tensor<8xf32>) outs(%e16 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %sumsq = linalg.generic {indexing_maps = [#map_id, #map_row],
                           iterator_types = ["parallel", "reduction"]}
      ins(%centered : tensor<8x16xf32>) outs(%zr : tensor<8xf32>) {
  ^bb0(%a: f32, %s: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %sq, %s : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %rstd = linalg.generic {indexing_maps = [#map_1d, #map_1d],
                          iterator_types = ["parallel"]}
      ins(%sumsq : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %var = arith.divf %a, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %ln = linalg.generic {indexing_maps = [#map_id, #map_row, #map_col, #map_col, #map_id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%centered, %rstd, %gamma, %beta
          : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>)
      outs(%e16 : tensor<8x16xf32>) {
  ^bb0(%c: f32, %s: f32, %g: f32, %bt: f32, %o: f32):
    %n = arith.mulf %c, %s : f32
    %y = arith.mulf %n, %g : f32
    %r = arith.addf %y, %bt : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>

  // FFN: gelu(h*W1 + b1) * W2 + b2, residual.
  %e32 = tensor.empty() : tensor<8x32xf32>
  %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %f1 = linalg.matmul ins(%ln, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
                      outs(%z32 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %f1b = linalg.generic {indexing_maps = [#map_id, #map_col, #map_id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%f1, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%e32 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  // gelu(x) = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x^3)))
  %gelu = linalg.generic {indexing_maps = [#map_id, #map_id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%f1b : tensor<8x32xf32>) outs(%e32 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0.7978845608 : f32
    %c1 = arith.constant 0.044715 : f32
    %x2 = arith.mulf %a, %a : f32
    %x3 = arith.mulf %x2, %a : f32
    %t0 = arith.mulf %x3, %c1 : f32
    %t1 = arith.addf %a, %t0 : f32
    %t2 = arith.mulf %t1, %c0 : f32
    %th = math.tanh %t2 : f32
    %t3 = arith.addf %th, %one : f32
    %hx = arith.mulf %a, %half : f32
    %r = arith.mulf %hx, %t3 : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %f2 = linalg.matmul ins(%gelu, %w2 : tensor<8x32xf32>, tensor<32x16xf32>)
                      outs(%z16 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %out = linalg.generic {indexing_maps = [#map_id, #map_col, #map_id, #map_id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%f2, %b2, %ln : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>)
      outs(%e16 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %h: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    %r = arith.addf %t, %h : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  return %out : tensor<8x16xf32>
}
