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
