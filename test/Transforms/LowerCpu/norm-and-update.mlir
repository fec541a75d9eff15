// A training step's tail through the whole CPU lowering: the gradient's sum
// of squares (the norm) and the SGD-momentum update that also reads the
// gradient. --mp-split-reductions{lanes=16} splits the sum into
// partials per row and lane, --mp-fuse-sibling-reductions takes the update
// into that loop nest (one pass over the gradient), and the new weights and
// momentum are still computed in the step's output buffers (no copies).
// The values must be those of the separate loops: small integers and
// quarters, exact in f32 in any order (expected values from Python).
//
// RUN: mp-opt %s --mp-lower-cpu --mlir-print-ir-after=mp-fuse-sibling-reductions -o /dev/null 2>&1 \
// RUN: | FileCheck %s --check-prefix=FUSED
// RUN: mp-opt %s --mp-lower-cpu --mlir-print-ir-after=mp-in-place-updates -o /dev/null 2>&1 \
// RUN: | FileCheck %s --check-prefix=BUFFERS
// RUN: mp-opt %s --mp-lower-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

// FUSED-LABEL: func.func @step
// FUSED: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// FUSED: } -> (tensor<64x16xf32>, tensor<64x16x16xf32>, tensor<64x16x16xf32>)
// FUSED-NOT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<64x256xf32>

// BUFFERS-LABEL: func.func @step
// BUFFERS-SAME: attributes {mp.in_place_updates}
// BUFFERS-NOT: memref.copy
// BUFFERS: return

// CHECK: 163832
// CHECK-NEXT: -2.5
// CHECK-NEXT: 2
// CHECK-NEXT: -4
// CHECK-NEXT: 0

#id = affine_map<(d0, d1) -> (d0, d1)>
#none = affine_map<(d0, d1) -> ()>

func.func private @printI64(i64)
func.func private @printF32(f32)
func.func private @printNewline()

func.func @step(%gb: memref<64x256xf32>, %wb: memref<64x256xf32>, %mb: memref<64x256xf32>,
                %wout: memref<64x256xf32> {mp.update_of = 1 : i64},
                %mout: memref<64x256xf32> {mp.update_of = 2 : i64}, %norm: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.25 : f32
  %mu = arith.constant 0.5 : f32
  %g = bufferization.to_tensor %gb restrict : memref<64x256xf32> to tensor<64x256xf32>
  %w = bufferization.to_tensor %wb restrict : memref<64x256xf32> to tensor<64x256xf32>
  %m = bufferization.to_tensor %mb restrict : memref<64x256xf32> to tensor<64x256xf32>
  %se = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #none], iterator_types = ["reduction", "reduction"]}
      ins(%g : tensor<64x256xf32>) outs(%s0 : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %we = tensor.empty() : tensor<64x256xf32>
  %me = tensor.empty() : tensor<64x256xf32>
  %new:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %g, %m : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>) outs(%we, %me : tensor<64x256xf32>, tensor<64x256xf32>) {
  ^bb0(%wi: f32, %gi: f32, %mi: f32, %o1: f32, %o2: f32):
    %decay = arith.mulf %mi, %mu : f32
    %mnew = arith.addf %decay, %gi : f32
    %step = arith.mulf %mnew, %lr : f32
    %wnew = arith.subf %wi, %step : f32
    linalg.yield %wnew, %mnew : f32, f32
  } -> (tensor<64x256xf32>, tensor<64x256xf32>)
  bufferization.materialize_in_destination %new#0 in restrict writable %wout : (tensor<64x256xf32>, memref<64x256xf32>) -> ()
  bufferization.materialize_in_destination %new#1 in restrict writable %mout : (tensor<64x256xf32>, memref<64x256xf32>) -> ()
  %total = tensor.extract %sum[] : tensor<f32>
  memref.store %total, %norm[] : memref<f32>
  return
}

// buffer[i, j] = ((a i + b j) mod 11) - 5
func.func @ramp(%buffer: memref<64x256xf32>, %a: index, %b: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c11 = arith.constant 11 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c256 step %c1 {
      %ai = arith.muli %i, %a : index
      %bj = arith.muli %j, %b : index
      %s = arith.addi %ai, %bj : index
      %r = arith.remui %s, %c11 : index
      %v = arith.subi %r, %c5 : index
      %vi = arith.index_cast %v : index to i64
      %vf = arith.sitofp %vi : i64 to f32
      memref.store %vf, %buffer[%i, %j] : memref<64x256xf32>
    }
  }
  return
}

func.func @sum(%buffer: memref<64x256xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %total = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> f32 {
    %row = scf.for %j = %c0 to %c256 step %c1 iter_args(%racc = %acc) -> f32 {
      %v = memref.load %buffer[%i, %j] : memref<64x256xf32>
      %s = arith.addf %racc, %v : f32
      scf.yield %s : f32
    }
    scf.yield %row : f32
  }
  return %total : f32
}

func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c17 = arith.constant 17 : index
  %c63 = arith.constant 63 : index
  %c255 = arith.constant 255 : index
  %g = memref.alloc() : memref<64x256xf32>
  %w = memref.alloc() : memref<64x256xf32>
  %m = memref.alloc() : memref<64x256xf32>
  %wout = memref.alloc() : memref<64x256xf32>
  %mout = memref.alloc() : memref<64x256xf32>
  %norm = memref.alloc() : memref<f32>
  func.call @ramp(%g, %c7, %c3) : (memref<64x256xf32>, index, index) -> ()
  func.call @ramp(%w, %c2, %c5) : (memref<64x256xf32>, index, index) -> ()
  func.call @ramp(%m, %c3, %c7) : (memref<64x256xf32>, index, index) -> ()
  func.call @step(%g, %w, %m, %wout, %mout, %norm) : (memref<64x256xf32>, memref<64x256xf32>, memref<64x256xf32>, memref<64x256xf32>, memref<64x256xf32>, memref<f32>) -> ()
  %n = memref.load %norm[] : memref<f32>
  %ni = arith.fptosi %n : f32 to i64
  func.call @printI64(%ni) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %w1 = memref.load %wout[%c3, %c17] : memref<64x256xf32>
  func.call @printF32(%w1) : (f32) -> ()
  func.call @printNewline() : () -> ()
  %m1 = memref.load %mout[%c63, %c255] : memref<64x256xf32>
  func.call @printF32(%m1) : (f32) -> ()
  func.call @printNewline() : () -> ()
  %ws = func.call @sum(%wout) : (memref<64x256xf32>) -> f32
  %wsi = arith.fptosi %ws : f32 to i64
  func.call @printI64(%wsi) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %ms = func.call @sum(%mout) : (memref<64x256xf32>) -> f32
  %msi = arith.fptosi %ms : f32 to i64
  func.call @printI64(%msi) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}
