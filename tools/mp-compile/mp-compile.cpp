//===- mp-compile.cpp - compile a model into a loadable artifact ----------===//
//
// mp-compile MODEL.mlir -o MODEL.mpa [--precision ...]: runs the session's
// pipelines (training step, loss scaling, optimizer, mixed precision, CPU
// lowering) and writes an artifact, a shared object with a metadata trailer,
// that `mp-run train MODEL.mpa`, mp_session_open and
// mp.runtime.Session.open run without MLIR (docs/artifacts.md).
//
//===----------------------------------------------------------------------===//

#include "mp/Session/Environment.h"
#include "mp/Session/OptionFlags.h"
#include "mp/Session/Session.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;

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
    linker("linker", cl::cat(mpCompileOptions),
           cl::desc("C compiler driver that links the shared object "
                    "(found on PATH)"),
           cl::init(mp::Session::kDefaultLinker));
static cl::opt<bool> quiet("quiet", cl::cat(mpCompileOptions),
                           cl::desc("No progress lines"), cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The training options' flags (TrainOptions.def), but those of a run on
  // a GPU, over MPI or through the compile cache: an artifact is CPU code
  // for one process, written where -o says.
  mp::TrainOptionFlags trainFlags(
      mpCompileOptions,
      {"device", "tf32", "distributed", "cache", "cache-dir"});
  cl::HideUnrelatedOptions(mpCompileOptions);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mp-compile: compile a model into an artifact mp-run and the C API "
      "load\n");
  mp::TrainOptions options;
  std::string error;
  // The environment's switches (Environment.h), then the flags.
  if (!mp::readOptionEnvironment(options, error) ||
      !trainFlags.apply(options, error)) {
    llvm::errs() << "mp-compile: error: " << error << "\n";
    return 1;
  }
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
