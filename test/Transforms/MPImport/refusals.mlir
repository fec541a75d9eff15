// An op the conversion refuses gets the reason upstream's TOSA validation
// gives (#24: every refusal used to read "failed to legalize operation").
// RUN: mp-opt %s --mp-import -split-input-file -verify-diagnostics | FileCheck %s

// Zero points passed as arguments: the conversion needs constants.
func.func @zero_points(%a: tensor<1x4x8xf32>, %b: tensor<1x8x2xf32>, %za: tensor<1xf32>, %zb: tensor<1xf32>) -> tensor<1x4x2xf32> {
  // expected-error @below {{failed to legalize operation 'tosa.matmul'}}
  // expected-note @below {{TOSA validation: 'tosa.matmul' op expected compile time resolvable constant, but got variable value for operand #2}}
  %0 = tosa.matmul %a, %b, %za, %zb : (tensor<1x4x8xf32>, tensor<1x8x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x2xf32>
  return %0 : tensor<1x4x2xf32>
}

// -----

// What validation finds in an op the conversion takes is not reported: a
// rank-7 tensor exceeds validation's level (MAX_RANK 6), and imports all
// the same.
// CHECK-LABEL: func.func @rank7
// CHECK: math.tanh
func.func @rank7(%a: tensor<1x1x1x1x1x2x3xf32>) -> tensor<1x1x1x1x1x2x3xf32> {
  %0 = tosa.tanh %a : (tensor<1x1x1x1x1x2x3xf32>) -> tensor<1x1x1x1x1x2x3xf32>
  return %0 : tensor<1x1x1x1x1x2x3xf32>
}
