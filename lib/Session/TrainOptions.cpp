//===- TrainOptions.cpp - the training options' table and text form ------===//
//
// TrainOptions.def declares each option once; this file turns the table
// into the options string ("name=value ..."), JSON metadata and the checks
// of option combinations that every front end shares.
//
//===----------------------------------------------------------------------===//

#include "OptionTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace mp {

namespace {

using namespace option_table;

// The custom rows of TrainOptions.def.
struct PrecisionCodec {
  static constexpr bool kFlag = false;
  static bool parse(TrainOptions &options, llvm::StringRef,
                    llvm::StringRef text, std::string &error) {
    return parseTrainPrecision(text, options, error);
  }
  static void reset(TrainOptions &options) {
    options.precision = TrainOptions().precision;
    options.automaticPrecision = false;
  }
  static std::string print(const TrainOptions &options) {
    return options.automaticPrecision
               ? "auto"
               : mlir::mp::stringifyFloatPrecision(options.precision).str();
  }
};

struct ProbesCodec {
  static constexpr bool kFlag = false;
  static constexpr std::pair<TrainOptions::Probes, llvm::StringLiteral>
      kNames[] = {{TrainOptions::Probes::None, "none"},
                  {TrainOptions::Probes::EveryOp, "every-op"},
                  {TrainOptions::Probes::ComputeOps, "compute-ops"}};
  static bool parse(TrainOptions &options, llvm::StringRef name,
                    llvm::StringRef text, std::string &error) {
    for (auto [probes, spelling] : kNames)
      if (text == spelling) {
        options.probes = probes;
        return true;
      }
    return badValue(name, text, "none, every-op or compute-ops", error);
  }
  static std::string print(const TrainOptions &options) {
    for (auto [probes, spelling] : kNames)
      if (options.probes == probes)
        return spelling.str();
    return "none";
  }
  static void reset(TrainOptions &options) {
    options.probes = TrainOptions::Probes::None;
  }
};

using CacheCodec = option_table::CacheCodec<TrainOptions>;
using CacheDirCodec = option_table::CacheDirCodec<TrainOptions>;

const TrainOptionSpec kTrainOptions[] = {
#define MP_TRAIN_OPTION(NAME, MEMBER, TYPE, DEFAULT, SCOPE, HELP)              \
  {NAME,                                                                       \
   HELP,                                                                       \
   OptionScope::SCOPE,                                                         \
   Codec<TYPE>::kFlag,                                                         \
   Codec<TYPE>::kList,                                                         \
   &MemberCodec<&TrainOptions::MEMBER>::parse,                                 \
   &MemberCodec<&TrainOptions::MEMBER>::print,                                 \
   &MemberCodec<&TrainOptions::MEMBER>::reset},
#define MP_TRAIN_OPTION_CUSTOM(NAME, CODEC, SCOPE, HELP)                       \
  {NAME,  HELP,          OptionScope::SCOPE, CODEC::kFlag,                     \
   false, &CODEC::parse, &CODEC::print,      &CODEC::reset},
#include "mp/Session/TrainOptions.def"
};

const Table<TrainOptions> kTable{kTrainOptions, "option"};

} // namespace

llvm::ArrayRef<TrainOptionSpec> trainOptionSpecs() { return kTrainOptions; }

const TrainOptionSpec *findTrainOption(llvm::StringRef name) {
  return kTable.find(name);
}

bool setTrainOption(TrainOptions &options, llvm::StringRef name,
                    llvm::StringRef value, std::string &error) {
  return kTable.set(options, name, value, error);
}

bool parseTrainOptions(llvm::StringRef text, TrainOptions &options,
                       std::string &error) {
  return kTable.parse(text, options, error);
}

std::string printTrainOptions(const TrainOptions &options,
                              std::optional<OptionScope> scope) {
  if (!scope)
    return kTable.print(options, {});
  return kTable.print(options, {*scope});
}

std::string printTrainOptionsInScopes(const TrainOptions &options,
                                      llvm::ArrayRef<OptionScope> scopes) {
  return kTable.print(options, scopes);
}

llvm::json::Object trainOptionsJson(const TrainOptions &options,
                                    OptionScope scope) {
  return kTable.json(options, scope);
}

bool readTrainOptionsJson(const llvm::json::Object &object,
                          TrainOptions &options, std::string &error) {
  return kTable.readJson(object, options, error);
}

std::string firstDifferentOption(const TrainOptions &a, const TrainOptions &b,
                                 llvm::ArrayRef<std::string> names) {
  for (const std::string &name : names)
    if (const TrainOptionSpec *spec = findTrainOption(name))
      if (spec->print(a) != spec->print(b))
        return name;
  return "";
}

/// The loss scale's options: a mode the precision takes, and the adaptive
/// mode's settings only with it, in range.
static bool verifyLossScaleOptions(const TrainOptions &options,
                                   std::string &error) {
  const TrainOptions defaults;
  if (!options.automaticPrecision) {
    LossScalingMode mode;
    if (!resolveLossScale(options.lossScale, options.precision, mode, error))
      return false;
  }
  if (options.lossScale.mode != LossScalingMode::Adaptive &&
      (options.scaleMargin != defaults.scaleMargin ||
       options.scaleHysteresis != defaults.scaleHysteresis)) {
    error = "--scale-margin and --scale-hysteresis are settings of "
            "--loss-scale adaptive";
    return false;
  }
  if (!(options.scaleMargin >= 1) ||
      !std::isfinite(static_cast<float>(options.scaleMargin)) ||
      options.scaleHysteresis < 1 || options.scaleHysteresis > INT32_MAX) {
    error = "adaptive loss scaling needs --scale-margin >= 1 (finite in f32) "
            "and --scale-hysteresis >= 1 (an i32)";
    return false;
  }
  return true;
}

bool verifyTrainOptions(const TrainOptions &options, std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  if (!verifyLossScaleOptions(options, error))
    return false;
  if (!(options.clipNorm >= 0))
    return fail("--clip-norm must be 0 (off) or a positive norm");
  if (options.accumulate < 1 || options.accumulate > INT32_MAX)
    return fail("--accumulate must be a positive number of micro-batches, "
                "got " +
                std::to_string(options.accumulate));
  if (options.qatFreezeAfter < 0)
    return fail("--qat-freeze-after " + std::to_string(options.qatFreezeAfter) +
                " is negative");
  if (options.qatFreezeAfter > 0 && !options.qat)
    return fail("--qat-freeze-after needs --qat");
  if (options.modelBatch < 0)
    return fail("--batch-size " + std::to_string(options.modelBatch) +
                " is negative");
  if (options.distributed && options.device == Device::Cuda)
    return fail("distributed training runs on the CPU (the GPU path, over "
                "NCCL or CUDA-aware MPI, is not built)");
  if (options.probes != TrainOptions::Probes::None &&
      options.device == Device::Cuda)
    return fail("--check-numerics and compare run on the CPU; drop --device "
                "cuda");
  if (options.ranks != 0 && !options.distributed)
    return fail("ranks is the MPI job's size, which distributed sets: give "
                "distributed instead");
  if (options.distributed && options.accumulate > 1)
    return fail("distributed training with --accumulate is not supported yet");
  return true;
}

} // namespace mp
