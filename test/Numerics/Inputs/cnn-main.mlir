// Deterministic driver for examples/cnn.mlir.
// Usage: cat examples/cnn.mlir test/Numerics/Inputs/cnn-main.mlir | <pipeline>
// Builds pseudo-random inputs/weights (integer hash of the element index, different seed per tensor),
// calls @forward and prints the result with printMemrefF32.
// NOTE: identical inputs to the tosa variant's driver, so outputs are comparable.

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
  %seed_x = arith.constant 21 : i32
  %scale_x = arith.constant 1.0 : f32
  %offset_x = arith.constant 0.5 : f32
  // x = 1.0 * (hash(21, linear_index) - 0.5) + 0.5
  %x_e = tensor.empty() : tensor<4x1x8x8xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%x_e : tensor<4x1x8x8xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %s1 = arith.constant 1 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %s2 = arith.constant 8 : index
    %m2 = arith.muli %l1, %s2 : index
    %l2 = arith.addi %m2, %i2 : index
    %s3 = arith.constant 8 : index
    %m3 = arith.muli %l2, %s3 : index
    %l3 = arith.addi %m3, %i3 : index
    %v = func.call @hash_uniform(%l3, %seed_x, %scale_x, %offset_x)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<4x1x8x8xf32>

  %seed_w = arith.constant 22 : i32
  %scale_w = arith.constant 2.0 : f32
  %offset_w = arith.constant 0.0 : f32
  // w = 2.0 * (hash(22, linear_index) - 0.5) + 0.0
  %w_e = tensor.empty() : tensor<8x1x3x3xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_e : tensor<8x1x3x3xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %s1 = arith.constant 1 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %s2 = arith.constant 3 : index
    %m2 = arith.muli %l1, %s2 : index
    %l2 = arith.addi %m2, %i2 : index
    %s3 = arith.constant 3 : index
    %m3 = arith.muli %l2, %s3 : index
    %l3 = arith.addi %m3, %i3 : index
    %v = func.call @hash_uniform(%l3, %seed_w, %scale_w, %offset_w)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<8x1x3x3xf32>

  %seed_b = arith.constant 23 : i32
  %scale_b = arith.constant 0.2 : f32
  %offset_b = arith.constant 0.0 : f32
  // b = 0.2 * (hash(23, linear_index) - 0.5) + 0.0
  %b_e = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%b_e : tensor<8xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_b, %scale_b, %offset_b)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<8xf32>

  %seed_wfc = arith.constant 24 : i32
  %scale_wfc = arith.constant 0.67 : f32
  %offset_wfc = arith.constant 0.0 : f32
  // wfc = 0.67 * (hash(24, linear_index) - 0.5) + 0.0
  %wfc_e = tensor.empty() : tensor<72x10xf32>
  %wfc = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
      outs(%wfc_e : tensor<72x10xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %s1 = arith.constant 10 : index
    %m1 = arith.muli %i0, %s1 : index
    %l1 = arith.addi %m1, %i1 : index
    %v = func.call @hash_uniform(%l1, %seed_wfc, %scale_wfc, %offset_wfc)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<72x10xf32>

  %seed_bfc = arith.constant 25 : i32
  %scale_bfc = arith.constant 0.2 : f32
  %offset_bfc = arith.constant 0.0 : f32
  // bfc = 0.2 * (hash(25, linear_index) - 0.5) + 0.0
  %bfc_e = tensor.empty() : tensor<10xf32>
  %bfc = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                           iterator_types = ["parallel"]}
      outs(%bfc_e : tensor<10xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %v = func.call @hash_uniform(%i0, %seed_bfc, %scale_bfc, %offset_bfc)
        : (index, i32, f32, f32) -> f32
    linalg.yield %v : f32
  } -> tensor<10xf32>

  %result = func.call @forward(%x, %w, %b, %wfc, %bfc)
      : (tensor<4x1x8x8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>, tensor<72x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %unranked = tensor.cast %result : tensor<4x10xf32> to tensor<*xf32>
  func.call @printMemrefF32(%unranked) : (tensor<*xf32>) -> ()
  return
}
