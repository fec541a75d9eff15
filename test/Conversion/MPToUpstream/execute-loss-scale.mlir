// Runs the lowered loss-scale state machine and unscale on concrete numbers
// with upstream mlir-runner.
//
// RUN: mp-opt %s --mp-convert-to-upstream \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --lower-affine --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --finalize-memref-to-llvm \
// RUN:   --convert-math-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

func.func private @printF32(f32)
func.func private @printI64(i64)
func.func private @printNewline()
func.func private @printComma()

func.func @printState(%step: index, %scale: f32, %tracker: i32) {
  %s = arith.index_cast %step : index to i64
  call @printI64(%s) : (i64) -> ()
  call @printComma() : () -> ()
  call @printF32(%scale) : (f32) -> ()
  call @printComma() : () -> ()
  %t = arith.extsi %tracker : i32 to i64
  call @printI64(%t) : (i64) -> ()
  call @printNewline() : () -> ()
  return
}

// Steps with found_inf = 0 0 0 1 0 0 0 0 1 1, growth every 3 clean steps.
func.func @stateMachine() {
  %flags = arith.constant dense<[false, false, false, true, false, false,
                                 false, false, true, true]> : tensor<10xi1>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %scale0 = arith.constant 65536.0 : f32
  %tracker0 = arith.constant 0 : i32
  %r:2 = scf.for %i = %c0 to %c10 step %c1
      iter_args(%scale = %scale0, %tracker = %tracker0) -> (f32, i32) {
    %inf = tensor.extract %flags[%i] : tensor<10xi1>
    %s, %t = mp.update_scale %scale, %tracker, %inf
        {growth_interval = 3 : i64} : i32
    func.call @printState(%i, %s, %t) : (index, f32, i32) -> ()
    scf.yield %s, %t : f32, i32
  }
  return
}
// CHECK: 0, 65536, 1
// CHECK-NEXT: 1, 65536, 2
// After 3 clean steps the scale doubles and the tracker resets.
// CHECK-NEXT: 2, 131072, 0
// An inf halves the scale and resets the tracker.
// CHECK-NEXT: 3, 65536, 0
// CHECK-NEXT: 4, 65536, 1
// CHECK-NEXT: 5, 65536, 2
// CHECK-NEXT: 6, 131072, 0
// CHECK-NEXT: 7, 131072, 1
// CHECK-NEXT: 8, 65536, 0
// CHECK-NEXT: 9, 32768, 0

// The scale never backs off below min_scale nor grows above max_scale.
func.func @clamping() {
  %true = arith.constant true
  %false = arith.constant false
  %c0 = arith.constant 0 : i64
  %small = arith.constant 3.0 : f32
  %big = arith.constant 1000.0 : f32
  %s1, %t1 = mp.update_scale %small, %c0, %true {min_scale = 2.0 : f32} : i64
  %s2, %t2 = mp.update_scale %big, %c0, %false
      {growth_interval = 1 : i64, max_scale = 1500.0 : f32} : i64
  call @printF32(%s1) : (f32) -> ()
  call @printNewline() : () -> ()
  call @printF32(%s2) : (f32) -> ()
  call @printNewline() : () -> ()
  return
}
// CHECK-NEXT: {{^}}2{{$}}
// CHECK-NEXT: {{^}}1500{{$}}

// Scale the loss, unscale gradients (f16 in, f32 out) and detect inf/nan.
func.func @unscale() {
  %loss = arith.constant 0.25 : f32
  %scale = arith.constant 1024.0 : f32
  %scaled = mp.scale_loss %loss, %scale : f32
  call @printF32(%scaled) : (f32) -> ()
  call @printNewline() : () -> ()

  %clean = arith.constant dense<[2048.0, -512.0, 1.0]> : tensor<3xf16>
  %other = arith.constant dense<[[4096.0, 0.0]]> : tensor<1x2xf32>
  %u:2, %found = mp.unscale %clean, %other by %scale
      : tensor<3xf16>, tensor<1x2xf32> -> tensor<3xf32>, tensor<1x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %e0 = tensor.extract %u#0[%c0] : tensor<3xf32>
  %e1 = tensor.extract %u#0[%c1] : tensor<3xf32>
  %e2 = tensor.extract %u#0[%c2] : tensor<3xf32>
  %e3 = tensor.extract %u#1[%c0, %c0] : tensor<1x2xf32>
  call @printF32(%e0) : (f32) -> ()
  call @printComma() : () -> ()
  call @printF32(%e1) : (f32) -> ()
  call @printComma() : () -> ()
  call @printF32(%e2) : (f32) -> ()
  call @printComma() : () -> ()
  call @printF32(%e3) : (f32) -> ()
  call @printComma() : () -> ()
  %f = arith.extui %found : i1 to i64
  call @printI64(%f) : (i64) -> ()
  call @printNewline() : () -> ()

  %inf = arith.constant dense<[1.0, 0x7C00]> : tensor<2xf16>
  %nan = arith.constant dense<[0x7FC00000]> : tensor<1xf32>
  %v:2, %found_inf = mp.unscale %inf, %other by %scale
      : tensor<2xf16>, tensor<1x2xf32> -> tensor<2xf32>, tensor<1x2xf32>
  %w, %found_nan = mp.unscale %nan by %scale : tensor<1xf32> -> tensor<1xf32>
  %fi = arith.extui %found_inf : i1 to i64
  %fn = arith.extui %found_nan : i1 to i64
  call @printI64(%fi) : (i64) -> ()
  call @printComma() : () -> ()
  call @printI64(%fn) : (i64) -> ()
  call @printNewline() : () -> ()
  return
}
// CHECK-NEXT: {{^}}256{{$}}
// CHECK-NEXT: 2, -0.5, 0.000976562, 4, 0
// CHECK-NEXT: 1, 1

