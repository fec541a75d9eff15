// An MLP after --mp-auto-mixed-precision (f16 and bf16) lowered for the GPU:
// both matrix products are host calls of mprt_cuda_gemm_sync (cuBLASLt)
// with the low-precision type code and f32 results; the kernels left are the
// casts, the fills and the bias (+ relu) epilogues, and none of them
// computes a product (no kernel reads a 16-bit operand or multiplies
// floats).
// RUN: mp-opt %s --mp-auto-mixed-precision=dtype=f16 --mp-lower-gpu \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,F16 \
// RUN:     --implicit-check-not=ld.global.b16 --implicit-check-not=mul.rn.f32 \
// RUN:     --implicit-check-not=fma.rn.f32 --implicit-check-not=mul.rn.f16 \
// RUN:     --implicit-check-not=fma.rn.f16
// RUN: mp-opt %s --mp-auto-mixed-precision=dtype=bf16 --mp-lower-gpu \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,BF16 \
// RUN:     --implicit-check-not=ld.global.b16 --implicit-check-not=mul.rn.f32 \
// RUN:     --implicit-check-not=fma.rn.f32 --implicit-check-not=mul.rn.bf16 \
// RUN:     --implicit-check-not=fma.rn.bf16

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Type codes: f16 1, bf16 2; flags: 0, or 2 for layer 2's transposed
// weight (PyTorch's nn.Linear layout, W2 is 10x32). Unbatched: a batch of 1
// with zero strides.
// CHECK-LABEL: llvm.func @mlp
// CHECK-DAG: %[[C8:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[C10:.*]] = llvm.mlir.constant(10 : i64) : i64
// CHECK-DAG: %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-DAG: %[[C64:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-DAG: %[[NONE:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// F16-DAG: %[[TYPE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-DAG: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// Casts of x, W1, W2; the fill of layer 1's accumulator.
// CHECK-COUNT-4: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// Layer 1: C (8x32) += x (8x64) W1 (64x32).
// F16: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C64]], %{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C32]], %[[C8]], %[[C32]], %[[C64]], %[[NONE]], %[[TYPE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// BF16: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C64]], %{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C32]], %[[C8]], %[[C32]], %[[C64]], %[[NONE]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// Bias + relu + cast to the low type; the fill of layer 2's accumulator.
// CHECK-COUNT-2: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// Layer 2: C (8x10) += h (8x32) W2^T, W2 stored 10x32.
// F16: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C10]], %[[C8]], %[[C10]], %[[C32]], %[[TWO]], %[[TYPE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// BF16: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C10]], %[[C8]], %[[C10]], %[[C32]], %[[TWO]], %[[TWO]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// The bias add, in f32 (the result leaves the function).
// CHECK: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: mprt_cuda_gemm_sync
// CHECK: llvm.return
// The seven kernels, in order.
// CHECK: .entry
// F16: cvt.rn.f16.f32
// BF16: cvt.rn.bf16.f32
// CHECK: .entry
// F16: cvt.rn.f16.f32
// BF16: cvt.rn.bf16.f32
// CHECK: .entry
// F16: cvt.rn.f16.f32
// BF16: cvt.rn.bf16.f32
// CHECK: .entry
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK: .entry
// CHECK: add.rn.f32
// CHECK: max.NaN.f32
// F16: cvt.rn.f16.f32
// BF16: cvt.rn.bf16.f32
// CHECK: .entry
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK: .entry
// CHECK: add.rn.f32
// CHECK-NOT: .entry
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>,
               %w2: tensor<10x32xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<8x64xf32>, tensor<64x32xf32>)
      outs(%acc1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm1, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x10xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %mm2 = linalg.matmul
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%h, %w2 : tensor<8x32xf32>, tensor<10x32xf32>)
      outs(%acc2 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %b2 : tensor<8x10xf32>, tensor<10xf32>) outs(%e2 : tensor<8x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
