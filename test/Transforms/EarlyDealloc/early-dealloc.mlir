// RUN: mp-opt %s --mp-early-dealloc --allow-unregistered-dialect -split-input-file | FileCheck %s

// A chain: each buffer is freed after its last reader and allocated at its
// first writer, so two buffers are alive at once instead of three.
// CHECK-LABEL: func.func @chain
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: memref.copy %{{.*}}, %[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[C:.*]] = memref.alloc
// CHECK-NEXT: memref.copy %[[B]], %[[C]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: memref.copy %[[C]], %{{.*}}
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: return
func.func @chain(%x: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %c = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  memref.copy %b, %c : memref<4xf32> to memref<4xf32>
  memref.copy %c, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  memref.dealloc %c : memref<4xf32>
  return
}

// -----

// A use through a view counts: the dealloc goes after the last read of the
// collapsed view, not after the last use of the buffer itself.
// CHECK-LABEL: func.func @view
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK:      %[[V:.*]] = memref.collapse_shape %[[A]]
// CHECK-NEXT: memref.copy %[[V]], %{{.*}}
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: "test.after"
func.func @view(%x: memref<2x2xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<2x2xf32>
  memref.copy %x, %a : memref<2x2xf32> to memref<2x2xf32>
  %v = memref.collapse_shape %a [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  memref.copy %v, %out : memref<4xf32> to memref<4xf32>
  "test.after"() : () -> ()
  memref.dealloc %a : memref<2x2xf32>
  return
}

// -----

// A runtime call that takes the buffer's pointer as an integer (as
// mp-contractions-to-runtime emits) is a use: the buffer is freed after it.
// CHECK-LABEL: func.func @pointer
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK:      call @consume
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: "test.after"
func.func private @consume(i64) -> i32
func.func @pointer(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  %i = arith.index_cast %p : index to i64
  %r = call @consume(%i) : (i64) -> i32
  "test.after"() : () -> ()
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// A use inside a loop counts as the loop.
// CHECK-LABEL: func.func @loop
// CHECK:      scf.for
// CHECK:      }
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: "test.after"
func.func @loop(%x: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %a[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
  }
  "test.after"() : () -> ()
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// An alias that escapes (stored into a memref of memrefs, or returned)
// keeps the dealloc in place.
// CHECK-LABEL: func.func @escapes
// CHECK:      memref.store
// CHECK-NEXT: "test.after"
// CHECK-NEXT: memref.dealloc
func.func @escapes(%x: memref<4xf32>, %slot: memref<memref<4xf32>>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.store %a, %slot[] : memref<memref<4xf32>>
  "test.after"() : () -> ()
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// A dealloc in another block than its alloc (ownership-based deallocation
// under a condition) is left alone.
// CHECK-LABEL: func.func @conditional
// CHECK:      "test.after"
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.dealloc
func.func @conditional(%x: memref<4xf32>, %owned: i1) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  "test.after"() : () -> ()
  scf.if %owned {
    memref.dealloc %a : memref<4xf32>
  }
  return
}
