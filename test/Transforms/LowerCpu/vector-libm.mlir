// erf (GELU's) has no LLVM intrinsic. By default --mp-lower-cpu computes it
// as a vector polynomial (--mp-approximate-math); with approximate-math=0,
// a vectorized loop calls libm on extracted lanes, and --mp-lower-cpu lowers
// those extracts and inserts too. Either way the module is all LLVM and
// runs, with the same values to the digits printed: erf(x) for x = -2,
// -1.75, ..., 1.75.
// RUN: mp-opt %s --mp-lower-cpu="approximate-math=0" | FileCheck %s --check-prefix=LIBM
// RUN: mp-opt %s --mp-lower-cpu="approximate-math=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s
// RUN: mp-opt %s --mp-lower-cpu | FileCheck %s --check-prefix=POLYNOMIAL
// RUN: mp-opt %s --mp-lower-cpu | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// LIBM: llvm.call @erff
// LIBM-NOT: vector.extract
// LIBM-NOT: vector.insert

// POLYNOMIAL-LABEL: llvm.func @erf
// POLYNOMIAL-NOT: erff
// POLYNOMIAL: llvm.intr.fma
// POLYNOMIAL-NOT: erff

// CHECK: sizes = [16]
// CHECK-NEXT: [-0.995322, -0.986672, -0.966105, -0.9229, -0.842701, -0.711156, -0.5205, -0.276326, 0, 0.276326, 0.5205, 0.711156, 0.842701, 0.9229, 0.966105, 0.986672]

func.func private @printMemrefF32(memref<*xf32>)

func.func @erf(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.erf %in : f32
    linalg.yield %a : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

func.func @main() {
  %e = tensor.empty() : tensor<16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %quarter = arith.constant 0.25 : f32
    %two = arith.constant 2.0 : f32
    %s = arith.mulf %f, %quarter : f32
    %v = arith.subf %s, %two : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %r = call @erf(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %m = bufferization.to_buffer %r : tensor<16xf32> to memref<16xf32>
  %u = memref.cast %m : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
