//===- Passes.td - mp lowering transforms ------------------*- tablegen -*-===//
//
// The passes the lowering pipelines (--mp-lower-cpu, --mp-lower-gpu) run to
// shape loops and buffers for the hardware: fusion, reduction splitting,
// vectorization, parallelization, GPU mapping and memory. They rewrite
// within the dialects they are given; the conversions from one abstraction
// to another (mp to upstream, products and probes to runtime calls) are in
// mp/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LOWERING_PASSES_TD
#define MP_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def MPGpuMapParallelLoops
    : Pass<"mp-gpu-map-parallel-loops", "::mlir::ModuleOp"> {
  let summary = "Map the loop nests of host functions onto a GPU grid";
  let description = [{
    Runs on buffers after `convert-linalg-to-parallel-loops` and before
    upstream `convert-parallel-loops-to-gpu`, which turns every mapped
    `scf.parallel` into a `gpu.launch`; `--mp-lower-gpu` runs it. In each
    function:

    * a `memref.copy` (bufferization emits them) becomes an `scf.parallel`
      nest of element loads and stores;
    * serial work that no parallel loop encloses (an `scf.for` nest of a
      full reduction, a `memref.store` of a rank-0 fill) is wrapped in a
      one-iteration `scf.parallel`, so that it becomes a one-thread kernel
      instead of host code touching tensor elements;
    * every outermost `scf.parallel` is collapsed to one dimension and tiled
      by `block-size` (or its trip count, when smaller and known) with a
      bounds check; the outer loop is mapped to blocks along x, the inner one
      to threads along x, so consecutive threads touch consecutive elements;
    * `scf.parallel` loops nested in a thread's work become `scf.for` nests
      (it runs them sequentially; upstream `convert-parallel-loops-to-gpu`
      would leave a nest with one under an `scf.for` on the host).

    Host code that reads an element or carries a value out of a loop
    (`memref.load`, `scf.for` with results outside any loop) is an error
    naming the op. Loads and stores of host buffers (a `memref.alloca`
    outside loops, such as the staging buffers of `--mp-gpu-device-memory`,
    or a `memref.get_global`) stay host code.

    Before:

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c128) step (%c1, %c1) {
      ...
    }
    ```

    After:

    ```mlir
    scf.parallel (%b) = (%c0) to (%c8192) step (%c256) {
      scf.parallel (%t) = (%c0) to (%c256) step (%c1) {
        %n = arith.addi %t, %b : index
        %in = arith.cmpi ult, %n, %c8192 : index
        scf.if %in {
          %i = arith.divsi %n, %c128 : index
          ...
        }
        scf.reduce
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
      scf.reduce
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block, 1 to 1024">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def MPGpuDeviceMemory : Pass<"mp-gpu-device-memory", "::mlir::ModuleOp"> {
  let summary = "Keep every buffer of host functions in GPU device memory";
  let description = [{
    Runs on buffers after `convert-linalg-to-parallel-loops` and before
    `--mp-gpu-map-parallel-loops`; `--mp-lower-gpu{device-memory=true}` runs
    it. The contract of the lowered functions: every memref argument and
    result is device memory (the caller allocates it with `mgpuMemAlloc`,
    and frees returned buffers with `mgpuMemFree`); scalar arguments and
    results (`i32`, `f32`, `i1`) stay host values. In each function:

    * `memref.alloc` / `memref.dealloc` outside loop nests (what
      bufferization and the deallocation pipeline leave) become `gpu.alloc`
      / `gpu.dealloc` (device memory from the runtime's pool); inside a loop
      nest, which will be a kernel, they are an error;
    * a `memref.alloca` of element data in the entry block becomes a
      `gpu.alloc` freed at every return (elsewhere outside loops: an error;
      inside loops it is a kernel thread's private array and stays);
    * a `memref.get_global` whose value reaches a kernel, a runtime call or
      a copy is replaced by a device copy of the constant (`gpu.alloc` and a
      host-to-device `gpu.memcpy` at the function's entry, one per global,
      `gpu.dealloc` at every return); host-level loads keep reading the host
      global; a non-constant global, or returning the copy, is an error;
    * a `memref.load` by host code (outside every loop nest) of a
      single-element device buffer (the loss, `found_inf`: rank-0 reduction
      results; a 0-d memref argument) is staged: a one-element host
      `memref.alloca` at the entry, a device-to-host `gpu.memcpy` before the
      load, which then reads the host copy. A host load of any other buffer
      is an error naming the op.

    Host-level `memref.store`s and `memref.copy`s are left to
    `--mp-gpu-map-parallel-loops`, which turns them into kernels (a store of
    a host scalar becomes a one-thread kernel that takes the scalar as an
    argument). The memory ops are created synchronous; `--mp-lower-gpu` runs
    upstream `gpu-async-region` after kernel outlining, which puts them and
    the launches on streams and waits before any host op with side effects
    (the staged load, a runtime call, the return), so that `gpu-to-llvm`
    lowers them to `mgpuMemAlloc`, `mgpuMemcpy`, `mgpuMemFree`.

    Before:

    ```mlir
    func.func @f(%x: memref<64xf32>) -> f32 {
      %w = memref.get_global @weights : memref<64xf32>
      %acc = memref.alloc() : memref<f32>
      ... (loop nests that read %x and %w, accumulate into %acc)
      %loss = memref.load %acc[] : memref<f32>
      memref.dealloc %acc : memref<f32>
      return %loss : f32
    }
    ```

    After:

    ```mlir
    func.func @f(%x: memref<64xf32>) -> f32 {
      %staged = memref.alloca() : memref<f32>
      %host = memref.get_global @weights : memref<64xf32>
      %w = gpu.alloc () : memref<64xf32>
      gpu.memcpy %w, %host : memref<64xf32>, memref<64xf32>
      %acc = gpu.alloc () : memref<f32>
      ...
      gpu.memcpy %staged, %acc : memref<f32>, memref<f32>
      %loss = memref.load %staged[] : memref<f32>
      gpu.dealloc %acc : memref<f32>
      gpu.dealloc %w : memref<64xf32>
      return %loss : f32
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let statistics = [
    Statistic<"numAllocs", "allocs", "memref.alloc turned into gpu.alloc">,
    Statistic<"numDeallocs", "deallocs",
              "memref.dealloc turned into gpu.dealloc">,
    Statistic<"numAllocas", "allocas",
              "memref.alloca of element data turned into gpu.alloc">,
    Statistic<"numGlobals", "globals-copied",
              "Constant globals copied into device buffers">,
    Statistic<"numStagedLoads", "staged-loads",
              "Host loads staged through a device-to-host gpu.memcpy">
  ];
}

def MPGpuRequireLibdevice
    : Pass<"mp-gpu-require-libdevice", "::mlir::ModuleOp"> {
  let summary = "Reject kernels that call libdevice when no CUDA toolkit "
                "was found";
  let description = [{
    `convert-gpu-to-nvvm` turns math ops in kernels (`math.exp`,
    `math.tanh`, ...) into calls to libdevice functions (`__nv_expf`, ...)
    that `gpu-module-to-binary` links from the CUDA toolkit's
    `nvvm/libdevice/libdevice.10.bc`. Without a toolkit upstream links
    nothing and emits PTX with unresolved calls, which fails only when the
    driver loads it. `--mp-lower-gpu` runs this pass when it finds no
    toolkit: a kernel module that declares an `__nv_*` function is an
    error at the host launch of that kernel, naming the function and how to
    point mp at a toolkit.

    Input (after `convert-gpu-to-nvvm`):

    ```mlir
    gpu.module @f_kernel {
      llvm.func @__nv_expf(f32) -> f32
      ...
    }
    func.func @f(...) {
      gpu.launch_func @f_kernel::@f_kernel ...
    }
    ```

    Output: the module unchanged, or the error
    `kernel module 'f_kernel' calls libdevice function '__nv_expf' ...`.
  }];
}

def MPPromoteAccumulators
    : Pass<"mp-promote-accumulators", "::mlir::func::FuncOp"> {
  let summary = "Carry a reduction's accumulator through its loop in a "
                "register instead of memory";
  let description = [{
    Runs on affine loops, after `convert-linalg-to-affine-loops` and before
    `--mp-parallelize-loops` (which needs the buffers' allocations in
    sight, so the order matters). A row reduction lowers to an innermost
    loop that loads the accumulator's element, combines and stores it back
    every iteration; LLVM cannot keep it in a register, since the buffer
    might share memory with what the loop reads. Here an innermost,
    straight-line `affine.for` without iter_args whose only accesses to a
    buffer are one `affine.load` and a later `affine.store` of the same
    element, at indices that do not change in the loop, carries that value
    as an iter_arg: loaded once before the loop and stored once after it.
    The loop must not touch another buffer that could share the
    accumulator's memory (two different allocations, or an allocation and
    an argument, cannot; two function arguments may) nor contain an op
    with unknown memory effects. `--mp-vectorize-loops` then vectorizes the
    supported reductions (sum, product, min, max) with vector accumulators.

    Input:

    ```mlir
    affine.for %j = 0 to 128 {
      %x = affine.load %in[%i, %j] : memref<16x128xf32>
      %s = affine.load %sum[%i] : memref<16xf32>
      %t = arith.addf %s, %x : f32
      affine.store %t, %sum[%i] : memref<16xf32>
    }
    ```

    Output (`%sum` an allocation):

    ```mlir
    %s0 = affine.load %sum[%i] : memref<16xf32>
    %r = affine.for %j = 0 to 128 iter_args(%s = %s0) -> (f32) {
      %x = affine.load %in[%i, %j] : memref<16x128xf32>
      %t = arith.addf %s, %x : f32
      affine.yield %t : f32
    }
    affine.store %r, %sum[%i] : memref<16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect"];
}

def MPFuseRowLoops : Pass<"mp-fuse-row-loops", "::mlir::func::FuncOp"> {
  let summary = "Fuse consecutive loop nests over the same rows into one";
  let description = [{
    Runs on affine loops, after `--mp-promote-accumulators` and before
    `--mp-parallelize-loops`. Softmax, layer norm and their gradients lower
    to several loop nests over the same rows (a fill and a max, the
    exponentials, a fill and a sum, the reciprocal, the normalization), each
    streaming the whole tensor through memory again where a row would stay
    in L1 between them. Two consecutive `affine.for` nests whose outer
    loops have the same constant bounds become one: for each outer
    iteration, the second nest's body runs after the first's. Every element
    gets the same operations in the same order: the results are bitwise
    those of the separate nests.

    The outer loops taken are the perfectly nested ones (no iter_args) that
    both nests share and that are parallel in both. Legal when every buffer
    one nest writes and the other touches is the same value in both nests
    and each of their accesses to it indexes its leading dimensions with
    exactly those loops' induction variables, in order (two function
    arguments, or two views of one buffer, count as the same memory), when
    neither nest holds an op that touches memory other than `affine.load`
    and `affine.store`, and when only allocations, deallocations of buffers
    the second nest does not touch, and pure ops lie between the nests
    (those the second nest uses move before the first). Nests that share no
    buffer stay apart, except that a nest of one op per row (the fill of the
    next reduction's accumulator) joins the nest before it.

    Input:

    ```mlir
    affine.for %i = 0 to 128 {
      %m0 = affine.load %max[%i] : memref<128xf32>
      %m = affine.for %k = 0 to 128 iter_args(%a = %m0) -> (f32) {
        %x = affine.load %s[%i, %k] : memref<128x128xf32>
        %n = arith.maximumf %x, %a : f32
        affine.yield %n : f32
      }
      affine.store %m, %max[%i] : memref<128xf32>
    }
    affine.for %i = 0 to 128 {
      affine.for %k = 0 to 128 {
        %x = affine.load %s[%i, %k] : memref<128x128xf32>
        %m = affine.load %max[%i] : memref<128xf32>
        %d = arith.subf %x, %m : f32
        %e = math.exp %d : f32
        affine.store %e, %exp[%i, %k] : memref<128x128xf32>
      }
    }
    ```

    Output: one `affine.for %i` whose body holds the reduction and then the
    exponentials' loop over `%k`.
  }];
  let statistics = [
    Statistic<"numFusedNests", "fused-nests",
              "Loop nests fused into the nest before them">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect"];
}

def MPApproximateMath : Pass<"mp-approximate-math", "::mlir::func::FuncOp"> {
  let summary = "Compute f32 exp, expm1, log, log1p, log2, tanh and erf with "
                "vectorizable polynomials instead of libm calls";
  let description = [{
    LLVM's x86 code generator has no vector `exp`, `log`, `tanh` or `erf`:
    a `math.exp` on `vector<16xf32>` becomes sixteen calls of libm's
    `expf`, one lane at a time. This pass applies upstream's polynomial
    approximations (`populateMathPolynomialApproximationPatterns`) to these
    f32 functions, scalar or vector: range reduction, a polynomial
    evaluated with FMAs, and the exponent assembled with integer
    operations, all in vector registers. Other element types and other
    math functions are left as they are. `--mp-lower-cpu` runs it after
    `--mp-vectorize-loops`; `--mp-lower-cpu{approximate-math=0}` keeps libm.
    Accuracy against libm (errors in ulp and special values: infinities,
    NaN, overflow and underflow) is measured by
    `unittests/ApproximateMathTest.cpp`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def MPVectorizeLoops : Pass<"mp-vectorize-loops", "::mlir::func::FuncOp"> {
  let summary = "Vectorize parallel affine loops whose accesses have unit "
                "stride";
  let description = [{
    Runs upstream's affine super-vectorizer (1-D, `vector-size` lanes) on
    the parallel `affine.for` loops in which every load and store either
    does not depend on the induction variable (a broadcast) or moves by
    exactly one element per iteration along one memref dimension. Upstream's
    `affine-super-vectorize` also takes strided accesses such as
    `%a[2 * %i]` for contiguous and loads consecutive elements
    (llvm/llvm-project#177756), which makes stride-2 convolutions and pools
    wrong; this pass leaves such loops scalar. `--mp-lower-cpu{vectorize}`
    uses it.

    Input:

    ```mlir
    affine.for %i = 0 to 64 {
      %v = affine.load %in[%i] : memref<64xf32>
      %w = affine.load %strided[2 * %i] : memref<128xf32>
      ...
    }
    ```

    The loop above stays scalar because of `%strided[2 * %i]`; without that
    access it becomes `affine.for %i = 0 to 64 step 16` over
    `vector.transfer_read ... : memref<64xf32>, vector<16xf32>`.

    Upstream's vectorizer leaves every transfer possibly out of bounds,
    which LLVM lowers to masked loads and stores. Where a vectorized loop
    runs a whole number of vectors (its bounds differ by a multiple of
    `vector-size`), every lane is an element the scalar loop accessed, so
    its transfers along the loop are marked `in_bounds = [true]`: plain
    vector loads and stores. A loop with constant bounds that is not a
    whole number of vectors is split first: the whole vectors, then a
    scalar loop for the rest. Loops marked `mp.parallel_chunk` (a thread's
    share of a parallel loop, `--mp-parallelize-loops`) are not vectorized.

    A loop with iter_args is taken when they are reductions upstream's
    vectorizer supports (`--mp-promote-accumulators` makes them): each
    gets a vector accumulator, reduced and combined with the initial value
    after the loop. A sum then adds in another order than the scalar loop
    (16 partial sums); min and max are exact. The scalar loop for the rest
    continues from the vectors' result. The lanes of a max or min
    accumulator (`maximumf`, `minimumf`) are combined as a tree of vector
    ops (halves, then quarters, ...), which gives the same value in any
    order; LLVM's x86 code for `vector.reduce.fmaximum` was a serial chain
    of scalar compares and masked moves, one per lane. A sum's reduction is
    marked `reassoc`, so LLVM adds halves too instead of a chain of
    dependent scalar adds (another order again).

    Innermost vectorized loops without iter_args of at most
    `max-unrolled-vectors` iterations (a block of a parallel loop, a
    64-wide attention head) are unrolled: LLVM kept each behind a bounds
    check, which stopped it from keeping a value that the loops around
    it accumulate (a column sum's) in a register.
  }];
  let options = [
    Option<"vectorSize", "vector-size", "int64_t", /*default=*/"16",
           "Lanes per vector (16 f32 lanes fill an AVX-512 register)">,
    Option<"maxUnrolledVectors", "max-unrolled-vectors", "int64_t",
           /*default=*/"8",
           "Unroll innermost vector loops of at most this many iterations "
           "(0: none)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def MPParallelizeLoops : Pass<"mp-parallelize-loops", "::mlir::ModuleOp"> {
  let summary = "Outline the CPU's large parallel affine loops so that every "
                "thread runs a share";
  let description = [{
    Runs after `convert-linalg-to-affine-loops` and before
    `--mp-vectorize-loops`. The outermost `affine.for` of a loop nest with
    constant bounds that is parallel (upstream's dependence analysis: no
    two iterations touch the same element, one writing it) and does at
    least `min-work` innermost iterations becomes a private function
    `@<function>_parallel_<n>(%begin: index, %end: index, <captured values>)`
    (marked `mp.parallel_body`) that runs iterations `[%begin, %end)`, and a
    call of a declaration marked `mp.parallel_launch = @<body>` with the
    number of iterations and the captured values. Constants are cloned
    into the body, not captured. `--mp-parallel-launches-to-runtime` later
    turns that call into the runtime's `mprt_parallel_for`, which splits
    the iterations evenly over the OpenMP threads (`OMP_NUM_THREADS`, the
    same threads that oneDNN's products use).

    A loop whose induction variable indexes the last dimension of an
    access (one the vectorizer may take) is split into blocks of
    `vector-size` iterations first: the threads share whole blocks, each
    block is a constant-trip loop that vectorizes without masks, and the
    iterations after the last whole block stay in a serial loop. The loop
    over a thread's share is marked `mp.parallel_chunk`.

    A nest whose outer loops are reductions around one parallel loop,
    perfectly nested — a column sum (`for i: for j: acc[j] += x[i, j]`,
    a bias gradient), layer norm's parameter gradients, the partial sums
    of a long reduction — runs the same way when every dependence in it
    keeps the parallel loop's iteration (upstream's dependence components,
    distance 0): a new loop over blocks of the parallel loop's iterations
    (where the vectorizer may take it, runs of whole vectors, about 16
    blocks: one vector a block made each row wait for the previous row's
    sum) is outlined, each
    block running the reduction loops over its own elements; iterations
    after the last whole block stay serial.

    A body's memrefs that view an allocation of the caller (`memref.alloc`
    or `alloca`) that no other captured memref views reach their buffer
    through that argument only: the body lists the positions of their
    descriptors' two pointers in its LLVM signature (begin and end, then
    each captured value, a memref as allocated pointer, aligned pointer,
    offset, sizes and strides) as `mp.parallel_noalias`, which
    `--mp-parallel-launches-to-runtime` makes `llvm.noalias`. LLVM may then
    keep such a buffer's elements in registers across the body's loops (a
    column sum's accumulators) and move loads of it past other stores.
    Function arguments and globals may be any buffer and are not listed.

    Every iteration runs exactly as in the serial loop, on the same values
    and in the same order per element, so results do not depend on the
    number of threads. Other loops that are not parallel, loops that call
    functions or free memory, and loops that capture values of other types
    than memrefs, indices, integers, floats and vectors stay serial.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "Innermost iterations a loop nest needs to be run in parallel "
           "(a thread's start costs about as much as some thousands)">,
    Option<"vectorSize", "vector-size", "int64_t", /*default=*/"16",
           "Iterations per block of a loop the vectorizer may take (the "
           "vectorizer's vector-size)">
  ];
  let statistics = [
    Statistic<"numParallelLoops", "parallel-loops",
              "Loop nests outlined to run in parallel">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::mp::MPDialect"
  ];
}

def MPConvolutionsToGemm
    : Pass<"mp-convolutions-to-gemm", "::mlir::func::FuncOp"> {
  let summary = "Rewrite 2-D convolutions on tensors as an im2col copy and "
                "a matrix product";
  let description = [{
    Runs on tensors, before bufferization. Every `linalg.conv_2d_nchw_fchw`,
    `linalg.conv_2d_nhwc_hwcf` and `linalg.conv_2d_nhwc_fhwc` with static
    shapes (f32, f16/bf16 with an f32 accumulator from
    `--mp-auto-mixed-precision`, or i8 x i8 -> i32 from `--mp-quantize`)
    becomes upstream's im2col form: a `linalg.generic` that copies the input
    windows into a `[N, C*KH*KW, OH*OW]` (NCHW) or `[N, OH*OW, KH*KW*C]`
    (NHWC) tensor, and a product of it with the collapsed filter, which
    `--mp-contractions-to-runtime` hands to the runtime's GEMM as a batch
    of products sharing the filter. `--mp-lower-cpu` (with
    runtime-contractions) and `--mp-lower-gpu` run it. Convolutions the
    rewrite does not take (dynamic shapes) stay and become loops.

    Input:

    ```mlir
    %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                   strides = dense<1> : tensor<2xi64>}
        ins(%x, %w : tensor<64x1x8x8xf32>, tensor<8x1x3x3xf32>)
        outs(%init : tensor<64x8x6x6xf32>) -> tensor<64x8x6x6xf32>
    ```

    Output: `%col = linalg.generic ... -> tensor<64x9x36xf32>` (the windows),
    `%p = linalg.generic ... ins(%w9, %col : tensor<8x9xf32>,
    tensor<64x9x36xf32>) outs(... : tensor<64x8x36xf32>)` (a multiply-add
    over the reduction loop) and a `tensor.expand_shape` back to
    `64x8x6x6`.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numConvolutionsRewritten", "convolutions-rewritten",
              "Convolutions rewritten as im2col + product">
  ];
}

def MPGpuParallelLoopsFirst
    : Pass<"mp-gpu-parallel-loops-first", "::mlir::func::FuncOp"> {
  let summary = "Move the parallel loops of linalg.generic ops outermost so "
                "that GPU threads run them";
  let description = [{
    `convert-linalg-to-parallel-loops` makes an `scf.parallel` only of the
    parallel loops before the first reduction loop. A generic whose
    reduction loop comes first — a column sum such as a bias gradient
    summed over the batch, `iterator_types = ["reduction", "parallel"]` —
    becomes a serial loop around a parallel one, which
    `--mp-gpu-map-parallel-loops` can only run on one GPU thread. This pass
    interchanges such generics (upstream's `interchangeGenericOp`) so the
    parallel loops lead, keeping the order within each kind: one thread
    per output element, each summing in the original order (the result is
    bit for bit the same). `--mp-lower-gpu` runs it before
    `convert-linalg-to-parallel-loops`.

    Input:

    ```mlir
    linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>,
                                     affine_map<(b, j) -> (j)>],
                    iterator_types = ["reduction", "parallel"]}
        ins(%g : memref<64x512xf32>) outs(%db : memref<512xf32>) {...}
    ```

    Output: the same generic over `(j, b)`, `iterator_types = ["parallel",
    "reduction"]`, with the maps permuted to match.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numInterchanged", "generics-interchanged",
              "Generics whose parallel loops were moved first">
  ];
}

def MPSplitReductions : Pass<"mp-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "Split long reductions into partial reductions that threads "
                "(GPU, or CPU with vector lanes) run in parallel";
  let description = [{
    A GPU thread runs the reduction loops of its output element serially,
    and a serial loop is bound by memory latency: a full reduction (the
    inf/nan check of a 4096x4096 gradient, a loss summed over every
    element) would run on one thread for milliseconds, a column sum over
    32768 tokens per column thread likewise. This pass splits each
    reduction loop `d` of size `N = R * P` into a serial loop `r < R` and a
    parallel loop `p < P` with `d = r * P + p` (the inputs are reshaped with
    `tensor.expand_shape`, so neighbouring threads read neighbouring
    elements), choosing the `R`s, outermost loop first, so that each thread
    runs at most `per-thread` iterations. The first generic writes one
    partial result per thread, starting from the combiner's neutral
    element; a second generic combines the partials into the original
    init and is split again while it is still long, so a full reduction of
    `n` elements takes about `log(n) / log(per-thread)` kernels.

    Applies to `linalg.generic` ops on static tensors with one output whose
    body yields `combiner(out, x)` for an associative and commutative
    `arith` combiner with a neutral element (add, mul, and, or, xor,
    max/min) or `out - x` (the partials are then summed), whose maps are
    projected permutations, that use no `linalg.index` and are not
    contractions (those call cuBLASLt). Sums change their order of
    addition, so floating-point sums may differ in the last bits; max, min
    and the boolean checks are exact. `--mp-lower-gpu` runs it before
    bufferization; `--mp-lower-cpu` too, with `per-thread=4096 lanes=16`,
    for the accuracy of long f32 sums (one accumulator over a million
    elements loses about four digits) and vector lanes over the partials.

    With `lanes=L`, a reduction whose innermost loop reduces the last
    dimension of every input, in a multiple of `L` elements that leaves at
    least `L` serial steps a lane, is split differently: that loop becomes
    `r * L + p` with `r` serial and the `L` neighbouring `p` partials, and
    every other loop is parallel. A sum over a 2048x2048 gradient has
    2048x16 partials of 128 steps instead of 1024 of 4096: each row its
    own, so CPU threads take whole rows (contiguous memory) where they took
    a block of columns of every row, and a loop reading the same rows (the
    optimizer update, `--mp-fuse-sibling-reductions`) can share the pass.
    Other reductions split as without `lanes`.
  }];
  let options = [
    Option<"perThread", "per-thread", "int64_t", /*default=*/"32",
           "Most serial reduction iterations a thread runs">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"0",
           "Vector lanes: where the innermost loop reduces the inputs' last "
           "dimension, keep this many neighbours apart and every other loop "
           "parallel (0: off)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSplit", "reductions-split",
              "Reductions split into partial reductions">
  ];
}

def MPFuseElementwise : Pass<"mp-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg.generic chains where the result "
                "stays exact and nothing is recomputed";
  let description = [{
    Fuses a `linalg.generic` producer into its only consumer (upstream's
    elementwise fusion patterns) when the producer does not read its init
    operands and the consumer reads the produced value through a
    permutation map. Upstream's `linalg-fuse-elementwise-ops` also fuses
    into consumers with extra loops: the producer is then recomputed on
    every iteration of them, and a producer that accumulates into its init
    (as gradients do) accumulates once per iteration, a wrong result.
    `--mp-lower-cpu` and `--mp-lower-gpu` use this pass.

    Input:

    ```mlir
    %sum = linalg.generic {... iterator_types = ["parallel", "parallel"]}
        ins(%x, %bias : tensor<64x512xf32>, tensor<512xf32>) ... {
      %s = arith.addf %in, %b : f32
      linalg.yield %s : f32
    } -> tensor<64x512xf32>
    %relu = linalg.generic {...} ins(%sum : tensor<64x512xf32>) ... {
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<64x512xf32>
    ```

    Output: one `linalg.generic` over `%x` and `%bias` whose body adds and
    takes the maximum.
  }];
}

def MPReciprocalDivisions
    : Pass<"mp-reciprocal-divisions", "::mlir::func::FuncOp"> {
  let summary = "Divide by a broadcast value through one reciprocal per "
                "element and multiplications";
  let description = [{
    Runs on tensors. In a `linalg.generic` whose body divides (`arith.divf`)
    by an f32 input of static shape whose indexing map leaves out loops
    with at least `min-reuse` iterations in all (a broadcast divisor:
    softmax's row sums, which its forward pass divides every element of
    the row by and its gradient twice more), the input's reciprocals are
    computed once, by a generic of their own (`1.0 / s`), and read by the
    generic through the same map; its divisions by that input become
    multiplications by the reciprocal. `--mp-lower-cpu` uses it after
    `--mp-fuse-elementwise`.

    `x * (1/s)` is within about 1.5 ulp of `x / s` (two roundings, not
    one: an encoder block's f32 loss against PyTorch moved from 2.4e-7 to
    3.0e-7); infinities and NaNs come out as from the division, except
    where `1/s` overflows (a subnormal `s`). Other
    divisions, divisors of other types and divisors each iteration reads
    an element of its own stay divisions.
  }];
  let options = [
    Option<"minReuse", "min-reuse", "int64_t", /*default=*/"8",
           "Iterations that must read each element of the divisor">
  ];
  let statistics = [
    Statistic<"numDivisors", "divisors",
              "Divisors read through their reciprocals">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MPFuseSiblingReductions
    : Pass<"mp-fuse-sibling-reductions", "::mlir::func::FuncOp"> {
  let summary = "Take an elementwise generic into a reduction that reads "
                "the same tensor: one pass over it";
  let description = [{
    Runs on tensors. A `linalg.generic` with reduction loops whose inputs
    are all read through identity maps, and whose parallel loops have at
    least `min-parallel` iterations in all (the partial sums
    `--mp-split-reductions` makes, `p[i, l] += g[i, r, l]^2`), takes in an
    elementwise generic (all loops parallel, identity maps, static shapes)
    that reads one of its inputs, or the tensor that input is a
    `tensor.expand_shape` of: the weight gradient the gradient norm sums
    and the optimizer update reads. The fused generic runs the reduction's
    loops; the elementwise operands are expanded the same way and its
    results collapsed back; a result only materialized into a buffer (a
    session's new parameters) is materialized uncollapsed into an expanded
    view of the buffer instead, so that empty-tensor elimination still
    computes it in place (it does not see through reshapes).

    The fused generic stands where the first of the two stood, so the
    other's operands, and the values its body takes from above, must be
    defined there already (effect-free definitions of values defined there,
    such as a `tensor.empty` or an input's `expand_shape`, move up): an
    update that needs the reduction's result (gradient clipping by the
    norm) is left alone. Sums are taken in the same order and elementwise
    results are unchanged: only the number of passes over memory changes.
    `--mp-lower-cpu` runs it after `--mp-split-reductions`; the GPU
    lowering does not (a reduction's serial loops would serialize the
    elementwise work there).
  }];
  let options = [
    Option<"minParallel", "min-parallel", "int64_t", /*default=*/"256",
           "Parallel iterations the reduction must have (the fused loops "
           "run on the threads through them)">
  ];
  let statistics = [
    Statistic<"numFused", "fused-siblings",
              "Elementwise generics taken into reductions">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // MP_LOWERING_PASSES_TD
