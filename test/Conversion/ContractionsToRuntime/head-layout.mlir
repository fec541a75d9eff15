// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime="runtime=cuda" \
// RUN:   | FileCheck %s --check-prefix=CUDA

// Attention's head split and merge: 2 sequences x 4 tokens, 2 heads of 8
// features. K and V come out of their projections as [tokens, heads x
// features] (8x16) and are copied into [sequences x heads, tokens,
// features] for the products; the products read them in place instead,
// through a [2, 2, 4, 8] view with strides [64, 8, 16, 1]
// (mprt_gemm_batched_2d: 2 sequences x 2 heads). P V's rounded result is
// written straight into the merged [tokens, heads x features] buffer. The
// copies and their buffers go; K's and V's deallocations move to where
// their copies' were.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: linalg.transpose
// CHECK: %[[KP:.*]] = memref.alloc() : memref<8x16xbf16>
// CHECK: %[[KX:.*]] = memref.expand_shape %[[KP]]
// CHECK-NOT: memref.dealloc %[[KP]]
// CHECK: %[[KV:.*]] = memref.transpose %[[KX]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<2x4x2x8xbf16> to memref<2x2x4x8xbf16, strided<[64, 8, 16, 1]>>
// CHECK: memref.extract_strided_metadata %[[KV]]
// CHECK: %[[SCORES:.*]] = arith.constant 10 : i32
// CHECK: call @mprt_gemm_batched_2d({{.*}}, %[[SCORES]], %{{.*}}, {{.*}})
// CHECK: %[[MERGED:.*]] = memref.alloc() : memref<2x4x2x8xbf16>
// CHECK: %[[VV:.*]] = memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<2x4x2x8xbf16> to memref<2x2x4x8xbf16, strided<[64, 8, 16, 1]>>
// CHECK: %[[OV:.*]] = memref.transpose %[[MERGED]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<2x4x2x8xbf16> to memref<2x2x4x8xbf16, strided<[64, 8, 16, 1]>>
// CHECK: memref.extract_strided_metadata %[[VV]]
// CHECK: memref.extract_strided_metadata %[[OV]]
// CHECK: %[[ROUNDED:.*]] = arith.constant 4 : i32
// CHECK: call @mprt_gemm_batched_2d({{.*}}, %[[ROUNDED]], %{{.*}}, {{.*}})
// CHECK-NOT: memref<4x4x8xbf16>
// CHECK: memref.dealloc %[[KP]]
// CHECK-NOT: linalg.transpose
// CHECK: return
// CUDA-LABEL: func.func @attention
// CUDA-COUNT-3: linalg.transpose
// CUDA-NOT: mprt_gemm_batched_2d
func.func @attention(%q: memref<4x4x8xbf16>, %p: memref<4x4x4xbf16>) -> (memref<4x4x4xf32>, memref<8x16xbf16>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  // K's projection, split into heads.
  %kp = memref.alloc() : memref<8x16xbf16>
  linalg.fill ins(%one : bf16) outs(%kp : memref<8x16xbf16>)
  %kx = memref.expand_shape %kp [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %kt = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.transpose ins(%kx : memref<2x4x2x8xbf16>) outs(%kt : memref<2x2x4x8xbf16>) permutation = [0, 2, 1, 3]
  memref.dealloc %kp : memref<8x16xbf16>
  %k = memref.collapse_shape %kt [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  // S[b, i, j] = Q[b, i, d] K[b, j, d]
  %s = memref.alloc() : memref<4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<4x4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<4x4x8xbf16>, memref<4x4x8xbf16>) outs(%s : memref<4x4x4xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %m = arith.mulf %xw, %yw : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  memref.dealloc %kt : memref<2x2x4x8xbf16>
  // V's projection, split into heads.
  %vp = memref.alloc() : memref<8x16xbf16>
  linalg.fill ins(%one : bf16) outs(%vp : memref<8x16xbf16>)
  %vx = memref.expand_shape %vp [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %vt = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.transpose ins(%vx : memref<2x4x2x8xbf16>) outs(%vt : memref<2x2x4x8xbf16>) permutation = [0, 2, 1, 3]
  memref.dealloc %vp : memref<8x16xbf16>
  %v = memref.collapse_shape %vt [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  // O = P V, rounded, merged into [tokens, heads x features].
  %o = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %v : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%o : memref<4x4x8xf32>)
  memref.dealloc %vt : memref<2x2x4x8xbf16>
  %or = memref.alloc() : memref<4x4x8xbf16>
  linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o : memref<4x4x8xf32>) outs(%or : memref<4x4x8xbf16>) {
  ^bb0(%x: f32, %out: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %o : memref<4x4x8xf32>
  %ox = memref.expand_shape %or [[0, 1], [2], [3]] output_shape [2, 2, 4, 8] : memref<4x4x8xbf16> into memref<2x2x4x8xbf16>
  %merged = memref.alloc() : memref<2x4x2x8xbf16>
  linalg.transpose ins(%ox : memref<2x2x4x8xbf16>) outs(%merged : memref<2x4x2x8xbf16>) permutation = [0, 2, 1, 3]
  memref.dealloc %or : memref<4x4x8xbf16>
  %out = memref.collapse_shape %merged [[0, 1], [2, 3]] : memref<2x4x2x8xbf16> into memref<8x16xbf16>
  return %s, %out : memref<4x4x4xf32>, memref<8x16xbf16>
}

// -----

// The backward's split is a generic that yields its input, with the
// middle dimensions swapped by its output map; its collapsed copy is read
// by two products (dV = P^T dO through A transposed, dP = dO V^T).
// CHECK-LABEL: func.func @backward_split
// CHECK-NOT: linalg.generic
// CHECK: memref.transpose
// CHECK: call @mprt_gemm_batched_2d
// CHECK: memref.transpose
// CHECK: call @mprt_gemm_batched_2d
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @backward_split(%p: memref<4x4x4xbf16>, %v: memref<4x4x8xbf16>) -> (memref<4x4x8xf32>, memref<4x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %g = memref.alloc() : memref<8x16xbf16>
  linalg.fill ins(%one : bf16) outs(%g : memref<8x16xbf16>)
  %gx = memref.expand_shape %g [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %gt = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, c, b, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%gx : memref<2x4x2x8xbf16>) outs(%gt : memref<2x2x4x8xbf16>) {
  ^bb0(%x: bf16, %y: bf16):
    linalg.yield %x : bf16
  }
  memref.dealloc %g : memref<8x16xbf16>
  %do = memref.collapse_shape %gt [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  // dV[b, j, d] = P[b, i, j] dO[b, i, d]
  %dv = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%dv : memref<4x4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, j, d, i) -> (b, i, j)>, affine_map<(b, j, d, i) -> (b, i, d)>, affine_map<(b, j, d, i) -> (b, j, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %do : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%dv : memref<4x4x8xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %m = arith.mulf %xw, %yw : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  // dP[b, i, j] = dO[b, i, d] V[b, j, d]
  %dp = memref.alloc() : memref<4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%dp : memref<4x4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%do, %v : memref<4x4x8xbf16>, memref<4x4x8xbf16>) outs(%dp : memref<4x4x4xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %m = arith.mulf %xw, %yw : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  memref.dealloc %gt : memref<2x2x4x8xbf16>
  return %dv, %dp : memref<4x4x8xf32>, memref<4x4x4xf32>
}

// -----

// An f32 result into zeros made for it, merged: the call overwrites the
// merged buffer through the view (flag 8); the result, its fill and the
// merge go.
// CHECK-LABEL: func.func @f32_merge
// CHECK-NOT: linalg.fill
// CHECK: %[[MERGED:.*]] = memref.alloc() : memref<2x4x2x8xf32>
// CHECK: %[[OV:.*]] = memref.transpose %[[MERGED]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: memref.extract_strided_metadata %[[OV]]
// CHECK: %[[OVERWRITE:.*]] = arith.constant 8 : i32
// CHECK: call @mprt_gemm_batched_2d({{.*}}, %[[OVERWRITE]], %{{.*}}, {{.*}})
// CHECK-NOT: linalg.transpose
// CHECK-NOT: memref<4x4x8xf32>
// CHECK: return
func.func @f32_merge(%p: memref<4x4x4xf32>, %v: memref<4x4x8xf32>) -> memref<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %v : memref<4x4x4xf32>, memref<4x4x8xf32>) outs(%o : memref<4x4x8xf32>)
  %ox = memref.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 2, 4, 8] : memref<4x4x8xf32> into memref<2x2x4x8xf32>
  %merged = memref.alloc() : memref<2x4x2x8xf32>
  linalg.transpose ins(%ox : memref<2x2x4x8xf32>) outs(%merged : memref<2x4x2x8xf32>) permutation = [0, 2, 1, 3]
  memref.dealloc %o : memref<4x4x8xf32>
  %out = memref.collapse_shape %merged [[0, 1], [2, 3]] : memref<2x4x2x8xf32> into memref<8x16xf32>
  return %out : memref<8x16xf32>
}

// -----

// V split as 2 sequences x 2 heads, the result merged as 4 x 1: one call
// cannot take both views (one outer and one inner count), so it writes
// the merged layout and reads V's copy.
// CHECK-LABEL: func.func @mixed_splits
// CHECK: linalg.transpose ins(%{{.*}} : memref<2x4x2x8xbf16>)
// CHECK: %[[MERGED:.*]] = memref.alloc() : memref<4x4x1x8xbf16>
// CHECK: memref.transpose %[[MERGED]]
// CHECK: call @mprt_gemm_batched_2d
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @mixed_splits(%p: memref<4x4x4xbf16>) -> memref<16x8xbf16> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %vp = memref.alloc() : memref<8x16xbf16>
  linalg.fill ins(%one : bf16) outs(%vp : memref<8x16xbf16>)
  %vx = memref.expand_shape %vp [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %vt = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.transpose ins(%vx : memref<2x4x2x8xbf16>) outs(%vt : memref<2x2x4x8xbf16>) permutation = [0, 2, 1, 3]
  memref.dealloc %vp : memref<8x16xbf16>
  %v = memref.collapse_shape %vt [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  %o = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %v : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%o : memref<4x4x8xf32>)
  memref.dealloc %vt : memref<2x2x4x8xbf16>
  %or = memref.alloc() : memref<4x4x8xbf16>
  linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o : memref<4x4x8xf32>) outs(%or : memref<4x4x8xbf16>) {
  ^bb0(%x: f32, %out: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %o : memref<4x4x8xf32>
  %ox = memref.expand_shape %or [[0, 1], [2], [3]] output_shape [4, 1, 4, 8] : memref<4x4x8xbf16> into memref<4x1x4x8xbf16>
  %merged = memref.alloc() : memref<4x4x1x8xbf16>
  linalg.transpose ins(%ox : memref<4x1x4x8xbf16>) outs(%merged : memref<4x4x1x8xbf16>) permutation = [0, 2, 1, 3]
  memref.dealloc %or : memref<4x4x8xbf16>
  %out = memref.collapse_shape %merged [[0, 1], [2, 3]] : memref<4x4x1x8xbf16> into memref<16x8xbf16>
  return %out : memref<16x8xbf16>
}

// -----

// The copies stay where reading (or writing) in place would change what is
// read or written: the projection written again after its split, a split
// that an elementwise loop reads too, a split of a function argument (a
// buffer the pass cannot follow), and a rounded result that another loop
// reads besides its merge.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.transpose
// CHECK-NOT: mprt_gemm_batched_2d
// CHECK: return
func.func @kept(%q: memref<4x4x8xbf16>, %arg: memref<8x16xbf16>, %p: memref<4x4x4xbf16>) -> (memref<4x4x8xf32>, memref<4x4x8xf32>, memref<4x4x8xbf16>, memref<4x4x8xf32>, memref<8x16xbf16>, memref<4x4x8xbf16>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  // Written again after the split.
  %kp = memref.alloc() : memref<8x16xbf16>
  linalg.fill ins(%one : bf16) outs(%kp : memref<8x16xbf16>)
  %kx = memref.expand_shape %kp [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %kt = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.transpose ins(%kx : memref<2x4x2x8xbf16>) outs(%kt : memref<2x2x4x8xbf16>) permutation = [0, 2, 1, 3]
  linalg.fill ins(%one : bf16) outs(%kp : memref<8x16xbf16>)
  %k = memref.collapse_shape %kt [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  %s = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %k : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%s : memref<4x4x8xf32>)
  memref.dealloc %kt : memref<2x2x4x8xbf16>
  memref.dealloc %kp : memref<8x16xbf16>
  // Read by an elementwise loop too.
  %vp = memref.alloc() : memref<8x16xbf16>
  linalg.fill ins(%one : bf16) outs(%vp : memref<8x16xbf16>)
  %vx = memref.expand_shape %vp [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %vt = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.transpose ins(%vx : memref<2x4x2x8xbf16>) outs(%vt : memref<2x2x4x8xbf16>) permutation = [0, 2, 1, 3]
  memref.dealloc %vp : memref<8x16xbf16>
  %v = memref.collapse_shape %vt [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  %s2 = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%s2 : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %v : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%s2 : memref<4x4x8xf32>)
  %copy = memref.alloc() : memref<4x4x8xbf16>
  linalg.copy ins(%v : memref<4x4x8xbf16>) outs(%copy : memref<4x4x8xbf16>)
  memref.dealloc %vt : memref<2x2x4x8xbf16>
  // A function argument's split.
  %ax = memref.expand_shape %arg [[0, 1], [2, 3]] output_shape [2, 4, 2, 8] : memref<8x16xbf16> into memref<2x4x2x8xbf16>
  %at = memref.alloc() : memref<2x2x4x8xbf16>
  linalg.transpose ins(%ax : memref<2x4x2x8xbf16>) outs(%at : memref<2x2x4x8xbf16>) permutation = [0, 2, 1, 3]
  %a = memref.collapse_shape %at [[0, 1], [2], [3]] : memref<2x2x4x8xbf16> into memref<4x4x8xbf16>
  %s3 = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%s3 : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %a : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%s3 : memref<4x4x8xf32>)
  memref.dealloc %at : memref<2x2x4x8xbf16>
  // A rounded result read besides its merge.
  %o = memref.alloc() : memref<4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<4x4x8xf32>)
  linalg.batch_matmul ins(%p, %q : memref<4x4x4xbf16>, memref<4x4x8xbf16>) outs(%o : memref<4x4x8xf32>)
  %or = memref.alloc() : memref<4x4x8xbf16>
  linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o : memref<4x4x8xf32>) outs(%or : memref<4x4x8xbf16>) {
  ^bb0(%x: f32, %out: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %o : memref<4x4x8xf32>
  %ox = memref.expand_shape %or [[0, 1], [2], [3]] output_shape [2, 2, 4, 8] : memref<4x4x8xbf16> into memref<2x2x4x8xbf16>
  %merged = memref.alloc() : memref<2x4x2x8xbf16>
  linalg.transpose ins(%ox : memref<2x2x4x8xbf16>) outs(%merged : memref<2x4x2x8xbf16>) permutation = [0, 2, 1, 3]
  %out = memref.collapse_shape %merged [[0, 1], [2, 3]] : memref<2x4x2x8xbf16> into memref<8x16xbf16>
  return %s, %s2, %copy, %s3, %out, %or : memref<4x4x8xf32>, memref<4x4x8xf32>, memref<4x4x8xbf16>, memref<4x4x8xf32>, memref<8x16xbf16>, memref<4x4x8xbf16>
}
