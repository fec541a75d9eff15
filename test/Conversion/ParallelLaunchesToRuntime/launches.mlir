// RUN: mp-opt %s -split-input-file -mp-parallel-launches-to-runtime -verify-diagnostics | FileCheck %s

// A launch with two captured values (a pointer and an f32): they are stored
// into a struct on the caller's stack, allocated in its entry block, and
// the runtime gets the count, the entry point and the struct.
// CHECK-LABEL: llvm.func internal @body(
// CHECK: llvm.func internal @body_entry(%[[B:.*]]: i64, %[[E:.*]]: i64, %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[S:.*]] = llvm.load %[[CTX]] : !llvm.ptr -> !llvm.struct<(ptr, f32)>
// CHECK: %[[P:.*]] = llvm.extractvalue %[[S]][0]
// CHECK: %[[F:.*]] = llvm.extractvalue %[[S]][1]
// CHECK: llvm.call @body(%[[B]], %[[E]], %[[P]], %[[F]])
// CHECK-NOT: @launch
// CHECK-LABEL: llvm.func @caller(
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[BOX:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(ptr, f32)>
// CHECK: llvm.cond_br
// CHECK: llvm.insertvalue %arg0, %{{.*}}[0]
// CHECK: llvm.insertvalue %arg1, %{{.*}}[1]
// CHECK: llvm.store %{{.*}}, %[[BOX]]
// CHECK: %[[FN:.*]] = llvm.mlir.addressof @body_entry : !llvm.ptr
// CHECK: llvm.call @mprt_parallel_for(%arg2, %[[FN]], %[[BOX]]) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NOT: @launch
llvm.func @body(%begin: i64, %end: i64, %p: !llvm.ptr, %x: f32) {
  llvm.return
}
llvm.func @launch(i64, !llvm.ptr, f32) attributes {mp.parallel_launch = @body}
llvm.func @caller(%p: !llvm.ptr, %x: f32, %n: i64, %c: i1) {
  llvm.cond_br %c, ^run, ^done
^run:
  llvm.call @launch(%n, %p, %x) : (i64, !llvm.ptr, f32) -> ()
  llvm.br ^done
^done:
  llvm.return
}

// -----

// Pointers the body reaches through one argument only
// (mp.parallel_noalias, from --mp-parallelize-loops) become noalias; the
// list goes.
// CHECK-LABEL: llvm.func internal @exclusive(
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: f32)
// CHECK-NOT: mp.parallel_noalias
// CHECK-SAME: {
llvm.func @exclusive(%begin: i64, %end: i64, %allocated: !llvm.ptr, %aligned: !llvm.ptr, %offset: i64, %other: !llvm.ptr, %x: f32) attributes {mp.parallel_noalias = array<i64: 2, 3>} {
  llvm.return
}
llvm.func @exclusive_launch(i64, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, f32) attributes {mp.parallel_launch = @exclusive}
llvm.func @exclusive_caller(%p: !llvm.ptr, %q: !llvm.ptr, %o: i64, %x: f32, %n: i64) {
  llvm.call @exclusive_launch(%n, %p, %p, %o, %q, %x) : (i64, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, f32) -> ()
  llvm.return
}

// -----

// A position that is not a pointer argument.
// expected-error @+1 {{mp-parallel-launches-to-runtime: mp.parallel_noalias position 4 is not a pointer argument of '!llvm.func<void (i64, i64, ptr, f32)>'}}
llvm.func @wrong_position(%begin: i64, %end: i64, %p: !llvm.ptr, %x: f32) attributes {mp.parallel_noalias = array<i64: 2, 4>} {
  llvm.return
}
llvm.func @wrong_position_launch(i64, !llvm.ptr, f32) attributes {mp.parallel_launch = @wrong_position}
llvm.func @wrong_position_caller(%p: !llvm.ptr, %x: f32, %n: i64) {
  llvm.call @wrong_position_launch(%n, %p, %x) : (i64, !llvm.ptr, f32) -> ()
  llvm.return
}

// -----

// Nothing captured: a null context.
// CHECK-LABEL: llvm.func @nothing_captured(
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @mprt_parallel_for(%arg0, %{{.*}}, %[[NULL]])
llvm.func @lone(%begin: i64, %end: i64) {
  llvm.return
}
llvm.func @lone_launch(i64) attributes {mp.parallel_launch = @lone}
llvm.func @nothing_captured(%n: i64) {
  llvm.call @lone_launch(%n) : (i64) -> ()
  llvm.return
}

// -----

llvm.func @body(%begin: i64, %end: i64, %x: f32) {
  llvm.return
}
// expected-error @+1 {{mp-parallel-launches-to-runtime: launch '!llvm.func<void (i64, f64)>' does not match body '!llvm.func<void (i64, i64, f32)>'}}
llvm.func @launch(i64, f64) attributes {mp.parallel_launch = @body}

// -----

// expected-error @+1 {{mp-parallel-launches-to-runtime: the launch's body @missing is not an LLVM function defined in this module}}
llvm.func @launch(i64) attributes {mp.parallel_launch = @missing}

// -----

llvm.func @body(%begin: i64, %end: i64) {
  llvm.return
}
llvm.func @launch(i64) attributes {mp.parallel_launch = @body}
llvm.func @takes_address() -> !llvm.ptr {
  // expected-error @+1 {{mp-parallel-launches-to-runtime: a parallel launch may only be called directly}}
  %f = llvm.mlir.addressof @launch : !llvm.ptr
  llvm.return %f : !llvm.ptr
}
