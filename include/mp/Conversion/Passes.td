//===- Passes.td - mp conversion passes --------------------*- tablegen -*-===//
//
// Conversions from one abstraction to another: the mp dialect to upstream
// ops, matrix products, probes and parallel launches to calls of the
// runtime, collectives to MPI calls. The transforms the lowering pipelines
// run on loops and buffers are in mp/Lowering/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MP_CONVERSION_PASSES_TD
#define MP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMPToUpstream : Pass<"mp-convert-to-upstream"> {
  let summary = "Lower mp ops to upstream arith, linalg and tensor";
  let description = [{
    Rewrites every `mp` op into upstream ops so a module that uses them can
    be bufferized, lowered and executed with upstream tools alone:

    * `mp.scale_loss` becomes `arith.mulf` (a `linalg.generic` on tensors);
    * `mp.unscale` becomes one `linalg.generic` per gradient that multiplies
      by `1 / scale` in FP32, and one reduction per gradient that ORs
      "|x| is not below +inf" (true for inf and nan) into `found_inf`;
    * `mp.update_scale` becomes `arith.select` chains over the state machine;
    * `mp.observe` is dropped (its input is forwarded); run
      `--mp-probes-to-runtime` first (as `--mp-lower-cpu` does) to record
      what probes see instead;
    * `mp.quant_scale` becomes a max-|x| reduction and a divide by 127;
      `mp.fake_quant` one `linalg.generic` rounding to the int8 grid and
      back (their `observer` names have been read by then);
    * attributes whose values are the mp dialect's (`mp.loss_scaling =
      #mp.loss_scaling<...>`, `mp.precision`, `mp.decision`) are removed:
      the passes that read them have run, and upstream tools could not
      parse them. Names and roles (`mp.param = "w"`, `mp.seed`) stay.

    Before:

    ```mlir
    %s, %t = mp.update_scale %scale, %tracker, %found_inf : i32
    ```

    After:

    ```mlir
    %grown = arith.addi %tracker, %c1_i32 : i32
    %grow = arith.cmpi sge, %grown, %c2000_i32 : i32
    %up = arith.mulf %scale, %cst_2 : f32
    %up_clamped = arith.minimumf %up, %cst_max : f32
    ...
    %s = arith.select %found_inf, %down_clamped, %clean_scale : f32
    %t = arith.select %found_inf, %c0_i32, %clean_tracker : i32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numOpsLowered", "ops-lowered", "mp ops lowered">
  ];
}

def ConvertContractionsToRuntime
    : Pass<"mp-contractions-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Replace matrix products on buffers with calls to the "
                "runtime's GEMM (mprt_gemm on the CPU, cuBLASLt on CUDA)";
  let description = [{
    Runs after bufferization. Every linalg op on memrefs that is a matrix
    product — `linalg.matmul` (with transposed operands too) or a
    `linalg.generic` with one reduction loop and a multiply-add body, as
    `--mp-autodiff` emits for gradients — whose inputs are both f32, f16 or
    bf16 with an f32 accumulator, or both i8 (sign-extended in the body, as
    `--mp-quantize` emits) with an i32 accumulator, and whose rows are
    contiguous, becomes a call. With `runtime=cpu` (the default,
    `--mp-lower-cpu{runtime-contractions}`):

    ```mlir
    func.call @mprt_gemm(%a, %lda, %b, %ldb, %c, %ldc, %m, %n, %k, %flags,
                         %type) : (i64, ..., i32, i32) -> i32
    ```

    Batched products are taken too: `linalg.batch_matmul` and generics with
    one more parallel loop that leads the result and the inputs
    (`C[b, i, j] += A[b, .] * B[b, .]`); an input without the batch loop is
    one matrix shared by the batch (stride 0: the filter of an im2col
    convolution, `C[b, f, p] += W[f, k] * col[b, k, p]`). On the CPU they
    call `mprt_gemm_batched` (the arguments of `mprt_gemm` followed by
    `%batch, %strideA, %strideB, %strideC`). With `runtime=cuda`
    (`--mp-lower-gpu`) every product becomes one strided-batched call of
    libmprt_cuda (cuBLASLt), which returns only when the product is done (so
    it is ordered with the kernels around it) and reports failures like the
    `mgpu*` functions:

    ```mlir
    func.call @mprt_cuda_gemm_sync(%a, %lda, %b, %ldb, %c, %ldc, %m, %n, %k,
        %flags, %type, %batch, %strideA, %strideB, %strideC)
        : (i64, ..., i32, i32, i64, i64, i64, i64) -> i32
    ```

    Unbatched products pass a batch of 1 and strides of 0. Pointers are
    aligned base pointers plus offsets, as integers; leading dimensions and
    batch strides are in elements. Flags: 1 A transposed, 2 B transposed;
    types: 0 f32, 1 f16, 2 bf16, 3 s8. Other contractions stay loops. The
    call accumulates into C, as the linalg op does.

    A 16-bit product whose f32 result only feeds a rounding generic —
    `C = alloc; fill(0, C); C += A B; D = truncf(C); dealloc C`, the form
    AMP gives a backward product whose consumer is reshaped — calls the GEMM
    with flag 4 (`MPRT_GEMM_ROUNDED_C`): it writes `D` (f16 or bf16,
    accumulated in f32 and rounded once) and `C`, its fill and the rounding
    pass disappear. `D` must be a fresh buffer that nothing reads or views
    before the rounding (its allocation moves before the call). A rounding
    that also swaps the last two dimensions (`D[.., j, i] = truncf(C[..,
    i, j])`, attention's gradients in the layout the next product reads)
    is taken too: the call computes `D = op(B)^T op(A)^T`, operands
    swapped and their transpose flags flipped.

    An operand that is a transposed copy made for products —
    `X = alloc; linalg.transpose ins(S) outs(X) permutation = [.., n-1,
    n-2]`, X read by matched products only (attention's `K^T`) — is read
    through `S` with its transpose flag flipped, when `S`'s buffer is an
    allocation of the block that nothing writes between the transpose and
    the product and that is freed after it; once no product reads X, X
    and the transpose go.

    With `runtime=cpu`, attention's head split and merge go the same way.
    A batched operand `V = collapse_shape T [[0, 1], [2], [3]]`, where
    `T = alloc` is written only by a copy of a 4-D `S` with its middle
    dimensions swapped (`linalg.transpose` permutation `[0, 2, 1, 3]`, or
    a generic that yields its input through such maps: [sequences, tokens,
    heads, features] to [sequences, heads, tokens, features]) and every
    reader of `T` is a product (or a transposed copy that goes), is read
    through `memref.transpose S (d0, d1, d2, d3) -> (d0, d2, d1, d3)`: the
    call `mprt_gemm_batched_2d` takes the arguments of `mprt_gemm` followed
    by `%outer, %outerStrideA, %outerStrideB, %outerStrideC, %batch,
    %strideA, %strideB, %strideC` (a 3-D operand's outer stride is its
    batch stride times `%batch`). `S`'s buffer must be an allocation of
    the block that nothing writes between the copy and `T`'s deallocation;
    its own deallocation moves there if it came earlier; then `T` and the
    copy go. A rounded result `D` whose only other reader is such a copy
    of `expand_shape D [[0, 1], [2], [3]]` into a fresh `M` (the merge) is
    written straight into `M` through the same view; `D` and the copy go.

    With `runtime=cpu`, a 2-D f16/bf16 product whose f32 result only
    feeds a bias addition — `C = alloc; fill(0, C); C += A B;
    D[i, j] = C[i, j] + bias[j]` (D f32), or that sum rounded to the
    operands' type (a linear layer under AMP) — calls

    ```mlir
    func.call @mprt_gemm_bias(%a, %lda, %b, %ldb, %d, %ldd, %m, %n, %k,
                              %flags, %type, %bias) : (i64, ..., i64) -> i32
    ```

    which writes D itself (flag 4 when D is 16-bit): the f32 C, its fill
    and the bias loop disappear (oneDNN adds the f32 bias before rounding
    once, as the loop did). D must be fresh, as for a rounded result.
    When the loop goes on from the value D gets (`D[i, j] = g(sum)`, g
    elementwise and reading nothing else, such as the next layer's ReLU
    that elementwise fusion put there), g stays as a loop over D in place:
    the GEMM writes the 16-bit sum instead of the f32 product, and g reads
    the same values it read before.

    With `runtime=cpu`, a 2-D int8 product of `--mp-quantize` whose int32
    result is only dequantized — `C = alloc; C[i, j] = bq[j]` (the
    quantized bias; or `fill(0, C)`); C += A B; D[i, j] = sitofp(C[i, j])
    * scale[j]`, maybe `max(., 0)` after (D f32) — calls

    ```mlir
    func.call @mprt_gemm_s8_dequantize(%a, %lda, %b, %ldb, %d, %ldd, %m,
        %n, %k, %flags, %bq, %scale) : (i64, ..., i32, i64, i64) -> i32
    ```

    (`%bq` 0 without a bias; flag 16, `MPRT_GEMM_RELU`, for the max): oneDNN
    writes the sum with the bias into D in f32 and one pass scales it; C,
    the broadcast and the GEMM's read of it disappear. Between the broadcast and the
    dequantization only allocations and effect-free ops may stand; D must
    be fresh, as for a rounded result. oneDNN rounds the int32 sum and the
    bias to f32 each before adding them: the same as the loop's one
    conversion of their int32 sum while both stay below 2^24 in magnitude.
    When D's next reader is dynamic quantization's max |x|, split into
    per-row lanes (`E = expand_shape D [[0], [1, 2]]` ([m, n / L, L]);
    `Q = alloc; fill(init, Q); Q[i, p] = maximumf(|E[i, r, p]|, Q[i, p])`,
    r the reduction) and everything else only reads D, the call is
    `mprt_gemm_s8_dequantize_absmax(..., %scale, %q, %L)`: the scaling
    pass computes the partials while it holds each row (exact, NaN kept),
    and the partials' loop goes; Q's allocation and fill move before the
    call.

    With `runtime=cpu`, any other product whose C is a fresh buffer filled
    with zero just for it — `C = alloc; fill(0, C); C += A B`, where C's
    other users all come after the product — calls the GEMM with flag 8
    (`MPRT_GEMM_OVERWRITE_C`, `C = A B`) and the fill goes: the zeros are
    neither written nor read. (A product of -0 then stays -0.) The program
    must be linked (or JIT-resolved) with libmprt or libmprt_cuda.
  }];
  let options = [
    Option<"runtime", "runtime", "::mlir::mp::ContractionRuntime",
           /*default=*/"::mlir::mp::ContractionRuntime::Cpu",
           "Which runtime computes the products", [{::llvm::cl::values(
      clEnumValN(::mlir::mp::ContractionRuntime::Cpu, "cpu",
                 "mprt_gemm, oneDNN"),
      clEnumValN(::mlir::mp::ContractionRuntime::Cuda, "cuda",
                 "mprt_cuda_gemm_sync, cuBLASLt"))}]>
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let statistics = [
    Statistic<"numCalls", "gemm-calls", "Contractions replaced by runtime "
                                        "GEMM calls">,
    Statistic<"numRounded", "rounded-results",
              "Of those, products whose f32 result was only rounded: the "
              "call writes the rounded result (MPRT_GEMM_ROUNDED_C)">,
    Statistic<"numBiased", "biased-results",
              "Of those, 16-bit products whose f32 result only gets a bias "
              "added (maybe rounded, maybe more after): mprt_gemm_bias "
              "writes the sum">,
    Statistic<"numDequantized", "dequantized-results",
              "Of those, int8 products whose int32 result is only "
              "dequantized: mprt_gemm_s8_dequantize writes the f32 result">,
    Statistic<"numAbsMaxPartials", "absmax-partials",
              "Of the dequantized results, those whose max |x| partials "
              "(dynamic quantization's) the call computes too "
              "(mprt_gemm_s8_dequantize_absmax)">,
    Statistic<"numOverwritten", "overwritten-results",
              "Of those, products into a zero fill made for them: the call "
              "overwrites C (MPRT_GEMM_OVERWRITE_C) and the fill goes">,
    Statistic<"numTransposedResults", "transposed-results",
              "Of the rounded results, those rounded into a transposed "
              "layout: the call writes the transpose">,
    Statistic<"numHeadSplits", "head-splits",
              "Attention head splits (a 4-D copy with its middle dimensions "
              "swapped, collapsed) whose products read the source in place "
              "(mprt_gemm_batched_2d)">,
    Statistic<"numHeadMerges", "head-merges",
              "Of the rounded results, those whose head merge the call "
              "writes in place (mprt_gemm_batched_2d)">,
    Statistic<"numTransposedOperands", "transposed-operands",
              "Transposed copies made for products that the calls read "
              "through their originals instead (the copy goes)">
  ];
}

