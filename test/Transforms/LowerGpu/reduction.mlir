// Reductions over f16 input accumulate in f32 registers and memory. Long
// reductions are split (--mp-split-reductions): threads sum at most 32
// elements each into partials, which further kernels combine; the last
// step of a full reduction is a one-thread kernel.
// RUN: mp-opt %s --mp-lower-gpu="chip=sm_80 format=isa" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// 64 rows of 1024: the fill of the result, the fill of 64 x 32 partials,
// the partial sums (2048 threads, 32 elements each), their combination.
// CHECK-LABEL: llvm.func @row_sum
// CHECK: gpu.launch_func @row_sum_kernel::@row_sum_kernel
// CHECK: gpu.launch_func @row_sum_kernel_0::@row_sum_kernel
// CHECK: gpu.launch_func @row_sum_kernel_1::@row_sum_kernel
// CHECK: gpu.launch_func @row_sum_kernel_2::@row_sum_kernel
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @row_sum_kernel
// CHECK: .target sm_80
// CHECK: .entry row_sum_kernel(
// CHECK: .maxntid 64, 1, 1
// CHECK: st.global.b32 [{{%rd[0-9]+}}], 0;
// CHECK: gpu.binary @row_sum_kernel_1
// CHECK: .entry row_sum_kernel(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.b32 [[ACC:%r[0-9]+]]
// CHECK: $L__BB0_1:
// CHECK: ld.global.b16 [[X:%rs[0-9]+]]
// CHECK: cvt.f32.f16 [[XF:%r[0-9]+]], [[X]];
// CHECK: add.rn.f32 [[SUM:%r[0-9]+]], [[ACC]], [[XF]];
// CHECK: st.global.b32 [{{%rd[0-9]+}}], [[SUM]];
// The loop (unrolled by 4) runs the thread's 32 elements, 64 bytes apart.
// CHECK: setp.ne.b64 %p{{[0-9]+}}, %rd{{[0-9]+}}, 2048;
// CHECK: @%p{{[0-9]+}} bra $L__BB0_1;
// CHECK: gpu.binary @row_sum_kernel_2
// CHECK: .maxntid 64, 1, 1
// CHECK: add.rn.f32

// 65536 elements: three rounds of partials (2048, 64, 2), each with its
// fill, then one thread adds the last two into the result.
// CHECK-LABEL: llvm.func @total
// CHECK: gpu.launch_func @total_kernel::@total_kernel
// CHECK-SAME: blocks in ([[ONE:%[0-9]+]], [[ONE]], [[ONE]]) threads in ([[ONE]], [[ONE]], [[ONE]])
// CHECK-COUNT-6: gpu.launch_func
// CHECK: gpu.launch_func @total_kernel_9::@total_kernel
// CHECK-SAME: blocks in ([[ONE]], [[ONE]], [[ONE]]) threads in ([[ONE]], [[ONE]], [[ONE]])
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @total_kernel
// CHECK: .maxntid 1, 1, 1
// CHECK: gpu.binary @total_kernel_4
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.b16
// CHECK: cvt.f32.f16
// CHECK: add.rn.f32
// CHECK: gpu.binary @total_kernel_9
// CHECK: .maxntid 1, 1, 1
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
