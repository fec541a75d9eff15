// Without a usable GPU, code from --mp-lower-gpu run with libmprt_cuda stops
// at its first CUDA call (the module load in a global constructor) with the
// reason and exit status 1, before printing any result.
// REQUIRES: mprt-cuda
// UNSUPPORTED: cuda-device
// RUN: mp-opt %s --mp-lower-gpu \
// RUN: | not mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s
//
// The record mode goes on (NULL handles, launches skipped) and reports
// every failure; nothing may run on the device then.
// RUN: mp-opt %s --mp-lower-gpu \
// RUN: | env MPRT_CUDA_ERRORS=record mlir-runner -e main \
// RUN:   -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s --check-prefix=RECORD

// CHECK: mprt-cuda: error: mgpuModuleLoadJIT: no usable GPU: {{.+}}
// CHECK-NEXT: mprt-cuda: exiting (set MPRT_CUDA_ERRORS=record
// CHECK-NOT: Memref

// RECORD: mprt-cuda: error: mgpuModuleLoadJIT: no usable GPU: {{.+}}
// RECORD: mprt-cuda: error: mgpuModuleGetFunction(relu_kernel): the module did not load
// RECORD: mprt-cuda: error: mgpuLaunchKernel: no kernel (its module or function did not load); launch skipped

func.func private @printMemrefF32(tensor<*xf32>)

func.func @relu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

func.func @main() {
  %x = arith.constant dense<[-1.0, 2.0, -3.0, 4.0, -5.0, 6.0, -7.0, 8.0]> : tensor<8xf32>
  %y = call @relu(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %u = tensor.cast %y : tensor<8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
