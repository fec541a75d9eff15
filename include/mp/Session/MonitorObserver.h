//===- MonitorObserver.h - the stability monitor on a trainer ---*- C++ -*-===//
//
// Connects a StabilityMonitor to mp::Trainer's steps: each step's result
// (and, with --check-numerics, the numerics checker's event of the step)
// goes to the monitor, its reports to a callback, and the stats file is
// written at every epoch's end. mp-run, the C API and Python use it alike.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_MONITOROBSERVER_H
#define MP_SESSION_MONITOROBSERVER_H

#include "mp/Session/Monitor.h"
#include "mp/Session/Stats.h"
#include "mp/Session/Trainer.h"

#include <functional>
#include <memory>
#include <string>

namespace mp {

class NumericsChecker;

struct MonitorConfig {
  /// Run the checks (--monitor=on); off, the steps are still recorded for
  /// the stats file.
  bool checks = true;
  MonitorOptions options;
  /// Where the stats file goes ("": none), and what it says of the run.
  std::string statsPath;
  StatsHeader header;
  /// The checker of a session with probes (--check-numerics): reports name
  /// the op it found first in the step. Not owned.
  const NumericsChecker *numerics = nullptr;
  /// Gets each report as it is made.
  std::function<void(const StabilityReport &)> onReport;
};

class MonitorObserver : public RunObserver {
public:
  /// Checks the options and that the stats file can be written (writing
  /// it). A run resumed after `resumedSteps` steps and `resumedEpochs`
  /// whole epochs continues the history of an existing stats file, without
  /// what it holds after that step. Null with `error` on failure. Each hook
  /// calls `next`'s (if any) first.
  static std::unique_ptr<MonitorObserver>
  create(MonitorConfig config, RunObserver *next, int64_t resumedSteps,
         int64_t resumedEpochs, std::string &error);
  /// Same, where `trainer` starts (at step 0 unless it resumed).
  static std::unique_ptr<MonitorObserver> create(MonitorConfig config,
                                                 RunObserver *next,
                                                 const Trainer &trainer,
                                                 std::string &error);

  const StabilityMonitor &monitor() const { return stability; }
  StabilityMonitor &monitor() { return stability; }
  const MonitorConfig &config() const { return cfg; }

  /// Writes the stats file now (also at every epoch's end); true without
  /// one.
  bool writeStats(std::string &error) const;

  void beforeEpoch(int64_t epoch) override;
  void beforeStep(int64_t step) override;
  void afterStep(int64_t step, const StepResult &result) override;
  /// A repair that changed the precision is recorded as a precision change.
  void afterRepair(const RepairReport &report) override;
  bool afterEpoch(const EpochReport &report, std::string &error) override;
  void beforeEvaluation() override;
  void afterEvaluation() override;
  void beforePrediction(int64_t batch) override;
  void afterPrediction(int64_t batch) override;

private:
  MonitorObserver(MonitorConfig config, RunObserver *next)
      : cfg(std::move(config)), next(next), stability(cfg.options) {}

  MonitorConfig cfg;
  RunObserver *next;
  StabilityMonitor stability;
  std::vector<EpochReport> epochs;
  int64_t epoch = 0;
};

} // namespace mp

#endif // MP_SESSION_MONITOROBSERVER_H
