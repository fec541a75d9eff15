// RUN: mp-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(func.func(mp-in-place-updates))" | FileCheck %s

// The optimizer's update as a session entry has it on buffers: the weights
// are read by the forward product, then p' = p - lr * g element by element.
// Nothing reads p after p' is first written: marked.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: attributes {mp.in_place_updates}
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @sgd(%x: memref<4x8xf32>, %p: memref<8x8xf32>, %g: memref<8x8xf32>,
               %y: memref<4x8xf32>, %next: memref<8x8xf32> {mp.update_of = 1 : i64}) {
  %lr = arith.constant 0.05 : f32
  linalg.matmul ins(%x, %p : memref<4x8xf32>, memref<8x8xf32>) outs(%y : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %g : memref<8x8xf32>, memref<8x8xf32>) outs(%next : memref<8x8xf32>) {
  ^bb0(%pv: f32, %gv: f32, %out: f32):
    %step = arith.mulf %gv, %lr : f32
    %new = arith.subf %pv, %step : f32
    linalg.yield %new : f32
  }
  return
}

// -----

// Not marked: p is read (by a later product) after p' is written.
// CHECK-LABEL: func.func @read_after
// CHECK-NOT: mp.in_place_updates
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @read_after(%x: memref<4x8xf32>, %p: memref<8x8xf32>, %g: memref<8x8xf32>,
                      %y: memref<4x8xf32>, %next: memref<8x8xf32> {mp.update_of = 1 : i64}) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %g : memref<8x8xf32>, memref<8x8xf32>) outs(%next : memref<8x8xf32>) {
  ^bb0(%pv: f32, %gv: f32, %out: f32):
    %new = arith.subf %pv, %gv : f32
    linalg.yield %new : f32
  }
  linalg.matmul ins(%x, %p : memref<4x8xf32>, memref<8x8xf32>) outs(%y : memref<4x8xf32>)
  return
}

// -----

// Not marked: the writer reads p transposed, another element than the one
// it writes.
// CHECK-LABEL: func.func @other_element
// CHECK-NOT: mp.in_place_updates
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @other_element(%p: memref<8x8xf32>, %next: memref<8x8xf32> {mp.update_of = 0 : i64}) {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<8x8xf32>) outs(%next : memref<8x8xf32>) {
  ^bb0(%pv: f32, %out: f32):
    linalg.yield %pv : f32
  }
  return
}

// -----

// Not marked: p' is read (through a view) before it is written.
// CHECK-LABEL: func.func @next_read_first
// CHECK-NOT: mp.in_place_updates
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @next_read_first(%p: memref<8x8xf32>, %next: memref<8x8xf32> {mp.update_of = 0 : i64},
                           %out: memref<64xf32>) {
  %flat = memref.collapse_shape %next [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  memref.copy %flat, %out : memref<64xf32> to memref<64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<8x8xf32>) outs(%next : memref<8x8xf32>) {
  ^bb0(%pv: f32, %o: f32):
    linalg.yield %pv : f32
  }
  return
}

// -----

// Not marked: a call takes p after p' is written (it might read it), and
// momentum m' is written before a read of m in another op.
// CHECK-LABEL: func.func @call_after
// CHECK-NOT: mp.in_place_updates
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @observe(memref<8x8xf32>)
func.func @call_after(%p: memref<8x8xf32>, %next: memref<8x8xf32> {mp.update_of = 0 : i64}) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<8x8xf32>) outs(%next : memref<8x8xf32>) {
  ^bb0(%pv: f32, %o: f32):
    linalg.yield %pv : f32
  }
  call @observe(%p) : (memref<8x8xf32>) -> ()
  return
}

// -----

// Momentum: m' = 0.9 m + g and p' = p - lr m' in one generic with two
// results, each read at the element written: marked. Both pairs are checked.
// CHECK-LABEL: func.func @momentum
// CHECK-SAME: attributes {mp.in_place_updates}
#id = affine_map<(d0) -> (d0)>
func.func @momentum(%p: memref<16xf32>, %m: memref<16xf32>, %g: memref<16xf32>,
                    %np: memref<16xf32> {mp.update_of = 0 : i64},
                    %nm: memref<16xf32> {mp.update_of = 1 : i64}) {
  %mu = arith.constant 0.9 : f32
  %lr = arith.constant 0.05 : f32
  linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %m, %g : memref<16xf32>, memref<16xf32>, memref<16xf32>)
      outs(%np, %nm : memref<16xf32>, memref<16xf32>) {
  ^bb0(%pv: f32, %mv: f32, %gv: f32, %o1: f32, %o2: f32):
    %scaled = arith.mulf %mv, %mu : f32
    %newm = arith.addf %scaled, %gv : f32
    %step = arith.mulf %newm, %lr : f32
    %newp = arith.subf %pv, %step : f32
    linalg.yield %newp, %newm : f32, f32
  }
  return
}

