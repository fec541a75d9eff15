// Input for bad-input.test: an op of an unknown dialect on line 3.
func.func @f(%x: f32) -> f32 {
  %0 = nosuch.op %x : f32
  return %0 : f32
}
