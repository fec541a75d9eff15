// Driver for fake-quant-step.test: the loss and both gradients.
func.func private @printF32(f32)
func.func private @printNewline()
func.func private @printMemrefF32(tensor<*xf32>)
func.func @main() {
  %w = arith.constant dense<[-2.0, -0.5, 0.3, 1.0, 2.0]> : tensor<5xf32>
  %m = arith.constant dense<[[0.5, -1.0, 0.25], [1.0, 0.3, -0.5]]> : tensor<2x3xf32>
  // GRAD: %r:3 = func.call @loss_grad(%w, %m) : (tensor<5xf32>, tensor<2x3xf32>) -> (f32, tensor<5xf32>, tensor<2x3xf32>)
  // GRAD: func.call @printF32(%r#0) : (f32) -> ()
  // GRAD: func.call @printNewline() : () -> ()
  // GRAD: %gw = tensor.cast %r#1 : tensor<5xf32> to tensor<*xf32>
  // GRAD: func.call @printMemrefF32(%gw) : (tensor<*xf32>) -> ()
  // GRAD: %gm = tensor.cast %r#2 : tensor<2x3xf32> to tensor<*xf32>
  // GRAD: func.call @printMemrefF32(%gm) : (tensor<*xf32>) -> ()
  return
}
