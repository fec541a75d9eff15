//===- PrecisionRepair.h - self-healing precision for a run -----*- C++ -*-===//
//
// A mixed-precision run whose steps keep failing in a way loss scaling
// cannot cure (the loss itself is inf/nan, or a step overflows at the
// scale's floor) is repaired in process: the batch that failed runs once
// more in a CPU session with numerics probes (--check-numerics), the first
// f16/bf16 value that held inf/nan names the op to keep in f32 (or, when
// that op is kept already, the ops that read its large result), and this
// repeats until the batch runs clean in the training step and in
// mp.predict. The session is then compiled again with those ops kept in
// f32 (Session::keepInF32) and continues from its state before the
// trouble: parameters and optimizer state (failed steps were skipped, so
// they are unchanged) with the loss scale and growth tracker of the last
// good step. docs/training.md describes it.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_PRECISIONREPAIR_H
#define MP_SESSION_PRECISIONREPAIR_H

#include "mp/Session/Session.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mp {

/// --auto-precision-repair: Auto is on for --precision auto and off
/// otherwise.
enum class RepairMode { Auto, Off, On };

/// Parses "off" and "on" (the flag's values; Auto is its absence).
bool parseRepairMode(llvm::StringRef text, RepairMode &mode,
                     std::string &error);

struct RepairOptions {
  RepairMode mode = RepairMode::Auto;
  /// A failed step is an optimizer step skipped with an inf/nan loss, or
  /// skipped at the loss scale's floor (`minScale`). A repair starts after
  /// `consecutive` failed steps in a row, or `limit` within the last
  /// `window` optimizer steps.
  int64_t consecutive = 3;
  int64_t window = 8;
  int64_t limit = 4;
  float minScale = 1;
  /// Probe rounds of one repair (each compiles a probe session).
  int64_t maxRounds = 16;
  /// Repairs in a run; after them the run goes on as it is.
  int64_t maxRepairs = 4;
};

/// False with an error naming the option when `options` make no sense.
bool validateRepairOptions(const RepairOptions &options, std::string &error);

/// Whether a session compiled with `options` is repaired under `mode`:
/// Auto and On repair f16 and bf16 runs whose steps skip inf/nan
/// gradients (any loss scaling). On is an error (with the reason) where a
/// repair cannot work: an f32 run has nothing to repair, and a run without
/// loss scaling applies inf/nan updates, so no good state survives them.
bool repairApplies(RepairMode mode, const TrainOptions &options,
                   bool automaticPrecision, bool &applies, std::string &error);

/// Decides when a repair is due from the steps' results; pure logic.
class RepairTrigger {
public:
  explicit RepairTrigger(const RepairOptions &options) : opts(options) {}

  /// Step `result`, run from the scalars `before`. True when this step
  /// completes a trigger (and the trigger starts afresh).
  bool observe(const StepState &before, const StepResult &result);
  /// The scalars before the first failed step of the trouble that
  /// triggered (what the run continues from).
  const StepState &troubleStart() const { return start; }
  /// Forgets the steps seen so far (after a repair).
  void reset();

private:
  RepairOptions opts;
  std::deque<bool> recent; // failed, per optimizer step of the window
  int64_t failedInWindow = 0, failedInARow = 0;
  bool windowLossNonfinite = false; // a micro-batch of this window
  StepState start;
};

/// An op the repair keeps in f32, and why.
struct RepairedOp {
  std::string location; // FILE:LINE:COL
  std::string op;       // "linalg.generic"
  std::string function; // where the probe saw it: "train_step", "predict"
  /// The op's own f16/bf16 output held inf/nan; else it reads the large
  /// result of the op at `reads`, kept in f32 already.
  std::string reads;
};

/// What a repair did.
struct RepairReport {
  /// The step that triggered it (steps count from 1 over the run).
  int64_t step = 0;
  bool repaired = false;
  /// Ops now kept in f32, in the order the probes found them.
  std::vector<RepairedOp> kept;
  int64_t rounds = 0;
  double seconds = 0;
  /// The loss scale the run continues with.
  float scale = 1;
  /// Without a repair: why (the failure is not one of f16/bf16 range, or
  /// the probes could not reproduce it); after the run's last allowed
  /// repair, that it stops.
  std::string reason;

  /// One line: "precision repair at step 12: kept in f32 ...".
  std::string line() const;
  /// The locations of `kept`.
  std::vector<std::string> locations() const;
};

class PrecisionRepairer {
public:
  /// Null (no error) when the session is not to be repaired; null with
  /// `error` when options.mode is On and a repair cannot work.
  static std::unique_ptr<PrecisionRepairer>
  create(Session &session, const RepairOptions &options, std::string &error);

  /// After each step of the run, with its batch and the scalars it started
  /// from: true when a repair is due (repair() then runs it).
  bool afterStep(const StepState &before, const StepResult &result,
                 const float *x, const float *labels);
  /// Finds the ops to keep in f32, recompiles the session with them and
  /// restores the state before the trouble. False with `error` only when
  /// the session failed (compiling); a repair that finds nothing to do
  /// says why in `report` and the run goes on.
  bool repair(int64_t step, RepairReport &report, std::string &error);

  /// False once the run's repairs are used up or one found nothing to fix.
  bool active() const { return enabled; }

private:
  PrecisionRepairer(Session &session, const RepairOptions &options)
      : session(session), opts(options), trigger(options) {}
  /// One probe round: the batch through a probe session with the pins
  /// `kept`; the first f16/bf16 inf/nan, if any, in `site`.
  bool probe(const std::vector<std::string> &kept,
             std::optional<ProbeSite> &site, std::string &error);
  /// After the probe rounds: recompiles the session with the ops found,
  /// or gives up repairing when there are none or no cure.
  bool applyRepair(RepairReport &report, std::string &error);

  Session &session;
  RepairOptions opts;
  RepairTrigger trigger;
  bool enabled = true;
  int64_t repairs = 0;
  // The batch of the last failed step, and the scale it ran with.
  std::vector<float> x, labels;
  float failedScale = 1;
};

} // namespace mp

#endif // MP_SESSION_PRECISIONREPAIR_H
