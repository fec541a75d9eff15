// RUN: mp-opt %s --mp-autodiff | FileCheck %s

// The maximum a stable softmax subtracts gets no gradient: the softmax does
// not change with it. No tie count (cmpf oeq) is built, and the gradient of
// the exponentials' generic takes x only.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @softmax_grad
// CHECK-NOT: arith.cmpf oeq
// CHECK: return
func.func @softmax(%x: tensor<2x3xf32> {mp.param = "x"}, %t: tensor<2x3xf32>) -> tensor<f32> attributes {mp.loss} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<2xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%mi : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<2x3xf32>, tensor<2xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<2x3xf32>) outs(%si : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %P = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<2x3xf32>, tensor<2xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %zero_d = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<f32>
  %sf = linalg.fill ins(%zero_d : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%P, %t : tensor<2x3xf32>, tensor<2x3xf32>) outs(%sf : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m2 = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// A maximum used for anything else (here log-softmax subtracts it twice)
// is differentiated as before: its gradient goes to the tied elements.
// CHECK-LABEL: func.func @log_softmax_grad
// CHECK: arith.cmpf oeq
func.func @log_softmax(%x: tensor<2x3xf32> {mp.param = "x"}, %t: tensor<2x3xf32>) -> tensor<f32> attributes {mp.loss} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<2xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%mi : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<2x3xf32>, tensor<2xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<2x3xf32>) outs(%si : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %lp = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %s : tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %lg = math.log %c : f32
    %r = arith.subf %d, %lg : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %zero_d = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<f32>
  %sf = linalg.fill ins(%zero_d : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%lp, %t : tensor<2x3xf32>, tensor<2x3xf32>) outs(%sf : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m2 = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}
