// Sensitivity fallback: the layer's estimated error (activation 0.0055 and
// weight 0.0040, see Inputs/stats.json) is about 0.0068. Under max-error it
// stays f32 (default) or runs with f16 inputs; the report says why.
// RUN: mp-opt %s --mp-quantize="calibration=%S/Inputs/stats.json max-error=0.005 report=%t.f32.json" | FileCheck %s --check-prefix=F32
// RUN: FileCheck %s --check-prefix=REPORT < %t.f32.json
// RUN: mp-opt %s --mp-quantize="calibration=%S/Inputs/stats.json max-error=0.005 fallback=f16" | FileCheck %s --check-prefix=F16
// RUN: mp-opt %s --mp-quantize="calibration=%S/Inputs/stats.json max-error=0.01 report=%t.int8.json" | FileCheck %s --check-prefix=INT8
// RUN: FileCheck %s --check-prefix=REPORT8 < %t.int8.json

// F32-LABEL: func.func @layer
// F32-SAME: %{{.*}}: tensor<8x16xf32> {mp.param = "w"}
// F32: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// F32-NOT: quantize_weights
// REPORT: "activation": "layer/arg0",
// REPORT: "activation_error": 0.0055
// REPORT: "estimated_error": 0.0068
// REPORT: "precision": "f32",
// REPORT: "reason": "estimated error 0.0068{{[0-9]*}} exceeds max-error 0.005{{0*}}; runs in f32",
// REPORT: "weight": "layer/arg1",
// REPORT: "weight_error": 0.0039
// REPORT: "totals": {
// REPORT-NEXT: "f32": 1
// F16-LABEL: func.func @layer
// F16: arith.truncf %{{.*}} : f32 to f16
// F16: arith.truncf %{{.*}} : f32 to f16
// F16: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x16xf16>) outs(%{{.*}} : tensor<4x16xf32>)
// INT8: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xi8>, tensor<8x16xi8>)
// REPORT8: "bias_in_i32": false,
// REPORT8: "dequantize": "separate",
// REPORT8: "precision": "int8",
// REPORT8: "weights": "hoisted"
// REPORT8: "totals": {
// REPORT8-NEXT: "int8": 1
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x16xf32> {mp.param = "w"}) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %mm : tensor<4x16xf32>
}

// fallback-ops names ops by result id ("layer/1": the fill is ordinal 0);
// probe-outputs puts a probe with that id on the f32 result, after a
// separate dequantization (here of the int8 op in @layer, and on the
// fallback result in @named).
// RUN: mp-opt %s --mp-quantize="calibration=%S/Inputs/stats.json fallback-ops=layer/1 report=%t.named.json" | FileCheck %s --check-prefix=NAMED
// RUN: FileCheck %s --check-prefix=NAMEDREPORT < %t.named.json
// RUN: mp-opt %s --mp-quantize="calibration=%S/Inputs/stats.json probe-outputs=true" | FileCheck %s --check-prefix=PROBE
// RUN: mp-opt %s --mp-quantize="calibration=%S/Inputs/stats.json probe-outputs=true fallback-ops=layer/1 fallback=f16" | FileCheck %s --check-prefix=PROBE16
// NAMED: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// NAMEDREPORT: "reason": "fallback-ops names 'layer/1'; runs in f32",
// PROBE: %[[ACC:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xi8>, tensor<8x16xi8>)
// PROBE: %[[D:.*]] = linalg.generic {{.*}} ins(%[[ACC]]
// PROBE: %[[P:.*]] = mp.observe %[[D]] as "layer/1" : tensor<4x16xf32>
// PROBE: return %[[P]]
// PROBE16: %[[MM:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x16xf16>)
// PROBE16: mp.observe %[[MM]] as "layer/1"
