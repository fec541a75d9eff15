//===- InferOptions.cpp - the inference options' table and text form -----===//
//
// InferOptions.def declares each option once; this file turns the table
// into the options string, the compile cache's key and the checks of
// option combinations that every front end shares.
//
//===----------------------------------------------------------------------===//

#include "OptionTable.h"

namespace mp {

namespace {

using namespace option_table;

/// precision: the mode, the float precision and the quantization mode.
struct InferPrecisionCodec {
  static constexpr bool kFlag = false;
  static bool parse(InferOptions &options, llvm::StringRef,
                    llvm::StringRef text, std::string &error) {
    if (text == "calibrate") {
      reset(options);
      options.mode = InferOptions::Mode::Calibrate;
      return true;
    }
    return parseInferPrecision(text, options, error);
  }
  static void reset(InferOptions &options) {
    const InferOptions defaults;
    options.mode = defaults.mode;
    options.precision = defaults.precision;
    options.automaticPrecision = defaults.automaticPrecision;
    options.quantization = defaults.quantization;
  }
  static std::string print(const InferOptions &options) {
    switch (options.mode) {
    case InferOptions::Mode::Calibrate:
      return "calibrate";
    case InferOptions::Mode::Int8:
      return mlir::mp::stringifyQuantizationMode(options.quantization).str();
    case InferOptions::Mode::Float:
      break;
    }
    return options.automaticPrecision
               ? "auto"
               : mlir::mp::stringifyFloatPrecision(options.precision).str();
  }
};

/// quant-fallback: f32 or f16 (bf16 is refused).
struct QuantFallbackCodec {
  static constexpr bool kFlag = false;
  static bool parse(InferOptions &options, llvm::StringRef,
                    llvm::StringRef text, std::string &error) {
    return parseQuantFallback(text, options.fallback, error);
  }
  static void reset(InferOptions &options) {
    options.fallback = InferOptions().fallback;
  }
  static std::string print(const InferOptions &options) {
    return mlir::mp::stringifyFloatPrecision(options.fallback).str();
  }
};

const OptionSpec<InferOptions> kInferOptions[] = {
#define MP_INFER_OPTION(NAME, MEMBER, TYPE, DEFAULT, SCOPE, HELP)              \
  {NAME,                                                                       \
   HELP,                                                                       \
   OptionScope::SCOPE,                                                         \
   Codec<TYPE>::kFlag,                                                         \
   Codec<TYPE>::kList,                                                         \
   &MemberCodec<&InferOptions::MEMBER>::parse,                                 \
   &MemberCodec<&InferOptions::MEMBER>::print,                                 \
   &MemberCodec<&InferOptions::MEMBER>::reset},
#define MP_INFER_OPTION_CUSTOM(NAME, CODEC, SCOPE, HELP)                       \
  {NAME,  HELP,          OptionScope::SCOPE, CODEC::kFlag,                     \
   false, &CODEC::parse, &CODEC::print,      &CODEC::reset},
#include "mp/Session/InferOptions.def"
};

const Table<InferOptions> kTable{kInferOptions, "inference option"};

} // namespace

llvm::ArrayRef<OptionSpec<InferOptions>> inferOptionSpecs() {
  return kInferOptions;
}

const OptionSpec<InferOptions> *findInferOption(llvm::StringRef name) {
  return kTable.find(name);
}

bool parseInferOptions(llvm::StringRef text, InferOptions &options,
                       std::string &error) {
  return kTable.parse(text, options, error);
}

std::string printInferOptions(const InferOptions &options,
                              llvm::ArrayRef<OptionScope> scopes) {
  return kTable.print(options, scopes);
}

llvm::json::Object inferOptionsJson(const InferOptions &options,
                                    OptionScope scope) {
  return kTable.json(options, scope);
}

bool verifyInferOptions(const InferOptions &options, std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  const InferOptions defaults;
  bool int8 = options.mode == InferOptions::Mode::Int8;
  bool dynamic =
      int8 && options.quantization == mlir::mp::QuantizationMode::Int8Dynamic;
  // The int8 settings, by name, and whether each differs from its default.
  for (const OptionSpec<InferOptions> &spec : kInferOptions) {
    llvm::StringRef name = spec.name;
    bool int8Setting = name.starts_with("quant-") || name == "calibration" ||
                       name == "fallback-ops" || name == "probe-outputs";
    if (!int8 && int8Setting && spec.print(options) != spec.print(defaults))
      return fail("--" + name.str() +
                  " is a setting of --precision int8 or int8-dynamic");
  }
  if (options.fallback == FloatPrecision::BF16)
    return fail("bad --quant-fallback 'bf16': expected f32 or f16");
  if (dynamic && !options.calibrationPath.empty())
    return fail("--precision int8-dynamic takes no --calibration "
                "(activations are scaled at run time)");
  if (!(options.percentile > 0 && options.percentile <= 100))
    return fail("--quant-percentile must be in (0, 100], got " +
                Codec<double>::print(options.percentile));
  if (!(options.maxError >= 0))
    return fail("--quant-max-error must be a non-negative relative error");
  if (options.modelBatch < 0)
    return fail("--batch-size " + std::to_string(options.modelBatch) +
                " is negative");
  if (options.device == Device::Cuda &&
      (options.mode == InferOptions::Mode::Calibrate || options.probeOutputs))
    return fail("calibration probes run on the CPU; drop --device cuda");
  return true;
}

} // namespace mp
