// RUN: mp-opt %s --mp-add-loss="ignore-index=-1" | FileCheck %s

// Sequence logits [B, T, V] take one class id per position (i64, as
// PyTorch's cross_entropy); the loss is the mean of logsumexp - the
// target's score over the positions whose id is not ignore-index, with
// the target's score gathered, not multiplied by a one-hot tensor.
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x5xf32>, %[[IDS:[^:]*]]: tensor<2x3xi64>,
// CHECK-SAME: %[[W:[^:]*]]: tensor<5x5xf32> {mp.param = "w"}) -> f32 attributes {mp.loss}
// CHECK: %[[LOGITS:.*]] = linalg.generic
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[LOGITS]] : tensor<2x3x5xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[LOGITS]], %[[MAX]] : tensor<2x3x5xf32>, tensor<2x3xf32>)
// CHECK: math.exp
// CHECK: %[[PICKED:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<2x3xi64>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK:   %[[KEPT:.*]] = arith.cmpi ne, %[[ID]], %c-1_i64 : i64
// CHECK:   %[[T:.*]] = arith.select %[[KEPT]], %[[ID]], %c0_i64 : i64
// CHECK:   %[[LO:.*]] = arith.maxsi %[[T]], %c0_i64
// CHECK:   %[[HI:.*]] = arith.minsi %[[LO]], %c4_i64
// CHECK:   %[[I:.*]] = arith.index_cast %[[HI]] : i64 to index
// CHECK:   %[[S:.*]] = tensor.extract %[[LOGITS]][%{{.*}}, %{{.*}}, %[[I]]] : tensor<2x3x5xf32>
// CHECK:   linalg.yield %[[S]] : f32
// CHECK: %[[TOTAL:.*]] = linalg.generic {{.*}} ins(%[[IDS]], %[[MAX]], %[[SUM]], %[[PICKED]] :
// CHECK: %[[COUNT:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<2x3xi64>)
// CHECK: %[[T:.*]] = tensor.extract %[[TOTAL]][] : tensor<f32>
// CHECK: %[[C:.*]] = tensor.extract %[[COUNT]][] : tensor<f32>
// CHECK: %[[D:.*]] = arith.maximumf %[[C]], %{{.*}} : f32
// CHECK: %[[L:.*]] = arith.divf %[[T]], %[[D]] : f32
// CHECK: return %[[L]] : f32
#m = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @predict(%x: tensor<2x3x5xf32>, %w: tensor<5x5xf32> {mp.param = "w"}) -> tensor<2x3x5xf32> attributes {mp.predict} {
  %e = tensor.empty() : tensor<2x3x5xf32>
  %y = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x3x5xf32>) outs(%e : tensor<2x3x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}
