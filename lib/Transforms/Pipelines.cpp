//===- Pipelines.cpp - named mp pipelines ---------------------------------===//

#include "mp/Transforms/Pipelines.h"
#include "mp/Conversion/Passes.h"
#include "mp/Lowering/Passes.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

using namespace mlir;
using namespace mlir::mp;

TrainPasses mlir::mp::trainPasses(const TrainPipelineOptions &options) {
  TrainPasses passes;
  passes.dtype = options.dtype;
  passes.qat = options.qat;
  passes.observers.freezeAfter = options.qatFreezeAfter;
  passes.lossScaling.mode = options.lossScale;
  passes.lossScaling.initScale = options.initScale;
  passes.lossScaling.growthInterval = options.growthInterval;
  passes.lossScaling.clipNorm = options.clipNorm;
  passes.lossScaling.margin = options.margin;
  passes.lossScaling.hysteresis = options.hysteresis;
  passes.dataParallel.ranks = options.ranks;
  passes.optimizer.algorithm = options.optimizer;
  passes.optimizer.learningRate = options.lr;
  passes.optimizer.momentum = options.momentum;
  passes.optimizer.weightDecay = options.weightDecay;
  passes.optimizer.accumulate = options.accumulate;
  passes.dropout.seed = options.dropoutSeed;
  return passes;
}

void mlir::mp::buildTrainPipeline(OpPassManager &pm,
                                  const TrainPipelineOptions &options) {
  buildTrainPipeline(pm, trainPasses(options));
}

void mlir::mp::buildTrainPipeline(OpPassManager &pm,
                                  const TrainPasses &passes) {
  if (passes.qat)
    pm.addPass(createMPFakeQuant());
  pm.addPass(createMPAutodiff());
  MPLossScalingOptions scaling = passes.lossScaling;
  scaling.dtype = passes.dtype;
  pm.addPass(createMPLossScaling(scaling));
  if (passes.dataParallel.ranks > 0)
    pm.addPass(createMPDataParallel(passes.dataParallel));
  pm.addPass(createMPOptimizer(passes.optimizer));
  if (passes.qat)
    pm.addPass(createMPQuantObservers(passes.observers));
  // Masks drawn in the step (it has the step counter); predictions drop
  // dropout.
  pm.addPass(createMPLowerDropout(passes.dropout));
  // f32 training is the same step without the precision rewrite.
  if (passes.dtype == FloatPrecision::F32)
    return;
  AutoMixedPrecisionOptions amp;
  amp.dtype = passes.dtype;
  pm.addPass(createAutoMixedPrecision(amp));
  // Activations the backward pass reads are kept in f16/bf16.
  pm.addPass(createMPSaveLowPrecision());
}

/// one-shot-bufferize as the lowerings use it: whole functions, plain
/// (identity-layout) memrefs at their boundaries.
static std::unique_ptr<Pass> createBufferizeFunctionsPass() {
  bufferization::OneShotBufferizePassOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  return bufferization::createOneShotBufferizePass(options);
}

