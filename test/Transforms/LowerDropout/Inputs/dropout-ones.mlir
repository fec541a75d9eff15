// A training step's dropout of ones (ratio 0.25, stream 3) at step 7,
// printed for scripts/philox_reference.py.
func.func @drop(%x: tensor<4x64xf32>, %step: i32 {mp.step}) -> tensor<4x64xf32> {
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64, stream = 3 : i64} : tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %ones = arith.constant dense<1.0> : tensor<4x64xf32>
  %step = arith.constant 7 : i32
  %y = func.call @drop(%ones, %step) : (tensor<4x64xf32>, i32) -> tensor<4x64xf32>
  %u = tensor.cast %y : tensor<4x64xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
