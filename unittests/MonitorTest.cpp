//===- MonitorTest.cpp - the stability monitor and its stats file ---------===//

#include "mp/Session/Monitor.h"
#include "mp/Session/MonitorObserver.h"
#include "mp/Session/Numerics.h"
#include "mp/Session/Stats.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mp;

namespace {

StepResult healthy(float loss = 1.0f) {
  StepResult r;
  r.loss = loss;
  r.stepped = true;
  r.gradNorm = 0.5f;
  r.scale = 65536;
  return r;
}

StepResult skipped(float scale = 65536) {
  StepResult r = healthy();
  r.stepped = false;
  r.gradNorm = INFINITY;
  r.scale = scale;
  return r;
}

/// The steps at which `issue` was reported.
std::vector<int64_t> stepsOf(const StabilityMonitor &m, StabilityIssue issue) {
  std::vector<int64_t> steps;
  for (const StabilityReport &r : m.reports())
    if (r.issue == issue)
      steps.push_back(r.step);
  return steps;
}

using Steps = std::vector<int64_t>;

TEST(StabilityMonitor, HealthyRunReportsNothing) {
  StabilityMonitor m;
  // A falling, noisy loss, clean steps, a scale that grows once.
  for (int64_t s = 1; s <= 1000; ++s) {
    StepResult r = healthy(2.0f / std::sqrt((float)s) * (1 + 0.3f * (s % 7)));
    r.scale = s < 500 ? 65536 : 131072;
    EXPECT_TRUE(m.observe(s, r).empty()) << "step " << s;
  }
  EXPECT_TRUE(m.reports().empty());
  EXPECT_EQ(m.steps().size(), 1000u);
  EXPECT_EQ(m.summary(), "monitor: no stability issues in 1000 steps");
}

TEST(StabilityMonitor, IssueNamesAreStable) {
  const char *names[] = {"nonfinite-loss", "loss-spike", "repeated-overflow",
                         "scale-pinned", "gradient-underflow"};
  for (size_t i = 0; i < kNumStabilityIssues; ++i) {
    auto issue = static_cast<StabilityIssue>(i);
    EXPECT_EQ(stringifyStabilityIssue(issue), names[i]);
    EXPECT_EQ(symbolizeStabilityIssue(names[i]), issue);
  }
  EXPECT_FALSE(symbolizeStabilityIssue("overflow").has_value());
}

TEST(StabilityMonitor, NonFiniteLossOnceUntilCleared) {
  StabilityMonitor m;
  for (int64_t s = 1; s <= 200; ++s) {
    StepResult r = healthy();
    if ((s >= 20 && s <= 22) || s == 40 || s == 100)
      r.loss = s == 100 ? INFINITY : NAN;
    std::vector<StabilityReport> out = m.observe(s, r);
    if (s == 20 || s == 100) {
      ASSERT_EQ(out.size(), 1u) << "step " << s;
      EXPECT_EQ(out[0].step, s);
      EXPECT_EQ(out[0].issue, StabilityIssue::NonFiniteLoss);
      EXPECT_NE(out[0].message.find(s == 20 ? "loss is nan" : "loss is inf"),
                std::string::npos)
          << out[0].message;
      EXPECT_NE(out[0].message.find("--check-numerics"), std::string::npos);
      EXPECT_TRUE(out[0].op.empty());
    } else {
      EXPECT_TRUE(out.empty()) << "step " << s;
    }
  }
  // Steps 21-22 persist; 40 starts again but within reportInterval (50) of
  // 20; 100 is past it.
  EXPECT_EQ(stepsOf(m, StabilityIssue::NonFiniteLoss), (Steps{20, 100}));
  EXPECT_EQ(m.stepsWith(StabilityIssue::NonFiniteLoss), 5);
}

TEST(StabilityMonitor, LossSpikeAgainstTheRecentMedian) {
  StabilityMonitor m; // factor 10, judged after 10 finite losses
  int64_t s = 0;
  // Early steps are not judged: a large first loss is no spike.
  m.observe(++s, healthy(100));
  for (int i = 0; i < 30; ++i)
    m.observe(++s, healthy(1.0f));
  EXPECT_TRUE(m.reports().empty());
  // 10x the median (1) is not above it; 10.5x is.
  EXPECT_TRUE(m.observe(++s, healthy(10.0f)).empty());
  std::vector<StabilityReport> out = m.observe(++s, healthy(10.5f));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].issue, StabilityIssue::LossSpike);
  EXPECT_EQ(out[0].step, 33);
  EXPECT_NE(out[0].message.find("10.5x the median 1"), std::string::npos)
      << out[0].message;
  // Persisting: one report.
  EXPECT_TRUE(m.observe(++s, healthy(50.0f)).empty());
}

