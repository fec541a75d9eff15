// Runs matrix products lowered by --mp-lower-gpu on the GPU: host calls of
// mprt_cuda_gemm_sync (cuBLASLt) between kernels, for an f16 layer (fill,
// product, bias + relu kernel), bf16 attention scores Q K^T batched over 2
// heads, and an i8 x i8 -> i32 product. The expected numbers are those of
// the CPU lowering's loops (--mp-lower-cpu) on the same input. The buffers
// are still host memory (docs/gpu.md, "Memory"), so the device must read
// pageable host memory.
// REQUIRES: mprt-cuda, cuda-device, cuda-pageable-memory
// One entry per product: the GPU lowering rejects a @main that frees
// several callee results (their ownership flags are host element reads).
// RUN: mp-opt %s --mp-lower-gpu > %t.gpu.mlir
// RUN: mlir-runner %t.gpu.mlir -e main_layer -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s --check-prefix=LAYER
// RUN: mlir-runner %t.gpu.mlir -e main_scores -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s --check-prefix=SCORES
// RUN: mlir-runner %t.gpu.mlir -e main_int8 -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%mprt_cuda 2>&1 \
// RUN: | FileCheck %s --check-prefix=INT8
// The same numbers from the CPU lowering's loops:
// RUN: mp-opt %s --mp-lower-cpu > %t.cpu.mlir
// RUN: mlir-runner %t.cpu.mlir -e main_layer -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=LAYER
// RUN: mlir-runner %t.cpu.mlir -e main_scores -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=SCORES
// RUN: mlir-runner %t.cpu.mlir -e main_int8 -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=INT8

// LAYER-NOT: mprt-cuda: error
// SCORES-NOT: mprt-cuda: error
// INT8-NOT: mprt-cuda: error
// LAYER: sizes = [4, 4]
// LAYER-NEXT: {{\[\[}}5.5,   0,   4,   0],
// LAYER-NEXT: [4,   0,   2.25,   6.375],
// LAYER-NEXT: [0,   0,   0,   8.25],
// LAYER-NEXT: [8.5,   2,   3.5,   9.5]]
// SCORES: sizes = [2, 4, 4]
// SCORES-NEXT: {{\[\[}}[4,    1,    0,    1],
// SCORES-NEXT: [4,    1.5,    2,    1],
// SCORES-NEXT: [10,    1,    6,    2.5],
// SCORES-NEXT: [0,    1,    4,    0]],
// SCORES-NEXT: {{\[\[}}2,    -2,    1,    0],
// SCORES-NEXT: [4,    -2,    0,    0],
// SCORES-NEXT: [36,    -8,    2,    1],
// SCORES-NEXT: [64,    -8,    0,    8]]]
// INT8: sizes = [16, 16]
// INT8-NEXT: {{\[\[}}-24,   -29,   -21,   65,   -31,   68,   24,   -46,   -90,   -43,   82,   64,   -19,   -24,   -29,   -21],
// INT8-NEXT: [31,   -33,   59,   8,   35,   -3,   37,   -131,   -52,   79,   67,   -49,   -48,   31,   -33,   59],
// INT8-NEXT: [-33,   31,   -48,   -49,   67,   79,   -52,   -131,   37,   -3,   35,   8,   59,   -33,   31,   -48],
// INT8-NEXT: [-29,   -24,   -19,   64,   82,   -43,   -90,   -46,   24,   68,   -31,   65,   -21,   -29,   -24,   -19],
// INT8-NEXT: [43,   -11,   78,   24,   -56,   -97,   -60,   107,   79,   -14,   -29,   -31,   -33,   43,   -11,   78],
// INT8-NEXT: [-38,   70,   22,   52,   -126,   -83,   38,   107,   -19,   -28,   41,   -59,   23,   -38,   70,   22],
// INT8-NEXT: [-17,   32,   68,   -39,   -94,   33,   17,   -12,   -15,   60,   -8,   15,   -40,   -17,   32,   68],
// INT8-NEXT: [72,   62,   -39,   -62,   6,   -4,   64,   -63,   57,   -5,   11,   -64,   -35,   72,   62,   -39],
// INT8-NEXT: [42,   -61,   -112,   -85,   72,   112,   9,   -29,   -41,   -53,   13,   27,   106,   42,   -61,   -112],
// INT8-NEXT: [46,   -116,   -83,   28,   87,   -10,   -29,   56,   -54,   18,   -53,   84,   26,   46,   -116,   -83],
// INT8-NEXT: [-69,   -69,   48,   22,   -17,   -30,   35,   22,   35,   -30,   -17,   22,   48,   -69,   -69,   48],
// INT8-NEXT: [-116,   46,   26,   84,   -53,   18,   -54,   56,   -29,   -10,   87,   28,   -83,   -116,   46,   26],
// INT8-NEXT: [-61,   42,   106,   27,   13,   -53,   -41,   -29,   9,   112,   72,   -85,   -112,   -61,   42,   106],
// INT8-NEXT: [62,   72,   -35,   -64,   11,   -5,   57,   -63,   64,   -4,   6,   -62,   -39,   62,   72,   -35],
// INT8-NEXT: [32,   -17,   -40,   15,   -8,   60,   -15,   -12,   17,   33,   -94,   -39,   68,   32,   -17,   -40],
// INT8-NEXT: [70,   -38,   23,   -59,   41,   -28,   -19,   107,   38,   -83,   -126,   52,   22,   70,   -38,   23]]
// LAYER-NOT: mprt-cuda: error
// SCORES-NOT: mprt-cuda: error
// INT8-NOT: mprt-cuda: error

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI32(tensor<*xi32>)

