// Every verifier error of the mp dialect.
// RUN: mp-opt %s --split-input-file --verify-diagnostics

func.func @unscale_no_grads(%s: f32) {
  // expected-error @+1 {{'mp.unscale' op needs at least one gradient}}
  %found = "mp.unscale"(%s) <{resultSegmentSizes = array<i32: 0, 1, 0>}> : (f32) -> i1
  return
}

// -----

func.func @unscale_count_mismatch(%a: tensor<4xf32>, %b: tensor<4xf32>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op has 2 gradients but 1 unscaled results; they must correspond one to one}}
  %u, %found = mp.unscale %a, %b by %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unscale_shape_mismatch(%a: tensor<4xf32>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op result #0 has shape of 'tensor<5xf32>' but its gradient is 'tensor<4xf32>'}}
  %u, %found = mp.unscale %a by %s : tensor<4xf32> -> tensor<5xf32>
  return
}

// -----

func.func @unscale_narrowing(%a: tensor<4xf32>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op result #0 has element type 'f16'; it must be the gradient's ('f32') or a wider f32/f64}}
  %u, %found = mp.unscale %a by %s : tensor<4xf32> -> tensor<4xf16>
  return
}

// -----

func.func @unscale_bf16_to_f16(%a: tensor<4xbf16>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op result #0 has element type 'f16'; it must be the gradient's ('bf16') or a wider f32/f64}}
  %u, %found = mp.unscale %a by %s : tensor<4xbf16> -> tensor<4xf16>
  return
}

// -----

func.func @unscale_integer_grad(%a: tensor<4xi32>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op operand #0 must be variadic of ranked tensor of floating-point values}}
  %u, %found = mp.unscale %a by %s : tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

func.func @scale_not_f32(%l: f32, %s: f16) {
  // expected-error @+1 {{'mp.scale_loss' op operand #1 must be 32-bit float}}
  %0 = "mp.scale_loss"(%l, %s) : (f32, f16) -> f32
  return
}

// -----

func.func @scale_result_type(%l: f32, %s: f32) {
  // expected-error @+1 {{'mp.scale_loss' op failed to verify that all of {loss, result} have same type}}
  %0 = "mp.scale_loss"(%l, %s) : (f32, f32) -> f16
  return
}

// -----

func.func @growth_factor(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op growth_factor must be finite and greater than 1, got 1}}
  %a, %b = mp.update_scale %s, %t, %f {growth_factor = 1.0 : f32} : i32
  return
}

// -----

func.func @backoff_factor(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op backoff_factor must lie in (0, 1), got 1.5}}
  %a, %b = mp.update_scale %s, %t, %f {backoff_factor = 1.5 : f32} : i32
  return
}

// -----

func.func @growth_interval(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op growth_interval must be at least 1, got 0}}
  %a, %b = mp.update_scale %s, %t, %f {growth_interval = 0 : i64} : i32
  return
}

// -----

func.func @growth_interval_overflow(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op growth_interval 4294967296 does not fit the i32 growth tracker}}
  %a, %b = mp.update_scale %s, %t, %f {growth_interval = 4294967296 : i64} : i32
  return
}

// -----

func.func @min_above_max(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op needs 0 < min_scale <= max_scale < inf, got min_scale = 8, max_scale = 4}}
  %a, %b = mp.update_scale %s, %t, %f {min_scale = 8.0 : f32, max_scale = 4.0 : f32} : i32
  return
}

// -----

func.func @min_zero(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op needs 0 < min_scale <= max_scale < inf, got min_scale = 0, max_scale = 1.67772e+07}}
  %a, %b = mp.update_scale %s, %t, %f {min_scale = 0.0 : f32} : i32
  return
}

// -----

func.func @tracker_type(%s: f32, %t: i16, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op operand #1 must be 32-bit signless integer or 64-bit signless integer}}
  %a, %b = mp.update_scale %s, %t, %f : i16
  return
}

