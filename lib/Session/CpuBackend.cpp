//===- CpuBackend.cpp - a session's buffers in host memory ----------------===//

#include "StepBackend.h"

#include "mp/Session/JitEntry.h"

namespace mp {

StepBackend::~StepBackend() = default;

namespace {

class CpuBackend : public StepBackend {
public:
  ~CpuBackend() override {
    releaseCopies();
    releaseStepCopies();
  }

  CpuBackend(const CompiledEntries &entries, const TrainingState &training)
      : entries(entries) {
    if (!entries.inPlaceUpdates) {
      nextParams = training.params;
      nextState = training.state;
    }
    if (!entries.accumulateInPlace)
      nextSums = training.sums;
    // Predictions read the step's copies where those are the same ones (a
    // session that trains and predicts then holds one set).
    for (const CompiledEntries::WeightCopy &c : entries.weightCopies) {
      auto same = llvm::find_if(
          entries.stepCopies, [&](const CompiledEntries::WeightCopy &s) {
            return s.param == c.param && s.elementBytes == c.elementBytes;
          });
      sharedCopies.push_back(same == entries.stepCopies.end()
                                 ? -1
                                 : same - entries.stepCopies.begin());
    }
    predictFromStepCopies = entries.trainCopies && !sharedCopies.empty() &&
                            !llvm::is_contained(sharedCopies, -1);
  }

  bool trainStep(TrainingState &training, const void *x, const void *labels,
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
    StepThreads threads;
    if (entries.trainCopies) {
      // The 16-bit weights the step reads, then where it writes the next
      // (no longer constant for the products).
      makeStepCopies(training);
      releaseStepCopies();
      for (auto [c, bytes] : llvm::zip(entries.stepCopies, stepCopies))
        args.addMemRef(bytes.data(), training.params[c.param].shape);
      for (auto [c, bytes] :
           llvm::zip(entries.stepCopies, inPlace ? stepCopies : nextStepCopies))
        args.addMemRef(bytes.data(), training.params[c.param].shape);
    }
    entries.train(args.get().data());
    if (!inPlace) {
      std::swap(training.params, nextParams);
      std::swap(training.state, nextState);
      std::swap(stepCopies, nextStepCopies);
    }
    finishStep(training, next, stepped, result);
    copiesCurrent = false; // new parameters
    // A session that converts its weights in every step (--weight-copies
    // convert) keeps no 16-bit copies through the steps: the predictions'
    // are made again at the next prediction.
    if (!entries.trainCopies)
      dropCopies();
    for (HostTensor &sum : training.sums)
      std::fill(sum.data.begin(), sum.data.end(), 0.0f);
    return true;
  }