func.func @layer(%x: tensor<4x8xf16>, %w: tensor<8x4xf16>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.matmul ins(%x, %w : tensor<4x8xf16>, tensor<8x4xf16>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : tensor<4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

func.func @scores(%q: tensor<2x4x8xbf16>, %k: tensor<2x4x8xbf16>) -> tensor<2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, i, j, r) -> (b, i, r)>, affine_map<(b, i, j, r) -> (b, j, r)>, affine_map<(b, i, j, r) -> (b, i, j)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) outs(%z : tensor<2x4x4xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xw = arith.extf %x : bf16 to f32
    %yw = arith.extf %y : bf16 to f32
    %p = arith.mulf %xw, %yw : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}

func.func @int8(%a: tensor<16x16xi8>, %b: tensor<16x16xi8>) -> tensor<16x16xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<16x16xi32>
  %z = linalg.fill ins(%zero : i32) outs(%e : tensor<16x16xi32>) -> tensor<16x16xi32>
  %c = linalg.matmul ins(%a, %b : tensor<16x16xi8>, tensor<16x16xi8>) outs(%z : tensor<16x16xi32>) -> tensor<16x16xi32>
  return %c : tensor<16x16xi32>
}

func.func @main_layer() {
  %x = arith.constant dense<[[1.0, 2.0, 0.5, -1.0, 0.0, 3.0, 1.5, -2.0],
                             [0.25, -0.5, 1.0, 2.0, -1.0, 0.0, 4.0, 1.0],
                             [-1.0, -2.0, -3.0, -4.0, 1.0, 2.0, 3.0, 4.0],
                             [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]]> : tensor<4x8xf16>
  %w = arith.constant dense<[[1.0, 0.0, -1.0, 0.5], [0.5, 1.0, 0.0, -0.5], [2.0, -1.0, 1.0, 0.0], [0.0, 0.5, 0.25, 1.0],
                             [-1.0, 2.0, 0.5, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, -2.0, 0.5, 0.25], [0.5, 0.0, -0.5, 2.0]]> : tensor<8x4xf16>
  %b = arith.constant dense<[0.5, -1.0, 0.0, 1.0]> : tensor<4xf32>
  %y = call @layer(%x, %w, %b) : (tensor<4x8xf16>, tensor<8x4xf16>, tensor<4xf32>) -> tensor<4x4xf32>
  %yu = tensor.cast %y : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%yu) : (tensor<*xf32>) -> ()
  return
}

func.func @main_scores() {
  %q = arith.constant dense<[[[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0], [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]],
                             [[2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 8.0]]]> : tensor<2x4x8xbf16>
  %k = arith.constant dense<[[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0], [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0], [0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]],
                             [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0], [0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]]> : tensor<2x4x8xbf16>
  %s = call @scores(%q, %k) : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x4xf32>
  %su = tensor.cast %s : tensor<2x4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%su) : (tensor<*xf32>) -> ()
  return
}

func.func @main_int8() {
  %ia = arith.constant dense<[[-8, -3, 2, 7, -5, 0, 5, -7, -2, 3, 8, -4, 1, 6, -6, -1], [-5, 0, 5, -7, -2, 3, 8, -4, 1, 6, -6, -1, 4, -8, -3, 2], [-2, 3, 8, -4, 1, 6, -6, -1, 4, -8, -3, 2, 7, -5, 0, 5], [1, 6, -6, -1, 4, -8, -3, 2, 7, -5, 0, 5, -7, -2, 3, 8], [4, -8, -3, 2, 7, -5, 0, 5, -7, -2, 3, 8, -4, 1, 6, -6], [7, -5, 0, 5, -7, -2, 3, 8, -4, 1, 6, -6, -1, 4, -8, -3], [-7, -2, 3, 8, -4, 1, 6, -6, -1, 4, -8, -3, 2, 7, -5, 0], [-4, 1, 6, -6, -1, 4, -8, -3, 2, 7, -5, 0, 5, -7, -2, 3], [-1, 4, -8, -3, 2, 7, -5, 0, 5, -7, -2, 3, 8, -4, 1, 6], [2, 7, -5, 0, 5, -7, -2, 3, 8, -4, 1, 6, -6, -1, 4, -8], [5, -7, -2, 3, 8, -4, 1, 6, -6, -1, 4, -8, -3, 2, 7, -5], [8, -4, 1, 6, -6, -1, 4, -8, -3, 2, 7, -5, 0, 5, -7, -2], [-6, -1, 4, -8, -3, 2, 7, -5, 0, 5, -7, -2, 3, 8, -4, 1], [-3, 2, 7, -5, 0, 5, -7, -2, 3, 8, -4, 1, 6, -6, -1, 4], [0, 5, -7, -2, 3, 8, -4, 1, 6, -6, -1, 4, -8, -3, 2, 7], [3, 8, -4, 1, 6, -6, -1, 4, -8, -3, 2, 7, -5, 0, 5, -7]]> : tensor<16x16xi8>
  %ib = arith.constant dense<[[-6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3], [1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3], [-5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4], [2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2], [-4, -6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5], [3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1], [-3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6], [4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0], [-2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6], [5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1], [-1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5], [6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4, 2], [0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4], [-6, 5, 3, 1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3], [1, -1, -3, -5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3], [-5, 6, 4, 2, 0, -2, -4, -6, 5, 3, 1, -1, -3, -5, 6, 4]]> : tensor<16x16xi8>
  %ic = call @int8(%ia, %ib) : (tensor<16x16xi8>, tensor<16x16xi8>) -> tensor<16x16xi32>
  %icu = tensor.cast %ic : tensor<16x16xi32> to tensor<*xi32>
  call @printMemrefI32(%icu) : (tensor<*xi32>) -> ()
  return
}
