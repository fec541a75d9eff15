//===- TrainOptionsTest.cpp - the declared training options --------------===//
//
// TrainOptions.def is the one declaration of each training option: these
// tests check that every row reads back what it prints, that the options
// string and JSON metadata carry every option, that bad text and bad
// combinations are refused with the flag's name, and that docs/options.md
// documents every row.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/OptionFlags.h"
#include "mp/Session/Options.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace mp;

namespace {

/// Options with every row away from its default.
TrainOptions changedOptions() {
  TrainOptions o;
  std::string error;
  EXPECT_TRUE(parseTrainOptions(
      "precision=bf16 loss-scale=adaptive scale-margin=16 "
      "scale-hysteresis=4 optimizer=adamw lr=0.001 momentum=0.5 "
      "weight-decay=0.01 clip-norm=1.5 accumulate=3 qat qat-freeze-after=7 "
      "dropout-seed=12345 weight-copies=convert in-place-updates=false "
      "keep-f32=a.mlir:1:2,b.mlir:3:4 loss=mse ignore-index=0 "
      "batch-size=32 seed=18446744073709551615 device=cuda tf32=false "
      "distributed cache=false cache-dir='/tmp/a dir' ranks=4 "
      "probes=compute-ops parallel-loops=false approximate-math=false "
      "native-bf16=false dump-ir=/tmp/step.mlir",
      o, error))
      << error;
  return o;
}

TEST(TrainOptions, EveryRowReadsBackWhatItPrints) {
  const TrainOptions defaults, changed = changedOptions();
  for (const TrainOptionSpec &spec : trainOptionSpecs())
    for (const TrainOptions *options : {&defaults, &changed}) {
      TrainOptions read;
      std::string error;
      ASSERT_TRUE(spec.parse(read, spec.name, spec.print(*options), error))
          << spec.name.str() << ": " << error;
      EXPECT_EQ(spec.print(read), spec.print(*options)) << spec.name.str();
    }
  // The test string changes every row: a new row must be added to it.
  for (const TrainOptionSpec &spec : trainOptionSpecs())
    EXPECT_NE(spec.print(defaults), spec.print(changed))
        << spec.name.str() << " is not changed by changedOptions()";
}

TEST(TrainOptions, OptionsStringAndJsonCarryEveryOption) {
  const TrainOptions changed = changedOptions();
  std::string text = printTrainOptions(changed), error;
  TrainOptions read;
  ASSERT_TRUE(parseTrainOptions(text, read, error)) << error;
  EXPECT_EQ(printTrainOptions(read), text);
  EXPECT_NE(text.find("cache-dir=\"/tmp/a dir\""), std::string::npos) << text;
  EXPECT_EQ(read.keepF32,
            (std::vector<std::string>{"a.mlir:1:2", "b.mlir:3:4"}));
  EXPECT_EQ(read.seed, UINT64_MAX);

  // Metadata: the step's options only, read back over the defaults.
  llvm::json::Object json = trainOptionsJson(changed, OptionScope::Step);
  EXPECT_TRUE(json.getString("qat-freeze-after"));
  EXPECT_FALSE(json.getString("seed")) << "seed is not a step option";
  TrainOptions fromJson;
  fromJson.keepF32 = {"replaced"};
  ASSERT_TRUE(readTrainOptionsJson(json, fromJson, error)) << error;
  EXPECT_EQ(printTrainOptions(fromJson, OptionScope::Step),
            printTrainOptions(changed, OptionScope::Step));
}

TEST(TrainOptions, ListsAppendWithinOneStringAndReplaceWhatWasThere) {
  TrainOptions o;
  o.keepF32 = {"old"};
  std::string error;
  ASSERT_TRUE(parseTrainOptions("keep-f32=a keep-f32=b,c", o, error));
  EXPECT_EQ(o.keepF32, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(parseTrainOptions("lr=0.5", o, error));
  EXPECT_EQ(o.keepF32.size(), 3u) << "what the string does not name stays";
}

TEST(TrainOptions, BadTextIsRefusedWithTheOptionsName) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"lr=fast", "bad --lr 'fast': expected a finite number"},
      {"lr=inf", "bad --lr 'inf': expected a finite number"},
      {"accumulate=2.5", "bad --accumulate '2.5': expected an integer"},
      {"seed=-1", "bad --seed '-1': expected a non-negative integer"},
      {"qat=maybe", "bad --qat 'maybe': expected true or false"},
      {"tf32=2", "bad --tf32 '2': expected true, false or auto"},
      {"precision=f8", "bad --precision 'f8': expected f32, f16, bf16 or auto"},
      {"optimizer=lamb", "bad --optimizer 'lamb'"},
      {"device=tpu", "bad --device 'tpu': expected cpu or cuda"},
      {"learning-rate=1", "unknown option 'learning-rate' (options: "
                          "precision, loss-scale,"},
      {"lr", "option 'lr' needs a value (lr=...)"},
      {"cache-dir=\"/tmp", "options: unterminated \" after 'cache-dir='"},
  };
  for (const Case &c : cases) {
    TrainOptions o;
    std::string error;
    EXPECT_FALSE(parseTrainOptions(c.text, o, error)) << c.text;
    EXPECT_EQ(error.rfind(c.message, 0), 0u) << c.text << ": " << error;
  }
}

