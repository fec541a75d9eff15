//===- CudaBackend.cpp - a session's buffers in GPU memory ----------------===//
//
// Parameters, optimizer state and the step's scalars stay in device memory
// between calls; the host copies are refreshed only when asked for
// (syncToHost) and sent back before the next call after that.
//
//===----------------------------------------------------------------------===//

#include "StepBackend.h"

#include "mp/Session/CudaDevice.h"
#include "mp/Session/JitEntry.h"

namespace mp {
namespace {

class CudaBackend : public StepBackend {
public:
  CudaBackend(std::unique_ptr<CudaDevice> device,
              const CompiledEntries &entries)
      : cuda(std::move(device)), entries(entries),
        inPlaceUpdates(entries.inPlaceUpdates) {}

  ~CudaBackend() override {
    Buffers &d = buffers;
    for (auto *list : {&d.params, &d.state, &d.nextParams, &d.nextState})
      if (!inPlaceUpdates || list == &d.params || list == &d.state)
        for (void *buffer : *list)
          cuda->release(buffer);
    for (auto *list : {&d.sums, &d.nextSums})
      if (!entries.accumulateInPlace || list == &d.sums)
        for (void *buffer : *list)
          cuda->release(buffer);
    for (void *buffer :
         {d.x, d.labels, d.logits, d.step, d.scale, d.tracker, d.nextStep,
          d.nextScale, d.nextTracker, d.loss, d.stepped, d.gradNorm, d.overflow,
          d.amax, d.nextOverflow, d.nextAmax})
      cuda->release(buffer);
  }

  /// Device buffers for every entry argument, allocated once.
  bool allocate(const TrainingState &training, std::string &error) {
    auto bytes = [](const HostTensor &t) {
      return static_cast<size_t>(t.numElements()) * sizeof(float);
    };
    Buffers &d = buffers;
    for (const HostTensor &p : training.params)
      d.params.push_back(cuda->allocate(bytes(p)));
    for (const HostTensor &s : training.state)
      d.state.push_back(cuda->allocate(bytes(s)));
    if (inPlaceUpdates) {
      d.nextParams = d.params;
      d.nextState = d.state;
    } else {
      for (const HostTensor &p : training.params)
        d.nextParams.push_back(cuda->allocate(bytes(p)));
      for (const HostTensor &s : training.state)
        d.nextState.push_back(cuda->allocate(bytes(s)));
    }
    for (const HostTensor &sum : training.sums)
      d.sums.push_back(cuda->allocate(bytes(sum)));
    if (entries.accumulateInPlace)
      d.nextSums = d.sums;
    else
      for (const HostTensor &sum : training.sums)
        d.nextSums.push_back(cuda->allocate(bytes(sum)));
    d.x = cuda->allocate(entries.inputBytes());
    d.labels = cuda->allocate(entries.labelBytes());
    d.logits = cuda->allocate(entries.logitsBytes());
    for (void **scalar :
         {&d.step, &d.scale, &d.tracker, &d.nextStep, &d.nextScale,
          &d.nextTracker, &d.loss, &d.stepped, &d.gradNorm, &d.overflow,
          &d.amax, &d.nextOverflow, &d.nextAmax})
      *scalar = cuda->allocate(sizeof(int32_t));
    deviceStale = true; // parameters are initialised on the host
    return cuda->check(error);
  }

  bool onDevice() const override { return true; }
  uint64_t devicePeakBytes() const override { return cuda->poolPeakBytes(); }

  void syncToHost(TrainingState &training) override {
    if (hostStale) {
      for (size_t i = 0; i < training.params.size(); ++i)
        cuda->download(training.params[i].data.data(), buffers.params[i],
                       training.params[i].data.size() * sizeof(float));
      for (size_t i = 0; i < training.state.size(); ++i)
        cuda->download(training.state[i].data.data(), buffers.state[i],
                       training.state[i].data.size() * sizeof(float));
      for (size_t i = 0; i < training.sums.size(); ++i)
        cuda->download(training.sums[i].data.data(), buffers.sums[i],
                       training.sums[i].data.size() * sizeof(float));
      hostStale = false;
    }
    // The caller holds references to the host copies and may change them
    // (also when they were already current): upload before the next call.
    deviceStale = true;
  }

