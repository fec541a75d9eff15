// RUN: mp-opt %s --split-input-file --mp-fake-quant | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// A matmul with a parameter weight: the activation through an observer
// named after the weight, the weight per output channel (B's n, dim 1).
// The same weight's second contraction gets the next observer name; a
// product of two activations and one with a non-zero accumulator are left
// alone (--mp-quantize does not rewrite them either).
// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>, %{{[^:]*}}: tensor<4x16xf32>, %[[W:[^:]*]]: tensor<8x16xf32> {mp.param = "w"}
// CHECK: %[[SX:.*]] = mp.quant_scale %[[X]] {observer = "w.input_amax"} : tensor<4x8xf32> -> tensor<f32>
// CHECK: %[[XQ:.*]] = mp.fake_quant %[[X]], %[[SX]] : tensor<4x8xf32>, tensor<f32>
// CHECK: %[[SW:.*]] = mp.quant_scale %[[W]] {axis = 1 : i64} : tensor<8x16xf32> -> tensor<16xf32>
// CHECK: %[[WQ:.*]] = mp.fake_quant %[[W]], %[[SW]] {axis = 1 : i64} : tensor<8x16xf32>, tensor<16xf32>
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[XQ]], %[[WQ]] : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: mp.quant_scale %{{.*}} {observer = "w.input_amax.2"}
// CHECK: linalg.matmul
// CHECK-NOT: mp.fake_quant
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x16xf32>)
// CHECK-NOT: mp.fake_quant
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: return
func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x16xf32>,
                %w: tensor<8x16xf32> {mp.param = "w"},
                %v: tensor<8x16xf32> {mp.param = "v"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h2 = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e16 = tensor.empty() : tensor<16x16xf32>
  %z16 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %hh = linalg.matmul ins(%y, %z16 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = linalg.fill ins(%one : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %hv = linalg.matmul ins(%x, %v : tensor<4x8xf32>, tensor<8x16xf32>) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
  %s0 = tensor.empty() : tensor<f32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id, #id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%h, %h2, %hh, %hv : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) outs(%sz : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %d: f32, %acc: f32):
    %ab = arith.addf %a, %b : f32
    %cd = arith.addf %c, %d : f32
    %t = arith.addf %ab, %cd : f32
    %r = arith.addf %acc, %t : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %sum[] : tensor<f32>
  return %l : f32
}

// -----

// nn.Linear's layout (B indexed (n, k)) and a convolution: the weight's
// output channel is dimension 0. @predict is not rewritten.
// CHECK-LABEL: func.func @loss
// CHECK: mp.quant_scale %{{.*}} {axis = 0 : i64} : tensor<16x8xf32> -> tensor<16xf32>
// CHECK: mp.quant_scale %{{.*}} {observer = "k.input_amax"} : tensor<1x2x6x6xf32> -> tensor<f32>
// CHECK: mp.quant_scale %{{.*}} {axis = 0 : i64} : tensor<3x2x3x3xf32> -> tensor<3xf32>
// CHECK-LABEL: func.func @predict
// CHECK-NOT: mp.fake_quant
func.func @loss(%x: tensor<4x8xf32>, %img: tensor<1x2x6x6xf32>,
                %w: tensor<16x8xf32> {mp.param = "w"},
                %k: tensor<3x2x3x3xf32> {mp.param = "k"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %ce = tensor.empty() : tensor<1x3x4x4xf32>
  %cz = linalg.fill ins(%zero : f32) outs(%ce : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%img, %k : tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) outs(%cz : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %i0 = arith.constant 0 : index
  %a = tensor.extract %h[%i0, %i0] : tensor<4x16xf32>
  %b = tensor.extract %c[%i0, %i0, %i0, %i0] : tensor<1x3x4x4xf32>
  %l = arith.addf %a, %b : f32
  return %l : f32
}

func.func @predict(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {mp.param = "w"}) -> tensor<4x16xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

// A batch_matmul with a batched weight (per-head projections): the weight
// per output column n (axis 2), one scale across its batch, as int8
// inference quantizes it; attention's product of two activations is left
// alone.
// CHECK-LABEL: func.func @loss
// CHECK: %[[SX:.*]] = mp.quant_scale %{{.*}} {observer = "heads.input_amax"} : tensor<2x5x3xf32> -> tensor<f32>
// CHECK: %[[SW:.*]] = mp.quant_scale %[[W:.*]] {axis = 2 : i64} : tensor<2x3x4xf32> -> tensor<4xf32>
// CHECK: %[[WQ:.*]] = mp.fake_quant %[[W]], %[[SW]] {axis = 2 : i64} : tensor<2x3x4xf32>, tensor<4xf32>
// CHECK: %[[P:.*]] = linalg.batch_matmul ins(%{{.*}}, %[[WQ]] : tensor<2x5x3xf32>, tensor<2x3x4xf32>)
// CHECK-NOT: mp.fake_quant
// CHECK: linalg.batch_matmul ins(%[[P]], %{{.*}} : tensor<2x5x4xf32>, tensor<2x4x5xf32>)
func.func @loss(%x: tensor<2x5x3xf32>, %k: tensor<2x4x5xf32>,
                %w: tensor<2x3x4xf32> {mp.param = "heads"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %p = linalg.batch_matmul ins(%x, %w : tensor<2x5x3xf32>, tensor<2x3x4xf32>) outs(%z : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %e2 = tensor.empty() : tensor<2x5x5xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %s = linalg.batch_matmul ins(%p, %k : tensor<2x5x4xf32>, tensor<2x4x5xf32>) outs(%z2 : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %s0 = tensor.empty() : tensor<f32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%s : tensor<2x5x5xf32>) outs(%sz : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %sum[] : tensor<f32>
  return %l : f32
}
