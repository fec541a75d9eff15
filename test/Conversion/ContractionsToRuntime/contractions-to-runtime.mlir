// RUN: mp-opt %s --mp-contractions-to-runtime --split-input-file | FileCheck %s

// A matmul on buffers becomes one mprt_gemm call with base pointers, leading
// dimensions, sizes, flags (0: no transposes) and type (0: f32).
// CHECK: func.func private @mprt_gemm(i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, i32) -> i32
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: memref<4x6xf32>, %[[B:.*]]: memref<6x3xf32>, %[[C:.*]]: memref<4x3xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: memref.extract_aligned_pointer_as_index %[[BASE]]
// CHECK: %[[FLAGS:.*]] = arith.constant 0 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 0 : i32
// CHECK: call @mprt_gemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FLAGS]], %[[TYPE]])
func.func @matmul(%a: memref<4x6xf32>, %b: memref<6x3xf32>, %c: memref<4x3xf32>) {
  linalg.matmul ins(%a, %b : memref<4x6xf32>, memref<6x3xf32>) outs(%c : memref<4x3xf32>)
  return
}

// -----

// The gradient form --mp-autodiff emits: dA[m, k] = sum_n dC[m, n] B[k, n]
// with f16 inputs widened in the body: B is transposed (flags 2), type f16 (1).
// CHECK-LABEL: func.func @gradient
// CHECK-NOT: linalg.generic
// CHECK: %[[FLAGS:.*]] = arith.constant 2 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 1 : i32
// CHECK: call @mprt_gemm({{.*}}, %[[FLAGS]], %[[TYPE]])
func.func @gradient(%b: memref<6x3xf16>, %dc: memref<4x3xf16>, %da: memref<4x6xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%b, %dc : memref<6x3xf16>, memref<4x3xf16>) outs(%da : memref<4x6xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xw = arith.extf %x : f16 to f32
    %yw = arith.extf %y : f16 to f32
    %p = arith.mulf %yw, %xw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Not matrix products for oneDNN: an f16 accumulator, integer operands, a
// column-strided view. They stay linalg ops.
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT: mprt_gemm
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x6xf16>, memref<6x3xf16>) outs(%{{.*}} : memref<4x3xf16>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x6xi32>, memref<6x3xi32>) outs(%{{.*}} : memref<4x3xi32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x6xf32, strided<[1, 4]>>, memref<6x3xf32>)
func.func @unchanged(%a: memref<4x6xf16>, %b: memref<6x3xf16>, %c: memref<4x3xf16>,
                     %ai: memref<4x6xi32>, %bi: memref<6x3xi32>, %ci: memref<4x3xi32>,
                     %as: memref<4x6xf32, strided<[1, 4]>>, %bf: memref<6x3xf32>, %cf: memref<4x3xf32>) {
  linalg.matmul ins(%a, %b : memref<4x6xf16>, memref<6x3xf16>) outs(%c : memref<4x3xf16>)
  linalg.matmul ins(%ai, %bi : memref<4x6xi32>, memref<6x3xi32>) outs(%ci : memref<4x3xi32>)
  linalg.matmul ins(%as, %bf : memref<4x6xf32, strided<[1, 4]>>, memref<6x3xf32>) outs(%cf : memref<4x3xf32>)
  return
}

// -----

// The int8 products of --mp-quantize: i8 inputs sign-extended into an i32
// accumulator become type 3 (s8).
// CHECK-LABEL: func.func @int8
// CHECK-NOT: linalg.matmul
// CHECK: %[[TYPE:.*]] = arith.constant 3 : i32
// CHECK: call @mprt_gemm({{.*}}, %[[TYPE]])
func.func @int8(%a: memref<4x6xi8>, %b: memref<6x3xi8>, %c: memref<4x3xi32>) {
  linalg.matmul ins(%a, %b : memref<4x6xi8>, memref<6x3xi8>) outs(%c : memref<4x3xi32>)
  return
}

// -----

// Zero-extended (unsigned) i8 is not what the s8 kernel computes: loops.
// CHECK-LABEL: func.func @unsigned_int8
// CHECK-NOT: mprt_gemm
// CHECK: linalg.matmul
func.func @unsigned_int8(%a: memref<4x6xi8>, %b: memref<6x3xi8>, %c: memref<4x3xi32>) {
  linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %b : memref<4x6xi8>, memref<6x3xi8>) outs(%c : memref<4x3xi32>)
  return
}

// -----

// Both inputs index (i, r): not a matrix product (B is missing), so the op
// stays. This read an uninitialized operand pointer before.
// CHECK-LABEL: func.func @no_b
// CHECK-NOT: call @mprt_gemm
// CHECK: linalg.generic
func.func @no_b(%a: memref<4x6xf32>, %a2: memref<4x6xf32>, %c: memref<4x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %a2 : memref<4x6xf32>, memref<4x6xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
