// Every classification rule of the precision analysis, one function each.
// RUN: mp-opt %s --mp-analyze-precision --split-input-file --verify-diagnostics | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// Contractions are allow: low inputs, f32 accumulation.
// CHECK-LABEL: func.func @contractions
func.func @contractions(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bt: tensor<4x16xf32>,
                        %ba: tensor<2x8x16xf32>, %bb: tensor<2x16x4xf32>,
                        %img: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>,
                        %acc: tensor<8x4xf32>, %bacc: tensor<2x8x4xf32>, %cacc: tensor<1x4x6x6xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<1x4x6x6xf32>, tensor<8x4xf32>) {
  // CHECK: linalg.matmul {mp.decision = #mp.decision<allow, f16>}
  %0 = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  // Transposed B (indexing maps on linalg.matmul).
  // CHECK: linalg.matmul indexing_maps = {{.*}} {mp.decision = #mp.decision<allow, f16>}
  %1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %bt : tensor<8x16xf32>, tensor<4x16xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: linalg.batch_matmul {mp.decision = #mp.decision<allow, f16>}
  %2 = linalg.batch_matmul ins(%ba, %bb : tensor<2x8x16xf32>, tensor<2x16x4xf32>) outs(%bacc : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // CHECK: linalg.conv_2d_nchw_fchw {mp.decision = #mp.decision<allow, f16>
  %3 = linalg.conv_2d_nchw_fchw ins(%img, %k : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%cacc : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  // A multiply-add reduction written as linalg.generic is found by structure.
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<allow, f16>
  %4 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %z, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %0, %1, %2, %3, %4 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<1x4x6x6xf32>, tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Infer ops between two contractions run low; the min-cut puts the single
// boundary where it converts fewest bytes.
// CHECK-LABEL: func.func @infer_between_contractions
func.func @infer_between_contractions(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>,
    %bias: tensor<32xf32>, %w2: tensor<32x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %c = arith.constant 0.7978845608 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  // CHECK: linalg.fill {mp.decision = #mp.decision<clear, f32>}
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  // Bias add.
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f16>
  %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %bias : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  // Relu.
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  // Gelu, tanh approximation.
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f16>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = arith.mulf %p, %c : f32
    %th = math.tanh %t : f32
    %u = arith.addf %th, %one : f32
    %v = arith.mulf %u, %half : f32
    %w = arith.mulf %v, %p : f32
    linalg.yield %w : f32
  } -> tensor<8x32xf32>
  // Sigmoid: exp inside 1 / (1 + exp(-x)) is safe.
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f16>
  %sg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %n = arith.negf %p : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %one : f32
    %q = arith.divf %one, %d : f32
    linalg.yield %q : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%sg, %w2 : tensor<8x32xf32>, tensor<32x4xf32>) outs(%acc2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// After the last contraction, an infer op feeding an f32 result stays f32:
// running it low would need two conversions for one op.
// CHECK-LABEL: func.func @infer_after_contraction
func.func @infer_after_contraction(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %bias: tensor<4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f32>
  %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %bias : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %b : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Sensitive ops are deny; so are sum reductions and division by a reduction.
// CHECK-LABEL: func.func @deny
func.func @deny(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %er = tensor.empty() : tensor<8xf32>
  // CHECK: linalg.exp {mp.decision = #mp.decision<deny, f32>}
  %0 = linalg.exp ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<deny, f32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = math.rsqrt %p : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<deny, f32>
  %2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<8x16xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%p: f32, %a: f32):
    %s = arith.addf %p, %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<deny, f32>
  %3 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %2 : tensor<8x16xf32>, tensor<8xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %d = arith.divf %p, %s : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  // CHECK: linalg.softmax {mp.decision = #mp.decision<deny, f32>}
  %4 = linalg.softmax dimension(1) ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: linalg.reduce {{.*}}mp.decision = #mp.decision<deny, f32>
  %5 = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %0, %1, %2, %3, %4, %5 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>
}

// -----

// Data movement is clear.
// CHECK-LABEL: func.func @clear
func.func @clear(%x: tensor<2x4x4xf32>, %t: tensor<4x8xf32>, %img: tensor<1x2x4x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x8xf32>, tensor<6x8xf32>, tensor<1x2x2x2xf32>, tensor<4x8xi1>) {
  %zero = arith.constant 0.0 : f32
  // CHECK: tensor.collapse_shape {{.*}}mp.decision = #mp.decision<clear, f32>
  %0 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x4xf32> into tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  // CHECK: linalg.transpose {{.*}}mp.decision = #mp.decision<clear, f32>
  %1 = linalg.transpose ins(%t : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
  // CHECK: tensor.extract_slice {{.*}}mp.decision = #mp.decision<clear, f32>
  %2 = tensor.extract_slice %t[0, 0] [2, 4] [1, 1] : tensor<4x8xf32> to tensor<2x4xf32>
  // CHECK: tensor.concat {{.*}}mp.decision = #mp.decision<clear, f32>
  %3 = tensor.concat dim(0) %t, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // CHECK: tensor.pad
  // CHECK: mp.decision = #mp.decision<clear, f32>
  %4 = tensor.pad %t low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %pe = tensor.empty() : tensor<1x2x2x2xf32>
  %pi = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  // CHECK: linalg.pooling_nchw_max {{.*}}mp.decision = #mp.decision<clear, f32>
  %5 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%img, %win : tensor<1x2x4x4xf32>, tensor<2x2xf32>) outs(%pi : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  // CHECK: arith.cmpf olt, {{.*}}mp.decision = #mp.decision<clear, f32>
  %6 = arith.cmpf olt, %t, %t : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x8xf32>, tensor<6x8xf32>, tensor<1x2x2x2xf32>, tensor<4x8xi1>
}

// -----

// An op the analysis does not know stays f32, with a warning naming it.
// CHECK-LABEL: func.func @unknown
func.func @unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-warning @+1 {{op 'tensor.bitcast' is not understood by the precision analysis; kept in f32}}
  %0 = tensor.bitcast %x : tensor<4xf32> to tensor<4xf32>
  // CHECK: tensor.bitcast {{.*}}mp.decision = #mp.decision<deny, f32>
  // Calls pass f32, without a warning.
  // CHECK: call @opaque{{.*}}mp.decision = #mp.decision<deny, f32>
  %1 = func.call @opaque(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @opaque(tensor<4xf32>) -> tensor<4xf32>

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// More infer ops between two contractions: broadcast, select, negation and
// batch-norm in inference form (per-channel scale and shift).
// CHECK-LABEL: func.func @more_infer
func.func @more_infer(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %scale: tensor<32xf32>,
    %shift: tensor<32xf32>, %mask: tensor<8x32xi1>, %w2: tensor<32x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  // CHECK: linalg.broadcast {{.*}}mp.decision = #mp.decision<infer, f16>
  %sb = linalg.broadcast ins(%scale : tensor<32xf32>) outs(%e : tensor<8x32xf32>) dimensions = [0]
  // Batch-norm, inference form.
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f16>
  %bn = linalg.generic {indexing_maps = [#id, #id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %sb, %shift : tensor<8x32xf32>, tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %s: f32, %t: f32, %o: f32):
    %m = arith.mulf %p, %s : f32
    %a = arith.addf %m, %t : f32
    linalg.yield %a : f32
  } -> tensor<8x32xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<infer, f16>
  %sel = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %bn : tensor<8x32xi1>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%c: i1, %p: f32, %o: f32):
    %n = arith.negf %p : f32
    %r = arith.select %c, %p, %n : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%sel, %w2 : tensor<8x32xf32>, tensor<32x4xf32>) outs(%acc2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// log, pow and log-softmax written out (max, sub, exp, sum, log, sub) are
// deny; gather is clear.
// CHECK-LABEL: func.func @more_deny
func.func @more_deny(%x: tensor<4x8xf32>, %idx: tensor<2x1xindex>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<deny, f32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.powf %a, %two : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<deny, f32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %ex = math.exp %a : f32
    %r = arith.addf %ex, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  // CHECK: linalg.generic {{.*}}mp.decision = #mp.decision<deny, f32>
  %ls = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %l = math.log %s : f32
    %r = arith.subf %a, %l : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  // CHECK: tensor.gather {{.*}}mp.decision = #mp.decision<clear, f32>
  %g = tensor.gather %x[%idx] gather_dims([0]) : (tensor<4x8xf32>, tensor<2x1xindex>) -> tensor<2x8xf32>
  return %p, %ls, %g : tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>
}
