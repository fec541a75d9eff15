// --mp-lower-gpu hands matrix products to cuBLASLt: autodiff's gradient
// generics (transposed operands), batched products (linalg.batch_matmul and
// generics with a leading batch loop) and --mp-quantize's i8 x i8 -> i32
// become host calls of mprt_cuda_gemm_sync; what cuBLASLt does not take (an
// f16 accumulator) stays a loop kernel.
// RUN: mp-opt %s --split-input-file --mp-lower-gpu \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

// The two gradient products of a bf16 layer (from --mp-train-pipeline):
// dH (4x5) += dC (4x3) W2^T (W2 5x3: flags 2) and dW2 (5x3) += H^T dC
// (H 4x5: flags 1); type bf16 (2). Only the two fills are kernels.
// CHECK-LABEL: llvm.func @gradients
// CHECK-DAG: %[[C3:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-DAG: %[[C4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-DAG: %[[C5:.*]] = llvm.mlir.constant(5 : i64) : i64
// CHECK-DAG: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG: %[[TRANSA:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-DAG: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: gpu.launch_func
// CHECK: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C3]], %{{[0-9]+}}, %[[C3]], %{{[0-9]+}}, %[[C5]], %[[C4]], %[[C5]], %[[C3]], %[[TWO]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// CHECK: gpu.launch_func
// CHECK: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C5]], %{{[0-9]+}}, %[[C3]], %{{[0-9]+}}, %[[C3]], %[[C5]], %[[C3]], %[[C4]], %[[TRANSA]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary
// CHECK: .entry
// CHECK-NOT: ld.global
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK: .entry
// CHECK-NOT: ld.global
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK-NOT: ld.global
// CHECK-NOT: .entry
func.func @gradients(%w2: tensor<5x3xbf16>, %dc: tensor<4x3xbf16>, %h: tensor<4x5xbf16>)
    -> (tensor<4x5xf32>, tensor<5x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x5xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %dh = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>,
                                         affine_map<(d0, d1, d2) -> (d0, d1)>,
                                         affine_map<(d0, d1, d2) -> (d0, d2)>],
                        iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w2, %dc : tensor<5x3xbf16>, tensor<4x3xbf16>) outs(%z1 : tensor<4x5xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %yw, %xw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %e2 = tensor.empty() : tensor<5x3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %dw = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                         affine_map<(d0, d1, d2) -> (d0, d1)>,
                                         affine_map<(d0, d1, d2) -> (d2, d1)>],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h, %dc : tensor<4x5xbf16>, tensor<4x3xbf16>) outs(%z2 : tensor<5x3xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %xw, %yw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x3xf32>
  return %dh, %dw : tensor<4x5xf32>, tensor<5x3xf32>
}

// -----

// Attention in f16 with f32 scores: S = Q K^T as a generic with a leading
// batch loop (K transposed: flags 2), then O = P V as linalg.batch_matmul;
// each is one strided-batched call: batch 2, strides of 8x16 (128) and 8x8
// (64) matrices. Kernels: the fills and the f32 -> f16 cast of S.
// CHECK-LABEL: llvm.func @attention
// CHECK-DAG: %[[C2:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-DAG: %[[C8:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[C16:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-DAG: %[[C64:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-DAG: %[[C128:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-DAG: %[[NONE:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG: %[[F16:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG: %[[TRANSB:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: gpu.launch_func
// CHECK: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C16]], %{{[0-9]+}}, %[[C16]], %{{[0-9]+}}, %[[C8]], %[[C8]], %[[C8]], %[[C16]], %[[TRANSB]], %[[F16]], %[[C2]], %[[C128]], %[[C128]], %[[C64]])
// CHECK-COUNT-2: gpu.launch_func
// CHECK: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C8]], %{{[0-9]+}}, %[[C16]], %{{[0-9]+}}, %[[C16]], %[[C8]], %[[C16]], %[[C8]], %[[NONE]], %[[F16]], %[[C2]], %[[C64]], %[[C128]], %[[C128]])
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary
// CHECK: .entry
// CHECK-NOT: ld.global.b16
// CHECK: .entry
// CHECK-NOT: ld.global.b16
// CHECK: .entry
// CHECK-NOT: ld.global.b16
// CHECK: cvt.rn.f16.f32
// CHECK-NOT: ld.global.b16
// CHECK-NOT: .entry
func.func @attention(%q: tensor<2x8x16xf16>, %k: tensor<2x8x16xf16>, %v: tensor<2x8x16xf16>)
    -> (tensor<2x8x8xf32>, tensor<2x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x8x8xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, i, j, r) -> (b, i, r)>,
                                        affine_map<(b, i, j, r) -> (b, j, r)>,
                                        affine_map<(b, i, j, r) -> (b, i, j)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x8x16xf16>, tensor<2x8x16xf16>) outs(%z1 : tensor<2x8x8xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xw = arith.extf %x : f16 to f32
    %yw = arith.extf %y : f16 to f32
    %p = arith.mulf %xw, %yw : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x8x8xf32>
  %e2 = tensor.empty() : tensor<2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %eh = tensor.empty() : tensor<2x8x8xf16>
  %p16 = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>,
                                          affine_map<(b, i, j) -> (b, i, j)>],
                         iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%eh : tensor<2x8x8xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<2x8x8xf16>
  %o = linalg.batch_matmul ins(%p16, %v : tensor<2x8x8xf16>, tensor<2x8x16xf16>)
      outs(%z2 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s, %o : tensor<2x8x8xf32>, tensor<2x8x16xf32>
}

// -----

// The int8 product of --mp-quantize: type s8 (3) into i32.
// CHECK-LABEL: llvm.func @int8
// CHECK-DAG: %[[C16:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-DAG: %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-DAG: %[[C64:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-DAG: %[[NONE:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG: %[[S8:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: gpu.launch_func
// CHECK: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C64]], %{{[0-9]+}}, %[[C64]], %[[C16]], %[[C64]], %[[C32]], %[[NONE]], %[[S8]],
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary
// CHECK: .entry
// CHECK-NOT: ld.global
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK-NOT: ld.global
// CHECK-NOT: .entry
func.func @int8(%a: tensor<16x32xi8>, %b: tensor<32x64xi8>) -> tensor<16x64xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<16x64xi32>
  %z = linalg.fill ins(%zero : i32) outs(%e : tensor<16x64xi32>) -> tensor<16x64xi32>
  %c = linalg.matmul ins(%a, %b : tensor<16x32xi8>, tensor<32x64xi8>)
      outs(%z : tensor<16x64xi32>) -> tensor<16x64xi32>
  return %c : tensor<16x64xi32>
}

// -----

// An f16 accumulator is not a product the runtime takes: a loop kernel with
// f16 multiplies, and no call.
// CHECK-LABEL: llvm.func @f16_accumulator
// CHECK-NOT: mprt_cuda_gemm_sync
// CHECK: gpu.launch_func
// CHECK: gpu.binary
// CHECK: mul.rn.f16
func.func @f16_accumulator(%a: tensor<4x6xf16>, %b: tensor<6x3xf16>, %c: tensor<4x3xf16>)
    -> tensor<4x3xf16> {
  %r = linalg.matmul ins(%a, %b : tensor<4x6xf16>, tensor<6x3xf16>)
      outs(%c : tensor<4x3xf16>) -> tensor<4x3xf16>
  return %r : tensor<4x3xf16>
}
