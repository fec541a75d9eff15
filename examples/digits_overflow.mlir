// A digits classifier whose activations overflow f16 in the forward pass:
// Shazeer's bilinear feed-forward layer ("GLU Variants Improve
// Transformer", 2020: FFN_Bilinear(x) = (x Wa * x Wb) Wo, no activation)
// on the raw 8-bit pixel values (0..255, as a camera delivers them; the
// data set holds them scaled to [0, 1], so the model multiplies by 255),
// then a layer norm (post-LN, no learned scale: mp-run starts rank-1
// parameters at zero), relu and a linear classifier. Batches of 64
// handwritten 8x8 digits (Debian python3-sklearn's data set, exported by
// scripts/export_digits.py), the conventions of digits_mlp.mlir:
//   @loss    : mean softmax cross-entropy against one-hot labels (mp.loss)
//   @predict : the logits, for accuracy (mp.predict)
//
//   p      = 255 x                                     raw pixel values
//   g      = (p Wa) * (p Wb)                           64x512, |g| ~ 3e5
//   z      = g Wo                                      64x512
//   h      = relu((z - mean(z)) / sqrt(var(z) + 1e-5) + b1)
//   logits = h W3 + b3
//
// The layer norm makes the model indifferent to the scale of its input:
// f32 and bf16 train it like the digits MLP (98.61% held-out accuracy
// after 10 epochs, mean of seeds 0-2, bf16 equal). In f16 the product g
// passes 65504 in every batch (its factors are a few hundred each), so the
// loss is NaN, every step is skipped and dynamic loss scaling only drives
// the scale down to its floor of 1: scaling multiplies the backward pass,
// not the forward one.
// `mp-run train examples/digits_overflow.mlir --precision f16
// --check-numerics` names the product (the generic making %g) as the
// first offender.
// Keeping the ops that hold or read the large values in f32 cures it: g,
// z, centered and h with `mp.precision = #mp.precision<f32>`, in @loss and
// in @predict, and the backward ops built for them (g's users there: the
// weight gradient of Wo reads g).

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

