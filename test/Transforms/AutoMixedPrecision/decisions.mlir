// --mp-auto-mixed-precision honours decisions already in the IR, so analysing
// first and rewriting later gives the rewrite of one go, and a user may edit
// decisions in between.
// RUN: mp-opt %mp_src_root/examples/transformer_block.mlir --mp-auto-mixed-precision > %t.direct
// RUN: mp-opt %mp_src_root/examples/transformer_block.mlir --mp-analyze-precision --mp-auto-mixed-precision > %t.twostep
// RUN: diff %t.direct %t.twostep
// RUN: mp-opt %s --mp-auto-mixed-precision | FileCheck %s

// CHECK-LABEL: func.func @edited
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32>)
// CHECK-NOT: mp.decision
func.func @edited(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %acc: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = linalg.matmul {mp.decision = #mp.decision<allow, f32>} ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
