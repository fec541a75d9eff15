// A weight gradient whose input gradient is accumulated into a zero-filled
// init (as mp's autodiff builds it), through the whole CPU lowering: every
// element of dW = x^T * g is the sum of four ones. Upstream's elementwise
// fusion accumulated g once per iteration of the extra loop: rows 4, 8, 12.
// RUN: mp-opt %s --mp-lower-cpu | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// CHECK: sizes = [3, 8]
// CHECK-NEXT: [4, 4, 4, 4, 4, 4, 4, 4]
// CHECK-NEXT: [4, 4, 4, 4, 4, 4, 4, 4]
// CHECK-NEXT: [4, 4, 4, 4, 4, 4, 4, 4]

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map5 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map6 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map7 = affine_map<(d0, d1, d2) -> (d0, d1)>

func.func private @printMemrefF32(memref<*xf32>)

func.func @weight_grad(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %g: tensor<4x8xf32>, %x: tensor<4x3xbf16>) -> tensor<3x8xf32> {
  %cst = arith.constant 0.0 : f32
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x8xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %grad = linalg.generic {indexing_maps = [#map, #map1, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b, %g : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) outs(%f : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: bf16):
    %99 = arith.extf %out : bf16 to f32
    %100 = arith.addf %in, %in_22 : f32
    %101 = arith.cmpf oge, %100, %cst : f32
    %102 = arith.select %101, %in_23, %cst : f32
    %103 = arith.addf %99, %102 : f32
    %104 = arith.truncf %103 : f32 to bf16
    linalg.yield %104 : bf16
  } -> tensor<4x8xbf16>
  %e2 = tensor.empty() : tensor<3x8xf32>
  %f2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<3x8xf32>) -> tensor<3x8xf32>
  %dw = linalg.generic {indexing_maps = [#map7, #map6, #map5], iterator_types = ["reduction", "parallel", "parallel"]} ins(%x, %grad : tensor<4x3xbf16>, tensor<4x8xbf16>) outs(%f2 : tensor<3x8xf32>) {
  ^bb0(%in: bf16, %in_22: bf16, %out: f32):
    %99 = arith.extf %in_22 : bf16 to f32
    %100 = arith.extf %in : bf16 to f32
    %101 = arith.mulf %99, %100 : f32
    %102 = arith.addf %out, %101 : f32
    linalg.yield %102 : f32
  } -> tensor<3x8xf32>
  return %dw : tensor<3x8xf32>
}

func.func @main() {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %one16 = arith.constant 1.0 : bf16
  %e48 = tensor.empty() : tensor<4x8xf32>
  %ones48 = linalg.fill ins(%one : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %zeros8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %e43 = tensor.empty() : tensor<4x3xbf16>
  %ones43 = linalg.fill ins(%one16 : bf16) outs(%e43 : tensor<4x3xbf16>) -> tensor<4x3xbf16>
  %dw = call @weight_grad(%ones48, %zeros8, %ones48, %ones43)
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x3xbf16>) -> tensor<3x8xf32>
  %m = bufferization.to_buffer %dw : tensor<3x8xf32> to memref<3x8xf32>
  %u = memref.cast %m : memref<3x8xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
