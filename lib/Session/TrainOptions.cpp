//===- TrainOptions.cpp - the training options' table and text form ------===//
//
// TrainOptions.def declares each option once; this file turns the table
// into the options string ("name=value ..."), JSON metadata and the checks
// of option combinations that every front end shares.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/Options.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace mp {

namespace {

bool badValue(llvm::StringRef name, llvm::StringRef text,
              llvm::StringRef expected, std::string &error) {
  error = "bad --" + name.str() + " '" + text.str() + "': expected " +
          expected.str();
  return false;
}

/// How a value of one C++ type reads from and prints to text. kFlag: the
/// value may be left out (true).
template <typename T> struct Codec;

template <> struct Codec<double> {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text, double &value,
                    std::string &error) {
    std::string digits = text.str();
    char *end = nullptr;
    double parsed = std::strtod(digits.c_str(), &end);
    if (digits.empty() || *end != '\0' || !std::isfinite(parsed))
      return badValue(name, text, "a finite number", error);
    value = parsed;
    return true;
  }
  static std::string print(double value) {
    // The shortest text that reads back as the same double.
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return std::string(buffer, ec == std::errc() ? end : buffer);
  }
};

template <typename Integer> struct IntegerCodec {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text, Integer &value,
                    std::string &error) {
    Integer parsed;
    if (text.getAsInteger(10, parsed))
      return badValue(name, text,
                      std::is_signed_v<Integer> ? "an integer"
                                                : "a non-negative integer",
                      error);
    value = parsed;
    return true;
  }
  static std::string print(Integer value) { return std::to_string(value); }
};
template <> struct Codec<int64_t> : IntegerCodec<int64_t> {};
template <> struct Codec<uint64_t> : IntegerCodec<uint64_t> {};

template <> struct Codec<bool> {
  static constexpr bool kFlag = true, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text, bool &value,
                    std::string &error) {
    if (text.empty() || text == "true" || text == "1" || text == "on") {
      value = true;
      return true;
    }
    if (text == "false" || text == "0" || text == "off") {
      value = false;
      return true;
    }
    return badValue(name, text, "true or false", error);
  }
  static std::string print(bool value) { return value ? "true" : "false"; }
};

/// Unset is "auto"; the flag alone means true.
template <> struct Codec<std::optional<bool>> {
  static constexpr bool kFlag = true, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text,
                    std::optional<bool> &value, std::string &error) {
    if (text == "auto") {
      value.reset();
      return true;
    }
    bool parsed = false;
    if (!Codec<bool>::parse(name, text, parsed, error))
      return badValue(name, text, "true, false or auto", error);
    value = parsed;
    return true;
  }
  static std::string print(const std::optional<bool> &value) {
    return value ? Codec<bool>::print(*value) : "auto";
  }
};

/// Each value given appends its comma-separated elements.
template <> struct Codec<std::vector<std::string>> {
  static constexpr bool kFlag = false, kList = true;
  static bool parse(llvm::StringRef, llvm::StringRef text,
                    std::vector<std::string> &value, std::string &) {
    llvm::SmallVector<llvm::StringRef> elements;
    text.split(elements, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    for (llvm::StringRef element : elements)
      value.push_back(element.trim().str());
    return true;
  }
  static std::string print(const std::vector<std::string> &value) {
    return llvm::join(value, ",");
  }
};

/// An enum or a struct with parse and print functions of its own (they
/// name their flag in their messages).
template <typename T, auto Parse, auto Print> struct FunctionCodec {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef, llvm::StringRef text, T &value,
                    std::string &error) {
    return Parse(text, value, error);
  }
  static std::string print(const T &value) { return Print(value); }
};

std::string printOptimizer(OptimizerAlgorithm value) {
  return mlir::mp::stringifyOptimizerAlgorithm(value).str();
}
std::string printWeightCopies(WeightCopies value) {
  return stringifyWeightCopies(value).str();
}
std::string printDevice(Device value) { return stringifyDevice(value).str(); }
std::string printLossScale(const LossScaleOption &value) { return value.str(); }
std::string printLossKind(const std::optional<mlir::mp::LossKind> &value) {
  return value ? mlir::mp::stringifyLossKind(*value).str() : "";
}

