// RUN: mp-opt %s --mp-calibrate --split-input-file | FileCheck %s

// Inputs (weights too) and the result of a matmul get probes named by their
// calibration ids: arguments "<f>/arg<N>", results "<f>/<ordinal>" (the fill
// is ordinal 0, the matmul 1; constants and empties are not counted). The
// result's users read the probe.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>
// CHECK: %[[PX:.*]] = mp.observe %[[X]] as "mlp/arg0" : tensor<4x8xf32>
// CHECK: %[[PW:.*]] = mp.observe %[[W]] as "mlp/arg1" : tensor<8x16xf32>
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[PX]], %[[PW]] : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: %[[PMM:.*]] = mp.observe %[[MM]] as "mlp/1" : tensor<4x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[PMM]]
// CHECK-NOT: mp.observe
// CHECK: return
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A value feeding two matmuls is probed once; name locations and mp.id
// attributes name values.
// CHECK-LABEL: func.func @shared
// CHECK: %[[P:.*]] = mp.observe %{{.*}} as "shared/arg0"
// CHECK: linalg.matmul ins(%[[P]],
// CHECK: mp.observe %{{.*}} as "fc1"
// CHECK: linalg.matmul {mp.id = "fc2"} ins(%[[P]],
// CHECK: mp.observe %{{.*}} as "fc2"
// CHECK-NOT: "shared/arg0"
func.func @shared(%x: tensor<2x3xf32>, %w1: tensor<3x4xf32>, %w2: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<2x3xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32> loc("fc1")
  %b = linalg.matmul {mp.id = "fc2"} ins(%x, %w2 : tensor<2x3xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a, %b : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Convolutions, batch matmuls and the tosa forms are probed too; other ops
// (elementwise, pooling) are not.
// CHECK-LABEL: func.func @others
// CHECK: mp.observe %{{.*}} as "others/arg0"
// CHECK: mp.observe %{{.*}} as "others/arg1"
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: mp.observe %{{.*}} as "others/1"
// CHECK: mp.observe %{{.*}} as "others/arg2"
// CHECK: mp.observe %{{.*}} as "others/arg3"
// CHECK: linalg.batch_matmul
// CHECK: mp.observe %{{.*}} as "others/3"
// CHECK: mp.observe %{{.*}} as "others/4"
// CHECK: mp.observe %{{.*}} as "others/5"
// CHECK: tosa.matmul
// CHECK: mp.observe %{{.*}} as "others/7"
// CHECK-NOT: mp.observe
func.func @others(%img: tensor<1x1x4x4xf32>, %k: tensor<2x1x3x3xf32>,
                  %a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> (tensor<1x2x2x2xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x2x2x2xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%img, %k : tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) outs(%z1 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %e2 = tensor.empty() : tensor<2x3x5xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bm = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%z2 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %ta = tosa.abs %a : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %tb = tosa.abs %b : (tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %tm = tosa.matmul %ta, %tb, %zp, %zp : (tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x5xf32>
  return %c, %bm, %tm : tensor<1x2x2x2xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>
}
