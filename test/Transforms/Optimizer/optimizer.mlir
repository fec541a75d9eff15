// --mp-optimizer builds @train_step.
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling --mp-optimizer | FileCheck %s --check-prefix=SGD
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=none --mp-optimizer=algorithm=adam | FileCheck %s --check-prefix=ADAM
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=4 hysteresis=3 growth-interval=50" --mp-optimizer | FileCheck %s --check-prefix=ADAPT
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=algorithm=lion 2>&1 | FileCheck %s --check-prefix=ALGO
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=lr=0 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=name=loss 2>&1 | FileCheck %s --check-prefix=NAME

// SGD-LABEL: func.func @train_step
// SGD-SAME: (%[[W:.*]]: tensor<1xf32> {mp.param = "w"}, %[[M:.*]]: tensor<1xf32> {mp.state = "w.momentum"}, %[[STEP:.*]]: i32 {mp.step}, %[[SCALE:.*]]: f32 {mp.loss_scale}, %[[TRACKER:.*]]: i32 {mp.growth_tracker})
// SGD-SAME: -> (tensor<1xf32> {mp.param = "w"}, tensor<1xf32> {mp.state = "w.momentum"}, i32 {mp.step}, f32 {mp.loss_scale}, i32 {mp.growth_tracker}, f32 {mp.loss}, i1 {mp.stepped})
// SGD: mp.scale_loss %{{.*}}, %[[SCALE]]
// SGD: %{{.*}}, %[[INF:.*]] = mp.unscale
// The FP32 master update is pinned to f32.
// SGD: %[[UPD:.*]]:2 = linalg.generic {{.*}} ins(%[[W]], %{{.*}}, %[[M]] : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>)
// SGD-SAME: mp.precision = #mp.precision<f32>
// A step with inf/nan keeps the old values, element by element inside the
// update (so the new values can be written in place).
// SGD-NEXT: ^bb0(%[[OW:.*]]: f32, %{{.*}}: f32, %[[OM:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// SGD: %[[NEWW:.*]] = arith.subf %[[OW]], %{{.*}} : f32
// SGD-NEXT: %[[KW:.*]] = arith.select %[[INF]], %[[OW]], %[[NEWW]] : f32
// SGD-NEXT: %[[KM:.*]] = arith.select %[[INF]], %[[OM]], %{{.*}} : f32
// SGD-NEXT: linalg.yield %[[KW]], %[[KM]] : f32, f32
// SGD-NOT: arith.select {{.*}} : tensor
// SGD: %[[NSTEP:.*]] = arith.select %[[INF]], %[[STEP]], %{{.*}} : i32
// SGD: %[[STEPPED:.*]] = arith.xori %[[INF]], %{{.*}} : i1
// SGD: %[[NS:.*]], %[[NT:.*]] = mp.update_scale %[[SCALE]], %[[TRACKER]], %[[INF]] : i32
// SGD: return %[[UPD]]#0, %[[UPD]]#1, %[[NSTEP]], %[[NS]], %[[NT]], %{{.*}}, %[[STEPPED]]

// ADAM-LABEL: func.func @train_step
// ADAM-SAME: {mp.state = "w.m"}, %{{.*}}: tensor<1xf32> {mp.state = "w.v"}
// ADAM: math.powf
// ADAM: linalg.generic
// ADAM: math.sqrt
// ADAM-NOT: mp.update_scale
// ADAM: return

// Adaptive scaling: the same signature (scale and tracker in and out); the
// gradients' amax from mp.unscale moves the scale with mp.adapt_scale, with
// the recorded settings.
// ADAPT-LABEL: func.func @train_step
// ADAPT-SAME: %[[SCALE:[^:]*]]: f32 {mp.loss_scale}, %[[TRACKER:[^:]*]]: i32 {mp.growth_tracker})
// ADAPT-SAME: -> (tensor<1xf32> {mp.param = "w"}, tensor<1xf32> {mp.state = "w.momentum"}, i32 {mp.step}, f32 {mp.loss_scale}, i32 {mp.growth_tracker}, f32 {mp.loss}, i1 {mp.stepped})
// ADAPT: %{{.*}}, %[[INF:.*]], %[[AMAX:.*]] = mp.unscale %{{.*}} by %[[SCALE]] : tensor<1xf32> -> tensor<1xf32> amax f32
// ADAPT: arith.select %[[INF]]
// ADAPT-NOT: mp.update_scale
// ADAPT: %[[NS:.*]], %[[NT:.*]] = mp.adapt_scale %[[SCALE]], %[[TRACKER]], %[[INF]], %[[AMAX]] {growth_interval = 50 : i64, hysteresis = 3 : i64, margin = 4.000000e+00 : f32} : i32
// ADAPT-NOT: mp.update_scale
// ADAPT: return %{{.*}}, %{{.*}}, %{{.*}}, %[[NS]], %[[NT]], %{{.*}}, %{{.*}}

// ALGO: for the --algorithm option: Cannot find option named 'lion'!
// LR: error: optimizer needs lr > 0
// NOGRAD: error: expected one gradient function ('mp.gradient_of'), found 0
// NAME: error: cannot create '@loss': the symbol already exists
