// Input for bad-input.test: an op that fails its verifier on line 4.
func.func @f(%s: f32, %t: i32, %inf: i1) -> (f32, i32) {
  %c = arith.constant 0 : i32
  %a, %b = mp.update_scale %s, %t, %inf {backoff_factor = 2.0 : f32} : i32
  return %a, %b : f32, i32
}