// The adaptive scaler (margin 8, hysteresis 2, cool-down 3) from 1024 over
// steps with (found_inf, amax); mp.adapt_scale's lowering must agree with
// updateAdaptiveLossScale (unittests/LossScaleTest.cpp).
func.func @adaptive() {
  %flags = arith.constant dense<[false, false, false, false, false, false,
                                 false, true, false, false, false, false,
                                 false, false]> : tensor<14xi1>
  %amaxes = arith.constant dense<[1000.0, 2000.0, 4000.0, 30000.0, 8000.0,
                                  30000.0, 60000.0, 0.0, 1.0, 20000.0,
                                  8000.0, 0.0, 64.0, 1.0e-30]> : tensor<14xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c14 = arith.constant 14 : index
  %scale0 = arith.constant 1024.0 : f32
  %tracker0 = arith.constant 0 : i32
  %r:2 = scf.for %i = %c0 to %c14 step %c1
      iter_args(%scale = %scale0, %tracker = %tracker0) -> (f32, i32) {
    %inf = tensor.extract %flags[%i] : tensor<14xi1>
    %amax = tensor.extract %amaxes[%i] : tensor<14xf32>
    %s, %t = mp.adapt_scale %scale, %tracker, %inf, %amax
        {margin = 8.0 : f32, hysteresis = 2 : i64, growth_interval = 3 : i64}
        : i32
    func.call @printState(%i, %s, %t) : (index, f32, i32) -> ()
    scf.yield %s, %t : f32, i32
  }
  // Clamped to [1, 2^24].
  %false = arith.constant false
  %top = arith.constant 16777216.0 : f32
  %tiny = arith.constant 1.0e-30 : f32
  %two = arith.constant 2.0 : f32
  %huge = arith.constant 60000.0 : f32
  %zero = arith.constant 0 : i32
  %s1, %t1 = mp.adapt_scale %top, %zero, %false, %tiny
      {margin = 8.0 : f32, hysteresis = 1 : i64} : i32
  %s2, %t2 = mp.adapt_scale %two, %zero, %false, %huge
      {margin = 8.0 : f32, hysteresis = 1 : i64} : i32
  call @printF32(%s1) : (f32) -> ()
  call @printComma() : () -> ()
  call @printF32(%s2) : (f32) -> ()
  call @printNewline() : () -> ()
  return
}
// amax 1000 at 1024 leaves room for 8192: one power of two a step.
// CHECK-NEXT: 0, 2048, 0
// CHECK-NEXT: 1, 4096, 0
// CHECK-NEXT: 2, 8192, 0
// One step asking for less (2048) only counts; a normal step resets it...
// CHECK-NEXT: 3, 8192, 1
// CHECK-NEXT: 4, 8192, 0
// ...two in a row lower the scale, to the last target.
// CHECK-NEXT: 5, 8192, 1
// CHECK-NEXT: 6, 1024, 0
// inf/nan: halve, cool down for 3 clean steps: no growth, and a lower
// target is taken at once.
// CHECK-NEXT: 7, 512, -3
// CHECK-NEXT: 8, 512, -2
// CHECK-NEXT: 9, 128, -1
// CHECK-NEXT: 10, 128, 0
// amax 0 measured nothing.
// CHECK-NEXT: 11, 128, 0
// CHECK-NEXT: 12, 256, 0
// CHECK-NEXT: 13, 512, 0
// Clamped to [1, 2^24].
// CHECK-NEXT: {{^}}1.67772e+07, 1{{$}}

// Unscaling with amax: the largest |g| of the scaled gradients over all of
// them, and found_inf from the same reduction.
func.func @unscaleAmax() {
  %scale = arith.constant 1024.0 : f32
  %clean = arith.constant dense<[2048.0, -512.0, 1.0]> : tensor<3xf16>
  %other = arith.constant dense<[[-4096.0, 0.0]]> : tensor<1x2xf32>
  %u:2, %found, %amax = mp.unscale %clean, %other by %scale
      : tensor<3xf16>, tensor<1x2xf32> -> tensor<3xf32>, tensor<1x2xf32> amax f32
  %f = arith.extui %found : i1 to i64
  call @printI64(%f) : (i64) -> ()
  call @printComma() : () -> ()
  call @printF32(%amax) : (f32) -> ()
  call @printNewline() : () -> ()

  %inf = arith.constant dense<[1.0, 0x7C00]> : tensor<2xf16>
  %nan = arith.constant dense<[0x7FC00000]> : tensor<1xf32>
  %v:2, %found_inf, %amax_inf = mp.unscale %inf, %other by %scale
      : tensor<2xf16>, tensor<1x2xf32> -> tensor<2xf32>, tensor<1x2xf32> amax f32
  %w, %found_nan, %amax_nan = mp.unscale %nan by %scale
      : tensor<1xf32> -> tensor<1xf32> amax f32
  %fi = arith.extui %found_inf : i1 to i64
  %fn = arith.extui %found_nan : i1 to i64
  call @printI64(%fi) : (i64) -> ()
  call @printComma() : () -> ()
  call @printI64(%fn) : (i64) -> ()
  call @printNewline() : () -> ()
  return
}
// CHECK-NEXT: {{^}}0, 4096{{$}}
// CHECK-NEXT: {{^}}1, 1{{$}}

func.func @main() {
  call @stateMachine() : () -> ()
  call @clamping() : () -> ()
  call @unscale() : () -> ()
  call @adaptive() : () -> ()
  call @unscaleAmax() : () -> ()
  return
}
