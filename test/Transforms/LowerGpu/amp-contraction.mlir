// After --auto-mixed-precision a layer's matmul reads f16 and accumulates in
// f32. Contractions are not yet handed to cuBLASLt: each becomes a loop
// kernel (one thread per output element, a serial f32 sum over k).
// RUN: mp-opt %s --auto-mixed-precision --mp-lower-gpu \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

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
