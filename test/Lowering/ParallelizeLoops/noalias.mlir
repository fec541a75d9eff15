// RUN: mp-opt %s -split-input-file -mp-parallelize-loops | FileCheck %s
// RUN: mp-opt %s -split-input-file --mp-lower-cpu=parallel=1 | FileCheck %s --check-prefix=LLVM

// A body's memrefs that are the caller's allocations, each viewed by no
// other captured memref, are listed by the positions of their descriptors'
// two pointers in the body's LLVM signature (begin and end first, a
// rank-2 descriptor is 7 values, an f32 one): %a at 9 and 10, %b at 17
// and 18; the function argument %in may be any buffer and is not listed.
// After the whole CPU lowering those pointers are noalias.
// CHECK-LABEL: func.func @exclusive
// CHECK-DAG: func.func private @exclusive_parallel(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<256x512xf32>, %{{.*}}: memref<256x512xf32>, %{{.*}}: f32, %{{.*}}: memref<256x512xf32>) attributes {mp.parallel_body, mp.parallel_noalias = array<i64: 9, 10, 17, 18>}
// Two views of one allocation in one body: neither is listed.
// CHECK-DAG: func.func private @exclusive_parallel_0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<256x2x256xf32>, %{{.*}}: memref<256x512xf32>) attributes {mp.parallel_body}
// LLVM-DAG: llvm.func internal @exclusive_parallel(%arg0: i64, %arg1: i64, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: i64, %arg5: i64, %arg6: i64, %arg7: i64, %arg8: i64, %arg9: !llvm.ptr {llvm.noalias}, %arg10: !llvm.ptr {llvm.noalias}, %arg11: i64, %arg12: i64, %arg13: i64, %arg14: i64, %arg15: i64, %arg16: f32, %arg17: !llvm.ptr {llvm.noalias}, %arg18: !llvm.ptr {llvm.noalias},
// LLVM-DAG: llvm.func internal @exclusive_parallel_0(%arg0: i64, %arg1: i64, %arg2: !llvm.ptr, %arg3: !llvm.ptr,
// LLVM-NOT: mp.parallel_noalias
func.func @exclusive(%in: memref<256x512xf32>, %scale: f32) {
  %a = memref.alloc() : memref<256x512xf32>
  %b = memref.alloc() : memref<256x512xf32>
  %bv = memref.expand_shape %b [[0], [1, 2]] output_shape [256, 2, 256] : memref<256x512xf32> into memref<256x2x256xf32>
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 512 {
      %x = affine.load %in[%i, %j] : memref<256x512xf32>
      %y = affine.load %a[%i, %j] : memref<256x512xf32>
      %s = arith.addf %x, %y : f32
      %t = arith.mulf %s, %scale : f32
      affine.store %t, %b[%i, %j] : memref<256x512xf32>
    }
  }
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      %x = affine.load %bv[%i, 1, %j] : memref<256x2x256xf32>
      affine.store %x, %b[%i, %j] : memref<256x512xf32>
    }
  }
  return
}

// -----

// A transpose is a view as well (though not a ViewLikeOpInterface): a body
// that reads an allocation through one and writes it directly lists
// neither.
// CHECK-LABEL: func.func @transposed_view
// CHECK: func.func private @transposed_view_parallel(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<512x512xf32, strided<[1, 512]>>, %{{.*}}: memref<512x512xf32>) attributes {mp.parallel_body}
func.func @transposed_view() {
  %a = memref.alloc() : memref<512x512xf32>
  %at = memref.transpose %a (d0, d1) -> (d1, d0) : memref<512x512xf32> to memref<512x512xf32, strided<[1, 512]>>
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 512 {
      %x = affine.load %at[%i, %j] : memref<512x512xf32, strided<[1, 512]>>
      affine.store %x, %a[%j, %i] : memref<512x512xf32>
    }
  }
  return
}
