// --mp-import brings tosa to linalg on tensors.
// RUN: mp-opt %s --mp-import | FileCheck %s

// CHECK-LABEL: func.func @matmul_relu
// CHECK-NOT: tosa.
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x4x8xf32>, tensor<1x8x2xf32>)
// CHECK: linalg.generic
// CHECK: arith.minimumf
// CHECK-NOT: tosa.
func.func @matmul_relu(%a: tensor<1x4x8xf32>, %b: tensor<1x8x2xf32>) -> tensor<1x4x2xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x2xf32>
  %1 = tosa.clamp %0 {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  return %1 : tensor<1x4x2xf32>
}

// A module without tosa is only canonicalized.
// CHECK-LABEL: func.func @plain
// CHECK-NEXT: return %arg0
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
