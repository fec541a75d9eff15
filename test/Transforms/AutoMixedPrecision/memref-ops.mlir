// RUN: mp-opt %s --mp-auto-mixed-precision | FileCheck %s

// Linalg ops on memrefs (bufferized code) are not the analysis' graph: they
// stay as they are, f32 casts included, and the pass does not crash on
// them (it used to, counting a memref cast's missing result).

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @memref_cast
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : memref<8xf32>) outs(%{{.*}} : memref<8xf16>)
// CHECK: arith.truncf
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x8xf32>, memref<8x4xf32>)
func.func @memref_cast(%a: memref<8xf32>, %b: memref<8xf16>,
                       %x: memref<4x8xf32>, %y: memref<8x4xf32>,
                       %z: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<8xf32>) outs(%b : memref<8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  }
  linalg.matmul ins(%x, %y : memref<4x8xf32>, memref<8x4xf32>)
                outs(%z : memref<4x4xf32>)
  return
}
