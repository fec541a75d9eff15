// Round trip of every mp op and attribute, in the custom and generic forms.
// RUN: mp-opt %s | mp-opt | FileCheck %s
// RUN: mp-opt %s --mlir-print-op-generic | mp-opt | FileCheck %s

// CHECK-LABEL: func.func @scale_loss
// CHECK-SAME: (%[[LOSS:.*]]: f32, %[[SCALE:.*]]: f32, %[[T:.*]]: tensor<f16>)
func.func @scale_loss(%loss: f32, %scale: f32, %t: tensor<f16>) -> (f32, tensor<f16>) {
  // CHECK: mp.scale_loss %[[LOSS]], %[[SCALE]] : f32
  %0 = mp.scale_loss %loss, %scale : f32
  // CHECK: mp.scale_loss %[[T]], %[[SCALE]] : tensor<f16>
  %1 = mp.scale_loss %t, %scale : tensor<f16>
  return %0, %1 : f32, tensor<f16>
}

// CHECK-LABEL: func.func @unscale
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xf16>, %[[B:.*]]: tensor<?xbf16>, %[[C:.*]]: tensor<f32>, %[[S:.*]]: f32)
func.func @unscale(%a: tensor<64x32xf16>, %b: tensor<?xbf16>, %c: tensor<f32>, %s: f32)
    -> (tensor<64x32xf32>, tensor<?xbf16>, tensor<f32>, i1) {
  // CHECK: %[[U:.*]]:3, %[[FOUND:.*]] = mp.unscale %[[A]], %[[B]], %[[C]] by %[[S]]
  // CHECK-SAME: : tensor<64x32xf16>, tensor<?xbf16>, tensor<f32> -> tensor<64x32xf32>, tensor<?xbf16>, tensor<f32>
  %u:3, %found = mp.unscale %a, %b, %c by %s
      : tensor<64x32xf16>, tensor<?xbf16>, tensor<f32> -> tensor<64x32xf32>, tensor<?xbf16>, tensor<f32>
  // CHECK: return %[[U]]#0, %[[U]]#1, %[[U]]#2, %[[FOUND]]
  return %u#0, %u#1, %u#2, %found : tensor<64x32xf32>, tensor<?xbf16>, tensor<f32>, i1
}

// With an amax result (adaptive loss scaling).
// CHECK-LABEL: func.func @unscale_amax
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xf16>, %[[S:.*]]: f32)
func.func @unscale_amax(%a: tensor<64x32xf16>, %s: f32)
    -> (tensor<64x32xf32>, i1, f32) {
  // CHECK: %[[U:.*]], %[[FOUND:.*]], %[[AMAX:.*]] = mp.unscale %[[A]] by %[[S]] : tensor<64x32xf16> -> tensor<64x32xf32> amax f32
  %u, %found, %amax = mp.unscale %a by %s : tensor<64x32xf16> -> tensor<64x32xf32> amax f32
  // CHECK: return %[[U]], %[[FOUND]], %[[AMAX]]
  return %u, %found, %amax : tensor<64x32xf32>, i1, f32
}

// Required attributes (margin, hysteresis) are printed, defaults are not.
// CHECK-LABEL: func.func @adapt_scale
func.func @adapt_scale(%s: f32, %t32: i32, %t64: i64, %inf: i1, %amax: f32) -> (f32, i32, f32, i64) {
  // CHECK: mp.adapt_scale %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {hysteresis = 2 : i64, margin = 8.000000e+00 : f32} : i32
  %s1, %t1 = mp.adapt_scale %s, %t32, %inf, %amax {margin = 8.0 : f32, hysteresis = 2 : i64} : i32
  // CHECK: mp.adapt_scale %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {backoff_factor = 2.500000e-01 : f32, growth_interval = 100 : i64, hysteresis = 3 : i64, limit = 4.480000e+02 : f32, margin = 2.000000e+00 : f32, max_scale = 1.024000e+03 : f32, min_scale = 1.250000e-01 : f32} : i64
  %s2, %t2 = mp.adapt_scale %s, %t64, %inf, %amax
      {margin = 2.0 : f32, hysteresis = 3 : i64, backoff_factor = 0.25 : f32,
       growth_interval = 100 : i64, min_scale = 0.125 : f32,
       max_scale = 1024.0 : f32, limit = 448.0 : f32} : i64
  return %s1, %t1, %s2, %t2 : f32, i32, f32, i64
}

// Default attributes are not printed; others are.
// CHECK-LABEL: func.func @update_scale
func.func @update_scale(%s: f32, %t32: i32, %t64: i64, %inf: i1) -> (f32, i32, f32, i64) {
  // CHECK: mp.update_scale %{{.*}}, %{{.*}}, %{{.*}} : i32
  %s1, %t1 = mp.update_scale %s, %t32, %inf : i32
  // CHECK: mp.update_scale %{{.*}}, %{{.*}}, %{{.*}} {backoff_factor = 2.500000e-01 : f32, growth_factor = 4.000000e+00 : f32, growth_interval = 100 : i64, max_scale = 1.024000e+03 : f32, min_scale = 1.250000e-01 : f32} : i64
  %s2, %t2 = mp.update_scale %s, %t64, %inf
      {growth_factor = 4.0 : f32, backoff_factor = 0.25 : f32,
       growth_interval = 100 : i64, min_scale = 0.125 : f32,
       max_scale = 1024.0 : f32} : i64
  return %s1, %t1, %s2, %t2 : f32, i32, f32, i64
}

