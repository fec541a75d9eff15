// RUN: mp-opt %s --mp-keep-f32="locations=features.3" | FileCheck %s --check-prefix=MODULE
// RUN: mp-opt %s --mp-keep-f32="locations=features.3.block.1" | FileCheck %s --check-prefix=EXACT
// RUN: mp-opt %s --mp-keep-f32="locations=/head/Gemm" | FileCheck %s --check-prefix=NODE
// RUN: mp-opt %s --mp-keep-f32='locations="features.3.block.1 at model.py:13:3"' | FileCheck %s --check-prefix=NAMEAT
// RUN: mp-opt %s --mp-keep-f32="locations=model.py:14:3,15:3" | FileCheck %s --check-prefix=LINES
// RUN: not mp-opt %s --mp-keep-f32="locations=features.4" 2>&1 | FileCheck %s --check-prefix=NOWHERE
// RUN: not mp-opt %s --mp-keep-f32='locations="features.3.block.1 at model.py:15:3"' 2>&1 | FileCheck %s --check-prefix=NOWHERE-AT
// RUN: mp-opt %s --mp-check-numerics | FileCheck %s --check-prefix=PROBES

// Named locations: the PyTorch frontend's module paths around one line per
// op, an ONNX node's name around FILE:0:0. A module path takes its
// submodules' ops too (features.3 -> features.3.block.1, not features.30);
// "NAME at FILE:LINE:COL" (the precision report's "loc") takes the ops
// with both; FILE:LINE:COL and LINE:COL work as for unnamed locations.
// MODULE-LABEL: func.func @f
// MODULE:      linalg.mul {mp.precision = #mp.precision<f32>}
// MODULE-NEXT: linalg.add {mp.precision = #mp.precision<f32>}
// MODULE-NEXT: linalg.sub ins
// MODULE-NEXT: linalg.mul {mp.precision = #mp.precision<f32>}
// MODULE-NEXT: linalg.add ins

// EXACT-LABEL: func.func @f
// EXACT:      linalg.mul ins
// EXACT-NEXT: linalg.add {mp.precision = #mp.precision<f32>}
// EXACT-NEXT: linalg.sub ins
// EXACT-NEXT: linalg.mul ins
// EXACT-NEXT: linalg.add ins

// NODE-LABEL: func.func @f
// NODE:      linalg.mul ins
// NODE-NEXT: linalg.add ins
// NODE-NEXT: linalg.sub ins
// NODE-NEXT: linalg.mul ins
// NODE-NEXT: linalg.add {mp.precision = #mp.precision<f32>}

// NAMEAT-LABEL: func.func @f
// NAMEAT:      linalg.mul ins
// NAMEAT-NEXT: linalg.add {mp.precision = #mp.precision<f32>}
// NAMEAT-NEXT: linalg.sub ins
// NAMEAT-NEXT: linalg.mul ins
// NAMEAT-NEXT: linalg.add ins

// LINES-LABEL: func.func @f
// LINES:      linalg.mul ins
// LINES-NEXT: linalg.add ins
// LINES-NEXT: linalg.sub {mp.precision = #mp.precision<f32>}
// LINES-NEXT: linalg.mul {mp.precision = #mp.precision<f32>}
// LINES-NEXT: linalg.add ins

// NOWHERE: error: --keep-f32 features.4: no op of the model is at that location or in that module (give FILE:LINE:COL, LINE:COL, a module path or node name, or NAME at FILE:LINE:COL, as --check-numerics and the precision report print them)
// NOWHERE-AT: error: --keep-f32 features.3.block.1 at model.py:15:3: no op of the model is at that location or in that module

// What --check-numerics names, --keep-f32 takes (the runs above): module
// paths and node names.
// PROBES: mp.observe %{{.*}} as "f#0 linalg.mul at features.3"
// PROBES: mp.observe %{{.*}} as "f#1 linalg.add at features.3.block.1"
// PROBES: mp.observe %{{.*}} as "f#2 linalg.sub at features.30"
// PROBES: mp.observe %{{.*}} as "f#3 linalg.mul at features.3.block.2"
// PROBES: mp.observe %{{.*}} as "f#4 linalg.add at /head/Gemm"
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.mul ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32> loc("features.3"("model.py":12:3))
  %b = linalg.add ins(%a, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32> loc("features.3.block.1"("model.py":13:3))
  %c = linalg.sub ins(%b, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32> loc("features.30"("model.py":14:3))
  %d = linalg.mul ins(%c, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32> loc("features.3.block.2"("model.py":15:3))
  %g = linalg.add ins(%d, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32> loc("/head/Gemm"("model.onnx":0:0))
  return %g : tensor<4xf32>
}
