//===- CpuBackend.cpp - a session's buffers in host memory ----------------===//

#include "StepBackend.h"

#include "mp/Session/JitEntry.h"

namespace mp {

StepBackend::~StepBackend() = default;

namespace {

class CpuBackend : public StepBackend {
public:
  CpuBackend(const CompiledEntries &entries, const TrainingState &training)
      : entries(entries) {
    if (!entries.inPlaceUpdates) {
      nextParams = training.params;
      nextState = training.state;
    }
    if (!entries.accumulateInPlace)
      nextSums = training.sums;
  }

  bool trainStep(TrainingState &training, const float *x, const float *labels,
                 StepResult &result, std::string &error) override {
    bool inPlace = entries.inPlaceUpdates;
    PackedArgs args;
    addLossArgs(args, training, x, labels);
    for (HostTensor &s : training.state)
      args.addMemRef(s.data.data(), s.shape);
    StepState &scalars = training.scalars;
    args.addMemRef(&scalars.step, {});
    args.addMemRef(&scalars.scale, {});
    args.addMemRef(&scalars.growthTracker, {});
    if (entries.window > 1)
      addWindow(args, training.sums, scalars);
    for (HostTensor &p : inPlace ? training.params : nextParams)
      args.addMemRef(p.data.data(), p.shape);
    for (HostTensor &s : inPlace ? training.state : nextState)
      args.addMemRef(s.data.data(), s.shape);
    StepState next;
    int32_t stepped = 0;
    args.addMemRef(&next.step, {});
    args.addMemRef(&next.scale, {});
    args.addMemRef(&next.growthTracker, {});
    args.addMemRef(&result.loss, {});
    args.addMemRef(&stepped, {});
    args.addMemRef(&result.gradNorm, {});
    {
      StepThreads threads;
      entries.train(args.get().data());
    }
    if (!inPlace) {
      std::swap(training.params, nextParams);
      std::swap(training.state, nextState);
    }
    finishStep(training, next, stepped, result);
    for (HostTensor &sum : training.sums)
      std::fill(sum.data.begin(), sum.data.end(), 0.0f);
    return true;
  }

  bool accumulate(TrainingState &training, const float *x, const float *labels,
                  StepResult &result, std::string &error) override {
    bool inPlace = entries.accumulateInPlace;
    PackedArgs args;
    addLossArgs(args, training, x, labels);
    StepState &scalars = training.scalars;
    args.addMemRef(&scalars.scale, {});
    addWindow(args, training.sums, scalars);
    StepState next = scalars;
    addWindow(args, inPlace ? training.sums : nextSums, next);
    args.addMemRef(&result.loss, {});
    {
      StepThreads threads;
      entries.accumulate(args.get().data());
    }
    if (!inPlace)
      std::swap(training.sums, nextSums);
    scalars.windowOverflow = next.windowOverflow;
    scalars.windowAmax = next.windowAmax;
    return true;
  }

  bool predict(TrainingState &training, const float *x, float *logits,
               std::string &error) override {
    PackedArgs args;
    args.addMemRef(const_cast<float *>(x), entries.inputShape);
    for (HostTensor &p : training.params)
      args.addMemRef(p.data.data(), p.shape);
    args.addMemRef(logits, {entries.batch, entries.classes});
    {
      StepThreads threads;
      entries.predict(args.get().data());
    }
    return true;
  }

private:
  /// The loss's arguments as both entries take them first: the batch and
  /// the parameters.
  void addLossArgs(PackedArgs &args, TrainingState &training, const float *x,
                   const float *labels) {
    args.addMemRef(const_cast<float *>(x), entries.inputShape);
    args.addMemRef(const_cast<float *>(labels),
                   {entries.batch, entries.classes});
    for (HostTensor &p : training.params)
      args.addMemRef(p.data.data(), p.shape);
  }

  /// The window's state as the entries take it: the sums, then the
  /// overflow flag and the amax where the step has them.
  void addWindow(PackedArgs &args, std::vector<HostTensor> &sums,
                 StepState &scalars) {
    for (HostTensor &s : sums)
      args.addMemRef(s.data.data(), s.shape);
    if (entries.windowOverflow)
      args.addMemRef(&scalars.windowOverflow, {});
    if (entries.windowAmax)
      args.addMemRef(&scalars.windowAmax, {});
  }

  CompiledEntries entries;
  // Where the step writes the new values unless it may overwrite the old
  // ones (then empty).
  std::vector<HostTensor> nextParams, nextState, nextSums;
};

} // namespace

std::unique_ptr<StepBackend> createCpuBackend(const CompiledEntries &entries,
                                              const TrainingState &training) {
  return std::make_unique<CpuBackend>(entries, training);
}

} // namespace mp
