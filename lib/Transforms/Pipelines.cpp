//===- Pipelines.cpp - named mp pipelines ---------------------------------===//

#include "mp/Transforms/Pipelines.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

using namespace mlir;
using namespace mlir::mp;

void mlir::mp::buildTrainPipeline(OpPassManager &pm,
                                  const TrainPipelineOptions &options) {
  pm.addPass(createMPAutodiff());
  MPLossScalingOptions scaling;
  scaling.mode = options.lossScale;
  scaling.dtype = options.dtype;
  scaling.initScale = options.initScale;
  scaling.growthInterval = options.growthInterval;
  scaling.clipNorm = options.clipNorm;
  pm.addPass(createMPLossScaling(scaling));
  MPOptimizerOptions optimizer;
  optimizer.algorithm = options.optimizer;
  optimizer.learningRate = options.lr;
  optimizer.momentum = options.momentum;
  optimizer.weightDecay = options.weightDecay;
  pm.addPass(createMPOptimizer(optimizer));
  AutoMixedPrecisionOptions amp;
  amp.dtype = options.dtype;
  pm.addPass(createAutoMixedPrecision(amp));
  pm.addPass(createMPSaveLowPrecision());
}

LogicalResult mlir::mp::buildLowerCpuPipeline(OpPassManager &pm,
                                              const LowerCpuOptions &options) {
  // Upstream passes only; the order is the one upstream's own CPU
  // integration tests use. bf16 conversions are expanded to integer code.
  return parsePassPipeline(
      std::string(options.probes ? "mp-probes-to-runtime," : "") +
          "convert-mp-to-upstream," +
          // Convolutions become im2col + a product the runtime's GEMM runs.
          std::string(options.runtimeContractions
                          ? "func.func(mp-convolutions-to-gemm),"
                          : "") +
          // Gradients written once are not added to zero-filled buffers.
          "func.func(mp-drop-zero-accumulators),"
          // Elementwise chains (bias, activation, casts, scaling) become one
          // loop nest each: fewer passes over memory, fewer buffers.
          "func.func(mp-fuse-elementwise),"
          // Results materialized into a destination are computed in it.
          "eliminate-empty-tensors,"
          "one-shot-bufferize{bufferize-function-boundaries "
          "function-boundary-type-conversion=identity-layout-map},"
          "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
          // May the session's new parameters overwrite the old ones?
          "func.func(mp-in-place-updates)," +
          std::string(options.runtimeContractions
                          ? "mp-contractions-to-runtime,"
                          : "") +
          // Buffers are freed after their last use, not at the end of the
          // step (docs/memory.md).
          "func.func(mp-early-dealloc)," +
          // Unit-stride parallel loops become 16-wide vectors (AVX-512 has 16
          // f32 lanes); strided loops stay scalar (mp-vectorize-loops).
          "convert-linalg-to-affine-loops," +
          std::string(options.vectorize
                          ? "func.func(mp-vectorize-loops{vector-size=16}),"
                          : "") +
          "convert-vector-to-scf,expand-strided-metadata,lower-affine,"
          "convert-scf-to-cf,convert-vector-to-llvm,finalize-memref-to-llvm,"
          "convert-math-to-llvm,"
          "convert-math-to-libm,"
          // Vector math without an LLVM intrinsic (erf, GELU's) became
          // libm calls on extracted lanes: those extracts and inserts too.
          "convert-vector-to-llvm,arith-expand{include-bf16=true},"
          "convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
          "convert-ub-to-llvm,"
          "reconcile-unrealized-casts",
      pm);
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
  if (options.format != "isa" && options.format != "fatbin")
    return errorHandler("mp-lower-gpu: format must be isa or fatbin, got '" +
                        options.format + "'");
  if (options.blockSize < 1 || options.blockSize > 1024)
    return errorHandler("mp-lower-gpu: block-size must be in [1, 1024], got " +
                        Twine(options.blockSize));
  // Probes are dropped: their runtime observer reads host memory.
  if (failed(parsePassPipeline(
          "convert-mp-to-upstream," +
              std::string(options.runtimeContractions
                              ? "func.func(mp-convolutions-to-gemm),"
                              : "") +
              "func.func(mp-drop-zero-accumulators),"
              "func.func(mp-fuse-elementwise),"
              // Long reductions (inf checks, losses, column sums) as
              // partials that many threads compute.
              "func.func(mp-gpu-split-reductions),"
              // Results materialized into a destination (the session's
              // parameter and state buffers) are computed in it.
              "eliminate-empty-tensors,"
              "one-shot-bufferize{bufferize-function-boundaries "
              "function-boundary-type-conversion=identity-layout-map},"
              "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
              "func.func(mp-in-place-updates)," +
              // Matrix products call cuBLASLt from host code (pointers
              // only, no element access) instead of becoming loop kernels.
              std::string(options.runtimeContractions
                              ? "mp-contractions-to-runtime{runtime=cuda},"
                              : "") +
              // Buffers freed after their last use, not at the end of the
              // step (the pool orders a reuse after the freeing stream).
              "func.func(mp-early-dealloc),"
              // Column sums: parallel loops first, one thread per column.
              "func.func(mp-gpu-parallel-loops-first),"
              "convert-linalg-to-parallel-loops," +
              // Buffers in device memory; host reads of single-element
              // results staged (before element stores become kernels).
              std::string(options.deviceMemory ? "mp-gpu-device-memory," : "") +
              "mp-gpu-map-parallel-loops{block-size=" +
              std::to_string(options.blockSize) +
              "},"
              "convert-parallel-loops-to-gpu,canonicalize,"
              // Constants move into kernels: divisions by shapes fold.
              "gpu-launch-sink-index-computations",
          pm)))
    return errorHandler("mp-lower-gpu: bad pipeline text");
  // Upstream's NVVM pipeline (gpu-lower-to-nvvm-pipeline), spelled out so
  // that gpu-module-to-binary gets the CUDA toolkit that holds libdevice.
  std::string toolkit = findCudaToolkit(options.toolkit);
  if (!options.toolkit.empty() && toolkit.empty())
    return errorHandler("mp-lower-gpu: toolkit '" + options.toolkit +
                        "' has no nvvm/libdevice/libdevice.10.bc");
  std::string nvvm =
      "convert-nvgpu-to-nvvm,gpu-kernel-outlining," +
      // gpu-to-llvm lowers gpu.alloc/memcpy/dealloc only with an async
      // token: chain them (and the launches) on streams, with a wait before
      // each host op that has side effects.
      std::string(options.deviceMemory ? "func.func(gpu-async-region)," : "") +
      "convert-vector-to-scf,"
      "convert-scf-to-cf,convert-nvvm-to-llvm,convert-func-to-llvm,"
      "expand-strided-metadata,"
      "nvvm-attach-target{chip=" +
      options.chip + " features=" + options.features +
      " O=" + std::to_string(options.optLevel) +
      "},lower-affine,convert-arith-to-llvm,convert-index-to-llvm,"
      "canonicalize,cse,"
      "gpu.module(strip-debuginfo,convert-gpu-to-nvvm,"
      "llvm-optimize-for-nvvm-target,canonicalize,cse,"
      "reconcile-unrealized-casts)," +
      // Without a toolkit, math calls would stay unresolved in the PTX.
      std::string(toolkit.empty() ? "mp-gpu-require-libdevice," : "") +
      "gpu-to-llvm,gpu-module-to-binary{format=" + options.format +
      (toolkit.empty() ? "" : " toolkit=" + toolkit) +
      "},convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts";
  if (failed(parsePassPipeline(nvvm, pm)))
    return errorHandler("mp-lower-gpu: bad NVVM pipeline text");
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
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(LowerGpuOptions());
      });
  PassPipelineRegistration<LowerCpuOptions>(
      "mp-lower-cpu",
      "Lower a module on tensors (mp, linalg, tensor, arith, math) to the "
      "LLVM dialect for CPU execution",
      [](OpPassManager &pm, const LowerCpuOptions &options) {
        if (failed(buildLowerCpuPipeline(pm, options)))
          llvm::report_fatal_error("mp-lower-cpu: bad pipeline text");
      });
  PassPipelineRegistration<TrainPipelineOptions>(
      "mp-train-pipeline",
      "Build a mixed-precision @train_step from an mp.loss function: "
      "autodiff, loss scaling, FP32 optimizer update, AMP rewrite, "
      "low-precision saved activations",
      buildTrainPipeline);
}
