// --mp-optimizer builds @train_step.
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling --mp-optimizer | FileCheck %s --check-prefix=SGD
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=none --mp-optimizer=algorithm=adam | FileCheck %s --check-prefix=ADAM
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=4 hysteresis=3 growth-interval=50" --mp-optimizer | FileCheck %s --check-prefix=ADAPT
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="clip-norm=0.5" --mp-optimizer | FileCheck %s --check-prefix=CLIP
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling --mp-optimizer=accumulate=4 | FileCheck %s --check-prefix=ACC
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=adaptive --mp-optimizer=accumulate=2 | FileCheck %s --check-prefix=ACC-ADAPT
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=none --mp-optimizer=accumulate=2 | FileCheck %s --check-prefix=ACC-NONE
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=accumulate=0 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=algorithm=lion 2>&1 | FileCheck %s --check-prefix=ALGO
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=lr=0 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-optimizer=name=loss 2>&1 | FileCheck %s --check-prefix=NAME

// SGD-LABEL: func.func @train_step
// SGD-SAME: (%[[W:.*]]: tensor<1xf32> {mp.param = "w"}, %[[M:.*]]: tensor<1xf32> {mp.state = "w.momentum"}, %[[STEP:.*]]: i32 {mp.step}, %[[SCALE:.*]]: f32 {mp.loss_scale}, %[[TRACKER:.*]]: i32 {mp.growth_tracker})
// SGD-SAME: -> (tensor<1xf32> {mp.param = "w"}, tensor<1xf32> {mp.state = "w.momentum"}, i32 {mp.step}, f32 {mp.loss_scale}, i32 {mp.growth_tracker}, f32 {mp.loss}, i1 {mp.stepped}, f32 {mp.grad_norm})
// SGD-NOT: mp.accumulate
// SGD: mp.scale_loss %{{.*}}, %[[SCALE]]
// SGD: %{{.*}}, %[[INF:.*]] = mp.unscale %[[SCALED:[^ ]*]] by %[[SCALE]]
// The gradient norm is reduced from the scaled gradient, unscaled in the
// loop (the unscaled tensor keeps one reader, the update).
// SGD: %[[INV:.*]] = arith.divf %{{.*}}, %[[SCALE]] : f32
// SGD: %[[SUMSQ:.*]] = linalg.generic {{.*}} ins(%[[SCALED]] : tensor<1xf32>) outs(%{{.*}} : tensor<f32>)
// SGD: arith.mulf %{{.*}}, %[[INV]] : f32
// SGD: %[[NORMSQ:.*]] = tensor.extract %[[SUMSQ]][] : tensor<f32>
// SGD-NEXT: %[[NORM:.*]] = math.sqrt %[[NORMSQ]] : f32
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
// SGD: return %[[UPD]]#0, %[[UPD]]#1, %[[NSTEP]], %[[NS]], %[[NT]], %{{.*}}, %[[STEPPED]], %[[NORM]]
// SGD-NOT: func.func @train_step_accumulate

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
// ADAPT-SAME: -> (tensor<1xf32> {mp.param = "w"}, tensor<1xf32> {mp.state = "w.momentum"}, i32 {mp.step}, f32 {mp.loss_scale}, i32 {mp.growth_tracker}, f32 {mp.loss}, i1 {mp.stepped}, f32 {mp.grad_norm})
// ADAPT: %{{.*}}, %[[INF:.*]], %[[AMAX:.*]] = mp.unscale %{{.*}} by %[[SCALE]] : tensor<1xf32> -> tensor<1xf32> amax f32
// ADAPT: arith.select %[[INF]]
// ADAPT-NOT: mp.update_scale
// ADAPT: %[[NS:.*]], %[[NT:.*]] = mp.adapt_scale %[[SCALE]], %[[TRACKER]], %[[INF]], %[[AMAX]] {growth_interval = 50 : i64, hysteresis = 3 : i64, margin = 4.000000e+00 : f32} : i32
// ADAPT-NOT: mp.update_scale
// ADAPT: return %{{.*}}, %{{.*}}, %{{.*}}, %[[NS]], %[[NT]], %{{.*}}, %{{.*}}, %{{.*}}

// Clipping (the norm --mp-loss-scaling recorded) scales the gradient inside
// the update by min(1, clip / (norm + 1e-6)).
// CLIP-LABEL: func.func @train_step
// CLIP: %[[NORM:.*]] = math.sqrt
// CLIP: %[[TINY:.*]] = arith.constant 9.99999997E-7 : f32
// CLIP: %[[LIMIT:.*]] = arith.constant 5.000000e-01 : f32
// CLIP: %[[PADDED:.*]] = arith.addf %[[NORM]], %[[TINY]] : f32
// CLIP: %[[RATIO:.*]] = arith.divf %[[LIMIT]], %[[PADDED]] : f32
// CLIP: %[[FACTOR:.*]] = arith.minimumf %{{.*}}, %[[RATIO]] : f32
// CLIP: linalg.generic
// CLIP: arith.mulf %{{.*}}, %[[FACTOR]] : f32
// CLIP: return

