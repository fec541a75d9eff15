// Training form of a small MLP classifier: the loss function the training
// passes start from. Parameters are marked mp.param, the function mp.loss.
//   x      : tensor<4x6xf32>   batch of 4 samples, 6 features
//   labels : tensor<4x3xf32>   one-hot targets over 3 classes
//   W1 6x5, b1 5, W2 5x3, b2 3
//   loss = mean over the batch of -sum(labels * log_softmax(relu(x W1 + b1) W2 + b2))

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

func.func @loss(%x: tensor<4x6xf32>, %labels: tensor<4x3xf32>,
                %w1: tensor<6x5xf32> {mp.param = "w1"}, %b1: tensor<5xf32> {mp.param = "b1"},
                %w2: tensor<5x3xf32> {mp.param = "w2"}, %b2: tensor<3xf32> {mp.param = "b2"})
    -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.25 : f32

  %e1 = tensor.empty() : tensor<4x5xf32>
  %acc1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<4x6xf32>, tensor<6x5xf32>) outs(%acc1 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm1, %b1 : tensor<4x5xf32>, tensor<5xf32>) outs(%e1 : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>

  %e2 = tensor.empty() : tensor<4x3xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm2 = linalg.matmul ins(%h, %w2 : tensor<4x5xf32>, tensor<5x3xf32>) outs(%acc2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %logits = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %b2 : tensor<4x3xf32>, tensor<3xf32>) outs(%e2 : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>

  // log_softmax: logits - max - log(sum(exp(logits - max)))
  %er = tensor.empty() : tensor<4xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %rowmax = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4x3xf32>) outs(%maxinit : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %suminit = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %rowmax : tensor<4x3xf32>, tensor<4xf32>) outs(%suminit : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %x2 = math.exp %d : f32
    %r = arith.addf %x2, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %logp = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%logits, %rowmax, %rowsum : tensor<4x3xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4x3xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %l = math.log %s : f32
    %d = arith.subf %a, %m : f32
    %r = arith.subf %d, %l : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>

  // Mean negative log-likelihood of the labels.
  %e0 = tensor.empty() : tensor<f32>
  %init0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nll = linalg.generic {indexing_maps = [#id, #id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%logp, %labels : tensor<4x3xf32>, tensor<4x3xf32>) outs(%init0 : tensor<f32>) {
  ^bb0(%p: f32, %t: f32, %s: f32):
    %m = arith.mulf %p, %t : f32
    %r = arith.subf %s, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %total = tensor.extract %nll[] : tensor<f32>
  %mean = arith.mulf %total, %inv_batch : f32
  return %mean : f32
}
