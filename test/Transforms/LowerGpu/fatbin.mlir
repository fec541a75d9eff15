// REQUIRES: ptxas
// format=fatbin assembles the kernels with ptxas into a CUDA fat binary;
// the PTX of format=isa is valid input for ptxas on both chips.
// RUN: mp-opt %s --mp-lower-gpu="chip=sm_90 format=fatbin" | FileCheck %s
// RUN: mp-opt %s --mp-lower-gpu="chip=sm_90 format=isa" \
// RUN:   | grep -o 'assembly = "[^"]*"' | sed -e 's/^assembly = "//' -e 's/"$//' \
// RUN:     -e 's/\\0A/\n/g' -e 's/\\09/ /g' > %t.sm90.ptx
// RUN: %ptxas -arch=sm_90 %t.sm90.ptx -o %t.sm90.cubin
// RUN: mp-opt %s --mp-lower-gpu="chip=sm_80 format=isa" \
// RUN:   | grep -o 'assembly = "[^"]*"' | sed -e 's/^assembly = "//' -e 's/"$//' \
// RUN:     -e 's/\\0A/\n/g' -e 's/\\09/ /g' > %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 %t.sm80.ptx -o %t.sm80.cubin

// The object holds a binary, not PTX text.
// CHECK: gpu.binary @scale_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-SAME: properties = {ISAToBinaryTimeInMs
// CHECK-SAME: LLVMIRToISATimeInMs = {{[0-9]+}} : i64}, "
// CHECK-NOT: assembly =
func.func @scale(%x: tensor<1000xf16>) -> tensor<1000xf16> {
  %e = tensor.empty() : tensor<1000xf16>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<1000xf16>) outs(%e : tensor<1000xf16>) {
  ^bb0(%a: f16, %o: f16):
    %f = arith.extf %a : f16 to f32
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %f, %two : f32
    %t = arith.truncf %m : f32 to f16
    linalg.yield %t : f16
  } -> tensor<1000xf16>
  return %0 : tensor<1000xf16>
}
