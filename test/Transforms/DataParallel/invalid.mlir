// RUN: mp-opt %s --split-input-file --verify-diagnostics --mp-data-parallel="ranks=2"
// RUN: not mp-opt %s --split-input-file --mp-autodiff --mp-data-parallel="ranks=0" 2>&1 | FileCheck %s --check-prefix=RANKS

// RANKS: mp-data-parallel: ranks must be at least 1, got 0

// expected-error @+1 {{mp-data-parallel: no gradient function (marked 'mp.gradient_of'); run --mp-autodiff first}}
module {
  func.func @loss(%w: tensor<2xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
    %c0 = arith.constant 0 : index
    %v = tensor.extract %w[%c0] : tensor<2xf32>
    return %v : f32
  }
}

// -----

// A gradient that is not f32 cannot join the f32 buffer.
module {
  func.func private @loss(tensor<2xf16>) -> f32
  // expected-error @+1 {{mp-data-parallel: gradient result 1 is 'tensor<2xf16>'; all-reduced gradients must be statically shaped f32 tensors}}
  func.func @loss_grad(%w: tensor<2xf16> {mp.param = "w"}) -> (f32, tensor<2xf16> {mp.grad = "w"}) attributes {mp.gradient_of = @loss} {
    %z = arith.constant 0.0 : f32
    return %z, %w : f32, tensor<2xf16>
  }
}
