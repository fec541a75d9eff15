// RUN: mp-opt %s --mp-approximate-math | FileCheck %s

// f32 exp, scalar or vector, becomes arithmetic (a polynomial with FMAs and
// the exponent built from integer bits): no math.exp is left to become a
// libm call per lane.
// CHECK-LABEL: func.func @exp
// CHECK-NOT: math.exp
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: arith.bitcast {{.*}} : vector<16xi32> to vector<16xf32>
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp(%x: vector<16xf32>) -> vector<16xf32> {
  %r = math.exp %x : vector<16xf32>
  return %r : vector<16xf32>
}

// log: subnormal inputs are scaled by 2^23 (exactly) and 23 ln 2 taken off
// the result, since the approximation reads their exponent as the smallest
// normal one.
// CHECK-LABEL: func.func @log
// CHECK-DAG: %[[MIN:.*]] = arith.constant 1.17549435E-38 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 0x4B000000 : f32
// CHECK-DAG: %[[CORRECTION:.*]] = arith.constant 15.9423847 : f32
// CHECK: %[[ABS:.*]] = math.absf %[[X:.*]] : f32
// CHECK: %[[SUB:.*]] = arith.cmpf olt, %[[ABS]], %[[MIN]] : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[X]], %[[SCALE]] : f32
// CHECK: arith.select %[[SUB]], %[[SCALED]], %[[X]] : f32
// CHECK-NOT: math.log
// CHECK: arith.select %[[SUB]], %[[CORRECTION]]
// CHECK: arith.subf
func.func @log(%x: f32) -> f32 {
  %r = math.log %x : f32
  return %r : f32
}

// tanh and erf too; other types and other functions stay (they lower as
// before: bf16 math computes in f32 elsewhere, sin calls libm).
// CHECK-LABEL: func.func @others
// CHECK-NOT: math.tanh {{.*}} : vector<16xf32>
// CHECK-NOT: math.erf {{.*}} : vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xbf16>
// CHECK: math.sin {{.*}} : vector<16xf32>
func.func @others(%x: vector<16xf32>, %y: vector<16xbf16>) -> (vector<16xf32>, vector<16xf32>, vector<16xbf16>, vector<16xf32>) {
  %t = math.tanh %x : vector<16xf32>
  %e = math.erf %x : vector<16xf32>
  %b = math.exp %y : vector<16xbf16>
  %s = math.sin %x : vector<16xf32>
  return %t, %e, %b, %s : vector<16xf32>, vector<16xf32>, vector<16xbf16>, vector<16xf32>
}
