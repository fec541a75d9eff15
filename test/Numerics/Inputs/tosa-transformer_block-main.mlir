// Deterministic driver for examples/tosa/transformer_block.mlir.
// Usage: cat examples/tosa/transformer_block.mlir test/Numerics/Inputs/tosa-transformer_block-main.mlir | <pipeline>
// Builds pseudo-random inputs/weights (integer hash of the element index, different seed per tensor),
// calls @forward and prints the result with printMemrefF32.
// NOTE: identical inputs to the linalg variant's driver, so outputs are comparable.

func.func private @printMemrefF32(tensor<*xf32>)

// Integer hash (murmur3 finalizer) of (linear index, seed) mapped to
// scale * (u - 0.5) + offset with u uniform in [0, 1) (24 bits, exact in f32).
// Pure i32 arithmetic, so the values are bit-identical on every platform.
func.func private @hash_uniform(%idx: index, %seed: i32, %scale: f32, %offset: f32) -> f32 {
  %i = arith.index_cast %idx : index to i32
  %golden = arith.constant -1640531535 : i32   // 0x9E3779B1
  %c1 = arith.constant -2048144777 : i32       // 0x85EBCA77
  %c2 = arith.constant -1028477379 : i32       // 0xC2B2AE3D
  %sh15 = arith.constant 15 : i32
  %sh13 = arith.constant 13 : i32
  %sh16 = arith.constant 16 : i32
  %sh8 = arith.constant 8 : i32
  %h0 = arith.muli %i, %golden : i32
  %h1 = arith.addi %h0, %seed : i32
  %t1 = arith.shrui %h1, %sh15 : i32
  %h2 = arith.xori %h1, %t1 : i32
  %h3 = arith.muli %h2, %c1 : i32
  %t2 = arith.shrui %h3, %sh13 : i32
  %h4 = arith.xori %h3, %t2 : i32
  %h5 = arith.muli %h4, %c2 : i32
  %t3 = arith.shrui %h5, %sh16 : i32
  %h6 = arith.xori %h5, %t3 : i32
  %top = arith.shrui %h6, %sh8 : i32
  %f = arith.uitofp %top : i32 to f32
  %inv = arith.constant 5.96046448e-08 : f32   // 2^-24
  %half = arith.constant 0.5 : f32
  %u = arith.mulf %f, %inv : f32
  %c = arith.subf %u, %half : f32
  %s = arith.mulf %c, %scale : f32
  %r = arith.addf %s, %offset : f32
  return %r : f32
}

func.func @main() {
  %seed_x = arith.constant 31 : i32
  %scale_x = arith.constant 2.0 : f32
  %offset_x = arith.constant 0.0 : f32
  // x = 2.0 * (hash(31, linear_index) - 0.5) + 0.0
  %x_e = tensor.empty() : tensor<8x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%x_e : tensor<8x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 16 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_x, %scale_x, %offset_x)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>

  %seed_wq = arith.constant 32 : i32
  %scale_wq = arith.constant 2.0 : f32
  %offset_wq = arith.constant 0.0 : f32
  // wq = 2.0 * (hash(32, linear_index) - 0.5) + 0.0
  %wq_e = tensor.empty() : tensor<16x16xf32>
  %wq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%wq_e : tensor<16x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 16 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_wq, %scale_wq, %offset_wq)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16x16xf32>

  %seed_wk = arith.constant 33 : i32
  %scale_wk = arith.constant 2.0 : f32
  %offset_wk = arith.constant 0.0 : f32
  // wk = 2.0 * (hash(33, linear_index) - 0.5) + 0.0
  %wk_e = tensor.empty() : tensor<16x16xf32>
  %wk = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%wk_e : tensor<16x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 16 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_wk, %scale_wk, %offset_wk)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16x16xf32>

  %seed_wv = arith.constant 34 : i32
  %scale_wv = arith.constant 1.5 : f32
  %offset_wv = arith.constant 0.0 : f32
  // wv = 1.5 * (hash(34, linear_index) - 0.5) + 0.0
  %wv_e = tensor.empty() : tensor<16x16xf32>
  %wv = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%wv_e : tensor<16x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 16 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_wv, %scale_wv, %offset_wv)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16x16xf32>

  %seed_wo = arith.constant 35 : i32
  %scale_wo = arith.constant 1.0 : f32
  %offset_wo = arith.constant 0.0 : f32
  // wo = 1.0 * (hash(35, linear_index) - 0.5) + 0.0
  %wo_e = tensor.empty() : tensor<16x16xf32>
  %wo = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%wo_e : tensor<16x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 16 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_wo, %scale_wo, %offset_wo)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16x16xf32>

  %seed_gamma = arith.constant 36 : i32
  %scale_gamma = arith.constant 0.4 : f32
  %offset_gamma = arith.constant 1.0 : f32
  // gamma = 0.4 * (hash(36, linear_index) - 0.5) + 1.0
  %gamma_e = tensor.empty() : tensor<16xf32>
  %gamma = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%gamma_e : tensor<16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_gamma, %scale_gamma, %offset_gamma)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16xf32>

  %seed_beta = arith.constant 37 : i32
  %scale_beta = arith.constant 0.2 : f32
  %offset_beta = arith.constant 0.0 : f32
  // beta = 0.2 * (hash(37, linear_index) - 0.5) + 0.0
  %beta_e = tensor.empty() : tensor<16xf32>
  %beta = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%beta_e : tensor<16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_beta, %scale_beta, %offset_beta)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16xf32>

  %seed_w1 = arith.constant 38 : i32
  %scale_w1 = arith.constant 1.2 : f32
  %offset_w1 = arith.constant 0.0 : f32
  // w1 = 1.2 * (hash(38, linear_index) - 0.5) + 0.0
  %w1_e = tensor.empty() : tensor<16x32xf32>
  %w1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%w1_e : tensor<16x32xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 32 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_w1, %scale_w1, %offset_w1)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>

  %seed_b1 = arith.constant 39 : i32
  %scale_b1 = arith.constant 0.2 : f32
  %offset_b1 = arith.constant 0.0 : f32
  // b1 = 0.2 * (hash(39, linear_index) - 0.5) + 0.0
  %b1_e = tensor.empty() : tensor<32xf32>
  %b1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%b1_e : tensor<32xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_b1, %scale_b1, %offset_b1)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<32xf32>

  %seed_w2 = arith.constant 40 : i32
  %scale_w2 = arith.constant 0.6 : f32
  %offset_w2 = arith.constant 0.0 : f32
  // w2 = 0.6 * (hash(40, linear_index) - 0.5) + 0.0
  %w2_e = tensor.empty() : tensor<32x16xf32>
  %w2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%w2_e : tensor<32x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 16 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_w2, %scale_w2, %offset_w2)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<32x16xf32>

  %seed_b2 = arith.constant 41 : i32
  %scale_b2 = arith.constant 0.2 : f32
  %offset_b2 = arith.constant 0.0 : f32
  // b2 = 0.2 * (hash(41, linear_index) - 0.5) + 0.0
  %b2_e = tensor.empty() : tensor<16xf32>
  %b2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%b2_e : tensor<16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_b2, %scale_b2, %offset_b2)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<16xf32>

  %result = func.call @forward(%x, %wq, %wk, %wv, %wo, %gamma, %beta, %w1, %b1, %w2, %b2)
      : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %unranked = tensor.cast %result : tensor<8x16xf32> to tensor<*xf32>
  func.call @printMemrefF32(%unranked) : (tensor<*xf32>) -> ()
  return
}