TEST(StabilityMonitor, SpikeFactorOption) {
  MonitorOptions o;
  o.spikeFactor = 2;
  StabilityMonitor m(o);
  for (int64_t s = 1; s <= 20; ++s)
    m.observe(s, healthy(1.0f));
  EXPECT_EQ(m.observe(21, healthy(2.5f)).size(), 1u);
}

TEST(StabilityMonitor, RepeatedOverflowInAWindow) {
  StabilityMonitor m; // 5 skipped steps within 50
  for (int64_t s = 1; s <= 200; ++s) {
    // 4 early skips, then skips every 10 steps from 60: the window of 50
    // first holds 5 of them at step 100.
    bool skip = s <= 4 || (s >= 60 && s % 10 == 0);
    std::vector<StabilityReport> out =
        m.observe(s, skip ? skipped(1024) : healthy());
    bool expected = s == 100;
    EXPECT_EQ(out.size(), expected ? 1u : 0u) << "step " << s;
    if (expected) {
      EXPECT_EQ(out[0].issue, StabilityIssue::RepeatedOverflow);
      EXPECT_NE(out[0].message.find("5 of the last 50 steps were skipped"),
                std::string::npos)
          << out[0].message;
      EXPECT_NE(out[0].message.find("loss scale 1024"), std::string::npos);
    }
  }
}

TEST(StabilityMonitor, OverflowOptions) {
  MonitorOptions o;
  o.overflowWindow = 3;
  o.overflowLimit = 2;
  StabilityMonitor m(o);
  m.observe(1, skipped());
  m.observe(2, healthy());
  m.observe(3, healthy());
  EXPECT_TRUE(m.observe(4, skipped()).empty()); // 1 of the last 3
  EXPECT_EQ(m.observe(5, skipped()).size(), 1u);
}

TEST(StabilityMonitor, EverySkippedDoesNotFlood) {
  StabilityMonitor m;
  for (int64_t s = 1; s <= 2000; ++s)
    m.observe(s, skipped(1e7f));
  ASSERT_EQ(m.reports().size(), 1u);
  EXPECT_EQ(m.reports()[0].step, 5);
  EXPECT_EQ(m.reports()[0].issue, StabilityIssue::RepeatedOverflow);
  EXPECT_EQ(m.stepsWith(StabilityIssue::RepeatedOverflow), 1996);
  EXPECT_NE(m.summary().find("repeated-overflow on 1996 steps (first at "
                             "step 5)"),
            std::string::npos)
      << m.summary();
}

TEST(StabilityMonitor, ScalePinnedAtTheFloor) {
  StabilityMonitor m;
  for (int64_t s = 1; s <= 20; ++s)
    m.observe(s, healthy());
  // Skipped above the floor: not pinned (and 1 skip is no repetition).
  EXPECT_TRUE(m.observe(21, skipped(2)).empty());
  std::vector<StabilityReport> out = m.observe(22, skipped(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].issue, StabilityIssue::ScalePinned);
  EXPECT_NE(out[0].message.find("floor (1)"), std::string::npos);
  // Stays pinned while the scale stays at the floor, skipped or not.
  EXPECT_TRUE(m.observe(23, skipped(1)).empty());
  StepResult atFloor = healthy();
  atFloor.scale = 1;
  EXPECT_TRUE(m.observe(24, atFloor).empty());
  EXPECT_TRUE(m.observe(25, skipped(1)).empty());
  EXPECT_EQ(stepsOf(m, StabilityIssue::ScalePinned), (Steps{22}));
}

