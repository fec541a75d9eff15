// RUN: mp-opt --mp-fuse-row-loops %s | FileCheck %s
// RUN: mp-opt --mp-fuse-row-loops --mp-vectorize-loops %s | FileCheck %s --check-prefix=VEC
// RUN: mp-opt --mp-fuse-row-loops %s | FileCheck %s --check-prefix=KEPT

// Softmax over rows as the linalg lowering leaves it (after
// mp-promote-accumulators): fill, max, exponentials, fill, sum, reciprocal,
// normalization. All seven nests become one loop over the rows; the
// allocations the later nests use move before it, the deallocation between
// stays after it. (The result goes to an allocation: a nest writing a
// function argument while another reads one stays apart, as the two may be
// one buffer; @kept_apart.)
// CHECK-LABEL: func.func @softmax_rows
// CHECK:         %[[MAX:.*]] = memref.alloc() : memref<64xf32>
// CHECK:         %[[EXP:.*]] = memref.alloc() : memref<64x128xf32>
// CHECK:         %[[SUM:.*]] = memref.alloc() : memref<64xf32>
// CHECK:         %[[RCP:.*]] = memref.alloc() : memref<64xf32>
// CHECK:         %[[P:.*]] = memref.alloc() : memref<64x128xf32>
// CHECK:         affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT:      affine.store %{{.*}}, %[[MAX]][%[[I]]]
// CHECK:           affine.for %{{.*}} = 0 to 128 iter_args
// CHECK:             arith.maximumf
// CHECK:           affine.store %{{.*}}, %[[MAX]][%[[I]]]
// CHECK:           affine.for %{{.*}} = 0 to 128 {
// CHECK:             math.exp
// CHECK:             affine.store %{{.*}}, %[[EXP]][%[[I]], %{{.*}}]
// CHECK:           affine.store %{{.*}}, %[[SUM]][%[[I]]]
// CHECK:           affine.for %{{.*}} = 0 to 128 iter_args
// CHECK:             arith.addf
// CHECK:           arith.divf
// CHECK:           affine.store %{{.*}}, %[[RCP]][%[[I]]]
// CHECK:           affine.for %{{.*}} = 0 to 128 {
// CHECK:             arith.mulf
// CHECK:             affine.store %{{.*}}, %[[P]][%[[I]], %{{.*}}]
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %[[MAX]]
// CHECK-NOT:     affine.for
// CHECK:         return
// The inner loops still vectorize: the max and the sum as reductions, the
// exponentials and the normalization as eight vectors each (unrolled).
// VEC-LABEL: func.func @softmax_rows
// VEC:         affine.for %{{.*}} = 0 to 64 {
// VEC:           affine.for %{{.*}} = 0 to 128 step 16 iter_args
// VEC:           arith.maximumf {{.*}} : vector<1xf32>
// VEC-COUNT-8:   math.exp %{{.*}} : vector<16xf32>
// VEC:           affine.for %{{.*}} = 0 to 128 step 16 iter_args
// VEC:           vector.reduction <add>
// VEC-COUNT-8:   arith.mulf %{{.*}} : vector<16xf32>
func.func @softmax_rows(%s: memref<64x128xf32>, %out: memref<64x128xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %max = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    affine.store %ninf, %max[%i] : memref<64xf32>
  }
  affine.for %i = 0 to 64 {
    %m0 = affine.load %max[%i] : memref<64xf32>
    %m = affine.for %k = 0 to 128 iter_args(%a = %m0) -> (f32) {
      %x = affine.load %s[%i, %k] : memref<64x128xf32>
      %n = arith.maximumf %x, %a : f32
      affine.yield %n : f32
    }
    affine.store %m, %max[%i] : memref<64xf32>
  }
  %exp = memref.alloc() : memref<64x128xf32>
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 128 {
      %x = affine.load %s[%i, %k] : memref<64x128xf32>
      %m = affine.load %max[%i] : memref<64xf32>
      %d = arith.subf %x, %m : f32
      %e = math.exp %d : f32
      affine.store %e, %exp[%i, %k] : memref<64x128xf32>
    }
  }
  memref.dealloc %max : memref<64xf32>
  %sum = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    affine.store %zero, %sum[%i] : memref<64xf32>
  }
  affine.for %i = 0 to 64 {
    %s0 = affine.load %sum[%i] : memref<64xf32>
    %t = affine.for %k = 0 to 128 iter_args(%a = %s0) -> (f32) {
      %e = affine.load %exp[%i, %k] : memref<64x128xf32>
      %n = arith.addf %e, %a : f32
      affine.yield %n : f32
    }
    affine.store %t, %sum[%i] : memref<64xf32>
  }
  %rcp = memref.alloc() : memref<64xf32>
  %p = memref.alloc() : memref<64x128xf32>
  affine.for %i = 0 to 64 {
    %t = affine.load %sum[%i] : memref<64xf32>
    %r = arith.divf %one, %t : f32
    affine.store %r, %rcp[%i] : memref<64xf32>
  }
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 128 {
      %e = affine.load %exp[%i, %k] : memref<64x128xf32>
      %r = affine.load %rcp[%i] : memref<64xf32>
      %y = arith.mulf %e, %r : f32
      affine.store %y, %p[%i, %k] : memref<64x128xf32>
    }
  }
  memref.dealloc %exp : memref<64x128xf32>
  memref.dealloc %sum : memref<64xf32>
  memref.dealloc %rcp : memref<64xf32>
  memref.copy %p, %out : memref<64x128xf32> to memref<64x128xf32>
  memref.dealloc %p : memref<64x128xf32>
  return
}

