// The digits classifier of the training issue: an MLP 64-512-512-10 on
// batches of 64 handwritten 8x8 digits (Debian python3-sklearn's data set,
// exported by scripts/export_digits.py).
//   @loss    : mean softmax cross-entropy against one-hot labels (mp.loss)
//   @predict : the logits, for accuracy (mp.predict)
// Both spell out the same forward pass: --mp-autodiff does not differentiate
// through calls.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

func.func @loss(%x: tensor<64x64xf32>, %labels: tensor<64x10xf32>,
    %w1: tensor<64x512xf32> {mp.param = "w1"}, %b1: tensor<512xf32> {mp.param = "b1"},
    %w2: tensor<512x512xf32> {mp.param = "w2"}, %b2: tensor<512xf32> {mp.param = "b2"},
    %w3: tensor<512x10xf32> {mp.param = "w3"}, %b3: tensor<10xf32> {mp.param = "b3"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.015625 : f32
  %h1_e = tensor.empty() : tensor<64x512xf32>
  %h1_z = linalg.fill ins(%zero : f32) outs(%h1_e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h1_mm = linalg.matmul ins(%x, %w1 : tensor<64x64xf32>, tensor<64x512xf32>) outs(%h1_z : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h1_mm, %b1 : tensor<64x512xf32>, tensor<512xf32>) outs(%h1_e : tensor<64x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %h2_e = tensor.empty() : tensor<64x512xf32>
  %h2_z = linalg.fill ins(%zero : f32) outs(%h2_e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h2_mm = linalg.matmul ins(%h1, %w2 : tensor<64x512xf32>, tensor<512x512xf32>) outs(%h2_z : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h2 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h2_mm, %b2 : tensor<64x512xf32>, tensor<512xf32>) outs(%h2_e : tensor<64x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %logits_e = tensor.empty() : tensor<64x10xf32>
  %logits_z = linalg.fill ins(%zero : f32) outs(%logits_e : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits_mm = linalg.matmul ins(%h2, %w3 : tensor<64x512xf32>, tensor<512x10xf32>) outs(%logits_z : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%logits_mm, %b3 : tensor<64x10xf32>, tensor<10xf32>) outs(%logits_e : tensor<64x10xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
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

func.func @predict(%x: tensor<64x64xf32>,
    %w1: tensor<64x512xf32> {mp.param = "w1"}, %b1: tensor<512xf32> {mp.param = "b1"},
    %w2: tensor<512x512xf32> {mp.param = "w2"}, %b2: tensor<512xf32> {mp.param = "b2"},
    %w3: tensor<512x10xf32> {mp.param = "w3"}, %b3: tensor<10xf32> {mp.param = "b3"}) -> tensor<64x10xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %h1_e = tensor.empty() : tensor<64x512xf32>
  %h1_z = linalg.fill ins(%zero : f32) outs(%h1_e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h1_mm = linalg.matmul ins(%x, %w1 : tensor<64x64xf32>, tensor<64x512xf32>) outs(%h1_z : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h1_mm, %b1 : tensor<64x512xf32>, tensor<512xf32>) outs(%h1_e : tensor<64x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %h2_e = tensor.empty() : tensor<64x512xf32>
  %h2_z = linalg.fill ins(%zero : f32) outs(%h2_e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h2_mm = linalg.matmul ins(%h1, %w2 : tensor<64x512xf32>, tensor<512x512xf32>) outs(%h2_z : tensor<64x512xf32>) -> tensor<64x512xf32>
  %h2 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h2_mm, %b2 : tensor<64x512xf32>, tensor<512xf32>) outs(%h2_e : tensor<64x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %logits_e = tensor.empty() : tensor<64x10xf32>
  %logits_z = linalg.fill ins(%zero : f32) outs(%logits_e : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits_mm = linalg.matmul ins(%h2, %w3 : tensor<64x512xf32>, tensor<512x10xf32>) outs(%logits_z : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%logits_mm, %b3 : tensor<64x10xf32>, tensor<10xf32>) outs(%logits_e : tensor<64x10xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<64x10xf32>
  return %logits : tensor<64x10xf32>
}
