// The kernel of CudaRuntimeTest's launch test. Regenerate the PTX with
//   build/bin/mp-opt bias_relu_f16.mlir --mp-lower-gpu="chip=sm_80" \
//     | runtime/cuda/unittests/Inputs/extract-ptx.py > bias_relu_f16.ptx
// (sm_80 PTX loads on sm_80 and every later GPU through the driver's JIT).
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @bias_relu_f16(%x: tensor<64x128xf16>, %b: tensor<128xf32>) -> tensor<64x128xf16> {
  %zero = arith.constant 0.0 : f32
  %eh = tensor.empty() : tensor<64x128xf16>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<64x128xf16>, tensor<128xf32>) outs(%eh : tensor<64x128xf16>) {
  ^bb0(%a: f16, %c: f32, %o: f16):
    %ae = arith.extf %a : f16 to f32
    %s = arith.addf %ae, %c : f32
    %r = arith.maximumf %s, %zero : f32
    %t = arith.truncf %r : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64x128xf16>
  return %0 : tensor<64x128xf16>
}
