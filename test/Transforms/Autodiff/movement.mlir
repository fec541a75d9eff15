// The data-movement rules of --mp-autodiff: what each gradient is built
// from. (Their numbers: test/Training/gradcheck-movement.test.)
// RUN: mp-opt %s --mp-autodiff | FileCheck %s

#row = affine_map<(d0, d1) -> (d0)>
#m = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>

// A slice's gradient is inserted into zeros at the slice; a
// concatenation's is a slice per operand; an insertion's destination gets
// the gradient with the window zeroed.
// CHECK-LABEL: func.func @slices_grad
// CHECK: %[[DLAST:.*]] = tensor.extract_slice %[[DPUT:.*]][5, 0] [1, 6] [1, 1] : tensor<6x6xf32> to tensor<6xf32>
// CHECK: %[[DBOTH:.*]] = tensor.insert_slice %{{.*}} into %[[DPUT]][5, 0] [1, 6] [1, 1] : tensor<6xf32> into tensor<6x6xf32>
// CHECK: %[[DROWS:.*]] = tensor.extract_slice %[[DBOTH]][0, 0] [2, 6] [1, 1] : tensor<6x6xf32> to tensor<2x6xf32>
// CHECK: %[[DW1:.*]] = tensor.extract_slice %[[DBOTH]][2, 0] [4, 6] [1, 1] : tensor<6x6xf32> to tensor<4x6xf32>
// CHECK: tensor.insert_slice %[[DLAST]] into %{{.*}}[3, 0] [1, 6] [1, 1] : tensor<6xf32> into tensor<4x6xf32>
// CHECK: tensor.insert_slice %[[DROWS]] into %{{.*}}[1, 0] [2, 6] [1, 1] : tensor<2x6xf32> into tensor<4x6xf32>
func.func @slices(%w: tensor<4x6xf32> {mp.param = "w"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.extract_slice %w[1, 0] [2, 6] [1, 1] : tensor<4x6xf32> to tensor<2x6xf32>
  %last = tensor.extract_slice %w[3, 0] [1, 6] [1, 1] : tensor<4x6xf32> to tensor<6xf32>
  %both = tensor.concat dim(0) %rows, %w : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %put = tensor.insert_slice %last into %both[5, 0] [1, 6] [1, 1] : tensor<6xf32> into tensor<6x6xf32>
  %s0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#m, #all], iterator_types = ["reduction", "reduction"]}
      ins(%put : tensor<6x6xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %r: f32):
    %p = arith.mulf %a, %a : f32
    %t = arith.addf %p, %r : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}

// A gather's table gets a scatter-add: loops over the gather's iteration
// space that read the index as the gather did and add the gradient there.
// CHECK-LABEL: func.func @gather_grad
// CHECK: %[[ZEROS:.*]] = linalg.fill {{.*}} -> tensor<5x3xf32>
// CHECK: %[[DTABLE:.*]] = scf.for %[[I:.*]] = {{.*}} iter_args(%[[A0:.*]] = %[[ZEROS]]) -> (tensor<5x3xf32>)
// CHECK:   scf.for %[[J:.*]] = {{.*}} iter_args(%[[A1:.*]] = %[[A0]]) -> (tensor<5x3xf32>)
// CHECK:     %[[ID:.*]] = tensor.extract %{{.*}}[%[[I]]] : tensor<4xi32>
// CHECK:     %[[ROW:.*]] = arith.index_cast %[[ID]]
// CHECK:     %[[DY:.*]] = tensor.extract %{{.*}}[%[[I]], %[[J]]] : tensor<4x3xf32>
// CHECK:     %[[OLD:.*]] = tensor.extract %[[A1]][%[[ROW]], %[[J]]]
// CHECK:     %[[SUM:.*]] = arith.addf %[[OLD]], %[[DY]]
// CHECK:     tensor.insert %[[SUM]] into %[[A1]][%[[ROW]], %[[J]]]
// CHECK: return %{{.*}}, %[[DTABLE]] : f32, tensor<5x3xf32>
func.func @gather(%ids: tensor<4xi32>, %table: tensor<5x3xf32> {mp.param = "table"}) -> f32 attributes {mp.loss} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %g = linalg.generic {indexing_maps = [#row, #m], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %s0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#m, #all], iterator_types = ["reduction", "reduction"]}
      ins(%g : tensor<4x3xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %r: f32):
    %p = arith.mulf %a, %a : f32
    %t = arith.addf %p, %r : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}