// -----

func.func @tracker_result_type(%s: f32, %t: i32, %f: i1) {
  // expected-error @+1 {{'mp.update_scale' op failed to verify that all of {growth_tracker, new_growth_tracker} have same type}}
  %a, %b = "mp.update_scale"(%s, %t, %f) : (f32, i32, i1) -> (f32, i64)
  return
}

// -----

func.func @unscale_two_amax(%a: tensor<4xf32>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op result group starting at #2 requires 0 or 1 element, but found 2}}
  %u, %found, %m:2 = "mp.unscale"(%a, %s) <{resultSegmentSizes = array<i32: 1, 1, 2>}> : (tensor<4xf32>, f32) -> (tensor<4xf32>, i1, f32, f32)
  return
}

// -----

func.func @unscale_amax_f16(%a: tensor<4xf32>, %s: f32) {
  // expected-error @+1 {{'mp.unscale' op result #2 must be 32-bit float, but got 'f16'}}
  %u, %found, %m = "mp.unscale"(%a, %s) <{resultSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<4xf32>, f32) -> (tensor<4xf32>, i1, f16)
  return
}

// -----

func.func @adapt_margin(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op margin must be finite and at least 1, got 0.5}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 0.5 : f32, hysteresis = 2 : i64} : i32
  return
}

// -----

func.func @adapt_hysteresis(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op hysteresis must be at least 1, got 0}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 8.0 : f32, hysteresis = 0 : i64} : i32
  return
}

// -----

func.func @adapt_needs_margin(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op requires attribute 'margin'}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {hysteresis = 2 : i64} : i32
  return
}

// -----

func.func @adapt_backoff(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op backoff_factor must lie in (0, 1), got 1}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 8.0 : f32, hysteresis = 2 : i64, backoff_factor = 1.0 : f32} : i32
  return
}

// -----

func.func @adapt_growth_interval(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op growth_interval must be at least 1, got 0}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 8.0 : f32, hysteresis = 2 : i64, growth_interval = 0 : i64} : i32
  return
}

// -----

func.func @adapt_min_above_max(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op needs 0 < min_scale <= max_scale < inf, got min_scale = 8, max_scale = 4}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 8.0 : f32, hysteresis = 2 : i64, min_scale = 8.0 : f32, max_scale = 4.0 : f32} : i32
  return
}

// -----

func.func @adapt_limit(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op limit must be finite and positive, got inf}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 8.0 : f32, hysteresis = 2 : i64, limit = 0x7F800000 : f32} : i32
  return
}

// -----

func.func @adapt_tracker_overflow(%s: f32, %t: i32, %f: i1, %m: f32) {
  // expected-error @+1 {{'mp.adapt_scale' op growth_interval 2000 and hysteresis 4294967296 must fit the i32 growth tracker}}
  %a, %b = mp.adapt_scale %s, %t, %f, %m {margin = 8.0 : f32, hysteresis = 4294967296 : i64} : i32
  return
}

// -----

func.func @adapt_amax_type(%s: f32, %t: i32, %f: i1, %m: f16) {
  // expected-error @+1 {{'mp.adapt_scale' op operand #3 must be 32-bit float}}
  %a, %b = "mp.adapt_scale"(%s, %t, %f, %m) <{margin = 8.0 : f32, hysteresis = 2 : i64}> : (f32, i32, i1, f16) -> (f32, i32)
  return
}

// -----

func.func @observe_empty_id(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mp.observe' op needs a non-empty probe id}}
  %0 = mp.observe %x as "" : tensor<4xf32>
  return
}

// -----

