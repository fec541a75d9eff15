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
  // Central differences of the loss in w, one quantization step (h = the
  // scale, 0.01) each way, rounded to 1e-3: where w is inside the range
  // the fake-quantized value moves by 2h, so they equal the STE's c; where
  // w is clamped they are 0.
  // GRAD: %h = arith.constant 0.01 : f32
  // GRAD: %two_h = arith.constant 0.02 : f32
  // GRAD: %thousand = arith.constant 1000.0 : f32
  // GRAD: %c0 = arith.constant 0 : index
  // GRAD: %c1 = arith.constant 1 : index
  // GRAD: %c5 = arith.constant 5 : index
  // GRAD: %fd0 = tensor.empty() : tensor<5xf32>
  // GRAD: %fd = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %fd0) -> (tensor<5xf32>) {
  // GRAD:   %wi = tensor.extract %w[%i] : tensor<5xf32>
  // GRAD:   %up = arith.addf %wi, %h : f32
  // GRAD:   %down = arith.subf %wi, %h : f32
  // GRAD:   %wu = tensor.insert %up into %w[%i] : tensor<5xf32>
  // GRAD:   %wd = tensor.insert %down into %w[%i] : tensor<5xf32>
  // GRAD:   %lu = func.call @loss(%wu, %m) : (tensor<5xf32>, tensor<2x3xf32>) -> f32
  // GRAD:   %ld = func.call @loss(%wd, %m) : (tensor<5xf32>, tensor<2x3xf32>) -> f32
  // GRAD:   %dl = arith.subf %lu, %ld : f32
  // GRAD:   %q = arith.divf %dl, %two_h : f32
  // GRAD:   %qk = arith.mulf %q, %thousand : f32
  // GRAD:   %qr = math.roundeven %qk : f32
  // GRAD:   %qd = arith.divf %qr, %thousand : f32
  // GRAD:   %next = tensor.insert %qd into %acc[%i] : tensor<5xf32>
  // GRAD:   scf.yield %next : tensor<5xf32>
  // GRAD: }
  // GRAD: %fdu = tensor.cast %fd : tensor<5xf32> to tensor<*xf32>
  // GRAD: func.call @printMemrefF32(%fdu) : (tensor<*xf32>) -> ()
  return
}
