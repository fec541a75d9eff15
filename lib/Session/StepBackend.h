//===- StepBackend.h - where a session's buffers live -----------*- C++ -*-===//
//
// A session calls its compiled entry points through a backend: the CPU one
// passes the host tensors themselves (and keeps the second set of buffers
// a step writes when it cannot update in place); the CUDA one keeps every
// buffer in device memory and copies between host and device only when the
// host copies are read or were changed. Private to lib/Session.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_SESSION_STEPBACKEND_H
#define MP_LIB_SESSION_STEPBACKEND_H

#include "mp/Session/Session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mp {

class CudaDevice;

class StepBackend {
public:
  virtual ~StepBackend();
  /// One training step: `training` gets the new parameters, state and
  /// scalars (on a device backend, its host copies become stale).
  virtual bool trainStep(TrainingState &training, const void *x,
                         const void *labels, StepResult &result,
                         std::string &error) = 0;
  /// Gradient accumulation: adds a micro-batch's gradients to the window's
  /// sums and state (`training.sums`, the window scalars); `result` gets
  /// the loss. With a window, `trainStep` also takes the sums, and zeroes
  /// them and the window scalars after the update.
  virtual bool accumulate(TrainingState &training, const void *x,
                          const void *labels, StepResult &result,
                          std::string &error) = 0;
  virtual bool predict(TrainingState &training, const void *x, float *logits,
                       std::string &error) = 0;
  /// Brings the host copies of parameters and state up to date before they
  /// are read or written; the caller may change them afterwards.
  virtual void syncToHost(TrainingState &training) {}
  /// True when the buffers live in GPU memory.
  virtual bool onDevice() const { return false; }
  /// The device pool's peak bytes (0 on the CPU).
  virtual uint64_t devicePeakBytes() const { return 0; }

protected:
  /// Takes a step's new scalars (`stepped` as the step returned it),
  /// counting a skipped step.
  static void finishStep(TrainingState &training, StepState next,
                         int32_t stepped, StepResult &result) {
    result.scale = training.scalars.scale;
    next.skipped = training.scalars.skipped + (stepped ? 0 : 1);
    training.scalars = next; // the window scalars start again from zero
    result.stepped = stepped != 0;
  }
};

/// Calls `entries` on host buffers; a step that cannot update in place
/// writes into a second set, swapped in afterwards.
std::unique_ptr<StepBackend> createCpuBackend(const CompiledEntries &entries,
                                              const TrainingState &training);

/// Calls `entries` on device buffers of `device`, one for every argument,
/// allocated here once; null with `error` when the device fails.
std::unique_ptr<StepBackend>
createCudaBackend(std::unique_ptr<CudaDevice> device,
                  const CompiledEntries &entries, const TrainingState &training,
                  std::string &error);

} // namespace mp

#endif // MP_LIB_SESSION_STEPBACKEND_H
