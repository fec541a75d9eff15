// Reductions over f16 input accumulate in f32 registers and memory: each
// thread owns one output row; a full reduction is a one-thread kernel.
// RUN: mp-opt %s --mp-lower-gpu="chip=sm_80 format=isa" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Two kernels each: the fill of the accumulator, then the reduction.
// CHECK-LABEL: llvm.func @row_sum
// CHECK: gpu.launch_func @row_sum_kernel::@row_sum_kernel
// CHECK: gpu.launch_func @row_sum_kernel_0::@row_sum_kernel
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @row_sum_kernel
// CHECK: .target sm_80
// CHECK: .entry row_sum_kernel(
// CHECK: .maxntid 64, 1, 1
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK: gpu.binary @row_sum_kernel_0
// CHECK: .entry row_sum_kernel(
// CHECK: .maxntid 64, 1, 1
// CHECK: ld.global.b32 [[ACC:%r[0-9]+]]
// CHECK: $L__BB0_1:
// CHECK: ld.global.b16 [[X:%rs[0-9]+]]
// CHECK: cvt.f32.f16 [[XF:%r[0-9]+]], [[X]];
// CHECK: add.rn.f32 [[SUM:%r[0-9]+]], [[ACC]], [[XF]];
// CHECK: st.global.b32 [{{%rd[0-9]+}}], [[SUM]];
// CHECK: @%p{{[0-9]+}} bra $L__BB0_1;

// CHECK-LABEL: llvm.func @total
// CHECK: gpu.launch_func @total_kernel::@total_kernel
// CHECK-SAME: blocks in ([[ONE:%[0-9]+]], [[ONE]], [[ONE]]) threads in ([[ONE]], [[ONE]], [[ONE]])
// CHECK: gpu.launch_func @total_kernel_1::@total_kernel
// CHECK-SAME: blocks in ([[ONE]], [[ONE]], [[ONE]]) threads in ([[ONE]], [[ONE]], [[ONE]])
// CHECK: gpu.binary @total_kernel
// CHECK: .maxntid 1, 1, 1
// CHECK: gpu.binary @total_kernel_1
// CHECK: .maxntid 1, 1, 1
// CHECK: cvt.f32.f16
// CHECK: add.rn.f32
// CHECK-NOT: gpu.binary
func.func @row_sum(%x: tensor<64x1024xf16>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x1024xf16>) outs(%acc : tensor<64xf32>) {
  ^bb0(%a: f16, %o: f32):
    %ae = arith.extf %a : f16 to f32
    %s = arith.addf %o, %ae : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

func.func @total(%x: tensor<64x1024xf16>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %0 = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<64x1024xf16>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f16, %o: f32):
    %ae = arith.extf %a : f16 to f32
    %s = arith.addf %o, %ae : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %0 : tensor<f32>
}
