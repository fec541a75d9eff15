// Runs a function lowered by --mp-lower-gpu on the GPU through libmprt_cuda
// (PTX loaded by the driver's JIT, launched with mgpuLaunchKernel) and
// checks the numbers. The kernels still read and write host malloc and
// global memory, so the device must access pageable host memory (HMM or
// ATS); see docs/gpu.md, "Memory".
// REQUIRES: mprt-cuda, cuda-device, cuda-pageable-memory
// RUN: mp-opt %s --mp-lower-gpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s

// CHECK-NOT: mprt-cuda: error
// CHECK: sizes = [4, 8]
// CHECK-NEXT: {{\[}}[0,   1,   0,   2,   0,   3,   0,   4],
// CHECK-NEXT: [2,   0,   3,   0,   4,   0,   5,   0],
// CHECK-NEXT: [1.5,   0,   2.5,   0,   3.5,   0,   4.5,   0],
// CHECK-NEXT: [11,   19,   32,   38,   53,   57,   74,   76]]
// CHECK-NOT: mprt-cuda: error

func.func private @printMemrefF32(tensor<*xf32>)

func.func @bias_relu(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

func.func @main() {
  %x = arith.constant dense<[[-1.0, 2.0, -3.0, 4.0, -5.0, 6.0, -7.0, 8.0],
                              [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                              [0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5],
                              [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]]> : tensor<4x8xf32>
  %b = arith.constant dense<[1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 4.0, -4.0]> : tensor<8xf32>
  %y = call @bias_relu(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %u = tensor.cast %y : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
