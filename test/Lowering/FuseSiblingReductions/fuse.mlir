// RUN: mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-fuse-sibling-reductions))' | FileCheck %s
// RUN: not mp-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(mp-fuse-sibling-reductions{min-parallel=0}))' 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: mp-fuse-sibling-reductions: min-parallel must be positive, got 0

// A training step's tail: the gradient norm's partial sums of squares (per
// row and vector lane, as --mp-split-reductions{lanes=16} makes them)
// and the SGD-momentum update both read the gradient %g. They become one
// generic over the partial sums' loops, reading %g once; the update's
// operands are expanded alike, and its results, which the step stores into
// the session's buffers, are stored uncollapsed into expanded views of
// those buffers (made at the top, where empty-tensor elimination can use
// them).
// CHECK-LABEL: func.func @norm_and_update
// CHECK-SAME: (%[[G:[^:]*]]: tensor<64x256xf32>, %[[W:[^:]*]]: tensor<64x256xf32>, %[[M:[^:]*]]: tensor<64x256xf32>, %[[WOUT:[^:]*]]: memref<64x256xf32>, %[[MOUT:[^:]*]]: memref<64x256xf32>)
// CHECK-DAG: %[[MVIEW:.*]] = memref.expand_shape %[[MOUT]] {{\[\[}}0], [1, 2]] output_shape [64, 16, 16] : memref<64x256xf32> into memref<64x16x16xf32>
// CHECK-DAG: %[[WVIEW:.*]] = memref.expand_shape %[[WOUT]] {{\[\[}}0], [1, 2]] output_shape [64, 16, 16] : memref<64x256xf32> into memref<64x16x16xf32>
// CHECK: %[[GX:.*]] = tensor.expand_shape %[[G]]
// CHECK: %[[PARTIALS:.*]] = linalg.fill
// CHECK-DAG: %[[WX:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0], [1, 2]] output_shape [64, 16, 16]
// CHECK-DAG: %[[MX:.*]] = tensor.expand_shape %[[M]] {{\[\[}}0], [1, 2]] output_shape [64, 16, 16]
// CHECK-DAG: %[[E1:.*]] = tensor.empty() : tensor<64x16x16xf32>
// CHECK-DAG: %[[E2:.*]] = tensor.empty() : tensor<64x16x16xf32>
// CHECK: %[[F:.*]]:3 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-SAME: ins(%[[GX]], %[[WX]], %[[MX]] : tensor<64x16x16xf32>, tensor<64x16x16xf32>, tensor<64x16x16xf32>)
// CHECK-SAME: outs(%[[PARTIALS]], %[[E1]], %[[E2]] : tensor<64x16xf32>, tensor<64x16x16xf32>, tensor<64x16x16xf32>)
// CHECK-SAME: mp.precision = #mp.precision<f32>
// CHECK: ^bb0(%[[IG:[^:]*]]: f32, %[[IW:[^:]*]]: f32, %[[IM:[^:]*]]: f32, %[[OP:[^:]*]]: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[IG]], %[[IG]]
// CHECK-NEXT: %[[ACC:.*]] = arith.addf %[[OP]], %[[SQ]]
// CHECK-NEXT: %[[DECAY:.*]] = arith.mulf %[[IM]], %{{.*}}
// CHECK-NEXT: %[[MNEW:.*]] = arith.addf %[[DECAY]], %[[IG]]
// CHECK-NEXT: %[[STEP:.*]] = arith.mulf %[[MNEW]], %{{.*}}
// CHECK-NEXT: %[[WNEW:.*]] = arith.subf %[[IW]], %[[STEP]]
// CHECK-NEXT: linalg.yield %[[ACC]], %[[WNEW]], %[[MNEW]]
// CHECK: linalg.generic {{.*}} ins(%[[F]]#0 : tensor<64x16xf32>)
// CHECK-NOT: collapse_shape
// CHECK: bufferization.materialize_in_destination %[[F]]#1 in restrict writable %[[WVIEW]]
// CHECK: bufferization.materialize_in_destination %[[F]]#2 in restrict writable %[[MVIEW]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lanes = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @norm_and_update(%g: tensor<64x256xf32>, %w: tensor<64x256xf32>, %m: tensor<64x256xf32>, %wout: memref<64x256xf32>, %mout: memref<64x256xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.125 : f32
  %mu = arith.constant 0.5 : f32
  %gx = tensor.expand_shape %g [[0], [1, 2]] output_shape [64, 16, 16] : tensor<64x256xf32> into tensor<64x16x16xf32>
  %pe = tensor.empty() : tensor<64x16xf32>
  %p0 = linalg.fill ins(%zero : f32) outs(%pe : tensor<64x16xf32>) -> tensor<64x16xf32>
  %partials = linalg.generic {indexing_maps = [#id3, #lanes], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%gx : tensor<64x16x16xf32>) outs(%p0 : tensor<64x16xf32>) attrs = {mp.precision = #mp.precision<f32>} {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  %se = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%partials : tensor<64x16xf32>) outs(%s0 : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %we = tensor.empty() : tensor<64x256xf32>
  %me = tensor.empty() : tensor<64x256xf32>
  %new:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %g, %m : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>) outs(%we, %me : tensor<64x256xf32>, tensor<64x256xf32>) attrs = {mp.precision = #mp.precision<f32>} {
  ^bb0(%wi: f32, %gi: f32, %mi: f32, %o1: f32, %o2: f32):
    %decay = arith.mulf %mi, %mu : f32
    %mnew = arith.addf %decay, %gi : f32
    %step = arith.mulf %mnew, %lr : f32
    %wnew = arith.subf %wi, %step : f32
    linalg.yield %wnew, %mnew : f32, f32
  } -> (tensor<64x256xf32>, tensor<64x256xf32>)
  bufferization.materialize_in_destination %new#0 in restrict writable %wout : (tensor<64x256xf32>, memref<64x256xf32>) -> ()
  bufferization.materialize_in_destination %new#1 in restrict writable %mout : (tensor<64x256xf32>, memref<64x256xf32>) -> ()
  return %sum : tensor<f32>
}

