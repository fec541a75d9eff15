// RUN: mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-vectorize-loops))' | FileCheck %s
// RUN: mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-vectorize-loops{max-unrolled-vectors=2}))' | FileCheck %s --check-prefix=TWO
// RUN: not mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-vectorize-loops{max-unrolled-vectors=-1}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// A thread's block of a column sum (--mp-parallelize-loops): one vector of
// 16 columns, summed over the rows. Unrolled, the accumulator's address no
// longer depends on a loop inside the rows' loop.
// CHECK-LABEL: func.func @column_block
// CHECK: affine.for %[[B:.*]] = %{{.*}} to %{{.*}} {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 512 {
// CHECK-NEXT: %[[COL:.*]] = affine.apply #{{.*}}(%[[B]])
// CHECK-NOT: affine.for
// CHECK: vector.transfer_read %{{.*}}[%{{.*}}, %[[COL]]]
// CHECK: vector.transfer_read %{{.*}}[%[[COL]]]
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK-NEXT: vector.transfer_write %{{.*}}, %{{.*}}[%[[COL]]]
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: {{^ *}}} {mp.parallel_chunk}
// NEGATIVE: error: mp-vectorize-loops: vector-size must be positive and max-unrolled-vectors not negative, got 16 and -1
func.func @column_block(%begin: index, %end: index, %x: memref<512x256xf32>, %sum: memref<256xf32>) {
  affine.for %b = %begin to %end {
    affine.for %i = 0 to 512 {
      affine.for %j = affine_map<(d0) -> (d0 * 16)>(%b) to affine_map<(d0) -> (d0 * 16 + 16)>(%b) {
        %v = affine.load %x[%i, %j] : memref<512x256xf32>
        %s = affine.load %sum[%j] : memref<256xf32>
        %t = arith.addf %s, %v : f32
        affine.store %t, %sum[%j] : memref<256xf32>
      }
    }
  } {mp.parallel_chunk}
  return
}

// -----

// A 64-wide row (an attention head): 4 vectors, unrolled with the default
// (8); two at most leaves the loop.
// CHECK-LABEL: func.func @head_row
// CHECK-NOT: step 16
// CHECK-COUNT-4: vector.transfer_write
// CHECK: return
// TWO-LABEL: func.func @head_row
// TWO: affine.for %{{.*}} = 0 to 64 step 16
func.func @head_row(%a: memref<8x64xf32>, %b: memref<8x64xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 64 {
      %v = affine.load %a[%i, %j] : memref<8x64xf32>
      %w = arith.mulf %v, %two : f32
      affine.store %w, %b[%i, %j] : memref<8x64xf32>
    }
  }
  return
}

// -----

// Longer loops, and a reduction into iter_args, stay loops.
// CHECK-LABEL: func.func @kept
// CHECK: affine.for %{{.*}} = 0 to 256 step 16
// CHECK: affine.for %{{.*}} = 0 to 64 step 16 iter_args
func.func @kept(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<64xf32>, %out: memref<f32>) {
  affine.for %j = 0 to 256 {
    %v = affine.load %a[%j] : memref<256xf32>
    affine.store %v, %b[%j] : memref<256xf32>
  }
  %zero = arith.constant 0.0 : f32
  %sum = affine.for %j = 0 to 64 iter_args(%acc = %zero) -> f32 {
    %v = affine.load %c[%j] : memref<64xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  affine.store %sum, %out[] : memref<f32>
  return
}