TEST(StabilityMonitor, GradientUnderflowAfterKZeroNorms) {
  StabilityMonitor m; // 5 stepped steps in a row
  auto zero = [] {
    StepResult r = healthy();
    r.gradNorm = 0;
    return r;
  };
  for (int64_t s = 1; s <= 10; ++s)
    m.observe(s, healthy());
  for (int64_t s = 11; s <= 14; ++s) // 4 zeros
    EXPECT_TRUE(m.observe(s, zero()).empty());
  // A skipped step neither counts nor breaks the run.
  EXPECT_TRUE(m.observe(15, skipped()).empty());
  std::vector<StabilityReport> out = m.observe(16, zero());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].issue, StabilityIssue::GradientUnderflow);
  EXPECT_NE(out[0].message.find("for 5 stepped steps in a row"),
            std::string::npos)
      << out[0].message;
  // Underflow is not overflow: no probe hint.
  EXPECT_EQ(out[0].message.find("--check-numerics"), std::string::npos);
  for (int64_t s = 17; s <= 30; ++s)
    EXPECT_TRUE(m.observe(s, zero()).empty());
  // A tiny norm counts as zero; one clear step breaks the run.
  StepResult tiny = healthy();
  tiny.gradNorm = 1e-35f;
  MonitorOptions o;
  StabilityMonitor n(o);
  for (int64_t s = 1; s <= 4; ++s)
    n.observe(s, tiny);
  n.observe(5, healthy());
  for (int64_t s = 6; s <= 9; ++s)
    n.observe(s, tiny);
  EXPECT_TRUE(n.reports().empty());
  EXPECT_EQ(n.observe(10, tiny).size(), 1u);
}

TEST(StabilityMonitor, MicroBatchesOnlyCountForTheLoss) {
  // --accumulate 4: three micro-batches that only add their gradients (as
  // Session::trainStep returns them: not stepped, no norm), then the
  // window's update.
  auto micro = [](float loss) {
    StepResult r;
    r.loss = loss;
    r.scale = 65536;
    r.optimizerStep = false;
    return r;
  };
  StabilityMonitor m;
  for (int64_t s = 1; s <= 400; ++s)
    m.observe(s, s % 4 ? micro(1.0f) : healthy());
  EXPECT_TRUE(m.reports().empty());
  EXPECT_FALSE(m.steps()[0].optimizerStep);
  EXPECT_TRUE(m.steps()[3].optimizerStep);
  // The loss of a micro-batch is judged; overflow counts windows: 5
  // skipped updates are 20 batches.
  std::vector<StabilityReport> out = m.observe(401, micro(NAN));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].issue, StabilityIssue::NonFiniteLoss);
  for (int64_t s = 402; s <= 419; ++s) // skipped updates at 404 ... 416
    EXPECT_TRUE(m.observe(s, s % 4 ? micro(1.0f) : skipped()).empty()) << s;
  out = m.observe(420, skipped());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].issue, StabilityIssue::RepeatedOverflow);
  EXPECT_NE(out[0].message.find("5 of the last 50"), std::string::npos)
      << out[0].message;
}

TEST(StabilityMonitor, ReportsNameTheProbedOp) {
  StabilityMonitor m;
  m.setProbesPresent(true);
  NumericsEvent event;
  event.id = "train_step#3 linalg.generic at model.mlir:69:10";
  event.nonfinite = 7;
  event.numElements = 640;
  event.dtype = MPRT_DTYPE_F16;
  StepResult bad = skipped();
  bad.loss = NAN;
  std::vector<StabilityReport> out = m.observe(1, bad, &event);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, event.id);
  EXPECT_NE(out[0].message.find("first inf/nan in the output of " + event.id),
            std::string::npos)
      << out[0].message;
  EXPECT_EQ(out[0].message.find("--check-numerics"), std::string::npos);

  // With probes but no event this step: said so, no op.
  StabilityMonitor n;
  n.setProbesPresent(true);
  out = n.observe(1, bad);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].op.empty());
  EXPECT_NE(out[0].message.find("probes saw no inf/nan"), std::string::npos);
}

TEST(StabilityMonitor, RecordsWithoutChecks) {
  StabilityMonitor m;
  StepResult bad = healthy();
  bad.loss = NAN;
  m.record(1, bad, 1);
  m.recordPrecisionChange(1, "linalg.matmul at m.mlir:3:4 -> f32");
  EXPECT_TRUE(m.reports().empty());
  ASSERT_EQ(m.steps().size(), 1u);
  EXPECT_EQ(m.steps()[0].epoch, 1);
  ASSERT_EQ(m.precisionChanges().size(), 1u);
}