// Both functions spell out the same forward pass: --mp-autodiff does not
// differentiate through calls.
func.func @loss(%x: tensor<64x64xf32>, %labels: tensor<64x10xf32>,
    %wa: tensor<64x512xf32> {mp.param = "wa"}, %wb: tensor<64x512xf32> {mp.param = "wb"},
    %wo: tensor<512x512xf32> {mp.param = "wo"}, %b1: tensor<512xf32> {mp.param = "b1"},
    %w3: tensor<512x10xf32> {mp.param = "w3"}, %b3: tensor<10xf32> {mp.param = "b3"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %raw = arith.constant 255.0 : f32
  %inv_h = arith.constant 0.001953125 : f32
  %eps = arith.constant 1.0e-5 : f32
  // Raw 8-bit pixel values.
  %xe = tensor.empty() : tensor<64x64xf32>
  %px = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%xe : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %raw : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  // Bilinear feed-forward: (p Wa) * (p Wb), projected by Wo.
  %he = tensor.empty() : tensor<64x512xf32>
  %hz = linalg.fill ins(%zero : f32) outs(%he : tensor<64x512xf32>) -> tensor<64x512xf32>
  %u = linalg.matmul ins(%px, %wa : tensor<64x64xf32>, tensor<64x512xf32>) outs(%hz : tensor<64x512xf32>) -> tensor<64x512xf32>
  %v = linalg.matmul ins(%px, %wb : tensor<64x64xf32>, tensor<64x512xf32>) outs(%hz : tensor<64x512xf32>) -> tensor<64x512xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %v : tensor<64x512xf32>, tensor<64x512xf32>) outs(%he : tensor<64x512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %z = linalg.matmul ins(%g, %wo : tensor<64x512xf32>, tensor<512x512xf32>) outs(%hz : tensor<64x512xf32>) -> tensor<64x512xf32>
  // Layer norm over the 512 features (no learned scale), bias, relu.
  %re = tensor.empty() : tensor<64xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%z : tensor<64x512xf32>) outs(%rz : tensor<64xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %centered = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z, %sum : tensor<64x512xf32>, tensor<64xf32>) outs(%he : tensor<64x512xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.mulf %s, %inv_h : f32
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %sumsq = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%centered : tensor<64x512xf32>) outs(%rz : tensor<64xf32>) {
  ^bb0(%a: f32, %s: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %sq, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %rstd = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%sumsq : tensor<64xf32>) outs(%re : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %var = arith.mulf %a, %inv_h : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %h = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%centered, %rstd, %b1 : tensor<64x512xf32>, tensor<64xf32>, tensor<512xf32>) outs(%he : tensor<64x512xf32>) {
  ^bb0(%c: f32, %s: f32, %b: f32, %o: f32):
    %n = arith.mulf %c, %s : f32
    %nb = arith.addf %n, %b : f32
    %r = arith.maximumf %nb, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  // Classifier.
  %le = tensor.empty() : tensor<64x10xf32>
  %lz = linalg.fill ins(%zero : f32) outs(%le : tensor<64x10xf32>) -> tensor<64x10xf32>
  %lm = linalg.matmul ins(%h, %w3 : tensor<64x512xf32>, tensor<512x10xf32>) outs(%lz : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%lm, %b3 : tensor<64x10xf32>, tensor<10xf32>) outs(%le : tensor<64x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64x10xf32>
  // Mean softmax cross-entropy.
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.015625 : f32
  %maxinit = linalg.fill ins(%ninf : f32) outs(%re : tensor<64xf32>) -> tensor<64xf32>
  %rowmax = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<64x10xf32>) outs(%maxinit : tensor<64xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %rowmax : tensor<64x10xf32>, tensor<64xf32>) outs(%rz : tensor<64xf32>) {
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
    %wa: tensor<64x512xf32> {mp.param = "wa"}, %wb: tensor<64x512xf32> {mp.param = "wb"},
    %wo: tensor<512x512xf32> {mp.param = "wo"}, %b1: tensor<512xf32> {mp.param = "b1"},
    %w3: tensor<512x10xf32> {mp.param = "w3"}, %b3: tensor<10xf32> {mp.param = "b3"}) -> tensor<64x10xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %raw = arith.constant 255.0 : f32
  %inv_h = arith.constant 0.001953125 : f32
  %eps = arith.constant 1.0e-5 : f32
  // Raw 8-bit pixel values.
  %xe = tensor.empty() : tensor<64x64xf32>
  %px = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%xe : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %raw : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  // Bilinear feed-forward: (p Wa) * (p Wb), projected by Wo.
  %he = tensor.empty() : tensor<64x512xf32>
  %hz = linalg.fill ins(%zero : f32) outs(%he : tensor<64x512xf32>) -> tensor<64x512xf32>
  %u = linalg.matmul ins(%px, %wa : tensor<64x64xf32>, tensor<64x512xf32>) outs(%hz : tensor<64x512xf32>) -> tensor<64x512xf32>
  %v = linalg.matmul ins(%px, %wb : tensor<64x64xf32>, tensor<64x512xf32>) outs(%hz : tensor<64x512xf32>) -> tensor<64x512xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %v : tensor<64x512xf32>, tensor<64x512xf32>) outs(%he : tensor<64x512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %z = linalg.matmul ins(%g, %wo : tensor<64x512xf32>, tensor<512x512xf32>) outs(%hz : tensor<64x512xf32>) -> tensor<64x512xf32>
  // Layer norm over the 512 features (no learned scale), bias, relu.
  %re = tensor.empty() : tensor<64xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%z : tensor<64x512xf32>) outs(%rz : tensor<64xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %centered = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z, %sum : tensor<64x512xf32>, tensor<64xf32>) outs(%he : tensor<64x512xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.mulf %s, %inv_h : f32
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  %sumsq = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%centered : tensor<64x512xf32>) outs(%rz : tensor<64xf32>) {
  ^bb0(%a: f32, %s: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %sq, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %rstd = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%sumsq : tensor<64xf32>) outs(%re : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %var = arith.mulf %a, %inv_h : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %h = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%centered, %rstd, %b1 : tensor<64x512xf32>, tensor<64xf32>, tensor<512xf32>) outs(%he : tensor<64x512xf32>) {
  ^bb0(%c: f32, %s: f32, %b: f32, %o: f32):
    %n = arith.mulf %c, %s : f32
    %nb = arith.addf %n, %b : f32
    %r = arith.maximumf %nb, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x512xf32>
  // Classifier.
  %le = tensor.empty() : tensor<64x10xf32>
  %lz = linalg.fill ins(%zero : f32) outs(%le : tensor<64x10xf32>) -> tensor<64x10xf32>
  %lm = linalg.matmul ins(%h, %w3 : tensor<64x512xf32>, tensor<512x10xf32>) outs(%lz : tensor<64x10xf32>) -> tensor<64x10xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%lm, %b3 : tensor<64x10xf32>, tensor<10xf32>) outs(%le : tensor<64x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64x10xf32>
  return %logits : tensor<64x10xf32>
}
