//===- Pipelines.h - named mp pipelines -------------------------*- C++ -*-===//
//
// One option set for a chain of mp passes, for tools and framework stacks.
// Each pipeline is built here, with addPass and typed options, and nowhere
// else: mp-opt's pipeline flags, the sessions and the C API call these.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_PIPELINES_H
#define MP_TRANSFORMS_PIPELINES_H

#include "mp/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace mp {

/// Options of --mp-train-pipeline. Defaults are the passes' own.
struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  Option<FloatPrecision> dtype{
      *this, "dtype", llvm::cl::desc("Type training computes in"),
      llvm::cl::init(MPLossScalingOptions().dtype),
      llvm::cl::values(
          clEnumValN(FloatPrecision::F32, "f32",
                     "FP32 throughout: no mixed-precision rewrite"),
          clEnumValN(FloatPrecision::F16, "f16", "IEEE half precision"),
          clEnumValN(FloatPrecision::BF16, "bf16", "bfloat16"))};
  Option<LossScalingMode> lossScale{
      *this, "loss-scale", llvm::cl::desc("How the loss scale moves"),
      llvm::cl::init(MPLossScalingOptions().mode),
      llvm::cl::values(
          clEnumValN(LossScalingMode::Auto, "auto",
                     "dynamic for dtype=f16, none otherwise"),
          clEnumValN(LossScalingMode::Dynamic, "dynamic",
                     "back off on inf/nan, grow after clean steps"),
          clEnumValN(LossScalingMode::Adaptive, "adaptive",
                     "the largest power of two that keeps the measured "
                     "gradient amax margin below f16's maximum"),
          clEnumValN(LossScalingMode::Static, "static",
                     "a fixed scale (init-scale)"),
          clEnumValN(LossScalingMode::None, "none", "no scaling"))};
  Option<double> initScale{*this, "init-scale",
                           llvm::cl::desc("Initial (or static) loss scale"),
                           llvm::cl::init(MPLossScalingOptions().initScale)};
  Option<int64_t> growthInterval{
      *this, "growth-interval",
      llvm::cl::desc("Clean steps before the scale grows"),
      llvm::cl::init(MPLossScalingOptions().growthInterval)};
  Option<double> clipNorm{*this, "clip-norm",
                          llvm::cl::desc("Global gradient-norm clip (0: off)"),
                          llvm::cl::init(MPLossScalingOptions().clipNorm)};
  Option<double> margin{
      *this, "margin",
      llvm::cl::desc("Adaptive loss scaling: keep the scaled gradients' amax "
                     "this many times below f16's maximum"),
      llvm::cl::init(MPLossScalingOptions().margin)};
  Option<int64_t> hysteresis{
      *this, "hysteresis",
      llvm::cl::desc("Adaptive loss scaling: clean steps in a row that must "
                     "ask for a lower scale before it falls"),
      llvm::cl::init(MPLossScalingOptions().hysteresis)};
  Option<OptimizerAlgorithm> optimizer{
      *this, "optimizer", llvm::cl::desc("Update rule"),
      llvm::cl::init(MPOptimizerOptions().algorithm),
      llvm::cl::values(
          clEnumValN(OptimizerAlgorithm::Sgd, "sgd", "SGD with momentum"),
          clEnumValN(OptimizerAlgorithm::Adam, "adam", "Adam"),
          clEnumValN(OptimizerAlgorithm::AdamW, "adamw",
                     "Adam with decoupled weight decay"))};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(MPOptimizerOptions().learningRate)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(MPOptimizerOptions().momentum)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(MPOptimizerOptions().weightDecay)};
  Option<int64_t> accumulate{
      *this, "accumulate",
      llvm::cl::desc("Micro-batches per optimizer step (gradient "
                     "accumulation)"),
      llvm::cl::init(MPOptimizerOptions().accumulate)};
  Option<bool> qat{
      *this, "qat",
      llvm::cl::desc("Quantization-aware training: --mp-fake-quant before "
                     "autodiff, --mp-quant-observers after the optimizer"),
      llvm::cl::init(false)};
  Option<int64_t> qatFreezeAfter{
      *this, "qat-freeze-after",
      llvm::cl::desc("QAT: optimizer steps after which the activation "
                     "observers stop moving (0: never)"),
      llvm::cl::init(MPQuantObserversOptions().freezeAfter)};
  Option<uint64_t> dropoutSeed{
      *this, "dropout-seed",
      llvm::cl::desc("Key of dropout's random masks (--mp-lower-dropout)"),
      llvm::cl::init(MPLowerDropoutOptions().seed)};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("Data-parallel training over this many MPI ranks: "
                     "--mp-data-parallel averages the gradients before the "
                     "optimizer (0: one process, no MPI)"),
      llvm::cl::init(0)};
};

/// The passes of the training pipeline, each configured by its own options
/// (Passes.td declares them once): what buildTrainPipeline adds. A session
/// fills it from its options (lib/Session/SessionPipelines.cpp), mp-opt's
/// --mp-train-pipeline from TrainPipelineOptions (trainPasses).
struct TrainPasses {
  /// f32: the step without the precision rewrite; f16, bf16: AMP.
  FloatPrecision dtype = FloatPrecision::F32;
  /// Quantization-aware training: --mp-fake-quant and --mp-quant-observers.
  bool qat = false;
  MPQuantObserversOptions observers;
  /// Its dtype is `dtype`, whatever it holds here.
  MPLossScalingOptions lossScaling;
  /// ranks 0: one process, no --mp-data-parallel.
  MPDataParallelOptions dataParallel;
  MPOptimizerOptions optimizer;
  MPLowerDropoutOptions dropout;
};

