// RUN: mp-opt %s --mp-lower-cpu | FileCheck %s
// RUN: mp-opt %s --mp-lower-cpu=probes=0 | FileCheck %s --check-prefix=DROPPED

// --mp-lower-cpu lowers probes to runtime calls, in the training step as in
// any function. A dense value is passed as it is (no allocation before the
// first call); a slice is first copied to a dense buffer by compiled loops
// (no runtime copy function is needed).
// CHECK: llvm.mlir.global private constant @__mp_probe_id_{{[0-9]+}}
// CHECK: llvm.func @mprt_observe(i64, i64, i64, i32)
// CHECK-LABEL: llvm.func @step
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.call @mprt_observe
// CHECK: llvm.call @malloc
// CHECK-NOT: memrefCopy
// CHECK: llvm.call @mprt_observe
// DROPPED-NOT: mprt_observe
func.func @step(%x: tensor<8x8xf32>) -> tensor<4x4xf32> {
  %0 = mp.observe %x as "whole" : tensor<8x8xf32>
  %s = tensor.extract_slice %0[1, 1] [4, 4] [1, 1] : tensor<8x8xf32> to tensor<4x4xf32>
  %1 = mp.observe %s as "slice" : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
