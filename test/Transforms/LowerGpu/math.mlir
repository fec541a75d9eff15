// REQUIRES: libdevice
// math ops become libdevice calls that gpu-module-to-binary links from the
// CUDA toolkit and inlines: no call is left in the PTX.
// RUN: mp-opt %s --mp-lower-gpu | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// CHECK: .entry e_kernel(
// CHECK-NOT: call
// CHECK: ex2.approx.ftz.f32
// CHECK-NOT: call
// CHECK: ret;
func.func @e(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = tensor.empty() : tensor<1000xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    %t = math.tanh %m : f32
    linalg.yield %t : f32
  } -> tensor<1000xf32>
  return %0 : tensor<1000xf32>
}
