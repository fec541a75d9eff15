// RUN: mp-opt %s --split-input-file --mp-gpu-map-parallel-loops | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-gpu-map-parallel-loops --convert-parallel-loops-to-gpu | FileCheck %s --check-prefix=GPU

// Loads and stores of a host stack buffer (--mp-gpu-device-memory stages
// device reads through one) and of a global stay host code; the store into
// a buffer of the function still becomes a one-thread kernel.
// CHECK-LABEL: func.func @host_buffers
// CHECK-SAME: (%[[DEV:.*]]: memref<f32>, %[[OUT:.*]]: memref<f32>)
// CHECK: %[[STAGED:.*]] = memref.alloca() : memref<f32>
// CHECK: gpu.memcpy %[[STAGED]], %[[DEV]]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[STAGED]][] : memref<f32>
// CHECK-NEXT: %[[G:.*]] = memref.get_global @scale
// CHECK-NEXT: %[[S:.*]] = memref.load %[[G]][%{{.*}}] : memref<2xf32>
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[V]], %[[S]]
// CHECK-NEXT: memref.store %[[P]], %[[STAGED]][] : memref<f32>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.store %[[P]], %[[OUT]][] : memref<f32>
// CHECK: return %[[P]] : f32
memref.global "private" constant @scale : memref<2xf32> = dense<[2.0, 3.0]>
func.func @host_buffers(%dev: memref<f32>, %out: memref<f32>) -> f32 {
  %c1 = arith.constant 1 : index
  %staged = memref.alloca() : memref<f32>
  gpu.memcpy %staged, %dev : memref<f32>, memref<f32>
  %v = memref.load %staged[] : memref<f32>
  %g = memref.get_global @scale : memref<2xf32>
  %s = memref.load %g[%c1] : memref<2xf32>
  %p = arith.mulf %v, %s : f32
  memref.store %p, %staged[] : memref<f32>
  memref.store %p, %out[] : memref<f32>
  return %p : f32
}

// -----

// A column sum (reduction loop outside the parallel one, as
// convert-linalg-to-parallel-loops emits for ["reduction", "parallel"])
// becomes a one-thread kernel whose inner parallel loop is an scf.for;
// convert-parallel-loops-to-gpu then makes a gpu.launch of all of it
// (with a sequential scf.parallel under the scf.for it left the nest on
// the host).
// CHECK-LABEL: func.func @column_sum
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:  scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:    memref.load %{{.*}}[%[[I]], %[[J]]] : memref<64x10xf16>
// CHECK-NOT: processor = sequential
// GPU-LABEL: func.func @column_sum
// GPU-NOT: scf.parallel
// GPU: gpu.launch
// GPU: scf.for
// GPU: scf.for
// GPU: memref.load %{{.*}} : memref<64x10xf16>
// GPU: gpu.terminator
// GPU-NEXT: }
// GPU-NEXT: return
func.func @column_sum(%x: memref<64x10xf16>, %y: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.parallel (%j) = (%c0) to (%c10) step (%c1) {
      %a = memref.load %x[%i, %j] : memref<64x10xf16>
      %b = memref.load %y[%j] : memref<10xf32>
      %w = arith.extf %a : f16 to f32
      %s = arith.addf %b, %w : f32
      memref.store %s, %y[%j] : memref<10xf32>
      scf.reduce
    }
  }
  return
}
