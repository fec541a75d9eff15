// Stride-2 pooling and convolution through the whole CPU lowering
// (--mp-lower-cpu, vectorization on) give exact results. Upstream's
// affine-super-vectorize reads consecutive elements for x[2 * ow + kw]
// (llvm/llvm-project#177756); mp-vectorize-loops leaves those loops scalar.
// x[h, w] = 64 * h + w on a 1x1x4x64 NCHW image.
// RUN: mp-opt %s --mp-lower-cpu | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// 2x2 max pool, stride 2: out[oh, ow] = 64 * (2 * oh + 1) + 2 * ow + 1.
// CHECK: sizes = [1, 1, 2, 32]
// CHECK-NEXT: 65, 67, 69, 71, 73, 75, 77, 79, 81, 83, 85, 87, 89, 91, 93, 95, 97, 99, 101, 103, 105, 107, 109, 111, 113, 115, 117, 119, 121, 123, 125, 127
// CHECK-NEXT: 193, 195, 197, 199, 201, 203, 205, 207, 209, 211, 213, 215, 217, 219, 221, 223, 225, 227, 229, 231, 233, 235, 237, 239, 241, 243, 245, 247, 249, 251, 253, 255
// 1x1 convolution with weight 1, stride 2: out[oh, ow] = 128 * oh + 2 * ow.
// CHECK: sizes = [1, 1, 2, 32]
// CHECK-NEXT: 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62
// CHECK-NEXT: 128, 130, 132, 134, 136, 138, 140, 142, 144, 146, 148, 150, 152, 154, 156, 158, 160, 162, 164, 166, 168, 170, 172, 174, 176, 178, 180, 182, 184, 186, 188, 190

func.func private @printMemrefF32(memref<*xf32>)

func.func @print(%t: tensor<1x1x2x32xf32>) {
  %m = bufferization.to_buffer %t : tensor<1x1x2x32xf32> to memref<1x1x2x32xf32>
  %u = memref.cast %m : memref<1x1x2x32xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %e = tensor.empty() : tensor<1x1x4x64xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%e : tensor<1x1x4x64xf32>) {
  ^bb0(%o: f32):
    %h = linalg.index 2 : index
    %w = linalg.index 3 : index
    %c64 = arith.constant 64 : index
    %row = arith.muli %h, %c64 : index
    %lin = arith.addi %row, %w : index
    %i = arith.index_cast %lin : index to i32
    %f = arith.sitofp %i : i32 to f32
    linalg.yield %f : f32
  } -> tensor<1x1x4x64xf32>

  %lowest = arith.constant -3.0e+38 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %window = tensor.empty() : tensor<2x2xf32>
  %init = tensor.empty() : tensor<1x1x2x32xf32>
  %lows = linalg.fill ins(%lowest : f32) outs(%init : tensor<1x1x2x32xf32>) -> tensor<1x1x2x32xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %window : tensor<1x1x4x64xf32>, tensor<2x2xf32>)
      outs(%lows : tensor<1x1x2x32xf32>) -> tensor<1x1x2x32xf32>
  call @print(%pool) : (tensor<1x1x2x32xf32>) -> ()

  %w0 = tensor.empty() : tensor<1x1x1x1xf32>
  %weight = linalg.fill ins(%one : f32) outs(%w0 : tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%init : tensor<1x1x2x32xf32>) -> tensor<1x1x2x32xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %weight : tensor<1x1x4x64xf32>, tensor<1x1x1x1xf32>)
      outs(%zeros : tensor<1x1x2x32xf32>) -> tensor<1x1x2x32xf32>
  call @print(%conv) : (tensor<1x1x2x32xf32>) -> ()
  return
}
