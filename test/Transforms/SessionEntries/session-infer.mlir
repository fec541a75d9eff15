// mp-session-infer: what an inference session compiles, with the
// inference options string (docs/options.md, "Inference options").
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-infer{precision=bf16})' | FileCheck %s
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-infer{precision=int8-dynamic})' | FileCheck %s --check-prefix=INT8
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-infer{precision=calibrate})' | FileCheck %s --check-prefix=CALIBRATE
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --mp-keep-prediction | FileCheck %s --check-prefix=KEEP
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-infer{precision=auto})' 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-infer{precision=f32 quant-method=entropy})' 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-infer{precision=f32 epochs=3})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not mp-opt %s --mp-keep-prediction 2>&1 | FileCheck %s --check-prefix=NOPREDICT

// Only the entries are left: the prediction in bf16 with weights converted
// once, by the weights entry; the loss and the training step are gone.
// CHECK-NOT:   func.func @loss
// CHECK-LABEL: func.func @mp_infer_predict_entry(
// CHECK-SAME:    {mp.param = "b1"}
// CHECK-SAME:    attributes {mp.entry = {{[0-9]+}} : i64}
// CHECK:       func.func @mp_infer_weights_entry(
// CHECK-SAME:    bf16

// INT8: func.func @mp_infer_predict_entry(
// INT8: i8

// CALIBRATE: func.func @mp_infer_predict_entry(
// CALIBRATE: mp.observe

// The prediction stays, nothing else with a body.
// KEEP-NOT:    func.func @loss
// KEEP:        func.func @predict(
// KEEP-NOT:    func.func @loss

// AUTO: mp-session-infer: precision=auto depends on the hardware
// VERIFY: mp-session-infer: --quant-method is a setting of --precision int8 or int8-dynamic
// UNKNOWN: mp-session-infer: unknown inference option 'epochs'
// NOPREDICT: error: no function marked mp.predict
func.func @loss(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
