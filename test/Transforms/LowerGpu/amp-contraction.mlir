// After --mp-auto-mixed-precision a layer's matmul reads f16 and accumulates in
// f32. By default --mp-lower-gpu hands it to cuBLASLt: a host call of
// mprt_cuda_gemm_sync between the kernels, and no kernel computes it. With
// runtime-contractions=false it becomes a loop kernel (one thread per output
// element, a serial f32 sum over k).
// RUN: mp-opt %s --mp-auto-mixed-precision --mp-lower-gpu \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=CALL \
// RUN:     --implicit-check-not=ld.global.b16 --implicit-check-not=mul.rn.f32 \
// RUN:     --implicit-check-not=fma.rn.f32
// RUN: mp-opt %s --mp-auto-mixed-precision \
// RUN:   --mp-lower-gpu=runtime-contractions=false \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

// Casts of x and W to f16 and the fill run before the product; the bias +
// relu after it. The call: C (8x32, f32) += x (8x16, f16) W (16x32, f16),
// no transposes (0), type f16 (1), one matrix.
// CALL-DAG: %[[C8:.*]] = llvm.mlir.constant(8 : i64) : i64
// CALL-DAG: %[[C16:.*]] = llvm.mlir.constant(16 : i64) : i64
// CALL-DAG: %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CALL-DAG: %[[FLAGS:.*]] = llvm.mlir.constant(0 : i32) : i32
// CALL-DAG: %[[F16:.*]] = llvm.mlir.constant(1 : i32) : i32
// CALL-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CALL-DAG: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CALL-COUNT-3: gpu.launch_func
// CALL-NOT: gpu.launch_func
// CALL: llvm.call @mprt_cuda_gemm_sync(%{{[0-9]+}}, %[[C16]], %{{[0-9]+}}, %[[C32]], %{{[0-9]+}}, %[[C32]], %[[C8]], %[[C32]], %[[C16]], %[[FLAGS]], %[[F16]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// CALL: gpu.launch_func
// CALL-NOT: gpu.launch_func
// CALL-NOT: mprt_cuda_gemm_sync
// Four kernels: two casts, the fill, the bias + relu. None reads f16 (the
// matmul kernel would) or multiplies (the implicit-check-nots).
// CALL: gpu.binary
// CALL: .entry
// CALL: cvt.rn.f16.f32
// CALL: .entry
// CALL: cvt.rn.f16.f32
// CALL: .entry
// CALL: st.global.b32 [{{%rd[0-9]+}}], 0;
// CALL: .entry
// CALL: add.rn.f32
// CALL: max.NaN.f32
// CALL-NOT: .entry

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Casts of x and W to f16, the fill, the matmul, the bias + relu.
// CHECK-COUNT-5: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK: .target sm_90
// CHECK: cvt.rn.f16.f32
// CHECK: st.global.b16
// CHECK: cvt.rn.f16.f32
// CHECK: st.global.b16
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// The matmul: f16 loads of both operands, f32 products and sums.
// CHECK: ld.global.b16 [[A:%rs[0-9]+]]
// CHECK: ld.global.b16 [[B:%rs[0-9]+]]
// CHECK-DAG: cvt.f32.f16 {{%r[0-9]+}}, [[A]];
// CHECK-DAG: cvt.f32.f16 {{%r[0-9]+}}, [[B]];
// CHECK: mul.rn.f32
// CHECK: add.rn.f32
// CHECK: st.global.b32
// The bias add + relu stays f32 (the result leaves the function).
// CHECK: .entry
// CHECK: add.rn.f32
// CHECK: max.NaN.f32
// CHECK-NOT: .entry
func.func @layer(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}
