// MLP classifier (linalg on tensors), digits-sized.
//   x  : tensor<8x64xf32>   batch of 8 flattened 8x8 images
//   W1 : tensor<64x32xf32>, b1 : tensor<32xf32>
//   W2 : tensor<32x10xf32>, b2 : tensor<10xf32>
//   forward(x, W1, b1, W2, b2) -> softmax(relu(x*W1 + b1)*W2 + b2) : tensor<8x10xf32>
// Softmax (row-wise over the 10 classes) is written out as linalg.generic ops:
// max-reduce, subtract, exp, sum-reduce, divide.

#map_id = affine_map<(d0, d1) -> (d0, d1)>
#map_col = affine_map<(d0, d1) -> (d1)>
#map_row = affine_map<(d0, d1) -> (d0)>

func.func @forward(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>,
                   %w2: tensor<32x10xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32

  // Layer 1: h = relu(x * W1 + b1)
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<8x64xf32>, tensor<64x32xf32>)
                       outs(%acc1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h1 = linalg.generic {indexing_maps = [#map_id, #map_col, #map_id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%mm1, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>

  // Layer 2: logits = h * W2 + b2
  %e2 = tensor.empty() : tensor<8x10xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %mm2 = linalg.matmul ins(%h1, %w2 : tensor<8x32xf32>, tensor<32x10xf32>)
                       outs(%acc2 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %logits = linalg.generic {indexing_maps = [#map_id, #map_col, #map_id],
                            iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %b2 : tensor<8x10xf32>, tensor<10xf32>) outs(%e2 : tensor<8x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x10xf32>

  // Softmax over the class dimension.
  %er = tensor.empty() : tensor<8xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %rowmax = linalg.generic {indexing_maps = [#map_id, #map_row],
                            iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<8x10xf32>) outs(%maxinit : tensor<8xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %shifted = linalg.generic {indexing_maps = [#map_id, #map_row, #map_id],
                             iterator_types = ["parallel", "parallel"]}
      ins(%logits, %rowmax : tensor<8x10xf32>, tensor<8xf32>) outs(%e2 : tensor<8x10xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<8x10xf32>
  %exps = linalg.generic {indexing_maps = [#map_id, #map_id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%shifted : tensor<8x10xf32>) outs(%e2 : tensor<8x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8x10xf32>
  %suminit = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %rowsum = linalg.generic {indexing_maps = [#map_id, #map_row],
                            iterator_types = ["parallel", "reduction"]}
      ins(%exps : tensor<8x10xf32>) outs(%suminit : tensor<8xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %probs = linalg.generic {indexing_maps = [#map_id, #map_row, #map_id],
                           iterator_types = ["parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<8x10xf32>, tensor<8xf32>) outs(%e2 : tensor<8x10xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<8x10xf32>
  return %probs : tensor<8x10xf32>
}
