// RUN: mp-opt %s --mp-probes-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

// A probe becomes a call with the id global, the tensor's buffer, its element
// count and dtype code (0: f32); the probe's users read its input. Two probes
// with one id share a global.
// CHECK-DAG: memref.global "private" constant @[[ID0:__mp_probe_id_[0-9]+]] : memref<10xi8> = dense<[102, 99, 49, 46, 105, 110, 112, 117, 116, 0]>
// CHECK-DAG: func.func private @mprt_observe(i64, i64, i64, i32)
// CHECK-LABEL: func.func @probe
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK: %[[GLOBAL:.*]] = memref.get_global @[[ID0]] : memref<10xi8>
// CHECK: %[[DIM0:.*]] = memref.dim %[[BUF]], %{{.*}}
// CHECK: %[[N0:.*]] = arith.muli %{{.*}}, %[[DIM0]]
// CHECK: %[[DIM1:.*]] = memref.dim %[[BUF]], %{{.*}}
// CHECK: %[[N:.*]] = arith.muli %[[N0]], %[[DIM1]]
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[ELEMENTS:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[DTYPE:.*]] = arith.constant 0 : i32
// CHECK: call @mprt_observe(%{{.*}}, %{{.*}}, %[[ELEMENTS]], %[[DTYPE]]) : (i64, i64, i64, i32) -> ()
// CHECK: call @mprt_observe
// CHECK-NOT: mp.observe
// CHECK: return %[[X]]
func.func @probe(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = mp.observe %x as "fc1.input" : tensor<4x8xf32>
  %1 = mp.observe %0 as "fc1.input" : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// dtype codes of the other element types; i1 is widened to 8 bits (code 6).
// CHECK-LABEL: func.func @dtypes
// CHECK: arith.constant 1 : i32
// CHECK: arith.constant 2 : i32
// CHECK: arith.constant 3 : i32
// CHECK: arith.constant 4 : i32
// CHECK: arith.constant 5 : i32
// CHECK: arith.constant 7 : i32
// CHECK: arith.constant 6 : i32
// CHECK: linalg.generic
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: arith.constant 6 : i32
func.func @dtypes(%a: tensor<2xf16>, %b: tensor<2xbf16>, %c: tensor<2xf64>,
                  %d: tensor<2xi32>, %e: tensor<2xi64>, %f: tensor<2xi8>,
                  %g: tensor<2xui8>, %h: tensor<2xi1>) {
  %0 = mp.observe %a as "a" : tensor<2xf16>
  %1 = mp.observe %b as "b" : tensor<2xbf16>
  %2 = mp.observe %c as "c" : tensor<2xf64>
  %3 = mp.observe %d as "d" : tensor<2xi32>
  %4 = mp.observe %e as "e" : tensor<2xi64>
  %5 = mp.observe %f as "f" : tensor<2xi8>
  %6 = mp.observe %g as "g" : tensor<2xui8>
  %7 = mp.observe %h as "h" : tensor<2xi1>
  return
}

// -----

// Dynamic shapes: the element count multiplies the buffer's extents.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?x3xf32> to memref<?x3xf32>
// CHECK: memref.dim %[[BUF]], %{{.*}}
// CHECK: memref.dim %[[BUF]], %{{.*}}
// CHECK: call @mprt_observe
func.func @dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = mp.observe %x as "dyn" : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @unsupported(%x: tensor<4xi16>) {
  // expected-error @+1 {{probe 'narrow' observes elements of type 'i16', which the runtime cannot receive}}
  %0 = mp.observe %x as "narrow" : tensor<4xi16>
  return
}

// -----

// A probe in a nested module: its id global and the callee are symbols of
// that module, where its function can reach them (they used to go into the
// outer one, leaving a get_global of a symbol that is not there: invalid
// IR, found by the fuzzer).
// CHECK-LABEL: module @outer
// CHECK-NOT: __mp_probe_id
// CHECK: module @inner
// CHECK-DAG: memref.global "private" constant @[[ID:__mp_probe_id_[0-9]+]] : memref<6xi8>
// CHECK-DAG: func.func private @mprt_observe(i64, i64, i64, i32)
// CHECK: func.func @step
// CHECK: memref.get_global @[[ID]]
// CHECK: call @mprt_observe
module @outer {
  module @inner {
    func.func @step(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
      %0 = mp.observe %x as "whole" : tensor<8x8xf32>
      return %0 : tensor<8x8xf32>
    }
  }
}
