//===- PrecisionRepairTest.cpp - when a repair starts, what it keeps ------===//

#include "mp/Session/JitEntry.h"
#include "mp/Session/PrecisionPins.h"
#include "mp/Session/PrecisionRepair.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mp;

namespace {

StepResult clean(float scale = 65536) {
  StepResult r;
  r.loss = 1.0f;
  r.stepped = true;
  r.scale = scale;
  return r;
}

/// Skipped with a finite loss: large gradients, which a smaller scale
/// cures (not a failure above the floor).
StepResult overflowed(float scale = 65536) {
  StepResult r = clean(scale);
  r.stepped = false;
  return r;
}

/// Skipped with an inf/nan loss: the forward pass overflowed.
StepResult nanLoss(float scale = 65536) {
  StepResult r = overflowed(scale);
  r.loss = NAN;
  return r;
}

StepState scalars(float scale, int32_t tracker = 0) {
  StepState s;
  s.scale = scale;
  s.growthTracker = tracker;
  return s;
}

TEST(RepairTrigger, ThreeFailedStepsInARow) {
  RepairTrigger t{RepairOptions()};
  EXPECT_FALSE(t.observe(scalars(65536, 7), clean()));
  EXPECT_FALSE(t.observe(scalars(65536, 8), nanLoss(65536)));
  EXPECT_FALSE(t.observe(scalars(32768), nanLoss(32768)));
  EXPECT_TRUE(t.observe(scalars(16384), nanLoss(16384)));
  // The run continues from the scalars before the first failed step.
  EXPECT_EQ(t.troubleStart().scale, 65536);
  EXPECT_EQ(t.troubleStart().growthTracker, 8);
  // It starts afresh.
  EXPECT_FALSE(t.observe(scalars(65536), nanLoss()));
}

TEST(RepairTrigger, SkipsThatScalingCuresAreNotFailures) {
  // Dynamic scaling finding its scale: skipped steps with finite losses
  // above the floor, many in a row (the MLP with its loss x1024 skips its
  // first five).
  RepairTrigger t{RepairOptions()};
  float scale = 65536;
  for (int i = 0; i < 12; ++i, scale /= 2)
    EXPECT_FALSE(t.observe(scalars(scale), overflowed(scale))) << i;
}

TEST(RepairTrigger, SkipsAtTheScalesFloorAreFailures) {
  RepairTrigger t{RepairOptions()};
  EXPECT_FALSE(t.observe(scalars(2), overflowed(2)));
  EXPECT_FALSE(t.observe(scalars(1), overflowed(1)));
  EXPECT_FALSE(t.observe(scalars(1), overflowed(1)));
  EXPECT_TRUE(t.observe(scalars(1), overflowed(1)));
  EXPECT_EQ(t.troubleStart().scale, 1);
}

TEST(RepairTrigger, FourFailuresWithinEightSteps) {
  RepairTrigger t{RepairOptions()};
  // Failures between clean steps: never three in a row.
  EXPECT_FALSE(t.observe(scalars(1024, 3), nanLoss(1024)));
  EXPECT_FALSE(t.observe(scalars(512), clean(512)));
  EXPECT_FALSE(t.observe(scalars(512), nanLoss(512)));
  EXPECT_FALSE(t.observe(scalars(256), clean(256)));
  EXPECT_FALSE(t.observe(scalars(256), nanLoss(256)));
  EXPECT_FALSE(t.observe(scalars(128), clean(128)));
  EXPECT_TRUE(t.observe(scalars(128), nanLoss(128)));
  EXPECT_EQ(t.troubleStart().scale, 1024);
  EXPECT_EQ(t.troubleStart().growthTracker, 3);
}

TEST(RepairTrigger, FailuresOutsideTheWindowAreForgotten) {
  RepairOptions options;
  RepairTrigger t{options};
  for (int round = 0; round < 5; ++round) {
    // One failure every eight steps never triggers.
    EXPECT_FALSE(t.observe(scalars(65536), nanLoss()));
    for (int i = 0; i < 7; ++i)
      EXPECT_FALSE(t.observe(scalars(65536), clean()));
  }
}

TEST(RepairTrigger, OptionsMoveTheThresholds) {
  RepairOptions options;
  options.consecutive = 1;
  RepairTrigger t{options};
  EXPECT_TRUE(t.observe(scalars(65536), nanLoss()));
  options.consecutive = 10;
  options.window = 3;
  options.limit = 2;
  RepairTrigger u{options};
  EXPECT_FALSE(u.observe(scalars(65536), nanLoss()));
  EXPECT_TRUE(u.observe(scalars(65536), nanLoss()));
}

TEST(RepairTrigger, AMicroBatchsLossCountsForItsWindow) {
  RepairTrigger t{RepairOptions()};
  for (int window = 0; window < 3; ++window) {
    StepResult micro = nanLoss();
    micro.optimizerStep = false;
    EXPECT_FALSE(t.observe(scalars(65536), micro));
    // The update of the window is skipped; its own loss is finite.
    EXPECT_EQ(t.observe(scalars(65536), overflowed()), window == 2);
  }
}

TEST(RepairTrigger, OptionsAreChecked) {
  std::string error;
  RepairOptions options;
  EXPECT_TRUE(validateRepairOptions(options, error));
  options.limit = 9; // more than the window
  EXPECT_FALSE(validateRepairOptions(options, error));
  EXPECT_NE(error.find("limit"), std::string::npos);
  options = RepairOptions();
  options.maxRounds = 0;
  EXPECT_FALSE(validateRepairOptions(options, error));
}

TEST(PrecisionRepair, WhereItApplies) {
  std::string error;
  bool applies = true;
  TrainOptions f16;
  f16.precision = FloatPrecision::F16; // dynamic scaling by default
  EXPECT_TRUE(repairApplies(RepairMode::Auto, f16, false, applies, error));
  EXPECT_FALSE(applies); // Auto: only with --precision auto
  EXPECT_TRUE(repairApplies(RepairMode::Auto, f16, true, applies, error));
  EXPECT_TRUE(applies);
  EXPECT_TRUE(repairApplies(RepairMode::On, f16, false, applies, error));
  EXPECT_TRUE(applies);
  EXPECT_TRUE(repairApplies(RepairMode::Off, f16, true, applies, error));
  EXPECT_FALSE(applies);
  // f32 has nothing to repair, even when asked.
  TrainOptions f32;
  EXPECT_TRUE(repairApplies(RepairMode::On, f32, false, applies, error));
  EXPECT_FALSE(applies);
  // bf16 skips no step without loss scaling: quietly off under auto, an
  // error when asked for.
  TrainOptions bf16;
  bf16.precision = FloatPrecision::BF16;
  EXPECT_TRUE(repairApplies(RepairMode::Auto, bf16, true, applies, error));
  EXPECT_FALSE(applies);
  EXPECT_FALSE(repairApplies(RepairMode::On, bf16, false, applies, error));
  EXPECT_NE(error.find("--loss-scale dynamic"), std::string::npos) << error;
  bf16.lossScale.mode = LossScalingMode::Dynamic;
  EXPECT_TRUE(repairApplies(RepairMode::On, bf16, false, applies, error));
  EXPECT_TRUE(applies);
}

TEST(PrecisionRepair, ParsesTheFlag) {
  RepairMode mode = RepairMode::Auto;
  std::string error;
  EXPECT_TRUE(parseRepairMode("on", mode, error));
  EXPECT_EQ(mode, RepairMode::On);
  EXPECT_TRUE(parseRepairMode("off", mode, error));
  EXPECT_EQ(mode, RepairMode::Off);
  EXPECT_FALSE(parseRepairMode("yes", mode, error));
  EXPECT_EQ(error, "bad --auto-precision-repair 'yes': expected on or off");
}

TEST(PrecisionRepair, ReportLine) {
  RepairReport report;
  report.step = 12;
  report.repaired = true;
  report.kept = {{"m.mlir:3:8", "linalg.generic", "train_step", ""},
                 {"m.mlir:4:8", "", "train_step", "m.mlir:3:8"}};
  report.rounds = 2;
  report.seconds = 1.25;
  report.scale = 65536;
  EXPECT_EQ(report.line(),
            "precision repair at step 12: kept in f32: m.mlir:3:8 "
            "(linalg.generic overflowed in @train_step), m.mlir:4:8 (reads "
            "m.mlir:3:8); 2 probe rounds, 1.2 s; continuing with loss scale "
            "65536");
  EXPECT_EQ(report.locations(),
            (std::vector<std::string>{"m.mlir:3:8", "m.mlir:4:8"}));
  RepairReport none;
  none.step = 5;
  none.reason = "nothing to fix";
  EXPECT_EQ(none.line(), "precision repair at step 5: nothing to fix");
}

// Line 1 is the function; each op sits on its own line, column 3.
constexpr const char *kModel = R"mlir(func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = arith.mulf %x, %x : tensor<4xf32>
  %b = arith.addf %a, %x : tensor<4xf32>
  %c = arith.subf %a, %b : tensor<4xf32>
  %d = arith.mulf %b, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
)mlir";

