// Runs long reductions split by --mp-split-reductions on the CPU and
// checks their results: the sums are of small integers, exact in f32 in any
// order, so they must match the unsplit values (computed with Python)
// exactly; the max and the inf/nan check are exact anyway.
//
// RUN: mp-opt %s --mp-split-reductions \
// RUN: | FileCheck %s --check-prefix=IR
// RUN: mp-opt %s --mp-split-reductions \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --lower-affine --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --lower-affine --finalize-memref-to-llvm \
// RUN:   --convert-math-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#none = affine_map<(d0, d1) -> ()>

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printF32(f32)
func.func private @printI64(i64)
func.func private @printNewline()

// x[i, j] = ((7 i + 3 j) mod 11) - 5, with `big` at (4000, 63).
func.func @ramp(%big: f32) -> tensor<4096x64xf32> {
  %e = tensor.empty() : tensor<4096x64xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<4096x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c7 = arith.constant 7 : index
    %c3 = arith.constant 3 : index
    %c11 = arith.constant 11 : index
    %c5 = arith.constant 5 : index
    %c4000 = arith.constant 4000 : index
    %c63 = arith.constant 63 : index
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %j, %c3 : index
    %s = arith.addi %a, %b : index
    %m = arith.remui %s, %c11 : index
    %v = arith.subi %m, %c5 : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    %ati = arith.cmpi eq, %i, %c4000 : index
    %atj = arith.cmpi eq, %j, %c63 : index
    %at = arith.andi %ati, %atj : i1
    %x = arith.select %at, %big, %vf : f32
    linalg.yield %x : f32
  } -> tensor<4096x64xf32>
  return %r : tensor<4096x64xf32>
}

