// Input for bad-input.test: a syntax error on line 4.
func.func @f(%x: f32) -> f32 {
  %0 = arith.addf %x, %x : f32
  %1 = arith.mulf %0, : f32
  return %1 : f32
}
