// Thresholds by method, read back from the report: minmax takes max |x|;
// percentile the given percentile of the |x| histogram; entropy the
// threshold minimising the KL divergence. The statistics (make_stats.py)
// are a half-normal bulk (sigma 1) with three outliers at |x| ~ 40.
// RUN: python3 %S/Inputs/make_stats.py > %t.stats.json
// RUN: mp-opt %s --mp-quantize="calibration=%t.stats.json method=minmax max-error=0.07 report=%t.minmax.json" -o /dev/null
// RUN: mp-opt %s --mp-quantize="calibration=%t.stats.json method=percentile percentile=99.9 max-error=0.07 report=%t.p999.json" -o /dev/null
// RUN: mp-opt %s --mp-quantize="calibration=%t.stats.json method=percentile percentile=99.99 max-error=0.07 report=%t.p9999.json" -o /dev/null
// RUN: mp-opt %s --mp-quantize="calibration=%t.stats.json method=entropy max-error=0.07 report=%t.entropy.json" -o /dev/null
// A module without mp attributes still gets its output probes (the pass
// loads the mp dialect for mp.observe; it used to crash here).
// RUN: mp-opt %s --mp-quantize="calibration=%t.stats.json probe-outputs=true" | FileCheck %s --check-prefix=PROBE
// PROBE: mp.observe
// RUN: python3 -c "import json,sys; [print(f, round(json.load(open(p))['ops'][0]['threshold'], 2), json.load(open(p))['ops'][0]['precision']) for f, p in zip(['minmax','p999','p9999','entropy'], sys.argv[1:])]" %t.minmax.json %t.p999.json %t.p9999.json %t.entropy.json | FileCheck %s
// max |x| = 40 clips nothing, but rounding noise on a sigma-1 bulk with a
// step of 40/127 is about 9% of the signal: above max-error (7%), f32.
// The others clip the outliers, which costs about 6%: int8.
// CHECK: minmax 40 f32
// The 99.9th percentile of a half-normal is 3.29 (bins of 40/2048).
// CHECK: p999 3.3 int8
// CHECK: p9999 3.91 int8
// Entropy lands between the bulk and the outliers, well below 40.
// CHECK: entropy {{[2-9]\.[0-9]+}} int8

func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %mm : tensor<4x16xf32>
}
