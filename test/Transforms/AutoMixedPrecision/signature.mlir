// keep-signature=false changes only functions nobody in the module calls.
// RUN: mp-opt %s --mp-auto-mixed-precision=keep-signature=false | FileCheck %s --check-prefix=SIG

// A function called in the module keeps its signature even with
// keep-signature=false: its callers pass f32.
// SIG-LABEL: func.func @callee
// SIG-SAME: (%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16x4xf32>, %{{.*}}: tensor<8x4xf32>) -> tensor<8x4xf32>
func.func @callee(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %acc: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
// The caller's arguments feed only the call, which passes f32: they stay f32
// although the caller's signature is free to change.
// SIG-LABEL: func.func @caller
// SIG-SAME: (%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16x4xf32>, %{{.*}}: tensor<8x4xf32>)
// SIG: call @callee(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
func.func @caller(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %acc: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = func.call @callee(%x, %w, %acc) : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
