// A dynamic batch (tensor<?x784xf32>, as framework stacks hand it over):
// the reshapes around the product measure the batch with tensor.dim. The
// rewrite leaves no conversion whose only use is such a measurement (#24:
// one converted the whole input back to f32 to read one dimension).
// RUN: mp-opt %s --mp-auto-mixed-precision | FileCheck %s

// CHECK-LABEL: func.func @dynamic_batch(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x784xf32>
// CHECK-NOT: arith.extf
// CHECK: tensor.dim %[[X]]
// CHECK-NOT: arith.extf
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x?x784xf16>, tensor<1x784x10xf16>) outs(%{{.*}} : tensor<1x?x10xf32>)
// CHECK-NOT: arith.extf
// CHECK: return
func.func @dynamic_batch(%x: tensor<?x784xf32>, %w: tensor<784x10xf32>) -> tensor<?x10xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.const_shape {values = dense<[1, -1, 784]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %x3 = tosa.reshape %x, %s : (tensor<?x784xf32>, !tosa.shape<3>) -> tensor<1x?x784xf32>
  %ws = tosa.const_shape {values = dense<[1, 784, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w3 = tosa.reshape %w, %ws : (tensor<784x10xf32>, !tosa.shape<3>) -> tensor<1x784x10xf32>
  %m = tosa.matmul %x3, %w3, %zp, %zp : (tensor<1x?x784xf32>, tensor<1x784x10xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x10xf32>
  %os = tosa.const_shape {values = dense<[-1, 10]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %o = tosa.reshape %m, %os : (tensor<1x?x10xf32>, !tosa.shape<2>) -> tensor<?x10xf32>
  return %o : tensor<?x10xf32>
}
