//===- PrecisionRepair.cpp - self-healing precision for a run -------------===//

#include "mp/Session/PrecisionRepair.h"

#include "mp/Session/JitEntry.h"
#include "mp/Session/Numerics.h"
#include "mp/Session/PrecisionPins.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace mp {

bool parseRepairMode(llvm::StringRef text, RepairMode &mode,
                     std::string &error) {
  if (text == "on")
    mode = RepairMode::On;
  else if (text == "off")
    mode = RepairMode::Off;
  else {
    error =
        "bad --auto-precision-repair '" + text.str() + "': expected on or off";
    return false;
  }
  return true;
}

bool validateRepairOptions(const RepairOptions &options, std::string &error) {
  if (options.consecutive < 1 || options.window < 1 || options.limit < 1 ||
      options.limit > options.window) {
    error = "precision repair: a repair needs consecutive >= 1 failed steps "
            "in a row, or 1 <= limit <= window failed steps in a window";
    return false;
  }
  if (options.maxRounds < 1 || options.maxRepairs < 1) {
    error = "precision repair: rounds and repairs must be positive";
    return false;
  }
  return true;
}

bool repairApplies(RepairMode mode, const TrainOptions &options,
                   bool automaticPrecision, bool &applies, std::string &error) {
  applies = false;
  if (mode == RepairMode::Off ||
      (mode == RepairMode::Auto && !automaticPrecision) ||
      options.precision == FloatPrecision::F32) // nothing to repair
    return true;
  LossScalingMode scaling;
  if (!resolveLossScale(options.lossScale, options.precision, scaling, error))
    return false;
  if (scaling == LossScalingMode::None) {
    if (mode == RepairMode::Auto) // bf16 by default: no skipped steps
      return true;
    error = "--auto-precision-repair on needs steps that skip inf/nan "
            "gradients, so that the state before a failure survives it: "
            "add --loss-scale dynamic (or adaptive) to this " +
            mlir::mp::stringifyFloatPrecision(options.precision).str() + " run";
    return false;
  }
  applies = true;
  return true;
}

//===----------------------------------------------------------------------===//
// RepairTrigger
//===----------------------------------------------------------------------===//

/// Whether an optimizer step was skipped in a way loss scaling does not
/// cure: for an inf/nan loss (the forward pass overflowed) or at the
/// scale's floor (not for large gradients: a smaller scale follows).
static bool failedBeyondScaling(const StepResult &result, bool nonfinite,
                                float minScale) {
  return !result.stepped && (nonfinite || result.scale <= minScale);
}

bool RepairTrigger::observe(const StepState &before, const StepResult &result) {
  if (!result.optimizerStep) { // a micro-batch: the window decides
    windowLossNonfinite |= !std::isfinite(result.loss);
    return false;
  }
  bool nonfinite = !std::isfinite(result.loss) || windowLossNonfinite;
  windowLossNonfinite = false;
  bool failed = failedBeyondScaling(result, nonfinite, opts.minScale);
  if (failed && failedInWindow == 0)
    start = before; // the trouble begins here
  recent.push_back(failed);
  failedInWindow += failed;
  if (static_cast<int64_t>(recent.size()) > opts.window) {
    failedInWindow -= recent.front();
    recent.pop_front();
  }
  failedInARow = failed ? failedInARow + 1 : 0;
  if (failedInARow < opts.consecutive && failedInWindow < opts.limit)
    return false;
  reset();
  return true;
}

void RepairTrigger::reset() {
  recent.clear();
  failedInWindow = failedInARow = 0;
  windowLossNonfinite = false;
}

//===----------------------------------------------------------------------===//
// RepairReport
//===----------------------------------------------------------------------===//

std::vector<std::string> RepairReport::locations() const {
  std::vector<std::string> out;
  for (const RepairedOp &op : kept)
    out.push_back(op.location);
  return out;
}

