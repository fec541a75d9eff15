// RUN: mp-opt %s --mp-quantize="mode=int8-dynamic report=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: mp-opt %s --mp-quantize="mode=int8-dynamic" --mp-lower-cpu="runtime-contractions=1 vectorize=0" | FileCheck %s --check-prefix=LOWERED

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>

// A batch_matmul whose B is a weight (one k x n matrix per batch entry, as
// per-head projections have): the weight is quantized once with one scale
// per output column n, shared across the batch, and the product runs as
// i8 x i8 -> i32 with the bias in the accumulator and the dequantization
// fused into the consumer.
// CHECK-LABEL: func.func @per_head
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x5x3xf32>, %[[B:[^:]*]]: tensor<4xf32> {mp.param = "b"}, %[[WQ:[^:]*]]: tensor<2x3x4xi8> {mp.qweight = "w"}, %[[WS:[^:]*]]: tensor<4xf32> {mp.qscale = "w"})
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "reduction"]} ins(%[[X]] : tensor<2x5x3xf32>)
// CHECK: %[[XQ:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<2x5x3xf32>)
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[WS]] : tensor<4xf32>)
// CHECK: %[[BQ:.*]] = linalg.generic {{.*}} ins(%[[B]], %[[SCALE]] : tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[ACC:.*]] = linalg.batch_matmul ins(%[[XQ]], %[[WQ]] : tensor<2x5x3xi8>, tensor<2x3x4xi8>) outs(%{{.*}} : tensor<2x5x4xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[B]], %[[SCALE]] : tensor<2x5x4xi32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.sitofp
// CHECK-NOT: arith.addf
// CHECK: func.func @per_head_quantize_weights(%{{.*}}: tensor<2x3x4xf32> {mp.param = "w"}) -> (tensor<2x3x4xi8> {mp.qweight = "w"}, tensor<4xf32> {mp.qscale = "w"})
// The weight's max |w| reduces over the batch and k, keeping n.
// CHECK: iterator_types = ["reduction", "reduction", "parallel"]
// REPORT: "bias_in_i32": true
// REPORT: "dequantize": "fused"
// REPORT: "op": "linalg.batch_matmul"
// REPORT: "precision": "int8",
// REPORT: "weights": "hoisted"
// The s8 batch runs on the runtime's batched entry (type 3).
// LOWERED-LABEL: llvm.func @per_head(
// LOWERED: %[[S8:.*]] = llvm.mlir.constant(3 : i32) : i32
// LOWERED: llvm.call @mprt_gemm_batched({{.*}}, %[[S8]], {{.*}})
func.func @per_head(%x: tensor<2x5x3xf32>, %w: tensor<2x3x4xf32> {mp.param = "w"},
                    %b: tensor<4xf32> {mp.param = "b"}) -> tensor<2x5x4xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %mm = linalg.batch_matmul ins(%x, %w : tensor<2x5x3xf32>, tensor<2x3x4xf32>)
                            outs(%z : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %r = linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm, %b : tensor<2x5x4xf32>, tensor<4xf32>) outs(%e : tensor<2x5x4xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x5x4xf32>
  return %r : tensor<2x5x4xf32>
}


// A constant batched weight is quantized at compile time, per column.
// CHECK-LABEL: func.func @constant_weight
// CHECK-DAG: arith.constant dense<{{\[}}{{\[}}[127, -127], [0, 64]], {{\[}}[-127, 127], [0, 0]]]> : tensor<2x2x2xi8>
// CHECK-DAG: arith.constant dense<[0.0157480314, 0.0314960629]> : tensor<2xf32>
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x1x2xi8>, tensor<2x2x2xi8>)
// REPORT: "op": "linalg.batch_matmul"
// REPORT: "precision": "int8",
// REPORT: "weights": "constant"
// LOWERED-LABEL: llvm.func @constant_weight(
// LOWERED: llvm.call @mprt_gemm_batched
func.func @constant_weight(%x: tensor<2x1x2xf32>) -> tensor<2x1x2xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[2.0, -4.0], [0.0, 2.0]], [[-2.0, 4.0], [0.0, 0.0]]]> : tensor<2x2x2xf32>
  %e = tensor.empty() : tensor<2x1x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x1x2xf32>) -> tensor<2x1x2xf32>
  %mm = linalg.batch_matmul ins(%x, %w : tensor<2x1x2xf32>, tensor<2x2x2xf32>)
                            outs(%z : tensor<2x1x2xf32>) -> tensor<2x1x2xf32>
  return %mm : tensor<2x1x2xf32>
}


// Attention's product of two activations has no weight to give channels:
// it stays f32, and the report says why.
// CHECK-LABEL: func.func @attention
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x5x3xf32>, tensor<2x3x5xf32>)
// REPORT: "op": "linalg.batch_matmul"
// REPORT: "precision": "f32",
// REPORT: "reason": "not quantized: batch_matmul of two activations (its B is neither a constant nor an mp.param weight)"
// REPORT: "totals": {
// REPORT-NEXT: "f32": 1,
// REPORT-NEXT: "int8": 2
func.func @attention(%q: tensor<2x5x3xf32>, %k: tensor<2x3x5xf32>) -> tensor<2x5x5xf32> attributes {mp.predict} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x5xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %mm = linalg.batch_matmul ins(%q, %k : tensor<2x5x3xf32>, tensor<2x3x5xf32>)
                            outs(%z : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  return %mm : tensor<2x5x5xf32>
}
