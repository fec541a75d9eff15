//===- Options.cpp - the session's options from and to text -------------===//

#include "mp/Session/Options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace mp {

namespace {

/// "a, b or c" from an ODS enum's spellings, so that a value added in ODS is
/// listed without editing the message.
template <typename Enum, typename Stringify>
std::string spellings(uint32_t maxValue, Stringify stringify,
                      llvm::function_ref<bool(Enum)> keep,
                      llvm::StringRef last = "") {
  std::vector<std::string> names;
  for (uint32_t i = 0; i <= maxValue; ++i)
    if (keep(static_cast<Enum>(i)))
      names.push_back(stringify(static_cast<Enum>(i)).str());
  if (!last.empty())
    names.push_back(last.str());
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

bool refuse(llvm::StringRef flag, llvm::StringRef text,
            const std::string &expected, std::string &error) {
  error = "bad " + flag.str() + " '" + text.str() + "': expected " + expected;
  return false;
}

} // namespace

std::string LossScaleOption::str() const {
  switch (mode) {
  case LossScalingMode::Auto:
    return "";
  case LossScalingMode::Static: {
    // The shortest text that reads back as the same double.
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), initial);
    return "static:" + std::string(buffer, ec == std::errc() ? end : buffer);
  }
  default:
    return mlir::mp::stringifyLossScalingMode(mode).str();
  }
}

bool resolveLossScale(const LossScaleOption &option, FloatPrecision precision,
                      LossScalingMode &mode, std::string &error) {
  if (option.mode == LossScalingMode::Auto) {
    // f16 needs scaling; bf16 has FP32's range.
    mode = precision == FloatPrecision::F16 ? LossScalingMode::Dynamic
                                            : LossScalingMode::None;
    return true;
  }
  if (precision == FloatPrecision::F32 &&
      option.mode != LossScalingMode::None) {
    error = "--loss-scale needs --precision f16 or bf16 (f32 does not "
            "underflow)";
    return false;
  }
  mode = option.mode;
  return true;
}

bool parsePrecision(llvm::StringRef text, FloatPrecision &precision,
                    std::string &error) {
  if (std::optional<FloatPrecision> value =
          mlir::mp::symbolizeFloatPrecision(text)) {
    precision = *value;
    return true;
  }
  return refuse(
      "--precision", text,
      spellings<FloatPrecision>(mlir::mp::getMaxEnumValForFloatPrecision(),
                                mlir::mp::stringifyFloatPrecision,
                                [](FloatPrecision) { return true; }),
      error);
}

bool parseLossScale(llvm::StringRef text, LossScaleOption &option,
                    std::string &error) {
  option = LossScaleOption();
  if (text.empty())
    return true;
  llvm::StringRef number = text;
  if (number.consume_front("static:")) {
    std::string digits = number.str();
    char *end = nullptr;
    double value = std::strtod(digits.c_str(), &end);
    if (!digits.empty() && end && *end == '\0' && value > 0 &&
        std::isfinite(value)) {
      option.mode = LossScalingMode::Static;
      option.initial = value;
      return true;
    }
  } else if (std::optional<LossScalingMode> mode =
                 mlir::mp::symbolizeLossScalingMode(text);
             mode && *mode != LossScalingMode::Static) {
    option.mode = *mode;
    return true;
  }
  return refuse(
      "--loss-scale", text,
      spellings<LossScalingMode>(
          mlir::mp::getMaxEnumValForLossScalingMode(),
          mlir::mp::stringifyLossScalingMode,
          [](LossScalingMode m) { return m != LossScalingMode::Static; },
          "static:N with N > 0"),
      error);
}

