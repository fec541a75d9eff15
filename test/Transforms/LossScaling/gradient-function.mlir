// --mp-loss-scaling checks the gradient function it is given; each of these
// crashed mp-opt before (docs/reliability.md).
// RUN: mp-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect --mp-loss-scaling

// A scalar parameter: autodiff differentiates it, but loss scaling (mp.unscale)
// needs tensors.
// expected-error @+1 {{mp-loss-scaling: gradient function '@loss_grad' argument #0 ('w'): parameters must be ranked float tensors here, got 'f32' (a scalar parameter can be a tensor<f32>)}}
func.func @loss_grad(%w: f32 {mp.param = "w"}) -> (f32, f32 {mp.grad = "w"}) attributes {mp.gradient_of = @loss} {
  %one = arith.constant {mp.seed} 1.0 : f32
  return %one, %one : f32, f32
}

// -----

// A declaration.
// expected-error @+1 {{mp-loss-scaling: gradient function '@loss_grad' has no body}}
func.func private @loss_grad(%w: tensor<4xf32> {mp.param = "w"}) -> (f32, tensor<4xf32>) attributes {mp.gradient_of = @loss}

// -----

// No results at all.
// expected-error @+1 {{mp-loss-scaling: gradient function '@loss_grad' returns 0 values; expected 2 (the loss, 1 gradient(s))}}
func.func @loss_grad(%w: tensor<4xf32> {mp.param = "w"}) attributes {mp.gradient_of = @loss} {
  return
}

// -----

// A gradient of the wrong shape.
// expected-error @+1 {{result #1 must be the gradient of parameter 'w' (a float tensor of shape 'tensor<4xf32>'), got 'tensor<2xf32>'}}
func.func @loss_grad(%w: tensor<4xf32> {mp.param = "w"}, %g: tensor<2xf32>) -> (f32, tensor<2xf32>) attributes {mp.gradient_of = @loss} {
  %one = arith.constant {mp.seed} 1.0 : f32
  return %one, %g : f32, tensor<2xf32>
}

// -----

// Several blocks.
// expected-error @+1 {{mp-loss-scaling: gradient function '@loss_grad' has 2 blocks; expected one, as --mp-autodiff builds}}
func.func @loss_grad(%w: tensor<4xf32> {mp.param = "w"}) -> (f32, tensor<4xf32>) attributes {mp.gradient_of = @loss} {
  %one = arith.constant {mp.seed} 1.0 : f32
  cf.br ^next
^next:
  return %one, %w : f32, tensor<4xf32>
}

// -----

// The seed mark on an op without results.
func.func @loss_grad(%w: tensor<4xf32> {mp.param = "w"}) -> (f32, tensor<4xf32>) attributes {mp.gradient_of = @loss} {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{mp-loss-scaling: the backward seed must have one float result}}
  "test.sink"(%one) {mp.seed} : (f32) -> ()
  return %one, %w : f32, tensor<4xf32>
}

// -----

// No seed: the gradients could not be scaled.
// expected-error @+1 {{mp-loss-scaling: expected one op marked 'mp.seed' (the backward seed) in the gradient function, found 0}}
func.func @loss_grad(%w: tensor<4xf32> {mp.param = "w"}) -> (f32, tensor<4xf32>) attributes {mp.gradient_of = @loss} {
  %one = arith.constant 1.0 : f32
  return %one, %w : f32, tensor<4xf32>
}
