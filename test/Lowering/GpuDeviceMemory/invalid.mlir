// RUN: mp-opt %s --split-input-file --mp-gpu-device-memory -verify-diagnostics

// Host code that reads one element of a larger device buffer is not
// staged: it would copy the tensor element by element.
func.func @host_read(%x: memref<4xf32>) -> f32 {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{mp-gpu-device-memory: host code would read an element of a device buffer of type 'memref<4xf32>' ('memref.load'); only single-element buffers (a rank-0 result such as a loss) are copied to the host; keep element accesses in kernels}}
  %v = memref.load %x[%c1] : memref<4xf32>
  return %v : f32
}

// -----

// A single element seen through a strided view: gpu.memcpy only copies
// identity layouts.
func.func @strided_view(%x: memref<4xf32>) -> f32 {
  %view = memref.subview %x[2] [1] [1] : memref<4xf32> to memref<1xf32, strided<[1], offset: 2>>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{host code reads a single-element view with a non-identity layout}}
  %v = memref.load %view[%c0] : memref<1xf32, strided<[1], offset: 2>>
  return %v : f32
}

// -----

// Allocations inside a loop nest would run in a kernel.
func.func @alloc_in_loop(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{'memref.alloc' inside a loop nest would allocate in a kernel}}
    %a = memref.alloc() : memref<4xf32>
    memref.dealloc %a : memref<4xf32>
  }
  return
}

// -----

// A stack buffer outside the entry block (here in an scf.if) has no place
// for a gpu.dealloc that runs on every path.
func.func @alloca_in_if(%c: i1, %y: memref<4xf32>) {
  scf.if %c {
    // expected-error @+1 {{'memref.alloca' of element data outside the function's entry block}}
    %a = memref.alloca() : memref<4xf32>
    memref.copy %a, %y : memref<4xf32> to memref<4xf32>
  }
  return
}

// -----

// A mutable global: kernels would write a copy nobody copies back.
memref.global "private" @state : memref<4xf32> = dense<0.0>
func.func @mutable_global(%y: memref<4xf32>) {
  // expected-error @+1 {{global 'state' is not constant}}
  %g = memref.get_global @state : memref<4xf32>
  memref.copy %g, %y : memref<4xf32> to memref<4xf32>
  return
}

// -----

// Returning a constant's device copy: it is freed at the return.
memref.global "private" constant @w : memref<4xf32> = dense<1.0>
// expected-error @+1 {{returns the device copy of constant 'w', which is freed when the function returns}}
func.func @return_constant() -> memref<4xf32> {
  %g = memref.get_global @w : memref<4xf32>
  %c = memref.cast %g : memref<4xf32> to memref<4xf32>
  return %c : memref<4xf32>
}

// -----

// Atomic updates by host code have no staging.
func.func @host_atomic(%x: memref<f32>, %v: f32) {
  // expected-error @+1 {{host code would access device memory ('memref.atomic_rmw')}}
  %old = memref.atomic_rmw addf %v, %x[] : (f32, memref<f32>) -> f32
  return
}
