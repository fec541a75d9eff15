// Every diagnostic of --mp-autodiff.
// RUN: mp-opt %s --mp-autodiff --split-input-file --verify-diagnostics

// expected-error @+1 {{'mp.loss' function must return one f32 scalar or tensor<f32>, got 'tensor<4xf32>'}}
func.func @not_scalar(%w: tensor<4xf32> {mp.param = "w"}) -> tensor<4xf32> attributes {mp.loss} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'mp.loss' function has no 'mp.param' arguments to differentiate}}
func.func @no_params(%x: f32) -> f32 attributes {mp.loss} {
  return %x : f32
}

// -----

// The dialect refuses a parameter name that is not a string.
// expected-error @+1 {{argument #0 'mp.param' must be a non-empty string (the parameter's name), got 3 : i64}}
func.func @bad_param(%w: f32 {mp.param = 3}) -> f32 attributes {mp.loss} {
  return %w : f32
}

// -----

// expected-error @+1 {{argument #0: 'mp.param' needs a float tensor or scalar, got 'i32'}}
func.func @int_param(%w: i32 {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %f = arith.sitofp %w : i32 to f32
  return %f : f32
}

// -----

// expected-error @+1 {{cannot create '@taken_grad': the symbol already exists}}
func.func @taken(%w: f32 {mp.param = "w"}) -> f32 attributes {mp.loss} {
  return %w : f32
}
func.func @taken_grad() {
  return
}

// -----

func.func @no_rule(%w: f32 {mp.param = "w"}) -> f32 attributes {mp.loss} {
  // expected-error @+1 {{cannot differentiate 'math.cos': no derivative rule}}
  %c = math.cos %w : f32
  return %c : f32
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @no_body_rule(%w: tensor<4xf32> {mp.param = "w"}) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{cannot differentiate 'linalg.generic': no derivative for 'math.sin' in its body}}
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%w : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.sin %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %t = linalg.generic {indexing_maps = [#id, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%s : tensor<4xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %t : tensor<f32>
}

// -----

#row = affine_map<(d0, d1) -> (d0)>
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @scaled_gather(%table: tensor<5x3xf32> {mp.param = "table"}) -> f32 attributes {mp.loss} {
  %c0 = arith.constant 0 : index
  %ids = arith.constant dense<[0, 2, 2, 4]> : tensor<4xi32>
  %e = tensor.empty() : tensor<4x3xf32>
  // expected-error @+1 {{cannot differentiate 'linalg.generic': its body reads a tensor that depends on a parameter other than by yielding one tensor.extract of it (a gather)}}
  %g = linalg.generic {indexing_maps = [#row, #m], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<5x3xf32>
    %two = arith.mulf %v, %v : f32
    linalg.yield %two : f32
  } -> tensor<4x3xf32>
  %l = tensor.extract %g[%c0, %c0] : tensor<4x3xf32>
  return %l : f32
}

// -----

func.func @captured(%x: tensor<4xf32>, %w: f32 {mp.param = "w"}) -> tensor<f32> attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{cannot differentiate 'linalg.generic': its body uses a value that depends on a parameter without taking it as an operand}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %w : f32
    %q = arith.addf %acc, %m : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @pad_active_value(%w: tensor<2xf32> {mp.param = "w"}, %v: f32 {mp.param = "v"}) -> f32 attributes {mp.loss} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{cannot differentiate 'tensor.pad': needs static shapes and pads and a padding value that does not depend on a parameter}}
  %p = tensor.pad %w low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %v : f32
  } : tensor<2xf32> to tensor<4xf32>
  %l = tensor.extract %p[%c0] : tensor<4xf32>
  return %l : f32
}
