// --mp-loss-scaling on a gradient function made by --mp-autodiff.
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling | FileCheck %s --check-prefix=DYN
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=static init-scale=1024" | FileCheck %s --check-prefix=STATIC
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="dtype=bf16 mode=dynamic" | FileCheck %s --check-prefix=FORCED
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="clip-norm=0.5" | FileCheck %s --check-prefix=CLIP
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling=mode=adaptive | FileCheck %s --check-prefix=ADAPT
// RUN: mp-opt %S/../../Training/Inputs/quadratic.mlir --mp-autodiff --mp-loss-scaling="mode=adaptive margin=2 hysteresis=5 growth-interval=100" | FileCheck %s --check-prefix=ADAPT-OPTS

// The seed is scaled, gradients are unscaled in f32 and found_inf returned.
// DYN-LABEL: func.func @loss_grad
// DYN-SAME: (%[[W:.*]]: tensor<1xf32> {mp.param = "w"}, %[[SCALE:.*]]: f32 {mp.loss_scale})
// DYN-SAME: -> (f32, tensor<1xf32> {mp.grad = "w"}, i1 {mp.found_inf})
// DYN-SAME: mp.loss_scaling = #mp.loss_scaling<mode = dynamic, init_scale = 6.553600e+04, growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, growth_interval = 2000, clip_norm = 0.000000e+00>
// DYN: %[[SEED:.*]] = arith.constant {mp.seed} 1.000000e+00 : f32
// DYN: %[[SCALED:.*]] = mp.scale_loss %[[SEED]], %[[SCALE]] : f32
// DYN: %[[U:.*]], %[[INF:.*]] = mp.unscale %{{.*}} by %[[SCALE]] : tensor<1xf32> -> tensor<1xf32>
// DYN: return %{{.*}}, %[[U]], %[[INF]] : f32, tensor<1xf32>, i1

// STATIC: mp.loss_scaling = #mp.loss_scaling<mode = static, init_scale = 1.024000e+03,
// STATIC: mp.unscale

// bf16 needs no scaling by default: the gradient function is unchanged.
// BF16-LABEL: func.func @loss_grad
// BF16-SAME: (%{{.*}}: tensor<1xf32> {mp.param = "w"}) -> (f32, tensor<1xf32> {mp.grad = "w"})
// BF16-SAME: #mp.loss_scaling<mode = none,
// BF16-NOT: mp.scale_loss
// BF16-NOT: mp.unscale

// FORCED: #mp.loss_scaling<mode = dynamic,
// FORCED: mp.unscale

// The clip norm is recorded for --mp-optimizer, which clips the gradient its
// update uses (with accumulation, the window's): the gradients leave
// unclipped.
// CLIP: clip_norm = 5.000000e-01
// CLIP: %[[U:.*]], %[[INF:.*]] = mp.unscale
// CLIP-NOT: arith.minimumf
// CLIP: return %{{.*}}, %[[U]], %[[INF]]

// Adaptive scaling: mp.unscale also measures the scaled gradients' amax,
// returned after found_inf; the record holds margin and hysteresis (and
// only this mode's does: DYN's ends at clip_norm).
// ADAPT-LABEL: func.func @loss_grad
// ADAPT-SAME: (%{{.*}}: tensor<1xf32> {mp.param = "w"}, %[[SCALE:.*]]: f32 {mp.loss_scale})
// ADAPT-SAME: -> (f32, tensor<1xf32> {mp.grad = "w"}, i1 {mp.found_inf}, f32 {mp.grad_amax})
// ADAPT-SAME: mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 6.553600e+04, growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, growth_interval = 2000, clip_norm = 0.000000e+00, margin = 8.000000e+00, hysteresis = 2>
// ADAPT: mp.scale_loss %{{.*}}, %[[SCALE]] : f32
// ADAPT: %[[U:.*]], %[[INF:.*]], %[[AMAX:.*]] = mp.unscale %{{.*}} by %[[SCALE]] : tensor<1xf32> -> tensor<1xf32> amax f32
// ADAPT: return %{{.*}}, %[[U]], %[[INF]], %[[AMAX]] : f32, tensor<1xf32>, i1, f32

// ADAPT-OPTS: #mp.loss_scaling<mode = adaptive, {{.*}}, growth_interval = 100, {{.*}}, margin = 2.000000e+00, hysteresis = 5>
