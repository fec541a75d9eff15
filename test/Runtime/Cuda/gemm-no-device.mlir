// Without a usable GPU, a lowered matrix product (a host call of
// mprt_cuda_gemm_sync, resolved from libmprt_cuda by the JIT) fails like the
// mgpu functions: by default the process stops at the first CUDA call with
// the reason; in record mode every later step reports, the product is
// skipped, and nothing is printed as a result.
// REQUIRES: mprt-cuda
// UNSUPPORTED: cuda-device
// RUN: mp-opt %s --mp-lower-gpu \
// RUN: | not mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s
// RUN: mp-opt %s --mp-lower-gpu \
// RUN: | env MPRT_CUDA_ERRORS=record mlir-runner -e main \
// RUN:   -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s --check-prefix=RECORD

// CHECK: mprt-cuda: error: mgpuModuleLoadJIT: no usable GPU: {{.+}}
// CHECK-NEXT: mprt-cuda: exiting (set MPRT_CUDA_ERRORS=record
// CHECK-NOT: mprt_cuda_gemm_sync

// The fill's launch is skipped, then the product.
// RECORD: mprt-cuda: error: mgpuModuleLoadJIT: no usable GPU: {{.+}}
// RECORD: mprt-cuda: error: mgpuLaunchKernel: no kernel (its module or function did not load); launch skipped
// RECORD: mprt-cuda: error: mprt_cuda_gemm_sync: product skipped after an earlier error
// RECORD-NOT: unresolved
// RECORD-NOT: JIT session error

func.func @product(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x8xf16>, tensor<8x4xf16>)
      outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}

func.func @main() {
  %a = arith.constant dense<1.0> : tensor<4x8xf16>
  %b = arith.constant dense<2.0> : tensor<8x4xf16>
  %c = call @product(%a, %b) : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf32>
  return
}