  bool accumulate(TrainingState &training, const void *x, const void *labels,
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

  bool predict(TrainingState &training, const void *x, float *logits,
               std::string &error) override {
    StepThreads threads;
    PackedArgs args;
    args.addMemRef(const_cast<void *>(x), entries.inputShape);
    if (!entries.predictWeights) {
      for (HostTensor &p : training.params)
        args.addMemRef(p.data.data(), p.shape);
    } else {
      if (predictFromStepCopies) {
        makeStepCopies(training);
        declareStepCopies();
      } else {
        makeWeightCopies(training);
      }
      for (const CompiledEntries::PredictArgument &a :
           entries.predictArguments) {
        const HostTensor &p =
            training
                .params[a.copy ? entries.weightCopies[a.index].param : a.index];
        void *data =
            !a.copy ? const_cast<float *>(p.data.data())
            : predictFromStepCopies
                ? static_cast<void *>(
                      stepCopies[sharedCopies[a.index]].data())
                : static_cast<void *>(copies[a.index].data());
        args.addMemRef(data, p.shape);
      }
    }
    args.addMemRef(logits, entries.logitsShape);
    entries.predict(args.get().data());
    return true;
  }

  /// The caller may change the parameters from here on: the weight copies
  /// are made again before the next prediction.
  void syncToHost(TrainingState &) override {
    copiesCurrent = false;
    stepCopiesCurrent = false;
  }

private:
  /// The prediction's f16/bf16 weight copies, made from the parameters
  /// unless they are still current (no step and no outside access since).
  void makeWeightCopies(TrainingState &training) {
    if (copiesCurrent)
      return;
    if (copies.empty())
      for (const CompiledEntries::WeightCopy &c : entries.weightCopies)
        copies.emplace_back(training.params[c.param].numElements() *
                            c.elementBytes);
    // Released while they change; declared again once made, so that the
    // products pack each copy once, not on every prediction.
    releaseCopies();
    PackedArgs args;
    for (int64_t i : entries.weightsArguments)
      args.addMemRef(training.params[i].data.data(), training.params[i].shape);
    for (auto [c, bytes] : llvm::zip(entries.weightCopies, copies))
      args.addMemRef(bytes.data(), training.params[c.param].shape);
    entries.predictWeights(args.get().data());
    copiesCurrent = true;
    // (A copy the runtime refuses is still correct, only repacked.)
    for (std::vector<uint8_t> &bytes : copies)
      mprt_gemm_declare_constant(bytes.data(), bytes.size());
  }

  /// The step's 16-bit weight copies, made from the parameters unless the
  /// last step wrote them and nothing touched the parameters since.
  void makeStepCopies(TrainingState &training) {
    if (stepCopies.empty())
      for (const CompiledEntries::WeightCopy &c : entries.stepCopies) {
        size_t bytes = training.params[c.param].numElements() * c.elementBytes;
        stepCopies.emplace_back(bytes);
        if (!entries.inPlaceUpdates)
          nextStepCopies.emplace_back(bytes);
      }
    if (stepCopiesCurrent)
      return;
    releaseStepCopies();
    PackedArgs args;
    for (const CompiledEntries::WeightCopy &c : entries.stepCopies)
      args.addMemRef(training.params[c.param].data.data(),
                     training.params[c.param].shape);
    for (auto [c, bytes] : llvm::zip(entries.stepCopies, stepCopies))
      args.addMemRef(bytes.data(), training.params[c.param].shape);
    entries.trainCopies(args.get().data());
    stepCopiesCurrent = true;
  }

  /// The step's copies read by predictions: constant until the next step
  /// (or outside access) changes them, so the products pack them once.
  void declareStepCopies() {
    if (stepCopiesDeclared)
      return;
    for (std::vector<uint8_t> &bytes : stepCopies)
      mprt_gemm_declare_constant(bytes.data(), bytes.size());
    stepCopiesDeclared = true;
  }

  void releaseStepCopies() {
    if (!stepCopiesDeclared)
      return;
    for (std::vector<uint8_t> &bytes : stepCopies)
      mprt_gemm_release_constant(bytes.data());
    stepCopiesDeclared = false;
  }

  /// Releasing a range that was never declared does nothing.
  void releaseCopies() {
    for (std::vector<uint8_t> &bytes : copies)
      mprt_gemm_release_constant(bytes.data());
  }

  void dropCopies() {
    releaseCopies();
    copies = {};
  }

  /// The loss's arguments as both entries take them first: the batch and
  /// the parameters.
  void addLossArgs(PackedArgs &args, TrainingState &training, const void *x,
                   const void *labels) {
    args.addMemRef(const_cast<void *>(x), entries.inputShape);
    args.addMemRef(const_cast<void *>(labels), entries.labelShape);
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
  std::vector<std::vector<uint8_t>> copies;
  bool copiesCurrent = false;
  // The step's copies (and, without in-place updates, where it writes the
  // next ones); current after every step.
  std::vector<std::vector<uint8_t>> stepCopies, nextStepCopies;
  bool stepCopiesCurrent = false, stepCopiesDeclared = false;
  // For each prediction copy, the step copy it is (-1: none); all found:
  // predictions read the step's copies.
  std::vector<int64_t> sharedCopies;
  bool predictFromStepCopies = false;
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
