// RUN: mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-vectorize-loops{max-unrolled-vectors=0}))' -verify-diagnostics | FileCheck %s
// RUN: not mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-vectorize-loops{vector-size=0}))' 2>&1 | FileCheck %s --check-prefix=SIZE

// Unit stride along the innermost dimension: vectorized.
// CHECK-LABEL: func.func @unit_stride
// CHECK: affine.for %{{.*}} = 0 to 64 step 16
// CHECK: vector.transfer_read
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: vector.transfer_write
// SIZE: error: mp-vectorize-loops: vector-size must be positive and max-unrolled-vectors not negative, got 0 and 8
func.func @unit_stride(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = affine.load %b[%i] : memref<64xf32>
    %s = arith.addf %x, %y : f32
    affine.store %s, %c[%i] : memref<64xf32>
  }
  return
}

// -----

// A stride-2 read (a 1x1 convolution with stride 2): upstream would read
// 16 consecutive elements here. Stays scalar.
// CHECK-LABEL: func.func @stride_two
// CHECK-NOT: vector.
// CHECK: affine.load %{{.*}}[%{{.*}} * 2]
// CHECK-NOT: vector.
func.func @stride_two(%in: memref<128xf32>, %out: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %in[%i * 2] : memref<128xf32>
    affine.store %x, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// A 2x2 max pool with stride 2: the output loop reads in[2i + k]. The
// window loop (a reduction) is not parallel; neither loop is vectorized.
// CHECK-LABEL: func.func @pool_window
// CHECK-NOT: vector.
func.func @pool_window(%in: memref<16x128xf32>, %out: memref<16x64xf32>) {
  affine.for %r = 0 to 16 {
    affine.for %i = 0 to 64 {
      affine.for %k = 0 to 2 {
        %x = affine.load %in[%r, %i * 2 + %k] : memref<16x128xf32>
        %o = affine.load %out[%r, %i] : memref<16x64xf32>
        %m = arith.maximumf %x, %o : f32
        affine.store %m, %out[%r, %i] : memref<16x64xf32>
      }
    }
  }
  return
}

// -----

// Stride 2 in an outer dimension of the access: the row loop stays scalar,
// the unit-stride column loop inside is vectorized.
// CHECK-LABEL: func.func @stride_two_outer_dim
// CHECK: affine.for %[[R:.*]] = 0 to 8 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 32 step 16
// CHECK: vector.transfer_read %{{.*}}[%{{.*}}, %{{.*}}]
func.func @stride_two_outer_dim(%in: memref<16x32xf32>, %out: memref<8x32xf32>) {
  affine.for %r = 0 to 8 {
    affine.for %c = 0 to 32 {
      %x = affine.load %in[%r * 2, %c] : memref<16x32xf32>
      affine.store %x, %out[%r, %c] : memref<8x32xf32>
    }
  }
  return
}

// -----

// The stride hides behind an affine.apply: still found, stays scalar.
// CHECK-LABEL: func.func @stride_through_apply
// CHECK-NOT: vector.
func.func @stride_through_apply(%in: memref<128xf32>, %out: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %j = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %x = affine.load %in[%j] : memref<128xf32>
    affine.store %x, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// A floordiv of the induction variable is not a unit stride.
// CHECK-LABEL: func.func @floordiv
// CHECK-NOT: vector.
func.func @floordiv(%in: memref<32xf32>, %out: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %in[%i floordiv 2] : memref<32xf32>
    affine.store %x, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// Flags in a memref of i1 (the partial inf checks of a split reduction):
// LLVM packs vector<16xi1> into bits, the memref holds a byte per flag, so
// a vector load or store would touch the wrong flags. Stays scalar; the f32
// reads beside them do not make it vectorized either.
// CHECK-LABEL: func.func @i1_flags
// CHECK-NOT: vector.
// CHECK: affine.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<64xi1>
// CHECK-NOT: vector.
func.func @i1_flags(%x: memref<64xf32>, %flags: memref<64xi1>) {
  %inf = arith.constant 0x7F800000 : f32
  affine.for %i = 0 to 64 {
    %v = affine.load %x[%i] : memref<64xf32>
    %old = affine.load %flags[%i] : memref<64xi1>
    %a = math.absf %v : f32
    %bad = arith.cmpf uge, %a, %inf : f32
    %new = arith.ori %old, %bad : i1
    affine.store %new, %flags[%i] : memref<64xi1>
  }
  return
}

// -----

// 4 whole vectors per row: every lane is an element the scalar loop read or
// wrote, so the transfers are in bounds (no masked loads and stores). The
// row-invariant bias read is the same 1-D access along %j.
// CHECK-LABEL: func.func @whole_vectors_in_bounds
// CHECK: affine.for %{{.*}} = 0 to 64 step 16
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : memref<8x64xf32>
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : memref<64xf32>
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<16xf32>, memref<8x64xf32>
func.func @whole_vectors_in_bounds(%a: memref<8x64xf32>, %b: memref<64xf32>, %c: memref<8x64xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 64 {
      %x = affine.load %a[%i, %j] : memref<8x64xf32>
      %y = affine.load %b[%j] : memref<64xf32>
      %s = arith.addf %x, %y : f32
      affine.store %s, %c[%i, %j] : memref<8x64xf32>
    }
  }
  return
}

// -----

// 72 iterations: 4 whole vectors (in bounds), then the last 8 in a scalar
// loop.
// CHECK-LABEL: func.func @partial_vector_split
// CHECK: affine.for %{{.*}} = 0 to 64 step 16
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : memref<80xf32>, vector<16xf32>
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<16xf32>, memref<80xf32>
// CHECK: affine.for %[[R:.*]] = 64 to 72 {
// CHECK: affine.load %{{.*}}[%[[R]] + 8]
func.func @partial_vector_split(%a: memref<80xf32>, %c: memref<80xf32>) {
  affine.for %i = 0 to 72 {
    %x = affine.load %a[%i + 8] : memref<80xf32>
    %s = arith.addf %x, %x : f32
    affine.store %s, %c[%i] : memref<80xf32>
  }
  return
}

// -----

// A trip count known only at run time: the last vector may run past the
// loop, so the transfers stay possibly out of bounds (masked).
// CHECK-LABEL: func.func @dynamic_bound_masked
// CHECK: affine.for %{{.*}} = 0 to %{{.*}} step 16
// CHECK-NOT: in_bounds
// CHECK: vector.transfer_read %{{.*}} : memref<?xf32>, vector<16xf32>
// CHECK-NOT: in_bounds
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, memref<?xf32>
func.func @dynamic_bound_masked(%a: memref<?xf32>, %c: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  affine.for %i = 0 to %n {
    %x = affine.load %a[%i] : memref<?xf32>
    affine.store %x, %c[%i] : memref<?xf32>
  }
  return
}

// -----

// Shifted bounds (8 to 40: two whole vectors) and a shifted read index.
// CHECK-LABEL: func.func @shifted_whole_vectors
// CHECK: affine.for %{{.*}} = 8 to 40 step 16
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : memref<48xf32>
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<16xf32>, memref<40xf32>
func.func @shifted_whole_vectors(%a: memref<48xf32>, %c: memref<40xf32>) {
  affine.for %i = 8 to 40 {
    %x = affine.load %a[%i + 8] : memref<48xf32>
    affine.store %x, %c[%i] : memref<40xf32>
  }
  return
}
