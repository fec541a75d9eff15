// RUN: mp-opt %s --mp-train-pipeline="qat=1 qat-freeze-after=100" | FileCheck %s
// RUN: mp-opt %s --mp-train-pipeline="qat=1" | FileCheck %s --check-prefix=MOVING
// RUN: not mp-opt %s --mp-train-pipeline="qat=1 accumulate=2" 2>&1 | FileCheck %s --check-prefix=ACCUMULATE
// RUN: not mp-opt %s --mp-quant-observers 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not mp-opt %s --mp-quant-observers="averaging-constant=0" 2>&1 | FileCheck %s --check-prefix=OPTIONS

#id = affine_map<(d0, d1) -> (d0, d1)>

// The observer is state of the step: an argument after the momentum and a
// result after the new momentum (the session pairs them by position), a
// moving average of the batch's max |x| (the batch's own at first), held
// once the step count reaches freeze-after; the activation is rounded with
// amax / 127.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{[^:]*}}: tensor<8x4xf32> {mp.state = "w.momentum"}, %[[OBS:[^:]*]]: tensor<f32> {mp.state = "w.input_amax"}, %[[STEP:[^:]*]]: i32 {mp.step}
// CHECK-SAME: -> (tensor<8x4xf32> {mp.param = "w"}, tensor<8x4xf32> {mp.state = "w.momentum"}, tensor<f32> {mp.state = "w.input_amax"}, i32 {mp.step}
// CHECK: %[[BATCH:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%{{.*}} : tensor<2x8xf32>) outs(%{{.*}} : tensor<f32>) attrs = {mp.precision = #mp.precision<f32>}
// CHECK: %[[CUR:.*]] = tensor.extract %[[BATCH]][]
// CHECK: %[[OLD:.*]] = tensor.extract %[[OBS]][]
// CHECK: %[[SEEN:.*]] = arith.cmpf ogt, %[[OLD]]
// CHECK: %[[DIFF:.*]] = arith.subf %[[CUR]], %[[OLD]]
// CHECK: %[[STEPPED:.*]] = arith.mulf %{{.*}}, %[[DIFF]]
// CHECK: %[[MOVED:.*]] = arith.addf %[[OLD]], %[[STEPPED]]
// CHECK: %[[NEXT:.*]] = arith.select %[[SEEN]], %[[MOVED]], %[[CUR]]
// CHECK: %[[LATE:.*]] = arith.cmpi sge, %[[STEP]], %c100_i32
// CHECK: %[[FROZEN:.*]] = arith.andi %[[SEEN]], %[[LATE]]
// CHECK: %[[AMAX:.*]] = arith.select %[[FROZEN]], %[[OLD]], %[[NEXT]]
// CHECK: %[[NEW:.*]] = linalg.fill ins(%[[AMAX]] : f32)
// CHECK: %[[DIV:.*]] = arith.divf %[[AMAX]], %cst
// CHECK: %[[SCALE:.*]] = arith.select %{{.*}}, %[[DIV]], %{{.*}} : f32
// CHECK: %[[SCALET:.*]] = linalg.fill ins(%[[SCALE]] : f32)
// CHECK: mp.fake_quant %{{.*}}, %[[SCALET]] : tensor<2x8xf32>, tensor<f32>
// CHECK: return %{{.*}}, %{{.*}}, %[[NEW]], %{{.*}} : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, i32

// MOVING-LABEL: func.func @train_step
// MOVING-NOT: arith.cmpi sge
// MOVING: return

// ACCUMULATE: error: mp-quant-observers: quantization-aware training with gradient accumulation is not supported
// NONE: error: mp-quant-observers: no training step (a function with an 'mp.step' argument) reads an observed mp.quant_scale
// OPTIONS: error: mp-quant-observers needs 0 < averaging-constant <= 1 and freeze-after >= 0

func.func @loss(%x: tensor<2x8xf32>, %t: tensor<2x4xf32>,
                %w: tensor<8x4xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x8xf32>, tensor<8x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  %s0 = tensor.empty() : tensor<f32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%y, %t : tensor<2x4xf32>, tensor<2x4xf32>) outs(%sz : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %sq = arith.mulf %d, %d : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %sum[] : tensor<f32>
  return %l : f32
}