TEST(TrainOptions, CombinationsAreCheckedOnceForEveryFrontEnd) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"qat-freeze-after=5", "--qat-freeze-after needs --qat"},
      {"qat qat-freeze-after=-1", "--qat-freeze-after -1 is negative"},
      {"batch-size=-2", "--batch-size -2 is negative"},
      {"accumulate=0", "--accumulate must be a positive number"},
      {"precision=f16 scale-margin=4",
       "--scale-margin and --scale-hysteresis are settings of --loss-scale "
       "adaptive"},
      {"precision=f16 loss-scale=adaptive scale-margin=0.5",
       "adaptive loss scaling needs --scale-margin >= 1"},
      {"loss-scale=dynamic", "--loss-scale needs --precision f16 or bf16"},
      {"distributed device=cuda", "distributed training runs on the CPU"},
      {"distributed accumulate=2", "distributed training with --accumulate"},
      {"ranks=2", "ranks is the MPI job's size"},
      {"probes=every-op device=cuda",
       "--check-numerics and compare run on the CPU"},
  };
  for (const Case &c : cases) {
    TrainOptions o;
    std::string error;
    ASSERT_TRUE(parseTrainOptions(c.text, o, error)) << c.text << error;
    EXPECT_FALSE(verifyTrainOptions(o, error)) << c.text;
    EXPECT_EQ(error.rfind(c.message, 0), 0u) << c.text << ": " << error;
  }
  TrainOptions fine;
  std::string error;
  ASSERT_TRUE(parseTrainOptions("precision=auto loss-scale=dynamic qat "
                                "qat-freeze-after=3",
                                fine, error));
  EXPECT_TRUE(verifyTrainOptions(fine, error)) << error;
}

TEST(TrainOptions, DifferencesAreFoundByName) {
  TrainOptions a, b;
  b.lr = 0.5;
  EXPECT_EQ(firstDifferentOption(a, b, {"momentum", "lr"}), "lr");
  EXPECT_EQ(firstDifferentOption(a, b, {"momentum", "qat"}), "");
}

TEST(TrainOptions, ToolFlagsComeFromTheTable) {
  llvm::cl::OptionCategory category("test flags");
  TrainOptionFlags flags(category, {"device"});
  auto &registered = llvm::cl::getRegisteredOptions();
  // Derived options (ranks, probes) are set by the session, not by flags.
  for (const TrainOptionSpec &spec : trainOptionSpecs())
    EXPECT_EQ(registered.count(spec.name),
              spec.name == "device" || spec.scope == OptionScope::Derived ? 0u
                                                                          : 1u)
        << spec.name.str();
  EXPECT_TRUE(flags.given().empty());
  const char *argv[] = {"tool",       "--lr=0.25", "--qat", "--keep-f32=x:1:2",
                        "--keep-f32", "y:3:4"};
  ASSERT_TRUE(llvm::cl::ParseCommandLineOptions(6, argv, "", &llvm::errs()));
  TrainOptions o;
  std::string error;
  ASSERT_TRUE(flags.apply(o, error)) << error;
  EXPECT_EQ(o.lr, 0.25);
  EXPECT_TRUE(o.qat);
  EXPECT_EQ(o.keepF32, (std::vector<std::string>{"x:1:2", "y:3:4"}));
  EXPECT_EQ(flags.given(), (std::vector<std::string>{"lr", "qat", "keep-f32"}));
}

TEST(TrainOptions, DocsListEveryOption) {
  auto doc = llvm::MemoryBuffer::getFile(MP_SOURCE_DIR "/docs/options.md");
  ASSERT_TRUE(doc) << "docs/options.md";
  for (const TrainOptionSpec &spec : trainOptionSpecs())
    EXPECT_NE((*doc)->getBuffer().find("| `" + spec.name.str() + "` |"),
              llvm::StringRef::npos)
        << "docs/options.md has no row for " << spec.name.str();
}