class Pins : public ::testing::Test {
protected:
  void SetUp() override {
    context = createSessionContext();
    module = mlir::parseSourceString<mlir::ModuleOp>(kModel, context.get(),
                                                     "m.mlir");
    ASSERT_TRUE(module);
  }
  bool pinned(int line) {
    bool found = false;
    module->walk([&](mlir::Operation *op) {
      if (auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
        if (static_cast<int>(loc.getLine()) == line)
          found = op->hasAttr(mlir::mp::kPrecisionAttrName);
    });
    return found;
  }
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(Pins, UsersInProgramOrderWithoutRepeatsOrTerminators) {
  EXPECT_EQ(userLocations(*module, "m.mlir:2:8"),
            (std::vector<std::string>{"m.mlir:3:8", "m.mlir:4:8"}));
  // %b is read twice by %d and once by %c; "LINE:COL" finds it too.
  EXPECT_EQ(userLocations(*module, "3:8"),
            (std::vector<std::string>{"m.mlir:4:8", "m.mlir:5:8"}));
  // %c only reaches the return.
  EXPECT_TRUE(userLocations(*module, "m.mlir:4:8").empty());
  EXPECT_TRUE(userLocations(*module, "m.mlir:9:9").empty());
}

TEST_F(Pins, PinsTheOpsAtTheLocations) {
  std::string error;
  ASSERT_TRUE(pinOpsToF32(*module, {"m.mlir:3:8", "5:8"}, error)) << error;
  EXPECT_FALSE(pinned(2));
  EXPECT_TRUE(pinned(3));
  EXPECT_FALSE(pinned(4));
  EXPECT_TRUE(pinned(5));
  EXPECT_FALSE(pinOpsToF32(*module, {"other.mlir:3:8"}, error));
  EXPECT_NE(error.find("no op of the model is at that location"),
            std::string::npos);
}

// ONNX nodes are named locations around FILE:0:0 (no line), the PyTorch
// frontend's ops module paths around one line each.
constexpr const char *kNamedModel = R"mlir(func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = arith.mulf %x, %x : tensor<4xf32> loc("/conv/Mul"("m.onnx":0:0))
  %b = arith.addf %a, %x : tensor<4xf32> loc("/conv/Add"("m.onnx":0:0))
  %c = arith.subf %a, %b : tensor<4xf32> loc("features.3.block.1"("m.mlir":4:3))
  %d = arith.mulf %c, %b : tensor<4xf32> loc("features.30"("m.mlir":5:3))
  return %d : tensor<4xf32>
}
)mlir";