std::string RepairReport::line() const {
  std::string text = "precision repair at step " + std::to_string(step) + ": ";
  if (!repaired)
    return text + reason;
  text += "kept in f32: ";
  for (size_t i = 0; i < kept.size(); ++i) {
    const RepairedOp &op = kept[i];
    text += (i ? ", " : "") + op.location + " (";
    text += op.reads.empty() ? op.op + " overflowed in @" + op.function
                             : "reads " + op.reads;
    text += ")";
  }
  char tail[160];
  std::snprintf(tail, sizeof(tail),
                "; %lld probe round%s, %.1f s; continuing with loss scale %g",
                (long long)rounds, rounds == 1 ? "" : "s", seconds, scale);
  text += tail;
  if (!reason.empty())
    text += "; " + reason;
  return text;
}

//===----------------------------------------------------------------------===//
// PrecisionRepairer
//===----------------------------------------------------------------------===//

std::unique_ptr<PrecisionRepairer>
PrecisionRepairer::create(Session &session, const RepairOptions &options,
                          std::string &error) {
  if (!validateRepairOptions(options, error))
    return nullptr;
  const TrainOptions &compiled = session.trainOptions();
  bool applies = false;
  if (!repairApplies(options.mode, compiled,
                     !session.precisionDecision().empty(), applies, error) ||
      !applies)
    return nullptr;
  if (session.modelPath().empty()) {
    if (options.mode == RepairMode::On)
      error = "--auto-precision-repair needs the model (.mlir): an "
              "artifact's precision plan is fixed when it is compiled";
    return nullptr;
  }
  return std::unique_ptr<PrecisionRepairer>(
      new PrecisionRepairer(session, options));
}

bool PrecisionRepairer::afterStep(const StepState &before,
                                  const StepResult &result, const float *xs,
                                  const float *ys) {
  if (!enabled)
    return false;
  // The batch to probe: the last one with an inf/nan loss or skipped at
  // the scale's floor.
  bool keep =
      !std::isfinite(result.loss) || (result.optimizerStep && !result.stepped &&
                                      result.scale <= opts.minScale);
  if (keep) {
    x.assign(xs, xs + session.batchSize() * session.numFeatures());
    labels.assign(ys, ys + session.batchSize() * session.numClasses());
    failedScale = result.scale;
  }
  return trigger.observe(before, result);
}

bool PrecisionRepairer::probe(const std::vector<std::string> &kept,
                              std::optional<ProbeSite> &site,
                              std::string &error) {
  site.reset();
  TrainOptions options = session.trainOptions();
  options.keepF32 = kept;
  options.probes = TrainOptions::Probes::EveryOp;
  options.device = Device::Cpu; // probes run on the CPU
  options.tf32.reset();
  options.accumulate = 1; // the failed batch as one step
  std::unique_ptr<Session> probed =
      Session::create(session.modelPath(), options, error);
  if (!probed)
    return false;
  probed->parameters() = session.parameters();
  probed->optimizerState() = session.optimizerState();
  StepState &scalars = probed->stepState();
  scalars = session.stepState();
  scalars.scale = failedScale;
  scalars.micro = 0;
  scalars.windowOverflow = 0;
  scalars.windowAmax = 0;

  NumericsChecker checker;
  NumericsEvent event;
  auto firstNonfinite = [&](int64_t step, auto run) {
    checker.beginStep(step);
    if (!run())
      return false;
    if (checker.peekStep(event) && event.nonfinite > 0) {
      auto found = probed->probeSites().find(event.id);
      if (found != probed->probeSites().end())
        site = found->second;
    }
    return true;
  };
  StepResult result;
  if (!firstNonfinite(1, [&] {
        return probed->trainStep(x.data(), labels.data(), result, error);
      }))
    return false;
  if (site || !probed->canPredict())
    return true;
  std::vector<float> logits(probed->batchSize() * probed->numClasses());
  return firstNonfinite(
      2, [&] { return probed->predict(x.data(), logits.data(), error); });
}

