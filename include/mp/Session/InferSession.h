//===- InferSession.h - a compiled mp.predict for inference -----*- C++ -*-===//
//
// Compiles a model's mp.predict function alone — plain (f32, or f16/bf16
// through --mp-auto-mixed-precision), with calibration probes, or quantized to
// INT8 — JIT-compiles it and calls it on host buffers. Parameters come from
// a trained mp::Session (a checkpoint).
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_INFERSESSION_H
#define MP_SESSION_INFERSESSION_H

#include "mp/Session/Session.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mp {

/// The rank-0 f32 tensors of a checkpoint, by name: a QAT run's activation
/// observers ("<weight>.input_amax"). False with `error` when the file
/// cannot be read.
bool readCheckpointScalars(const std::string &path,
                           std::map<std::string, float> &scalars,
                           std::string &error);

/// The rank-0 tensors of a training session's state, by name: the
/// activation observers of a --qat session (what its checkpoint holds).
std::map<std::string, float>
scalarStateTensors(const std::vector<HostTensor> &state);

class InferSession {
public:
  ~InferSession();
  /// Compiles @predict of `modelPath` for `options` and binds `params` (by
  /// mp.param name); INT8 weights are quantized here, once.
  static std::unique_ptr<InferSession>
  create(const std::string &modelPath, const InferOptions &options,
         const std::vector<HostTensor> &params, std::string &error);

  /// The precision @predict computes in (auto resolved; f32 for int8,
  /// whose fallback ops run in options.fallback), and what auto chose and
  /// why ("" when the precision was given).
  FloatPrecision precision() const { return computePrecision; }
  const std::string &precisionDecision() const { return decision; }

  int64_t batchSize() const { return batch; }
  int64_t numFeatures() const { return features; }
  int64_t numClasses() const { return classes; }
  /// Bytes of the weights each prediction reads (int8 weights, scales and
  /// the f32 parameters still used).
  int64_t weightBytes() const;

  /// Logits (batch x classes) for a batch.
  bool predict(const float *x, float *logits, std::string &error);

  /// The pipelines that compiled @predict, one per line: on tensors
  /// (builtin.module(mp-session-infer{...}), which mp-opt runs too), then
  /// the lowering; "" when it came from the compile cache.
  const std::string &pipelines() const { return pipelineText; }

  /// What compiling did with the compile cache, and why it could not be
  /// used (CacheUse::Unusable).
  CacheUse cacheUse() const { return cacheUsed; }
  const std::string &cacheNote() const { return cacheProblem; }

private:
  /// A buffer of any element type bound to a compiled argument: host
  /// bytes, and on a GPU session the device copy calls read instead.
  struct Buffer {
    std::string name;
    std::vector<int64_t> shape;
    int64_t elementBytes = 4;
    std::vector<uint8_t> bytes;
    void *device = nullptr;
  };
  enum class ArgKind { Input, Param, QWeight, QScale };
  struct Binding {
    ArgKind kind;
    std::string name;
    std::vector<int64_t> shape;
    int64_t elementBytes;
  };

  InferSession() = default;
  /// The pointer a call passes for `buffer`: its device copy on a GPU
  /// session (made on first use), else its host bytes.
  void *argumentData(Buffer &buffer);
  bool compile(const std::string &modelPath, const InferOptions &options,
               std::string &error);
  /// The compiled code's entries, from the JIT engine.
  bool lookUpEntries(std::string &error);
  /// @predict from the compile cache, when it may come from there and the
  /// cache holds it; `cachePath` gets where a compiled one goes.
  bool loadCachedPredict(const std::string &modelPath,
                         const InferOptions &options, std::string &cachePath);
  /// The prediction compiled on tensors: the mode's passes, its entries,
  /// inlined; shapes and bindings read from the entries.
  bool compilePrediction(mlir::ModuleOp module, const std::string &modelPath,
                         const InferOptions &options, std::string &diagnostics,
                         std::string &error);
  /// int8 from QAT's observers: writes them as the calibration file that
  /// `options` then names (with minmax, per-channel weights).
  bool useQatObservers(mlir::ModuleOp module, InferOptions &options,
                       std::string &error);
  /// Shapes and bindings, from the entries --mp-infer-entries added.
  void readEntries(mlir::ModuleOp module);
  static Binding entryBinding(mlir::func::FuncOp entry, unsigned i);
  /// The cache entry's record of what compiling decided (shapes, bindings),
  /// and read back.
  llvm::json::Object cacheMetadata(const std::string &modelPath) const;
  bool readCacheMetadata(const llvm::json::Object &metadata);
  static bool readBinding(const llvm::json::Value &item, Binding &binding);
  static bool readBindings(const llvm::json::Value *value,
                           std::vector<Binding> &bindings);
  /// @predict from the cache entry at `path`, or compiled into it.
  bool loadFromCache(const std::string &path);
  bool storeInCache(mlir::ModuleOp module, const std::string &path,
                    const std::string &modelPath);
  bool bind(const std::vector<HostTensor> &params, std::string &error);
  /// Writes qatObservers as the calibration file of @predict's contractions
  /// (qatCalibrationPath, a temporary file removed after compiling).
  bool writeQatCalibration(mlir::func::FuncOp predictFn,
                           const std::map<std::string, float> &observers,
                           std::string &error);
  std::string qatCalibrationPath;
  std::string pipelineText;

  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void *library = nullptr; // dlopen handle of a cache entry
  using PackedEntry = void (*)(void **);
  PackedEntry predictEntry = nullptr, weightsEntry = nullptr;
  CacheUse cacheUsed = CacheUse::Off;
  std::string cacheProblem;
  uint64_t cacheLimitBytes = 0;
  FloatPrecision computePrecision = FloatPrecision::F32;
  std::string decision;
  int64_t batch = 0, features = 0, classes = 0;
  std::vector<int64_t> inputShape;
  std::vector<Binding> predictArgs, weightsArgs, weightsResults;
  bool hasWeightsFunction = false;
  /// Parameters and quantized weights by binding name.
  std::map<std::string, Buffer> params, qweights, qscales;
  std::unique_ptr<CudaDevice> cuda;
  void *deviceInput = nullptr, *deviceLogits = nullptr;
};

} // namespace mp

#endif // MP_SESSION_INFERSESSION_H