TEST(NamedPins, NodeNamesAndModulePaths) {
  auto context = createSessionContext();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kNamedModel,
                                                        context.get(), "m");
  ASSERT_TRUE(module);
  // Users are named as precisely as their locations allow: an ONNX node by
  // its name (m.onnx:0:0 is every node), a PyTorch op by its line.
  EXPECT_EQ(userLocations(*module, "/conv/Mul"),
            (std::vector<std::string>{"/conv/Add", "m.mlir:4:3"}));
  EXPECT_EQ(userLocations(*module, "/conv/Add"),
            (std::vector<std::string>{"m.mlir:4:3", "m.mlir:5:3"}));
  std::string error;
  ASSERT_TRUE(pinOpsToF32(*module, {"/conv/Add", "features.3"}, error))
      << error;
  std::vector<std::string> pinned;
  module->walk([&](mlir::Operation *op) {
    if (op->hasAttr(mlir::mp::kPrecisionAttrName))
      pinned.push_back(mlir::mp::keepF32Location(op->getLoc()));
  });
  // "features.3" takes features.3.block.1, not features.30.
  EXPECT_EQ(pinned, (std::vector<std::string>{"/conv/Add", "m.mlir:4:3"}));
  EXPECT_FALSE(pinOpsToF32(*module, {"features.4"}, error));
  EXPECT_NE(error.find("--keep-f32 features.4: no op of the model is at that "
                       "location or in that module"),
            std::string::npos);
}

} // namespace
