// Driver for overflow.test: runs @train_step of examples/mlp_train.mlir
// (SGD, dynamic loss scaling with growth-interval 3) four times: first with
// an inf in the input, then three clean steps. Each step prints
//   stepped, scale, growth tracker, step count, parameter bits changed
// and at the end whether the loss fell over the clean steps.
func.func private @printI64(i64)
func.func private @printF32(f32)
func.func private @printComma()
func.func private @printNewline()

func.func @pattern2(%rows: index, %cols: index, %seed: f32) -> tensor<?x?xf32> {
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<?x?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %m = arith.muli %i, %cols : index
    %lin = arith.addi %m, %j : index
    %ii = arith.index_cast %lin : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %k = arith.constant 0.77 : f32
    %p = arith.mulf %f, %k : f32
    %q = arith.addf %p, %seed : f32
    %s = math.sin %q : f32
    %h = arith.constant 0.5 : f32
    %v = arith.mulf %s, %h : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

func.func @zeros2(%rows: index, %cols: index) -> tensor<?x?xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

// Number of elements whose bit patterns differ.
func.func @changed(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> i64 {
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<i64>
  %i = linalg.fill ins(%c0 : i64) outs(%e : tensor<i64>) -> tensor<i64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%i : tensor<i64>) {
  ^bb0(%x: f32, %y: f32, %acc: i64):
    %xb = arith.bitcast %x : f32 to i32
    %yb = arith.bitcast %y : f32 to i32
    %ne = arith.cmpi ne, %xb, %yb : i32
    %one = arith.extui %ne : i1 to i64
    %s = arith.addi %acc, %one : i64
    linalg.yield %s : i64
  } -> tensor<i64>
  %n = tensor.extract %r[] : tensor<i64>
  return %n : i64
}

func.func @report(%stepped: i1, %scale: f32, %tracker: i32, %step: i32, %changed: i64) {
  %s = arith.extui %stepped : i1 to i64
  func.call @printI64(%s) : (i64) -> ()
  func.call @printComma() : () -> ()
  func.call @printF32(%scale) : (f32) -> ()
  func.call @printComma() : () -> ()
  %t = arith.extsi %tracker : i32 to i64
  func.call @printI64(%t) : (i64) -> ()
  func.call @printComma() : () -> ()
  %n = arith.extsi %step : i32 to i64
  func.call @printI64(%n) : (i64) -> ()
  func.call @printComma() : () -> ()
  func.call @printI64(%changed) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %s0 = arith.constant 0.1 : f32
  %s1 = arith.constant 1.3 : f32
  %s2 = arith.constant 2.1 : f32
  %s3 = arith.constant 2.9 : f32
  %s4 = arith.constant 3.7 : f32
  %s5 = arith.constant 4.5 : f32
  %xd = func.call @pattern2(%c4, %c6, %s0) : (index, index, f32) -> tensor<?x?xf32>
  %x = tensor.cast %xd : tensor<?x?xf32> to tensor<4x6xf32>
  %ld = func.call @pattern2(%c4, %c3, %s1) : (index, index, f32) -> tensor<?x?xf32>
  %labels = tensor.cast %ld : tensor<?x?xf32> to tensor<4x3xf32>
  %w1d = func.call @pattern2(%c6, %c5, %s2) : (index, index, f32) -> tensor<?x?xf32>
  %w1 = tensor.cast %w1d : tensor<?x?xf32> to tensor<6x5xf32>
  %b1d = func.call @pattern2(%c1, %c5, %s3) : (index, index, f32) -> tensor<?x?xf32>
  %b1 = tensor.collapse_shape %b1d [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %b1s = tensor.cast %b1 : tensor<?xf32> to tensor<5xf32>
  %w2d = func.call @pattern2(%c5, %c3, %s4) : (index, index, f32) -> tensor<?x?xf32>
  %w2 = tensor.cast %w2d : tensor<?x?xf32> to tensor<5x3xf32>
  %b2d = func.call @pattern2(%c1, %c3, %s5) : (index, index, f32) -> tensor<?x?xf32>
  %b2 = tensor.collapse_shape %b2d [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %b2s = tensor.cast %b2 : tensor<?xf32> to tensor<3xf32>
  %mw1 = func.call @zeros2(%c6, %c5) : (index, index) -> tensor<?x?xf32>
  %mw1s = tensor.cast %mw1 : tensor<?x?xf32> to tensor<6x5xf32>
  %mb1 = func.call @zeros2(%c1, %c5) : (index, index) -> tensor<?x?xf32>
  %mb1c = tensor.collapse_shape %mb1 [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %mb1s = tensor.cast %mb1c : tensor<?xf32> to tensor<5xf32>
  %mw2 = func.call @zeros2(%c5, %c3) : (index, index) -> tensor<?x?xf32>
  %mw2s = tensor.cast %mw2 : tensor<?x?xf32> to tensor<5x3xf32>
  %mb2 = func.call @zeros2(%c1, %c3) : (index, index) -> tensor<?x?xf32>
  %mb2c = tensor.collapse_shape %mb2 [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %mb2s = tensor.cast %mb2c : tensor<?xf32> to tensor<3xf32>
  %step0 = arith.constant 0 : i32
  %scale0 = arith.constant 65536.0 : f32
  %tracker0 = arith.constant 0 : i32

  // Step 0: an inf in the input.
  %inf = arith.constant 0x7F800000 : f32
  %c0 = arith.constant 0 : index
  %xinf = tensor.insert %inf into %x[%c0, %c0] : tensor<4x6xf32>
  %r:14 = func.call @train_step(%xinf, %labels, %w1, %b1s, %w2, %b2s, %mw1s, %mb1s, %mw2s, %mb2s, %step0, %scale0, %tracker0)
      : (tensor<4x6xf32>, tensor<4x3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32)
      -> (tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32, f32, i1, f32)
  %w1a = tensor.cast %r#0 : tensor<6x5xf32> to tensor<?x?xf32>
  %ch0 = func.call @changed(%w1a, %w1d) : (tensor<?x?xf32>, tensor<?x?xf32>) -> i64
  %w2a = tensor.cast %r#2 : tensor<5x3xf32> to tensor<?x?xf32>
  %ch0b = func.call @changed(%w2a, %w2d) : (tensor<?x?xf32>, tensor<?x?xf32>) -> i64
  %ch0s = arith.addi %ch0, %ch0b : i64
  func.call @report(%r#12, %r#9, %r#10, %r#8, %ch0s) : (i1, f32, i32, i32, i64) -> ()

  // Three clean steps.
  %q:14 = func.call @train_step(%x, %labels, %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8, %r#9, %r#10)
      : (tensor<4x6xf32>, tensor<4x3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32)
      -> (tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32, f32, i1, f32)
  %w1q = tensor.cast %q#0 : tensor<6x5xf32> to tensor<?x?xf32>
  %ch1 = func.call @changed(%w1q, %w1a) : (tensor<?x?xf32>, tensor<?x?xf32>) -> i64
  func.call @report(%q#12, %q#9, %q#10, %q#8, %ch1) : (i1, f32, i32, i32, i64) -> ()
  %u:14 = func.call @train_step(%x, %labels, %q#0, %q#1, %q#2, %q#3, %q#4, %q#5, %q#6, %q#7, %q#8, %q#9, %q#10)
      : (tensor<4x6xf32>, tensor<4x3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32)
      -> (tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32, f32, i1, f32)
  %w1u = tensor.cast %u#0 : tensor<6x5xf32> to tensor<?x?xf32>
  %ch2 = func.call @changed(%w1u, %w1q) : (tensor<?x?xf32>, tensor<?x?xf32>) -> i64
  func.call @report(%u#12, %u#9, %u#10, %u#8, %ch2) : (i1, f32, i32, i32, i64) -> ()
  %v:14 = func.call @train_step(%x, %labels, %u#0, %u#1, %u#2, %u#3, %u#4, %u#5, %u#6, %u#7, %u#8, %u#9, %u#10)
      : (tensor<4x6xf32>, tensor<4x3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32)
      -> (tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<5x3xf32>, tensor<3xf32>, i32, f32, i32, f32, i1, f32)
  %w1v = tensor.cast %v#0 : tensor<6x5xf32> to tensor<?x?xf32>
  %ch3 = func.call @changed(%w1v, %w1u) : (tensor<?x?xf32>, tensor<?x?xf32>) -> i64
  func.call @report(%v#12, %v#9, %v#10, %v#8, %ch3) : (i1, f32, i32, i32, i64) -> ()

  // The loss (computed before each update) fell over the clean steps.
  %fell = arith.cmpf olt, %v#11, %q#11 : f32
  %fell64 = arith.extui %fell : i1 to i64
  func.call @printI64(%fell64) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}
