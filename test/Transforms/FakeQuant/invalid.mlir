// RUN: mp-opt %s --split-input-file --mp-fake-quant --verify-diagnostics

// expected-error @+1 {{mp-fake-quant: no function marked 'mp.loss' to train with fake quantization}}
module {
  func.func @predict(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}

// -----

// expected-error @+1 {{mp-fake-quant: no linalg.matmul, linalg.batch_matmul or linalg.conv_2d_nchw_fchw on f32 with an mp.param weight and a zero-filled accumulator to fake-quantize}}
func.func @loss(%x: tensor<4xf32>, %w: tensor<4xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %i0 = arith.constant 0 : index
  %a = tensor.extract %w[%i0] : tensor<4xf32>
  return %a : f32
}
