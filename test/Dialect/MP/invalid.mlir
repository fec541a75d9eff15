// Every verifier error of the mp dialect.
// RUN: mp-opt %s --split-input-file --verify-diagnostics

func.func @unscale_no_grads(%s: f32) {
  // expected-error @+1 {{'mp.unscale' op needs at least one gradient}}
  %found = "mp.unscale"(%s) : (f32) -> i1
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
// expected-error @+1 {{failed to parse MP_PrecisionClassAttr parameter 'value'}}
func.func @bad_class() attributes {c = #mp.class<sometimes>} {
  return
}
