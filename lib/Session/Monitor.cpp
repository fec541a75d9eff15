//===- Monitor.cpp - a training run's stability monitor -------------------===//

#include "mp/Session/Monitor.h"

#include "mp/Session/Numerics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mp {

namespace {

/// The loss spike judgement's options: "" or what is wrong.
std::string spikeOptionsProblem(const MonitorOptions &o) {
  if (o.historyLength < 1)
    return "history length must be at least 1 (got " +
           std::to_string(o.historyLength) + ")";
  if (!(o.spikeFactor > 1) || !std::isfinite(o.spikeFactor)) {
    char got[32];
    std::snprintf(got, sizeof(got), "%g", o.spikeFactor);
    return std::string("spike-factor must be a finite number greater "
                       "than 1 (got ") +
           got + ")";
  }
  if (o.minSpikeSteps < 1 || o.minSpikeSteps > o.historyLength)
    return "the steps before spikes are judged must be between 1 and the "
           "history length (" +
           std::to_string(o.historyLength) + "), got " +
           std::to_string(o.minSpikeSteps);
  return "";
}

/// The overflow, underflow, scale floor and report options: "" or what is
/// wrong.
std::string scaleOptionsProblem(const MonitorOptions &o) {
  if (o.overflowWindow < 1)
    return "overflow-window must be at least 1 step (got " +
           std::to_string(o.overflowWindow) + ")";
  if (o.overflowLimit < 1 || o.overflowLimit > o.overflowWindow)
    return "overflow-limit must be between 1 and overflow-window (" +
           std::to_string(o.overflowWindow) + "), got " +
           std::to_string(o.overflowLimit);
  if (!(o.underflowThreshold >= 0))
    return "the underflow threshold must not be negative";
  if (o.underflowSteps < 1)
    return "underflow steps must be at least 1 (got " +
           std::to_string(o.underflowSteps) + ")";
  if (!(o.minScale > 0))
    return "the loss scale's floor must be positive";
  if (o.reportInterval < 0)
    return "the report interval must not be negative";
  return "";
}

} // namespace

bool validateMonitorOptions(const MonitorOptions &o, std::string &error) {
  std::string problem = spikeOptionsProblem(o);
  if (problem.empty())
    problem = scaleOptionsProblem(o);
  if (problem.empty())
    return true;
  error = problem;
  return false;
}

llvm::StringRef stringifyStabilityIssue(StabilityIssue issue) {
  switch (issue) {
  case StabilityIssue::NonFiniteLoss:
    return "nonfinite-loss";
  case StabilityIssue::LossSpike:
    return "loss-spike";
  case StabilityIssue::RepeatedOverflow:
    return "repeated-overflow";
  case StabilityIssue::ScalePinned:
    return "scale-pinned";
  case StabilityIssue::GradientUnderflow:
    return "gradient-underflow";
  }
  return "?";
}

std::optional<StabilityIssue> symbolizeStabilityIssue(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<StabilityIssue>>(name)
      .Case("nonfinite-loss", StabilityIssue::NonFiniteLoss)
      .Case("loss-spike", StabilityIssue::LossSpike)
      .Case("repeated-overflow", StabilityIssue::RepeatedOverflow)
      .Case("scale-pinned", StabilityIssue::ScalePinned)
      .Case("gradient-underflow", StabilityIssue::GradientUnderflow)
      .Default(std::nullopt);
}

std::string formatReport(const StabilityReport &report) {
  return "step " + std::to_string(report.step) + ": " +
         stringifyStabilityIssue(report.issue).str() + ": " + report.message;
}

StabilityMonitor::StabilityMonitor(const MonitorOptions &options)
    : opts(options) {}

namespace {

std::string format(const char *fmt, double a, double b = 0, double c = 0,
                   double d = 0) {
  char text[512];
  std::snprintf(text, sizeof(text), fmt, a, b, c, d);
  return text;
}

/// Where the overflow began, as far as this step's probes know.
std::string overflowSource(bool probes, const NumericsEvent *event) {
  if (!probes)
    return "; rerun with --check-numerics to name the first op whose "
           "output had inf/nan";
  if (!event)
    return "; the numerics probes saw no inf/nan in this step";
  if (event->nonfinite)
    return "; first inf/nan in the output of " + event->id;
  return "; first output beyond FP16's range: " + event->id;
}

} // namespace

