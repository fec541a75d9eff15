// RUN: mp-opt %s --mp-quantize="mode=int8-dynamic report=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: mp-opt %s --mp-quantize="mode=int8-dynamic" --mp-lower-cpu="runtime-contractions=1 vectorize=0" | FileCheck %s --check-prefix=LOWERED

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// mode=int8-dynamic (no calibration): the activation's scale is computed
// from its own max |x| on every call (a reduction into a 0-d tensor, /127,
// 1 when all zero), the activation is multiplied by its inverse and
// rounded; the rescaling factor s_x * s_w[c] and the i32 bias use that
// run-time scale. Weights are quantized once, as in mode=int8.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<16xf32> {mp.param = "b"}, %[[WQ:[^:]*]]: tensor<8x16xi8> {mp.qweight = "w"}, %[[WS:[^:]*]]: tensor<16xf32> {mp.qscale = "w"})
// CHECK: %[[AMAX:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[X]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[MAX:.*]] = tensor.extract %[[AMAX]][] : tensor<f32>
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[MAX]], %{{.*}} : f32
// CHECK: %[[S:.*]] = arith.divf %[[MAX]], %{{.*}} : f32
// CHECK: %[[SX:.*]] = arith.select %[[POS]], %[[S]], %{{.*}} : f32
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[SX]] : f32
// CHECK: %[[XQ:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>)
// CHECK: arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[WS]] : tensor<16xf32>)
// CHECK: arith.mulf %{{.*}}, %[[SX]] : f32
// CHECK: %[[BQ:.*]] = linalg.generic {{.*}} ins(%[[B]], %[[SCALE]] : tensor<16xf32>, tensor<16xf32>)
// CHECK: linalg.matmul ins(%[[XQ]], %[[WQ]] : tensor<4x8xi8>, tensor<8x16xi8>)
// CHECK: func.func @layer_quantize_weights
// REPORT: "mode": "int8-dynamic"
// REPORT: "precision": "int8",
// REPORT: "totals": {
// REPORT-NEXT: "int8": 1
// Lowered, the product, its bias and its dequantization are one call of
// mprt_gemm_s8_dequantize (flag 16: the ReLU).
// LOWERED-LABEL: llvm.func @layer(
// LOWERED: %[[FLAGS:.*]] = llvm.mlir.constant(16 : i32) : i32
// LOWERED: llvm.call @mprt_gemm_s8_dequantize({{.*}}, %[[FLAGS]], %{{.*}}, %{{.*}})
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x16xf32> {mp.param = "w"},
                 %b: tensor<16xf32> {mp.param = "b"}) -> tensor<4x16xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}
