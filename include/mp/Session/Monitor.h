//===- Monitor.h - a training run's stability monitor -----------*- C++ -*-===//
//
// Watches the results of a run's training steps (loss, gradient norm, loss
// scale, skipped or not) and reports, with the step, what usually ends a
// mixed-precision run badly: a non-finite loss, a loss spike, repeated
// overflow, a loss scale pinned at its floor and gradients that underflow
// to zero. It keeps the run's history for the stats file (Stats.h). Pure
// logic: no I/O, no session; MonitorObserver.h connects it to a trainer.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_MONITOR_H
#define MP_SESSION_MONITOR_H

#include "mp/Session/Session.h"

#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace mp {

struct NumericsEvent;

struct MonitorOptions {
  /// Steps of recent history the loss spike's median is taken over.
  int64_t historyLength = 100;
  /// A loss above spikeFactor x the median loss of the recent history is a
  /// spike (> 1).
  double spikeFactor = 10;
  /// Spikes are judged once the history holds this many finite losses.
  int64_t minSpikeSteps = 10;
  /// Repeated overflow: overflowLimit skipped steps within the last
  /// overflowWindow optimizer steps (1 <= limit <= window).
  int64_t overflowWindow = 50;
  int64_t overflowLimit = 5;
  /// Gradient underflow: the gradient norm at or below underflowThreshold
  /// for underflowSteps stepped optimizer steps in a row.
  double underflowThreshold = 1e-30;
  int64_t underflowSteps = 5;
  /// The loss scale's floor (mp.update_scale and mp.adapt_scale clamp at
  /// 1): a step skipped at this scale cannot be rescued by scaling.
  double minScale = 1;
  /// An issue reported once is not reported again until it has cleared
  /// and at least this many steps have passed since its report.
  int64_t reportInterval = 50;
};

/// False with an error naming the option when `options` make no sense.
bool validateMonitorOptions(const MonitorOptions &options, std::string &error);

enum class StabilityIssue {
  NonFiniteLoss,
  LossSpike,
  RepeatedOverflow,
  ScalePinned,
  GradientUnderflow,
};
constexpr size_t kNumStabilityIssues = 5;

/// "nonfinite-loss", "loss-spike", "repeated-overflow", "scale-pinned",
/// "gradient-underflow": the names reports and stats files use.
llvm::StringRef stringifyStabilityIssue(StabilityIssue issue);
std::optional<StabilityIssue> symbolizeStabilityIssue(llvm::StringRef name);

struct StabilityReport {
  int64_t step = 0;
  StabilityIssue issue = StabilityIssue::NonFiniteLoss;
  /// One line, without the step: what happened and what to try.
  std::string message;
  /// The first op whose output overflowed in this step, when probes
  /// (--check-numerics) ran; empty otherwise.
  std::string op;
};

/// "step 5: repeated-overflow: <message>", as mp-run warns of it.
std::string formatReport(const StabilityReport &report);

/// One step of the run as the stats file records it.
struct StepRecord {
  int64_t step = 0;
  int64_t epoch = 0; // 0: unknown
  float loss = 0;
  float gradNorm = 0;
  float scale = 1;
  bool stepped = true;
  /// False for a micro-batch that only added its gradients to an
  /// accumulation window (StepResult::optimizerStep): its `stepped` and
  /// `gradNorm` say nothing.
  bool optimizerStep = true;
};

/// A change of the run's precision (a precision repair,
/// PrecisionRepair.h): the line it printed and the ops it kept in f32.
struct PrecisionChange {
  int64_t step = 0;
  std::string change;
  std::vector<std::string> keptF32;
};

class StabilityMonitor {
public:
  explicit StabilityMonitor(const MonitorOptions &options = MonitorOptions());

  const MonitorOptions &options() const { return opts; }

  /// Whether the steps run with numerics probes: reports of overflow then
  /// name the op the probes found, and otherwise say how to get it.
  void setProbesPresent(bool present) { probes = present; }

  /// Records step `step` (of epoch `epoch`, 0: unknown) and returns the
  /// issues it starts. `numerics` is the probes' event for this step, if
  /// any. Each issue is reported when it starts; while it persists it is
  /// not reported again, and after it clears it is reported again only
  /// reportInterval steps after its previous report. Steps count batches
  /// (micro-batches with gradient accumulation): the loss is judged on
  /// every one, overflow, the scale and underflow on optimizer steps.
  std::vector<StabilityReport> observe(int64_t step, const StepResult &result,
                                       const NumericsEvent *numerics = nullptr,
                                       int64_t epoch = 0);

  /// Steps on which the checks were not run (--monitor=off) are still
  /// recorded for the stats file.
  void record(int64_t step, const StepResult &result, int64_t epoch = 0);

  void recordPrecisionChange(int64_t step, std::string change,
                             std::vector<std::string> keptF32 = {});

  /// The whole run, in step order.
  const std::vector<StepRecord> &steps() const { return history; }
  const std::vector<StabilityReport> &reports() const { return reported; }
  const std::vector<PrecisionChange> &precisionChanges() const {
    return changes;
  }
  /// Steps on which `issue`'s condition held (reported or not).
  int64_t stepsWith(StabilityIssue issue) const {
    return state[static_cast<size_t>(issue)].steps;
  }

  /// Continues a run whose earlier steps, reports and precision changes
  /// were saved (a resumed run): the history is restored, the windows
  /// refilled from it.
  void restore(std::vector<StepRecord> steps,
               std::vector<StabilityReport> reports,
               std::vector<PrecisionChange> changes);

  /// One line on the whole run: "monitor: no stability issues in 66
  /// steps", or each issue with the steps it held on and its first report.
  std::string summary() const;

private:
  struct IssueState {
    bool active = false;
    int64_t lastReport = INT64_MIN / 2;
    int64_t steps = 0;
  };
  /// Notes whether `issue`'s condition holds at `step`; true when it is to
  /// be reported now.
  bool update(StabilityIssue issue, bool holds, int64_t step);
  /// observe's judgements into `out`: of the loss (every step), and of an
  /// optimizer step's update (repeated overflow, the scale's floor,
  /// underflow).
  void judgeLoss(int64_t step, const StepResult &result,
                 const NumericsEvent *numerics,
                 std::vector<StabilityReport> &out);
  void judgeUpdate(int64_t step, const StepResult &result,
                   const NumericsEvent *numerics,
                   std::vector<StabilityReport> &out);
  /// A report of `issue`; an overflow's names where its inf/nan began.
  void addReport(std::vector<StabilityReport> &out, int64_t step,
                 StabilityIssue issue, std::string message, bool overflow,
                 const NumericsEvent *numerics) const;
  static StepRecord recordOf(int64_t step, const StepResult &result,
                             int64_t epoch);
  void remember(const StepRecord &record);
  double medianLoss() const;

  MonitorOptions opts;
  bool probes = false;
  std::vector<StepRecord> history;
  std::vector<StabilityReport> reported;
  std::vector<PrecisionChange> changes;
  // Windows: finite losses of the last historyLength steps, skipped flags
  // of the last overflowWindow steps, and the current run of stepped
  // steps whose gradient norm was (near) zero.
  std::deque<float> recentLosses;
  std::deque<bool> recentSkips;
  int64_t skipsInWindow = 0;
  int64_t zeroNormRun = 0;
  std::array<IssueState, kNumStabilityIssues> state;
};

} // namespace mp

#endif // MP_SESSION_MONITOR_H