// CHECK-LABEL: func.func @observe
func.func @observe(%x: tensor<4x8xf32>, %q: tensor<4xi8>) -> (tensor<4x8xf32>, tensor<4xi8>) {
  // CHECK: mp.observe %{{.*}} as "fc1.input" : tensor<4x8xf32>
  %0 = mp.observe %x as "fc1.input" : tensor<4x8xf32>
  // CHECK: mp.observe %{{.*}} as "q" : tensor<4xi8>
  %1 = mp.observe %q as "q" : tensor<4xi8>
  return %0, %1 : tensor<4x8xf32>, tensor<4xi8>
}

// CHECK-LABEL: func.func @attributes
// CHECK-SAME: mp.decision = #mp.decision<deny, f32>
// CHECK-SAME: mp.precision = #mp.precision<bf16>
// CHECK-SAME: other = #mp.decision<infer, bf16>
func.func @attributes() attributes {mp.decision = #mp.decision<deny, f32>,
    mp.precision = #mp.precision<bf16>, other = #mp.decision<infer, bf16>} {
  return
}

// The training contract round-trips.
// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {mp.param = "w"}, %{{.*}}: f32 {mp.loss_scale})
// CHECK-SAME: -> (f32, tensor<4xf32> {mp.grad = "w"}, i1 {mp.found_inf})
// CHECK-SAME: mp.gradient_of = @loss
// CHECK-SAME: mp.loss_scaling = #mp.loss_scaling<mode = dynamic, init_scale = 6.553600e+04, growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, growth_interval = 2000, clip_norm = 0.000000e+00>
func.func @loss_grad(%w: tensor<4xf32> {mp.param = "w"}, %s: f32 {mp.loss_scale})
    -> (f32, tensor<4xf32> {mp.grad = "w"}, i1 {mp.found_inf})
    attributes {mp.gradient_of = @loss,
                mp.loss_scaling = #mp.loss_scaling<mode = dynamic,
                    init_scale = 65536.0, growth_factor = 2.0,
                    backoff_factor = 0.5, growth_interval = 2000,
                    clip_norm = 0.0>} {
  %f = arith.constant {mp.seed} false
  return %s, %w, %f : f32, tensor<4xf32>, i1
}

// The adaptive scaler's record holds its margin and hysteresis; the amax
// result carries its role.
// CHECK-LABEL: func.func @loss_grad_adaptive
// CHECK-SAME: -> (f32, tensor<4xf32> {mp.grad = "w"}, i1 {mp.found_inf}, f32 {mp.grad_amax})
// CHECK-SAME: mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 6.553600e+04, growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, growth_interval = 2000, clip_norm = 0.000000e+00, margin = 4.000000e+00, hysteresis = 3>
func.func @loss_grad_adaptive(%w: tensor<4xf32> {mp.param = "w"}, %s: f32 {mp.loss_scale})
    -> (f32, tensor<4xf32> {mp.grad = "w"}, i1 {mp.found_inf}, f32 {mp.grad_amax})
    attributes {mp.gradient_of = @loss,
                mp.loss_scaling = #mp.loss_scaling<mode = adaptive,
                    init_scale = 65536.0, growth_factor = 2.0,
                    backoff_factor = 0.5, growth_interval = 2000,
                    clip_norm = 0.0, hysteresis = 3, margin = 4.0>} {
  %f = arith.constant {mp.seed} false
  return %s, %w, %f, %s : f32, tensor<4xf32>, i1, f32
}

// CHECK-LABEL: func.func @fake_quant
func.func @fake_quant(%x: tensor<4x8xf32>, %w: tensor<8x16xbf16>) -> (tensor<4x8xf32>, tensor<8x16xbf16>) {
  // CHECK: mp.quant_scale %{{.*}} {observer = "w.input_amax"} : tensor<4x8xf32> -> tensor<f32>
  %sx = mp.quant_scale %x {observer = "w.input_amax"} : tensor<4x8xf32> -> tensor<f32>
  // CHECK: mp.fake_quant %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
  %xq = mp.fake_quant %x, %sx : tensor<4x8xf32>, tensor<f32>
  // CHECK: mp.quant_scale %{{.*}} {axis = 1 : i64} : tensor<8x16xbf16> -> tensor<16xf32>
  %sw = mp.quant_scale %w {axis = 1 : i64} : tensor<8x16xbf16> -> tensor<16xf32>
  // CHECK: mp.fake_quant %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<8x16xbf16>, tensor<16xf32>
  %wq = mp.fake_quant %w, %sw {axis = 1 : i64} : tensor<8x16xbf16>, tensor<16xf32>
  return %xq, %wq : tensor<4x8xf32>, tensor<8x16xbf16>
}

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK: mp.dropout %{{.*}} {ratio = 1.000000e-01 : f64, stream = 2 : i64} : tensor<4x8xbf16>
  %y = mp.dropout %x {ratio = 1.000000e-01 : f64, stream = 2 : i64} : tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}
