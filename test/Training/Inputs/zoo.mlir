// One loss that exercises every scalar derivative rule and the reshape
// rules. (linalg.softmax is covered by Transforms/Autodiff/rules.mlir: the
// CPU pipeline these tests execute with cannot lower it.)
#v = affine_map<(d0) -> (d0)>
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @loss(%x: tensor<6xf32>, %w: tensor<6xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %t = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%x, %w : tensor<6xf32>, tensor<6xf32>) outs(%e : tensor<6xf32>) {
  ^bb0(%a: f32, %p: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    %half = arith.constant 0.5 : f32
    %k = arith.constant 1.5 : f32
    %pp = arith.mulf %p, %p : f32
    %pp1 = arith.addf %pp, %one : f32
    %pp2 = arith.addf %pp, %two : f32
    %t1 = math.tanh %p : f32
    %t2 = math.sqrt %pp1 : f32
    %t3 = math.rsqrt %pp2 : f32
    %t4 = math.erf %p : f32
    %t5 = math.absf %p : f32
    %t6 = math.powf %pp1, %k : f32
    %den = arith.addf %pp, %k : f32
    %t7 = arith.divf %a, %den : f32
    %pos = arith.cmpf ogt, %p, %zero : f32
    %p2 = arith.mulf %p, %two : f32
    %t8 = arith.select %pos, %p, %p2 : f32
    %t9 = arith.minimumf %p, %a : f32
    %t10 = math.fma %p, %a, %p : f32
    %hp = arith.mulf %p, %half : f32
    %t11 = math.exp %hp : f32
    %t12 = math.log %pp1 : f32
    %t13 = arith.negf %t12 : f32
    %s1 = arith.addf %t1, %t2 : f32
    %s2 = arith.addf %s1, %t3 : f32
    %s3 = arith.addf %s2, %t4 : f32
    %s4 = arith.subf %s3, %t5 : f32
    %s5 = arith.addf %s4, %t6 : f32
    %s6 = arith.addf %s5, %t7 : f32
    %s7 = arith.addf %s6, %t8 : f32
    %s8 = arith.addf %s7, %t9 : f32
    %s9 = arith.addf %s8, %t10 : f32
    %s10 = arith.addf %s9, %t11 : f32
    %s11 = arith.addf %s10, %t13 : f32
    // A power of an exact zero that depends on p (a centred value in a
    // variance): both derivatives are 0 there, not 0/0 or 0 * log 0.
    %z = arith.subf %p, %p : f32
    %t14 = math.powf %z, %two : f32
    %t15 = math.powf %z, %pp1 : f32
    %s12 = arith.maximumf %s11, %t11 : f32
    %s13 = arith.addf %s12, %t14 : f32
    %s14 = arith.addf %s13, %t15 : f32
    linalg.yield %s14 : f32
  } -> tensor<6xf32>
  %t2d = tensor.expand_shape %t [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  %es = tensor.empty() : tensor<2x3xf32>
  %sq = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%t2d : tensor<2x3xf32>) outs(%es : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %flat = tensor.collapse_shape %sq [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#v, #v, #v, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%flat, %t, %x : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%s: f32, %a: f32, %b: f32, %acc: f32):
    %sb = arith.mulf %s, %b : f32
    %q = arith.addf %sb, %a : f32
    %r2 = arith.addf %acc, %q : f32
    linalg.yield %r2 : f32
  } -> tensor<f32>
  %l = tensor.extract %r[] : tensor<f32>
  return %l : f32
}
