// --mp-optimizer checks the gradient function it is given; each of these
// crashed mp-opt before (docs/reliability.md). The attributes' own shapes
// (mp.param, mp.loss_scaling) are the dialect's to verify, when the input
// is parsed.
// RUN: mp-opt %s -split-input-file -verify-diagnostics --mp-optimizer

// mp.param that is not a string.
// expected-error @+1 {{argument #0 'mp.param' must be a non-empty string (the parameter's name), got 3 : i32}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = 3 : i32}) -> (f32, tensor<1xf32>) attributes {mp.gradient_of = @loss} {
  %one = arith.constant 1.0 : f32
  return %one, %w : f32, tensor<1xf32>
}

// -----

// Loss scaling recorded, but no scale argument.
// expected-error @+1 {{mp-optimizer: gradient function '@loss_grad' has loss scaling but no trailing f32 scale argument}}
func.func @loss_grad() -> f32 attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = dynamic, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0>} {
  %one = arith.constant 1.0 : f32
  return %one : f32
}

// -----

// A scalar parameter.
// expected-error @+1 {{mp-optimizer: gradient function '@loss_grad' argument #0 ('w'): parameters must be ranked float tensors here, got 'f32'}}
func.func @loss_grad(%w: f32 {mp.param = "w"}) -> (f32, f32) attributes {mp.gradient_of = @loss} {
  return %w, %w : f32, f32
}

// -----

// found_inf missing from the results of a scaled gradient function.
// expected-error @+1 {{mp-optimizer: gradient function '@loss_grad' returns 2 values; expected 3 (the loss, 1 gradient(s) and found_inf)}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = "w"}, %s: f32) -> (f32, tensor<1xf32>) attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = static, init_scale = 1024.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0>} {
  return %s, %w : f32, tensor<1xf32>
}

// -----

// Adaptive scaling recorded, but no amax result after found_inf.
// expected-error @+1 {{mp-optimizer: gradient function '@loss_grad' returns 3 values; expected 4 (the loss, 1 gradient(s), found_inf and amax)}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = "w"}, %s: f32) -> (f32, tensor<1xf32>, i1) attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 1024.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, margin = 8.0, hysteresis = 2>} {
  %f = arith.constant false
  return %s, %w, %f : f32, tensor<1xf32>, i1
}

// -----

// An amax that is not f32.
// expected-error @+1 {{mp-optimizer: gradient function '@loss_grad' has adaptive loss scaling but its last result (amax) is 'i1', not f32}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = "w"}, %s: f32) -> (f32, tensor<1xf32>, i1, i1) attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 1024.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, margin = 8.0, hysteresis = 2>} {
  %f = arith.constant false
  return %s, %w, %f, %f : f32, tensor<1xf32>, i1, i1
}

// -----

// found_inf and amax swapped.
// expected-error @+1 {{mp-optimizer: gradient function '@loss_grad' has loss scaling but its result #2 (found_inf) is 'f32', not i1}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = "w"}, %s: f32) -> (f32, tensor<1xf32>, f32, i1) attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = adaptive, init_scale = 1024.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000, clip_norm = 0.0, margin = 8.0, hysteresis = 2>} {
  %f = arith.constant false
  return %s, %w, %s, %f : f32, tensor<1xf32>, f32, i1
}

// -----

// Loss scaling as a hand-built dictionary.
// expected-error @+1 {{'mp.loss_scaling' must be #mp.loss_scaling<...>, got {mode = 1 : i64}}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = "w"}) -> (f32, tensor<1xf32>) attributes {mp.gradient_of = @loss, mp.loss_scaling = {mode = 1}} {
  %one = arith.constant 1.0 : f32
  return %one, %w : f32, tensor<1xf32>
}

// -----

// A growth interval that is not a positive integer.
// expected-error @+1 {{loss scaling needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, growth_interval >= 1 and clip_norm >= 0}}
func.func @loss_grad(%w: tensor<1xf32> {mp.param = "w"}, %s: f32) -> (f32, tensor<1xf32>, i1) attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = dynamic, init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 0, clip_norm = 0.0>} {
  %f = arith.constant false
  return %s, %w, %f : f32, tensor<1xf32>, i1
}

// -----

// f16 master weights.
// expected-error @+1 {{mp-optimizer: parameter 'w' and its gradient must be f32 (master weights), got 'tensor<1xf16>' and 'tensor<1xf16>'}}
func.func @loss_grad(%w: tensor<1xf16> {mp.param = "w"}) -> (f32, tensor<1xf16>) attributes {mp.gradient_of = @loss} {
  %one = arith.constant 1.0 : f32
  return %one, %w : f32, tensor<1xf16>
}
