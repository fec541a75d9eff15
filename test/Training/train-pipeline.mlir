// --mp-train-pipeline chains autodiff, loss scaling, the optimizer and AMP.
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline --mlir-print-op-on-diagnostic=false | FileCheck %s
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="dtype=bf16 optimizer=adamw lr=0.001" | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="dtype=f32" | FileCheck %s --check-prefix=F32
// RUN: not mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="dtype=fp8" 2>&1 | FileCheck %s --check-prefix=BADDTYPE
// RUN: not mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=BADOPT

// CHECK-LABEL: func.func @train_step
// Forward and backward contractions take f16 inputs and accumulate in f32.
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x6xf16>, tensor<6x5xf16>) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK: mp.scale_loss
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<{{.*}}xf16>, tensor<{{.*}}xf16>) outs(%{{.*}} : tensor<{{.*}}xf32>)
// CHECK: mp.unscale
// The update stays f32.
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>) outs(%{{.*}}, %{{.*}} : tensor<6x5xf32>, tensor<6x5xf32>) attrs = {mp.precision = #mp.precision<f32>}
// CHECK: mp.update_scale

// BF16-LABEL: func.func @train_step
// BF16-SAME: {mp.state = "w1.m"}
// BF16: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x6xbf16>, tensor<6x5xbf16>)
// BF16-NOT: mp.unscale

// dtype=f32 is the same step without the precision rewrite: no loss
// scaling, no low-precision types (mp-run train --precision f32).
// F32-LABEL: func.func @train_step
// F32: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<6x5xf32>)
// F32-NOT: mp.scale_loss
// F32-NOT: f16
// F32-NOT: mp.decision

// Enum options refuse values they do not list.
// BADDTYPE: for the --dtype option: Cannot find option named 'fp8'!
// BADOPT: for the --optimizer option: Cannot find option named 'lion'!
