// A kernel module that declares a libdevice function is an error at its
// launch site when --mp-lower-gpu found no CUDA toolkit; modules without
// libdevice calls pass unchanged.
// RUN: mp-opt %s --split-input-file --mp-gpu-require-libdevice -verify-diagnostics | FileCheck %s

module attributes {gpu.container_module} {
  func.func @e(%x: memref<1000xf32>, %y: memref<1000xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error @below {{kernel module 'e_kernel' calls libdevice function '__nv_expf' (from a math op), but no CUDA toolkit with nvvm/libdevice/libdevice.10.bc was found; set CUDA_HOME or pass toolkit=DIR to --mp-lower-gpu}}
    gpu.launch_func @e_kernel::@e_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<1000xf32>, %y : memref<1000xf32>)
    return
  }
  gpu.module @e_kernel {
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @e_kernel(%a: f32) attributes {gpu.kernel} {
      %0 = llvm.call @__nv_expf(%a) : (f32) -> f32
      llvm.return
    }
  }
}

// -----

// CHECK-LABEL: gpu.module @add_kernel
// CHECK: llvm.fadd
module attributes {gpu.container_module} {
  gpu.module @add_kernel {
    llvm.func @add_kernel(%a: f32) attributes {gpu.kernel} {
      %0 = llvm.fadd %a, %a : f32
      llvm.return
    }
  }
}
