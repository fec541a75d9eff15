//===- Pipelines.h - named mp pipelines -------------------------*- C++ -*-===//
//
// One option set for a chain of mp passes, for tools and framework stacks.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_PIPELINES_H
#define MP_TRANSFORMS_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace mp {

struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  Option<std::string> dtype{*this, "dtype",
                            llvm::cl::desc("Low-precision type: f16 or bf16"),
                            llvm::cl::init("f16")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("dynamic | static | none (default: dynamic for f16, "
                     "none for bf16)"),
      llvm::cl::init("")};
  Option<double> initScale{*this, "init-scale",
                           llvm::cl::desc("Initial loss scale"),
                           llvm::cl::init(65536.0)};
  Option<int64_t> growthInterval{
      *this, "growth-interval",
      llvm::cl::desc("Clean steps before the scale grows"),
      llvm::cl::init(2000)};
  Option<double> clipNorm{*this, "clip-norm",
                          llvm::cl::desc("Global gradient-norm clip (0: off)"),
                          llvm::cl::init(0.0)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd | adam | adamw"),
                                llvm::cl::init("sgd")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.9)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(0.0)};
};

/// --mp-autodiff, --mp-loss-scaling, --mp-optimizer, --auto-mixed-precision.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &options);

struct LowerCpuOptions : public PassPipelineOptions<LowerCpuOptions> {
  Option<bool> runtimeContractions{
      *this, "runtime-contractions",
      llvm::cl::desc("Call libmprt's mprt_gemm (oneDNN) for matrix "
                     "products; the program must then be linked or "
                     "JIT-resolved with libmprt"),
      llvm::cl::init(false)};
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Vectorize innermost loops (16 lanes) with the affine "
                     "super-vectorizer"),
      llvm::cl::init(true)};
  Option<bool> probes{
      *this, "probes",
      llvm::cl::desc("Lower mp.observe probes to mprt_observe calls "
                     "(--mp-probes-to-runtime; link or JIT-resolve libmprt); "
                     "off: probes are dropped"),
      llvm::cl::init(true)};
};

/// --mp-lower-cpu: mp ops to upstream, bufferize, vectorized loops, LLVM
/// dialect; the result runs under MLIR's ExecutionEngine (mp-run) or
/// mlir-runner.
LogicalResult buildLowerCpuPipeline(OpPassManager &pm,
                                    const LowerCpuOptions &options);

/// Registers --mp-train-pipeline and --mp-lower-cpu.
void registerMPPipelines();

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_PIPELINES_H