void mlir::mp::buildLowerCpuPipeline(OpPassManager &pm,
                                     const LowerCpuOptions &options) {
  // Upstream passes in the order upstream's own CPU integration tests use
  // them, and mp's where they belong.
  if (options.probes)
    pm.addPass(createConvertProbesToRuntime());
  // Dropouts left (a module lowered without the training pipeline):
  // masks in a training step, the identity elsewhere.
  pm.addPass(createMPLowerDropout());
  pm.addPass(createConvertMPToUpstream());
  // Convolutions become im2col + a product the runtime's GEMM runs.
  if (options.runtimeContractions)
    pm.addNestedPass<func::FuncOp>(createMPConvolutionsToGemm());
  // Gradients written once are not added to zero-filled buffers.
  pm.addNestedPass<func::FuncOp>(createMPDropZeroAccumulators());
  // Elementwise chains (bias, activation, casts, scaling) become one loop
  // nest each: fewer passes over memory, fewer buffers.
  pm.addNestedPass<func::FuncOp>(createMPFuseElementwise());
  // A divisor shared by a row (softmax's sum): one reciprocal, then
  // multiplications.
  pm.addNestedPass<func::FuncOp>(createMPReciprocalDivisions());
  // Sums over more than 4096 elements (a loss over every element, inf
  // checks) as partials of at most 4096 serial steps, combined after: one
  // f32 accumulator over a million elements loses about four digits (an
  // encoder block's MSE loss was 4.7e-4 off, now 1.8e-7), and neighbouring
  // partials fill vector lanes. A sum along rows keeps 16 partials a row,
  // so that threads take whole rows (contiguous memory) rather than
  // columns of every row.
  MPSplitReductionsOptions split;
  split.perThread = 4096;
  split.lanes = 16;
  pm.addNestedPass<func::FuncOp>(createMPSplitReductions(split));
  // The gradient norm's partial sums and the optimizer update read each
  // weight gradient in one pass, not two.
  pm.addNestedPass<func::FuncOp>(createMPFuseSiblingReductions());
  // Results materialized into a destination are computed in it.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(createBufferizeFunctionsPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  // May the session's new parameters overwrite the old ones?
  pm.addNestedPass<func::FuncOp>(createMPInPlaceUpdates());
  if (options.runtimeContractions)
    pm.addPass(createConvertContractionsToRuntime());
  // Buffers are freed after their last use, not at the end of the step
  // (docs/memory.md).
  pm.addNestedPass<func::FuncOp>(createMPEarlyDealloc());
  // Unit-stride parallel loops become 16-wide vectors (AVX-512 has 16 f32
  // lanes); strided loops stay scalar (mp-vectorize-loops).
  pm.addPass(createConvertLinalgToAffineLoopsPass());
  // Reductions accumulate in registers (while the allocations that show
  // which buffers cannot share memory are still in sight, before loops
  // move into parallel bodies).
  pm.addNestedPass<func::FuncOp>(createMPPromoteAccumulators());
  // Nests over the same rows (softmax's max, exponentials, sum and
  // normalization; layer norm's) become one: a row stays in L1 between them.
  pm.addNestedPass<func::FuncOp>(createMPFuseRowLoops());
  constexpr int64_t vectorLanes = 16;
  // Large parallel loop nests run a share per thread (before vectorizing:
  // the dependence analysis reads affine loads and stores), in blocks of
  // whole vectors where the vectorizer may take the loop.
  if (options.parallel) {
    MPParallelizeLoopsOptions parallel;
    parallel.vectorSize = vectorLanes;
    pm.addPass(createMPParallelizeLoops(parallel));
  }
  if (options.vectorize) {
    MPVectorizeLoopsOptions vectorize;
    vectorize.vectorSize = vectorLanes;
    pm.addNestedPass<func::FuncOp>(createMPVectorizeLoops(vectorize));
  }
  // exp, log, tanh, erf in vector registers, not one libm call per lane.
  if (options.approximateMath)
    pm.addNestedPass<func::FuncOp>(createMPApproximateMath());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  // --mp-data-parallel's all-reduces (none in a one-process step).
  pm.addPass(createMPCollectivesToLLVM());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // Vector math without an LLVM intrinsic (erf, GELU's) became libm calls
  // on extracted lanes: those extracts and inserts too.
  pm.addPass(createConvertVectorToLLVMPass());
  // bf16 conversions are expanded to integer code, unless the target CPU
  // converts in hardware (AVX512-BF16) and the code generator may use it.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = !options.nativeBf16;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.parallel)
    pm.addPass(createMPParallelLaunchesToRuntime());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The CUDA toolkit whose libdevice kernels link: \p requested if it has
/// one, else $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, /usr/local/cuda, and the
/// toolkit of the ptxas on PATH (resolving links and wrappers' targets).
/// Empty when none has libdevice; kernels that call math functions are then
/// an error (--mp-gpu-require-libdevice).
static std::string findCudaToolkit(StringRef requested) {
  auto hasLibdevice = [](StringRef root) {
    SmallString<128> path(root);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    return !root.empty() && llvm::sys::fs::exists(path);
  };
  if (!requested.empty())
    return hasLibdevice(requested) ? requested.str() : std::string();
  SmallVector<std::string> candidates;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (std::optional<std::string> value = llvm::sys::Process::GetEnv(var))
      candidates.push_back(*value);
  candidates.push_back("/usr/local/cuda");
  if (llvm::ErrorOr<std::string> ptxas =
          llvm::sys::findProgramByName("ptxas")) {
    SmallString<128> real;
    if (!llvm::sys::fs::real_path(*ptxas, real))
      candidates.push_back(
          llvm::sys::path::parent_path(llvm::sys::path::parent_path(real))
              .str());
  }
  for (const std::string &root : candidates)
    if (hasLibdevice(root))
      return root;
  return "";
}

LogicalResult mlir::mp::buildLowerGpuPipeline(
    OpPassManager &pm, const LowerGpuOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  StringRef chip = options.chip;
  if (!chip.consume_front("sm_") || chip.empty() ||
      !llvm::all_of(chip.drop_back(chip.ends_with("a")), llvm::isDigit))
    return errorHandler("mp-lower-gpu: chip must be an NVIDIA sm_NN target "
                        "such as sm_80 or sm_90, got '" +
                        options.chip + "'");
  if (options.blockSize < 1 || options.blockSize > 1024)
    return errorHandler("mp-lower-gpu: block-size must be in [1, 1024], got " +
                        Twine(options.blockSize));
  std::string toolkit = findCudaToolkit(options.toolkit);
  if (!options.toolkit.empty() && toolkit.empty())
    return errorHandler("mp-lower-gpu: toolkit '" + options.toolkit +
                        "' has no nvvm/libdevice/libdevice.10.bc");

  // Probes are dropped: their runtime observer reads host memory.
  // Dropouts left (a module lowered without the training pipeline):
  // masks in a training step, the identity elsewhere.
  pm.addPass(createMPLowerDropout());
  pm.addPass(createConvertMPToUpstream());
  if (options.runtimeContractions)
    pm.addNestedPass<func::FuncOp>(createMPConvolutionsToGemm());
  pm.addNestedPass<func::FuncOp>(createMPDropZeroAccumulators());
  pm.addNestedPass<func::FuncOp>(createMPFuseElementwise());
  // Long reductions (inf checks, losses, column sums) as partials that many
  // threads compute.
  pm.addNestedPass<func::FuncOp>(createMPSplitReductions());
  // Results materialized into a destination (the session's parameter and
  // state buffers) are computed in it.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(createBufferizeFunctionsPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addNestedPass<func::FuncOp>(createMPInPlaceUpdates());
  // Matrix products call cuBLASLt from host code (pointers only, no element
  // access) instead of becoming loop kernels.
  if (options.runtimeContractions) {
    ConvertContractionsToRuntimeOptions contractions;
    contractions.runtime = ContractionRuntime::Cuda;
    pm.addPass(createConvertContractionsToRuntime(contractions));
  }
  // Buffers freed after their last use, not at the end of the step (the
  // pool orders a reuse after the freeing stream).
  pm.addNestedPass<func::FuncOp>(createMPEarlyDealloc());
  // Column sums: parallel loops first, one thread per column.
  pm.addNestedPass<func::FuncOp>(createMPGpuParallelLoopsFirst());
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  // Buffers in device memory; host reads of single-element results staged
  // (before element stores become kernels).
  if (options.deviceMemory)
    pm.addPass(createMPGpuDeviceMemory());
  MPGpuMapParallelLoopsOptions mapping;
  mapping.blockSize = options.blockSize;
  pm.addPass(createMPGpuMapParallelLoops(mapping));
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  // Constants move into kernels: divisions by shapes fold.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());

  // Upstream's NVVM pipeline (gpu-lower-to-nvvm-pipeline), spelled out so
  // that gpu-module-to-binary gets the CUDA toolkit that holds libdevice.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  // gpu-to-llvm lowers gpu.alloc/memcpy/dealloc only with an async token:
  // chain them (and the launches) on streams, with a wait before each host
  // op that has side effects.
  if (options.deviceMemory)
    pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createStripDebugInfoPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(LLVM::createNVVMOptimizeForTargetPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  // Without a toolkit, math calls would stay unresolved in the PTX.
  if (toolkit.empty())
    pm.addPass(createMPGpuRequireLibdevice());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget =
      options.format == GpuBinaryFormat::Fatbin ? "fatbin" : "isa";
  binary.toolkitPath = toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return success();
}

void mlir::mp::registerMPPipelines() {
  registerPassPipeline(
      "mp-lower-gpu",
      "Lower a module on tensors (mp, linalg, tensor, arith, math) to GPU "
      "kernels (NVVM, PTX or fatbin in gpu.binary) and LLVM host code",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        LowerGpuOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildLowerGpuPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const ::mlir::detail::PassOptions &)> optHandler) {
        optHandler(LowerGpuOptions());
      });
  PassPipelineRegistration<LowerCpuOptions>(
      "mp-lower-cpu",
      "Lower a module on tensors (mp, linalg, tensor, arith, math) to the "
      "LLVM dialect for CPU execution",
      [](OpPassManager &pm, const LowerCpuOptions &options) {
        buildLowerCpuPipeline(pm, options);
      });
  PassPipelineRegistration<TrainPipelineOptions>(
      "mp-train-pipeline",
      "Build a mixed-precision @train_step from an mp.loss function: "
      "autodiff, loss scaling, FP32 optimizer update, AMP rewrite, "
      "low-precision saved activations",
      [](OpPassManager &pm, const TrainPipelineOptions &options) {
        buildTrainPipeline(pm, options);
      });
}
