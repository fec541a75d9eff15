//===- Stats.h - a training run's history as a JSON file --------*- C++ -*-===//
//
// The stats file (`mp-run train --stats FILE`) that people plot a run from
// (scripts/plot_training.py). Version 1 of its schema (docs/training.md):
//
//   {"version": 1, "model": "...", "precision": "f16", "loss_scale": "dynamic",
//    "monitor": {"checks": true, "history": 100, "spike_factor": 10,
//                "overflow_window": 50, "overflow_limit": 5,
//                "underflow_steps": 5},
//    "steps": [{"step": 1, "epoch": 1, "loss": 2.3, "grad_norm": 1.5,
//               "scale": 65536, "skipped": false, "optimizer_step": true},
//              ...],   (a micro-batch that only accumulated: optimizer_step
//                       false, grad_norm null, skipped false)
//    "reports": [{"step": 5, "issue": "repeated-overflow", "message": "...",
//                 "op": "..."}, ...],                    ("op" when known)
//    "precision_changes": [{"step": 40, "change": "...", "kept_f32":
//                           ["model.mlir:62:8", ...]}, ...],
//    "epochs": [{"epoch": 1, "loss": 0.9, "accuracy": 91.2, "skipped": 0,
//                "scale": 65536}, ...]}                  (accuracy or null)
//
// JSON has no NaN or infinity: a non-finite number is written as the
// string "nan", "inf" or "-inf".
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_STATS_H
#define MP_SESSION_STATS_H

#include "mp/Session/Monitor.h"
#include "mp/Session/Trainer.h"

#include <string>
#include <vector>

namespace mp {

constexpr int64_t kStatsVersion = 1;

/// What the stats file says about the run besides its steps.
struct StatsHeader {
  std::string model, precision, lossScale;
  /// Whether the monitor's checks ran (--monitor), and with what options.
  bool checks = true;
  MonitorOptions options;
};

/// The precision and loss scaling a session trains with, as stats files
/// name them ("f16", "dynamic", "static:1024", "none").
StatsHeader describeRun(const std::string &model, const TrainOptions &options);

/// Writes the header, the monitor's history, reports and precision changes
/// and `epochs` to `path` atomically (a temporary file renamed over it), so
/// that a run killed at any moment leaves the previous complete file.
bool writeStats(const std::string &path, const StatsHeader &header,
                const StabilityMonitor &monitor,
                const std::vector<EpochReport> &epochs, std::string &error);

/// What readStats gives back (a resumed run continues it).
struct StatsContents {
  std::vector<StepRecord> steps;
  std::vector<StabilityReport> reports;
  std::vector<PrecisionChange> precisionChanges;
  std::vector<EpochReport> epochs;
};

/// Reads a stats file writeStats wrote; false with an error naming the
/// file and what is wrong with it.
bool readStats(const std::string &path, StatsContents &contents,
               std::string &error);

} // namespace mp

#endif // MP_SESSION_STATS_H