def ConvertProbesToRuntime
    : Pass<"mp-probes-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Turn mp.observe probes into calls of libmprt's mprt_observe";
  let description = [{
    Runs on tensors, before bufferization. Every `mp.observe %x as "id"`
    becomes a call

    ```c
    void mprt_observe(const char *id, const void *data, int64_t numElements,
                      int32_t dtype);
    ```

    with the probe id as a NUL-terminated `memref.global` constant, the
    tensor's elements (dense, C order: `bufferization.to_buffer` of a
    strided value bufferizes to a copy) and its `mprt_dtype` code: f32 0,
    f16 1, bf16 2, f64 3, i32 4, i64 5, ui8 6, i8 7; i1 tensors are widened
    to ui8. Any other element type is an error naming the probe. The probe's
    result is replaced by its input. What a call does is up to the driver's
    observer (calibration statistics, a numerics checker); with none
    installed it returns at once. Pointers travel as `i64`, as for
    `mprt_gemm`.

    Before:

    ```mlir
    %y = mp.observe %x as "fc1.input" : tensor<64x512xf32>
    ```

    After:

    ```mlir
    memref.global "private" constant @__mp_probe_id_0 : memref<10xi8> = dense<[...]>
    ...
    %buf = bufferization.to_buffer %x read_only : tensor<64x512xf32> to memref<64x512xf32>
    %id = memref.get_global @__mp_probe_id_0 : memref<10xi8>
    ...
    func.call @mprt_observe(%id_ptr, %data_ptr, %c32768_i64, %c0_i32)
        : (i64, i64, i64, i32) -> ()
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let statistics = [
    Statistic<"numProbes", "probes", "mp.observe ops turned into calls">
  ];
}

def MPParallelLaunchesToRuntime
    : Pass<"mp-parallel-launches-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Call mprt_parallel_for for the launches of outlined "
                "parallel loops (LLVM dialect)";
  let description = [{
    Runs on the LLVM dialect, after `convert-func-to-llvm`. For every
    declaration marked `mp.parallel_launch = @body` (made by
    `--mp-parallelize-loops`), adds `@body_entry(i64 begin, i64 end, ptr
    context)`, which loads the captured values from a struct at `context`
    and calls `@body`, and rewrites every call of the declaration
    `(n, captured...)` into: the captured values stored in a struct on the
    caller's stack, then `mprt_parallel_for(n, @body_entry, context)`. The
    declaration is then removed. A launch whose body is missing or whose
    arguments do not match the body's is an error.

    The body's arguments at the positions its `mp.parallel_noalias` lists
    get `llvm.noalias` (a listed position that is not a pointer argument
    is an error), and the list is removed.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MPCollectivesToLLVM : Pass<"mp-collectives-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Lower the mpi dialect's collectives (--mp-data-parallel's "
                "all-reduces) to MPI library calls";
  let description = [{
    Runs on memrefs, after bufferization (in `--mp-lower-cpu`, before
    `finalize-memref-to-llvm`): upstream's MPI-to-LLVM patterns turn
    `mpi.comm_world`, `mpi.comm_rank` and `mpi.allreduce` into calls of
    `MPI_Comm_rank` and `MPI_Allreduce` with the handles of the ABI the
    module's `dlti.map` names (MPICH). The process links the MPI library
    and has called `MPI_Init` (the runtime's `mprt_dist_init`). A module
    without mpi ops is left as it is; an mpi op the patterns do not lower
    (`comm_size`, barrier, non-blocking operations) is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // MP_CONVERSION_PASSES_TD
