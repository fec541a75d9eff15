// RUN: mp-opt %s --mp-convert-to-upstream --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @scale_loss_scalar
// CHECK-SAME: (%[[LOSS:.*]]: f32, %[[SCALE:.*]]: f32)
// CHECK: %[[R:.*]] = arith.mulf %[[LOSS]], %[[SCALE]] : f32
// CHECK: return %[[R]]
func.func @scale_loss_scalar(%loss: f32, %scale: f32) -> f32 {
  %0 = mp.scale_loss %loss, %scale : f32
  return %0 : f32
}

// The scale is rounded to the loss' type before multiplying.
// CHECK-LABEL: func.func @scale_loss_tensor_f16
// CHECK-SAME: (%[[LOSS:.*]]: tensor<?xf16>, %[[SCALE:.*]]: f32)
// CHECK: %[[S16:.*]] = arith.truncf %[[SCALE]] : f32 to f16
// CHECK: %[[DIM:.*]] = tensor.dim %[[LOSS]]
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[DIM]]) : tensor<?xf16>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[LOSS]] : tensor<?xf16>) outs(%[[EMPTY]] : tensor<?xf16>)
// CHECK: ^bb0(%[[IN:.*]]: f16, %{{.*}}: f16):
// CHECK:   %[[M:.*]] = arith.mulf %[[IN]], %[[S16]] : f16
// CHECK:   linalg.yield %[[M]]
func.func @scale_loss_tensor_f16(%loss: tensor<?xf16>, %scale: f32) -> tensor<?xf16> {
  %0 = mp.scale_loss %loss, %scale : tensor<?xf16>
  return %0 : tensor<?xf16>
}

// -----

// Each gradient is multiplied by 1/scale in f32, then checked for inf/nan;
// the checks are chained through one i1 tensor (the second starts from the
// first's result), so the host reads one flag. The check recomputes the
// product from the gradient, so the unscaled tensor has no reader but the
// caller's (the optimizer update it fuses into).
// CHECK-LABEL: func.func @unscale
// CHECK-SAME: (%[[A:.*]]: tensor<4xf16>, %[[B:.*]]: tensor<2x3xf32>, %[[S:.*]]: f32)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[INV:.*]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK: %[[UA:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4xf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:   %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.mulf %[[W]], %[[INV]] : f32
// CHECK: %[[FALSE:.*]] = linalg.fill ins(%false : i1) outs(%{{.*}} : tensor<i1>)
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[FA:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[A]] : tensor<4xf16>) outs(%[[FALSE]] : tensor<i1>)
// CHECK:   %[[W2:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   %[[P:.*]] = arith.mulf %[[W2]], %[[INV]] : f32
// CHECK:   %[[ABS:.*]] = math.absf %[[P]]
// CHECK:   %[[NF:.*]] = arith.cmpf uge, %[[ABS]], %[[INF]] : f32
// CHECK:   arith.ori %{{.*}}, %[[NF]] : i1
// CHECK: %[[UB:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<2x3xf32>)
// CHECK-NOT: arith.extf
// CHECK: %[[FB:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[B]] : tensor<2x3xf32>) outs(%[[FA]] : tensor<i1>)
// CHECK: %[[FOUND:.*]] = tensor.extract %[[FB]][] : tensor<i1>
// CHECK-NOT: tensor.extract
// CHECK: return %[[UA]], %[[UB]], %[[FOUND]]
func.func @unscale(%a: tensor<4xf16>, %b: tensor<2x3xf32>, %s: f32)
    -> (tensor<4xf32>, tensor<2x3xf32>, i1) {
  %u:2, %found = mp.unscale %a, %b by %s
      : tensor<4xf16>, tensor<2x3xf32> -> tensor<4xf32>, tensor<2x3xf32>
  return %u#0, %u#1, %found : tensor<4xf32>, tensor<2x3xf32>, i1
}

// A bf16 result is computed in f32 and rounded once.
// CHECK-LABEL: func.func @unscale_bf16
// CHECK: linalg.generic
// CHECK:   %[[W:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:   %[[P:.*]] = arith.mulf %[[W]], %{{.*}} : f32
// CHECK:   %[[N:.*]] = arith.truncf %[[P]] : f32 to bf16
// CHECK:   linalg.yield %[[N]] : bf16
func.func @unscale_bf16(%a: tensor<8xbf16>, %s: f32) -> (tensor<8xbf16>, i1) {
  %u, %found = mp.unscale %a by %s : tensor<8xbf16> -> tensor<8xbf16>
  return %u, %found : tensor<8xbf16>, i1
}

// -----

