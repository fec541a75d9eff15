// The CPU's split (lanes=16): where the innermost loop reduces the inputs'
// last dimension, each row keeps 16 partials of its own (neighbouring
// elements in neighbouring lanes) and the other loops turn parallel, so
// threads may take whole rows; elsewhere the split is as without lanes.
// The sums are of small integers, exact in f32 in any order: the split
// values must equal the unsplit ones (computed with Python).
//
// RUN: mp-opt %s --mp-split-reductions="per-thread=4096 lanes=16" \
// RUN: | FileCheck %s --check-prefix=IR
// RUN: mp-opt %s --mp-split-reductions="per-thread=4096 lanes=16" \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --lower-affine --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --lower-affine --finalize-memref-to-llvm \
// RUN:   --convert-math-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s
// RUN: not mp-opt %s --mp-split-reductions="lanes=-1" 2>&1 \
// RUN: | FileCheck %s --check-prefix=BAD

// BAD: error: mp-split-reductions: lanes must not be negative, got -1

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#none = affine_map<(d0, d1) -> ()>

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printI64(i64)
func.func private @printNewline()

// x[i, j] = ((7 i + 3 j) mod 11) - 5.
func.func @ramp() -> tensor<512x256xf32> {
  %e = tensor.empty() : tensor<512x256xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<512x256xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c7 = arith.constant 7 : index
    %c3 = arith.constant 3 : index
    %c11 = arith.constant 11 : index
    %c5 = arith.constant 5 : index
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %j, %c3 : index
    %s = arith.addi %a, %b : index
    %m = arith.remui %s, %c11 : index
    %v = arith.subi %m, %c5 : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    linalg.yield %vf : f32
  } -> tensor<512x256xf32>
  return %r : tensor<512x256xf32>
}

// The sum of squares over every element: partials per row and lane (16
// serial steps each), then the 8192 partials as without lanes (their
// innermost loop has 16 elements, one serial step a lane).
// IR-LABEL: func.func @sum_of_squares
// IR: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [512, 16, 16]
// IR: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]{{.*}} outs({{.*}} : tensor<512x16xf32>)
// IR: arith.mulf
// IR: tensor.expand_shape {{.*}} output_shape [512, 8, 2] : tensor<512x16xf32> into tensor<512x8x2xf32>
// IR: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]{{.*}} outs({{.*}} : tensor<2xf32>)
// IR: linalg.generic {{.*}} outs(%arg1 : tensor<f32>)
func.func @sum_of_squares(%x: tensor<512x256xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #none], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<512x256xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// Row sums of 8192 columns: 16 partials per row, 512 serial steps each.
// IR-LABEL: func.func @row_sums
// IR: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4, 512, 16]
// IR: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]{{.*}} outs({{.*}} : tensor<4x16xf32>)
// IR: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} outs(%arg1 : tensor<4xf32>)
func.func @row_sums(%x: tensor<4x8192xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8192xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// As without lanes: column sums (the innermost loop is parallel), a
// transposed read (the innermost loop is not the input's last dimension)
// and rows too short for 16 serial steps a lane (128 columns: 8).
// IR-LABEL: func.func @as_before
// IR: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [4096, 2, 16]
// IR: tensor.expand_shape %arg1 {{\[\[}}0], [1, 2]] output_shape [16, 4096, 2]
// IR: tensor.expand_shape %arg2 {{\[\[}}0], [1, 2]] output_shape [64, 64, 2]
func.func @as_before(%x: tensor<8192x16xf32>, %xt: tensor<16x8192xf32>, %s: tensor<64x128xf32>,
                     %c: tensor<16xf32>, %init: tensor<f32>) -> (tensor<16xf32>, tensor<f32>, tensor<f32>) {
  %cols = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8192x16xf32>) outs(%c : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %tr = linalg.generic {indexing_maps = [#t, #none], iterator_types = ["reduction", "reduction"]}
      ins(%xt : tensor<16x8192xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %short = linalg.generic {indexing_maps = [#id, #none], iterator_types = ["reduction", "reduction"]}
      ins(%s : tensor<64x128xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %cols, %tr, %short : tensor<16xf32>, tensor<f32>, tensor<f32>
}

func.func @main() {
  %zero = arith.constant 0.0 : f32
  %x = func.call @ramp() : () -> tensor<512x256xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>

  // CHECK: 1310714
  %sq = func.call @sum_of_squares(%x, %z0) : (tensor<512x256xf32>, tensor<f32>) -> tensor<f32>
  %sqv = tensor.extract %sq[] : tensor<f32>
  %sqi = arith.fptosi %sqv : f32 to i64
  func.call @printI64(%sqi) : (i64) -> ()
  func.call @printNewline() : () -> ()

  // The ramp's first 32 rows as 4 rows of 8192.
  // CHECK: [4,  12,  -24,  -16]
  %rows = tensor.extract_slice %x[0, 0] [32, 256] [1, 1] : tensor<512x256xf32> to tensor<32x256xf32>
  %wide = tensor.collapse_shape %rows [[0, 1]] : tensor<32x256xf32> into tensor<8192xf32>
  %w4 = tensor.expand_shape %wide [[0, 1]] output_shape [4, 2048] : tensor<8192xf32> into tensor<4x2048xf32>
  %w = tensor.concat dim(1) %w4, %w4, %w4, %w4 : (tensor<4x2048xf32>, tensor<4x2048xf32>, tensor<4x2048xf32>, tensor<4x2048xf32>) -> tensor<4x8192xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %rs = func.call @row_sums(%w, %z4) : (tensor<4x8192xf32>, tensor<4xf32>) -> tensor<4xf32>
  %rsu = tensor.cast %rs : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%rsu) : (tensor<*xf32>) -> ()
  return
}
