// RUN: mp-opt %s --inline | FileCheck %s

// MPI ops may be inlined (mp registers an inliner interface for the mpi
// dialect): a session inlines its training step, all-reduce included,
// into its entry, where the parameters' updates can be seen to happen in
// place; a call that stays reads and writes anything.
// CHECK-LABEL: func.func @entry
// CHECK-NOT: call
// CHECK: %[[COMM:.*]] = mpi.comm_world : !mpi.comm
// CHECK: mpi.allreduce(%arg0, %arg1, MPI_SUM, %[[COMM]]) : memref<4xf32>, memref<4xf32>
// CHECK-NOT: call
// CHECK: return
func.func private @step(%send: memref<4xf32>, %receive: memref<4xf32>) {
  %comm = mpi.comm_world : !mpi.comm
  mpi.allreduce(%send, %receive, MPI_SUM, %comm) : memref<4xf32>, memref<4xf32>
  return
}

func.func @entry(%send: memref<4xf32>, %receive: memref<4xf32>) {
  call @step(%send, %receive) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
