// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime="runtime=cuda" \
// RUN:   | FileCheck %s --check-prefix=CUDA

// Attention's K^T: a copy of K with the last two dimensions swapped, made
// for the products that read it. The GEMMs read K itself with B's
// transpose flag flipped: the forward product (B = K^T as it is: flags
// 2 | 8, B transposed, C overwritten) and a backward generic that read
// K^T transposed (flags 8). The copy, its buffer and its deallocation go.
// CHECK-LABEL: func.func @k_transposed
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x8xbf16>, %{{.*}}: memref<2x4x4xbf16>)
// CHECK-NOT: linalg.transpose
// CHECK-NOT: memref<2x8x4xbf16>
// CHECK: %[[K:.*]] = memref.alloc() : memref<2x4x8xbf16>
// CHECK: linalg.fill {{.*}} outs(%[[K]]
// CHECK: memref.extract_strided_metadata %[[K]]
// CHECK: %[[FWD:.*]] = arith.constant 10 : i32
// CHECK: call @mprt_gemm_batched({{.*}}, %[[FWD]], %{{.*}}, {{.*}})
// CHECK: memref.extract_strided_metadata %[[K]]
// CHECK: %[[BWD:.*]] = arith.constant 8 : i32
// CHECK: call @mprt_gemm_batched({{.*}}, %[[BWD]], %{{.*}}, {{.*}})
// CHECK-NOT: memref<2x8x4xbf16>
// CHECK: memref.dealloc %[[K]]
// CHECK-NOT: memref<2x8x4xbf16>
// CUDA-LABEL: func.func @k_transposed
// CUDA-NOT: linalg.transpose
// CUDA: %[[FWD:.*]] = arith.constant 2 : i32
// CUDA: call @mprt_cuda_gemm_sync({{.*}}, %[[FWD]], {{.*}})
// CUDA: %[[BWD:.*]] = arith.constant 0 : i32
// CUDA: call @mprt_cuda_gemm_sync({{.*}}, %[[BWD]], {{.*}})
func.func @k_transposed(%q: memref<2x4x8xbf16>, %ds: memref<2x4x4xbf16>) -> (memref<2x4x4xf32>, memref<2x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %k = memref.alloc() : memref<2x4x8xbf16>
  linalg.fill ins(%one : bf16) outs(%k : memref<2x4x8xbf16>)
  %kt = memref.alloc() : memref<2x8x4xbf16>
  linalg.transpose ins(%k : memref<2x4x8xbf16>) outs(%kt : memref<2x8x4xbf16>) permutation = [0, 2, 1]
  %s = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2x4x4xf32>)
  linalg.batch_matmul ins(%q, %kt : memref<2x4x8xbf16>, memref<2x8x4xbf16>) outs(%s : memref<2x4x4xf32>)
  // dQ[b, i, d] += dS[b, i, j] * K^T[b, d, j]
  %dq = memref.alloc() : memref<2x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%dq : memref<2x4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, i, d, j) -> (b, i, j)>, affine_map<(b, i, d, j) -> (b, d, j)>, affine_map<(b, i, d, j) -> (b, i, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ds, %kt : memref<2x4x4xbf16>, memref<2x8x4xbf16>) outs(%dq : memref<2x4x8xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %xw, %yw : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  }
  memref.dealloc %kt : memref<2x8x4xbf16>
  memref.dealloc %k : memref<2x4x8xbf16>
  return %s, %dq : memref<2x4x4xf32>, memref<2x4x8xf32>
}

// -----

