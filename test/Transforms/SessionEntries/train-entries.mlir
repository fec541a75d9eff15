// --mp-train-entries adds the functions host code calls on buffers;
// --mp-inline-entries leaves only them; --mp-keep-step-weight-copies makes
// a bf16 step read kept 16-bit weight copies.
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="optimizer=adam" --mp-train-entries --mp-inline-entries | FileCheck %s
// RUN: mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-pipeline="optimizer=sgd accumulate=2" --mp-train-entries="accumulate=2" | FileCheck %s --check-prefix=ACC
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --mp-train-pipeline="dtype=bf16" --mp-train-entries="predict-weight-copies" --mp-inline-entries | FileCheck %s --check-prefix=PREDICT
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --mp-train-pipeline="dtype=bf16" --mp-train-entries --mp-inline-entries --mp-keep-step-weight-copies | FileCheck %s --check-prefix=COPIES
// RUN: mp-opt %mp_src_root/examples/digits_mlp.mlir --mp-train-pipeline="dtype=f32" --mp-train-entries --mp-inline-entries --mp-keep-step-weight-copies | FileCheck %s --check-prefix=F32
// RUN: not mp-opt %mp_src_root/examples/mlp_train.mlir --mp-train-entries 2>&1 | FileCheck %s --check-prefix=NOSTEP

// The step's arguments, then its results, as memrefs with their
// attributes; each new parameter and state value may overwrite the
// argument it replaces. Nothing but the entry is left.
// CHECK-NOT:   func.func @train_step
// CHECK-LABEL: func.func @mp_train_entry(
// CHECK-SAME:    %arg0: memref<4x6xf32>, %arg1: memref<4x3xf32>, %arg2: memref<6x5xf32> {mp.param = "w1"}
// CHECK-SAME:    {mp.state = "w1.m"}
// CHECK-SAME:    %arg{{[0-9]+}}: memref<6x5xf32> {mp.param = "w1", mp.update_of = 2 : i64}
// CHECK-SAME:    attributes {mp.entry = {{[0-9]+}} : i64}
// CHECK-NOT:     func.call
// CHECK-NOT:   func.func

// With accumulation, the micro-batch entry too: its new sums replace the
// sums it takes after x, labels, the 4 parameters and the scale.
// ACC-LABEL: func.func @mp_train_entry(
// ACC-LABEL: func.func @mp_accumulate_entry(
// ACC-SAME:    {mp.accumulator = "w1", mp.update_of = 7 : i64}

// The prediction reads bf16 copies that its weights entry makes once.
// PREDICT-LABEL: func.func @mp_predict_entry(
// PREDICT-SAME:    memref<64x512xbf16> {mp.converted = "w1"}
// PREDICT-LABEL: func.func @mp_predict_weights_entry(
// PREDICT-SAME:    %arg0: memref<64x512xf32> {mp.param = "w1"}
// PREDICT-SAME:    memref<64x512xbf16> {mp.converted = "w1"}
// PREDICT-SAME:    attributes {mp.entry = 3 : i64}

// The step reads each weight's copy, and its update writes the next one.
// COPIES-LABEL: func.func @mp_train_entry(
// COPIES-SAME:    %arg{{[0-9]+}}: memref<64x512xbf16> {mp.copy_of = "w1"}
// COPIES-SAME:    %arg{{[0-9]+}}: memref<64x512xbf16> {mp.copy_of = "w1", mp.update_of = {{[0-9]+}} : i64}
// COPIES:         arith.truncf %{{.*}} : f32 to bf16
// COPIES-LABEL: func.func @mp_train_copies_entry(
// COPIES-SAME:    attributes {mp.entry = 3 : i64}

// An f32 step converts nothing: unchanged.
// F32-NOT: mp.copy_of
// F32-NOT: mp_train_copies_entry

// NOSTEP: error: no @train_step: run --mp-train-pipeline first
