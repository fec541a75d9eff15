//===- Numerics.h - numerics checks over probed outputs ---------*- C++ -*-===//
//
// Observers for the probes --mp-check-numerics inserts: a checker that
// finds, per training step, the first op whose output held inf/nan or left
// FP16's range, and a recorder that keeps every probed tensor of one run so
// an FP32 and a mixed-precision run can be compared op by op.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_NUMERICS_H
#define MP_SESSION_NUMERICS_H

#include "mprt/mprt.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace mp {

/// Largest finite FP16 value.
constexpr double kF16Max = 65504.0;

/// Elements of a probed tensor as doubles (f32, f16, bf16, f64, integers).
std::vector<double> probedValues(const void *data, int64_t numElements,
                                 mprt_dtype dtype);
const char *dtypeName(mprt_dtype dtype);

/// What the checker found in one step: the first op in execution order
/// whose output had inf/nan, or else the first beyond FP16's range.
struct NumericsEvent {
  int64_t step = 0;
  std::string id;
  mprt_dtype dtype = MPRT_DTYPE_F32;
  int64_t nonfinite = 0, numElements = 0;
  double absMax = 0; // over the finite elements
};

class NumericsChecker {
public:
  /// Installs itself as the process-wide probe observer; the observer it
  /// replaces is put back when it pauses or goes.
  NumericsChecker();
  ~NumericsChecker();

  /// Stops / restarts observing (evaluation between training steps).
  void pause();
  void resume();
  /// Numbers the probes that fire from now on as `step`.
  void beginStep(int64_t step);
  /// The step's event, if one of its probes saw inf/nan or |x| > kF16Max.
  bool endStep(NumericsEvent &event);
  /// The same event, for other readers of the step (the stability
  /// monitor): not counted in the summary.
  bool peekStep(NumericsEvent &event) const;
  /// Lines per op: steps where it was the first offender, steps with
  /// inf/nan, steps beyond FP16, largest finite |x|; origins first.
  void printSummary(std::FILE *out) const;

private:
  static void observe(void *user, const char *id, const void *data,
                      int64_t numElements, mprt_dtype dtype);
  struct PerOp {
    int64_t firstSteps = 0; // steps where this op was the event
    int64_t nonfiniteSteps = 0, overRangeSteps = 0;
    double absMax = 0;
    int64_t lastStep = -1, lastOverStep = -1;
    size_t order = 0; // first appearance
  };
  mprt_observer_fn previousFn = nullptr;
  void *previousUser = nullptr;
  int64_t step = 0;
  bool haveNonfinite = false, haveOverRange = false;
  NumericsEvent firstNonfinite, firstOverRange;
  std::map<std::string, PerOp> ops;
};

/// Keeps every probed tensor of a run (as doubles), by probe id.
class ProbeRecorder {
public:
  ProbeRecorder();
  ~ProbeRecorder();
  struct Tensor {
    mprt_dtype dtype;
    std::vector<double> values;
  };
  const std::map<std::string, Tensor> &tensors() const { return recorded; }
  /// Probe ids in the order they first fired.
  const std::vector<std::string> &order() const { return ids; }

private:
  static void observe(void *user, const char *id, const void *data,
                      int64_t numElements, mprt_dtype dtype);
  std::map<std::string, Tensor> recorded;
  std::vector<std::string> ids;
};

/// Prints the ops of `mixed` by relative error against `reference`
/// (norm-wise, ||mixed - ref|| / ||ref||), largest first, at most `top` (0:
/// all). Returns the number of ops compared.
size_t printComparison(const ProbeRecorder &reference,
                       const ProbeRecorder &mixed, size_t top, std::FILE *out);

} // namespace mp

#endif // MP_SESSION_NUMERICS_H
