// RUN: mp-opt --mp-promote-accumulators %s | FileCheck %s
// RUN: mp-opt --mp-promote-accumulators --mp-vectorize-loops %s | FileCheck %s --check-prefix=VEC

// A row sum into an allocation: the element is carried through the loop,
// loaded before it and stored after it.
// CHECK-LABEL: func.func @row_sum
// CHECK:         %[[SUM:.*]] = memref.alloc
// CHECK:         affine.for %[[I:.*]] = 0 to 16 {
// CHECK:           %[[INIT:.*]] = affine.load %[[SUM]][%[[I]]]
// CHECK:           %[[R:.*]] = affine.for %{{.*}} = 0 to 128 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NOT:         affine.store
// CHECK:             %[[T:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:        affine.yield %[[T]] : f32
// CHECK:           affine.store %[[R]], %[[SUM]][%[[I]]]
// The vectorizer takes it as a reduction: 16 lanes, combined after the loop
// in any order (reassoc: LLVM adds halves, not one lane after another).
// VEC-LABEL: func.func @row_sum
// VEC:         affine.for %{{.*}} = 0 to 128 step 16 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xf32>)
// VEC:           vector.transfer_read {{.*}} {in_bounds = [true]}
// VEC:         vector.reduction <add>, %{{.*}} fastmath<reassoc>
func.func @row_sum(%in: memref<16x128xf32>, %out: memref<16xf32>) {
  %sum = memref.alloc() : memref<16xf32>
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 16 {
    affine.store %zero, %sum[%i] : memref<16xf32>
    affine.for %j = 0 to 128 {
      %x = affine.load %in[%i, %j] : memref<16x128xf32>
      %s = affine.load %sum[%i] : memref<16xf32>
      %t = arith.addf %s, %x : f32
      affine.store %t, %sum[%i] : memref<16xf32>
    }
  }
  memref.copy %sum, %out : memref<16xf32> to memref<16xf32>
  memref.dealloc %sum : memref<16xf32>
  return
}

// A row max over 40 elements: two whole vectors, then a scalar loop that
// goes on from the vectors' result. The accumulator's lanes are combined
// as a tree of vector maxima (halves, quarters, ...): the same value in
// any order.
// VEC-LABEL: func.func @row_max_not_whole_vectors
// VEC:         %[[INIT:.*]] = affine.load
// VEC:         %[[V:.*]] = affine.for %{{.*}} = 0 to 32 step 16 iter_args({{.*}}) -> (vector<16xf32>)
// VEC:           arith.maximumf {{.*}} : vector<16xf32>
// VEC:         %[[LO8:.*]] = vector.extract_strided_slice %[[V]] {offsets = [0], sizes = [8], strides = [1]}
// VEC:         %[[HI8:.*]] = vector.extract_strided_slice %[[V]] {offsets = [8], sizes = [8], strides = [1]}
// VEC:         arith.maximumf %[[LO8]], %[[HI8]] : vector<8xf32>
// VEC:         arith.maximumf {{.*}} : vector<4xf32>
// VEC:         arith.maximumf {{.*}} : vector<2xf32>
// VEC:         %[[ONE:.*]] = arith.maximumf {{.*}} : vector<1xf32>
// VEC:         %[[RED:.*]] = vector.extract %[[ONE]][0]
// VEC-NOT:     vector.reduction
// VEC:         %[[WHOLE:.*]] = arith.maximumf %[[RED]], %[[INIT]] : f32
// VEC:         %[[REST:.*]] = affine.for %{{.*}} = 32 to 40 iter_args(%{{.*}} = %[[WHOLE]]) -> (f32)
// VEC:         affine.store %[[REST]]
func.func @row_max_not_whole_vectors(%in: memref<4x40xf32>, %out: memref<4xf32>) {
  %max = memref.alloca() : memref<4xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 40 {
      %x = affine.load %in[%i, %j] : memref<4x40xf32>
      %m = affine.load %max[%i] : memref<4xf32>
      %t = arith.maximumf %m, %x : f32
      affine.store %t, %max[%i] : memref<4xf32>
    }
  }
  memref.copy %max, %out : memref<4xf32> to memref<4xf32>
  return
}