  bool trainStep(TrainingState &training, const void *x, const void *labels,
                 StepResult &result, std::string &error) override {
    syncToDevice(training);
    cuda->setTf32(entries.tf32); // process-wide: sessions may differ
    Buffers &d = buffers;
    StepState &scalars = training.scalars;
    uploadBatch(x, labels);
    cuda->upload(d.step, &scalars.step, sizeof(int32_t));
    cuda->upload(d.scale, &scalars.scale, sizeof(float));
    cuda->upload(d.tracker, &scalars.growthTracker, sizeof(int32_t));
    if (entries.window > 1) // each upload waits for the stream
      uploadWindowScalars(scalars);
    PackedArgs args;
    addLossArgs(args, training);
    for (size_t i = 0; i < training.state.size(); ++i)
      args.addMemRef(d.state[i], training.state[i].shape);
    args.addMemRef(d.step, {});
    args.addMemRef(d.scale, {});
    args.addMemRef(d.tracker, {});
    if (entries.window > 1)
      addWindow(args, training, d.sums, d.overflow, d.amax);
    for (size_t i = 0; i < training.params.size(); ++i)
      args.addMemRef(d.nextParams[i], training.params[i].shape);
    for (size_t i = 0; i < training.state.size(); ++i)
      args.addMemRef(d.nextState[i], training.state[i].shape);
    for (void *scalar : {d.nextStep, d.nextScale, d.nextTracker, d.loss,
                         d.stepped, d.gradNorm})
      args.addMemRef(scalar, {});
    entries.train(args.get().data());
    StepState next;
    int32_t stepped = 0;
    cuda->download(&next.step, d.nextStep, sizeof(int32_t));
    cuda->download(&next.scale, d.nextScale, sizeof(float));
    cuda->download(&next.growthTracker, d.nextTracker, sizeof(int32_t));
    cuda->download(&result.loss, d.loss, sizeof(float));
    cuda->download(&stepped, d.stepped, sizeof(int32_t));
    cuda->download(&result.gradNorm, d.gradNorm, sizeof(float));
    if (!cuda->check(error))
      return false;
    // The new parameters and state stay on the device: swap the buffers
    // (nothing to swap when the step wrote over the old ones).
    if (!inPlaceUpdates) {
      std::swap(d.params, d.nextParams);
      std::swap(d.state, d.nextState);
    }
    hostStale = true;
    finishStep(training, next, stepped, result);
    // The next window starts from zero sums (host copies and device).
    for (size_t i = 0; i < training.sums.size(); ++i) {
      HostTensor &sum = training.sums[i];
      std::fill(sum.data.begin(), sum.data.end(), 0.0f);
      cuda->upload(d.sums[i], sum.data.data(), sum.data.size() * sizeof(float));
    }
    return cuda->check(error);
  }

  bool accumulate(TrainingState &training, const void *x, const void *labels,
                  StepResult &result, std::string &error) override {
    syncToDevice(training);
    cuda->setTf32(entries.tf32);
    Buffers &d = buffers;
    StepState &scalars = training.scalars;
    uploadBatch(x, labels);
    cuda->upload(d.scale, &scalars.scale, sizeof(float));
    uploadWindowScalars(scalars);
    PackedArgs args;
    addLossArgs(args, training);
    args.addMemRef(d.scale, {});
    addWindow(args, training, d.sums, d.overflow, d.amax);
    addWindow(args, training, d.nextSums, d.nextOverflow, d.nextAmax);
    args.addMemRef(d.loss, {});
    entries.accumulate(args.get().data());
    cuda->download(&scalars.windowOverflow, d.nextOverflow, sizeof(int32_t));
    cuda->download(&scalars.windowAmax, d.nextAmax, sizeof(float));
    cuda->download(&result.loss, d.loss, sizeof(float));
    if (!cuda->check(error))
      return false;
    if (!entries.accumulateInPlace)
      std::swap(d.sums, d.nextSums);
    hostStale = true;
    return true;
  }

