// RUN: mp-opt %s --split-input-file --mp-gpu-map-parallel-loops | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-gpu-map-parallel-loops=block-size=64 | FileCheck %s --check-prefix=B64

// A 2-D nest is collapsed to 8192 iterations and tiled by 256: blocks along
// x, threads along x; a reduction loop inside stays a thread's serial loop.
// CHECK-LABEL: func.func @nest
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C8192:.*]] = arith.constant 8192 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[STEP:.*]] = arith.muli %{{.*}}, %[[C256]] : index
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C8192]]) step (%[[STEP]])
// CHECK:   scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[STEP]])
// CHECK:     %[[N:.*]] = arith.addi %[[T]], %[[B]] : index
// CHECK:     %[[J:.*]] = arith.remsi %[[N]], %[[C128]]
// CHECK:     %[[I:.*]] = arith.divsi %[[N]], %[[C128]]
// CHECK:     scf.for
// CHECK:       memref.load %{{.*}}[%[[I]], %[[J]], %{{.*}}]
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// B64-LABEL: func.func @nest
// B64: %[[C64:.*]] = arith.constant 64 : index
// B64: %[[STEP:.*]] = arith.muli %{{.*}}, %[[C64]] : index
// B64: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%[[STEP]])
func.func @nest(%x: memref<64x128x4xf16>, %y: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c128) step (%c1, %c1) {
    scf.for %k = %c0 to %c4 step %c1 {
      %a = memref.load %x[%i, %j, %k] : memref<64x128x4xf16>
      %b = memref.load %y[%i, %j] : memref<64x128xf32>
      %e = arith.extf %a : f16 to f32
      %s = arith.addf %b, %e : f32
      memref.store %s, %y[%i, %j] : memref<64x128xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Serial host work (a scalar store, a full reduction) and a buffer copy
// become kernels too; a small nest gets a block of its trip count.
// CHECK-LABEL: func.func @serial
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[O:.*]]) step
// CHECK:   scf.parallel
// CHECK:     memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[O]]) step
// CHECK:   scf.parallel
// CHECK:     scf.for
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: %[[C10:.*]] = arith.constant 10 : index
// CHECK: %[[STEP:.*]] = arith.muli %{{.*}}, %[[C10]] : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%[[STEP]])
// CHECK:   scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[STEP]])
// CHECK:     memref.load %{{.*}} : memref<10xf32>
// CHECK:     memref.store %{{.*}} : memref<10xf32>
// CHECK-NOT: memref.copy
func.func @serial(%x: memref<10xf32>, %s: memref<f32>, %c: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %s[] : memref<f32>
  scf.for %i = %c0 to %c10 step %c1 {
    %a = memref.load %x[%i] : memref<10xf32>
    %b = memref.load %s[] : memref<f32>
    %t = arith.addf %a, %b : f32
    memref.store %t, %s[] : memref<f32>
  }
  memref.copy %x, %c : memref<10xf32> to memref<10xf32>
  return
}