// The copy stays where reading the original would read other values: K
// written between the copy and the product, K freed before the product,
// K a function argument (any buffer), a copy another op reads, a copy of
// other dimensions.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: linalg.transpose
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @kept(%q: memref<2x4x8xf32>, %arg: memref<2x4x8xf32>, %read: memref<2x8x4xf32>, %r: memref<4x2x8xf32>) -> (memref<2x4x4xf32>, memref<2x4x4xf32>, memref<2x4x4xf32>, memref<2x4x4xf32>, memref<4x2x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // Written after the copy.
  %k1 = memref.alloc() : memref<2x4x8xf32>
  linalg.fill ins(%one : f32) outs(%k1 : memref<2x4x8xf32>)
  %kt1 = memref.alloc() : memref<2x8x4xf32>
  linalg.transpose ins(%k1 : memref<2x4x8xf32>) outs(%kt1 : memref<2x8x4xf32>) permutation = [0, 2, 1]
  linalg.fill ins(%zero : f32) outs(%k1 : memref<2x4x8xf32>)
  %s1 = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%s1 : memref<2x4x4xf32>)
  linalg.batch_matmul ins(%q, %kt1 : memref<2x4x8xf32>, memref<2x8x4xf32>) outs(%s1 : memref<2x4x4xf32>)
  // Freed before the product.
  %k2 = memref.alloc() : memref<2x4x8xf32>
  linalg.fill ins(%one : f32) outs(%k2 : memref<2x4x8xf32>)
  %kt2 = memref.alloc() : memref<2x8x4xf32>
  linalg.transpose ins(%k2 : memref<2x4x8xf32>) outs(%kt2 : memref<2x8x4xf32>) permutation = [0, 2, 1]
  memref.dealloc %k2 : memref<2x4x8xf32>
  %s2 = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%s2 : memref<2x4x4xf32>)
  linalg.batch_matmul ins(%q, %kt2 : memref<2x4x8xf32>, memref<2x8x4xf32>) outs(%s2 : memref<2x4x4xf32>)
  // A function argument.
  %kt3 = memref.alloc() : memref<2x8x4xf32>
  linalg.transpose ins(%arg : memref<2x4x8xf32>) outs(%kt3 : memref<2x8x4xf32>) permutation = [0, 2, 1]
  %s3 = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%s3 : memref<2x4x4xf32>)
  linalg.batch_matmul ins(%q, %kt3 : memref<2x4x8xf32>, memref<2x8x4xf32>) outs(%s3 : memref<2x4x4xf32>)
  // A copy another op reads too.
  %k4 = memref.alloc() : memref<2x4x8xf32>
  linalg.fill ins(%one : f32) outs(%k4 : memref<2x4x8xf32>)
  %kt4 = memref.alloc() : memref<2x8x4xf32>
  linalg.transpose ins(%k4 : memref<2x4x8xf32>) outs(%kt4 : memref<2x8x4xf32>) permutation = [0, 2, 1]
  %s4 = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%s4 : memref<2x4x4xf32>)
  linalg.batch_matmul ins(%q, %kt4 : memref<2x4x8xf32>, memref<2x8x4xf32>) outs(%s4 : memref<2x4x4xf32>)
  memref.copy %kt4, %read : memref<2x8x4xf32> to memref<2x8x4xf32>
  // The first two dimensions swapped: a batch of the rows' own matrices.
  %k5 = memref.alloc() : memref<2x4x8xf32>
  linalg.fill ins(%one : f32) outs(%k5 : memref<2x4x8xf32>)
  %kt5 = memref.alloc() : memref<4x2x8xf32>
  linalg.transpose ins(%k5 : memref<2x4x8xf32>) outs(%kt5 : memref<4x2x8xf32>) permutation = [1, 0, 2]
  %s5 = memref.alloc() : memref<4x2x2xf32>
  linalg.fill ins(%zero : f32) outs(%s5 : memref<4x2x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%kt5, %r : memref<4x2x8xf32>, memref<4x2x8xf32>) outs(%s5 : memref<4x2x2xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  }
  return %s1, %s2, %s3, %s4, %s5 : memref<2x4x4xf32>, memref<2x4x4xf32>, memref<2x4x4xf32>, memref<2x4x4xf32>, memref<4x2x2xf32>
}

// -----

