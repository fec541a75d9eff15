// RUN: mp-opt %s --mp-lower-cpu | FileCheck %s

// --mp-lower-cpu expands dropouts left in a module itself: a prediction's
// is the identity (here: the function returns a copy of its input).
// CHECK-LABEL: llvm.func @predict
// CHECK-NOT: mp.dropout
// CHECK-NOT: llvm.xor
func.func @predict(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
