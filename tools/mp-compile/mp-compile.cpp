//===- mp-compile.cpp - compile a model into a loadable artifact ----------===//
//
// mp-compile MODEL.mlir -o MODEL.mpa [--precision ...]: runs the session's
// pipelines (training step, loss scaling, optimizer, mixed precision, CPU
// lowering) and writes an artifact, a shared object with a metadata trailer,
// that `mp-run train MODEL.mpa`, mp_session_open and
// mp.runtime.Session.open run without MLIR (docs/artifacts.md).
//
//===----------------------------------------------------------------------===//

#include "mp/Session/Session.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;

// Every default is the session library's (TrainOptions), as in mp-run.
static const mp::TrainOptions trainDefaults;

// Only these show in --help (LLVM registers hundreds of its own).
static cl::OptionCategory mpCompileOptions("mp-compile options");

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::cat(mpCompileOptions),
                                      cl::desc("<model.mlir | model.onnx>"));
static cl::opt<std::string> outputPath("o", cl::Required,
                                       cl::cat(mpCompileOptions),
                                       cl::desc("Artifact to write (.mpa)"),
                                       cl::value_desc("file"));
static cl::opt<std::string>
    precision("precision", cl::cat(mpCompileOptions),
              cl::desc("f32 | f16 | bf16 | auto (what this CPU has)"),
              cl::init("f32"));
static cl::opt<std::string>
    lossScale("loss-scale", cl::cat(mpCompileOptions),
              cl::desc("dynamic | adaptive | static:N | none (default: "
                       "dynamic for f16, none for bf16 and f32)"),
              cl::init(""));
static cl::opt<double> scaleMargin(
    "scale-margin", cl::cat(mpCompileOptions),
    cl::desc("--loss-scale adaptive: keep the scaled gradients' amax this "
             "many times below f16's maximum"),
    cl::init(trainDefaults.scaleMargin));
static cl::opt<int64_t> scaleHysteresis(
    "scale-hysteresis", cl::cat(mpCompileOptions),
    cl::desc("--loss-scale adaptive: clean steps in a row that must ask for "
             "a lower scale before it falls"),
    cl::init(trainDefaults.scaleHysteresis));
static cl::opt<std::string> optimizer(
    "optimizer", cl::cat(mpCompileOptions), cl::desc("sgd | adam | adamw"),
    cl::init(
        mlir::mp::stringifyOptimizerAlgorithm(trainDefaults.optimizer).str()));
static cl::opt<double> lr("lr", cl::cat(mpCompileOptions),
                          cl::desc("Learning rate"),
                          cl::init(trainDefaults.lr));
static cl::opt<double> momentum("momentum", cl::cat(mpCompileOptions),
                                cl::desc("SGD momentum"),
                                cl::init(trainDefaults.momentum));
static cl::opt<double> weightDecay("weight-decay", cl::cat(mpCompileOptions),
                                   cl::desc("Weight decay"),
                                   cl::init(trainDefaults.weightDecay));
static cl::opt<int64_t>
    accumulate("accumulate", cl::cat(mpCompileOptions),
               cl::desc("Micro-batches per optimizer step (gradient "
                        "accumulation)"),
               cl::init(trainDefaults.accumulate));
static cl::opt<bool> qat("qat", cl::cat(mpCompileOptions),
                         cl::desc(mp::kQatHelp), cl::init(false));
static cl::opt<int64_t> qatFreezeAfter("qat-freeze-after",
                                       cl::cat(mpCompileOptions),
                                       cl::desc(mp::kQatFreezeAfterHelp),
                                       cl::init(trainDefaults.qatFreezeAfter));
static cl::opt<std::string> weightCopies(
    "weight-copies", cl::cat(mpCompileOptions), cl::desc(mp::kWeightCopiesHelp),
    cl::init(mp::stringifyWeightCopies(trainDefaults.weightCopies).str()));
static cl::list<std::string>
    keepF32("keep-f32", cl::cat(mpCompileOptions),
            cl::desc("Keep the op at this source location "
                     "(FILE:LINE:COL or LINE:COL) in f32"));
static cl::opt<uint64_t>
    seed("seed", cl::cat(mpCompileOptions),
         cl::desc("Default seed of the parameters' initialisation when the "
                  "artifact is opened"),
         cl::init(0));
static cl::opt<std::string>
    linker("linker", cl::cat(mpCompileOptions),
           cl::desc("C compiler driver that links the shared object "
                    "(found on PATH)"),
           cl::init(mp::Session::kDefaultLinker));
static cl::opt<int64_t>
    batchSize("batch-size", cl::cat(mpCompileOptions),
              cl::desc("An ONNX model's dynamic batch dimension becomes this"),
              cl::init(0));
static cl::opt<std::string> lossKind("loss", cl::cat(mpCompileOptions),
                                     cl::desc(mp::kLossKindHelp));
static cl::opt<bool> quiet("quiet", cl::cat(mpCompileOptions),
                           cl::desc("No progress lines"), cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(mpCompileOptions);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mp-compile: compile a model into an artifact mp-run and the C API "
      "load\n");
  mp::TrainOptions options;
  std::string error;
  if (!mp::parseTrainPrecision(precision, options, error) ||
      !mp::parseLossScale(lossScale, options.lossScale, error) ||
      !mp::parseOptimizer(optimizer, options.optimizer, error) ||
      !mp::parseLossKind(lossKind, options.addLoss, error) ||
      !mp::parseWeightCopies(weightCopies, options.weightCopies, error)) {
    llvm::errs() << "mp-compile: error: " << error << "\n";
    return 1;
  }
  if (qatFreezeAfter.getNumOccurrences() && !qat) {
    llvm::errs() << "mp-compile: error: --qat-freeze-after needs --qat\n";
    return 1;
  }
  options.qat = qat;
  options.qatFreezeAfter = qatFreezeAfter;
  options.lr = lr;
  options.momentum = momentum;
  options.weightDecay = weightDecay;
  options.accumulate = accumulate;
  options.scaleMargin = scaleMargin;
  options.scaleHysteresis = scaleHysteresis;
  options.keepF32.assign(keepF32.begin(), keepF32.end());
  options.seed = seed;
  options.modelBatch = batchSize;
  auto start = std::chrono::steady_clock::now();
  bool ok = mp::Session::writeArtifact(
      modelPath, options, outputPath, linker, error,
      [&](const std::string &line) {
        if (quiet)
          return;
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        llvm::outs() << llvm::format("mp-compile: [%5.1f s] ", seconds) << line
                     << "\n";
        llvm::outs().flush();
      });
  if (!ok) {
    llvm::errs() << "mp-compile: error: " << error << "\n";
    return 1;
  }
  return 0;
}
