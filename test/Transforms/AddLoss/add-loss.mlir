// RUN: mp-opt %s -split-input-file --mp-add-loss -verify-diagnostics | FileCheck %s
// RUN: mp-opt %s -split-input-file --mp-add-loss=loss=mse -verify-diagnostics | FileCheck %s --check-prefix=MSE

// The prediction's body is copied into @loss(x, labels, params...), whose
// parameters keep their attributes; the logits are reduced against the
// labels.

// CHECK-LABEL: func.func @predict(
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x3xf32> {mp.input = "x"}, %[[LABELS:[^:]*]]: tensor<4x2xf32>,
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x2xf32> {mp.param = "w"}) -> f32 attributes {mp.loss}
// CHECK: %[[LOGITS:.*]] = linalg.matmul ins(%[[X]], %[[W]] :
// Softmax cross-entropy: row max, sum of exponentials, then the labels'
// log-probabilities summed and scaled by 1 / batch.
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[LOGITS]], %{{.*}}, %{{.*}}, %[[LABELS]] :
// CHECK: math.log
// CHECK: %[[TOTAL:.*]] = tensor.extract
// CHECK: %[[MEAN:.*]] = arith.mulf %[[TOTAL]], %{{.*}} : f32
// CHECK: return %[[MEAN]] : f32

// MSE-LABEL: func.func @loss(
// MSE: linalg.generic
// MSE: arith.subf
// MSE: arith.mulf
// MSE: arith.addf
// MSE: arith.constant 1.250000e-01
func.func @predict(%x: tensor<4x3xf32> {mp.input = "x"},
    %w: tensor<3x2xf32> {mp.param = "w"}) -> tensor<4x2xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A model with its own loss is left alone.
// CHECK-LABEL: func.func @own_loss
// CHECK-NOT: func.func @loss
func.func @own_loss(%x: tensor<4xf32>) -> f32 attributes {mp.loss} {
  %c = arith.constant 0.0 : f32
  return %c : f32
}
func.func @predict(%x: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {mp.predict} {
  return %x : tensor<4x3xf32>
}

// -----

// expected-error @below {{--mp-add-loss: no function is marked mp.predict}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @below {{--mp-add-loss: @predict must return one static f32 tensor of rank 2 or more (tensor<BxCxf32> logits, or tensor<BxTxVxf32> for a sequence), not 'tensor<4xf32>'}}
func.func @predict(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mp.predict} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{--mp-add-loss: argument #1 of @predict is a second input}}
func.func @predict(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {mp.predict} {
  return %x : tensor<4x3xf32>
}
