//===- Session.h - a compiled model that mp-run trains and runs -*- C++ -*-===//
//
// Compiles a model's mp.loss (and mp.predict) function into a training step
// and a prediction function with mp's passes, JIT-compiles them with MLIR's
// ExecutionEngine and calls them on host buffers.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MP_RUN_SESSION_H
#define MP_TOOLS_MP_RUN_SESSION_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mp {

/// A host tensor of f32 (parameters, optimizer state, data) with its shape.
struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t numElements() const;
};

struct TrainOptions {
  std::string precision = "f32"; // f32 | f16 | bf16
  std::string lossScale;         // dynamic | static:N | none | "" (auto)
  std::string optimizer = "sgd";
  double lr = 0.05;
  double momentum = 0.9;
  double weightDecay = 0.0;
  uint64_t seed = 0;
  /// Probes after each op (--mp-check-numerics) for a numerics checker
  /// (EveryOp) or an op-by-op comparison with FP32 (ComputeOps: without
  /// conversions, so FP32 and mixed runs name their ops alike).
  enum class Probes { None, EveryOp, ComputeOps } probes = Probes::None;
};

/// Scalars of the training state that travel with the parameters.
struct StepState {
  int32_t step = 0;
  float scale = 65536.0f;
  int32_t growthTracker = 0;
};

struct StepResult {
  float loss = 0;
  bool stepped = false;
};

class Session {
public:
  /// Parses and compiles `modelPath`; on failure returns null with `error`.
  static std::unique_ptr<Session> create(const std::string &modelPath,
                                         const TrainOptions &options,
                                         std::string &error);

  /// Batch size, features (elements per sample) and classes read from the
  /// loss signature.
  int64_t batchSize() const { return batch; }
  int64_t numFeatures() const { return features; }
  int64_t numClasses() const { return classes; }
  bool canPredict() const { return hasPredict; }
  /// False when the loops had to stay scalar (see Session::compile).
  bool isVectorized() const { return vectorized; }

  /// Parameters (initialised from the seed) and optimizer state.
  std::vector<HostTensor> &parameters() { return params; }
  std::vector<HostTensor> &optimizerState() { return state; }
  StepState &stepState() { return scalars; }

  /// One training step on a batch (x: batch x features, labels one-hot:
  /// batch x classes). Updates parameters, state and scalars in place.
  bool trainStep(const float *x, const float *labels, StepResult &result,
                 std::string &error);
  /// Logits (batch x classes) for a batch.
  bool predict(const float *x, float *logits, std::string &error);

private:
  Session() = default;
  bool compile(const std::string &modelPath, const TrainOptions &options,
               std::string &error);
  void initialiseParameters(uint64_t seed);

  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  int64_t batch = 0, features = 0, classes = 0;
  std::vector<int64_t> inputShape; // of x, batch first
  bool hasPredict = false;
  bool vectorized = true;
  std::vector<HostTensor> params, state;
  std::vector<HostTensor> nextParams, nextState;
  StepState scalars;
};

} // namespace mp

#endif // MP_TOOLS_MP_RUN_SESSION_H
