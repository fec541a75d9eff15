// Training form of a single-head attention block with a residual connection
// and layer norm, and a mean-squared-error loss against a target.
//   x, target : tensor<4x8xf32>   (sequence 4, model width 8)
//   Wq, Wk, Wv : 8x8, gamma, beta : 8
//   out = layer_norm(x + softmax(Q K^T / sqrt(8)) V) * gamma + beta
//   loss = mean((out - target)^2)

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>

func.func @loss(%x: tensor<4x8xf32>, %target: tensor<4x8xf32>,
                %wq: tensor<8x8xf32> {mp.param = "wq"}, %wk: tensor<8x8xf32> {mp.param = "wk"},
                %wv: tensor<8x8xf32> {mp.param = "wv"},
                %gamma: tensor<8xf32> {mp.param = "gamma"}, %beta: tensor<8xf32> {mp.param = "beta"})
    -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %inv_width = arith.constant 0.125 : f32
  %eps = arith.constant 1.0e-5 : f32
  %inv_count = arith.constant 0.03125 : f32

  %e = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>

  // scores = Q K^T * scale
  %es = tensor.empty() : tensor<4x4xf32>
  %accs = linalg.fill ins(%zero : f32) outs(%es : tensor<4x4xf32>) -> tensor<4x4xf32>
  %qk = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%q, %k : tensor<4x8xf32>, tensor<4x8xf32>) outs(%accs : tensor<4x4xf32>) -> tensor<4x4xf32>
  %scores = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%qk : tensor<4x4xf32>) outs(%es : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>

  // softmax over keys
  %er = tensor.empty() : tensor<4xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %rowmax = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%scores : tensor<4x4xf32>) outs(%maxinit : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %exps = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scores, %rowmax : tensor<4x4xf32>, tensor<4xf32>) outs(%es : tensor<4x4xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %suminit = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exps : tensor<4x4xf32>) outs(%suminit : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %probs = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<4x4xf32>, tensor<4xf32>) outs(%es : tensor<4x4xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>

  // attention output and residual
  %att = linalg.matmul ins(%probs, %v : tensor<4x4xf32>, tensor<4x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %res = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %att : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>

  // layer norm over the model width
  %meaninit = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%res : tensor<4x8xf32>) outs(%meaninit : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %varsum = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%res, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%meaninit : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32, %acc2: f32):
    %mean = arith.mulf %s, %inv_width : f32
    %d = arith.subf %a, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %acc2 : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %out = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%res, %sum, %varsum, %gamma, %beta : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %vs: f32, %g: f32, %b: f32, %o: f32):
    %mean = arith.mulf %s, %inv_width : f32
    %var = arith.mulf %vs, %inv_width : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    %d = arith.subf %a, %mean : f32
    %n = arith.mulf %d, %rs : f32
    %sc = arith.mulf %n, %g : f32
    %r = arith.addf %sc, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>

  // mean squared error
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sq = linalg.generic {indexing_maps = [#id, #id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%out, %target : tensor<4x8xf32>, tensor<4x8xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %t: f32, %s: f32):
    %d = arith.subf %a, %t : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %s : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %total = tensor.extract %sq[] : tensor<f32>
  %mse = arith.mulf %total, %inv_count : f32
  return %mse : f32
}
