// RUN: mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json report=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json" --mp-lower-cpu="runtime-contractions=1 vectorize=0" | FileCheck %s --check-prefix=LOWERED

// nn.Linear as the PyTorch export writes it: x (m, k) times W (n, k)
// transposed. The weight's output channel is its first dimension: the
// scales have n = 4 entries and the int8 product keeps the maps.
// CHECK-LABEL: func.func @separate(
// CHECK-SAME: %{{.*}}: tensor<4x3xi8> {mp.qweight = "w"}, %{{.*}}: tensor<4xf32> {mp.qscale = "w"})
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<2x3xi8>, tensor<4x3xi8>) outs(%{{.*}} : tensor<2x4xi32>)
// CHECK: func.func @separate_quantize_weights(%{{.*}}: tensor<4x3xf32> {mp.param = "w"}) -> (tensor<4x3xi8> {mp.qweight = "w"}, tensor<4xf32> {mp.qscale = "w"})
// CHECK: iterator_types = ["parallel", "reduction"]
// The s8 product runs on the runtime with B transposed (flag 2), its
// zero-filled int32 result dequantized by the same call (no bias: 0).
// LOWERED-LABEL: llvm.func @separate(
// LOWERED: %[[FLAGS:.*]] = llvm.mlir.constant(2 : i32) : i32
// LOWERED: llvm.call @mprt_gemm_s8_dequantize({{.*}}%[[FLAGS]], %{{.*}}, %{{.*}})
func.func @separate(%x: tensor<2x3xf32>, %w: tensor<4x3xf32> {mp.param = "w"}) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %mm = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<2x3xf32>, tensor<4x3xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %mm : tensor<2x4xf32>
}

// -----

// A transposed A stays f32, with the reason in the report (the report of
// the last split is the one left in %t.json).
// CHECK-LABEL: func.func @separate(
// CHECK: linalg.matmul indexing_maps = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<3x4xf32>)
// REPORT: "reason": "not quantized: matmul with a transposed A or broadcast operands (plain and transposed-B matmuls and plain batch_matmuls are quantized)"
func.func @separate(%x: tensor<3x2xf32>, %w: tensor<3x4xf32> {mp.param = "w"}) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %mm = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<3x2xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %mm : tensor<2x4xf32>
}
