// RUN: mp-opt %s --mp-lower-dropout --split-input-file --verify-diagnostics | FileCheck %s

// In a training step (an mp.step argument) the mask is drawn in the body:
// ten Philox rounds over (element index, stream, step, 0), kept where the
// first word is at least round(0.25 * 2^32) = 1073741824.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[STEP:.*]]: i32 {mp.step})
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]] : tensor<2x8xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-DAG: %[[STREAM:.*]] = arith.constant 5 : i32
// CHECK-DAG: %[[I:.*]] = arith.index_castui %{{.*}} : index to i32
// CHECK: %{{.*}}, %{{.*}} = arith.mului_extended %{{.*}}, %[[I]] : i32
// CHECK: %{{.*}}, %{{.*}} = arith.mului_extended %{{.*}}, %[[STEP]] : i32
// CHECK-COUNT-9: arith.mului_extended
// CHECK: %[[KEEP:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[IN]], %{{.*}} : f32
// CHECK: %[[Y:.*]] = arith.select %[[KEEP]], %[[SCALED]], %{{.*}} : f32
// CHECK: linalg.yield %[[Y]] : f32
// CHECK-NOT: mp.dropout
func.func @step(%x: tensor<2x8xf32>, %step: i32 {mp.step}) -> tensor<2x8xf32> {
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64, stream = 5 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Outside a training step (prediction, evaluation), and with ratio 0,
// dropout is the identity.
// CHECK-LABEL: func.func @predict
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: return %[[X]] : tensor<2x8xf32>
func.func @predict(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @ratio_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %{{.*}}: i32 {mp.step})
// CHECK-NEXT: return %[[X]] : tensor<2x8xf32>
func.func @ratio_zero(%x: tensor<2x8xf32>, %step: i32 {mp.step}) -> tensor<2x8xf32> {
  %y = mp.dropout %x {ratio = 0.000000e+00 : f64, stream = 0 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @no_stream(%x: tensor<2x8xf32>, %step: i32 {mp.step}) -> tensor<2x8xf32> {
  // expected-error @+1 {{mp-lower-dropout: the dropout has no stream (--mp-autodiff numbers a loss function's)}}
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @dynamic(%x: tensor<?x8xf32>, %step: i32 {mp.step}) -> tensor<?x8xf32> {
  // expected-error @+1 {{mp-lower-dropout: needs a static shape of at most 2^32 elements, got 'tensor<?x8xf32>'}}
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64, stream = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{mp-lower-dropout: dropout in a gradient accumulation step (--accumulate > 1) is not supported yet}}
func.func @train_step_accumulate(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {mp.accumulation_of = @train_step} {
  %y = mp.dropout %x {ratio = 2.500000e-01 : f64, stream = 0 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
