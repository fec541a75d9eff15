// RUN: mp-opt %s --mp-auto-mixed-precision=dtype=bf16 | FileCheck %s
// The fuzzed training step that showed it (it hung) now compiles:
// RUN: mp-opt %S/Inputs/fuzzed-mixed-low-types.mlir --mp-auto-mixed-precision=dtype=bf16 | FileCheck %s --check-prefix=FUZZED
// FUZZED: func.func @train_step

// An op told to compute in f16 (mp.precision) in a bf16 run feeds a bf16
// consumer: it reads the f16 result and converts in its body, f16 to bf16
// through f32 (two ops). Both conversions must read the block argument;
// redirecting the argument's uses to the second one's result made the first
// read its own result (a cycle: the pass then never returned, as a fuzzed
// training step showed).
// CHECK-LABEL: func.func @f16_into_bf16
// CHECK: %[[H:.*]] = linalg.exp {mp.precision = #mp.precision<f16>} ins(%{{.*}} : tensor<4x4xf16>) outs(%{{.*}} : tensor<4x4xf16>)
// CHECK: linalg.generic {{.*}} ins(%[[H]], %[[H]] : tensor<4x4xf16>, tensor<4x4xf16>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f16, %[[B:.*]]: f16, %{{.*}}: bf16):
// CHECK-DAG: arith.extf %[[A]] : f16 to f32
// CHECK-DAG: arith.extf %[[B]] : f16 to f32
// CHECK: linalg.yield
func.func @f16_into_bf16(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %h = linalg.exp {mp.precision = #mp.precision<f16>} ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h, %h : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = linalg.matmul ins(%s, %s : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
