// --mp-lower-gpu{device-memory=true}: every buffer is device memory. A
// step on tensors and an entry like mp-run's (0-d memrefs for scalars)
// lower to host code that allocates with mgpuMemAlloc, copies constants in
// and the loss out with mgpuMemcpy, frees with mgpuMemFree, and reads no
// device memory itself.
// RUN: mp-opt %s --mp-lower-gpu="device-memory=true" > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: python3 %S/Inputs/check_host_memory.py %t.mlir | FileCheck %s --check-prefix=HOST
// Without the option the loss read is still an error (host malloc mode).
// RUN: not mp-opt %s --mp-lower-gpu 2>&1 | FileCheck %s --check-prefix=OFF

// HOST: host functions: 2; staged host loads: 2; other host element accesses: 0
// HOST: calls mgpuMemAlloc:
// HOST: calls mgpuMemFree:
// HOST: calls mgpuMemcpy: 3
// OFF: mp-gpu-map-parallel-loops: host code would read a tensor element

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>

// CHECK-LABEL: llvm.func @step(
// The constant is copied to a device buffer before its kernel reads it.
// CHECK: %[[G:.*]] = llvm.mlir.addressof @__constant_4xf32
// CHECK: %[[BIAS:.*]] = llvm.getelementptr %[[G]][0, 0]
// CHECK: %[[DBIAS:.*]] = llvm.call @mgpuMemAlloc(
// CHECK: llvm.call @mgpuMemcpy(%[[DBIAS]], %[[BIAS]],
// CHECK: gpu.launch_func
// The loss: a one-thread kernel reduces into a device scalar, which is
// copied to a host stack slot and read after the stream is synchronized.
// CHECK: %[[ACC:.*]] = llvm.call @mgpuMemAlloc(
// CHECK: gpu.launch_func <%[[STREAM:.*]] : !llvm.ptr> @step_kernel_1::@step_kernel
// CHECK: llvm.call @mgpuMemcpy(%[[SLOT:.*]], %[[ACC]], %{{.*}}, %[[STREAM]])
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[STREAM]])
// CHECK-NEXT: llvm.call @mgpuStreamDestroy(%[[STREAM]])
// CHECK-NEXT: llvm.load %[[SLOT]] : !llvm.ptr -> f32
// CHECK: llvm.call @mgpuMemFree(%[[ACC]],
// CHECK: llvm.call @mgpuMemFree(%[[DBIAS]],
// CHECK: llvm.return
func.func @step(%x: tensor<4xf32>, %scale: f32) -> (tensor<4xf32>, f32, i1) {
  %bias = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %bias : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    %s = arith.addf %m, %b : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%y : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %loss = tensor.extract %sum[] : tensor<f32>
  %bad = arith.cmpf uno, %loss, %loss : f32
  return %y, %loss, %bad : tensor<4xf32>, f32, i1
}

// mp-run's entry: tensors in and out as memrefs, scalars as 0-d memrefs.
// The scalar argument is read through a staged copy; the scalar results
// are written by one-thread kernels that take them as arguments; the
// returned device buffer is copied into %y by a kernel and freed.
// CHECK-LABEL: llvm.func @entry(
// CHECK: %[[SLOT:.*]] = llvm.alloca
// CHECK: llvm.call @mgpuMemcpy(%[[SLOT]], %arg6,
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize
// CHECK-NEXT: llvm.call @mgpuStreamDestroy
// CHECK-NEXT: %[[SCALE:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> f32
// CHECK: %[[R:.*]] = llvm.call @step(%arg0, %arg1, %arg2, %arg3, %arg4, %[[SCALE]])
// CHECK: %[[LOSS:.*]] = llvm.extractvalue %[[R]][1]
// CHECK: gpu.launch_func {{.*}} args(%[[LOSS]] : f32, %arg13 : !llvm.ptr
// CHECK: gpu.launch_func {{.*}} args(%{{.*}} : i32, %arg16 : !llvm.ptr
// CHECK: llvm.call @mgpuMemFree(
// CHECK: llvm.return
func.func @entry(%x: memref<4xf32>, %scale: memref<f32>, %y: memref<4xf32>, %loss: memref<f32>, %bad: memref<i32>) {
  %xt = bufferization.to_tensor %x restrict : memref<4xf32> to tensor<4xf32>
  %s = memref.load %scale[] : memref<f32>
  %r:3 = func.call @step(%xt, %s) : (tensor<4xf32>, f32) -> (tensor<4xf32>, f32, i1)
  bufferization.materialize_in_destination %r#0 in restrict writable %y : (tensor<4xf32>, memref<4xf32>) -> ()
  memref.store %r#1, %loss[] : memref<f32>
  %b = arith.extui %r#2 : i1 to i32
  memref.store %b, %bad[] : memref<i32>
  return
}