TEST(StabilityMonitor, OptionsAreChecked) {
  std::string error;
  EXPECT_TRUE(validateMonitorOptions(MonitorOptions(), error));
  auto refused = [&](auto change, const char *text) {
    MonitorOptions o;
    change(o);
    std::string message;
    EXPECT_FALSE(validateMonitorOptions(o, message)) << text;
    EXPECT_NE(message.find(text), std::string::npos) << message;
  };
  refused([](MonitorOptions &o) { o.spikeFactor = 1; }, "spike-factor");
  refused([](MonitorOptions &o) { o.spikeFactor = -3; }, "spike-factor");
  refused([](MonitorOptions &o) { o.spikeFactor = NAN; }, "spike-factor");
  refused([](MonitorOptions &o) { o.overflowWindow = 0; }, "overflow-window");
  refused([](MonitorOptions &o) { o.overflowLimit = 0; }, "overflow-limit");
  refused([](MonitorOptions &o) { o.overflowLimit = 51; }, "overflow-limit");
  refused([](MonitorOptions &o) { o.underflowSteps = -1; }, "underflow");
  refused([](MonitorOptions &o) { o.historyLength = 0; }, "history");
}

//===----------------------------------------------------------------------===//
// The stats file
//===----------------------------------------------------------------------===//

class StatsFile : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mp-stats", dir));
    path = (dir + "/stats.json").str();
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  llvm::json::Value parse() {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    EXPECT_TRUE(bool(buffer));
    llvm::Expected<llvm::json::Value> value =
        llvm::json::parse((*buffer)->getBuffer());
    EXPECT_TRUE(bool(value)) << llvm::toString(value.takeError());
    return value ? std::move(*value) : llvm::json::Value(nullptr);
  }
  llvm::SmallString<128> dir;
  std::string path;
};

