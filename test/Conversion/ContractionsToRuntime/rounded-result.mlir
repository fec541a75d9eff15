// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime | FileCheck %s
// RUN: mp-opt %s --split-input-file --mp-contractions-to-runtime="runtime=cuda" \
// RUN:   | FileCheck %s --check-prefix=CUDA

// A 16-bit product whose f32 result is only rounded (the form AMP gives a
// backward product whose consumer is reshaped): the GEMM writes the rounded
// buffer itself (flags 4 | 2: rounded C, B transposed; type 1: f16). The f32
// buffer, its fill, the rounding loop and the deallocation are gone, and
// the result's allocation moved before the call.
// CHECK-LABEL: func.func @rounded
// CHECK-NOT: memref<4x6xf32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x6xf16>
// CHECK: memref.extract_strided_metadata %[[D]]
// CHECK: %[[FLAGS:.*]] = arith.constant 6 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 1 : i32
// CHECK: call @mprt_gemm({{.*}}, %[[FLAGS]], %[[TYPE]])
// CHECK-NOT: linalg.
// CHECK-NOT: memref<4x6xf32>
// CHECK: return %[[D]]
// CUDA-LABEL: func.func @rounded
// CUDA: %[[FLAGS:.*]] = arith.constant 6 : i32
// CUDA: call @mprt_cuda_gemm_sync({{.*}}, %[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CUDA-NEXT: return
func.func @rounded(%b: memref<6x3xf16>, %dc: memref<4x3xf16>) -> memref<4x6xf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%b, %dc : memref<6x3xf16>, memref<4x3xf16>) outs(%c : memref<4x6xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xw = arith.extf %x : f16 to f32
    %yw = arith.extf %y : f16 to f32
    %p = arith.mulf %yw, %xw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %d = memref.alloc() : memref<4x6xf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x6xf32>) outs(%d : memref<4x6xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  memref.dealloc %c : memref<4x6xf32>
  return %d : memref<4x6xf16>
}

// -----

// Batched bf16 (type 2) on the CPU: mprt_gemm_batched with the rounded
// flag; C's batch stride is the bf16 buffer's.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: memref<2x4x4xf32>
// CHECK: %[[FLAGS:.*]] = arith.constant 4 : i32
// CHECK: %[[TYPE:.*]] = arith.constant 2 : i32
// CHECK: call @mprt_gemm_batched({{.*}}, %[[FLAGS]], %[[TYPE]], {{.*}})
func.func @batched(%q: memref<2x4x8xbf16>, %k: memref<2x8x4xbf16>) -> memref<2x4x4xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x4x4xf32>)
  %d = memref.alloc() : memref<2x4x4xbf16>
  linalg.batch_matmul ins(%q, %k : memref<2x4x8xbf16>, memref<2x8x4xbf16>) outs(%c : memref<2x4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : memref<2x4x4xf32>) outs(%d : memref<2x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<2x4x4xf32>
  return %d : memref<2x4x4xbf16>
}

// -----

// Left as products into f32, then rounded by the loop (flags 0 where C
// starts at 1; the others overwrite their zero-filled C: flags 8):
// - @not_zero: the accumulator starts at 1, not 0;
// - @read_twice: the f32 result has another reader;
// - @other_type: rounded to bf16 from f16 operands;
// - @used_before: the rounded buffer is written between the product and
//   the rounding, so the product may not write it early;
// - @more_than_rounding: the loop adds before rounding.
// CHECK-LABEL: func.func @not_zero
// CHECK: arith.constant 0 : i32
// CHECK: call @mprt_gemm
// CHECK: arith.truncf
func.func @not_zero(%a: memref<4x8xf16>, %b: memref<8x4xf16>) -> memref<4x4xf16> {
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf32>)
  %d = memref.alloc() : memref<4x4xf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  memref.dealloc %c : memref<4x4xf32>
  return %d : memref<4x4xf16>
}

// CHECK-LABEL: func.func @read_twice
// CHECK: arith.constant 8 : i32
// CHECK: call @mprt_gemm
// CHECK: arith.truncf
// CHECK: memref.copy
func.func @read_twice(%a: memref<4x8xf16>, %b: memref<8x4xf16>, %keep: memref<4x4xf32>) -> memref<4x4xf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf32>)
  %d = memref.alloc() : memref<4x4xf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  memref.copy %c, %keep : memref<4x4xf32> to memref<4x4xf32>
  memref.dealloc %c : memref<4x4xf32>
  return %d : memref<4x4xf16>
}

// CHECK-LABEL: func.func @other_type
// CHECK: arith.constant 8 : i32
// CHECK: call @mprt_gemm
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @other_type(%a: memref<4x8xf16>, %b: memref<8x4xf16>) -> memref<4x4xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf32>)
  %d = memref.alloc() : memref<4x4xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<4x4xf32>
  return %d : memref<4x4xbf16>
}

// CHECK-LABEL: func.func @used_before
// CHECK: arith.constant 8 : i32
// CHECK: call @mprt_gemm
// CHECK: linalg.fill
// CHECK: arith.truncf
func.func @used_before(%a: memref<4x8xf16>, %b: memref<8x4xf16>) -> memref<4x4xf16> {
  %zero = arith.constant 0.0 : f32
  %h = arith.constant 1.0 : f16
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  %d = memref.alloc() : memref<4x4xf16>
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf32>)
  %view = memref.collapse_shape %d [[0, 1]] : memref<4x4xf16> into memref<16xf16>
  linalg.fill ins(%h : f16) outs(%view : memref<16xf16>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  memref.dealloc %c : memref<4x4xf32>
  return %d : memref<4x4xf16>
}

// CHECK-LABEL: func.func @more_than_rounding
// CHECK: arith.constant 8 : i32
// CHECK: call @mprt_gemm
// CHECK: arith.addf
// CHECK: arith.truncf
func.func @more_than_rounding(%a: memref<4x8xf16>, %b: memref<8x4xf16>) -> memref<4x4xf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf32>)
  %d = memref.alloc() : memref<4x4xf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xf16>) {
  ^bb0(%in: f32, %out: f16):
    %s = arith.addf %in, %in : f32
    %r = arith.truncf %s : f32 to f16
    linalg.yield %r : f16
  }
  memref.dealloc %c : memref<4x4xf32>
  return %d : memref<4x4xf16>
}
