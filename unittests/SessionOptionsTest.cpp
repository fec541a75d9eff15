//===- SessionOptionsTest.cpp - the session's options from and to text ---===//

#include "mp/Session/InferSession.h"
#include "mp/Session/Options.h"

#include <gtest/gtest.h>

using namespace mp;

namespace {

TEST(SessionOptions, LossScaleTextReadsBack) {
  for (const char *text : {"", "none", "dynamic", "adaptive", "static:1024",
                           "static:0.5", "static:3.0000000000000004"}) {
    LossScaleOption option;
    std::string error;
    ASSERT_TRUE(parseLossScale(text, option, error)) << text << ": " << error;
    LossScaleOption again;
    ASSERT_TRUE(parseLossScale(option.str(), again, error)) << option.str();
    EXPECT_TRUE(again == option) << text << " -> " << option.str();
  }
  LossScaleOption option;
  std::string error;
  ASSERT_TRUE(parseLossScale("static:1024.0", option, error));
  EXPECT_EQ(option.str(), "static:1024");
  EXPECT_EQ(option.initial, 1024.0);
}

TEST(SessionOptions, BadLossScaleIsRefusedWithTheValues) {
  for (const char *text : {"static", "static:", "static:0", "static:-1",
                           "static:inf", "static:1x", "dynamc", "DYNAMIC"}) {
    LossScaleOption option;
    std::string error;
    EXPECT_FALSE(parseLossScale(text, option, error)) << text;
    EXPECT_EQ(error.rfind(std::string("bad --loss-scale '") + text + "'", 0),
              0u)
        << error;
    EXPECT_NE(error.find("dynamic"), std::string::npos) << error;
    EXPECT_NE(error.find("static:N with N > 0"), std::string::npos) << error;
  }
}

TEST(SessionOptions, AutoLossScaleFollowsThePrecision) {
  LossScaleOption automatic;
  LossScalingMode mode;
  std::string error;
  ASSERT_TRUE(resolveLossScale(automatic, FloatPrecision::F16, mode, error));
  EXPECT_EQ(mode, LossScalingMode::Dynamic);
  ASSERT_TRUE(resolveLossScale(automatic, FloatPrecision::BF16, mode, error));
  EXPECT_EQ(mode, LossScalingMode::None);
  ASSERT_TRUE(resolveLossScale(automatic, FloatPrecision::F32, mode, error));
  EXPECT_EQ(mode, LossScalingMode::None);
  LossScaleOption dynamic{LossScalingMode::Dynamic};
  EXPECT_FALSE(resolveLossScale(dynamic, FloatPrecision::F32, mode, error));
  EXPECT_NE(error.find("f32 does not underflow"), std::string::npos);
  ASSERT_TRUE(resolveLossScale(dynamic, FloatPrecision::BF16, mode, error));
  EXPECT_EQ(mode, LossScalingMode::Dynamic);
}

TEST(SessionOptions, EnumsParseTheirSpellings) {
  std::string error;
  FloatPrecision precision;
  ASSERT_TRUE(parsePrecision("bf16", precision, error));
  EXPECT_EQ(precision, FloatPrecision::BF16);
  EXPECT_FALSE(parsePrecision("f8", precision, error));
  EXPECT_EQ(error, "bad --precision 'f8': expected f32, f16 or bf16");

  OptimizerAlgorithm algorithm;
  ASSERT_TRUE(parseOptimizer("adamw", algorithm, error));
  EXPECT_EQ(algorithm, OptimizerAlgorithm::AdamW);
  EXPECT_FALSE(parseOptimizer("lamb", algorithm, error));
  EXPECT_EQ(error, "bad --optimizer 'lamb': expected sgd, adam or adamw");

  Device device;
  ASSERT_TRUE(parseDevice("cuda", device, error));
  EXPECT_EQ(device, Device::Cuda);
  EXPECT_EQ(stringifyDevice(device), "cuda");
  EXPECT_FALSE(parseDevice("tpu", device, error));
  EXPECT_EQ(error, "bad --device 'tpu': expected cpu or cuda");

  QuantizationMethod method;
  ASSERT_TRUE(parseQuantMethod("entropy", method, error));
  EXPECT_EQ(method, QuantizationMethod::Entropy);
  EXPECT_FALSE(parseQuantMethod("kl", method, error));

  FloatPrecision fallback;
  ASSERT_TRUE(parseQuantFallback("f16", fallback, error));
  EXPECT_EQ(fallback, FloatPrecision::F16);
  EXPECT_FALSE(parseQuantFallback("bf16", fallback, error));
  EXPECT_EQ(error, "bad --quant-fallback 'bf16': expected f32 or f16");
}

TEST(SessionOptions, InferPrecisionTakesInt8AndAuto) {
  std::string error;
  InferOptions options;
  ASSERT_TRUE(parseInferPrecision("int8", options, error));
  EXPECT_EQ(options.mode, InferOptions::Mode::Int8);
  ASSERT_TRUE(parseInferPrecision("f16", options, error));
  EXPECT_EQ(options.mode, InferOptions::Mode::Float);
  EXPECT_EQ(options.precision, FloatPrecision::F16);
  EXPECT_FALSE(options.automaticPrecision);
  ASSERT_TRUE(parseInferPrecision("auto", options, error));
  EXPECT_EQ(options.mode, InferOptions::Mode::Float);
  EXPECT_TRUE(options.automaticPrecision);
  ASSERT_TRUE(parseInferPrecision("bf16", options, error));
  EXPECT_FALSE(options.automaticPrecision);
  EXPECT_FALSE(parseInferPrecision("int4", options, error));
  EXPECT_EQ(error,
            "bad --precision 'int4': expected f32, f16, bf16, auto, int8 or "
            "int8-dynamic");
  ASSERT_TRUE(parseInferPrecision("int8-dynamic", options, error));
  EXPECT_EQ(options.mode, InferOptions::Mode::Int8);
  EXPECT_EQ(options.quantization, mlir::mp::QuantizationMode::Int8Dynamic);
}

TEST(SessionOptions, LossKindTakesBothSpellingsAndNone) {
  std::string error;
  std::optional<mlir::mp::LossKind> kind = mlir::mp::LossKind::MeanSquaredError;
  ASSERT_TRUE(parseLossKind("", kind, error));
  EXPECT_FALSE(kind.has_value());
  ASSERT_TRUE(parseLossKind("cross_entropy", kind, error));
  EXPECT_EQ(kind, mlir::mp::LossKind::CrossEntropy);
  ASSERT_TRUE(parseLossKind("mse", kind, error));
  EXPECT_EQ(kind, mlir::mp::LossKind::MeanSquaredError);
  EXPECT_FALSE(parseLossKind("hinge", kind, error));
  EXPECT_EQ(error, "bad --loss 'hinge': expected cross-entropy or mse");
}

} // namespace
