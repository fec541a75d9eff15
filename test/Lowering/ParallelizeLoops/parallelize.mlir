// RUN: mp-opt %s -split-input-file -mp-parallelize-loops | FileCheck %s
// RUN: mp-opt %s -split-input-file -mp-parallelize-loops=min-work=1000000000 | FileCheck %s --check-prefix=NONE
// RUN: not mp-opt %s -mp-parallelize-loops=min-work=0 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: mp-parallelize-loops: min-work and vector-size must be positive, got 0 and 16
// NONE-NOT: mp.parallel

// Rows of a 256x512 bias add: the row loop is parallel and runs 131072
// innermost iterations; it indexes the first dimension, so the threads
// share rows. The constant is cloned into the body, the memrefs are its
// arguments.
// CHECK-LABEL: func.func @rows
// CHECK: %[[N:.*]] = arith.constant 256 : index
// CHECK: call @rows_parallel_launch(%[[N]], %arg0, %arg1, %arg2) : (index, memref<256x512xf32>, memref<512xf32>, memref<256x512xf32>) -> ()
// CHECK-NOT: affine.for
// CHECK: return
// CHECK: func.func private @rows_parallel(%[[B:.*]]: index, %[[E:.*]]: index, %[[A:.*]]: memref<256x512xf32>, %[[BIAS:.*]]: memref<512xf32>, %[[OUT:.*]]: memref<256x512xf32>) attributes {mp.parallel_body}
// CHECK: %[[TWO:.*]] = arith.constant 2.0
// CHECK: affine.for %[[I:.*]] = %[[B]] to %[[E]] {
// CHECK: affine.for %[[J:.*]] = 0 to 512 {
// CHECK: affine.load %[[A]][%[[I]], %[[J]]]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: affine.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]]
// CHECK: } {mp.parallel_chunk}
// CHECK: func.func private @rows_parallel_launch(index, memref<256x512xf32>, memref<512xf32>, memref<256x512xf32>) attributes {mp.parallel_launch = @rows_parallel}
func.func @rows(%a: memref<256x512xf32>, %b: memref<512xf32>, %c: memref<256x512xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 512 {
      %x = affine.load %a[%i, %j] : memref<256x512xf32>
      %y = affine.load %b[%j] : memref<512xf32>
      %s = arith.addf %x, %y : f32
      %t = arith.mulf %s, %two : f32
      affine.store %t, %c[%i, %j] : memref<256x512xf32>
    }
  }
  return
}

// -----

// A flat loop of 40008 iterations along the last dimension: 2500 blocks of
// 16 (each a constant-trip loop the vectorizer takes whole) shared by the
// threads, and the last 8 iterations serially after the launch.
// CHECK-LABEL: func.func @flat
// CHECK: %[[N:.*]] = arith.constant 2500 : index
// CHECK: call @flat_parallel_launch(%[[N]], %arg0, %arg1)
// CHECK: affine.for %[[R:.*]] = 40000 to 40008 {
// CHECK: func.func private @flat_parallel(%[[B:.*]]: index, %[[E:.*]]: index,
// CHECK: affine.for %[[K:.*]] = %[[B]] to %[[E]] {
// CHECK: affine.for %[[I:.*]] = #{{.*}}(%[[K]]) to #{{.*}}(%[[K]]) {
// CHECK: affine.load %{{.*}}[%[[I]]]
// CHECK: } {mp.parallel_chunk}
func.func @flat(%a: memref<40008xf32>, %c: memref<40008xf32>) {
  affine.for %i = 0 to 40008 {
    %x = affine.load %a[%i] : memref<40008xf32>
    %s = arith.addf %x, %x : f32
    affine.store %s, %c[%i] : memref<40008xf32>
  }
  return
}

// -----

