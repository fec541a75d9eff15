//===- mp-run.cpp - train a model in mixed precision ----------------------===//
//
// mp-run COMMAND MODEL [options]: the command line, parsed once, and the
// dispatch to one function per command (docs/mp-run.md):
//
//   train    compile the model's training step (or load an artifact's) and
//            train on a data set, with checkpoints, the stability monitor
//            and the numerics checker (Train.cpp)
//   infer    held-out accuracy of a checkpoint through mp.predict; INT8
//            calibration and inference (Infer.cpp)
//   compare  the ops of mp.predict by how far their mixed-precision output
//            is from FP32's (Compare.cpp)
//   info     what the machine offers and what --precision auto picks
//            (Info.cpp)
//
// Every command's flags are known to every command, so flags go anywhere
// on the line, and a flag of another command is ignored or refused with a
// message that says whose it is (refuseTrainFlags); `mp-run COMMAND --help`
// lists the command's own and the common ones (Flags.cpp). The training
// options' flags are the library's (TrainOptions.def, mp::TrainOptionFlags),
// shared with mp-compile.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/InitLLVM.h"

using namespace mprun;

// The command comes first, then the model: positional arguments are taken
// in the order they were registered, this file's.
static cl::opt<std::string> commandName(cl::Positional, cl::Required,
                                        cl::desc("<train|infer|compare|info>"));
cl::opt<std::string>
    mprun::modelPath(cl::Positional, cl::Optional,
                     cl::desc("<model.mlir | artifact.mpa (from mp-compile)>"));

namespace {

struct Command {
  llvm::StringRef name;
  /// Its own flags' category (none: it takes no flags).
  cl::OptionCategory *options;
  int (*run)(const char *argv0);
  const char *overview;
};

const Command commands[] = {
    {"train", &trainOptions, runTrain,
     "mp-run train MODEL [options]: train a model (.mlir, .onnx) or an "
     "artifact (.mpa, from mp-compile) in mixed precision\n"},
    {"infer", &inferOptions, runInfer,
     "mp-run infer MODEL --checkpoint FILE [options]: held-out accuracy "
     "through mp.predict; INT8 calibration (--calibrate) and inference "
     "(--precision int8)\n"},
    {"compare", &compareOptions, runCompare,
     "mp-run compare MODEL --precision f16|bf16 [options]: the ops of "
     "mp.predict by how far their output is from FP32's\n"},
    {"info", nullptr, runInfo,
     "mp-run info: what the machine offers and what --precision auto "
     "picks\n"},
};

const Command *findCommand(llvm::StringRef name) {
  const Command *found = llvm::find_if(
      commands, [&](const Command &command) { return command.name == name; });
  return found == std::end(commands) ? nullptr : found;
}

/// --help shows mp-run's flags only (LLVM registers hundreds of its own):
/// after `mp-run COMMAND`, that command's and the common ones.
const char *showFlagsOf(const Command *command) {
  // The training options only train takes are listed with train's flags.
  for (const char *name : trainOnlyOptions)
    if (cl::Option *option = cl::getRegisteredOptions().lookup(name))
      option->Categories.assign({&trainOptions});
  std::vector<const cl::OptionCategory *> shown = {
      &commonOptions, &trainOptions, &inferOptions, &compareOptions};
  const char *overview = "mp-run: train models in mixed precision\n";
  if (command) {
    shown.clear();
    if (command->options)
      shown = {&commonOptions, command->options};
    else
      modelPath.setDescription(""); // info takes no model
    commandName.setDescription(command->name);
    overview = command->overview;
  }
  cl::HideUnrelatedOptions(shown);
  // A flag of two commands is listed under the one shown only.
  auto isShown = [&](cl::OptionCategory *category) {
    return llvm::is_contained(shown, category);
  };
  for (auto &entry : cl::getRegisteredOptions())
    if (llvm::any_of(entry.second->Categories, isShown))
      llvm::erase_if(entry.second->Categories,
                     [&](cl::OptionCategory *c) { return !isShown(c); });
  return overview;
}

int runCommandLine(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The training options' flags (TrainOptions.def); --precision (infer
  // takes int8 too) and --no-cache are mp-run's own.
  mp::TrainOptionFlags flags(commonOptions, {"precision", "cache"});
  trainFlags = &flags;
  // The inference options' (InferOptions.def) that the training options do
  // not have: --calibration, --quant-method, ... (--precision, --device,
  // --batch-size and the lowering's reach infer through the ones above).
  std::vector<llvm::StringRef> shared;
  for (const mp::OptionSpec<mp::InferOptions> &spec : mp::inferOptionSpecs())
    if (mp::findTrainOption(spec.name))
      shared.push_back(spec.name);
  mp::InferOptionFlags infer(inferOptions, shared);
  inferFlags = &infer;
  claimStatsFlag();
  const char *overview = showFlagsOf(argc > 1 ? findCommand(argv[1]) : nullptr);
  cl::ParseCommandLineOptions(argc, argv, overview);
  const Command *command = findCommand(commandName);
  if (!command)
    return fail("unknown command '" + commandName +
                "': expected 'train', 'infer', 'compare' or 'info'");
  if (command->options && modelPath.empty())
    return fail(commandName +
                " needs a model (.mlir, .onnx) or an artifact (.mpa)");
  return command->run(argv[0]);
}

} // namespace

/// mp-run's whole command line. The tool's main only calls this, so the
/// device bundle's one shared library (scripts/gpu_bundle.sh) holds mp-run
/// and the launcher stays a few bytes.
extern "C" int mp_run_main(int argc, char **argv) {
  int status = runCommandLine(argc, argv);
  // A data-parallel rank that fails ends the job: the others would wait
  // for it in the next all-reduce.
  if (status != 0)
    mprt_dist_abort(status);
  return status;
}