// Two levels shared: an elementwise nest and the row sum of its result over
// [sequence, token] fuse at depth 2 (the 3-deep nest's innermost loop stays
// its own).
// CHECK-LABEL: func.func @two_levels
// CHECK:         affine.for %[[B:.*]] = 0 to 4 {
// CHECK-NEXT:      affine.for %[[T:.*]] = 0 to 32 {
// CHECK-NEXT:        affine.for %{{.*}} = 0 to 64 {
// CHECK:               arith.mulf
// CHECK:             affine.store %{{.*}}, %[[SUM:.*]][%[[B]], %[[T]]]
// CHECK-NEXT:        affine.for %{{.*}} = 0 to 64 {
// CHECK:               arith.addf
// CHECK-NOT:     affine.for
// CHECK:         memref.copy
func.func @two_levels(%x: memref<4x32x64xf32>, %result: memref<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %sq = memref.alloc() : memref<4x32x64xf32>
  %out = memref.alloc() : memref<4x32xf32>
  affine.for %b = 0 to 4 {
    affine.for %t = 0 to 32 {
      affine.for %k = 0 to 64 {
        %v = affine.load %x[%b, %t, %k] : memref<4x32x64xf32>
        %w = arith.mulf %v, %v : f32
        affine.store %w, %sq[%b, %t, %k] : memref<4x32x64xf32>
      }
    }
  }
  affine.for %b = 0 to 4 {
    affine.for %t = 0 to 32 {
      affine.store %zero, %out[%b, %t] : memref<4x32xf32>
      affine.for %k = 0 to 64 {
        %v = affine.load %sq[%b, %t, %k] : memref<4x32x64xf32>
        %a = affine.load %out[%b, %t] : memref<4x32xf32>
        %n = arith.addf %a, %v : f32
        affine.store %n, %out[%b, %t] : memref<4x32xf32>
      }
    }
  }
  memref.dealloc %sq : memref<4x32x64xf32>
  memref.copy %out, %result : memref<4x32xf32> to memref<4x32xf32>
  memref.dealloc %out : memref<4x32xf32>
  return
}

// The cases below keep their two nests apart (two nests of two loops, the KEPT
// lines); their buffers are allocations unless the case is about arguments.

// Row i of the second nest reads column i of what the first wrote: it
// needs every row of the first.
// KEPT-LABEL: func.func @transposed_read_kept
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT-NOT:      affine.for
// KEPT:          return
func.func @transposed_read_kept() {
  %x = memref.alloc() : memref<64x64xf32>
  %t = memref.alloc() : memref<64x64xf32>
  %y = memref.alloc() : memref<64x64xf32>
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 64 {
      %v = affine.load %x[%i, %k] : memref<64x64xf32>
      affine.store %v, %t[%i, %k] : memref<64x64xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 64 {
      %v = affine.load %t[%k, %i] : memref<64x64xf32>
      affine.store %v, %y[%i, %k] : memref<64x64xf32>
    }
  }
  memref.dealloc %x : memref<64x64xf32>
  memref.dealloc %t : memref<64x64xf32>
  memref.dealloc %y : memref<64x64xf32>
  return
}

// The second nest reads the first's result through a view (a transpose):
// the view's rows are not the buffer's.
// KEPT-LABEL: func.func @view_kept
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT-NOT:      affine.for
// KEPT:          return
func.func @view_kept() {
  %x = memref.alloc() : memref<64x64xf32>
  %t = memref.alloc() : memref<64x64xf32>
  %y = memref.alloc() : memref<64x64xf32>
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 64 {
      %v = affine.load %x[%i, %k] : memref<64x64xf32>
      affine.store %v, %t[%i, %k] : memref<64x64xf32>
    }
  }
  %view = memref.transpose %t (d0, d1) -> (d1, d0) : memref<64x64xf32> to memref<64x64xf32, strided<[1, 64]>>
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 64 {
      %v = affine.load %view[%i, %k] : memref<64x64xf32, strided<[1, 64]>>
      affine.store %v, %y[%i, %k] : memref<64x64xf32>
    }
  }
  memref.dealloc %x : memref<64x64xf32>
  memref.dealloc %t : memref<64x64xf32>
  memref.dealloc %y : memref<64x64xf32>
  return
}

