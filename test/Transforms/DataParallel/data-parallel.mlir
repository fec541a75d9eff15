// RUN: mp-opt %s --mp-autodiff --mp-loss-scaling="dtype=f16" --mp-data-parallel="ranks=2" | FileCheck %s
// RUN: mp-opt %s --mp-train-pipeline="dtype=f16 ranks=2" --mp-lower-cpu | FileCheck %s --check-prefix=LOWERED
// RUN: mp-opt %s --mp-train-pipeline="dtype=f32 ranks=2" 2>&1 | FileCheck %s --check-prefix=QUIET

// The gradient function's gradients (after the unscale, an exact power of
// two) and its loss go into one flat f32 buffer: one MPI_SUM all-reduce,
// then each gradient's mean (/ 2 ranks) is read back at its offset into a
// tensor of its own shape; found_inf is reduced with MPI_MAX as an i32.
// CHECK: #[[W:.*]] = affine_map<(d0, d1) -> (d1 + d0 * 2)>
// CHECK: #[[B:.*]] = affine_map<(d0) -> (d0 + 6)>
// CHECK: module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">}
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[UNSCALED:.*]]:2, %[[FOUND:.*]] = mp.unscale
// CHECK: %[[COLLAPSED:.*]] = tensor.collapse_shape %[[UNSCALED]]#0 {{\[\[}}0, 1]] : tensor<3x2xf32> into tensor<6xf32>
// CHECK: %[[LOSS:.*]] = tensor.from_elements %{{.*}} : tensor<1xf32>
// CHECK: %[[FLAT:.*]] = tensor.concat dim(0) %[[COLLAPSED]], %[[UNSCALED]]#1, %[[LOSS]] : (tensor<6xf32>, tensor<2xf32>, tensor<1xf32>) -> tensor<9xf32>
// CHECK: %[[SEND:.*]] = bufferization.to_buffer %[[FLAT]] read_only : tensor<9xf32> to memref<9xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<9xf32>
// CHECK: %[[COMM:.*]] = mpi.comm_world : !mpi.comm
// CHECK: mpi.allreduce(%[[SEND]], %[[RECV]], MPI_SUM, %[[COMM]]) : memref<9xf32>, memref<9xf32>
// CHECK: %[[SUM:.*]] = bufferization.to_tensor %[[RECV]] restrict writable
// CHECK: %[[N:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[GW:.*]] = linalg.generic {indexing_maps = [#[[W]], #{{.*}}], {{.*}} ins(%[[SUM]] : tensor<9xf32>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: %[[GB:.*]] = linalg.generic {indexing_maps = [#[[B]], #{{.*}}], {{.*}} ins(%[[SUM]] : tensor<9xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[L:.*]] = tensor.extract %[[SUM]][%{{.*}}] : tensor<9xf32>
// CHECK: %[[MEANLOSS:.*]] = arith.divf %[[L]], %[[N]] : f32
// CHECK: %[[FLAG:.*]] = arith.extui %[[FOUND]] : i1 to i32
// CHECK: mpi.allreduce(%{{.*}}, %{{.*}}, MPI_MAX, %{{.*}}) : memref<1xi32>, memref<1xi32>
// CHECK: %[[ANY:.*]] = arith.cmpi ne
// CHECK: return %[[MEANLOSS]], %[[GW]], %[[GB]], %[[ANY]] : f32, tensor<3x2xf32>, tensor<2xf32>, i1

// Through the whole CPU lowering: MPI_Allreduce calls with MPICH's handles
// (MPI_COMM_WORLD 0x44000000, MPI_FLOAT 0x4c00040a, MPI_SUM 0x58000003).
// LOWERED-LABEL: llvm.func @train_step
// LOWERED-DAG: llvm.mlir.constant(1140850688 : i64)
// LOWERED-DAG: llvm.mlir.constant(1275069450 : i32)
// LOWERED-DAG: llvm.mlir.constant(1476395011 : i32)
// LOWERED: llvm.call @MPI_Allreduce
// LOWERED: llvm.call @MPI_Allreduce
// LOWERED-NOT: mpi.

// The collective's buffers are f32 on purpose: the precision analysis says
// nothing about them.
// QUIET-NOT: not understood
func.func @loss(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {mp.param = "w"}, %b: tensor<2xf32> {mp.param = "b"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  %s0 = tensor.empty() : tensor<f32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%mm, %b : tensor<4x2xf32>, tensor<2xf32>) outs(%sz : tensor<f32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %t = arith.addf %a, %c : f32
    %sq = arith.mulf %t, %t : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %l = tensor.extract %sum[] : tensor<f32>
  return %l : f32
}
