// Driver for optimizer-step.test: two steps from w = 1, printing w (and
// with SGD the gradient norm of each step); ACC: gradient accumulation.
func.func private @printF32(f32)
func.func private @printNewline()
func.func @show(%w: tensor<1xf32>) {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %w[%c0] : tensor<1xf32>
  func.call @printF32(%v) : (f32) -> ()
  func.call @printNewline() : () -> ()
  return
}
func.func @showScalar(%v: f32) {
  func.call @printF32(%v) : (f32) -> ()
  func.call @printNewline() : () -> ()
  return
}
func.func @main() {
  %w = arith.constant dense<1.0> : tensor<1xf32>
  %z = arith.constant dense<0.0> : tensor<1xf32>
  %step = arith.constant 0 : i32
  %scale = arith.constant 1.0 : f32
  %tracker = arith.constant 0 : i32
  // SGD: %a:8 = func.call @train_step(%w, %z, %step, %scale, %tracker) : (tensor<1xf32>, tensor<1xf32>, i32, f32, i32) -> (tensor<1xf32>, tensor<1xf32>, i32, f32, i32, f32, i1, f32)
  // SGD: func.call @show(%a#0) : (tensor<1xf32>) -> ()
  // SGD: func.call @showScalar(%a#7) : (f32) -> ()
  // SGD: %b:8 = func.call @train_step(%a#0, %a#1, %a#2, %a#3, %a#4) : (tensor<1xf32>, tensor<1xf32>, i32, f32, i32) -> (tensor<1xf32>, tensor<1xf32>, i32, f32, i32, f32, i1, f32)
  // SGD: func.call @show(%b#0) : (tensor<1xf32>) -> ()
  // SGD: func.call @showScalar(%b#7) : (f32) -> ()
  // ADAM: %a:9 = func.call @train_step(%w, %z, %z, %step, %scale, %tracker) : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, i32, f32, i32) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, i32, f32, i32, f32, i1, f32)
  // ADAM: func.call @show(%a#0) : (tensor<1xf32>) -> ()
  // ADAM: %b:9 = func.call @train_step(%a#0, %a#1, %a#2, %a#3, %a#4, %a#5) : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, i32, f32, i32) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, i32, f32, i32, f32, i1, f32)
  // ADAM: func.call @show(%b#0) : (tensor<1xf32>) -> ()
  // ACC: %acc = arith.constant dense<3.0> : tensor<1xf32>
  // ACC: %m:2 = func.call @train_step_accumulate(%w, %scale, %acc) : (tensor<1xf32>, f32, tensor<1xf32>) -> (tensor<1xf32>, f32)
  // ACC: func.call @show(%m#0) : (tensor<1xf32>) -> ()
  // ACC: %s:8 = func.call @train_step(%w, %z, %step, %scale, %tracker, %acc) : (tensor<1xf32>, tensor<1xf32>, i32, f32, i32, tensor<1xf32>) -> (tensor<1xf32>, tensor<1xf32>, i32, f32, i32, f32, i1, f32)
  // ACC: func.call @show(%s#0) : (tensor<1xf32>) -> ()
  // ACC: func.call @showScalar(%s#7) : (f32) -> ()
  return
}