namespace {

bool isKept(const std::vector<std::string> &kept, const std::string &location) {
  return std::find(kept.begin(), kept.end(), location) != kept.end();
}

/// `site`'s result is f32 already (kept) and overflows where an f16/bf16
/// op reads it: keeps those ops in f32 too. False, saying why in
/// `report.reason`, when no such op is left.
bool keepUsers(const ProbeSite &site, mlir::ModuleOp model,
               std::vector<std::string> &kept, RepairReport &report) {
  std::vector<std::string> users = userLocations(model, site.location);
  size_t before = report.kept.size();
  for (const std::string &user : users)
    if (!isKept(kept, user)) {
      kept.push_back(user);
      report.kept.push_back({user, "", site.function, site.location});
    }
  if (report.kept.size() == before) {
    report.reason = "the result of " + site.location +
                    " (kept in f32) overflows where it is converted, and "
                    "no op that reads it is left to keep in f32";
    return false;
  }
  return true;
}

/// Keeps in f32 what a probe round found at `site` (the first inf/nan):
/// false, saying why in `report.reason`, when keeping ops in f32 cannot
/// cure it.
bool keepSite(const ProbeSite &site, mlir::ModuleOp model,
              std::vector<std::string> &kept, RepairReport &report) {
  if (site.location.empty()) {
    report.reason = "the first inf/nan is in the output of " + site.op +
                    " in @" + site.function +
                    ", which has no source location to keep in f32";
    return false;
  }
  if (!site.lowPrecision) {
    report.reason = "the first inf/nan is an f32 value (" + site.op + " at " +
                    site.location + " in @" + site.function +
                    "): keeping ops in f32 cannot cure it";
    return false;
  }
  if (isKept(kept, site.location))
    return keepUsers(site, model, kept, report);
  kept.push_back(site.location);
  report.kept.push_back({site.location, site.op, site.function, ""});
  return true;
}

} // namespace

bool PrecisionRepairer::repair(int64_t step, RepairReport &report,
                               std::string &error) {
  auto start = std::chrono::steady_clock::now();
  report = RepairReport();
  report.step = step;
  ++repairs;
  std::vector<std::string> kept = session.trainOptions().keepF32;
  // The model as written: where the values of a kept op go next.
  std::unique_ptr<mlir::MLIRContext> context = createSessionContext();
  DiagnosticText diagnostics(context.get());
  mlir::OwningOpRef<mlir::ModuleOp> model =
      parseModel(session.modelPath(), context.get(), diagnostics, error,
                 session.trainOptions().modelBatch);
  if (!model)
    return false;

  for (;;) {
    if (report.rounds == opts.maxRounds) {
      report.reason = "the batch still overflows after " +
                      std::to_string(opts.maxRounds) + " probe rounds";
      break;
    }
    ++report.rounds;
    std::optional<ProbeSite> site;
    if (!probe(kept, site, error))
      return false;
    // No site: the batch runs clean.
    if (!site || !keepSite(*site, *model, kept, report))
      break;
  }
  if (!applyRepair(report, error))
    return false;
  trigger.reset();
  x.clear();
  labels.clear();
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return true;
}

bool PrecisionRepairer::applyRepair(RepairReport &report,
                                    std::string &error) {
  bool clean = report.reason.empty();
  if (report.kept.empty() || !clean) {
    // Nothing found, or no cure: the run goes on as it is, unrepaired.
    if (clean)
      report.reason = "the failed batch runs without inf/nan in f16/bf16 "
                      "when probed: nothing to keep in f32";
    report.kept.clear();
    report.reason += "; precision repair stops for this run";
    enabled = false;
    return true;
  }
  if (!session.keepInF32(report.locations(), error))
    return false;
  // Skipped steps left parameters and optimizer state alone; the scale
  // and its tracker go back to where they were before the trouble.
  StepState &scalars = session.stepState();
  scalars.scale = trigger.troubleStart().scale;
  scalars.growthTracker = trigger.troubleStart().growthTracker;
  report.repaired = true;
  report.scale = scalars.scale;
  if (repairs == opts.maxRepairs) {
    report.reason = "that was the run's last repair (" +
                    std::to_string(opts.maxRepairs) + ")";
    enabled = false;
  }
  return true;
}

} // namespace mp