  bool predict(TrainingState &training, const void *x, float *logits,
               std::string &error) override {
    syncToDevice(training);
    cuda->setTf32(entries.tf32);
    Buffers &d = buffers;
    cuda->upload(d.x, x, entries.inputBytes());
    PackedArgs args;
    args.addMemRef(d.x, entries.inputShape);
    for (size_t i = 0; i < training.params.size(); ++i)
      args.addMemRef(d.params[i], training.params[i].shape);
    args.addMemRef(d.logits, entries.logitsShape);
    entries.predict(args.get().data());
    cuda->download(logits, d.logits, entries.logitsBytes());
    return cuda->check(error);
  }

private:
  void uploadBatch(const void *x, const void *labels) {
    cuda->upload(buffers.x, x, entries.inputBytes());
    cuda->upload(buffers.labels, labels, entries.labelBytes());
  }
  /// The loss's arguments as both entries take them first: the batch (just
  /// uploaded) and the parameters.
  void addLossArgs(PackedArgs &args, const TrainingState &training) {
    args.addMemRef(buffers.x, entries.inputShape);
    args.addMemRef(buffers.labels, entries.labelShape);
    for (size_t i = 0; i < training.params.size(); ++i)
      args.addMemRef(buffers.params[i], training.params[i].shape);
  }
  void uploadWindowScalars(const StepState &scalars) {
    cuda->upload(buffers.overflow, &scalars.windowOverflow, sizeof(int32_t));
    cuda->upload(buffers.amax, &scalars.windowAmax, sizeof(float));
  }
  /// The window's state as the entries take it: the sums, then the
  /// overflow flag and the amax where the step has them.
  void addWindow(PackedArgs &args, const TrainingState &training,
                 const std::vector<void *> &sums, void *overflow, void *amax) {
    for (size_t i = 0; i < sums.size(); ++i)
      args.addMemRef(sums[i], training.sums[i].shape);
    if (entries.windowOverflow)
      args.addMemRef(overflow, {});
    if (entries.windowAmax)
      args.addMemRef(amax, {});
  }

  /// Sends host copies the caller may have changed back to the device.
  void syncToDevice(const TrainingState &training) {
    if (!deviceStale)
      return;
    for (size_t i = 0; i < training.params.size(); ++i)
      cuda->upload(buffers.params[i], training.params[i].data.data(),
                   training.params[i].data.size() * sizeof(float));
    for (size_t i = 0; i < training.state.size(); ++i)
      cuda->upload(buffers.state[i], training.state[i].data.data(),
                   training.state[i].data.size() * sizeof(float));
    for (size_t i = 0; i < training.sums.size(); ++i)
      cuda->upload(buffers.sums[i], training.sums[i].data.data(),
                   training.sums[i].data.size() * sizeof(float));
    deviceStale = false;
  }

  std::unique_ptr<CudaDevice> cuda;
  CompiledEntries entries;
  bool inPlaceUpdates;
  struct Buffers {
    std::vector<void *> params, state, nextParams, nextState;
    // Gradient accumulation: the window's sums and scalars.
    std::vector<void *> sums, nextSums;
    void *overflow = nullptr, *amax = nullptr;
    void *nextOverflow = nullptr, *nextAmax = nullptr;
    void *x = nullptr, *labels = nullptr, *logits = nullptr;
    // 0-d buffers: the step's scalar inputs and results.
    void *step = nullptr, *scale = nullptr, *tracker = nullptr;
    void *nextStep = nullptr, *nextScale = nullptr, *nextTracker = nullptr;
    void *loss = nullptr, *stepped = nullptr, *gradNorm = nullptr;
  } buffers;
  bool hostStale = false;   // the device has newer parameters/state
  bool deviceStale = false; // the host copies may have been changed
};

} // namespace

std::unique_ptr<StepBackend>
createCudaBackend(std::unique_ptr<CudaDevice> device,
                  const CompiledEntries &entries, const TrainingState &training,
                  std::string &error) {
  auto backend = std::make_unique<CudaBackend>(std::move(device), entries);
  if (!backend->allocate(training, error))
    return nullptr;
  return backend;
}

} // namespace mp