// -----

// The elementwise generic comes first and its result is returned: the
// fused generic stands in its place (the reduction's operands are there
// already) and the result is collapsed back.
// CHECK-LABEL: func.func @sibling_first
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[F]]#1 {{\[\[}}0], [1, 2]] : tensor<64x16x16xf32> into tensor<64x256xf32>
// CHECK: return %[[F]]#0, %[[C]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lanes = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @sibling_first(%g: tensor<64x256xf32>, %p0: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x256xf32>) {
  %e = tensor.empty() : tensor<64x256xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<64x256xf32>
  %gx = tensor.expand_shape %g [[0], [1, 2]] output_shape [64, 16, 16] : tensor<64x256xf32> into tensor<64x16x16xf32>
  %partials = linalg.generic {indexing_maps = [#id3, #lanes], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%gx : tensor<64x16x16xf32>) outs(%p0 : tensor<64x16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  return %partials, %neg : tensor<64x16xf32>, tensor<64x256xf32>
}

// -----

// A reduction reading the tensor itself (column sums): no reshapes. The
// elementwise generic's input read through the reduction's operand is
// read once.
// CHECK-LABEL: func.func @same_shape
// CHECK-NOT: expand_shape
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK-SAME: ins(%arg0 : tensor<64x512xf32>)
// CHECK-NOT: collapse_shape
// CHECK: return %[[F]]#0, %[[F]]#1
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @same_shape(%x: tensor<64x512xf32>, %init: tensor<512xf32>) -> (tensor<512xf32>, tensor<64x512xf32>) {
  %sums = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<64x512xf32>) outs(%init : tensor<512xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %e = tensor.empty() : tensor<64x512xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %x : tensor<64x512xf32>, tensor<64x512xf32>) outs(%e : tensor<64x512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64x512xf32>
  return %sums, %twice : tensor<512xf32>, tensor<64x512xf32>
}

// -----

// Left alone: an update that needs the norm (clipping: the generic's body
// reads the total from above), an update with a broadcast operand (a map
// that is not an identity), and a reduction with fewer than 256 parallel
// iterations.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lanes = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @kept(%g: tensor<64x256xf32>, %b: tensor<64xf32>, %p0: tensor<64x16xf32>, %q0: tensor<8x16xf32>, %h: tensor<8x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<8x16xf32>, tensor<8x256xf32>) {
  %gx = tensor.expand_shape %g [[0], [1, 2]] output_shape [64, 16, 16] : tensor<64x256xf32> into tensor<64x16x16xf32>
  %partials = linalg.generic {indexing_maps = [#id3, #lanes], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%gx : tensor<64x16x16xf32>) outs(%p0 : tensor<64x16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  %c0 = arith.constant 0 : index
  %first = tensor.extract %partials[%c0, %c0] : tensor<64x16xf32>
  %e = tensor.empty() : tensor<64x256xf32>
  %clipped = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.divf %x, %first : f32
    linalg.yield %d : f32
  } -> tensor<64x256xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %b : tensor<64x256xf32>, tensor<64xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %hx = tensor.expand_shape %h [[0], [1, 2]] output_shape [8, 16, 16] : tensor<8x256xf32> into tensor<8x16x16xf32>
  %few = linalg.generic {indexing_maps = [#id3, #lanes], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%hx : tensor<8x16x16xf32>) outs(%q0 : tensor<8x16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %he = tensor.empty() : tensor<8x256xf32>
  %hneg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x256xf32>) outs(%he : tensor<8x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<8x256xf32>
  return %clipped, %biased, %few, %hneg : tensor<64x256xf32>, tensor<64x256xf32>, tensor<8x16xf32>, tensor<8x256xf32>
}
