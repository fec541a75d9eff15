// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime="runtime=cuda" \
// RUN:   | FileCheck %s --check-prefix=CUDA

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A linear layer under AMP: a bf16 product with B transposed (nn.Linear's
// weight), its f32 result plus the bias, rounded to bf16. mprt_gemm_bias
// writes the bf16 result (flags 4 | 2, type 2) with the bias's address
// last; the f32 buffer, its fill, the bias loop and the deallocation are
// gone, and the result's allocation moved before the call. libmprt_cuda
// has no such call: there the loop stays.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: memref<4x6xf32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x6xbf16>
// CHECK: memref.extract_strided_metadata %[[D]]
// CHECK: %[[FLAGS:.*]] = arith.constant 6 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 2 : i32
// CHECK: memref.extract_strided_metadata %arg2
// CHECK: %[[BIASI:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: call @mprt_gemm_bias({{.*}}, %[[FLAGS]], %[[TYPE]], %[[BIASI]])
// CHECK-NOT: linalg.
// CHECK-NOT: memref<4x6xf32>
// CHECK: return %[[D]]
// CHECK: func.func private @mprt_gemm_bias(i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, i32, i64) -> i32
// CUDA-LABEL: func.func @linear
// CUDA: call @mprt_cuda_gemm_sync
// CUDA: linalg.generic
// CUDA-NOT: mprt_gemm_bias
func.func @linear(%x: memref<4x8xbf16>, %w: memref<6x8xbf16>, %bias: memref<6xf32>) -> memref<4x6xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<4x8xbf16>, memref<6x8xbf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x6xf32>, memref<6xf32>) outs(%d : memref<4x6xbf16>) {
  ^bb0(%in: f32, %b: f32, %out: bf16):
    %s = arith.addf %in, %b : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<4x6xf32>
  return %d : memref<4x6xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// f16 operands, the sum kept in f32 (bias first in the body): flags 0,
// type 1.
// CHECK-LABEL: func.func @f32_sum
// CHECK: %[[FLAGS:.*]] = arith.constant 0 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 1 : i32
// CHECK: call @mprt_gemm_bias({{.*}}, %[[FLAGS]], %[[TYPE]], %{{.*}})
// CHECK-NOT: linalg.
func.func @f32_sum(%x: memref<4x8xf16>, %w: memref<8x6xf16>, %bias: memref<6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf16>, memref<8x6xf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %c : memref<6xf32>, memref<4x6xf32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%b: f32, %in: f32, %out: f32):
    %s = arith.addf %b, %in : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<4x6xf32>
  return %d : memref<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// The bias loop goes on from the rounded sum (elementwise fusion put the
// next layer's ReLU there): mprt_gemm_bias writes the rounded sum into D
// and the rest runs over D in place, on the same bf16 values.
// CHECK-LABEL: func.func @rounded_then_relu
// CHECK-NOT: memref<4x6xf32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x6xbf16>
// CHECK: call @mprt_gemm_bias(
// CHECK-NEXT: linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel"]} outs(%[[D]] : memref<4x6xbf16>)
// CHECK-NEXT: ^bb0(%[[OUT:.*]]: bf16):
// CHECK-NEXT: %[[E:.*]] = arith.extf %[[OUT]] : bf16 to f32
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[E]], %{{.*}} : f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[M]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
// CHECK-NOT: memref<4x6xf32>
// CHECK: return %[[D]]
func.func @rounded_then_relu(%x: memref<4x8xbf16>, %w: memref<6x8xbf16>, %bias: memref<6xf32>) -> memref<4x6xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<4x8xbf16>, memref<6x8xbf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x6xf32>, memref<6xf32>) outs(%d : memref<4x6xbf16>) {
  ^bb0(%in: f32, %b: f32, %out: bf16):
    %s = arith.addf %in, %b : f32
    %r = arith.truncf %s : f32 to bf16
    %e = arith.extf %r : bf16 to f32
    %m = arith.maximumf %e, %zero : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %c : memref<4x6xf32>
  return %d : memref<4x6xbf16>
}

