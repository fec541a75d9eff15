// RUN: mp-opt %s --mp-auto-mixed-precision="dtype=bf16" --mp-convert-weights-once | FileCheck %s
// RUN: mp-opt %s --mp-convert-weights-once | FileCheck %s --check-prefix=F32

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The weight's bf16 copy becomes an argument made by
// @predict_convert_weights; the f32 weight is no longer an argument of
// @predict, the f32 bias (added in f32) still is.
// CHECK-LABEL: func.func @predict(
// CHECK-SAME:    %[[X:.*]]: tensor<4x6xf32>, %[[B:.*]]: tensor<5xf32> {mp.param = "b"},
// CHECK-SAME:    %[[W16:.*]]: tensor<6x5xbf16> {mp.converted = "w"})
// CHECK-SAME:    attributes {mp.convert_weights = @predict_convert_weights, mp.predict}
// CHECK-NOT:   tensor<6x5xf32>
// CHECK:       linalg.matmul ins(%{{.*}}, %[[W16]] : tensor<4x6xbf16>, tensor<6x5xbf16>)
// CHECK:       return
// CHECK-LABEL: func.func @predict_convert_weights(
// CHECK-SAME:    %{{.*}}: tensor<6x5xf32> {mp.param = "w"})
// CHECK-SAME:    -> (tensor<6x5xbf16> {mp.converted = "w"})
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         return

// Without low-precision conversions (an f32 model) nothing changes.
// F32-LABEL: func.func @predict(
// F32-SAME:    %{{.*}}: tensor<6x5xf32> {mp.param = "w"}
// F32-NOT:   mp.convert_weights
// F32-NOT:   @predict_convert_weights
func.func @predict(%x: tensor<4x6xf32>, %w: tensor<6x5xf32> {mp.param = "w"},
                   %b: tensor<5xf32> {mp.param = "b"}) -> tensor<4x5xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x6xf32>, tensor<6x5xf32>) outs(%z : tensor<4x5xf32>) -> tensor<4x5xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x5xf32>, tensor<5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  return %h : tensor<4x5xf32>
}
