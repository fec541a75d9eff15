// RUN: mp-opt %s --split-input-file \
// RUN:   --mp-contractions-to-runtime="runtime=cuda" | FileCheck %s
// On the CPU, batched products call mprt_gemm_batched.
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime \
// RUN:   | FileCheck %s --check-prefix=CPU
// RUN: not mp-opt %s --split-input-file \
// RUN:   --mp-contractions-to-runtime="runtime=rocm" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// BAD: for the --runtime option: Cannot find option named 'rocm'!

// With runtime=cuda a matmul becomes a call of mprt_cuda_gemm_sync:
// mprt_gemm's arguments, then a batch of 1 and zero batch strides.
// CHECK: func.func private @mprt_cuda_gemm_sync(i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, i32, i64, i64, i64, i64) -> i32
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.matmul
// CHECK: %[[FLAGS:.*]] = arith.constant 0 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 1 : i32
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @mprt_cuda_gemm_sync(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FLAGS]], %[[TYPE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// CHECK-NOT: mprt_gemm
// CPU-LABEL: func.func @matmul
// CPU: call @mprt_gemm(
// CPU-NOT: mprt_cuda_gemm_sync
func.func @matmul(%a: memref<4x6xf16>, %b: memref<6x3xf16>, %c: memref<4x3xf32>) {
  linalg.matmul ins(%a, %b : memref<4x6xf16>, memref<6x3xf16>) outs(%c : memref<4x3xf32>)
  return
}

// -----

// linalg.batch_matmul on a strided view: the leading dimensions, batch
// strides and batch count come from the memrefs' metadata (A's rows are 8
// apart, its batches 64).
// CHECK-LABEL: func.func @batch_matmul
// CHECK-SAME: (%[[A:.*]]: memref<2x4x6xbf16, strided<[64, 8, 1]>>, %[[B:.*]]: memref<2x6x3xbf16>, %[[C:.*]]: memref<2x4x3xf32>)
// CHECK-NOT: linalg.batch_matmul
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:3, %[[AS:.*]]:3 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[LDA:.*]] = arith.index_cast %[[AS]]#1 : index to i64
// CHECK: %[[SA:.*]] = arith.index_cast %[[AS]]#0 : index to i64
// CHECK: %[[BATCH:.*]] = memref.dim %[[C]], %c0
// CHECK: %[[BATCH64:.*]] = arith.index_cast %[[BATCH]] : index to i64
// CHECK: call @mprt_cuda_gemm_sync(%{{.*}}, %[[LDA]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BATCH64]], %[[SA]], %{{.*}}, %{{.*}})
// On the CPU, the same arguments go to mprt_gemm_batched.
// CPU-LABEL: func.func @batch_matmul
// CPU-NOT: linalg.batch_matmul
// CPU: call @mprt_gemm_batched(
func.func @batch_matmul(%a: memref<2x4x6xbf16, strided<[64, 8, 1]>>, %b: memref<2x6x3xbf16>, %c: memref<2x4x3xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x4x6xbf16, strided<[64, 8, 1]>>, memref<2x6x3xbf16>) outs(%c : memref<2x4x3xf32>)
  return
}

// -----

// A generic with a leading batch loop and a transposed B (attention's
// Q K^T): flags 2.
// CHECK-LABEL: func.func @batched_transposed
// CHECK-NOT: linalg.generic
// CHECK: %[[FLAGS:.*]] = arith.constant 2 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 0 : i32
// CHECK: call @mprt_cuda_gemm_sync({{.*}}, %[[FLAGS]], %[[TYPE]],
func.func @batched_transposed(%q: memref<3x8x16xf32>, %k: memref<3x8x16xf32>, %s: memref<3x8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, i, j, r) -> (b, i, r)>,
                                   affine_map<(b, i, j, r) -> (b, j, r)>,
                                   affine_map<(b, i, j, r) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<3x8x16xf32>, memref<3x8x16xf32>) outs(%s : memref<3x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  }
  return
}

// -----

// Not a batched product: the batch loop does not lead B (it indexes B's
// rows): it stays. A B shared by the batch (no batch dimension, the filter
// of an im2col convolution) is a batched product with B's stride 0.
// CHECK-LABEL: func.func @batch_layouts
// CHECK-NOT: call
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: call @mprt_cuda_gemm_sync({{.*}}, %[[ZERO]], %{{.*}})
// CPU-LABEL: func.func @batch_layouts
// CPU: linalg.generic
// CPU: call @mprt_gemm_batched(
func.func @batch_layouts(%a: memref<3x8x16xf32>, %b: memref<16x3x8xf32>, %w: memref<16x8xf32>, %c: memref<3x8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(p, i, j, r) -> (p, i, r)>,
                                   affine_map<(p, i, j, r) -> (r, p, j)>,
                                   affine_map<(p, i, j, r) -> (p, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x8x16xf32>, memref<16x3x8xf32>) outs(%c : memref<3x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(p, i, j, r) -> (p, i, r)>,
                                   affine_map<(p, i, j, r) -> (r, j)>,
                                   affine_map<(p, i, j, r) -> (p, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<3x8x16xf32>, memref<16x8xf32>) outs(%c : memref<3x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// i8 x i8 -> i32 (--mp-quantize): type 3.
// CHECK-LABEL: func.func @int8
// CHECK: %[[TYPE:.*]] = arith.constant 3 : i32
// CHECK: call @mprt_cuda_gemm_sync({{.*}}, %[[TYPE]],
func.func @int8(%a: memref<4x8xi8>, %b: memref<8x4xi8>, %c: memref<4x4xi32>) {
  linalg.matmul ins(%a, %b : memref<4x8xi8>, memref<8x4xi8>) outs(%c : memref<4x4xi32>)
  return
}