// Two arguments may be one buffer (a parameter and its update): the
// accumulator stays in memory.
// CHECK-LABEL: func.func @arguments_may_share_memory
// CHECK-NOT:     iter_args
// CHECK:         return
func.func @arguments_may_share_memory(%in: memref<16x128xf32>, %sum: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 128 {
      %x = affine.load %in[%i, %j] : memref<16x128xf32>
      %s = affine.load %sum[%i] : memref<16xf32>
      %t = arith.addf %s, %x : f32
      affine.store %t, %sum[%i] : memref<16xf32>
    }
  }
  return
}

// An allocated accumulator with an argument input is promoted; but not when
// the loop also reads another element of the accumulator's buffer, or a
// view of it.
// CHECK-LABEL: func.func @argument_input
// CHECK:         iter_args
// CHECK-LABEL: func.func @other_element_of_the_buffer
// CHECK-NOT:     iter_args
// CHECK:         return
// CHECK-LABEL: func.func @view_of_the_buffer
// CHECK-NOT:     iter_args
// CHECK:         return
func.func @argument_input(%in: memref<128xf32>, %out: memref<f32>) {
  %sum = memref.alloc() : memref<1xf32>
  affine.for %j = 0 to 128 {
    %x = affine.load %in[%j] : memref<128xf32>
    %s = affine.load %sum[0] : memref<1xf32>
    %t = arith.addf %s, %x : f32
    affine.store %t, %sum[0] : memref<1xf32>
  }
  memref.dealloc %sum : memref<1xf32>
  return
}
func.func @other_element_of_the_buffer(%in: memref<128xf32>) {
  %sum = memref.alloc() : memref<2xf32>
  affine.for %j = 0 to 128 {
    %x = affine.load %in[%j] : memref<128xf32>
    %y = affine.load %sum[1] : memref<2xf32>
    %s = affine.load %sum[0] : memref<2xf32>
    %t = arith.addf %s, %x : f32
    %u = arith.addf %t, %y : f32
    affine.store %u, %sum[0] : memref<2xf32>
  }
  memref.dealloc %sum : memref<2xf32>
  return
}
func.func @view_of_the_buffer(%in: memref<128xf32>) {
  %sum = memref.alloc() : memref<2xf32>
  %view = memref.subview %sum[1] [1] [1] : memref<2xf32> to memref<1xf32, strided<[1], offset: 1>>
  affine.for %j = 0 to 128 {
    %x = affine.load %in[%j] : memref<128xf32>
    %y = affine.load %view[0] : memref<1xf32, strided<[1], offset: 1>>
    %s = affine.load %sum[0] : memref<2xf32>
    %t = arith.addf %s, %x : f32
    %u = arith.addf %t, %y : f32
    affine.store %u, %sum[0] : memref<2xf32>
  }
  memref.dealloc %sum : memref<2xf32>
  return
}

// An index that moves with the loop is not an accumulator; a call may
// touch any memory.
// CHECK-LABEL: func.func @moving_index
// CHECK-NOT:     iter_args
// CHECK:         return
// CHECK-LABEL: func.func @call_in_the_loop
// CHECK-NOT:     iter_args
// CHECK:         return
func.func @moving_index(%in: memref<128xf32>) {
  %acc = memref.alloc() : memref<128xf32>
  affine.for %j = 0 to 128 {
    %x = affine.load %in[%j] : memref<128xf32>
    %s = affine.load %acc[%j] : memref<128xf32>
    %t = arith.addf %s, %x : f32
    affine.store %t, %acc[%j] : memref<128xf32>
  }
  memref.dealloc %acc : memref<128xf32>
  return
}
func.func private @opaque(f32)
func.func @call_in_the_loop(%in: memref<128xf32>) {
  %sum = memref.alloc() : memref<1xf32>
  affine.for %j = 0 to 128 {
    %x = affine.load %in[%j] : memref<128xf32>
    %s = affine.load %sum[0] : memref<1xf32>
    %t = arith.addf %s, %x : f32
    func.call @opaque(%t) : (f32) -> ()
    affine.store %t, %sum[0] : memref<1xf32>
  }
  memref.dealloc %sum : memref<1xf32>
  return
}
