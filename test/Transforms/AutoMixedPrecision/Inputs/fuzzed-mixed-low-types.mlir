// Found by fuzz_mp_opt (seed 34, run 369, kind autodiff-gpu) on 2026-11-25:
// a CNN training step whose ops carry mp.decision attributes naming f16
// (given decisions mix f16 into a bf16 run). --mp-auto-mixed-precision=dtype=bf16
// never returned on it: converting a consumer's f16 block argument to bf16
// takes two ops, and redirecting the argument's uses made the first read
// the second's result. Run by ../mixed-low-types.mlir.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d1)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d1)>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<(d0) -> (d0)>
#map7 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map8 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map9 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map10 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#map11 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#map12 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#map13 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#map14 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
#map15 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
module {
  func.func @loss(%arg0: tensor<64x1x8x8xf32>, %arg1: tensor<64x10xf32>, %arg2: tensor<8x1x3x3xf32> {mp.param = "k"}, %arg3: tensor<8xf32> {mp.param = "c"}, %arg4: tensor<72x10xf32> {mp.param = "w"}, %arg5: tensor<10xf32> {mp.param = "b"}) -> f32 attributes {mp.loss} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.562500e-02 : f32
    %0 = tensor.empty() : tensor<64x8x6x6xf32>
    %1 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%0 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg2 : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg3 : tensor<64x8x6x6xf32>, tensor<8xf32>) outs(%0 : tensor<64x8x6x6xf32>) attrs =  {mp.decision = #mp.decision<infer, f16>} {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %21 = arith.addf %in, %in_2 : f32
      %22 = arith.maximumf %21, %cst : f32
      linalg.yield %22 : f32
    } -> tensor<64x8x6x6xf32>
    %4 = tensor.empty() : tensor<64x8x3x3xf32>
    %5 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%4 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %6 = tensor.empty() : tensor<2x2xf32>
    %7 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%3, %6 : tensor<64x8x6x6xf32>, tensor<2x2xf32>) outs(%5 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %collapsed = tensor.collapse_shape %7 [[0], [1, 2, 3]] {mp.decision = #mp.decision<clear, f16>} : tensor<64x8x3x3xf32> into tensor<64x72xf32>
    %8 = tensor.empty() : tensor<64x10xf32>
    %9 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%8 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %10 = linalg.matmul {mp.decision = #mp.decision<allow, f16>} ins(%collapsed, %arg4 : tensor<64x72xf32>, tensor<72x10xf32>) outs(%9 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %11 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%10, %arg5 : tensor<64x10xf32>, tensor<10xf32>) outs(%8 : tensor<64x10xf32>) attrs =  {mp.decision = #mp.decision<infer, f32>} {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %21 = arith.addf %in, %in_2 : f32
      linalg.yield %21 : f32
    } -> tensor<64x10xf32>
    %12 = tensor.empty() : tensor<64xf32>
    %13 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%12 : tensor<64xf32>) -> tensor<64xf32>
    %14 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "reduction"]} ins(%11 : tensor<64x10xf32>) outs(%13 : tensor<64xf32>) attrs =  {mp.decision = #mp.decision<clear, f32>} {
    ^bb0(%in: f32, %out: f32):
      %21 = arith.maximumf %in, %out : f32
      linalg.yield %21 : f32
    } -> tensor<64xf32>
    %15 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%12 : tensor<64xf32>) -> tensor<64xf32>
    %16 = linalg.generic {indexing_maps = [#map2, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14 : tensor<64x10xf32>, tensor<64xf32>) outs(%15 : tensor<64xf32>) attrs =  {mp.decision = #mp.decision<deny, f32>} {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %21 = arith.subf %in, %in_2 : f32
      %22 = math.exp %21 : f32
      %23 = arith.addf %22, %out : f32
      linalg.yield %23 : f32
    } -> tensor<64xf32>
    %17 = tensor.empty() : tensor<f32>
    %18 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%17 : tensor<f32>) -> tensor<f32>
    %19 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map2, #map5], iterator_types = ["reduction", "reduction"]} ins(%11, %14, %16, %arg1 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x10xf32>) outs(%18 : tensor<f32>) attrs =  {mp.decision = #mp.decision<deny, f32>} {
    ^bb0(%in: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32):
      %21 = math.log %in_3 : f32
      %22 = arith.subf %in, %in_2 : f32
      %23 = arith.subf %22, %21 : f32
      %24 = arith.mulf %23, %in_4 : f32
      %25 = arith.subf %out, %24 : f32
      linalg.yield %25 : f32
    } -> tensor<f32>
    %extracted = tensor.extract %19[] {mp.decision = #mp.decision<deny, f32>} : tensor<f32>
    %20 = arith.mulf %extracted, %cst_1 : f32
    return %20 : f32
  }
  func.func @loss_grad(%arg0: tensor<64x1x8x8xf32>, %arg1: tensor<64x10xf32>, %arg2: tensor<8x1x3x3xf32> {mp.param = "k"}, %arg3: tensor<8xf32> {mp.param = "c"}, %arg4: tensor<72x10xf32> {mp.param = "w"}, %arg5: tensor<10xf32> {mp.param = "b"}) -> (f32, tensor<8x1x3x3xf32> {mp.grad = "k"}, tensor<8xf32> {mp.grad = "c"}, tensor<72x10xf32> {mp.grad = "w"}, tensor<10xf32> {mp.grad = "b"}) attributes {mp.gradient_of = @loss, mp.loss_scaling = #mp.loss_scaling<mode = none, init_scale = 6.553600e+04, growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, growth_interval = 2000, clip_norm = 0.000000e+00>} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.562500e-02 : f32
    %0 = tensor.empty() : tensor<64x8x6x6xf32>
    %1 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%0 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg2 : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg3 : tensor<64x8x6x6xf32>, tensor<8xf32>) outs(%0 : tensor<64x8x6x6xf32>) attrs =  {mp.decision = #mp.decision<infer, f16>} {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      %80 = arith.maximumf %79, %cst : f32
      linalg.yield %80 : f32
    } -> tensor<64x8x6x6xf32>
    %4 = tensor.empty() : tensor<64x8x3x3xf32>
    %5 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%4 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %6 = tensor.empty() : tensor<2x2xf32>
    %7 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%3, %6 : tensor<64x8x6x6xf32>, tensor<2x2xf32>) outs(%5 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %collapsed = tensor.collapse_shape %7 [[0], [1, 2, 3]] {mp.decision = #mp.decision<clear, f16>} : tensor<64x8x3x3xf32> into tensor<64x72xf32>
    %8 = tensor.empty() : tensor<64x10xf32>
    %9 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%8 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %10 = linalg.matmul {mp.decision = #mp.decision<allow, f16>} ins(%collapsed, %arg4 : tensor<64x72xf32>, tensor<72x10xf32>) outs(%9 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %11 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%10, %arg5 : tensor<64x10xf32>, tensor<10xf32>) outs(%8 : tensor<64x10xf32>) attrs =  {mp.decision = #mp.decision<infer, f32>} {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      linalg.yield %79 : f32
    } -> tensor<64x10xf32>
    %12 = tensor.empty() : tensor<64xf32>
    %13 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%12 : tensor<64xf32>) -> tensor<64xf32>
    %14 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "reduction"]} ins(%11 : tensor<64x10xf32>) outs(%13 : tensor<64xf32>) attrs =  {mp.decision = #mp.decision<clear, f32>} {
    ^bb0(%in: f32, %out: f32):
      %79 = arith.maximumf %in, %out : f32
      linalg.yield %79 : f32
    } -> tensor<64xf32>
    %15 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%12 : tensor<64xf32>) -> tensor<64xf32>
    %16 = linalg.generic {indexing_maps = [#map2, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14 : tensor<64x10xf32>, tensor<64xf32>) outs(%15 : tensor<64xf32>) attrs =  {mp.decision = #mp.decision<deny, f32>} {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.subf %in, %in_20 : f32
      %80 = math.exp %79 : f32
      %81 = arith.addf %80, %out : f32
      linalg.yield %81 : f32
    } -> tensor<64xf32>
    %17 = tensor.empty() : tensor<f32>
    %18 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%17 : tensor<f32>) -> tensor<f32>
    %19 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map2, #map5], iterator_types = ["reduction", "reduction"]} ins(%11, %14, %16, %arg1 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x10xf32>) outs(%18 : tensor<f32>) attrs =  {mp.decision = #mp.decision<deny, f32>} {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %in_22: f32, %out: f32):
      %79 = math.log %in_21 : f32
      %80 = arith.subf %in, %in_20 : f32
      %81 = arith.subf %80, %79 : f32
      %82 = arith.mulf %81, %in_22 : f32
      %83 = arith.subf %out, %82 : f32
      linalg.yield %83 : f32
    } -> tensor<f32>
    %extracted = tensor.extract %19[] {mp.decision = #mp.decision<deny, f32>} : tensor<f32>
    %20 = arith.mulf %extracted, %cst_1 : f32
    %cst_2 = arith.constant {mp.seed} 1.000000e+00 : f32
    %21 = arith.mulf %cst_2, %cst_1 : f32
    %22 = arith.mulf %cst_2, %extracted : f32
    %23 = tensor.empty() : tensor<f32>
    %cst_3 = arith.constant 0.000000e+00 : f32
    %24 = linalg.fill ins(%cst_3 : f32) outs(%23 : tensor<f32>) -> tensor<f32>
    %inserted = tensor.insert %21 into %24[] : tensor<f32>
    %25 = tensor.empty() : tensor<64x10xf32>
    %cst_4 = arith.constant 0.000000e+00 : f32
    %26 = linalg.fill ins(%cst_4 : f32) outs(%25 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %27 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg1, %inserted : tensor<64x10xf32>, tensor<f32>) outs(%26 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.negf %in_20 : f32
      %80 = arith.mulf %79, %in : f32
      %81 = arith.addf %out, %80 : f32
      linalg.yield %81 : f32
    } -> tensor<64x10xf32>
    %28 = tensor.empty() : tensor<64xf32>
    %cst_5 = arith.constant 0.000000e+00 : f32
    %29 = linalg.fill ins(%cst_5 : f32) outs(%28 : tensor<64xf32>) -> tensor<64xf32>
    %30 = linalg.generic {indexing_maps = [#map2, #map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%arg1, %inserted : tensor<64x10xf32>, tensor<f32>) outs(%29 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.negf %in_20 : f32
      %80 = arith.mulf %79, %in : f32
      %81 = arith.negf %80 : f32
      %82 = arith.addf %out, %81 : f32
      linalg.yield %82 : f32
    } -> tensor<64xf32>
    %31 = tensor.empty() : tensor<64xf32>
    %cst_6 = arith.constant 0.000000e+00 : f32
    %32 = linalg.fill ins(%cst_6 : f32) outs(%31 : tensor<64xf32>) -> tensor<64xf32>
    %33 = linalg.generic {indexing_maps = [#map4, #map2, #map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%16, %arg1, %inserted : tensor<64xf32>, tensor<64x10xf32>, tensor<f32>) outs(%32 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %out: f32):
      %79 = arith.negf %in_21 : f32
      %80 = arith.mulf %79, %in_20 : f32
      %81 = arith.negf %80 : f32
      %82 = arith.divf %81, %in : f32
      %83 = arith.addf %out, %82 : f32
      linalg.yield %83 : f32
    } -> tensor<64xf32>
    %34 = tensor.empty() : tensor<64x10xf32>
    %cst_7 = arith.constant 0.000000e+00 : f32
    %35 = linalg.fill ins(%cst_7 : f32) outs(%34 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %36 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map2], iterator_types = ["parallel", "parallel"]} ins(%11, %14, %33 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>) outs(%35 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %out: f32):
      %79 = arith.subf %in, %in_20 : f32
      %80 = math.exp %79 : f32
      %81 = arith.mulf %in_21, %80 : f32
      %82 = arith.addf %out, %81 : f32
      linalg.yield %82 : f32
    } -> tensor<64x10xf32>
    %37 = tensor.empty() : tensor<64x10xf32>
    %38 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%27, %36 : tensor<64x10xf32>, tensor<64x10xf32>) outs(%37 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      linalg.yield %79 : f32
    } -> tensor<64x10xf32>
    %39 = tensor.empty() : tensor<64xf32>
    %cst_8 = arith.constant 0.000000e+00 : f32
    %40 = linalg.fill ins(%cst_8 : f32) outs(%39 : tensor<64xf32>) -> tensor<64xf32>
    %41 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14, %33 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>) outs(%40 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %out: f32):
      %79 = arith.subf %in, %in_20 : f32
      %80 = math.exp %79 : f32
      %81 = arith.mulf %in_21, %80 : f32
      %82 = arith.negf %81 : f32
      %83 = arith.addf %out, %82 : f32
      linalg.yield %83 : f32
    } -> tensor<64xf32>
    %42 = tensor.empty() : tensor<64xf32>
    %43 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%30, %41 : tensor<64xf32>, tensor<64xf32>) outs(%42 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      linalg.yield %79 : f32
    } -> tensor<64xf32>
    %44 = tensor.empty() : tensor<64x10xf32>
    %cst_9 = arith.constant 0.000000e+00 : f32
    %45 = linalg.fill ins(%cst_9 : f32) outs(%44 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %46 = tensor.empty() : tensor<64xf32>
    %cst_10 = arith.constant 0.000000e+00 : f32
    %47 = linalg.fill ins(%cst_10 : f32) outs(%46 : tensor<64xf32>) -> tensor<64xf32>
    %48 = linalg.generic {indexing_maps = [#map2, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14 : tensor<64x10xf32>, tensor<64xf32>) outs(%47 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.cmpf oeq, %in, %in_20 : f32
      %cst_21 = arith.constant 0.000000e+00 : f32
      %cst_22 = arith.constant 1.000000e+00 : f32
      %80 = arith.select %79, %cst_22, %cst_21 : f32
      %81 = arith.addf %out, %80 : f32
      linalg.yield %81 : f32
    } -> tensor<64xf32>
    %49 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map4, #map2], iterator_types = ["parallel", "parallel"]} ins(%11, %14, %43, %48 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%45 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %in_22: f32, %out: f32):
      %79 = arith.cmpf oeq, %in, %in_20 : f32
      %80 = arith.divf %in_21, %in_22 : f32
      %cst_23 = arith.constant 0.000000e+00 : f32
      %81 = arith.select %79, %80, %cst_23 : f32
      %82 = arith.addf %out, %81 : f32
      linalg.yield %82 : f32
    } -> tensor<64x10xf32>
    %50 = tensor.empty() : tensor<64x10xf32>
    %51 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%38, %49 : tensor<64x10xf32>, tensor<64x10xf32>) outs(%50 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      linalg.yield %79 : f32
    } -> tensor<64x10xf32>
    %52 = tensor.empty() : tensor<64x10xf32>
    %cst_11 = arith.constant 0.000000e+00 : f32
    %53 = linalg.fill ins(%cst_11 : f32) outs(%52 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %54 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%51 : tensor<64x10xf32>) outs(%53 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %79 = arith.addf %out, %in : f32
      linalg.yield %79 : f32
    } -> tensor<64x10xf32>
    %55 = tensor.empty() : tensor<10xf32>
    %cst_12 = arith.constant 0.000000e+00 : f32
    %56 = linalg.fill ins(%cst_12 : f32) outs(%55 : tensor<10xf32>) -> tensor<10xf32>
    %57 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["reduction", "parallel"]} ins(%51 : tensor<64x10xf32>) outs(%56 : tensor<10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %79 = arith.addf %out, %in : f32
      linalg.yield %79 : f32
    } -> tensor<10xf32>
    %58 = tensor.empty() : tensor<64x72xf32>
    %cst_13 = arith.constant 0.000000e+00 : f32
    %59 = linalg.fill ins(%cst_13 : f32) outs(%58 : tensor<64x72xf32>) -> tensor<64x72xf32>
    %60 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg4, %54 : tensor<72x10xf32>, tensor<64x10xf32>) outs(%59 : tensor<64x72xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.mulf %in_20, %in : f32
      %80 = arith.addf %out, %79 : f32
      linalg.yield %80 : f32
    } -> tensor<64x72xf32>
    %61 = tensor.empty() : tensor<72x10xf32>
    %cst_14 = arith.constant 0.000000e+00 : f32
    %62 = linalg.fill ins(%cst_14 : f32) outs(%61 : tensor<72x10xf32>) -> tensor<72x10xf32>
    %63 = linalg.generic {indexing_maps = [#map9, #map8, #map7], iterator_types = ["reduction", "parallel", "parallel"]} ins(%collapsed, %54 : tensor<64x72xf32>, tensor<64x10xf32>) outs(%62 : tensor<72x10xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.mulf %in_20, %in : f32
      %80 = arith.addf %out, %79 : f32
      linalg.yield %80 : f32
    } -> tensor<72x10xf32>
    %expanded = tensor.expand_shape %60 [[0], [1, 2, 3]] output_shape [64, 8, 3, 3] : tensor<64x72xf32> into tensor<64x8x3x3xf32>
    %64 = tensor.empty() : tensor<64x8x6x6xf32>
    %cst_15 = arith.constant 0.000000e+00 : f32
    %65 = linalg.fill ins(%cst_15 : f32) outs(%64 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %66 = tensor.empty() : tensor<64x8x3x3xf32>
    %cst_16 = arith.constant 0.000000e+00 : f32
    %67 = linalg.fill ins(%cst_16 : f32) outs(%66 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %68 = linalg.generic {indexing_maps = [#map10, #map11, #map12, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%3, %6, %7 : tensor<64x8x6x6xf32>, tensor<2x2xf32>, tensor<64x8x3x3xf32>) outs(%67 : tensor<64x8x3x3xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %out: f32):
      %79 = arith.cmpf oeq, %in, %in_21 : f32
      %cst_22 = arith.constant 0.000000e+00 : f32
      %cst_23 = arith.constant 1.000000e+00 : f32
      %80 = arith.select %79, %cst_23, %cst_22 : f32
      %81 = arith.addf %out, %80 : f32
      linalg.yield %81 : f32
    } -> tensor<64x8x3x3xf32>
    %69 = linalg.generic {indexing_maps = [#map10, #map11, #map12, #map12, #map12, #map10], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%3, %6, %7, %expanded, %68 : tensor<64x8x6x6xf32>, tensor<2x2xf32>, tensor<64x8x3x3xf32>, tensor<64x8x3x3xf32>, tensor<64x8x3x3xf32>) outs(%65 : tensor<64x8x6x6xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %in_22: f32, %in_23: f32, %out: f32):
      %79 = arith.cmpf oeq, %in, %in_21 : f32
      %80 = arith.divf %in_22, %in_23 : f32
      %cst_24 = arith.constant 0.000000e+00 : f32
      %81 = arith.select %79, %80, %cst_24 : f32
      %82 = arith.addf %out, %81 : f32
      linalg.yield %82 : f32
    } -> tensor<64x8x6x6xf32>
    %70 = tensor.empty() : tensor<64x8x6x6xf32>
    %cst_17 = arith.constant 0.000000e+00 : f32
    %71 = linalg.fill ins(%cst_17 : f32) outs(%70 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %72 = linalg.generic {indexing_maps = [#map, #map1, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg3, %69 : tensor<64x8x6x6xf32>, tensor<8xf32>, tensor<64x8x6x6xf32>) outs(%71 : tensor<64x8x6x6xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      %80 = arith.cmpf oge, %79, %cst : f32
      %cst_22 = arith.constant 0.000000e+00 : f32
      %81 = arith.select %80, %in_21, %cst_22 : f32
      %82 = arith.addf %out, %81 : f32
      linalg.yield %82 : f32
    } -> tensor<64x8x6x6xf32>
    %73 = tensor.empty() : tensor<8xf32>
    %cst_18 = arith.constant 0.000000e+00 : f32
    %74 = linalg.fill ins(%cst_18 : f32) outs(%73 : tensor<8xf32>) -> tensor<8xf32>
    %75 = linalg.generic {indexing_maps = [#map, #map1, #map, #map1], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%2, %arg3, %69 : tensor<64x8x6x6xf32>, tensor<8xf32>, tensor<64x8x6x6xf32>) outs(%74 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_20: f32, %in_21: f32, %out: f32):
      %79 = arith.addf %in, %in_20 : f32
      %80 = arith.cmpf oge, %79, %cst : f32
      %cst_22 = arith.constant 0.000000e+00 : f32
      %81 = arith.select %80, %in_21, %cst_22 : f32
      %82 = arith.addf %out, %81 : f32
      linalg.yield %82 : f32
    } -> tensor<8xf32>
    %76 = tensor.empty() : tensor<8x1x3x3xf32>
    %cst_19 = arith.constant 0.000000e+00 : f32
    %77 = linalg.fill ins(%cst_19 : f32) outs(%76 : tensor<8x1x3x3xf32>) -> tensor<8x1x3x3xf32>
    %78 = linalg.generic {indexing_maps = [#map13, #map14, #map15], iterator_types = ["reduction", "parallel", "reduction", "reduction", "parallel", "parallel", "parallel"]} ins(%arg0, %72 : tensor<64x1x8x8xf32>, tensor<64x8x6x6xf32>) outs(%77 : tensor<8x1x3x3xf32>) {
    ^bb0(%in: f32, %in_20: f32, %out: f32):
      %79 = arith.mulf %in_20, %in : f32
      %80 = arith.addf %out, %79 : f32
      linalg.yield %80 : f32
    } -> tensor<8x1x3x3xf32>
    return %20, %78, %75, %63, %57 : f32, tensor<8x1x3x3xf32>, tensor<8xf32>, tensor<72x10xf32>, tensor<10xf32>
  }
  func.func @train_step(%arg0: tensor<64x1x8x8xf32>, %arg1: tensor<64x10xf32>, %arg2: tensor<8x1x3x3xf32> {mp.param = "k"}, %arg3: tensor<8xf32> {mp.param = "c"}, %arg4: tensor<72x10xf32> {mp.param = "w"}, %arg5: tensor<10xf32> {mp.param = "b"}, %arg6: tensor<8x1x3x3xf32> {mp.state = "k.momentum"}, %arg7: tensor<8xf32> {mp.state = "c.momentum"}, %arg8: tensor<72x10xf32> {mp.state = "w.momentum"}, %arg9: tensor<10xf32> {mp.state = "b.momentum"}, %arg10: i32 {mp.step}, %arg11: f32 {mp.loss_scale}, %arg12: i32 {mp.growth_tracker}) -> (tensor<8x1x3x3xf32> {mp.param = "k"}, tensor<8xf32> {mp.param = "c"}, tensor<72x10xf32> {mp.param = "w"}, tensor<10xf32> {mp.param = "b"}, tensor<8x1x3x3xf32> {mp.state = "k.momentum"}, tensor<8xf32> {mp.state = "c.momentum"}, tensor<72x10xf32> {mp.state = "w.momentum"}, tensor<10xf32> {mp.state = "b.momentum"}, i32 {mp.step}, f32 {mp.loss_scale}, i32 {mp.growth_tracker}, f32 {mp.loss}, i1 {mp.stepped}) {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.562500e-02 : f32
    %0 = tensor.empty() : tensor<64x8x6x6xf32>
    %1 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%0 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg2 : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg3 : tensor<64x8x6x6xf32>, tensor<8xf32>) outs(%0 : tensor<64x8x6x6xf32>) attrs =  {mp.decision = #mp.decision<infer, f16>} {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      %93 = arith.maximumf %92, %cst : f32
      linalg.yield %93 : f32
    } -> tensor<64x8x6x6xf32>
    %4 = tensor.empty() : tensor<64x8x3x3xf32>
    %5 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%4 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %6 = tensor.empty() : tensor<2x2xf32>
    %7 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, mp.decision = #mp.decision<clear, f16>, strides = dense<2> : tensor<2xi64>} ins(%3, %6 : tensor<64x8x6x6xf32>, tensor<2x2xf32>) outs(%5 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %collapsed = tensor.collapse_shape %7 [[0], [1, 2, 3]] {mp.decision = #mp.decision<clear, f16>} : tensor<64x8x3x3xf32> into tensor<64x72xf32>
    %8 = tensor.empty() : tensor<64x10xf32>
    %9 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%8 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %10 = linalg.matmul {mp.decision = #mp.decision<allow, f16>} ins(%collapsed, %arg4 : tensor<64x72xf32>, tensor<72x10xf32>) outs(%9 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %11 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%10, %arg5 : tensor<64x10xf32>, tensor<10xf32>) outs(%8 : tensor<64x10xf32>) attrs =  {mp.decision = #mp.decision<infer, f32>} {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      linalg.yield %92 : f32
    } -> tensor<64x10xf32>
    %12 = tensor.empty() : tensor<64xf32>
    %13 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%12 : tensor<64xf32>) -> tensor<64xf32>
    %14 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "reduction"]} ins(%11 : tensor<64x10xf32>) outs(%13 : tensor<64xf32>) attrs =  {mp.decision = #mp.decision<clear, f32>} {
    ^bb0(%in: f32, %out: f32):
      %92 = arith.maximumf %in, %out : f32
      linalg.yield %92 : f32
    } -> tensor<64xf32>
    %15 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%12 : tensor<64xf32>) -> tensor<64xf32>
    %16 = linalg.generic {indexing_maps = [#map2, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14 : tensor<64x10xf32>, tensor<64xf32>) outs(%15 : tensor<64xf32>) attrs =  {mp.decision = #mp.decision<deny, f32>} {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.subf %in, %in_22 : f32
      %93 = math.exp %92 : f32
      %94 = arith.addf %93, %out : f32
      linalg.yield %94 : f32
    } -> tensor<64xf32>
    %17 = tensor.empty() : tensor<f32>
    %18 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%17 : tensor<f32>) -> tensor<f32>
    %19 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map2, #map5], iterator_types = ["reduction", "reduction"]} ins(%11, %14, %16, %arg1 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x10xf32>) outs(%18 : tensor<f32>) attrs =  {mp.decision = #mp.decision<deny, f32>} {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %in_24: f32, %out: f32):
      %92 = math.log %in_23 : f32
      %93 = arith.subf %in, %in_22 : f32
      %94 = arith.subf %93, %92 : f32
      %95 = arith.mulf %94, %in_24 : f32
      %96 = arith.subf %out, %95 : f32
      linalg.yield %96 : f32
    } -> tensor<f32>
    %extracted = tensor.extract %19[] {mp.decision = #mp.decision<deny, f32>} : tensor<f32>
    %20 = arith.mulf %extracted, %cst_1 : f32
    %cst_2 = arith.constant {mp.seed} 1.000000e+00 : f32
    %21 = arith.mulf %cst_2, %cst_1 : f32
    %22 = arith.mulf %cst_2, %extracted : f32
    %23 = tensor.empty() : tensor<f32>
    %cst_3 = arith.constant 0.000000e+00 : f32
    %24 = linalg.fill ins(%cst_3 : f32) outs(%23 : tensor<f32>) -> tensor<f32>
    %inserted = tensor.insert %21 into %24[] : tensor<f32>
    %25 = tensor.empty() : tensor<64x10xf32>
    %cst_4 = arith.constant 0.000000e+00 : f32
    %26 = linalg.fill ins(%cst_4 : f32) outs(%25 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %27 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg1, %inserted : tensor<64x10xf32>, tensor<f32>) outs(%26 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.negf %in_22 : f32
      %93 = arith.mulf %92, %in : f32
      %94 = arith.addf %out, %93 : f32
      linalg.yield %94 : f32
    } -> tensor<64x10xf32>
    %28 = tensor.empty() : tensor<64xf32>
    %cst_5 = arith.constant 0.000000e+00 : f32
    %29 = linalg.fill ins(%cst_5 : f32) outs(%28 : tensor<64xf32>) -> tensor<64xf32>
    %30 = linalg.generic {indexing_maps = [#map2, #map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%arg1, %inserted : tensor<64x10xf32>, tensor<f32>) outs(%29 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.negf %in_22 : f32
      %93 = arith.mulf %92, %in : f32
      %94 = arith.negf %93 : f32
      %95 = arith.addf %out, %94 : f32
      linalg.yield %95 : f32
    } -> tensor<64xf32>
    %31 = tensor.empty() : tensor<64xf32>
    %cst_6 = arith.constant 0.000000e+00 : f32
    %32 = linalg.fill ins(%cst_6 : f32) outs(%31 : tensor<64xf32>) -> tensor<64xf32>
    %33 = linalg.generic {indexing_maps = [#map4, #map2, #map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%16, %arg1, %inserted : tensor<64xf32>, tensor<64x10xf32>, tensor<f32>) outs(%32 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32):
      %92 = arith.negf %in_23 : f32
      %93 = arith.mulf %92, %in_22 : f32
      %94 = arith.negf %93 : f32
      %95 = arith.divf %94, %in : f32
      %96 = arith.addf %out, %95 : f32
      linalg.yield %96 : f32
    } -> tensor<64xf32>
    %34 = tensor.empty() : tensor<64x10xf32>
    %cst_7 = arith.constant 0.000000e+00 : f32
    %35 = linalg.fill ins(%cst_7 : f32) outs(%34 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %36 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map2], iterator_types = ["parallel", "parallel"]} ins(%11, %14, %33 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>) outs(%35 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32):
      %92 = arith.subf %in, %in_22 : f32
      %93 = math.exp %92 : f32
      %94 = arith.mulf %in_23, %93 : f32
      %95 = arith.addf %out, %94 : f32
      linalg.yield %95 : f32
    } -> tensor<64x10xf32>
    %37 = tensor.empty() : tensor<64x10xf32>
    %38 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%27, %36 : tensor<64x10xf32>, tensor<64x10xf32>) outs(%37 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      linalg.yield %92 : f32
    } -> tensor<64x10xf32>
    %39 = tensor.empty() : tensor<64xf32>
    %cst_8 = arith.constant 0.000000e+00 : f32
    %40 = linalg.fill ins(%cst_8 : f32) outs(%39 : tensor<64xf32>) -> tensor<64xf32>
    %41 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14, %33 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>) outs(%40 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32):
      %92 = arith.subf %in, %in_22 : f32
      %93 = math.exp %92 : f32
      %94 = arith.mulf %in_23, %93 : f32
      %95 = arith.negf %94 : f32
      %96 = arith.addf %out, %95 : f32
      linalg.yield %96 : f32
    } -> tensor<64xf32>
    %42 = tensor.empty() : tensor<64xf32>
    %43 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%30, %41 : tensor<64xf32>, tensor<64xf32>) outs(%42 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      linalg.yield %92 : f32
    } -> tensor<64xf32>
    %44 = tensor.empty() : tensor<64x10xf32>
    %cst_9 = arith.constant 0.000000e+00 : f32
    %45 = linalg.fill ins(%cst_9 : f32) outs(%44 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %46 = tensor.empty() : tensor<64xf32>
    %cst_10 = arith.constant 0.000000e+00 : f32
    %47 = linalg.fill ins(%cst_10 : f32) outs(%46 : tensor<64xf32>) -> tensor<64xf32>
    %48 = linalg.generic {indexing_maps = [#map2, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%11, %14 : tensor<64x10xf32>, tensor<64xf32>) outs(%47 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.cmpf oeq, %in, %in_22 : f32
      %cst_23 = arith.constant 0.000000e+00 : f32
      %cst_24 = arith.constant 1.000000e+00 : f32
      %93 = arith.select %92, %cst_24, %cst_23 : f32
      %94 = arith.addf %out, %93 : f32
      linalg.yield %94 : f32
    } -> tensor<64xf32>
    %49 = linalg.generic {indexing_maps = [#map2, #map4, #map4, #map4, #map2], iterator_types = ["parallel", "parallel"]} ins(%11, %14, %43, %48 : tensor<64x10xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%45 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %in_24: f32, %out: f32):
      %92 = arith.cmpf oeq, %in, %in_22 : f32
      %93 = arith.divf %in_23, %in_24 : f32
      %cst_25 = arith.constant 0.000000e+00 : f32
      %94 = arith.select %92, %93, %cst_25 : f32
      %95 = arith.addf %out, %94 : f32
      linalg.yield %95 : f32
    } -> tensor<64x10xf32>
    %50 = tensor.empty() : tensor<64x10xf32>
    %51 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%38, %49 : tensor<64x10xf32>, tensor<64x10xf32>) outs(%50 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      linalg.yield %92 : f32
    } -> tensor<64x10xf32>
    %52 = tensor.empty() : tensor<64x10xf32>
    %cst_11 = arith.constant 0.000000e+00 : f32
    %53 = linalg.fill ins(%cst_11 : f32) outs(%52 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %54 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%51 : tensor<64x10xf32>) outs(%53 : tensor<64x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %92 = arith.addf %out, %in : f32
      linalg.yield %92 : f32
    } -> tensor<64x10xf32>
    %55 = tensor.empty() : tensor<10xf32>
    %cst_12 = arith.constant 0.000000e+00 : f32
    %56 = linalg.fill ins(%cst_12 : f32) outs(%55 : tensor<10xf32>) -> tensor<10xf32>
    %57 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["reduction", "parallel"]} ins(%51 : tensor<64x10xf32>) outs(%56 : tensor<10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %92 = arith.addf %out, %in : f32
      linalg.yield %92 : f32
    } -> tensor<10xf32>
    %58 = tensor.empty() : tensor<64x72xf32>
    %cst_13 = arith.constant 0.000000e+00 : f32
    %59 = linalg.fill ins(%cst_13 : f32) outs(%58 : tensor<64x72xf32>) -> tensor<64x72xf32>
    %60 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg4, %54 : tensor<72x10xf32>, tensor<64x10xf32>) outs(%59 : tensor<64x72xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.mulf %in_22, %in : f32
      %93 = arith.addf %out, %92 : f32
      linalg.yield %93 : f32
    } -> tensor<64x72xf32>
    %61 = tensor.empty() : tensor<72x10xf32>
    %cst_14 = arith.constant 0.000000e+00 : f32
    %62 = linalg.fill ins(%cst_14 : f32) outs(%61 : tensor<72x10xf32>) -> tensor<72x10xf32>
    %63 = linalg.generic {indexing_maps = [#map9, #map8, #map7], iterator_types = ["reduction", "parallel", "parallel"]} ins(%collapsed, %54 : tensor<64x72xf32>, tensor<64x10xf32>) outs(%62 : tensor<72x10xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.mulf %in_22, %in : f32
      %93 = arith.addf %out, %92 : f32
      linalg.yield %93 : f32
    } -> tensor<72x10xf32>
    %expanded = tensor.expand_shape %60 [[0], [1, 2, 3]] output_shape [64, 8, 3, 3] : tensor<64x72xf32> into tensor<64x8x3x3xf32>
    %64 = tensor.empty() : tensor<64x8x6x6xf32>
    %cst_15 = arith.constant 0.000000e+00 : f32
    %65 = linalg.fill ins(%cst_15 : f32) outs(%64 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %66 = tensor.empty() : tensor<64x8x3x3xf32>
    %cst_16 = arith.constant 0.000000e+00 : f32
    %67 = linalg.fill ins(%cst_16 : f32) outs(%66 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %68 = linalg.generic {indexing_maps = [#map10, #map11, #map12, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%3, %6, %7 : tensor<64x8x6x6xf32>, tensor<2x2xf32>, tensor<64x8x3x3xf32>) outs(%67 : tensor<64x8x3x3xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32):
      %92 = arith.cmpf oeq, %in, %in_23 : f32
      %cst_24 = arith.constant 0.000000e+00 : f32
      %cst_25 = arith.constant 1.000000e+00 : f32
      %93 = arith.select %92, %cst_25, %cst_24 : f32
      %94 = arith.addf %out, %93 : f32
      linalg.yield %94 : f32
    } -> tensor<64x8x3x3xf32>
    %69 = linalg.generic {indexing_maps = [#map10, #map11, #map12, #map12, #map12, #map10], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%3, %6, %7, %expanded, %68 : tensor<64x8x6x6xf32>, tensor<2x2xf32>, tensor<64x8x3x3xf32>, tensor<64x8x3x3xf32>, tensor<64x8x3x3xf32>) outs(%65 : tensor<64x8x6x6xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %in_24: f32, %in_25: f32, %out: f32):
      %92 = arith.cmpf oeq, %in, %in_23 : f32
      %93 = arith.divf %in_24, %in_25 : f32
      %cst_26 = arith.constant 0.000000e+00 : f32
      %94 = arith.select %92, %93, %cst_26 : f32
      %95 = arith.addf %out, %94 : f32
      linalg.yield %95 : f32
    } -> tensor<64x8x6x6xf32>
    %70 = tensor.empty() : tensor<64x8x6x6xf32>
    %cst_17 = arith.constant 0.000000e+00 : f32
    %71 = linalg.fill ins(%cst_17 : f32) outs(%70 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %72 = linalg.generic {indexing_maps = [#map, #map1, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg3, %69 : tensor<64x8x6x6xf32>, tensor<8xf32>, tensor<64x8x6x6xf32>) outs(%71 : tensor<64x8x6x6xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      %93 = arith.cmpf oge, %92, %cst : f32
      %cst_24 = arith.constant 0.000000e+00 : f32
      %94 = arith.select %93, %in_23, %cst_24 : f32
      %95 = arith.addf %out, %94 : f32
      linalg.yield %95 : f32
    } -> tensor<64x8x6x6xf32>
    %73 = tensor.empty() : tensor<8xf32>
    %cst_18 = arith.constant 0.000000e+00 : f32
    %74 = linalg.fill ins(%cst_18 : f32) outs(%73 : tensor<8xf32>) -> tensor<8xf32>
    %75 = linalg.generic {indexing_maps = [#map, #map1, #map, #map1], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%2, %arg3, %69 : tensor<64x8x6x6xf32>, tensor<8xf32>, tensor<64x8x6x6xf32>) outs(%74 : tensor<8xf32>) {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32):
      %92 = arith.addf %in, %in_22 : f32
      %93 = arith.cmpf oge, %92, %cst : f32
      %cst_24 = arith.constant 0.000000e+00 : f32
      %94 = arith.select %93, %in_23, %cst_24 : f32
      %95 = arith.addf %out, %94 : f32
      linalg.yield %95 : f32
    } -> tensor<8xf32>
    %76 = tensor.empty() : tensor<8x1x3x3xf32>
    %cst_19 = arith.constant 0.000000e+00 : f32
    %77 = linalg.fill ins(%cst_19 : f32) outs(%76 : tensor<8x1x3x3xf32>) -> tensor<8x1x3x3xf32>
    %78 = linalg.generic {indexing_maps = [#map13, #map14, #map15], iterator_types = ["reduction", "parallel", "reduction", "reduction", "parallel", "parallel", "parallel"]} ins(%arg0, %72 : tensor<64x1x8x8xf32>, tensor<64x8x6x6xf32>) outs(%77 : tensor<8x1x3x3xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %92 = arith.mulf %in_22, %in : f32
      %93 = arith.addf %out, %92 : f32
      linalg.yield %93 : f32
    } -> tensor<8x1x3x3xf32>
    %cst_20 = arith.constant 0.00999999977 : f32
    %cst_21 = arith.constant 0.000000e+00 : f32
    %c1_i32 = arith.constant 1 : i32
    %79 = arith.addi %arg10, %c1_i32 : i32
    %80 = tensor.empty() : tensor<8x1x3x3xf32>
    %81 = tensor.empty() : tensor<8x1x3x3xf32>
    %82:2 = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg2, %78, %arg6 : tensor<8x1x3x3xf32>, tensor<8x1x3x3xf32>, tensor<8x1x3x3xf32>) outs(%80, %81 : tensor<8x1x3x3xf32>, tensor<8x1x3x3xf32>) attrs =  {mp.precision = #mp.precision<f32>} {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32, %out_24: f32):
      %92 = arith.mulf %cst_21, %in : f32
      %93 = arith.addf %in_22, %92 : f32
      %cst_25 = arith.constant 0.899999976 : f32
      %94 = arith.mulf %cst_25, %in_23 : f32
      %95 = arith.addf %94, %93 : f32
      %96 = arith.mulf %cst_20, %95 : f32
      %97 = arith.subf %in, %96 : f32
      linalg.yield %97, %95 : f32, f32
    } -> (tensor<8x1x3x3xf32>, tensor<8x1x3x3xf32>)
    %83 = tensor.empty() : tensor<8xf32>
    %84 = tensor.empty() : tensor<8xf32>
    %85:2 = linalg.generic {indexing_maps = [#map6, #map6, #map6, #map6, #map6], iterator_types = ["parallel"]} ins(%arg3, %75, %arg7 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%83, %84 : tensor<8xf32>, tensor<8xf32>) attrs =  {mp.precision = #mp.precision<f32>} {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32, %out_24: f32):
      %92 = arith.mulf %cst_21, %in : f32
      %93 = arith.addf %in_22, %92 : f32
      %cst_25 = arith.constant 0.899999976 : f32
      %94 = arith.mulf %cst_25, %in_23 : f32
      %95 = arith.addf %94, %93 : f32
      %96 = arith.mulf %cst_20, %95 : f32
      %97 = arith.subf %in, %96 : f32
      linalg.yield %97, %95 : f32, f32
    } -> (tensor<8xf32>, tensor<8xf32>)
    %86 = tensor.empty() : tensor<72x10xf32>
    %87 = tensor.empty() : tensor<72x10xf32>
    %88:2 = linalg.generic {indexing_maps = [#map2, #map2, #map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg4, %63, %arg8 : tensor<72x10xf32>, tensor<72x10xf32>, tensor<72x10xf32>) outs(%86, %87 : tensor<72x10xf32>, tensor<72x10xf32>) attrs =  {mp.precision = #mp.precision<f32>} {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32, %out_24: f32):
      %92 = arith.mulf %cst_21, %in : f32
      %93 = arith.addf %in_22, %92 : f32
      %cst_25 = arith.constant 0.899999976 : f32
      %94 = arith.mulf %cst_25, %in_23 : f32
      %95 = arith.addf %94, %93 : f32
      %96 = arith.mulf %cst_20, %95 : f32
      %97 = arith.subf %in, %96 : f32
      linalg.yield %97, %95 : f32, f32
    } -> (tensor<72x10xf32>, tensor<72x10xf32>)
    %89 = tensor.empty() : tensor<10xf32>
    %90 = tensor.empty() : tensor<10xf32>
    %91:2 = linalg.generic {indexing_maps = [#map6, #map6, #map6, #map6, #map6], iterator_types = ["parallel"]} ins(%arg5, %57, %arg9 : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) outs(%89, %90 : tensor<10xf32>, tensor<10xf32>) attrs =  {mp.precision = #mp.precision<f32>} {
    ^bb0(%in: f32, %in_22: f32, %in_23: f32, %out: f32, %out_24: f32):
      %92 = arith.mulf %cst_21, %in : f32
      %93 = arith.addf %in_22, %92 : f32
      %cst_25 = arith.constant 0.899999976 : f32
      %94 = arith.mulf %cst_25, %in_23 : f32
      %95 = arith.addf %94, %93 : f32
      %96 = arith.mulf %cst_20, %95 : f32
      %97 = arith.subf %in, %96 : f32
      linalg.yield %97, %95 : f32, f32
    } -> (tensor<10xf32>, tensor<10xf32>)
    %true = arith.constant true
    return %82#0, %85#0, %88#0, %91#0, %82#1, %85#1, %88#1, %91#1, %79, %arg11, %arg12, %20, %true : tensor<8x1x3x3xf32>, tensor<8xf32>, tensor<72x10xf32>, tensor<10xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>, tensor<72x10xf32>, tensor<10xf32>, i32, f32, i32, f32, i1
  }
  func.func @predict(%arg0: tensor<64x1x8x8xf32>, %arg1: tensor<8x1x3x3xf32> {mp.param = "k"}, %arg2: tensor<8xf32> {mp.param = "c"}, %arg3: tensor<72x10xf32> {mp.param = "w"}, %arg4: tensor<10xf32> {mp.param = "b"}) -> tensor<64x10xf32> attributes {mp.predict} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<64x8x6x6xf32>
    %1 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%0 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>) outs(%1 : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<64x8x6x6xf32>, tensor<8xf32>) outs(%0 : tensor<64x8x6x6xf32>) attrs =  {mp.decision = #mp.decision<infer, f16>} {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.addf %in, %in_1 : f32
      %13 = arith.maximumf %12, %cst : f32
      linalg.yield %13 : f32
    } -> tensor<64x8x6x6xf32>
    %4 = tensor.empty() : tensor<64x8x3x3xf32>
    %5 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst_0 : f32) outs(%4 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %6 = tensor.empty() : tensor<2x2xf32>
    %7 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%3, %6 : tensor<64x8x6x6xf32>, tensor<2x2xf32>) outs(%5 : tensor<64x8x3x3xf32>) -> tensor<64x8x3x3xf32>
    %collapsed = tensor.collapse_shape %7 [[0], [1, 2, 3]] {mp.decision = #mp.decision<clear, f16>} : tensor<64x8x3x3xf32> into tensor<64x72xf32>
    %8 = tensor.empty() : tensor<64x10xf32>
    %9 = linalg.fill {mp.decision = #mp.decision<clear, f32>} ins(%cst : f32) outs(%8 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %10 = linalg.matmul {mp.decision = #mp.decision<allow, f16>} ins(%collapsed, %arg3 : tensor<64x72xf32>, tensor<72x10xf32>) outs(%9 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %11 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%10, %arg4 : tensor<64x10xf32>, tensor<10xf32>) outs(%8 : tensor<64x10xf32>) attrs =  {mp.decision = #mp.decision<infer, f32>} {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.addf %in, %in_1 : f32
      linalg.yield %12 : f32
    } -> tensor<64x10xf32>
    return %11 : tensor<64x10xf32>
  }
}


