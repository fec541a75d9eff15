// Deterministic driver for examples/tosa/mlp.mlir.
// Usage: cat examples/tosa/mlp.mlir test/Numerics/Inputs/tosa-mlp-main.mlir | <pipeline>
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
  %seed_x = arith.constant 11 : i32
  %scale_x = arith.constant 1.0 : f32
  %offset_x = arith.constant 0.5 : f32
  // x = 1.0 * (hash(11, linear_index) - 0.5) + 0.5
  %x_e = tensor.empty() : tensor<8x64xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%x_e : tensor<8x64xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 64 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_x, %scale_x, %offset_x)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<8x64xf32>

  %seed_w1 = arith.constant 12 : i32
  %scale_w1 = arith.constant 0.75 : f32
  %offset_w1 = arith.constant 0.0 : f32
  // w1 = 0.75 * (hash(12, linear_index) - 0.5) + 0.0
  %w1_e = tensor.empty() : tensor<64x32xf32>
  %w1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%w1_e : tensor<64x32xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 32 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_w1, %scale_w1, %offset_w1)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>

  %seed_b1 = arith.constant 13 : i32
  %scale_b1 = arith.constant 0.2 : f32
  %offset_b1 = arith.constant 0.0 : f32
  // b1 = 0.2 * (hash(13, linear_index) - 0.5) + 0.0
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

  %seed_w2 = arith.constant 14 : i32
  %scale_w2 = arith.constant 1.7 : f32
  %offset_w2 = arith.constant 0.0 : f32
  // w2 = 1.7 * (hash(14, linear_index) - 0.5) + 0.0
  %w2_e = tensor.empty() : tensor<32x10xf32>
  %w2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%w2_e : tensor<32x10xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 10 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_w2, %scale_w2, %offset_w2)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<32x10xf32>

  %seed_b2 = arith.constant 15 : i32
  %scale_b2 = arith.constant 0.2 : f32
  %offset_b2 = arith.constant 0.0 : f32
  // b2 = 0.2 * (hash(15, linear_index) - 0.5) + 0.0
  %b2_e = tensor.empty() : tensor<10xf32>
  %b2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%b2_e : tensor<10xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_b2, %scale_b2, %offset_b2)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<10xf32>

  %result = func.call @forward(%x, %w1, %b1, %w2, %b2)
      : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<32x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %unranked = tensor.cast %result : tensor<8x10xf32> to tensor<*xf32>
  func.call @printMemrefF32(%unranked) : (tensor<*xf32>) -> ()
  return
}