/// --mp-train-pipeline's options as the passes take them.
TrainPasses trainPasses(const TrainPipelineOptions &options);

/// (qat) --mp-fake-quant, then --mp-autodiff, --mp-loss-scaling,
/// (ranks > 0) --mp-data-parallel, --mp-optimizer, (qat) --mp-quant-observers,
/// --mp-lower-dropout, then (dtype f16 or bf16)
/// --mp-auto-mixed-precision and --mp-save-low-precision.
void buildTrainPipeline(OpPassManager &pm, const TrainPasses &passes);
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &options);

struct LowerCpuOptions : public PassPipelineOptions<LowerCpuOptions> {
  Option<bool> runtimeContractions{
      *this, "runtime-contractions",
      llvm::cl::desc("Call libmprt's mprt_gemm / mprt_gemm_batched "
                     "(oneDNN) for matrix products, convolutions included "
                     "(im2col, --mp-convolutions-to-gemm); the program must "
                     "then be linked or JIT-resolved with libmprt"),
      llvm::cl::init(false)};
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Vectorize unit-stride parallel loops (16 lanes, "
                     "--mp-vectorize-loops)"),
      llvm::cl::init(true)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Compute f32 exp, expm1, log, log1p, log2, tanh and erf "
                     "with vectorizable polynomials (--mp-approximate-math) "
                     "instead of a libm call per element"),
      llvm::cl::init(true)};
  Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run large parallel loop nests on every OpenMP thread "
                     "through libmprt's mprt_parallel_for "
                     "(--mp-parallelize-loops); link or JIT-resolve libmprt"),
      llvm::cl::init(false)};
  Option<bool> probes{
      *this, "probes",
      llvm::cl::desc("Lower mp.observe probes to mprt_observe calls "
                     "(--mp-probes-to-runtime; link or JIT-resolve libmprt); "
                     "off: probes are dropped"),
      llvm::cl::init(true)};
  Option<bool> nativeBf16{
      *this, "native-bf16",
      llvm::cl::desc(
          "Leave f32 <-> bf16 conversions to LLVM's code generator, which "
          "uses AVX512-BF16's vcvtneps2bf16 when the target CPU has it "
          "(round to nearest even; f32 denormals become signed zeros), "
          "instead of integer code (arith-expand include-bf16), which runs "
          "on any CPU and keeps denormals"),
      llvm::cl::init(false)};
};

/// --mp-lower-cpu: mp ops to upstream, bufferize, vectorized loops, LLVM
/// dialect; the result runs under MLIR's ExecutionEngine (mp-run) or
/// mlir-runner.
void buildLowerCpuPipeline(OpPassManager &pm, const LowerCpuOptions &options);
/// What gpu.binary holds (upstream's gpu-module-to-binary `format`).
enum class GpuBinaryFormat { Isa, Fatbin };

struct LowerGpuOptions : public PassPipelineOptions<LowerGpuOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("NVIDIA target: sm_80 or sm_90"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("NVPTX features (PTX ISA version); PTX 8.0 covers "
                     "sm_80 and sm_90 and needs CUDA 12 or newer"),
      llvm::cl::init("+ptx80")};
  Option<GpuBinaryFormat> format{
      *this, "format", llvm::cl::desc("What gpu.binary holds"),
      llvm::cl::init(GpuBinaryFormat::Isa),
      llvm::cl::values(
          clEnumValN(GpuBinaryFormat::Isa, "isa",
                     "PTX text; the driver compiles it when it loads"),
          clEnumValN(GpuBinaryFormat::Fatbin, "fatbin",
                     "needs ptxas and fatbinary, from PATH or "
                     "/usr/local/cuda/bin"))};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block, 1 to 1024"),
                            llvm::cl::init(256)};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit whose nvvm/libdevice kernels link for math "
                     "functions; default: $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, "
                     "/usr/local/cuda, then the toolkit of ptxas on PATH")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level for kernels"),
                       llvm::cl::init(2)};
  Option<bool> runtimeContractions{
      *this, "runtime-contractions",
      llvm::cl::desc("Matrix products (matmul, batch_matmul, autodiff's "
                     "multiply-add generics; f32/f16/bf16 into f32, i8 into "
                     "i32; convolutions as im2col products) call "
                     "libmprt_cuda's mprt_cuda_gemm_sync (cuBLASLt) from host "
                     "code instead of becoming loop kernels"),
      llvm::cl::init(true)};
  Option<bool> deviceMemory{
      *this, "device-memory",
      llvm::cl::desc("Every buffer in device memory: memref arguments and "
                     "results are device pointers (mgpuMemAlloc), allocations "
                     "gpu.alloc, constants copied to the device, host reads "
                     "of single-element results staged with gpu.memcpy "
                     "(--mp-gpu-device-memory); off: host malloc memory that "
                     "kernels read through HMM/ATS"),
      llvm::cl::init(false)};
};

/// --mp-lower-gpu: mp ops to upstream, elementwise fusion, bufferize, matrix
/// products to cuBLASLt calls (--mp-contractions-to-runtime{runtime=cuda}),
/// one kernel per loop nest (--mp-gpu-map-parallel-loops), NVVM, and kernels
/// serialized into gpu.binary; host code calls the mgpu* runtime functions.
/// With deviceMemory, every buffer is device memory (--mp-gpu-device-memory,
/// then gpu-async-region after outlining).
/// Fails (through \p errorHandler) on an unknown chip or a bad block size.
LogicalResult
buildLowerGpuPipeline(OpPassManager &pm, const LowerGpuOptions &options,
                      function_ref<LogicalResult(const Twine &)> errorHandler);

/// Registers --mp-train-pipeline, --mp-lower-cpu and --mp-lower-gpu.
void registerMPPipelines();

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_PIPELINES_H
