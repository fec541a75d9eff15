// RUN: mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-fuse-elementwise))' | FileCheck %s

// Bias add then ReLU: one generic reading the product and the bias.
// CHECK-LABEL: func.func @bias_relu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @bias_relu(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %relu : tensor<4x8xf32>
}

// -----

// A gradient accumulated into its (zero) init, consumed by the transposed
// product of a weight gradient (a loop the producer lacks): upstream fuses
// and accumulates once per iteration of that loop. Not fused here.
// CHECK-LABEL: func.func @accumulating_producer
// CHECK: %[[GRAD:.*]] = linalg.generic
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.yield %{{.*}} : bf16
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[GRAD]] : tensor<4x3xbf16>, tensor<4x8xbf16>)
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map5 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map6 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map7 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @accumulating_producer(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %g: tensor<4x8xf32>, %x: tensor<4x3xbf16>) -> tensor<3x8xf32> {
  %cst = arith.constant 0.0 : f32
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x8xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %grad = linalg.generic {indexing_maps = [#map, #map1, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b, %g : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) outs(%f : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: bf16):
    %99 = arith.extf %out : bf16 to f32
    %100 = arith.addf %in, %in_22 : f32
    %101 = arith.cmpf oge, %100, %cst : f32
    %102 = arith.select %101, %in_23, %cst : f32
    %103 = arith.addf %99, %102 : f32
    %104 = arith.truncf %103 : f32 to bf16
    linalg.yield %104 : bf16
  } -> tensor<4x8xbf16>
  %e2 = tensor.empty() : tensor<3x8xf32>
  %f2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<3x8xf32>) -> tensor<3x8xf32>
  %dw = linalg.generic {indexing_maps = [#map7, #map6, #map5], iterator_types = ["reduction", "parallel", "parallel"]} ins(%x, %grad : tensor<4x3xbf16>, tensor<4x8xbf16>) outs(%f2 : tensor<3x8xf32>) {
  ^bb0(%in: bf16, %in_22: bf16, %out: f32):
    %99 = arith.extf %in_22 : bf16 to f32
    %100 = arith.extf %in : bf16 to f32
    %101 = arith.mulf %99, %100 : f32
    %102 = arith.addf %out, %101 : f32
    linalg.yield %102 : f32
  } -> tensor<3x8xf32>
  return %dw : tensor<3x8xf32>
}

// -----

// The consumer broadcasts the produced row over a loop the producer lacks:
// fusing would compute exp 16 times per element. Not fused.
// CHECK-LABEL: func.func @broadcast_consumer
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK-NOT: math.exp
// CHECK: arith.mulf
#v = affine_map<(d0) -> (d0)>
#bcast = affine_map<(d0, d1) -> (d1)>
#full = affine_map<(d0, d1) -> (d0, d1)>
func.func @broadcast_consumer(%x: tensor<8xf32>, %y: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %exp = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %prod = linalg.generic {indexing_maps = [#bcast, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %y : tensor<8xf32>, tensor<16x8xf32>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<16x8xf32>
  return %prod : tensor<16x8xf32>
}

// -----

// A producer with two users stays (fusing would compute it twice).
// CHECK-LABEL: func.func @two_users
// CHECK-COUNT-3: linalg.generic
#i = affine_map<(d0) -> (d0)>
func.func @two_users(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %exp = linalg.generic {indexing_maps = [#i, #i], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %neg = linalg.generic {indexing_maps = [#i, #i], iterator_types = ["parallel"]}
      ins(%exp : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %sq = linalg.generic {indexing_maps = [#i, #i], iterator_types = ["parallel"]}
      ins(%exp : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %neg, %sq : tensor<8xf32>, tensor<8xf32>
}