TEST_F(StatsFile, WritesTheSchemaAndReadsItBack) {
  StabilityMonitor m;
  m.observe(1, healthy(2.5f), nullptr, 1);
  StepResult bad = skipped(32768);
  bad.loss = NAN;
  m.observe(2, bad, nullptr, 1);
  StepResult overflowed = healthy(INFINITY);
  overflowed.gradNorm = -INFINITY; // not a real norm: checks the spelling
  m.observe(3, overflowed, nullptr, 2);
  StepResult accumulated = healthy(1.5f);
  accumulated.optimizerStep = false;
  m.observe(4, accumulated, nullptr, 2);
  m.recordPrecisionChange(3, "softmax -> f32", {"m.mlir:3:4", "m.mlir:5:6"});
  EpochReport epoch;
  epoch.epoch = 1;
  epoch.meanLoss = 2.5;
  epoch.accuracy = -1; // no test rows
  epoch.skipped = 1;
  epoch.scale = 32768;
  StatsHeader header;
  header.model = "m.mlir";
  header.precision = "f16";
  header.lossScale = "dynamic";
  std::string error;
  ASSERT_TRUE(writeStats(path, header, m, {epoch}, error)) << error;

  llvm::json::Value value = parse();
  const llvm::json::Object *root = value.getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getInteger("version"), 1);
  EXPECT_EQ(root->getString("model"), "m.mlir");
  EXPECT_EQ(root->getString("precision"), "f16");
  EXPECT_EQ(root->getString("loss_scale"), "dynamic");
  const llvm::json::Array *steps = root->getArray("steps");
  ASSERT_TRUE(steps && steps->size() == 4);
  const llvm::json::Object *second = (*steps)[1].getAsObject();
  EXPECT_EQ(second->getInteger("step"), 2);
  EXPECT_EQ(second->getString("loss"), "nan");
  EXPECT_EQ(second->getString("grad_norm"), "inf");
  EXPECT_EQ(second->getNumber("scale"), 32768);
  EXPECT_EQ(second->getBoolean("skipped"), true);
  EXPECT_EQ((*steps)[2].getAsObject()->getString("grad_norm"), "-inf");
  EXPECT_EQ((*steps)[0].getAsObject()->getNumber("loss"), 2.5);
  EXPECT_EQ((*steps)[0].getAsObject()->getBoolean("optimizer_step"), true);
  const llvm::json::Object *micro = (*steps)[3].getAsObject();
  EXPECT_EQ(micro->getBoolean("optimizer_step"), false);
  EXPECT_EQ(micro->get("grad_norm")->kind(), llvm::json::Value::Null);
  EXPECT_EQ(micro->getBoolean("skipped"), false);
  const llvm::json::Array *reports = root->getArray("reports");
  ASSERT_TRUE(reports && reports->size() == 1);
  EXPECT_EQ((*reports)[0].getAsObject()->getString("issue"), "nonfinite-loss");
  EXPECT_EQ((*reports)[0].getAsObject()->getInteger("step"), 2);
  EXPECT_FALSE((*reports)[0].getAsObject()->get("op"));
  const llvm::json::Array *changes = root->getArray("precision_changes");
  ASSERT_TRUE(changes && changes->size() == 1);
  EXPECT_EQ((*changes)[0].getAsObject()->getString("change"), "softmax -> f32");
  const llvm::json::Array *kept =
      (*changes)[0].getAsObject()->getArray("kept_f32");
  ASSERT_TRUE(kept && kept->size() == 2);
  EXPECT_EQ((*kept)[1].getAsString(), "m.mlir:5:6");
  const llvm::json::Array *epochs = root->getArray("epochs");
  ASSERT_TRUE(epochs && epochs->size() == 1);
  EXPECT_EQ((*epochs)[0].getAsObject()->get("accuracy")->kind(),
            llvm::json::Value::Null);

  StatsContents back;
  ASSERT_TRUE(readStats(path, back, error)) << error;
  ASSERT_EQ(back.steps.size(), 4u);
  EXPECT_FALSE(back.steps[3].optimizerStep);
  EXPECT_TRUE(back.steps[2].optimizerStep);
  EXPECT_EQ(back.steps[0].loss, 2.5f);
  EXPECT_TRUE(std::isnan(back.steps[1].loss));
  EXPECT_FALSE(back.steps[1].stepped);
  EXPECT_EQ(back.steps[2].epoch, 2);
  ASSERT_EQ(back.reports.size(), 1u);
  EXPECT_EQ(back.reports[0].issue, StabilityIssue::NonFiniteLoss);
  EXPECT_EQ(back.reports[0].message, m.reports()[0].message);
  ASSERT_EQ(back.precisionChanges.size(), 1u);
  EXPECT_EQ(back.precisionChanges[0].keptF32,
            (std::vector<std::string>{"m.mlir:3:4", "m.mlir:5:6"}));
  ASSERT_EQ(back.epochs.size(), 1u);
  EXPECT_EQ(back.epochs[0].accuracy, -1);
}

TEST_F(StatsFile, FloatsRoundTrip) {
  StabilityMonitor m;
  StepResult r = healthy(0.1f);
  r.gradNorm = 3.4028235e38f;
  r.scale = 1.17549435e-38f;
  m.record(1, r);
  std::string error;
  ASSERT_TRUE(writeStats(path, StatsHeader(), m, {}, error)) << error;
  StatsContents back;
  ASSERT_TRUE(readStats(path, back, error)) << error;
  EXPECT_EQ(back.steps[0].loss, 0.1f);
  EXPECT_EQ(back.steps[0].gradNorm, 3.4028235e38f);
  EXPECT_EQ(back.steps[0].scale, 1.17549435e-38f);
}

TEST_F(StatsFile, UnwritablePathIsAnError) {
  StabilityMonitor m;
  std::string error;
  std::string missing = (dir + "/no/such/dir/stats.json").str();
  EXPECT_FALSE(writeStats(missing, StatsHeader(), m, {}, error));
  EXPECT_NE(error.find("cannot write stats file '" + missing + "'"),
            std::string::npos)
      << error;
  // A directory cannot be replaced by the file; nothing is left behind.
  error.clear();
  EXPECT_FALSE(writeStats(std::string(dir), StatsHeader(), m, {}, error));
  EXPECT_FALSE(error.empty());
  std::error_code ec;
  int entries = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    ++entries;
  EXPECT_EQ(entries, 0);
}

