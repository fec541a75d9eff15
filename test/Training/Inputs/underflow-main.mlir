// Driver for underflow.test: x and W from a deterministic pattern; prints
// dL/dW. @loss_grad takes a trailing scale argument when SCALED is set
// (the RUN lines select one of the two calls with sed).
func.func private @printMemrefF32(tensor<*xf32>)
func.func @pattern(%seed: f32) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<8x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c4 = arith.constant 4 : index
    %m = arith.muli %i, %c4 : index
    %lin = arith.addi %m, %j : index
    %ii = arith.index_cast %lin : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %k = arith.constant 0.9 : f32
    %p = arith.mulf %f, %k : f32
    %q = arith.addf %p, %seed : f32
    %s = math.sin %q : f32
    %h = arith.constant 0.5 : f32
    %v = arith.mulf %s, %h : f32
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}
func.func @main() {
  %s1 = arith.constant 0.3 : f32
  %s2 = arith.constant 1.7 : f32
  %xt = func.call @pattern(%s1) : (f32) -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %x = linalg.transpose ins(%xt : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]
  %w = func.call @pattern(%s2) : (f32) -> tensor<8x4xf32>
  %scale = arith.constant 65536.0 : f32
  // UNSCALED: %l, %g = func.call @loss_grad(%x, %w) : (tensor<4x8xf32>, tensor<8x4xf32>) -> (f32, tensor<8x4xf32>)
  // SCALED: %l, %g, %inf = func.call @loss_grad(%x, %w, %scale) : (tensor<4x8xf32>, tensor<8x4xf32>, f32) -> (f32, tensor<8x4xf32>, i1)
  %u = tensor.cast %g : tensor<8x4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
