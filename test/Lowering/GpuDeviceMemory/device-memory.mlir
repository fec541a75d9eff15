// RUN: mp-opt %s --split-input-file --mp-gpu-device-memory | FileCheck %s

// Buffers of the function: memref.alloc/dealloc become gpu.alloc/dealloc
// (dynamic sizes kept); arguments are device memory already and untouched.
// CHECK-LABEL: func.func @buffers
// CHECK-SAME: (%[[X:.*]]: memref<64xf32>, %[[N:.*]]: index)
// CHECK-NOT: memref.alloc
// CHECK: %[[A:.*]] = gpu.alloc () : memref<64xf32>
// CHECK: %[[D:.*]] = gpu.alloc (%[[N]]) : memref<?xf32>
// CHECK: memref.copy %[[X]], %[[A]]
// CHECK: gpu.dealloc %[[D]] : memref<?xf32>
// CHECK-NEXT: return %[[A]]
func.func @buffers(%x: memref<64xf32>, %n: index) -> memref<64xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  memref.copy %x, %a : memref<64xf32> to memref<64xf32>
  memref.dealloc %d : memref<?xf32>
  return %a : memref<64xf32>
}

// -----

// A stack buffer of element data becomes a device buffer freed at every
// return; one inside a loop nest is a kernel thread's private array.
// CHECK-LABEL: func.func @stack
// CHECK: %[[S:.*]] = gpu.alloc () : memref<16xf32>
// CHECK: scf.parallel
// CHECK:   memref.alloca() : memref<4xf32>
// CHECK: cf.cond_br
// CHECK: gpu.dealloc %[[S]] : memref<16xf32>
// CHECK-NEXT: return
// CHECK: gpu.dealloc %[[S]] : memref<16xf32>
// CHECK-NEXT: return
func.func @stack(%c: i1, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = memref.alloca() : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %t = memref.alloca() : memref<4xf32>
    %v = memref.load %s[%i] : memref<16xf32>
    memref.store %v, %t[%c0] : memref<4xf32>
    %w = memref.load %t[%c0] : memref<4xf32>
    memref.store %w, %y[%i] : memref<16xf32>
    scf.reduce
  }
  cf.cond_br %c, ^a, ^b
^a:
  return
^b:
  return
}

// -----

// Constants: one device copy per global at the entry (gpu.alloc and a
// host-to-device gpu.memcpy), freed at the return; a host load keeps
// reading the host global; a global only the host reads is not copied.
// CHECK: memref.global "private" constant @w
// CHECK-LABEL: func.func @constants
// CHECK-SAME: (%[[Y:.*]]: memref<4xf32>)
// CHECK: %[[HOST:.*]] = memref.get_global @w : memref<4xf32>
// CHECK-NEXT: %[[DEV:.*]] = gpu.alloc () : memref<4xf32>
// CHECK-NEXT: gpu.memcpy %[[DEV]], %[[HOST]] : memref<4xf32>, memref<4xf32>
// CHECK-NOT: gpu.alloc
// CHECK: %[[G:.*]] = memref.get_global @w : memref<4xf32>
// CHECK: memref.load %[[G]][%{{.*}}] : memref<4xf32>
// CHECK: %[[K:.*]] = memref.get_global @k : memref<2xf32>
// CHECK: memref.load %[[K]][%{{.*}}] : memref<2xf32>
// CHECK: scf.parallel
// CHECK:   memref.load %[[DEV]][%{{.*}}] : memref<4xf32>
// CHECK: memref.copy %[[DEV]], %[[Y]]
// CHECK: gpu.dealloc %[[DEV]] : memref<4xf32>
// CHECK-NEXT: return
memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" constant @k : memref<2xf32> = dense<[5.0, 6.0]>
func.func @constants(%y: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %w = memref.get_global @w : memref<4xf32>
  %first = memref.load %w[%c0] : memref<4xf32>
  %k = memref.get_global @k : memref<2xf32>
  %k0 = memref.load %k[%c1] : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %w2 = memref.get_global @w : memref<4xf32>
    %v = memref.load %w2[%i] : memref<4xf32>
    %s = arith.mulf %v, %k0 : f32
    memref.store %s, %y[%i] : memref<4xf32>
    scf.reduce
  }
  memref.copy %w, %y : memref<4xf32> to memref<4xf32>
  return %first : f32
}

// -----

// Host reads of single-element device buffers (a loss, found_inf, a 0-d
// argument of mp-run's entry) are staged through a host alloca with a
// device-to-host gpu.memcpy; the host store of a scalar is left to
// --mp-gpu-map-parallel-loops (a one-thread kernel).
// CHECK-LABEL: func.func @scalars
// CHECK-SAME: (%[[SCALE:.*]]: memref<f32>, %[[OUT:.*]]: memref<i32>, %[[ONE:.*]]: memref<1x1xf32>)
// CHECK-DAG: %[[S3:.*]] = memref.alloca() : memref<1x1xf32>
// CHECK-DAG: %[[S2:.*]] = memref.alloca() : memref<i1>
// CHECK-DAG: %[[S1:.*]] = memref.alloca() : memref<f32>
// CHECK: gpu.memcpy %[[S1]], %[[SCALE]] : memref<f32>, memref<f32>
// CHECK-NEXT: %[[V:.*]] = memref.load %[[S1]][] : memref<f32>
// CHECK: %[[FLAG:.*]] = gpu.alloc () : memref<i1>
// CHECK: gpu.memcpy %[[S2]], %[[FLAG]] : memref<i1>, memref<i1>
// CHECK-NEXT: %[[F:.*]] = memref.load %[[S2]][] : memref<i1>
// CHECK: gpu.memcpy %[[S3]], %[[ONE]] : memref<1x1xf32>, memref<1x1xf32>
// CHECK-NEXT: memref.load %[[S3]][%{{.*}}, %{{.*}}] : memref<1x1xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]][] : memref<i32>
// CHECK: gpu.dealloc %[[FLAG]]
func.func @scalars(%scale: memref<f32>, %out: memref<i32>, %one: memref<1x1xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %scale[] : memref<f32>
  %flag = memref.alloc() : memref<i1>
  %false = arith.constant false
  memref.store %false, %flag[] : memref<i1>
  %f = memref.load %flag[] : memref<i1>
  %o = memref.load %one[%c0, %c0] : memref<1x1xf32>
  %i = arith.extui %f : i1 to i32
  memref.store %i, %out[] : memref<i32>
  memref.dealloc %flag : memref<i1>
  %r = arith.addf %v, %o : f32
  return %r : f32
}