// The sum kept in f32, then scaled and multiplied by itself: the tail
// reads the f32 sum D holds (twice).
// CHECK-LABEL: func.func @f32_sum_then_more
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x6xf32>
// CHECK: call @mprt_gemm_bias(
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[D]] : memref<4x6xf32>)
// CHECK-NEXT: ^bb0(%[[OUT:.*]]: f32):
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[OUT]], %{{.*}} : f32
// CHECK-NEXT: %[[Q:.*]] = arith.mulf %[[H]], %[[OUT]] : f32
// CHECK-NEXT: linalg.yield %[[Q]] : f32
func.func @f32_sum_then_more(%x: memref<4x8xf16>, %w: memref<8x6xf16>, %bias: memref<6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf16>, memref<8x6xf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %c : memref<6xf32>, memref<4x6xf32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%b: f32, %in: f32, %out: f32):
    %s = arith.addf %b, %in : f32
    %h = arith.mulf %s, %half : f32
    %q = arith.mulf %h, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %c : memref<4x6xf32>
  return %d : memref<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>

// Left to the loops (a plain or overwriting product, then the generic):
// - @f32_operands: f32 products have no bias call;
// - @column: the vector is added along columns;
// - @relu: the loop applies its max to the unrounded sum (D never holds
//   that sum);
// - @reads_the_product_again: after the sum, the loop reads C again;
// - @read_again: the f32 result has another reader.
// CHECK-LABEL: func.func @f32_operands
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @column
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @relu
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @reads_the_product_again
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @read_again
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK: memref.copy
// CHECK-NOT: mprt_gemm_bias
func.func @f32_operands(%x: memref<4x8xf32>, %w: memref<8x6xf32>, %bias: memref<6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x6xf32>, memref<6xf32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  }
  return %d : memref<4x6xf32>
}

func.func @column(%x: memref<4x8xbf16>, %w: memref<8x4xbf16>, %bias: memref<4xf32>) -> memref<4x4xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xbf16>, memref<8x4xbf16>) outs(%c : memref<4x4xf32>)
  %d = memref.alloc() : memref<4x4xbf16>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x4xf32>, memref<4xf32>) outs(%d : memref<4x4xbf16>) {
  ^bb0(%in: f32, %b: f32, %out: bf16):
    %s = arith.addf %in, %b : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  return %d : memref<4x4xbf16>
}

func.func @relu(%x: memref<4x8xbf16>, %w: memref<8x6xbf16>, %bias: memref<6xf32>) -> memref<4x6xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xbf16>, memref<8x6xbf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x6xf32>, memref<6xf32>) outs(%d : memref<4x6xbf16>) {
  ^bb0(%in: f32, %b: f32, %out: bf16):
    %s = arith.addf %in, %b : f32
    %m = arith.maximumf %s, %zero : f32
    %r = arith.truncf %m : f32 to bf16
    linalg.yield %r : bf16
  }
  return %d : memref<4x6xbf16>
}

func.func @reads_the_product_again(%x: memref<4x8xbf16>, %w: memref<8x6xbf16>, %bias: memref<6xf32>) -> memref<4x6xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xbf16>, memref<8x6xbf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x6xf32>, memref<6xf32>) outs(%d : memref<4x6xbf16>) {
  ^bb0(%in: f32, %b: f32, %out: bf16):
    %s = arith.addf %in, %b : f32
    %r = arith.truncf %s : f32 to bf16
    %e = arith.extf %r : bf16 to f32
    %m = arith.maximumf %e, %in : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  }
  return %d : memref<4x6xbf16>
}

func.func @read_again(%x: memref<4x8xbf16>, %w: memref<8x6xbf16>, %bias: memref<6xf32>, %keep: memref<4x6xf32>) -> memref<4x6xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xbf16>, memref<8x6xbf16>) outs(%c : memref<4x6xf32>)
  %d = memref.alloc() : memref<4x6xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x6xf32>, memref<6xf32>) outs(%d : memref<4x6xbf16>) {
  ^bb0(%in: f32, %b: f32, %out: bf16):
    %s = arith.addf %in, %b : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.copy %c, %keep : memref<4x6xf32> to memref<4x6xf32>
  return %d : memref<4x6xbf16>
}