func.func @observe_type_change(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mp.observe' op failed to verify that all of {input, output} have same type}}
  %0 = "mp.observe"(%x) {id = "p"} : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// expected-error @+1 {{compute type must be f16, bf16 or f32, got 'i8'}}
func.func @decision_type() attributes {d = #mp.decision<allow, i8>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::mp::PrecisionClass to be one of: allow, infer, clear, deny}}
// expected-error @+1 {{failed to parse MP_PrecisionDecisionAttr parameter 'precisionClass'}}
func.func @bad_class() attributes {d = #mp.decision<sometimes, f16>} {
  return
}

//===----------------------------------------------------------------------===//
// The contract attributes (discardable mp.* attributes)
//===----------------------------------------------------------------------===//

// -----

func.func @precision_string(%x: tensor<4xf32>, %e: tensor<4xf32>) {
  // expected-error @+1 {{'mp.precision' must be #mp.precision<f32>, #mp.precision<f16> or #mp.precision<bf16>, got "f16"}}
  %0 = linalg.exp {mp.precision = "f16"} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @precision_integer(%x: tensor<4xf32>, %e: tensor<4xf32>) {
  // expected-error @+1 {{'mp.precision' must be #mp.precision<f32>, #mp.precision<f16> or #mp.precision<bf16>, got 16 : i64}}
  %0 = linalg.exp {mp.precision = 16} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// expected-error @+2 {{expected ::mlir::mp::FloatPrecision to be one of: f32, f16, bf16}}
// expected-error @+1 {{failed to parse MP_PrecisionAttr parameter 'value'}}
func.func @precision_fp8() attributes {p = #mp.precision<fp8>} {
  return
}

// -----

// expected-error @+1 {{'mp.loss_scaling' must be #mp.loss_scaling<...>, got {mode = "dynamic"}}}
func.func @loss_scaling_dictionary() attributes {mp.loss_scaling = {mode = "dynamic"}} {
  return
}

// -----

// expected-error @+1 {{loss scaling needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, growth_interval >= 1 and clip_norm >= 0}}
func.func @loss_scaling_backoff() attributes {mp.loss_scaling = #mp.loss_scaling<mode = dynamic, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 2.0, growth_interval = 2000, clip_norm = 0.0>} {
  return
}

// -----

// expected-error @+1 {{adaptive loss scaling needs 1 <= margin < inf and hysteresis >= 1}}
func.func @loss_scaling_margin() attributes {mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, margin = 0.5, hysteresis = 2>} {
  return
}

// -----

// expected-error @+1 {{adaptive loss scaling needs 1 <= margin < inf and hysteresis >= 1}}
func.func @loss_scaling_hysteresis() attributes {mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, margin = 8.0, hysteresis = 0>} {
  return
}

// -----

// expected-error @+1 {{adaptive loss scaling needs growth_interval and hysteresis to fit the step's i32 growth tracker}}
func.func @loss_scaling_interval_i32() attributes {mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 4294967296, clip_norm = 0.0, margin = 8.0, hysteresis = 2>} {
  return
}

// -----

// expected-error @+1 {{adaptive loss scaling needs a margin and a hysteresis}}
func.func @loss_scaling_adaptive_no_margin() attributes {mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, hysteresis = 2>} {
  return
}

// -----

// expected-error @+1 {{margin and hysteresis are settings of adaptive loss scaling only, not of mode dynamic}}
func.func @loss_scaling_dynamic_margin() attributes {mp.loss_scaling = #mp.loss_scaling<mode = dynamic, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, margin = 8.0>} {
  return
}

// -----

// expected-error @+1 {{loss-scaling mode must be dynamic, adaptive, static or none (auto is resolved by --mp-loss-scaling)}}
func.func @loss_scaling_auto() attributes {mp.loss_scaling = #mp.loss_scaling<mode = auto, init_scale = 1.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 1, clip_norm = 0.0>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::mp::LossScalingMode to be one of: none, static, dynamic, auto, adaptive}}
// expected-error @+1 {{failed to parse MP_LossScalingAttr parameter 'mode'}}
func.func @loss_scaling_mode() attributes {mp.loss_scaling = #mp.loss_scaling<mode = sometimes, init_scale = 1.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 1, clip_norm = 0.0>} {
  return
}


// -----

// expected-error @+1 {{argument #0 'mp.param' must be a non-empty string (the parameter's name), got 3 : i32}}
func.func @param_integer(%w: tensor<1xf32> {mp.param = 3 : i32}) {
  return
}

// -----

// expected-error @+1 {{argument #0 'mp.param' must be a non-empty string (the parameter's name), got ""}}
func.func @param_empty(%w: tensor<1xf32> {mp.param = ""}) {
  return
}

// -----

// expected-error @+1 {{result #0 'mp.grad' must be a non-empty string (the parameter's name), got unit}}
func.func @grad_unit(%w: tensor<1xf32>) -> (tensor<1xf32> {mp.grad}) {
  return %w : tensor<1xf32>
}

// -----

// expected-error @+1 {{'mp.gradient_of' must be a symbol reference (@function), got "loss"}}
func.func @gradient_of_string() attributes {mp.gradient_of = "loss"} {
  return
}

// -----

// expected-error @+1 {{'mp.parallel_noalias' must be array<i64: ...> of non-negative argument positions, got array<i64: 2, -1>}}
func.func @noalias_negative() attributes {mp.parallel_noalias = array<i64: 2, -1>} {
  return
}

// -----

// expected-error @+1 {{'mp.loss' must be a unit, got 1 : i64}}
func.func @loss_value() -> f32 attributes {mp.loss = 1} {
  %0 = arith.constant 0.0 : f32
  return %0 : f32
}

// -----

// expected-error @+1 {{argument #1 'mp.update_of' must be a non-negative i64 (an argument index), got -1 : i64}}
func.func @update_of_negative(%p: memref<4xf32>, %next: memref<4xf32> {mp.update_of = -1 : i64}) {
  return
}

// -----

func.func @seed_on_argument(%x: f32 {mp.seed}) {
  // expected-error @-1 {{argument #0 'mp.seed' belongs on an op}}
  return
}

// -----

func.func @param_on_op(%x: tensor<4xf32>, %e: tensor<4xf32>) {
  // expected-error @+1 {{'mp.param' belongs on a function argument or result}}
  %0 = linalg.exp {mp.param = "w"} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @predict_on_op(%x: tensor<4xf32>, %e: tensor<4xf32>) {
  // expected-error @+1 {{'mp.predict' belongs on a function}}
  %0 = linalg.exp {mp.predict} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{has an unknown mp attribute 'mp.parameter'}}
func.func @misspelt(%w: tensor<1xf32>) attributes {mp.parameter = "w"} {
  return
}

// -----

func.func @quant_scale_rank(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mp.quant_scale' op needs a rank-0 scale without 'axis', got 'tensor<8xf32>'}}
  %s = mp.quant_scale %x : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @quant_scale_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mp.quant_scale' op axis 2 is out of range for 'tensor<4x8xf32>'}}
  %s = mp.quant_scale %x {axis = 2 : i64} : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @quant_scale_channels(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mp.quant_scale' op needs a 1-D scale of dimension 1's size 8, got 'tensor<4xf32>'}}
  %s = mp.quant_scale %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @quant_scale_observer_per_channel(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mp.quant_scale' op an observer is per tensor and needs a non-empty name}}
  %s = mp.quant_scale %x {axis = 1 : i64, observer = "w.input_amax"} : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @fake_quant_scale(%x: tensor<4x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'mp.fake_quant' op needs a 1-D scale of dimension 1's size 8, got 'tensor<4xf32>'}}
  %q = mp.fake_quant %x, %s {axis = 1 : i64} : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mp.dropout' op ratio must be in [0, 1), got 1}}
  %y = mp.dropout %x {ratio = 1.000000e+00 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @dropout_negative_stream(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mp.dropout' op stream must be non-negative, got -1}}
  %y = mp.dropout %x {ratio = 1.000000e-01 : f64, stream = -1 : i64} : tensor<4x8xf32>
  return
}
