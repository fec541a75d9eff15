// RUN: mp-opt %s --mp-keep-f32="locations=9:8" | FileCheck %s
// RUN: mp-opt %s --mp-keep-f32="locations=%s:8:8,9:8" | FileCheck %s --check-prefix=BOTH
// RUN: not mp-opt %s --mp-keep-f32="locations=42:1" 2>&1 | FileCheck %s --check-prefix=NOWHERE

// The op at LINE:COL (any file) or FILE:LINE:COL is pinned to f32.
func.func @f(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  %p = arith.mulf %s, %b : f32
  %q = arith.subf %p, %a : f32
  return %q : f32
}

// CHECK:      arith.addf %{{.*}} : f32{{$}}
// CHECK-NEXT: arith.mulf %{{.*}} : f32{{$}}
// CHECK-NEXT: arith.subf %{{.*}} {mp.precision = #mp.precision<f32>} : f32

// BOTH:      arith.mulf %{{.*}} {mp.precision = #mp.precision<f32>} : f32
// BOTH-NEXT: arith.subf %{{.*}} {mp.precision = #mp.precision<f32>} : f32

// NOWHERE: error: --keep-f32 42:1: no op of the model is at that location
