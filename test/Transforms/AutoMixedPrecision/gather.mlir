// RUN: mp-opt %s --mp-auto-mixed-precision=dtype=bf16 --split-input-file --verify-diagnostics | FileCheck %s
// RUN: mp-opt %s --mp-auto-mixed-precision="dtype=bf16 report=%t.json" --split-input-file --verify-diagnostics -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// (The report holds the last split's decisions: @computed_table's.)

// A gather (an embedding lookup: a linalg.generic whose body yields one
// tensor.extract of a table it does not take as an operand) copies table
// elements: the analysis knows it (no "not understood" warning, which
// --verify-diagnostics would flag) and the min-cut places it like other
// data movement. Here it feeds a bf16 product, so it writes bf16 rows,
// converting each element it copies: the table itself is not converted.
#row = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @embedding_into_matmul(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<4xi32>, %[[TABLE:[^:]*]]: tensor<16x8xf32>
// CHECK-NOT: tensor<16x8xbf16>
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<4xi32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK:   %[[V:.*]] = tensor.extract %[[TABLE]][%{{.*}}, %{{.*}}] : tensor<16x8xf32>
// CHECK:   %[[L:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK:   linalg.yield %[[L]] : bf16
// CHECK: linalg.matmul ins(%[[ROWS]], %{{.*}} : tensor<4x8xbf16>, tensor<8x5xbf16>)
// CHECK-NOT: tensor<16x8xbf16>
// CHECK: return
func.func @embedding_into_matmul(%ids: tensor<4xi32>, %table: tensor<16x8xf32>, %w: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %rows = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %a = tensor.empty() : tensor<4x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%a : tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = linalg.matmul ins(%rows, %w : tensor<4x8xf32>, tensor<8x5xf32>) outs(%acc : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Tied weights: the gather and the LM head's product read one table. The
// product needs a bf16 copy of it; the gather reads that same copy, so the
// table is converted once.
#row = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @tied(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<4xi32>, %[[TABLE:[^:]*]]: tensor<16x8xf32>
// CHECK: %[[LOW:.*]] = linalg.generic {{.*}} ins(%[[TABLE]] : tensor<16x8xf32>) outs(%{{.*}} : tensor<16x8xbf16>)
// CHECK-NOT: ins(%[[TABLE]]
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<4xi32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK:   %[[V:.*]] = tensor.extract %[[LOW]][%{{.*}}, %{{.*}}] : tensor<16x8xbf16>
// CHECK-NEXT: linalg.yield %[[V]] : bf16
// CHECK-NOT: ins(%[[TABLE]]
// CHECK: linalg.matmul {{.*}} ins(%[[ROWS]], %[[LOW]] : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK-NOT: %[[TABLE]]
// CHECK: return
func.func @tied(%ids: tensor<4xi32>, %table: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %rows = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %a = tensor.empty() : tensor<4x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%a : tensor<4x16xf32>) -> tensor<4x16xf32>
  %logits = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%rows, %table : tensor<4x8xf32>, tensor<16x8xf32>) outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %logits : tensor<4x16xf32>
}

// -----

// A table computed in f32 (exp: kept in f32). The gather that feeds a
// product writes bf16, converting what it copies from the f32 table; the
// gather that picks a score for a sum (a loss' target logit) stays f32:
// converting its result back would cost more than it saves.
#row = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @computed_table(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<4xi32>
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16x8xf32>)
// CHECK:   math.exp %{{.*}} : f32
// CHECK-NOT: tensor<16x8xbf16>
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<4xi32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK:   %[[V:.*]] = tensor.extract %[[EXP]][%{{.*}}, %{{.*}}] : tensor<16x8xf32>
// CHECK:   arith.truncf %[[V]] : f32 to bf16
// CHECK: %[[PICK:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<4xi32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:   %[[S:.*]] = tensor.extract %[[EXP]][%{{.*}}, %{{.*}}] : tensor<16x8xf32>
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[PICK]] : tensor<4xf32>) outs(%{{.*}} : tensor<f32>)
func.func @computed_table(%ids: tensor<4xi32>, %x: tensor<16x8xf32>, %w: tensor<8x5xf32>) -> (tensor<4x5xf32>, tensor<f32>) {
  %t0 = tensor.empty() : tensor<16x8xf32>
  %table = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x8xf32>) outs(%t0 : tensor<16x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ex = math.exp %a : f32
    linalg.yield %ex : f32
  } -> tensor<16x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %rows = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %a = tensor.empty() : tensor<4x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%a : tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = linalg.matmul ins(%rows, %w : tensor<4x8xf32>, tensor<8x5xf32>) outs(%acc : tensor<4x5xf32>) -> tensor<4x5xf32>
  %p0 = tensor.empty() : tensor<4xf32>
  %picked = linalg.generic {indexing_maps = [#col, #col], iterator_types = ["parallel"]}
      ins(%ids : tensor<4xi32>) outs(%p0 : tensor<4xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %c0 = arith.constant 0 : index
    %s = tensor.extract %table[%i, %c0] : tensor<16x8xf32>
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %s0 = tensor.empty() : tensor<f32>
  %sacc = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#col, #all], iterator_types = ["reduction"]}
      ins(%picked : tensor<4xf32>) outs(%sacc : tensor<f32>) {
  ^bb0(%p: f32, %r: f32):
    %t = arith.addf %p, %r : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %y, %sum : tensor<4x5xf32>, tensor<f32>
}

// REPORT: "function": "computed_table"
// REPORT: "class": "clear"
// REPORT-NEXT: "decision": "bf16"
// REPORT-NEXT: "function": "computed_table"
// REPORT: "rule": "gather"
// REPORT: "class": "clear"
// REPORT-NEXT: "decision": "f32"
// REPORT-NEXT: "function": "computed_table"
// REPORT: "reason": "gather copies table elements: precision-neutral, reads the table's copy in its own type; f32: converting would move more bytes than running low saves (min-cut)"
// REPORT-NEXT: "rule": "gather"
