//===- MonitorObserver.cpp - the stability monitor on a trainer -----------===//

#include "mp/Session/MonitorObserver.h"

#include "mp/Session/Numerics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"

namespace mp {

std::unique_ptr<MonitorObserver> MonitorObserver::create(MonitorConfig config,
                                                         RunObserver *next,
                                                         int64_t resumedSteps,
                                                         int64_t resumedEpochs,
                                                         std::string &error) {
  if (!validateMonitorOptions(config.options, error))
    return nullptr;
  config.header.checks = config.checks;
  config.header.options = config.options;
  std::unique_ptr<MonitorObserver> observer(
      new MonitorObserver(std::move(config), next));
  const MonitorConfig &cfg = observer->cfg;
  observer->stability.setProbesPresent(cfg.numerics != nullptr);
  // A resumed run's file holds the steps before it (and perhaps some the
  // checkpoint lost, which are trained again).
  if (resumedSteps > 0 && !cfg.statsPath.empty() &&
      llvm::sys::fs::exists(cfg.statsPath)) {
    StatsContents saved;
    if (!readStats(cfg.statsPath, saved, error)) {
      error += " (resuming continues it: remove it or give another path)";
      return nullptr;
    }
    auto after = [&](const auto &list, auto stepOf) {
      auto kept = list;
      llvm::erase_if(kept,
                     [&](const auto &x) { return stepOf(x) > resumedSteps; });
      return kept;
    };
    observer->stability.restore(
        after(saved.steps, [](const StepRecord &r) { return r.step; }),
        after(saved.reports, [](const StabilityReport &r) { return r.step; }),
        after(saved.precisionChanges,
              [](const PrecisionChange &c) { return c.step; }));
    for (const EpochReport &e : saved.epochs)
      if (e.epoch <= resumedEpochs)
        observer->epochs.push_back(e);
  }
  if (!observer->writeStats(error))
    return nullptr;
  return observer;
}

std::unique_ptr<MonitorObserver> MonitorObserver::create(MonitorConfig config,
                                                         RunObserver *next,
                                                         const Trainer &trainer,
                                                         std::string &error) {
  const RunPosition &at = trainer.position();
  int64_t steps =
      trainer.resumed() ? at.epoch * trainer.batchesPerEpoch() + at.batch : 0;
  return create(std::move(config), next, steps,
                trainer.resumed() ? at.epoch : 0, error);
}

bool MonitorObserver::writeStats(std::string &error) const {
  return cfg.statsPath.empty() ||
         mp::writeStats(cfg.statsPath, cfg.header, stability, epochs, error);
}

void MonitorObserver::beforeEpoch(int64_t e) {
  if (next)
    next->beforeEpoch(e);
  epoch = e;
}

void MonitorObserver::beforeStep(int64_t step) {
  if (next)
    next->beforeStep(step);
}

void MonitorObserver::afterStep(int64_t step, const StepResult &result) {
  if (next)
    next->afterStep(step, result);
  if (!cfg.checks) {
    stability.record(step, result, epoch);
    return;
  }
  NumericsEvent event;
  bool probed = cfg.numerics && cfg.numerics->peekStep(event);
  for (const StabilityReport &report :
       stability.observe(step, result, probed ? &event : nullptr, epoch))
    if (cfg.onReport)
      cfg.onReport(report);
}

void MonitorObserver::afterRepair(const RepairReport &report) {
  if (next)
    next->afterRepair(report);
  if (report.repaired)
    stability.recordPrecisionChange(report.step, report.line(),
                                    report.locations());
}

bool MonitorObserver::afterEpoch(const EpochReport &report,
                                 std::string &error) {
  if (next && !next->afterEpoch(report, error))
    return false;
  epochs.push_back(report);
  return writeStats(error);
}

void MonitorObserver::beforeEvaluation() {
  if (next)
    next->beforeEvaluation();
}
void MonitorObserver::afterEvaluation() {
  if (next)
    next->afterEvaluation();
}
void MonitorObserver::beforePrediction(int64_t batch) {
  if (next)
    next->beforePrediction(batch);
}
void MonitorObserver::afterPrediction(int64_t batch) {
  if (next)
    next->afterPrediction(batch);
}

} // namespace mp