InferOptions changedInferOptions() {
  InferOptions o;
  std::string error;
  EXPECT_TRUE(parseInferOptions(
      "precision=int8 calibration='/tmp/a stats.json' quant-method=entropy "
      "quant-percentile=99.5 quant-per-channel=false quant-max-error=0.1 "
      "quant-fallback=f16 quant-report=/tmp/r.json batch-size=8 "
      "device=cuda cache=false cache-dir=/tmp/c fallback-ops=%3,%7 "
      "probe-outputs parallel-loops=false approximate-math=false "
      "native-bf16=false dump-ir=/tmp/p.mlir",
      o, error))
      << error;
  return o;
}

TEST(InferOptions, EveryRowReadsBackWhatItPrints) {
  const InferOptions defaults, changed = changedInferOptions();
  for (const OptionSpec<InferOptions> &spec : inferOptionSpecs()) {
    for (const InferOptions *options : {&defaults, &changed}) {
      InferOptions read;
      std::string error;
      ASSERT_TRUE(spec.parse(read, spec.name, spec.print(*options), error))
          << spec.name.str() << ": " << error;
      EXPECT_EQ(spec.print(read), spec.print(*options)) << spec.name.str();
    }
    EXPECT_NE(spec.print(defaults), spec.print(changed))
        << spec.name.str() << " is not changed by changedInferOptions()";
  }
  std::string text = printInferOptions(changed), error;
  InferOptions read;
  ASSERT_TRUE(parseInferOptions(text, read, error)) << error;
  EXPECT_EQ(printInferOptions(read), text);
  EXPECT_EQ(read.fallbackOps, (std::vector<std::string>{"%3", "%7"}));
}

TEST(InferOptions, PrecisionSetsTheMode) {
  InferOptions o;
  std::string error;
  ASSERT_TRUE(parseInferOptions("precision=int8-dynamic", o, error)) << error;
  EXPECT_EQ(o.mode, InferOptions::Mode::Int8);
  EXPECT_EQ(o.quantization, mlir::mp::QuantizationMode::Int8Dynamic);
  ASSERT_TRUE(parseInferOptions("precision=calibrate", o, error)) << error;
  EXPECT_EQ(o.mode, InferOptions::Mode::Calibrate);
  ASSERT_TRUE(parseInferOptions("precision=bf16", o, error)) << error;
  EXPECT_EQ(o.mode, InferOptions::Mode::Float);
  EXPECT_EQ(o.precision, FloatPrecision::BF16);
  EXPECT_FALSE(parseInferOptions("precision=fp8", o, error));
  EXPECT_FALSE(parseInferOptions("quant-fallback=bf16", o, error));
  EXPECT_EQ(error, "bad --quant-fallback 'bf16': expected f32 or f16");
}

TEST(InferOptions, VerifyRefusesWhatNoSingleValueShows) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"precision=f32 quant-method=entropy",
       "--quant-method is a setting of --precision int8 or int8-dynamic"},
      {"precision=bf16 calibration=x.json",
       "--calibration is a setting of --precision int8 or int8-dynamic"},
      {"precision=int8-dynamic calibration=x.json",
       "--precision int8-dynamic takes no --calibration (activations are "
       "scaled at run time)"},
      {"precision=int8 quant-percentile=0",
       "--quant-percentile must be in (0, 100], got 0"},
      {"precision=calibrate device=cuda",
       "calibration probes run on the CPU; drop --device cuda"},
      {"batch-size=-1", "--batch-size -1 is negative"},
  };
  for (const Case &c : cases) {
    InferOptions o;
    std::string error;
    ASSERT_TRUE(parseInferOptions(c.text, o, error)) << c.text << ": " << error;
    EXPECT_FALSE(verifyInferOptions(o, error)) << c.text;
    EXPECT_EQ(error, c.message) << c.text;
  }
  InferOptions fine;
  std::string error;
  ASSERT_TRUE(parseInferOptions(
      "precision=int8 calibration=x.json quant-method=percentile", fine,
      error));
  EXPECT_TRUE(verifyInferOptions(fine, error)) << error;
}

TEST(InferOptions, DocsListEveryOption) {
  auto doc = llvm::MemoryBuffer::getFile(MP_SOURCE_DIR "/docs/options.md");
  ASSERT_TRUE(doc) << "docs/options.md";
  llvm::StringRef text = (*doc)->getBuffer();
  size_t section = text.find("# Inference options");
  ASSERT_NE(section, llvm::StringRef::npos);
  for (const OptionSpec<InferOptions> &spec : inferOptionSpecs())
    EXPECT_NE(text.find("| `" + spec.name.str() + "` |", section),
              llvm::StringRef::npos)
        << "docs/options.md's inference options have no row for "
        << spec.name.str();
}

} // namespace