// CHECK-LABEL: func.func @update_scale
// CHECK-SAME: (%[[S:.*]]: f32, %[[T:.*]]: i64, %[[F:.*]]: i1)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[INTERVAL:.*]] = arith.constant 7 : i64
// CHECK-DAG: %[[GROWTH:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-DAG: %[[MAX:.*]] = arith.constant 1.000000e+06 : f32
// CHECK-DAG: %[[BACKOFF:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[MIN:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[GT:.*]] = arith.addi %[[T]], %[[ONE]] : i64
// CHECK: %[[GROW:.*]] = arith.cmpi sge, %[[GT]], %[[INTERVAL]] : i64
// CHECK: %[[UP:.*]] = arith.mulf %[[S]], %[[GROWTH]] : f32
// CHECK: %[[UPC:.*]] = arith.minimumf %[[UP]], %[[MAX]] : f32
// CHECK: %[[CS:.*]] = arith.select %[[GROW]], %[[UPC]], %[[S]] : f32
// CHECK: %[[CT:.*]] = arith.select %[[GROW]], %[[ZERO]], %[[GT]] : i64
// CHECK: %[[DOWN:.*]] = arith.mulf %[[S]], %[[BACKOFF]] : f32
// CHECK: %[[DOWNC:.*]] = arith.maximumf %[[DOWN]], %[[MIN]] : f32
// CHECK: %[[NS:.*]] = arith.select %[[F]], %[[DOWNC]], %[[CS]] : f32
// CHECK: %[[NT:.*]] = arith.select %[[F]], %[[ZERO]], %[[CT]] : i64
// CHECK: return %[[NS]], %[[NT]]
func.func @update_scale(%s: f32, %t: i64, %f: i1) -> (f32, i64) {
  %ns, %nt = mp.update_scale %s, %t, %f {growth_factor = 3.0 : f32,
      backoff_factor = 0.25 : f32, growth_interval = 7 : i64,
      min_scale = 0.5 : f32, max_scale = 1.0e6 : f32} : i64
  return %ns, %nt : f32, i64
}

// -----

// With an amax result, one reduction per gradient both checks and measures:
// it maxes |g| (the scaled gradient) into an f32, or +inf where the unscaled
// value is inf/nan; found_inf is that total being +inf. No i1 flags.
// CHECK-LABEL: func.func @unscale_amax
// CHECK-SAME: (%[[A:.*]]: tensor<4xf16>, %[[B:.*]]: tensor<3xf64>, %[[S:.*]]: f32)
// CHECK-NOT: tensor<i1>
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[S]] : f32
// CHECK: %[[UA:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4xf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<f32>)
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[MA:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[A]] : tensor<4xf16>) outs(%[[ZERO]] : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f16, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[W]], %[[INV]] : f32
// CHECK-NEXT: %[[PA:.*]] = math.absf %[[P]] : f32
// CHECK-NEXT: %[[BAD:.*]] = arith.cmpf uge, %[[PA]], %[[INF]] : f32
// CHECK-NEXT: %[[MAG:.*]] = math.absf %[[W]] : f32
// CHECK-NEXT: %[[C:.*]] = arith.select %[[BAD]], %[[INF]], %[[MAG]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[ACC]], %[[C]] : f32
// CHECK-NEXT: linalg.yield %[[M]] : f32
// An f64 gradient is checked in f64; a finite magnitude beyond f32's range
// is clamped to f32's largest, not rounded to inf.
// CHECK: %[[UB:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<3xf64>) outs(%{{.*}} : tensor<3xf64>)
// CHECK: %[[MB:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<3xf64>) outs(%[[MA]] : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[Y:.*]]: f64, %[[ACC2:.*]]: f32):
// CHECK: %[[BAD2:.*]] = arith.cmpf uge, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT: %[[MAG2:.*]] = math.absf %[[Y]] : f64
// CHECK-NEXT: %[[BIG:.*]] = arith.constant 3.4028234663852886E+38 : f64
// CHECK-NEXT: %[[CL:.*]] = arith.minimumf %[[MAG2]], %[[BIG]] : f64
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[CL]] : f64 to f32
// CHECK-NEXT: arith.select %[[BAD2]], %{{.*}}, %[[T]] : f32
// CHECK: %[[TOTAL:.*]] = tensor.extract %[[MB]][] : tensor<f32>
// CHECK: %[[FOUND:.*]] = arith.cmpf uge, %[[TOTAL]], %{{.*}} : f32
// CHECK: return %[[UA]], %[[UB]], %[[FOUND]], %[[TOTAL]]
func.func @unscale_amax(%a: tensor<4xf16>, %b: tensor<3xf64>, %s: f32)
    -> (tensor<4xf32>, tensor<3xf64>, i1, f32) {
  %u:2, %found, %amax = mp.unscale %a, %b by %s
      : tensor<4xf16>, tensor<3xf64> -> tensor<4xf32>, tensor<3xf64> amax f32
  return %u#0, %u#1, %found, %amax : tensor<4xf32>, tensor<3xf64>, i1, f32
}

// -----