// -----

// A second op reading the old momentum after the new one is written: the
// momentum pair may not share, so the function is not marked.
// CHECK-LABEL: func.func @momentum_split
// CHECK-NOT: mp.in_place_updates
#id = affine_map<(d0) -> (d0)>
func.func @momentum_split(%p: memref<16xf32>, %m: memref<16xf32>, %g: memref<16xf32>,
                          %np: memref<16xf32> {mp.update_of = 0 : i64},
                          %nm: memref<16xf32> {mp.update_of = 1 : i64}) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %g : memref<16xf32>, memref<16xf32>) outs(%nm : memref<16xf32>) {
  ^bb0(%mv: f32, %gv: f32, %o: f32):
    %newm = arith.addf %mv, %gv : f32
    linalg.yield %newm : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %m : memref<16xf32>, memref<16xf32>) outs(%np : memref<16xf32>) {
  ^bb0(%pv: f32, %mv: f32, %o: f32):
    %newp = arith.subf %pv, %mv : f32
    linalg.yield %newp : f32
  }
  return
}

// -----

// An mp.update_of that names no buffer of the same type is an error.
// expected-error @below {{mp.update_of on argument #1 names argument #0, which is not a buffer of the same type}}
func.func @bad_pair(%p: memref<8xf32>, %next: memref<4xf32> {mp.update_of = 0 : i64}) {
  return
}

// -----

// The update fused with the gradient norm's partial sums
// (--mp-fuse-sibling-reductions): a generic with a reduction loop over
// views of p and p' expanded alike. Each iteration still writes an element
// of p' of its own (the map is a permutation) after reading that element of
// p: marked.
// CHECK-LABEL: func.func @fused_with_norm
// CHECK-SAME: attributes {mp.in_place_updates}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lanes = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @fused_with_norm(%p: memref<8x32xf32>, %g: memref<8x32xf32>, %sums: memref<8x16xf32>,
                           %next: memref<8x32xf32> {mp.update_of = 0 : i64}) {
  %nextx = memref.expand_shape %next [[0], [1, 2]] output_shape [8, 2, 16] : memref<8x32xf32> into memref<8x2x16xf32>
  %px = memref.expand_shape %p [[0], [1, 2]] output_shape [8, 2, 16] : memref<8x32xf32> into memref<8x2x16xf32>
  %gx = memref.expand_shape %g [[0], [1, 2]] output_shape [8, 2, 16] : memref<8x32xf32> into memref<8x2x16xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #lanes, #id3], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%gx, %px : memref<8x2x16xf32>, memref<8x2x16xf32>) outs(%sums, %nextx : memref<8x16xf32>, memref<8x2x16xf32>) {
  ^bb0(%gv: f32, %pv: f32, %acc: f32, %out: f32):
    %sq = arith.mulf %gv, %gv : f32
    %s = arith.addf %acc, %sq : f32
    %new = arith.subf %pv, %gv : f32
    linalg.yield %s, %new : f32, f32
  }
  return
}

// -----

// Not marked: p and p' are expanded differently, so the element read is
// not the one written.
// CHECK-LABEL: func.func @reshaped_unlike
// CHECK-NOT: mp.in_place_updates
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @reshaped_unlike(%p: memref<8x32xf32>, %next: memref<8x32xf32> {mp.update_of = 0 : i64}) {
  %nextx = memref.expand_shape %next [[0], [1, 2]] output_shape [8, 2, 16] : memref<8x32xf32> into memref<8x2x16xf32>
  %pc = memref.collapse_shape %p [[0, 1]] : memref<8x32xf32> into memref<256xf32>
  %px = memref.expand_shape %pc [[0, 1, 2]] output_shape [8, 2, 16] : memref<256xf32> into memref<8x2x16xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%px : memref<8x2x16xf32>) outs(%nextx : memref<8x2x16xf32>) {
  ^bb0(%pv: f32, %out: f32):
    linalg.yield %pv : f32
  }
  return
}

// -----

// Not marked: a reduction loop whose written map leaves it out: every
// iteration along it writes the same element of p', the later ones after
// the first overwrote the p they read.
// CHECK-LABEL: func.func @written_twice
// CHECK-NOT: mp.in_place_updates
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @written_twice(%p: memref<8xf32>, %g: memref<8x4xf32>, %next: memref<8xf32> {mp.update_of = 0 : i64}) {
  linalg.generic {indexing_maps = [#row, #id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%p, %g : memref<8xf32>, memref<8x4xf32>) outs(%next : memref<8xf32>) {
  ^bb0(%pv: f32, %gv: f32, %out: f32):
    %new = arith.subf %pv, %gv : f32
    linalg.yield %new : f32
  }
  return
}