// K's gradient, rounded into the layout the next product reads:
// dK^T[b, d, j] = sum_i Q[b, i, d] dS[b, i, j] (A transposed), then
// dK[b, j, d] = truncf(dK^T[b, d, j]). The GEMM writes dK = dS^T Q:
// operands swapped, flags flipped (A transposed: dS^T; B as it is: Q),
// rounded (4): flags 5. The f32 buffer and the rounding loop go.
// CHECK-LABEL: func.func @rounded_transposed
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x8xbf16>, %[[DS:.*]]: memref<2x4x4xbf16>)
// CHECK-NOT: memref<2x8x4xf32>
// CHECK: %[[DK:.*]] = memref.alloc() : memref<2x4x8xbf16>
// CHECK: memref.extract_strided_metadata %[[DS]]
// CHECK: memref.extract_strided_metadata %[[Q]]
// CHECK: memref.extract_strided_metadata %[[DK]]
// CHECK: %[[FLAGS:.*]] = arith.constant 5 : i32
// CHECK: call @mprt_gemm_batched({{.*}}, %[[FLAGS]], {{.*}})
// CHECK-NOT: linalg.
// CHECK: return %[[DK]]
// CUDA-LABEL: func.func @rounded_transposed
// CUDA: %[[FLAGS:.*]] = arith.constant 5 : i32
// CUDA: call @mprt_cuda_gemm_sync({{.*}}, %[[FLAGS]], {{.*}})
func.func @rounded_transposed(%q: memref<2x4x8xbf16>, %ds: memref<2x4x4xbf16>) -> memref<2x4x8xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<2x8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x8x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, i, d, j) -> (b, i, d)>, affine_map<(b, i, d, j) -> (b, i, j)>, affine_map<(b, i, d, j) -> (b, d, j)>],
                  iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%q, %ds : memref<2x4x8xbf16>, memref<2x4x4xbf16>) outs(%c : memref<2x8x4xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %xw, %yw : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  }
  %dk = memref.alloc() : memref<2x4x8xbf16>
  linalg.generic {indexing_maps = [affine_map<(b, d, j) -> (b, d, j)>, affine_map<(b, d, j) -> (b, j, d)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : memref<2x8x4xf32>) outs(%dk : memref<2x4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<2x8x4xf32>
  return %dk : memref<2x4x8xbf16>
}

// -----

// A transposed rounding that is not fused (f16, the operands bf16): the
// call computes the product as it stands, Q^T dS into the f32 buffer (A
// transposed, C overwritten on the CPU: flags 9; 1 on CUDA), operands in
// their own order, and the rounding loop stays.
// CHECK-LABEL: func.func @rounded_transposed_other_type
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x8xbf16>, %[[DS:.*]]: memref<2x4x4xbf16>)
// CHECK: memref.extract_strided_metadata %[[Q]]
// CHECK: memref.extract_strided_metadata %[[DS]]
// CHECK: %[[FLAGS:.*]] = arith.constant 9 : i32
// CHECK: call @mprt_gemm_batched({{.*}}, %[[FLAGS]], {{.*}})
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CUDA-LABEL: func.func @rounded_transposed_other_type
// CUDA-SAME: (%[[Q:.*]]: memref<2x4x8xbf16>, %[[DS:.*]]: memref<2x4x4xbf16>)
// CUDA: memref.extract_strided_metadata %[[Q]]
// CUDA: memref.extract_strided_metadata %[[DS]]
// CUDA: %[[FLAGS:.*]] = arith.constant 1 : i32
// CUDA: call @mprt_cuda_gemm_sync({{.*}}, %[[FLAGS]], {{.*}})
// CUDA: arith.truncf %{{.*}} : f32 to f16
func.func @rounded_transposed_other_type(%q: memref<2x4x8xbf16>, %ds: memref<2x4x4xbf16>) -> memref<2x4x8xf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<2x8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x8x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, i, d, j) -> (b, i, d)>, affine_map<(b, i, d, j) -> (b, i, j)>, affine_map<(b, i, d, j) -> (b, d, j)>],
                  iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%q, %ds : memref<2x4x8xbf16>, memref<2x4x4xbf16>) outs(%c : memref<2x8x4xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %xw, %yw : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  }
  %dk = memref.alloc() : memref<2x4x8xf16>
  linalg.generic {indexing_maps = [affine_map<(b, d, j) -> (b, d, j)>, affine_map<(b, d, j) -> (b, j, d)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : memref<2x8x4xf32>) outs(%dk : memref<2x4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  memref.dealloc %c : memref<2x8x4xf32>
  return %dk : memref<2x4x8xf16>
}