bool StabilityMonitor::update(StabilityIssue issue, bool holds, int64_t step) {
  IssueState &s = state[static_cast<size_t>(issue)];
  if (!holds) {
    s.active = false;
    return false;
  }
  ++s.steps;
  if (s.active)
    return false;
  s.active = true;
  if (step - s.lastReport < opts.reportInterval)
    return false;
  s.lastReport = step;
  return true;
}

double StabilityMonitor::medianLoss() const {
  std::vector<float> losses(recentLosses.begin(), recentLosses.end());
  size_t mid = losses.size() / 2;
  std::nth_element(losses.begin(), losses.begin() + mid, losses.end());
  double upper = losses[mid];
  if (losses.size() % 2)
    return upper;
  double lower = *std::max_element(losses.begin(), losses.begin() + mid);
  return (lower + upper) / 2;
}

void StabilityMonitor::remember(const StepRecord &r) {
  history.push_back(r);
  if (std::isfinite(r.loss)) {
    recentLosses.push_back(r.loss);
    if ((int64_t)recentLosses.size() > opts.historyLength)
      recentLosses.pop_front();
  }
  // A micro-batch that only accumulated neither updated nor was skipped.
  if (!r.optimizerStep)
    return;
  recentSkips.push_back(!r.stepped);
  skipsInWindow += !r.stepped;
  if ((int64_t)recentSkips.size() > opts.overflowWindow) {
    skipsInWindow -= recentSkips.front();
    recentSkips.pop_front();
  }
  // Skipped steps say nothing about underflow: they neither count nor
  // break the run of (near) zero gradient norms.
  if (r.stepped)
    zeroNormRun = r.gradNorm <= opts.underflowThreshold ? zeroNormRun + 1 : 0;
}

StepRecord StabilityMonitor::recordOf(int64_t step, const StepResult &result,
                                      int64_t epoch) {
  StepRecord r;
  r.step = step;
  r.epoch = epoch;
  r.loss = result.loss;
  r.gradNorm = result.gradNorm;
  r.scale = result.scale;
  r.stepped = result.stepped;
  r.optimizerStep = result.optimizerStep;
  return r;
}

void StabilityMonitor::record(int64_t step, const StepResult &result,
                              int64_t epoch) {
  remember(recordOf(step, result, epoch));
}

void StabilityMonitor::addReport(std::vector<StabilityReport> &out,
                                 int64_t step, StabilityIssue issue,
                                 std::string message, bool overflow,
                                 const NumericsEvent *numerics) const {
  StabilityReport r{step, issue, std::move(message), ""};
  if (overflow) {
    r.message += overflowSource(probes, numerics);
    if (probes && numerics)
      r.op = numerics->id;
  }
  out.push_back(r);
}

void StabilityMonitor::judgeLoss(int64_t step, const StepResult &result,
                                 const NumericsEvent *numerics,
                                 std::vector<StabilityReport> &out) {
  float loss = result.loss;
  bool finite = std::isfinite(loss);
  // Judged against the steps before this one.
  if (update(StabilityIssue::NonFiniteLoss, !finite, step))
    addReport(out, step, StabilityIssue::NonFiniteLoss,
              std::string("the loss is ") + (std::isnan(loss) ? "nan" : "inf") +
                  (result.stepped ? "" : " (the step was skipped)"),
              true, numerics);

  bool judged = (int64_t)recentLosses.size() >= opts.minSpikeSteps;
  double median = judged ? medianLoss() : 0;
  bool spike =
      finite && judged && median > 0 && loss > opts.spikeFactor * median;
  if (update(StabilityIssue::LossSpike, spike, step))
    addReport(out, step, StabilityIssue::LossSpike,
              format("loss %g is %.1fx the median %g of the last %.0f steps",
                     loss, loss / median, median,
                     (double)recentLosses.size()) +
                  format(" (spike factor %g)", opts.spikeFactor),
              numerics != nullptr, numerics);
}

