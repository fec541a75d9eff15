// RUN: mp-opt %s --split-input-file --mp-gpu-map-parallel-loops -verify-diagnostics
// RUN: not mp-opt %s --split-input-file --mp-gpu-map-parallel-loops=block-size=0 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: mp-gpu-map-parallel-loops: block-size must be in [1, 1024] (CUDA's threads per block), got 0

// Host code that reads an element would read device memory on the host.
func.func @host_read(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{mp-gpu-map-parallel-loops: host code would read a tensor element or carry a value out of a loop ('memref.load'); the GPU path keeps element accesses in kernels}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

func.func @loop_result(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'scf.for'}}
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<4xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %r : f32
}