// A column sum: the outer loop carries the sum, the inner one is parallel
// and every dependence keeps its iteration. Its 256 iterations run as 16
// blocks of 16 (it indexes the last dimension), each block a thread's
// column sum over all 512 rows, in the serial order.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[N:.*]] = arith.constant 16 : index
// CHECK: call @column_sum_parallel_launch(%[[N]], %arg0, %arg1)
// CHECK-NOT: affine.for
// CHECK: return
// CHECK: func.func private @column_sum_parallel(%[[B:.*]]: index, %[[E:.*]]: index, %[[IN:.*]]: memref<512x256xf32>, %[[OUT:.*]]: memref<256xf32>)
// CHECK: affine.for %[[U:.*]] = %[[B]] to %[[E]] {
// CHECK: affine.for %[[I:.*]] = 0 to 512 {
// CHECK: affine.for %[[J:.*]] = #[[FIRST:.*]](%[[U]]) to #[[LAST:.*]](%[[U]]) {
// CHECK: affine.load %[[IN]][%[[I]], %[[J]]]
// CHECK: affine.load %[[OUT]][%[[J]]]
// CHECK: affine.store %{{.*}}, %[[OUT]][%[[J]]]
// CHECK: } {mp.parallel_chunk}
func.func @column_sum(%in: memref<512x256xf32>, %out: memref<256xf32>) {
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 256 {
      %x = affine.load %in[%i, %j] : memref<512x256xf32>
      %acc = affine.load %out[%j] : memref<256xf32>
      %s = arith.addf %acc, %x : f32
      affine.store %s, %out[%j] : memref<256xf32>
    }
  }
  return
}

// -----

// 2048 columns: 16 blocks of 128 (8 vectors), so that each row's share
// is a run of independent vectors, not one vector waiting for the last.
// CHECK-DAG: #[[WIDE_FIRST:.*]] = affine_map<(d0) -> (d0 * 128)>
// CHECK-DAG: #[[WIDE_LAST:.*]] = affine_map<(d0) -> (d0 * 128 + 128)>
// CHECK-LABEL: func.func @wide_column_sum
// CHECK: %[[N:.*]] = arith.constant 16 : index
// CHECK: call @wide_column_sum_parallel_launch(%[[N]], %arg0, %arg1)
// CHECK: func.func private @wide_column_sum_parallel(
// CHECK: affine.for %[[U:.*]] = %{{.*}} to %{{.*}} {
// CHECK: affine.for %{{.*}} = 0 to 64 {
// CHECK: affine.for %{{.*}} = #[[WIDE_FIRST]](%[[U]]) to #[[WIDE_LAST]](%[[U]]) {
func.func @wide_column_sum(%in: memref<64x2048xbf16>, %out: memref<2048xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 2048 {
      %x = affine.load %in[%i, %j] : memref<64x2048xbf16>
      %w = arith.extf %x : bf16 to f32
      %acc = affine.load %out[%j] : memref<2048xf32>
      %s = arith.addf %acc, %w : f32
      affine.store %s, %out[%j] : memref<2048xf32>
    }
  }
  return
}

// -----

