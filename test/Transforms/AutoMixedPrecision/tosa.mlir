// A tosa model goes through --mp-import inside --mp-auto-mixed-precision.
// RUN: mp-opt %mp_src_root/examples/tosa/mlp.mlir --mp-auto-mixed-precision | FileCheck %s
// RUN: mp-opt %mp_src_root/examples/tosa/cnn.mlir --mp-auto-mixed-precision | FileCheck %s --check-prefix=CNN

// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> tensor<8x10xf32>
// CHECK-NOT: tosa.
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x8x64xf16>, tensor<1x64x32xf16>) outs(%{{.*}} : tensor<1x8x32xf32>)
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x8x32xf16>, tensor<1x32x10xf16>) outs(%{{.*}} : tensor<1x8x10xf32>)
// Softmax stays f32.
// CHECK: math.exp %{{.*}} : f32
// CHECK-NOT: tosa.

// CNN-LABEL: func.func @forward
// CNN: linalg.conv_2d_nhwc_fhwc {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8x8x1xf16>, tensor<8x3x3x1xf16>) outs(%{{.*}} : tensor<4x6x6x8xf32>)
// Max-pooling between the contractions runs in f16.
// CNN: linalg.pooling_nhwc_max {{.*}} outs(%{{.*}} : tensor<4x3x3x8xf16>)
// CNN: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x4x72xf16>, tensor<1x72x10xf16>)