// A column sum: its outer loop runs over the rows it reduces, so it is not
// parallel (fused, no row of the first nest could run on another thread).
// KEPT-LABEL: func.func @column_sum_kept
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT-NOT:      affine.for
// KEPT:          return
func.func @column_sum_kept() {
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<32x64xf32>
  %r = memref.alloc() : memref<32x64xf32>
  %col = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 32 {
    affine.for %k = 0 to 64 {
      %v = affine.load %x[%i, %k] : memref<32x64xf32>
      %m = arith.maximumf %v, %zero : f32
      affine.store %m, %r[%i, %k] : memref<32x64xf32>
    }
  }
  affine.for %i = 0 to 32 {
    affine.for %k = 0 to 64 {
      %v = affine.load %r[%i, %k] : memref<32x64xf32>
      %a = affine.load %col[%k] : memref<64xf32>
      %n = arith.addf %a, %v : f32
      affine.store %n, %col[%k] : memref<64xf32>
    }
  }
  memref.dealloc %x : memref<32x64xf32>
  memref.dealloc %r : memref<32x64xf32>
  memref.dealloc %col : memref<64xf32>
  return
}

// A call between the nests: it may read what the first wrote, and the
// second's body would run before it.
// KEPT-LABEL: func.func @call_between_kept
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT-NOT:      affine.for
// KEPT:          return
func.func private @observe(memref<16x8xf32>)
func.func @call_between_kept() {
  %x = memref.alloc() : memref<16x8xf32>
  %t = memref.alloc() : memref<16x8xf32>
  %y = memref.alloc() : memref<16x8xf32>
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %x[%i, %k] : memref<16x8xf32>
      affine.store %v, %t[%i, %k] : memref<16x8xf32>
    }
  }
  func.call @observe(%y) : (memref<16x8xf32>) -> ()
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %t[%i, %k] : memref<16x8xf32>
      affine.store %v, %y[%i, %k] : memref<16x8xf32>
    }
  }
  memref.dealloc %x : memref<16x8xf32>
  memref.dealloc %t : memref<16x8xf32>
  memref.dealloc %y : memref<16x8xf32>
  return
}

// Outer loops of different trip counts.
// KEPT-LABEL: func.func @bounds_kept
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT-NOT:      affine.for
// KEPT:          return
func.func @bounds_kept() {
  %t = memref.alloc() : memref<17x8xf32>
  %y = memref.alloc() : memref<17x8xf32>
  affine.for %i = 0 to 17 {
    affine.for %k = 0 to 8 {
      %v = affine.load %t[%i, %k] : memref<17x8xf32>
      affine.store %v, %y[%i, %k] : memref<17x8xf32>
    }
  }
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %y[%i, %k] : memref<17x8xf32>
      affine.store %v, %t[%i, %k] : memref<17x8xf32>
    }
  }
  memref.dealloc %t : memref<17x8xf32>
  memref.dealloc %y : memref<17x8xf32>
  return
}

// Two function arguments may be one buffer (a parameter and its update):
// the second nest's row i could write what the first reads in row i + 1.
// KEPT-LABEL: func.func @arguments_kept
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT:          affine.for
// KEPT-NEXT:       affine.for
// KEPT-NOT:      affine.for
// KEPT:          return
func.func @arguments_kept(%a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  %t = memref.alloc() : memref<16x8xf32>
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %a[%i, %k] : memref<16x8xf32>
      affine.store %v, %t[%i, %k] : memref<16x8xf32>
    }
  }
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %t[%i, %k] : memref<16x8xf32>
      affine.store %v, %b[%i, %k] : memref<16x8xf32>
    }
  }
  memref.dealloc %t : memref<16x8xf32>
  return
}

// Two nests that share no buffer stay apart; a nest of one store per row
// joins the nest before it all the same.
// CHECK-LABEL: func.func @unrelated
// CHECK:         affine.for %[[I:.*]] = 0 to 16 {
// CHECK:           affine.for %{{.*}} = 0 to 8 {
// CHECK:           }
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]]] : memref<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 16 {
func.func @unrelated(%a: memref<16x8xf32>, %b: memref<16x8xf32>, %c: memref<16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<16x8xf32>
  %acc = memref.alloc() : memref<16xf32>
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %a[%i, %k] : memref<16x8xf32>
      affine.store %v, %t[%i, %k] : memref<16x8xf32>
    }
  }
  affine.for %i = 0 to 16 {
    affine.store %zero, %acc[%i] : memref<16xf32>
  }
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      %v = affine.load %b[%i, %k] : memref<16x8xf32>
      affine.store %v, %c[%i, %k] : memref<16x8xf32>
    }
  }
  memref.dealloc %t : memref<16x8xf32>
  memref.dealloc %acc : memref<16xf32>
  return
}