bool parseOptimizer(llvm::StringRef text, OptimizerAlgorithm &algorithm,
                    std::string &error) {
  if (std::optional<OptimizerAlgorithm> value =
          mlir::mp::symbolizeOptimizerAlgorithm(text)) {
    algorithm = *value;
    return true;
  }
  return refuse("--optimizer", text,
                spellings<OptimizerAlgorithm>(
                    mlir::mp::getMaxEnumValForOptimizerAlgorithm(),
                    mlir::mp::stringifyOptimizerAlgorithm,
                    [](OptimizerAlgorithm) { return true; }),
                error);
}

bool parseLossKind(llvm::StringRef text,
                   std::optional<mlir::mp::LossKind> &kind,
                   std::string &error) {
  kind.reset();
  if (text.empty())
    return true;
  std::string spelled = text.str();
  std::replace(spelled.begin(), spelled.end(), '_', '-');
  if ((kind = mlir::mp::symbolizeLossKind(spelled)))
    return true;
  return refuse(
      "--loss", text,
      spellings<mlir::mp::LossKind>(mlir::mp::getMaxEnumValForLossKind(),
                                    mlir::mp::stringifyLossKind,
                                    [](mlir::mp::LossKind) { return true; }),
      error);
}

bool parseDevice(llvm::StringRef text, Device &device, std::string &error) {
  if (text == "cpu" || text == "cuda") {
    device = text == "cpu" ? Device::Cpu : Device::Cuda;
    return true;
  }
  return refuse("--device", text, "cpu or cuda", error);
}

llvm::StringRef stringifyDevice(Device device) {
  return device == Device::Cpu ? "cpu" : "cuda";
}

bool parseWeightCopies(llvm::StringRef text, WeightCopies &copies,
                       std::string &error) {
  if (text == "keep" || text == "convert") {
    copies = text == "keep" ? WeightCopies::Keep : WeightCopies::Convert;
    return true;
  }
  return refuse("--weight-copies", text, "keep or convert", error);
}

llvm::StringRef stringifyWeightCopies(WeightCopies copies) {
  return copies == WeightCopies::Keep ? "keep" : "convert";
}

bool parseQuantMethod(llvm::StringRef text, QuantizationMethod &method,
                      std::string &error) {
  if (std::optional<QuantizationMethod> value =
          mlir::mp::symbolizeQuantizationMethod(text)) {
    method = *value;
    return true;
  }
  return refuse("--quant-method", text,
                spellings<QuantizationMethod>(
                    mlir::mp::getMaxEnumValForQuantizationMethod(),
                    mlir::mp::stringifyQuantizationMethod,
                    [](QuantizationMethod) { return true; }),
                error);
}

bool parseQuantFallback(llvm::StringRef text, FloatPrecision &precision,
                        std::string &error) {
  std::optional<FloatPrecision> value = mlir::mp::symbolizeFloatPrecision(text);
  if (value && *value != FloatPrecision::BF16) {
    precision = *value;
    return true;
  }
  return refuse("--quant-fallback", text, "f32 or f16", error);
}

bool parseTrainPrecision(llvm::StringRef text, TrainOptions &options,
                         std::string &error) {
  options.automaticPrecision = text == "auto";
  std::string ignored;
  if (options.automaticPrecision ||
      parsePrecision(text, options.precision, ignored))
    return true;
  return refuse("--precision", text, "f32, f16, bf16 or auto", error);
}

bool parseInferPrecision(llvm::StringRef text, InferOptions &options,
                         std::string &error) {
  if (std::optional<mlir::mp::QuantizationMode> quantization =
          mlir::mp::symbolizeQuantizationMode(text)) {
    options.mode = InferOptions::Mode::Int8;
    options.quantization = *quantization;
    return true;
  }
  std::string ignored;
  if (text == "auto") {
    options.mode = InferOptions::Mode::Float;
    options.automaticPrecision = true;
    return true;
  }
  if (parsePrecision(text, options.precision, ignored)) {
    options.mode = InferOptions::Mode::Float;
    options.automaticPrecision = false;
    return true;
  }
  return refuse("--precision", text,
                "f32, f16, bf16, auto, int8 or int8-dynamic", error);
}

} // namespace mp
