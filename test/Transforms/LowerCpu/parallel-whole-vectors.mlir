// The CPU lowering's loops: whole vectors load and store without masks,
// and with `parallel` the large loop nests run through mprt_parallel_for.
// RUN: mp-opt %s --mp-lower-cpu | FileCheck %s --check-prefixes=COMMON,SERIAL
// RUN: mp-opt %s --mp-lower-cpu=parallel=1 | FileCheck %s --check-prefixes=COMMON,PARALLEL

// 40008 elements: 2500 whole vectors (blocks of 16 shared by the threads),
// then 8 scalar iterations.
// COMMON-NOT: llvm.intr.masked
// SERIAL-NOT: mprt_parallel_for
// SERIAL: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// SERIAL: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// PARALLEL: llvm.func @mprt_parallel_for(i64, !llvm.ptr, !llvm.ptr)
// PARALLEL: llvm.call @mprt_parallel_for(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// PARALLEL: llvm.func internal @relu_parallel(
// PARALLEL: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// PARALLEL: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// PARALLEL: llvm.func internal @relu_parallel_entry(
// COMMON-NOT: llvm.intr.masked
func.func @relu(%x: tensor<40008xf32>) -> tensor<40008xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40008xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<40008xf32>) outs(%e : tensor<40008xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<40008xf32>
  return %r : tensor<40008xf32>
}
