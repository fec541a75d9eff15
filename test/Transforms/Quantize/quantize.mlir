// RUN: mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json" | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json per-channel=false" | FileCheck %s --check-prefix=TENSOR
// RUN: mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json hoist-weights=false" | FileCheck %s --check-prefix=INLINE
// RUN: mp-opt %s --split-input-file --mp-quantize="calibration=%S/Inputs/stats.json" --mp-lower-cpu="runtime-contractions=1 vectorize=0" | FileCheck %s --check-prefix=LOWERED

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A layer: matmul, bias, relu. The activation (max |x| = 4, minmax) is
// scaled by 127/4 = 31.75 and rounded to i8; the weight, an argument, is
// quantized once by @layer_quantize_weights (per column) and arrives as i8
// weights + scales; the bias becomes the i32 accumulator's start; the
// consumer dequantizes (sitofp, times s_x * s_w) in its body, so the f32
// bias add is gone.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<16xf32> {mp.param = "b"}, %[[WQ:[^:]*]]: tensor<8x16xi8> {mp.qweight = "w"}, %[[WS:[^:]*]]: tensor<16xf32> {mp.qscale = "w"})
// CHECK-SAME: attributes {mp.quantize_weights = @layer_quantize_weights}
// CHECK: %[[INV:.*]] = arith.constant 3.175000e+01 : f32
// CHECK: %[[XQ:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>)
// CHECK: arith.mulf %{{.*}}, %[[INV]]
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[WS]] : tensor<16xf32>)
// CHECK: %[[BQ:.*]] = linalg.generic {{.*}} ins(%[[B]], %[[SCALE]] : tensor<16xf32>, tensor<16xf32>)
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[BQ]] : tensor<16xi32>) outs(%{{.*}} : tensor<4x16xi32>)
// CHECK: %[[ACC:.*]] = linalg.matmul ins(%[[XQ]], %[[WQ]] : tensor<4x8xi8>, tensor<8x16xi8>) outs(%[[INIT]] : tensor<4x16xi32>) -> tensor<4x16xi32>
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[B]], %[[SCALE]] : tensor<4x16xi32>, tensor<16xf32>, tensor<16xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: i32, %{{.*}}: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[A]] : i32 to f32
// CHECK-NEXT: %[[D:.*]] = arith.mulf %[[F]], %[[S]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.maximumf %[[D]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: func.func @layer_quantize_weights(%{{.*}}: tensor<8x16xf32> {mp.param = "w"}) -> (tensor<8x16xi8> {mp.qweight = "w"}, tensor<16xf32> {mp.qscale = "w"})
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: arith.divf
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// TENSOR-LABEL: func.func @layer_quantize_weights
// TENSOR: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["reduction", "reduction"]}
// INLINE-LABEL: func.func @layer
// INLINE-SAME: %{{.*}}: tensor<8x16xf32> {mp.param = "w"}
// INLINE: math.absf
// INLINE: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xi8>, tensor<8x16xi8>)
// INLINE-NOT: quantize_weights
// The i8 product runs on the runtime, with its bias and dequantization
// (mprt_gemm_s8_dequantize).
// LOWERED-LABEL: llvm.func @layer(
// LOWERED: llvm.call @mprt_gemm_s8_dequantize(
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x16xf32> {mp.param = "w"},
                 %b: tensor<16xf32> {mp.param = "b"}) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

// A result with no fusable consumer is dequantized by its own generic.
// CHECK-LABEL: func.func @separate
// CHECK: %[[ACC:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x3xi8>, tensor<3x4xi8>) outs(%{{.*}} : tensor<2x4xi32>)
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} : tensor<2x4xi32>, tensor<4xf32>)
// CHECK: arith.sitofp
// CHECK: arith.mulf
// CHECK: return %[[D]] : tensor<2x4xf32>
func.func @separate(%x: tensor<2x3xf32>, %w: tensor<3x4xf32> {mp.param = "w"}) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %mm : tensor<2x4xf32>
}

// -----

// Constant weights are quantized at compile time: per column, scales
// max|w| / 127 (1/127 and 2/127), so 0.5 -> 63.5 -> 64 (ties to even) and
// 1 -> 63.5 -> 64 in the second column. Per tensor, one scale 2/127.
// CHECK-LABEL: func.func @constant
// CHECK-DAG: arith.constant dense<{{\[}}[127, -127], [64, 64]]> : tensor<2x2xi8>
// CHECK-DAG: arith.constant dense<[0.00787401571, 0.0157480314]> : tensor<2xf32>
// TENSOR-LABEL: func.func @constant
// TENSOR: arith.constant dense<{{\[}}[64, -127], [32, 64]]> : tensor<2x2xi8>
func.func @constant(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = arith.constant dense<[[1.0, -2.0], [0.5, 1.0]]> : tensor<2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x2xf32>, tensor<2x2xf32>) outs(%z : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %mm : tensor<2x2xf32>
}

// -----

// Convolutions (NCHW, FCHW): per output channel F, the kernel's first
// dimension; the product is an i8 convolution into i32.
// CHECK-LABEL: func.func @conv
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x1x4x4xi8>, tensor<2x1x3x3xi8>) outs(%{{.*}} : tensor<1x2x2x2xi32>)
// CHECK: func.func @conv_quantize_weights
// CHECK: iterator_types = ["parallel", "reduction", "reduction", "reduction"]
func.func @conv(%img: tensor<1x1x4x4xf32>, %k: tensor<2x1x3x3xf32> {mp.param = "k"}) -> tensor<1x2x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%img, %k : tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) outs(%z : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %c : tensor<1x2x2x2xf32>
}

// -----

// Eligible ops the int8 rewrite does not handle stay f32 (reported, not an
// error): batch matmuls, and products accumulating into a non-zero value.
// CHECK-LABEL: func.func @skipped
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x2x3xf32>, tensor<1x3x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3x4xf32>)
func.func @skipped(%a: tensor<1x2x3xf32>, %b: tensor<1x3x4xf32>, %x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %acc: tensor<2x4xf32>) -> (tensor<1x2x4xf32>, tensor<2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %bm = linalg.batch_matmul ins(%a, %b : tensor<1x2x3xf32>, tensor<1x3x4xf32>) outs(%z : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %bm, %mm : tensor<1x2x4xf32>, tensor<2x4xf32>
}

// -----

// Two matmuls reading one weight along the same channel dimension share one
// hoisted int8 copy.
// CHECK-LABEL: func.func @shared_weight
// CHECK-SAME: %{{.*}}: tensor<3x3xi8> {mp.qweight = "w"}, %{{.*}}: tensor<3xf32> {mp.qscale = "w"})
// CHECK: func.func @shared_weight_quantize_weights(%{{.*}}: tensor<3x3xf32> {mp.param = "w"}) -> (tensor<3x3xi8> {mp.qweight = "w"}, tensor<3xf32> {mp.qscale = "w"})
func.func @shared_weight(%x: tensor<2x3xf32>, %w: tensor<3x3xf32> {mp.param = "w"}) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = linalg.matmul ins(%a, %w : tensor<2x3xf32>, tensor<3x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// -----

// A constant activation has no calibration id: the op stays f32 (reported).
// CHECK-LABEL: func.func @constant_input
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<2x2xf32>)
func.func @constant_input(%w: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %x = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x2xf32>, tensor<2x2xf32>) outs(%z : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %mm : tensor<2x2xf32>
}