// The adaptive scaler: target = bound with its mantissa cleared (the
// largest power of two at most scale / amax * limit / margin = 65504 / 8),
// clamped; growth capped at the power of two at most 2 * scale; hysteresis
// and cool-down through the tracker; backoff on inf.
// CHECK-LABEL: func.func @adapt_scale
// CHECK-SAME: (%[[S:.*]]: f32, %[[T:.*]]: i64, %[[F:.*]]: i1, %[[A:.*]]: f32)
// CHECK-DAG: %[[MIN:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[MAX:.*]] = arith.constant 0x4B800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[MASK:.*]] = arith.constant -8388608 : i32
// CHECK-DAG: %[[LM:.*]] = arith.constant 8.188000e+03 : f32
// CHECK: %[[RATIO:.*]] = arith.divf %[[S]], %[[A]] : f32
// CHECK: %[[BOUND:.*]] = arith.mulf %[[RATIO]], %[[LM]] : f32
// CHECK: %[[BITS:.*]] = arith.bitcast %[[BOUND]] : f32 to i32
// CHECK: %[[POW:.*]] = arith.andi %[[BITS]], %[[MASK]] : i32
// CHECK: %[[P:.*]] = arith.bitcast %[[POW]] : i32 to f32
// CHECK: %[[LO:.*]] = arith.maximumf %[[P]], %[[MIN]] : f32
// CHECK: %[[CLAMPED:.*]] = arith.minimumf %[[LO]], %[[MAX]] : f32
// CHECK: %[[MEASURED:.*]] = arith.cmpf ogt, %[[A]], %{{.*}} : f32
// CHECK: %[[TARGET:.*]] = arith.select %[[MEASURED]], %[[CLAMPED]], %[[S]] : f32
// CHECK: %[[COOL:.*]] = arith.cmpi slt, %[[T]], %[[ZERO]] : i64
// CHECK: %[[COUNT:.*]] = arith.addi %[[T]], %[[ONE]] : i64
// CHECK: %[[COOLSCALE:.*]] = arith.minimumf %[[TARGET]], %[[S]] : f32
// CHECK: %[[LESS:.*]] = arith.cmpf olt, %[[TARGET]], %[[S]] : f32
// CHECK: %[[H:.*]] = arith.constant 3 : i64
// CHECK: %[[NOW:.*]] = arith.cmpi sge, %[[COUNT]], %[[H]] : i64
// CHECK: %[[NOTNOW:.*]] = arith.xori %[[NOW]], %{{.*}} : i1
// CHECK: %[[WAIT:.*]] = arith.andi %[[LESS]], %[[NOTNOW]] : i1
// CHECK: %[[DOUBLE:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK: %[[DBITS:.*]] = arith.bitcast %[[DOUBLE]] : f32 to i32
// CHECK: %[[DPOW:.*]] = arith.andi %[[DBITS]], %[[MASK]] : i32
// CHECK: %[[CAP:.*]] = arith.bitcast %[[DPOW]] : i32 to f32
// CHECK: %[[CAPPED:.*]] = arith.minimumf %[[TARGET]], %[[CAP]] : f32
// CHECK: %[[WS:.*]] = arith.select %[[WAIT]], %[[S]], %[[CAPPED]] : f32
// CHECK: %[[WT:.*]] = arith.select %[[WAIT]], %[[COUNT]], %[[ZERO]] : i64
// CHECK: %[[CS:.*]] = arith.select %[[COOL]], %[[COOLSCALE]], %[[WS]] : f32
// CHECK: %[[CT:.*]] = arith.select %[[COOL]], %[[COUNT]], %[[WT]] : i64
// CHECK: %[[HALF:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK: %[[BACK:.*]] = arith.maximumf %[[HALF]], %[[MIN]] : f32
// CHECK: %[[NS:.*]] = arith.select %[[F]], %[[BACK]], %[[CS]] : f32
// CHECK: %[[CD:.*]] = arith.constant -7 : i64
// CHECK: %[[NT:.*]] = arith.select %[[F]], %[[CD]], %[[CT]] : i64
// CHECK: return %[[NS]], %[[NT]]
func.func @adapt_scale(%s: f32, %t: i64, %f: i1, %amax: f32) -> (f32, i64) {
  %ns, %nt = mp.adapt_scale %s, %t, %f, %amax {margin = 8.0 : f32,
      hysteresis = 3 : i64, growth_interval = 7 : i64} : i64
  return %ns, %nt : f32, i64
}

// -----

// A probe forwards its input.
// CHECK-LABEL: func.func @observe
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: mp.observe
// CHECK: return %[[X]]
func.func @observe(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mp.observe %x as "p0" : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Attribute values of the mp dialect go (upstream tools cannot parse them);
// names and roles stay.
// CHECK-LABEL: func.func @contract
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {mp.param = "w"}, %{{.*}}: tensor<4xf32>)
// CHECK-SAME: attributes {mp.gradient_of = @loss}
// CHECK: linalg.exp ins(
// CHECK-NOT: #mp.
func.func @contract(%w: tensor<4xf32> {mp.param = "w"}, %e: tensor<4xf32>) -> tensor<4xf32>
    attributes {mp.gradient_of = @loss,
                mp.loss_scaling = #mp.loss_scaling<mode = none,
                    init_scale = 1.0, growth_factor = 2.0,
                    backoff_factor = 0.5, growth_interval = 1,
                    clip_norm = 0.0>} {
  %0 = linalg.exp {mp.decision = #mp.decision<deny, f32>, mp.precision = #mp.precision<f32>}
      ins(%w : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
