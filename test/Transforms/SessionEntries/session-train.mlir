// mp-session-train: what a training session compiles, with the session's
// own options string (docs/options.md).
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{precision=bf16 optimizer=adamw})' | FileCheck %s
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{precision=f32 device=cuda})' | FileCheck %s --check-prefix=GPU
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{clip-norm=0.5})' | FileCheck %s --check-prefix=CLIP
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{clip-norm=-1})' 2>&1 | FileCheck %s --check-prefix=BADCLIP
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{precision=fp8})' 2>&1 | FileCheck %s --check-prefix=BADPRECISION
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{precision=auto})' 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not mp-opt %mp_src_root/examples/digits_mlp.mlir --pass-pipeline='builtin.module(mp-session-train{qat-freeze-after=3})' 2>&1 | FileCheck %s --check-prefix=VERIFY

// Only the entries are left, public; the step, the loss and the prediction
// are inlined into them. The CPU step keeps its bf16 weight copies between
// steps and predicts from copies made once.
// CHECK-NOT:   func.func @train_step
// CHECK-LABEL: func.func @mp_train_entry(
// CHECK-SAME:    %arg0: memref<64x64xf32>, %arg1: memref<64x10xf32>, %arg2: memref<64x512xf32> {mp.param = "w1"}
// CHECK-SAME:    {mp.state = "w1.m"}
// CHECK-SAME:    {mp.param = "w1", mp.update_of = 2 : i64}
// CHECK-SAME:    {mp.copy_of = "w1"}
// CHECK-SAME:    attributes {mp.entry = {{[0-9]+}} : i64}
// CHECK-DAG:   func.func @mp_predict_entry(
// CHECK-DAG:   func.func @mp_predict_weights_entry(
// CHECK-DAG:   func.func @mp_train_copies_entry(

// A GPU step converts its weights in every call: no copies.
// GPU-LABEL: func.func @mp_train_entry(
// GPU-NOT:   mp.copy_of
// GPU-NOT:   func.func @mp_predict_weights_entry

// clip-norm reaches --mp-loss-scaling: the step scales its gradients by
// min(1, 0.5 / (norm + 1e-6)).
// CLIP-LABEL: func.func @mp_train_entry(
// CLIP-DAG:   math.sqrt
// CLIP-DAG:   arith.constant 5.000000e-01 : f32
// BADCLIP: mp-session-train: --clip-norm must be 0 (off) or a positive norm

// BADPRECISION: mp-session-train: bad --precision 'fp8'
// AUTO: mp-session-train: precision=auto depends on the hardware
// VERIFY: mp-session-train: --qat-freeze-after needs --qat
