// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime="runtime=cuda" \
// RUN:   | FileCheck %s --check-prefix=CUDA

// A product into a fresh buffer filled with zero for it: the GEMM
// overwrites C (flag 8, MPRT_GEMM_OVERWRITE_C) and the fill is gone.
// libmprt_cuda has no such flag: the fill stays there.
// CHECK-LABEL: func.func @overwrite
// CHECK-NOT: linalg.fill
// CHECK: %[[FLAGS:.*]] = arith.constant 8 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 0 : i32
// CHECK: call @mprt_gemm({{.*}}, %[[FLAGS]], %[[TYPE]])
// CHECK-NOT: linalg.
// CUDA-LABEL: func.func @overwrite
// CUDA: linalg.fill
// CUDA: %[[FLAGS:.*]] = arith.constant 0 : i32
// CUDA: call @mprt_cuda_gemm_sync({{.*}}, %[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @overwrite(%a: memref<4x8xf32>, %b: memref<8x6xf32>) -> memref<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>)
                outs(%c : memref<4x6xf32>)
  return %c : memref<4x6xf32>
}

// -----

// int8 products accumulate into int32 zeros: overwritten too (type 3).
// CHECK-LABEL: func.func @int8
// CHECK-NOT: linalg.fill
// CHECK: %[[FLAGS:.*]] = arith.constant 8 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 3 : i32
// CHECK: call @mprt_gemm({{.*}}, %[[FLAGS]], %[[TYPE]])
func.func @int8(%a: memref<4x8xi8>, %b: memref<8x6xi8>) -> memref<4x6xi32> {
  %zero = arith.constant 0 : i32
  %c = memref.alloc() : memref<4x6xi32>
  linalg.fill ins(%zero : i32) outs(%c : memref<4x6xi32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xi8>, memref<8x6xi8>) outs(%c : memref<4x6xi32>) {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xw = arith.extsi %x : i8 to i32
    %yw = arith.extsi %y : i8 to i32
    %p = arith.muli %xw, %yw : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return %c : memref<4x6xi32>
}

// -----

// A batch of bf16 products (not only rounded: the f32 result is returned)
// into a -0 fill, which adds nothing to any value: flag 8 with the batched
// call.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: linalg.fill
// CHECK: %[[FLAGS:.*]] = arith.constant 8 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 2 : i32
// CHECK: call @mprt_gemm_batched({{.*}}, %[[FLAGS]], %[[TYPE]], {{.*}})
func.func @batched(%q: memref<2x4x8xbf16>, %k: memref<2x8x4xbf16>) -> memref<2x4x4xf32> {
  %zero = arith.constant -0.0 : f32
  %c = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(p, i, j, r) -> (p, i, r)>, affine_map<(p, i, j, r) -> (p, r, j)>, affine_map<(p, i, j, r) -> (p, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x4x8xbf16>, memref<2x8x4xbf16>) outs(%c : memref<2x4x4xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %xw, %yw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return %c : memref<2x4x4xf32>
}

// -----

// Where the zeros matter the fill stays and the call accumulates (flags 0):
// a fill of one; zeros read before the product; a view of C taken before
// it; a C the function was given; a fill that comes after the product.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: arith.constant 8 : i32
// CHECK: linalg.fill
// CHECK-NOT: arith.constant 8 : i32
// CHECK: linalg.fill
// CHECK-NOT: arith.constant 8 : i32
// CHECK: linalg.fill
// CHECK-NOT: arith.constant 8 : i32
// CHECK: linalg.fill
// CHECK-NOT: arith.constant 8 : i32
// CHECK: linalg.fill
// CHECK-NOT: arith.constant 8 : i32
// CHECK: return
func.func @kept(%a: memref<4x8xf32>, %b: memref<8x6xf32>, %given: memref<4x6xf32>, %out: memref<4x6xf32>) -> (memref<4x6xf32>, memref<4x6xf32>, memref<2x6xf32>, memref<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c1 = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%one : f32) outs(%c1 : memref<4x6xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>)
                outs(%c1 : memref<4x6xf32>)
  %c2 = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<4x6xf32>)
  memref.copy %c2, %out : memref<4x6xf32> to memref<4x6xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>)
                outs(%c2 : memref<4x6xf32>)
  %c3 = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<4x6xf32>)
  %view = memref.subview %c3[0, 0] [2, 6] [1, 1] : memref<4x6xf32> to memref<2x6xf32, strided<[6, 1]>>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>)
                outs(%c3 : memref<4x6xf32>)
  %copy = memref.alloc() : memref<2x6xf32>
  memref.copy %view, %copy : memref<2x6xf32, strided<[6, 1]>> to memref<2x6xf32>
  linalg.fill ins(%zero : f32) outs(%given : memref<4x6xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>)
                outs(%given : memref<4x6xf32>)
  %c4 = memref.alloc() : memref<4x6xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>)
                outs(%c4 : memref<4x6xf32>)
  linalg.fill ins(%zero : f32) outs(%c4 : memref<4x6xf32>)
  return %c1, %c2, %copy, %c4 : memref<4x6xf32>, memref<4x6xf32>, memref<2x6xf32>, memref<4x6xf32>
}
