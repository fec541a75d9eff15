// A bias add + relu + truncf chain becomes one kernel; the PTX loads and
// stores 16-bit values and computes in f32 between the conversions.
// RUN: mp-opt %s --split-input-file --mp-lower-gpu="chip=sm_90 format=isa" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// One launch on the host, one gpu.binary with one entry: the chain fused.
// CHECK-LABEL: llvm.func @bias_relu_f16
// CHECK: gpu.launch_func @bias_relu_f16_kernel::@bias_relu_f16_kernel
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @bias_relu_f16_kernel
// CHECK-SAME: #nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK: .target sm_90
// CHECK: .entry bias_relu_f16_kernel(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.b16 [[X:%rs[0-9]+]]
// CHECK: ld.global.b32 [[B:%r[0-9]+]]
// CHECK: cvt.f32.f16 [[XF:%r[0-9]+]], [[X]];
// CHECK: add.rn.f32 [[S:%r[0-9]+]], [[B]], [[XF]];
// CHECK: max.NaN.f32 [[R:%r[0-9]+]], [[S]], 0f00000000;
// CHECK: cvt.rn.f16.f32 [[H:%rs[0-9]+]], [[R]];
// CHECK: st.global.b16 [{{%rd[0-9]+}}], [[H]];
// CHECK-NOT: .entry
// CHECK-NOT: gpu.binary
func.func @bias_relu_f16(%x: tensor<64x128xf16>, %b: tensor<128xf32>) -> tensor<64x128xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<64x128xf16>, tensor<128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%a: f16, %c: f32, %o: f32):
    %ae = arith.extf %a : f16 to f32
    %s = arith.addf %ae, %c : f32
    linalg.yield %s : f32
  } -> tensor<64x128xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %eh = tensor.empty() : tensor<64x128xf16>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1 : tensor<64x128xf32>) outs(%eh : tensor<64x128xf16>) {
  ^bb0(%a: f32, %o: f16):
    %t = arith.truncf %a : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64x128xf16>
  return %2 : tensor<64x128xf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// bf16 uses sm_90's native conversions; a nest of 100 elements gets one
// block of 100 threads (the block shrinks to the trip count).
// CHECK-LABEL: llvm.func @bias_relu_bf16
// CHECK: gpu.launch_func @bias_relu_bf16_kernel::@bias_relu_bf16_kernel
// CHECK-NOT: gpu.launch_func
// CHECK: .entry bias_relu_bf16_kernel(
// CHECK: .maxntid 100, 1, 1
// CHECK: ld.global.b16 [[X:%rs[0-9]+]]
// CHECK: cvt.f32.bf16 [[XF:%r[0-9]+]], [[X]];
// CHECK: add.rn.f32
// CHECK: max.NaN.f32 [[R:%r[0-9]+]]
// CHECK: cvt.rn.bf16.f32 [[H:%rs[0-9]+]], [[R]];
// CHECK: st.global.b16 [{{%rd[0-9]+}}], [[H]];
// CHECK-NOT: .entry
func.func @bias_relu_bf16(%x: tensor<4x25xbf16>, %b: tensor<25xf32>) -> tensor<4x25xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x25xf32>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x25xbf16>, tensor<25xf32>) outs(%e : tensor<4x25xf32>) {
  ^bb0(%a: bf16, %c: f32, %o: f32):
    %ae = arith.extf %a : bf16 to f32
    %s = arith.addf %ae, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x25xf32>
  %eh = tensor.empty() : tensor<4x25xbf16>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x25xf32>) outs(%eh : tensor<4x25xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.maximumf %a, %zero : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x25xbf16>
  return %1 : tensor<4x25xbf16>
}
