// --mp-train-pipeline chains autodiff, loss scaling, the optimizer and AMP.
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline --mlir-print-op-on-diagnostic=false | FileCheck %s
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="dtype=bf16 optimizer=adamw lr=0.001" | FileCheck %s --check-prefix=BF16

// CHECK-LABEL: func.func @train_step
// Forward and backward contractions take f16 inputs and accumulate in f32.
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x6xf16>, tensor<6x5xf16>) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK: mp.scale_loss
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<{{.*}}xf16>, tensor<{{.*}}xf16>) outs(%{{.*}} : tensor<{{.*}}xf32>)
// CHECK: mp.unscale
// The update stays f32.
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>) outs(%{{.*}}, %{{.*}} : tensor<6x5xf32>, tensor<6x5xf32>) attrs = {mp.precision = "f32"}
// CHECK: mp.update_scale

// BF16-LABEL: func.func @train_step
// BF16-SAME: {mp.state = "w1.m"}
// BF16: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x6xbf16>, tensor<6x5xbf16>)
// BF16-NOT: mp.unscale
