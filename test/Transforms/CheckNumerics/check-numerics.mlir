// RUN: mp-opt %s --mp-check-numerics -split-input-file | FileCheck %s
// RUN: mp-opt %s --mp-check-numerics=skip-conversions -split-input-file | FileCheck %s --check-prefix=SKIP
// RUN: mp-opt %s --mp-check-numerics=functions=other -split-input-file | FileCheck %s --check-prefix=ONLY

#id = affine_map<(d0, d1) -> (d0, d1)>

// Every computed float tensor gets a probe named after its function,
// ordinal, op and location; uses read the probe. Constants, empties, fills,
// reshapes and integer results are not probed; conversions are (named by
// their target type) unless skip-conversions is set, which also leaves them
// out of the count.

// CHECK-LABEL: func.func @model
// CHECK: %[[HALF:.*]] = arith.truncf %{{.*}} : tensor<4x4xf32> to tensor<4x4xf16>
// CHECK-NEXT: %[[P0:.*]] = mp.observe %[[HALF]] as "model#0 conversion to f16 at {{.*}}check-numerics.mlir:[[@LINE+26]]:{{[0-9]+}}"
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[P0]], %[[P0]]
// CHECK-NEXT: %[[P1:.*]] = mp.observe %[[MM]] as "model#1 linalg.matmul at {{.*}}check-numerics.mlir:[[@LINE+27]]:{{[0-9]+}}"
// CHECK: %[[EXP:.*]] = linalg.generic
// CHECK-SAME: ins(%[[P1]]
// CHECK: math.exp
// CHECK-NOT: mp.observe
// CHECK: } -> tensor<4x4xf32>
// CHECK-NEXT: %[[P2:.*]] = mp.observe %[[EXP]] as "model#2 linalg.generic at {{.*}}"
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[P2]]
// CHECK-NOT: mp.observe
// CHECK: return %[[FLAT]], %{{.*}} : tensor<16xf32>, tensor<4xi32>

// SKIP-LABEL: func.func @model
// SKIP: %[[HALF:.*]] = arith.truncf
// SKIP-NOT: mp.observe %[[HALF]]
// SKIP: linalg.matmul
// SKIP-NEXT: mp.observe %{{.*}} as "model#0 linalg.matmul at
// SKIP: mp.observe %{{.*}} as "model#1 linalg.generic at

// ONLY-LABEL: func.func @model
// ONLY-NOT: mp.observe
// ONLY: return
func.func @model(%a: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4xi32>) {
  %zero = arith.constant 0.0 : f32
  %ints = arith.constant dense<1> : tensor<4xi32>
  %half = arith.truncf %a : tensor<4x4xf32> to tensor<4x4xf16>
  %empty = tensor.empty() : tensor<4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm = linalg.matmul ins(%half, %half : tensor<4x4xf16>, tensor<4x4xf16>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x4xf32>) outs(%empty : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<4x4xf32>
  %flat = tensor.collapse_shape %exp [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  return %flat, %ints : tensor<16xf32>, tensor<4xi32>
}
// External functions are never probed.
func.func private @other(tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)

// -----

// An op with two float results gets one probe per result; a function in
// the list is probed.

// CHECK-LABEL: func.func @other
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK: mp.observe %[[R]]#0 as "other#0 linalg.generic at {{.*}} result 0"
// CHECK: mp.observe %[[R]]#1 as "other#0 linalg.generic at {{.*}} result 1"

// ONLY-LABEL: func.func @other
// ONLY-COUNT-2: mp.observe
#id = affine_map<(d0) -> (d0)>
func.func @other(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e, %e : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %n = arith.negf %in : f32
    linalg.yield %in, %n : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