template <>
struct Codec<OptimizerAlgorithm>
    : FunctionCodec<OptimizerAlgorithm, parseOptimizer, printOptimizer> {};
template <>
struct Codec<WeightCopies>
    : FunctionCodec<WeightCopies, parseWeightCopies, printWeightCopies> {};
template <>
struct Codec<Device> : FunctionCodec<Device, parseDevice, printDevice> {};
template <>
struct Codec<LossScaleOption>
    : FunctionCodec<LossScaleOption, parseLossScale, printLossScale> {};
template <>
struct Codec<std::optional<mlir::mp::LossKind>>
    : FunctionCodec<std::optional<mlir::mp::LossKind>, parseLossKind,
                    printLossKind> {};

/// A member of TrainOptions read and printed by its type's codec.
template <auto Member> struct MemberCodec {
  using Value = std::remove_reference_t<decltype(std::declval<TrainOptions &>().*
                                                 Member)>;
  static bool parse(TrainOptions &options, llvm::StringRef name,
                    llvm::StringRef text, std::string &error) {
    return Codec<Value>::parse(name, text, options.*Member, error);
  }
  static std::string print(const TrainOptions &options) {
    return Codec<Value>::print(options.*Member);
  }
  static void reset(TrainOptions &options) {
    options.*Member = TrainOptions().*Member;
  }
};

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

struct CacheCodec {
  static constexpr bool kFlag = true;
  static bool parse(TrainOptions &options, llvm::StringRef name,
                    llvm::StringRef text, std::string &error) {
    return Codec<bool>::parse(name, text, options.cache.enabled, error);
  }
  static std::string print(const TrainOptions &options) {
    return Codec<bool>::print(options.cache.enabled);
  }
  static void reset(TrainOptions &options) {
    options.cache.enabled = TrainOptions().cache.enabled;
  }
};

struct CacheDirCodec {
  static constexpr bool kFlag = false;
  static bool parse(TrainOptions &options, llvm::StringRef,
                    llvm::StringRef text, std::string &) {
    options.cache.dir = text.str();
    return true;
  }
  static std::string print(const TrainOptions &options) {
    return options.cache.dir;
  }
  static void reset(TrainOptions &options) { options.cache.dir.clear(); }
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
  {NAME,         HELP,          OptionScope::SCOPE, CODEC::kFlag, false,       \
   &CODEC::parse, &CODEC::print, &CODEC::reset},
#include "mp/Session/TrainOptions.def"
};

/// "a=1 b=2": a value runs to the next space, or is quoted.
struct Assignment {
  llvm::StringRef name, value;
  bool hasValue = false;
};

bool nextAssignment(llvm::StringRef &text, Assignment &out,
                    std::string &error) {
  text = text.ltrim();
  size_t nameEnd = text.find_first_of("= \t\n");
  out.name = text.take_front(nameEnd);
  text = text.drop_front(out.name.size());
  out.hasValue = text.consume_front("=");
  out.value = {};
  if (!out.hasValue)
    return true;
  if (!text.empty() && (text.front() == '"' || text.front() == '\'')) {
    char quote = text.front();
    size_t close = text.find(quote, 1);
    if (close == llvm::StringRef::npos) {
      error = "options: unterminated " + std::string(1, quote) +
              " after '" + out.name.str() + "='";
      return false;
    }
    out.value = text.slice(1, close);
    text = text.drop_front(close + 1);
    return true;
  }
  out.value = text.take_until([](char c) { return llvm::isSpace(c); });
  text = text.drop_front(out.value.size());
  return true;
}

std::string quoted(const std::string &value) {
  if (!value.empty() &&
      value.find_first_of(" \t\n\"'") == std::string::npos)
    return value;
  char quote = value.find('"') == std::string::npos ? '"' : '\'';
  return quote + value + quote;
}

std::string optionNames() {
  std::vector<std::string> names;
  for (const TrainOptionSpec &spec : kTrainOptions)
    names.push_back(spec.name.str());
  return llvm::join(names, ", ");
}

} // namespace

llvm::ArrayRef<TrainOptionSpec> trainOptionSpecs() { return kTrainOptions; }

