// One loss through every data-movement rule: slices (contiguous, strided,
// rank-reducing), a concatenation, an insertion into a slice, and a gather
// from a table (an embedding lookup) whose ids repeat a row.
#m = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<4x6xf32> {mp.param = "w"}, %table: tensor<5x3xf32> {mp.param = "table"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.extract_slice %w[1, 0] [2, 6] [1, 1] : tensor<4x6xf32> to tensor<2x6xf32>
  %odd = tensor.extract_slice %w[0, 1] [4, 3] [1, 2] : tensor<4x6xf32> to tensor<4x3xf32>
  %last = tensor.extract_slice %w[3, 0] [1, 6] [1, 1] : tensor<4x6xf32> to tensor<6xf32>
  %both = tensor.concat dim(0) %rows, %w : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %put = tensor.insert_slice %last into %both[5, 0] [1, 6] [1, 1] : tensor<6xf32> into tensor<6x6xf32>
  %ids = arith.constant dense<[0, 2, 2, 4]> : tensor<4xi32>
  %e = tensor.empty() : tensor<4x3xf32>
  %rowsOf = linalg.generic {indexing_maps = [#row, #m], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %s0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  // sum of tanh(a) * a over %put, and of tanh(a) * b over %odd and %rowsOf
  %s1 = linalg.generic {indexing_maps = [#m, #all], iterator_types = ["reduction", "reduction"]}
      ins(%put : tensor<6x6xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %s: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %a : f32
    %r = arith.addf %p, %s : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %s2 = linalg.generic {indexing_maps = [#m, #m, #all], iterator_types = ["reduction", "reduction"]}
      ins(%odd, %rowsOf : tensor<4x3xf32>, tensor<4x3xf32>) outs(%s1 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %s: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %b : f32
    %r = arith.addf %p, %s : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %s2[] : tensor<f32>
  return %l : f32
}
