// --mp-import refuses TOSA on quantized element types (TFLite int8 models
// give them), naming the op and the type, where upstream's tosa-to-linalg
// crashes (#24).
// RUN: mp-opt %s --mp-import -split-input-file -verify-diagnostics
// The AMP pipeline imports tosa first, and refuses the same way.
// RUN: mp-opt %s --mp-auto-mixed-precision -split-input-file -verify-diagnostics

func.func @matmul(%a: tensor<1x5x3x!quant.uniform<i8:f32, 0.5>>, %b: tensor<1x3x6x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x5x6xi32> {
  %zp = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  // expected-error @below {{'tosa.matmul' op on the quantized type '!quant.uniform<i8:f32, 5.000000e-01>': mp imports float and integer TOSA only}}
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x5x3x!quant.uniform<i8:f32, 0.5>>, tensor<1x3x6x!quant.uniform<i8:f32, 0.25>>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x5x6xi32>
  return %0 : tensor<1x5x6xi32>
}

// -----

// A quantized result is refused too (the first op that has one).
func.func @conv(%x: tensor<1x4x4x2xi8>, %w: tensor<3x1x1x2xi8>, %bias: tensor<3xi32>) -> tensor<1x4x4x3x!quant.uniform<i32:f32, 0.125>> {
  %zp = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  // expected-error @below {{'tosa.conv2d' op on the quantized type '!quant.uniform<i32:f32, 1.250000e-01>'}}
  %0 = tosa.conv2d %x, %w, %bias, %zp, %zp {acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xi8>, tensor<3x1x1x2xi8>, tensor<3xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x3x!quant.uniform<i32:f32, 0.125>>
  return %0 : tensor<1x4x4x3x!quant.uniform<i32:f32, 0.125>>
}
