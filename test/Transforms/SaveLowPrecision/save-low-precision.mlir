// RUN: mp-opt %s --mp-save-low-precision -split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The bf16 matmul's f32 result is read after the seed: the backward reader
// gets a bf16 copy made right after the matmul, widened in its own body;
// the forward reader keeps the f32 value.
// CHECK-LABEL: func.func @step
// CHECK:      %[[MM:.*]] = linalg.matmul
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x8xbf16>
// CHECK-NEXT: %[[SAVED:.*]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xbf16>) attrs = {mp.saved}
// CHECK:        arith.truncf %{{.*}} : f32 to bf16
// CHECK:      %[[H:.*]] = linalg.generic {{.*}} ins(%[[MM]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32>)
// CHECK:      arith.constant {mp.seed}
// CHECK:      linalg.generic {{.*}} ins(%[[SAVED]], %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[M16:.*]]: bf16, %[[C:.*]]: f32, %[[G:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[M:.*]] = arith.extf %[[M16]] : bf16 to f32
// CHECK-NEXT:   arith.addf %[[M]], %[[C]] : f32
// A reader that is not a generic gets a widened copy just before it.
// CHECK:      %[[WIDE:.*]] = linalg.generic {{.*}} ins(%[[SAVED]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK:        arith.extf
// CHECK:      linalg.matmul ins(%[[WIDE]], %{{.*}} : tensor<4x8xf32>, tensor<8x4xf32>)
func.func @step(%x: tensor<4x4xbf16>, %w: tensor<4x8xbf16>, %b: tensor<8xf32>,
                %dh: tensor<4x8xf32>, %v: tensor<8x4xf32>)
    -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x4xbf16>, tensor<4x8xbf16>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e16 = tensor.empty() : tensor<4x8xbf16>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e16 : tensor<4x8xbf16>) {
  ^bb0(%m: f32, %c: f32, %o: bf16):
    %s = arith.addf %m, %c : f32
    %r = arith.maximumf %s, %zero : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %seed = arith.constant {mp.seed} 1.0 : f32
  %dpre = linalg.generic {indexing_maps = [#id, #col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b, %dh : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%m: f32, %c: f32, %g: f32, %o: f32):
    %s = arith.addf %m, %c : f32
    %p = arith.cmpf ogt, %s, %zero : f32
    %d = arith.select %p, %g, %zero : f32
    %r = arith.mulf %d, %seed : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %other = linalg.matmul ins(%mm, %v : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %h, %dpre, %other : tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Left alone: a matmul with an f32 input (its result is as precise as f32),
// a value the function returns, and a function without a seed.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:  mp.saved
// CHECK-NOT:  arith.extf
// CHECK:      return
func.func @untouched(%x: tensor<4x4xf32>, %w: tensor<4x8xbf16>, %w16: tensor<4x4xbf16>)
    -> (tensor<4x8xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x8xbf16>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %fwd = linalg.matmul ins(%w16, %w16 : tensor<4x4xbf16>, tensor<4x4xbf16>) outs(%z4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %seed = arith.constant {mp.seed} 1.0 : f32
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%m: f32, %o: f32):
    %r = arith.mulf %m, %seed : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %d, %fwd : tensor<4x8xf32>, tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @no_seed
// CHECK-NOT:  mp.saved
func.func @no_seed(%x: tensor<4x4xbf16>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm = linalg.matmul ins(%x, %x : tensor<4x4xbf16>, tensor<4x4xbf16>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%m: f32, %o: f32):
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  return %mm, %d : tensor<4x4xf32>, tensor<4x4xf32>
}