// Two reduction loops around the parallel one (layer norm's parameter
// gradient): 264 = 16 blocks of 16 on the threads, and the last 8
// columns, with both reduction loops, serially after the launch.
// CHECK-LABEL: func.func @gamma
// CHECK: %[[N:.*]] = arith.constant 16 : index
// CHECK: call @gamma_parallel_launch(%[[N]], %arg0, %arg1)
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK: affine.for %{{.*}} = 0 to 128 {
// CHECK: affine.for %{{.*}} = 256 to 264 {
// CHECK: func.func private @gamma_parallel(
// CHECK: affine.for %[[U:.*]] = %{{.*}} to %{{.*}} {
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK: affine.for %{{.*}} = 0 to 128 {
// CHECK: affine.for %{{.*}} = #{{.*}}(%[[U]]) to #{{.*}}(%[[U]]) {
func.func @gamma(%in: memref<4x128x264xf32>, %out: memref<264xf32>) {
  affine.for %a = 0 to 4 {
    affine.for %b = 0 to 128 {
      affine.for %j = 0 to 264 {
        %x = affine.load %in[%a, %b, %j] : memref<4x128x264xf32>
        %acc = affine.load %out[%j] : memref<264xf32>
        %s = arith.addf %acc, %x : f32
        affine.store %s, %out[%j] : memref<264xf32>
      }
    }
  }
  return
}

// -----

// Partial sums of squares (a long reduction split into 8 rows of 64
// partials): the first parallel loop, over the 8 rows, is shared one
// iteration at a time (it does not index the last dimension).
// CHECK-LABEL: func.func @partials
// CHECK: %[[N:.*]] = arith.constant 8 : index
// CHECK: call @partials_parallel_launch(%[[N]], %arg0, %arg1)
// CHECK: func.func private @partials_parallel(
// CHECK: affine.for %[[U:.*]] = %{{.*}} to %{{.*}} {
// CHECK: affine.for %{{.*}} = 0 to 4096 {
// CHECK: affine.for %{{.*}} = #{{.*}}(%[[U]]) to #{{.*}}(%[[U]]) {
// CHECK: affine.for %{{.*}} = 0 to 64 {
func.func @partials(%in: memref<4096x8x64xf32>, %out: memref<8x64xf32>) {
  affine.for %i = 0 to 4096 {
    affine.for %p = 0 to 8 {
      affine.for %q = 0 to 64 {
        %x = affine.load %in[%i, %p, %q] : memref<4096x8x64xf32>
        %acc = affine.load %out[%p, %q] : memref<8x64xf32>
        %m = arith.mulf %x, %x : f32
        %s = arith.addf %acc, %m : f32
        affine.store %s, %out[%p, %q] : memref<8x64xf32>
      }
    }
  }
  return
}

// -----

// The inner loop is parallel for each row, but a value moves one column
// left per row (dependence distance (1, -1)): blocks of columns on
// different threads would read columns before they are written. Serial.
// CHECK-LABEL: func.func @skewed
// CHECK-NOT: call
// CHECK: affine.for %{{.*}} = 0 to 512 {
// CHECK-NOT: mp.parallel
func.func @skewed(%b: memref<513x257xf32>) {
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 256 {
      %x = affine.load %b[%i, %j + 1] : memref<513x257xf32>
      affine.store %x, %b[%i + 1, %j] : memref<513x257xf32>
    }
  }
  return
}

// -----

// A row sum whose accumulator is a loop-carried value (as
// --mp-promote-accumulators leaves it) inside a serial outer loop that
// also carries one: serial.
// CHECK-LABEL: func.func @carried
// CHECK-NOT: call
// CHECK: affine.for
// CHECK-NOT: mp.parallel
func.func @carried(%in: memref<512x256xf32>, %out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %total = affine.for %i = 0 to 512 iter_args(%t = %zero) -> (f32) {
    %row = affine.for %j = 0 to 256 iter_args(%r = %zero) -> (f32) {
      %x = affine.load %in[%i, %j] : memref<512x256xf32>
      %s = arith.addf %r, %x : f32
      affine.yield %s : f32
    }
    %n = arith.addf %t, %row : f32
    affine.yield %n : f32
  }
  affine.store %total, %out[] : memref<f32>
  return
}

// -----

// 64x64: 4096 iterations, less than min-work; stays on the calling thread.
// CHECK-LABEL: func.func @small
// CHECK-NOT: call
// CHECK: affine.for
func.func @small(%a: memref<64x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %x = affine.load %a[%i, %j] : memref<64x64xf32>
      affine.store %x, %c[%i, %j] : memref<64x64xf32>
    }
  }
  return
}

// -----

// A call in the body may do anything: serial.
// CHECK-LABEL: func.func @calls
// CHECK-NOT: parallel_launch
// CHECK: func.call @opaque
func.func private @opaque(f32)
func.func @calls(%a: memref<65536xf32>) {
  affine.for %i = 0 to 65536 {
    %x = affine.load %a[%i] : memref<65536xf32>
    func.call @opaque(%x) : (f32) -> ()
  }
  return
}

// -----

// A scalar computed before the loop is an argument of the body.
// CHECK-LABEL: func.func @captured_scalar
// CHECK: %[[S:.*]] = arith.divf
// CHECK: call @captured_scalar_parallel_launch(%{{.*}}, %arg1, %[[S]])
// CHECK: func.func private @captured_scalar_parallel(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<512x128xf32>, %[[SCALE:.*]]: f32)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]]
func.func @captured_scalar(%x: f32, %a: memref<512x128xf32>) {
  %one = arith.constant 1.0 : f32
  %s = arith.divf %one, %x : f32
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 128 {
      %v = affine.load %a[%i, %j] : memref<512x128xf32>
      %w = arith.mulf %v, %s : f32
      affine.store %w, %a[%i, %j] : memref<512x128xf32>
    }
  }
  return
}
