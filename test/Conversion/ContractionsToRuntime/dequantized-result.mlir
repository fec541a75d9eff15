// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime="runtime=cuda" \
// RUN:   | FileCheck %s --check-prefix=CUDA

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A quantized linear layer as --mp-quantize leaves it after bufferization:
// the i32 accumulator preset to the quantized bias, the i8 product (B
// transposed: nn.Linear's weight), then the dequantization with a ReLU.
// mprt_gemm_s8_dequantize writes the f32 result (flags 16 | 2) with the
// bias's and the scales' addresses last; the i32 buffer, the broadcast,
// the loop and the deallocation are gone. libmprt_cuda has no such call.
// CHECK-LABEL: func.func @quantized_linear
// CHECK-NOT: memref<4x6xi32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x6xf32>
// CHECK: %[[FLAGS:.*]] = arith.constant 18 : i32
// CHECK: memref.extract_strided_metadata %arg2
// CHECK: %[[BQ:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: memref.extract_strided_metadata %arg3
// CHECK: %[[SCALE:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: call @mprt_gemm_s8_dequantize({{.*}}, %[[FLAGS]], %[[BQ]], %[[SCALE]])
// CHECK-NOT: linalg.
// CHECK-NOT: xi32>
// CHECK: return %[[D]]
// CHECK: func.func private @mprt_gemm_s8_dequantize(i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, i64, i64) -> i32
// CUDA-LABEL: func.func @quantized_linear
// CUDA: call @mprt_cuda_gemm_sync
// CUDA: linalg.generic
// CUDA-NOT: mprt_gemm_s8_dequantize
func.func @quantized_linear(%x: memref<4x8xi8>, %w: memref<6x8xi8>, %bq: memref<6xi32>, %scale: memref<6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xi32>
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bq : memref<6xi32>) outs(%c : memref<4x6xi32>) {
  ^bb0(%in: i32, %out: i32):
    linalg.yield %in : i32
  }
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<4x8xi8>, memref<6x8xi8>) outs(%c : memref<4x6xi32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %scale : memref<4x6xi32>, memref<6xf32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%in: i32, %s: f32, %out: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<4x6xi32>
  return %d : memref<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// No bias (a zero fill), no ReLU, the scale first in the body and as the
// first input: flags 0, the bias address 0.
// CHECK-LABEL: func.func @no_bias
// CHECK: memref.dim %arg0
// CHECK: %[[FLAGS:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[NONE:.*]] = arith.constant 0 : i64
// CHECK: call @mprt_gemm_s8_dequantize({{.*}}, %[[FLAGS]], %[[NONE]], %{{.*}})
// CHECK-NOT: linalg.
func.func @no_bias(%x: memref<4x8xi8>, %w: memref<8x6xi8>, %scale: memref<6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0 : i32
  %c = memref.alloc() : memref<4x6xi32>
  linalg.fill ins(%zero : i32) outs(%c : memref<4x6xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x6xi8>) outs(%c : memref<4x6xi32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scale, %c : memref<6xf32>, memref<4x6xi32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%s: f32, %in: i32, %out: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %s, %f : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c : memref<4x6xi32>
  return %d : memref<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Kept as a plain product: the scales are written between the product and
// the loop (the call would read them too early), a body that adds after
// scaling, and a result that is not a fresh buffer.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: mprt_gemm_s8_dequantize
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
// CHECK: call @mprt_gemm(
// CHECK: linalg.generic
func.func @kept(%x: memref<4x8xi8>, %w: memref<8x6xi8>, %scale: memref<6xf32>, %out: memref<4x6xf32>) -> (memref<4x6xf32>, memref<4x6xf32>) {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<4x6xi32>
  linalg.fill ins(%zero : i32) outs(%c : memref<4x6xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x6xi8>) outs(%c : memref<4x6xi32>)
  linalg.fill ins(%one : f32) outs(%scale : memref<6xf32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %scale : memref<4x6xi32>, memref<6xf32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%in: i32, %s: f32, %o: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c : memref<4x6xi32>
  %c2 = memref.alloc() : memref<4x6xi32>
  linalg.fill ins(%zero : i32) outs(%c2 : memref<4x6xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x6xi8>) outs(%c2 : memref<4x6xi32>)
  %e = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2, %scale : memref<4x6xi32>, memref<6xf32>) outs(%e : memref<4x6xf32>) {
  ^bb0(%in: i32, %s: f32, %o: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    %a = arith.addf %m, %one : f32
    linalg.yield %a : f32
  }
  memref.dealloc %c2 : memref<4x6xi32>
  %c3 = memref.alloc() : memref<4x6xi32>
  linalg.fill ins(%zero : i32) outs(%c3 : memref<4x6xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x6xi8>) outs(%c3 : memref<4x6xi32>)
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c3, %scale : memref<4x6xi32>, memref<6xf32>) outs(%out : memref<4x6xf32>) {
  ^bb0(%in: i32, %s: f32, %o: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c3 : memref<4x6xi32>
  return %d, %e : memref<4x6xf32>, memref<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#lanes = affine_map<(i, r, p) -> (i, r, p)>
#partial = affine_map<(i, r, p) -> (i, p)>

// The next layer's dynamic quantization reads D for max |D|, in per-row
// partials of 4 lanes (--mp-split-reductions{lanes}): the call
// computes them (mprt_gemm_s8_dequantize_absmax, the partials' address and
// 4 last) while it scales D's rows. The partials' loop and D's view go;
// their allocation and -inf fill move before the call; the final max over
// the partials stays.
// CHECK: func.func private @mprt_gemm_s8_dequantize_absmax(i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i64) -> i32
// CHECK-LABEL: func.func @absmax_partials
// CHECK: %[[Q:.*]] = memref.alloc() : memref<4x4xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[Q]] : memref<4x4xf32>)
// CHECK: memref.extract_strided_metadata %[[Q]]
// CHECK: %[[LANES:.*]] = arith.constant 4 : i64
// CHECK: call @mprt_gemm_s8_dequantize_absmax({{.*}}, %[[LANES]])
// CHECK-NOT: math.absf
// CHECK-NOT: memref.expand_shape
// CHECK: linalg.generic {{.*}} ins(%[[Q]]
// CUDA-LABEL: func.func @absmax_partials
// CUDA: math.absf
func.func @absmax_partials(%x: memref<4x8xi8>, %w: memref<8x8xi8>, %scale: memref<8xf32>) -> (memref<4x8xf32>, memref<f32>) {
  %zero = arith.constant 0 : i32
  %ninf = arith.constant 0xFF800000 : f32
  %fzero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x8xi32>
  linalg.fill ins(%zero : i32) outs(%c : memref<4x8xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x8xi8>) outs(%c : memref<4x8xi32>)
  %d = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %scale : memref<4x8xi32>, memref<8xf32>) outs(%d : memref<4x8xf32>) {
  ^bb0(%in: i32, %s: f32, %out: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c : memref<4x8xi32>
  %max = memref.alloc() : memref<f32>
  linalg.fill ins(%fzero : f32) outs(%max : memref<f32>)
  %e = memref.expand_shape %d [[0], [1, 2]] output_shape [4, 2, 4] : memref<4x8xf32> into memref<4x2x4xf32>
  %q = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%ninf : f32) outs(%q : memref<4x4xf32>)
  linalg.generic {indexing_maps = [#lanes, #partial], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%e : memref<4x2x4xf32>) outs(%q : memref<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%q : memref<4x4xf32>) outs(%max : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %out, %in : f32
    linalg.yield %r : f32
  }
  memref.dealloc %q : memref<4x4xf32>
  return %d, %max : memref<4x8xf32>, memref<f32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#lanes = affine_map<(i, r, p) -> (i, r, p)>
#partial = affine_map<(i, r, p) -> (i, p)>

// Not taken: D written between the dequantization and the partials' loop
// (they must see what the call wrote), and partials that sum |D| instead.
// CHECK-LABEL: func.func @absmax_kept
// CHECK-NOT: mprt_gemm_s8_dequantize_absmax
// CHECK: call @mprt_gemm_s8_dequantize(
// CHECK: math.absf
// CHECK: call @mprt_gemm_s8_dequantize(
// CHECK: math.absf
func.func @absmax_kept(%x: memref<4x8xi8>, %w: memref<8x8xi8>, %scale: memref<8xf32>) -> (memref<4x4xf32>, memref<4x4xf32>) {
  %zero = arith.constant 0 : i32
  %fzero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x8xi32>
  linalg.fill ins(%zero : i32) outs(%c : memref<4x8xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x8xi8>) outs(%c : memref<4x8xi32>)
  %d = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %scale : memref<4x8xi32>, memref<8xf32>) outs(%d : memref<4x8xf32>) {
  ^bb0(%in: i32, %s: f32, %out: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c : memref<4x8xi32>
  linalg.fill ins(%fzero : f32) outs(%d : memref<4x8xf32>)
  %e = memref.expand_shape %d [[0], [1, 2]] output_shape [4, 2, 4] : memref<4x8xf32> into memref<4x2x4xf32>
  %q = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%fzero : f32) outs(%q : memref<4x4xf32>)
  linalg.generic {indexing_maps = [#lanes, #partial], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%e : memref<4x2x4xf32>) outs(%q : memref<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  }
  memref.dealloc %d : memref<4x8xf32>
  // A sum of magnitudes.
  %c2 = memref.alloc() : memref<4x8xi32>
  linalg.fill ins(%zero : i32) outs(%c2 : memref<4x8xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x8xi8>) outs(%c2 : memref<4x8xi32>)
  %d2 = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2, %scale : memref<4x8xi32>, memref<8xf32>) outs(%d2 : memref<4x8xf32>) {
  ^bb0(%in: i32, %s: f32, %out: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c2 : memref<4x8xi32>
  %e2 = memref.expand_shape %d2 [[0], [1, 2]] output_shape [4, 2, 4] : memref<4x8xf32> into memref<4x2x4xf32>
  %q2 = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%fzero : f32) outs(%q2 : memref<4x4xf32>)
  linalg.generic {indexing_maps = [#lanes, #partial], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%e2 : memref<4x2x4xf32>) outs(%q2 : memref<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  }
  memref.dealloc %d2 : memref<4x8xf32>
  return %q, %q2 : memref<4x4xf32>, memref<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A dequantization with a ReLU that is not fused (the scales are written
// between the product and the loop): the plain call overwrites C (flags
// 8) and carries no ReLU bit, which mprt_gemm would reject.
// CHECK-LABEL: func.func @relu_kept
// CHECK: %[[FLAGS:.*]] = arith.constant 8 : i32
// CHECK: call @mprt_gemm({{.*}}, %[[FLAGS]], %{{.*}})
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @relu_kept(%x: memref<4x8xi8>, %w: memref<8x6xi8>, %scale: memref<6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0 : i32
  %fzero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<4x6xi32>
  linalg.fill ins(%zero : i32) outs(%c : memref<4x6xi32>)
  linalg.matmul ins(%x, %w : memref<4x8xi8>, memref<8x6xi8>) outs(%c : memref<4x6xi32>)
  linalg.fill ins(%one : f32) outs(%scale : memref<6xf32>)
  %d = memref.alloc() : memref<4x6xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %scale : memref<4x6xi32>, memref<6xf32>) outs(%d : memref<4x6xf32>) {
  ^bb0(%in: i32, %s: f32, %o: f32):
    %f = arith.sitofp %in : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = arith.maximumf %m, %fzero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<4x6xi32>
  return %d : memref<4x6xf32>
}