TEST_F(StatsFile, BadFilesAreRefused) {
  std::string error;
  StatsContents contents;
  EXPECT_FALSE(readStats(path, contents, error)); // missing
  auto write = [&](const char *text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << text;
  };
  write("{\"version\": 1, \"steps\": [");
  EXPECT_FALSE(readStats(path, contents, error));
  EXPECT_NE(error.find("not JSON"), std::string::npos) << error;
  write("{\"version\": 2, \"steps\": [], \"reports\": [], "
        "\"precision_changes\": [], \"epochs\": []}");
  EXPECT_FALSE(readStats(path, contents, error));
  EXPECT_NE(error.find("version"), std::string::npos) << error;
  write("{\"version\": 1, \"steps\": [{\"step\": 1}], \"reports\": [], "
        "\"precision_changes\": [], \"epochs\": []}");
  EXPECT_FALSE(readStats(path, contents, error));
  EXPECT_NE(error.find("a step lacks"), std::string::npos) << error;
}

TEST_F(StatsFile, ObserverChecksOptionsAndPath) {
  std::string error;
  MonitorConfig config;
  config.statsPath = (dir + "/no/such/dir/stats.json").str();
  EXPECT_FALSE(MonitorObserver::create(config, nullptr, 0, 0, error));
  EXPECT_NE(error.find("cannot write stats file"), std::string::npos);
  config.statsPath = path;
  config.options.overflowLimit = -2;
  EXPECT_FALSE(MonitorObserver::create(config, nullptr, 0, 0, error));
  EXPECT_NE(error.find("overflow-limit"), std::string::npos);
}

TEST_F(StatsFile, ObserverFeedsTheMonitorAndWritesPerEpoch) {
  std::string error;
  MonitorConfig config;
  config.statsPath = path;
  std::vector<StabilityReport> seen;
  config.onReport = [&](const StabilityReport &r) { seen.push_back(r); };
  auto observer = MonitorObserver::create(config, nullptr, 0, 0, error);
  ASSERT_TRUE(observer) << error;
  // Written at once, with no steps.
  StatsContents back;
  ASSERT_TRUE(readStats(path, back, error)) << error;
  EXPECT_TRUE(back.steps.empty());

  observer->beforeEpoch(1);
  for (int64_t s = 1; s <= 6; ++s)
    observer->afterStep(s, skipped());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].issue, StabilityIssue::RepeatedOverflow);
  EXPECT_EQ(seen[0].step, 5);
  EpochReport epoch;
  epoch.epoch = 1;
  ASSERT_TRUE(observer->afterEpoch(epoch, error)) << error;
  ASSERT_TRUE(readStats(path, back, error)) << error;
  EXPECT_EQ(back.steps.size(), 6u);
  EXPECT_EQ(back.steps[5].epoch, 1);
  EXPECT_EQ(back.reports.size(), 1u);
  EXPECT_EQ(back.epochs.size(), 1u);

  // A run resumed after step 4 keeps steps 1-4 and the epochs before it,
  // and judges step 5 as the first run did.
  seen.clear();
  auto resumed = MonitorObserver::create(config, nullptr, 4, 0, error);
  ASSERT_TRUE(resumed) << error;
  EXPECT_EQ(resumed->monitor().steps().size(), 4u);
  EXPECT_TRUE(resumed->monitor().reports().empty());
  resumed->beforeEpoch(1);
  resumed->afterStep(5, skipped());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].step, 5);
  ASSERT_TRUE(resumed->writeStats(error)) << error;
  ASSERT_TRUE(readStats(path, back, error)) << error;
  EXPECT_EQ(back.steps.size(), 5u);
  EXPECT_TRUE(back.epochs.empty());
}

TEST_F(StatsFile, ObserverWithoutChecksStillRecords) {
  std::string error;
  MonitorConfig config;
  config.statsPath = path;
  config.checks = false;
  int reports = 0;
  config.onReport = [&](const StabilityReport &) { ++reports; };
  auto observer = MonitorObserver::create(config, nullptr, 0, 0, error);
  ASSERT_TRUE(observer) << error;
  for (int64_t s = 1; s <= 10; ++s)
    observer->afterStep(s, skipped());
  EXPECT_EQ(reports, 0);
  ASSERT_TRUE(observer->writeStats(error)) << error;
  llvm::json::Value value = parse();
  const llvm::json::Object *root = value.getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getArray("steps")->size(), 10u);
  EXPECT_EQ(root->getObject("monitor")->getBoolean("checks"), false);
}

} // namespace