// Accumulation (dynamic scaling): the step takes the window's sums and
// overflow flag after the tracker and updates with (sum + g) / 4; the
// window's overflow skips the update; a second function only accumulates.
// ACC-LABEL: func.func @train_step
// ACC-SAME: %[[SCALE:[^:]*]]: f32 {mp.loss_scale}, %{{[^:]*}}: i32 {mp.growth_tracker}, %[[SUM:[^:]*]]: tensor<1xf32> {mp.accumulator = "w"}, %[[OVER:[^:]*]]: i32 {mp.window_overflow})
// ACC-SAME: f32 {mp.loss}, i1 {mp.stepped}, f32 {mp.grad_norm})
// ACC-SAME: attributes {mp.accumulate = 4 : i64}
// ACC: %{{.*}}, %[[MICRO:.*]] = mp.unscale
// ACC: %[[INV:.*]] = arith.constant 2.500000e-01 : f32
// ACC: %[[EARLIER:.*]] = arith.cmpi ne, %[[OVER]], %{{.*}} : i32
// ACC: %[[INF:.*]] = arith.ori %[[MICRO]], %[[EARLIER]] : i1
// ACC: linalg.generic {{.*}} ins(%{{.*}}, %[[SUM]] : tensor<1xf32>, tensor<1xf32>) outs(%{{.*}} : tensor<f32>)
// ACC: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[SUM]], %{{.*}} : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>)
// ACC-NEXT: ^bb0(%[[OW:[^:]*]]: f32, %[[G:[^:]*]]: f32, %[[S:[^:]*]]: f32,
// ACC-NEXT: %[[TOTAL:.*]] = arith.addf %[[S]], %[[G]] : f32
// ACC-NEXT: arith.mulf %[[TOTAL]], %[[INV]] : f32
// ACC: arith.select %[[INF]], %[[OW]]
// ACC: mp.update_scale %[[SCALE]], %{{.*}}, %[[INF]]
// ACC-LABEL: func.func @train_step_accumulate
// ACC-SAME: (%{{[^:]*}}: tensor<1xf32> {mp.param = "w"}, %[[ASCALE:[^:]*]]: f32 {mp.loss_scale}, %[[ASUM:[^:]*]]: tensor<1xf32> {mp.accumulator = "w"}, %[[AOVER:[^:]*]]: i32 {mp.window_overflow})
// ACC-SAME: -> (tensor<1xf32> {mp.accumulator = "w"}, i32 {mp.window_overflow}, f32 {mp.loss})
// ACC-SAME: attributes {mp.accumulation_of = @train_step}
// ACC: mp.scale_loss %{{.*}}, %[[ASCALE]]
// ACC: %[[AG:.*]], %[[AINF:.*]] = mp.unscale
// ACC: %[[NEWSUM:.*]] = linalg.generic {{.*}} ins(%[[ASUM]], %[[AG]] : tensor<1xf32>, tensor<1xf32>)
// ACC: mp.precision = #mp.precision<f32>
// ACC: %[[FLAG:.*]] = arith.extui %[[AINF]] : i1 to i32
// ACC: %[[NEWOVER:.*]] = arith.ori %[[AOVER]], %[[FLAG]] : i32
// ACC: return %[[NEWSUM]], %[[NEWOVER]], %{{.*}} : tensor<1xf32>, i32, f32
// ACC-NOT: mp.update_scale

// Adaptive scaling also carries the window's amax, the largest of its
// micro-batches'.
// ACC-ADAPT-LABEL: func.func @train_step
// ACC-ADAPT-SAME: i32 {mp.window_overflow}, %[[WAMAX:[^:]*]]: f32 {mp.window_amax})
// ACC-ADAPT: %{{.*}}, %{{.*}}, %[[AMAX:.*]] = mp.unscale
// ACC-ADAPT: %[[BOTH:.*]] = arith.maximumf %[[AMAX]], %[[WAMAX]] : f32
// ACC-ADAPT: mp.adapt_scale %{{.*}}, %{{.*}}, %{{.*}}, %[[BOTH]]
// ACC-ADAPT-LABEL: func.func @train_step_accumulate
// ACC-ADAPT-SAME: -> (tensor<1xf32> {mp.accumulator = "w"}, i32 {mp.window_overflow}, f32 {mp.window_amax}, f32 {mp.loss})

// Without scaling there is no overflow to carry: the sums alone.
// ACC-NONE-LABEL: func.func @train_step
// ACC-NONE-SAME: i32 {mp.growth_tracker}, %{{[^:]*}}: tensor<1xf32> {mp.accumulator = "w"})
// ACC-NONE-LABEL: func.func @train_step_accumulate
// ACC-NONE-SAME: (%{{[^:]*}}: tensor<1xf32> {mp.param = "w"}, %{{[^:]*}}: f32 {mp.loss_scale}, %{{[^:]*}}: tensor<1xf32> {mp.accumulator = "w"})
// ACC-NONE-SAME: -> (tensor<1xf32> {mp.accumulator = "w"}, f32 {mp.loss})

// ALGO: for the --algorithm option: Cannot find option named 'lion'!
// LR: error: optimizer needs lr > 0, {{.*}} and 1 <= accumulate < 2^31
// NOGRAD: error: expected one gradient function ('mp.gradient_of'), found 0
// NAME: error: cannot create '@loss': the symbol already exists
