// --mp-import takes what upstream's tosa pipeline takes (#24): tosa
// control flow and scatter become scf (tosa-to-scf), unranked results get
// their shapes (tosa-infer-shapes); the mixed-precision rewrite then works
// inside the loop bodies.
// RUN: mp-opt %s --mp-import -split-input-file | FileCheck %s
// RUN: mp-opt %s --mp-import --mp-auto-mixed-precision -split-input-file | FileCheck %s --check-prefix=AMP

// A recurrent matmul: h = tanh(h W), n times.
// CHECK-LABEL: func.func @loop
// CHECK-NOT: tosa.
// CHECK: scf.while
// CHECK: scf.condition
// CHECK: } do {
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x8x8xf32>, tensor<1x8x8xf32>)
// CHECK: math.tanh
// CHECK: scf.yield
// The loop-invariant weight is converted once, before the loop; the
// carried state each iteration; the product runs in f16 into f32.
// AMP-LABEL: func.func @loop(
// AMP-SAME: %[[X:[^:]+]]: tensor<1x8x8xf32>, %[[W:[^:]+]]: tensor<1x8x8xf32>
// AMP: %[[W16:.+]] = linalg.generic {{.*}} ins(%[[W]] : tensor<1x8x8xf32>) outs({{.*}} : tensor<1x8x8xf16>)
// AMP: scf.while
// AMP: } do {
// AMP-NEXT: ^bb0(%{{.*}}: tensor<i32>, %[[H:.+]]: tensor<1x8x8xf32>):
// AMP: %[[H16:.+]] = linalg.generic {{.*}} ins(%[[H]] : tensor<1x8x8xf32>) outs({{.*}} : tensor<1x8x8xf16>)
// AMP: linalg.batch_matmul ins(%[[H16]], %[[W16]] : tensor<1x8x8xf16>, tensor<1x8x8xf16>) outs(%{{.*}} : tensor<1x8x8xf32>)
// AMP: math.tanh %{{.*}} : f32
func.func @loop(%x: tensor<1x8x8xf32>, %w: tensor<1x8x8xf32>, %n: tensor<i32>) -> tensor<1x8x8xf32> {
  %zero = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %r:2 = tosa.while_loop (%i = %zero, %h = %x) : (tensor<i32>, tensor<1x8x8xf32>) -> (tensor<i32>, tensor<1x8x8xf32>) {
    %c = tosa.greater %n, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tosa.yield %c : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %h: tensor<1x8x8xf32>):
    %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %next = tosa.add %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %m = tosa.matmul %h, %w, %zp, %zp : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8xf32>
    %t = tosa.tanh %m : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
    tosa.yield %next, %t : tensor<i32>, tensor<1x8x8xf32>
  }
  return %r#1 : tensor<1x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @branch
// CHECK-NOT: tosa.
// CHECK: scf.if %{{.*}} -> (tensor<4x4xf32>)
// CHECK: arith.addf
// CHECK: } else {
// CHECK: arith.subf
func.func @branch(%c: tensor<i1>, %a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tosa.cond_if %c (%x = %a, %y = %b) : tensor<i1> (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>):
    %1 = tosa.add %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    tosa.yield %1 : tensor<4x4xf32>
  } else {
  ^bb0(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>):
    %1 = tosa.sub %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    tosa.yield %1 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @scatter
// CHECK-NOT: tosa.
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<1x4x2xf32>)
// CHECK: tensor.insert_slice
func.func @scatter(%values: tensor<1x4x2xf32>, %indices: tensor<1x3xi32>, %input: tensor<1x3x2xf32>) -> tensor<1x4x2xf32> {
  %0 = tosa.scatter %values, %indices, %input : (tensor<1x4x2xf32>, tensor<1x3xi32>, tensor<1x3x2xf32>) -> tensor<1x4x2xf32>
  return %0 : tensor<1x4x2xf32>
}

// -----

// Unranked results take the shapes of their operands.
// CHECK-LABEL: func.func @unranked
// CHECK-NOT: tensor<*x
// CHECK: arith.addf
// CHECK: math.tanh
// CHECK: return %{{.*}} : tensor<2x3xf32>
func.func @unranked(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<*xf32>
  %1 = tosa.tanh %0 : (tensor<*xf32>) -> tensor<*xf32>
  %2 = tensor.cast %1 : tensor<*xf32> to tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