const TrainOptionSpec *findTrainOption(llvm::StringRef name) {
  for (const TrainOptionSpec &spec : kTrainOptions)
    if (spec.name == name)
      return &spec;
  return nullptr;
}

bool setTrainOption(TrainOptions &options, llvm::StringRef name,
                    llvm::StringRef value, std::string &error) {
  const TrainOptionSpec *spec = findTrainOption(name);
  if (!spec) {
    error = "unknown option '" + name.str() + "' (options: " + optionNames() +
            ")";
    return false;
  }
  return spec->parse(options, name, value, error);
}

bool parseTrainOptions(llvm::StringRef text, TrainOptions &options,
                       std::string &error) {
  Assignment assignment;
  llvm::StringSet<> seen;
  while (!text.trim().empty()) {
    if (!nextAssignment(text, assignment, error))
      return false;
    const TrainOptionSpec *spec = findTrainOption(assignment.name);
    if (spec && !assignment.hasValue && !spec->flag) {
      error = "option '" + assignment.name.str() + "' needs a value (" +
              assignment.name.str() + "=...)";
      return false;
    }
    // A list the string names is the string's: its first mention replaces
    // what the options held, later ones add to it.
    if (spec && spec->list && seen.insert(assignment.name).second)
      spec->reset(options);
    if (!setTrainOption(options, assignment.name, assignment.value, error))
      return false;
  }
  return true;
}

std::string printTrainOptions(const TrainOptions &options,
                              std::optional<OptionScope> scope) {
  std::vector<std::string> parts;
  for (const TrainOptionSpec &spec : kTrainOptions)
    if (!scope || spec.scope == *scope)
      parts.push_back(spec.name.str() + "=" + quoted(spec.print(options)));
  return llvm::join(parts, " ");
}

std::string printTrainOptionsInScopes(const TrainOptions &options,
                                      llvm::ArrayRef<OptionScope> scopes) {
  std::vector<std::string> parts;
  for (const TrainOptionSpec &spec : kTrainOptions)
    if (llvm::is_contained(scopes, spec.scope))
      parts.push_back(spec.name.str() + "=" + quoted(spec.print(options)));
  return llvm::join(parts, " ");
}

llvm::json::Object trainOptionsJson(const TrainOptions &options,
                                    OptionScope scope) {
  llvm::json::Object object;
  for (const TrainOptionSpec &spec : kTrainOptions)
    if (spec.scope == scope)
      object[spec.name] = spec.print(options);
  return object;
}

bool readTrainOptionsJson(const llvm::json::Object &object,
                          TrainOptions &options, std::string &error) {
  for (const auto &[name, value] : object) {
    std::optional<llvm::StringRef> text = value.getAsString();
    if (!text) {
      error = "option '" + name.str() + "' is not a string";
      return false;
    }
    if (const TrainOptionSpec *spec = findTrainOption(name))
      spec->reset(options);
    if (!setTrainOption(options, name, *text, error))
      return false;
  }
  return true;
}

std::string firstDifferentOption(const TrainOptions &a, const TrainOptions &b,
                                 llvm::ArrayRef<std::string> names) {
  for (const std::string &name : names)
    if (const TrainOptionSpec *spec = findTrainOption(name))
      if (spec->print(a) != spec->print(b))
        return name;
  return "";
}

bool verifyTrainOptions(const TrainOptions &options, std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  const TrainOptions defaults;
  if (!options.automaticPrecision) {
    LossScalingMode mode;
    if (!resolveLossScale(options.lossScale, options.precision, mode, error))
      return false;
  }
  if (options.lossScale.mode != LossScalingMode::Adaptive &&
      (options.scaleMargin != defaults.scaleMargin ||
       options.scaleHysteresis != defaults.scaleHysteresis))
    return fail("--scale-margin and --scale-hysteresis are settings of "
                "--loss-scale adaptive");
  if (!(options.scaleMargin >= 1) ||
      !std::isfinite(static_cast<float>(options.scaleMargin)) ||
      options.scaleHysteresis < 1 || options.scaleHysteresis > INT32_MAX)
    return fail("adaptive loss scaling needs --scale-margin >= 1 (finite in "
                "f32) and --scale-hysteresis >= 1 (an i32)");
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
