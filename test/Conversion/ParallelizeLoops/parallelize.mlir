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

// A column sum: the outer loop carries the sum (every iteration writes
// every element of %out), so nothing is outlined.
// CHECK-LABEL: func.func @column_sum
// CHECK-NOT: call
// CHECK: affine.for %{{.*}} = 0 to 512 {
// CHECK-NOT: mp.parallel
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