void StabilityMonitor::judgeUpdate(int64_t step, const StepResult &result,
                                   const NumericsEvent *numerics,
                                   std::vector<StabilityReport> &out) {
  if (update(StabilityIssue::RepeatedOverflow,
             skipsInWindow >= opts.overflowLimit, step))
    addReport(out, step, StabilityIssue::RepeatedOverflow,
              format("%.0f of the last %.0f steps were skipped for inf/nan "
                     "gradients (loss scale %g at this step)",
                     (double)skipsInWindow, (double)recentSkips.size(),
                     result.scale),
              true, numerics);

  // Pinned until a step runs above the floor again.
  bool atFloor = result.scale <= opts.minScale;
  IssueState &pinned = state[static_cast<size_t>(StabilityIssue::ScalePinned)];
  bool pinnedHolds = (!result.stepped && atFloor) || (pinned.active && atFloor);
  if (update(StabilityIssue::ScalePinned, pinnedHolds, step))
    addReport(out, step, StabilityIssue::ScalePinned,
              format("a step was skipped at the loss scale's floor (%g): it "
                     "overflows f16 unscaled (in the forward pass, or with "
                     "gradients that large), so no loss scale can help; keep "
                     "the overflowing op in f32, make the loss smaller (a "
                     "mean, not a sum), or train in bf16",
                     opts.minScale),
              true, numerics);

  // Skipped steps leave the underflow judgement as it was.
  IssueState &under =
      state[static_cast<size_t>(StabilityIssue::GradientUnderflow)];
  bool underHolds =
      result.stepped ? zeroNormRun >= opts.underflowSteps : under.active;
  if (update(StabilityIssue::GradientUnderflow, underHolds, step))
    addReport(out, step, StabilityIssue::GradientUnderflow,
              format("the gradient norm has been %g or less for %.0f stepped "
                     "steps in a row: the gradients underflow to zero; use "
                     "dynamic or adaptive loss scaling, a larger scale, or "
                     "bf16",
                     opts.underflowThreshold, (double)zeroNormRun),
              false, numerics);
}

std::vector<StabilityReport>
StabilityMonitor::observe(int64_t step, const StepResult &result,
                          const NumericsEvent *numerics, int64_t epoch) {
  std::vector<StabilityReport> out;
  judgeLoss(step, result, numerics, out);
  remember(recordOf(step, result, epoch));
  // The rest is about updates: a micro-batch that only accumulated leaves
  // those issues as they were.
  if (result.optimizerStep)
    judgeUpdate(step, result, numerics, out);
  reported.insert(reported.end(), out.begin(), out.end());
  return out;
}

std::string StabilityMonitor::summary() const {
  std::string issues;
  for (size_t i = 0; i < kNumStabilityIssues; ++i) {
    if (!state[i].steps)
      continue;
    auto issue = static_cast<StabilityIssue>(i);
    auto first = llvm::find_if(
        reported, [&](const StabilityReport &r) { return r.issue == issue; });
    issues += (issues.empty() ? "" : ", ") +
              stringifyStabilityIssue(issue).str() + " on " +
              std::to_string(state[i].steps) +
              (state[i].steps == 1 ? " step" : " steps");
    if (first != reported.end())
      issues += " (first at step " + std::to_string(first->step) + ")";
  }
  std::string steps = std::to_string(history.size()) + " steps";
  if (issues.empty())
    return "monitor: no stability issues in " + steps;
  return "monitor: " + steps + ", " + std::to_string(reported.size()) +
         (reported.size() == 1 ? " report: " : " reports: ") + issues;
}

void StabilityMonitor::recordPrecisionChange(int64_t step, std::string change,
                                             std::vector<std::string> keptF32) {
  changes.push_back({step, std::move(change), std::move(keptF32)});
}

void StabilityMonitor::restore(std::vector<StepRecord> steps,
                               std::vector<StabilityReport> reports,
                               std::vector<PrecisionChange> precisionChanges) {
  // Replayed through the checks, so that the windows and the issues'
  // states are those of the run that saved them.
  bool withProbes = probes;
  *this = StabilityMonitor(opts);
  probes = withProbes;
  for (const StepRecord &r : steps) {
    StepResult result;
    result.loss = r.loss;
    result.stepped = r.stepped;
    result.gradNorm = r.gradNorm;
    result.scale = r.scale;
    result.optimizerStep = r.optimizerStep;
    observe(r.step, result, nullptr, r.epoch);
  }
  reported = std::move(reports);
  for (IssueState &s : state)
    s.lastReport = INT64_MIN / 2;
  for (const StabilityReport &r : reported)
    state[static_cast<size_t>(r.issue)].lastReport = r.step;
  changes = std::move(precisionChanges);
}

} // namespace mp
