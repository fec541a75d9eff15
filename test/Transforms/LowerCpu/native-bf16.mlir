// f32 -> bf16 rounding through the whole CPU lowering: by default integer
// code (arith-expand include-bf16, any CPU), with native-bf16=1 an LLVM
// fptrunc that the code generator turns into AVX512-BF16's vcvtneps2bf16.
// Both round to nearest even (ties below: 1 + 2^-8 down to 1, 1 + 3 * 2^-8
// up to 1 + 2^-6) and keep NaNs; the hardware turns f32 denormals into
// signed zeros where the emulation keeps them (bf16 has f32's exponents).
// RUN: mp-opt %s --mp-lower-cpu | FileCheck %s --check-prefix=EMULATED-IR
// RUN: mp-opt %s --mp-lower-cpu="native-bf16=1" | FileCheck %s --check-prefix=NATIVE-IR
// RUN: mp-opt %s --mp-lower-cpu | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s --check-prefixes=CHECK,EMULATED
// RUN: %if avx512bf16 %{ mp-opt %s --mp-lower-cpu="native-bf16=1" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s --check-prefixes=CHECK,NATIVE %}

// EMULATED-IR-NOT: llvm.fptrunc
// EMULATED-IR: llvm.lshr
// NATIVE-IR: llvm.fptrunc %{{.*}} : vector<16xf32> to vector<16xbf16>

// CHECK: sizes = [16]
// CHECK-NEXT: [1,  1.01562,  -2.5,  3.38953e+38,  nan,  -0.00390625,  65536,  0.333984,
// EMULATED-SAME: 1.00101e-38,  -1.00101e-38
// NATIVE-SAME: 0,  -0
// CHECK-SAME: 1,  1,  1,  1,  1,  1]

func.func private @printMemrefF32(memref<*xf32>)

func.func @round(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %b = arith.truncf %in : f32 to bf16
    %f = arith.extf %b : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

func.func @main() {
  %x = arith.constant dense<[1.00390625, 1.01171875, -2.5, 3.3895e38, 0x7FC00000, -0.00390625, 65536.0, 0.333333343, 1.0e-38, -1.0e-38, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]> : tensor<16xf32>
  %r = call @round(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %m = bufferization.to_buffer %r : tensor<16xf32> to memref<16xf32>
  %u = memref.cast %m : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
