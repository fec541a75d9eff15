// RUN: mp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mp-gpu-parallel-loops-first))' | FileCheck %s
// In --mp-lower-gpu the column sum then runs on 512 threads (2 blocks of
// 256), one per column, instead of one thread for all of it.
// RUN: mp-opt %s --split-input-file --mp-lower-gpu="device-memory=true" | FileCheck %s --check-prefix=GPU

// A column sum (a bias gradient over the batch): the reduction loop led.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: arith.addf %[[X]], %[[ACC]] : f32
// GPU-LABEL: llvm.func @column_sum
// GPU-DAG: %[[BLOCKS:.*]] = llvm.mlir.constant(2 : index) : i64
// GPU-DAG: %[[THREADS:.*]] = llvm.mlir.constant(256 : index) : i64
// GPU: gpu.launch_func {{.*}} blocks in (%[[BLOCKS]], %{{.*}}, %{{.*}}) threads in (%[[THREADS]],
func.func @column_sum(%g: tensor<64x512xf32>) -> tensor<512xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<512xf32>) -> tensor<512xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<64x512xf32>) outs(%f : tensor<512xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %x, %acc : f32
    linalg.yield %a : f32
  } -> tensor<512xf32>
  return %s : tensor<512xf32>
}

// -----

// Parallel loops already first, and a full reduction (no parallel loop):
// both stay as they are.
// CHECK-LABEL: func.func @unchanged
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["reduction", "reduction"]
func.func @unchanged(%g: tensor<64x512xf32>, %r: tensor<64xf32>, %t: tensor<f32>) -> (tensor<64xf32>, tensor<f32>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%g : tensor<64x512xf32>) outs(%r : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %x, %acc : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%g : tensor<64x512xf32>) outs(%t : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %x, %acc : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %0, %1 : tensor<64xf32>, tensor<f32>
}
