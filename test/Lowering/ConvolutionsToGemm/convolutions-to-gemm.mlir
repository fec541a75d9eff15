// RUN: mp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mp-convolutions-to-gemm))' | FileCheck %s
// The CPU lowering hands the product to mprt_gemm_batched, the filter shared
// by the batch (A's batch stride 0): no convolution loop nest is left.
// RUN: mp-opt %s --split-input-file --mp-lower-cpu=runtime-contractions=1 | FileCheck %s --check-prefix=CPU

// NCHW f32: the windows are copied into [N, C*KH*KW, OH*OW]; the product
// multiplies the [F, C*KH*KW] filter into [N, F, OH*OW].
// CHECK-LABEL: func.func @nchw
// CHECK-SAME: (%[[X:.*]]: tensor<64x1x8x8xf32>, %[[W:.*]]: tensor<8x1x3x3xf32>
// CHECK-NOT: linalg.conv_2d
// CHECK: %[[W2:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : tensor<8x1x3x3xf32> into tensor<8x9xf32>
// CHECK: %[[COL:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<64x1x8x8xf32>) outs(%{{.*}} : tensor<64x9x36xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[W2]], %[[COL]] : tensor<8x9xf32>, tensor<64x9x36xf32>) outs(%{{.*}} : tensor<64x8x36xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: tensor.expand_shape %[[P]] {{.*}} into tensor<64x8x6x6xf32>
// CPU-LABEL: llvm.func @nchw
// CPU: llvm.call @mprt_gemm_batched
// CPU-LABEL: llvm.func @int8
func.func @nchw(%x: tensor<64x1x8x8xf32>, %w: tensor<8x1x3x3xf32>, %init: tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%init : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
  return %y : tensor<64x8x6x6xf32>
}

// -----

// i8 x i8 -> i32 (--mp-quantize's convolutions): the product sign-extends
// both factors, the form --mp-contractions-to-runtime sends to the s8 GEMM.
// CHECK-LABEL: func.func @int8
// CHECK-NOT: linalg.conv_2d
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x18xi8>, tensor<2x18x16xi8>) outs(%{{.*}} : tensor<2x4x16xi32>)
// CHECK-DAG: arith.extsi %{{.*}} : i8 to i32
// CHECK-DAG: arith.muli
// CHECK: arith.addi
// CPU: llvm.call @mprt_gemm_batched
func.func @int8(%x: tensor<2x2x6x6xi8>, %w: tensor<4x2x3x3xi8>, %init: tensor<2x4x4x4xi32>) -> tensor<2x4x4x4xi32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x2x6x6xi8>, tensor<4x2x3x3xi8>) outs(%init : tensor<2x4x4x4xi32>) -> tensor<2x4x4x4xi32>
  return %y : tensor<2x4x4x4xi32>
}

// -----

// NHWC with an HWCF filter: [N, OH*OW, KH*KW*C] windows times the
// [KH*KW*C, F] filter.
// CHECK-LABEL: func.func @nhwc
// CHECK-NOT: linalg.conv_2d
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x16x27xf32>, tensor<27x8xf32>) outs(%{{.*}} : tensor<1x16x8xf32>)
func.func @nhwc(%x: tensor<1x6x6x3xf32>, %w: tensor<3x3x3x8xf32>, %init: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x6x6x3xf32>, tensor<3x3x3x8xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %y : tensor<1x4x4x8xf32>
}

// -----

// Dynamic shapes: the convolution stays (and becomes loops).
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.conv_2d_nchw_fchw
func.func @dynamic(%x: tensor<?x1x8x8xf32>, %w: tensor<8x1x3x3xf32>, %init: tensor<?x8x6x6xf32>) -> tensor<?x8x6x6xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%init : tensor<?x8x6x6xf32>) -> tensor<?x8x6x6xf32>
  return %y : tensor<?x8x6x6xf32>
}