// IR-LABEL: func.func @column_sums
// IR: tensor.expand_shape {{.*}} into tensor<32x128x64xf32>
// IR: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]{{.*}} outs({{.*}} : tensor<128x64xf32>)
// IR: arith.addf
// IR: linalg.generic {{.*}} outs(%arg1 : tensor<64xf32>)
func.func @column_sums(%x: tensor<4096x64xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4096x64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// out - (x - m[i]), as the cross-entropy loss subtracts: partials summed.
// IR-LABEL: func.func @negated_sum
// IR: arith.subf %out
// IR: linalg.generic
// IR: arith.addf %out, %in
func.func @negated_sum(%x: tensor<4096x64xf32>, %m: tensor<4096xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #row, #none], iterator_types = ["reduction", "reduction"]}
      ins(%x, %m : tensor<4096x64xf32>, tensor<4096xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %s = arith.subf %o, %d : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// IR-LABEL: func.func @maximum
// IR-COUNT-3: arith.maximumf
func.func @maximum(%x: tensor<4096x64xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #none], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<4096x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// IR-LABEL: func.func @has_inf_or_nan
// IR: arith.ori
func.func @has_inf_or_nan(%x: tensor<4096x64xf32>) -> tensor<i1> {
  %false = arith.constant false
  %limit = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<i1>
  %init = linalg.fill ins(%false : i1) outs(%e : tensor<i1>) -> tensor<i1>
  %r = linalg.generic {indexing_maps = [#id, #none], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<4096x64xf32>) outs(%init : tensor<i1>) {
  ^bb0(%a: f32, %o: i1):
    %abs = math.absf %a : f32
    %bad = arith.cmpf uge, %abs, %limit : f32
    %s = arith.ori %o, %bad : i1
    linalg.yield %s : i1
  } -> tensor<i1>
  return %r : tensor<i1>
}

// A short reduction (32 per thread or fewer) and a prime-sized one stay.
// IR-LABEL: func.func @short_and_prime
// IR-NOT: expand_shape
// IR: return
func.func @short_and_prime(%x: tensor<32xf32>, %y: tensor<4099xf32>, %init: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<32xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%y : tensor<4099xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r, %p : tensor<f32>, tensor<f32>
}

// A reduction loop of one iteration (a 4x1x3x3 filter's gradient checked
// whole) stays a loop of one beside the split ones.
// IR-LABEL: func.func @unit_dim
// IR: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2], [3], [4]] output_shape [32, 2, 1, 3, 3]
// IR: iterator_types = ["reduction", "parallel", "reduction", "parallel", "parallel"]
func.func @unit_dim(%x: tensor<64x1x3x3xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> ()>], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%x : tensor<64x1x3x3xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// A scalar operand: left alone.
// IR-LABEL: func.func @scalar_operand
// IR-NOT: expand_shape
// IR: return
func.func @scalar_operand(%x: tensor<4096xf32>, %s: f32, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%x, %s : tensor<4096xf32>, f32) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = arith.addf %d, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

func.func @main() {
  %zero = arith.constant 0.0 : f32
  %ten = arith.constant 10.0 : f32
  %hundred = arith.constant 100.0 : f32
  %inf = arith.constant 0x7F800000 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %x = func.call @ramp(%ten) : (f32) -> tensor<4096x64xf32>

  // CHECK: [0,  1,  2,  3,  -7,  -6,  6,  7,  -3,  -2,  -1,  0,
  %e64 = tensor.empty() : tensor<64xf32>
  %z64 = linalg.fill ins(%zero : f32) outs(%e64 : tensor<64xf32>) -> tensor<64xf32>
  %cols = func.call @column_sums(%x, %z64) : (tensor<4096x64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %cols_u = tensor.cast %cols : tensor<64xf32> to tensor<*xf32>
  func.call @printMemrefF32(%cols_u) : (tensor<*xf32>) -> ()

  // 1 - sum over (x[i, j] - 1) = 1 - (sum x - 262144)
  // CHECK: 262134
  %one = arith.constant 1.0 : f32
  %e4k = tensor.empty() : tensor<4096xf32>
  %ones = linalg.fill ins(%one : f32) outs(%e4k : tensor<4096xf32>) -> tensor<4096xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init1 = linalg.fill ins(%one : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %neg = func.call @negated_sum(%x, %ones, %init1) : (tensor<4096x64xf32>, tensor<4096xf32>, tensor<f32>) -> tensor<f32>
  %negv = tensor.extract %neg[] : tensor<f32>
  func.call @printF32(%negv) : (f32) -> ()
  func.call @printNewline() : () -> ()

  // CHECK-NEXT: 100
  %y = func.call @ramp(%hundred) : (f32) -> tensor<4096x64xf32>
  %initm = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %max = func.call @maximum(%y, %initm) : (tensor<4096x64xf32>, tensor<f32>) -> tensor<f32>
  %maxv = tensor.extract %max[] : tensor<f32>
  func.call @printF32(%maxv) : (f32) -> ()
  func.call @printNewline() : () -> ()

  // 64 * 1 * 3 * 3 ones
  // CHECK-NEXT: 576
  %eu = tensor.empty() : tensor<64x1x3x3xf32>
  %ou = linalg.fill ins(%one : f32) outs(%eu : tensor<64x1x3x3xf32>) -> tensor<64x1x3x3xf32>
  %zu = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %u = func.call @unit_dim(%ou, %zu) : (tensor<64x1x3x3xf32>, tensor<f32>) -> tensor<f32>
  %uv = tensor.extract %u[] : tensor<f32>
  func.call @printF32(%uv) : (f32) -> ()
  func.call @printNewline() : () -> ()

  // CHECK-NEXT: 0
  // CHECK-NEXT: 1
  %finite = func.call @has_inf_or_nan(%y) : (tensor<4096x64xf32>) -> tensor<i1>
  %w = func.call @ramp(%inf) : (f32) -> tensor<4096x64xf32>
  %infinite = func.call @has_inf_or_nan(%w) : (tensor<4096x64xf32>) -> tensor<i1>
  %fv = tensor.extract %finite[] : tensor<i1>
  %iv = tensor.extract %infinite[] : tensor<i1>
  %fi = arith.extui %fv : i1 to i64
  %ii = arith.extui %iv : i1 to i64
  func.call @printI64(%fi) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printI64(%ii) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}
