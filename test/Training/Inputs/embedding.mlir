// A language-model-shaped loss with tied weights: token embeddings gathered
// from %table (ids repeat a row), a projection, and an LM head that reads
// the same %table transposed. The table's gradient sums a scatter-add (the
// gather's) and a product (the head's).
#m = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%table: tensor<6x4xf32> {mp.param = "table"}, %w: tensor<4x4xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %ids = arith.constant dense<[0, 2, 2, 5, 1]> : tensor<5xi32>
  %e = tensor.empty() : tensor<5x4xf32>
  %rows = linalg.generic {indexing_maps = [#row, #m], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<5xi32>) outs(%e : tensor<5x4xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<6x4xf32>
    linalg.yield %v : f32
  } -> tensor<5x4xf32>
  %hz = linalg.fill ins(%zero : f32) outs(%e : tensor<5x4xf32>) -> tensor<5x4xf32>
  %h = linalg.matmul ins(%rows, %w : tensor<5x4xf32>, tensor<4x4xf32>) outs(%hz : tensor<5x4xf32>) -> tensor<5x4xf32>
  %le = tensor.empty() : tensor<5x6xf32>
  %lz = linalg.fill ins(%zero : f32) outs(%le : tensor<5x6xf32>) -> tensor<5x6xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %table : tensor<5x4xf32>, tensor<6x4xf32>) outs(%lz : tensor<5x6xf32>) -> tensor<5x6xf32>
  %s0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  // sum of tanh(z) * z over the logits
  %s = linalg.generic {indexing_maps = [#m, #all], iterator_types = ["reduction", "reduction"]}
      ins(%logits : tensor<5x6xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %r: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %a : f32
    %q = arith.addf %p, %r : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}
