//===- Session.h - a compiled model that mp-run trains and runs -*- C++ -*-===//
//
// Compiles a model's mp.loss (and mp.predict) function into a training step
// and a prediction function with mp's passes, JIT-compiles them with MLIR's
// ExecutionEngine and calls them through a backend: on host buffers, or
// with --device cuda on device buffers (lib/Session/StepBackend.h). The
// same session runs from an artifact mp-compile wrote (a shared object;
// docs/artifacts.md), loaded with dlopen instead of JIT-compiled; a CPU
// session keeps its compiled step in the compile cache as such an artifact
// and loads it from there the next time (CompileCache.h).
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_SESSION_H
#define MP_SESSION_SESSION_H

#include "mp/Session/CompileCache.h"
#include "mp/Session/CudaDevice.h"
#include "mp/Session/Options.h"
#include "mp/Transforms/Passes.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace mp {

class StepBackend;

/// A host tensor of f32 (parameters, optimizer state, data) with its shape.
struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t numElements() const;
};

/// How a parameter's values start. Fans come from the shape: a conv kernel
/// (rank 4, F x C x kh x kw) has fan-in C*kh*kw and fan-out F*kh*kw; any
/// other weight (rank >= 2, output dimension last) fan-in = elements /
/// last dimension and fan-out = last dimension.
enum class InitScheme {
  Zeros,
  HeUniform,
  HeNormal,
  XavierUniform,
  XavierNormal
};

/// Parses "zeros", "he-uniform", "he-normal", "xavier-uniform",
/// "xavier-normal"; false for anything else.
bool parseInitScheme(const std::string &text, InitScheme &scheme);

/// Fills `tensor` by `scheme` from `rng`. He and Xavier need a weight of
/// rank 2 or more: false with `error` otherwise.
bool initialiseTensor(HostTensor &tensor, InitScheme scheme,
                      std::mt19937_64 &rng, std::string &error);

// TrainOptions: Options.h.


/// What a session's compiled entry points take: the packed functions
/// (`_mlir_<name>(void **args)`, from the JIT or an artifact's shared
/// object) and the shapes of their buffers (the parameters' and state's
/// are the training state's).
struct CompiledEntries {
  using PackedFn = void (*)(void **);
  PackedFn train = nullptr, predict = nullptr;
  /// With gradient accumulation (window > 1): the entry that only adds a
  /// micro-batch's gradients to the window's sums, and what the window's
  /// state holds besides them (the overflow flag with loss scaling, the
  /// amax with adaptive scaling).
  PackedFn accumulate = nullptr;
  int64_t window = 1;
  bool windowOverflow = false, windowAmax = false;
  bool accumulateInPlace = false;
  std::vector<int64_t> inputShape; // of x, batch first
  int64_t batch = 0, features = 0, classes = 0;
  /// What x and the labels hold: f32 values, or integer ids (token ids, a
  /// language model's targets: i32 or i64). The labels' and the
  /// prediction's shapes, batch first ([B, C] one-hot and logits; [B, T]
  /// ids and [B, T, V] logits for a language model).
  enum class Element { F32, I32, I64 };
  Element inputElement = Element::F32, labelElement = Element::F32;
  std::vector<int64_t> labelShape, logitsShape;
  /// Bytes of one batch of x, labels and logits.
  size_t inputBytes() const;
  size_t labelBytes() const;
  size_t logitsBytes() const;
  /// The step writes the new parameters and state over the old ones (the
  /// lowering marked the entry mp.in_place_updates; docs/memory.md).
  bool inPlaceUpdates = false;
  /// f32 products run on TF32 tensor cores (a GPU session's setting of
  /// libmprt_cuda, made before every call).
  bool tf32 = false;
  /// A CPU f16/bf16 session's prediction reads low-precision copies of the
  /// weights (--mp-convert-weights-once) instead of converting them on
  /// every call: `predictWeights` makes them from the parameters
  /// `weightsArguments` names (indices into the parameters), one copy per
  /// entry of `weightCopies`; each argument of `predict` after x is a
  /// parameter or a copy (`predictArguments`). The backend makes the copies
  /// again only after the parameters changed. Without copies (f32, GPU,
  /// probes) `predict` takes every parameter, in order.
  PackedFn predictWeights = nullptr;
  struct WeightCopy {
    int64_t param = 0;        // the parameter it is a copy of
    int64_t elementBytes = 2; // f16 or bf16
  };
  struct PredictArgument {
    bool copy = false;
    int64_t index = 0; // into weightCopies, or into the parameters
  };
  std::vector<int64_t> weightsArguments;
  std::vector<WeightCopy> weightCopies;
  std::vector<PredictArgument> predictArguments;
  /// A CPU f16/bf16 training step reads 16-bit copies of the weights
  /// `stepCopies` names and its update writes the next step's
  /// (keepStepWeightCopies, JitEntry.h): their buffers are the step's last
  /// arguments, read then written. `trainCopies` makes them from the
  /// parameters (for the first step, and after the parameters changed
  /// outside a step).
  PackedFn trainCopies = nullptr;
  std::vector<WeightCopy> stepCopies;
};

/// Scalars of the training state that travel with the parameters.
struct StepState {
  int32_t step = 0;
  float scale = 65536.0f;
  int32_t growthTracker = 0;
  /// Steps skipped for inf/nan gradients since the run began (kept in
  /// checkpoints; not an input of the compiled step).
  int64_t skipped = 0;
  /// Gradient accumulation: micro-batches already added to the current
  /// window, whether one of them overflowed and their scaled-gradient amax.
  int64_t micro = 0;
  int32_t windowOverflow = 0;
  float windowAmax = 0;
};

/// What training changes: parameters, optimizer state and the step's
/// scalars. A session keeps them as host tensors (on a GPU session, host
/// copies of the device buffers).
struct TrainingState {
  std::vector<HostTensor> params, state;
  /// With gradient accumulation: the window's f32 gradient sum per
  /// parameter ("<parameter>.accumulator"); empty otherwise.
  std::vector<HostTensor> sums;
  StepState scalars;
};

struct StepResult {
  float loss = 0;
  /// False when the step was skipped (inf/nan gradients).
  bool stepped = false;
  /// Global L2 norm of the unscaled f32 gradients the update used, before
  /// clipping (inf/nan when they overflowed).
  float gradNorm = 0;
  /// The loss scale the step ran with (1 without loss scaling).
  float scale = 1;
  /// False for a micro-batch that only added its gradients to the window
  /// (--accumulate N): no update ran, and `stepped` and `gradNorm` say
  /// nothing.
  bool optimizerStep = true;
};

/// Where a numerics probe of a session compiled with probes
/// (TrainOptions::probes) looks, by its id: what the precision repair needs
/// to know about the op whose output it saw.
struct ProbeSite {
  /// The function it is in: "train_step", "predict", ...
  std::string function;
  /// The op whose result it observes ("linalg.generic").
  std::string op;
  /// That op's source location as --keep-f32 takes it (FILE:LINE:COL; ""
  /// when it has none).
  std::string location;
  /// The value is f16 or bf16.
  bool lowPrecision = false;
};

/// Where in a run a checkpoint was taken: after `batch` batches of the
/// epoch that follows `epoch` completed epochs (epoch -1: the checkpoint
/// does not say). Checkpoints record it in their JSON metadata with the
/// precision and the step's scalars, one schema that Session::saveCheckpoint
/// writes and Session::loadCheckpoint reads (docs/runtime-io.md).
struct RunPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
};


class Session {
public:
  ~Session();

  /// Parses and compiles `modelPath`; on failure returns null with `error`.
  static std::unique_ptr<Session> create(const std::string &modelPath,
                                         const TrainOptions &options,
                                         std::string &error);

  /// Opens an artifact `writeArtifact` (mp-compile) wrote: checks its
  /// trailer, version, checksum and CPU, loads it with dlopen and binds its
  /// runtime imports; no MLIR runs. Parameters start from `seed`, or from
  /// the seed it was compiled with when null. On failure returns null with
  /// `error`.
  static std::unique_ptr<Session> open(const std::string &artifactPath,
                                       std::string &error,
                                       const uint64_t *seed = nullptr);
  /// True when `path` ends with an artifact's trailer (a cheap check that
  /// tells artifacts from models).
  static bool isArtifact(const std::string &path);

  /// The C compiler driver artifacts are linked with (mp-compile's
  /// --linker, the compile cache).
  static constexpr const char *kDefaultLinker = "cc";

  /// Compiles `modelPath` exactly as `create` does and writes the lowered
  /// module as an artifact: a shared object (object code linked with
  /// `linker -shared`) followed by a metadata trailer. `progress` gets a
  /// line per stage.
  static bool writeArtifact(
      const std::string &modelPath, const TrainOptions &options,
      const std::string &outputPath, const std::string &linker,
      std::string &error,
      llvm::function_ref<void(const std::string &)> progress =
          [](const std::string &) {});

  /// The options the session was compiled with (for an artifact: those
  /// mp-compile was given), with --precision auto resolved.
  const TrainOptions &trainOptions() const { return compiledOptions; }
  /// Whether the model gives every parameter a starting value.
  bool hasInitialValues() const;
  /// What --precision auto chose and why ("precision auto -> bf16:
  /// AVX512-BF16 present"); empty when the precision was given.
  const std::string &precisionDecision() const { return decision; }
  /// The model it was compiled from ("" for an artifact).
  const std::string &modelPath() const { return model; }
  /// Whether the step came from the compile cache or was stored there
  /// (CompileCache.h); cacheNote() says why the cache was unusable, and
  /// cacheFile() names the entry.
  CacheUse cacheUse() const { return cacheUsed; }
  const std::string &cacheNote() const { return cacheProblem; }
  const std::string &cacheFile() const { return cachePath; }
  /// The probes of a session compiled with them, by id.
  const std::map<std::string, ProbeSite> &probeSites() const { return sites; }

  /// The pass pipelines that compiled this session's step, one per line:
  /// `builtin.module(mp-session-train{...})` (the step on tensors), then
  /// the lowering (`builtin.module(mp-lower-cpu{...})`). mp-opt with the
  /// first produces the IR the session lowers.
  const std::string &pipelines() const { return pipelineText; }

  /// Compiles the model again with the ops at `locations` kept in f32 as
  /// well (TrainOptions::keepF32), in this process, and carries the
  /// training state over: parameters, optimizer state, accumulation sums
  /// and the step's scalars are as they were. Locations already kept are
  /// ignored. An artifact cannot be recompiled (error). On failure the
  /// session is unchanged.
  bool keepInF32(const std::vector<std::string> &locations, std::string &error);

  /// Batch size, features (elements per sample) and classes read from the
  /// loss signature.
  int64_t batchSize() const { return entries.batch; }
  int64_t numFeatures() const { return entries.features; }
  int64_t numClasses() const { return entries.classes; }
  bool canPredict() const { return hasPredict; }
  /// Micro-batches per optimizer step (1 without gradient accumulation).
  int64_t accumulation() const { return entries.window; }
  /// False when the loops had to stay scalar (see Session::compile).
  bool isVectorized() const { return vectorized; }

  /// Initialises every parameter from `seed`: weights (rank >= 2) by
  /// `scheme`, biases and other rank-0/1 parameters zero; a parameter the
  /// model gives a starting value (mp.initial_value, an imported model's
  /// weights) takes that value instead. Optimizer state
  /// is left alone.
  void initialiseParameters(uint64_t seed,
                            InitScheme scheme = InitScheme::HeUniform);

  /// Parameters (initialised from the seed) and optimizer state. On a GPU
  /// session these host copies are brought up to date first, and whatever
  /// the caller writes into them goes back to the device before the next
  /// step.
  std::vector<HostTensor> &parameters() {
    syncToHost();
    return training.params;
  }
  std::vector<HostTensor> &optimizerState() {
    syncToHost();
    return training.state;
  }
  /// Data-parallel (TrainOptions::distributed): this process's rank and
  /// the job's size (0 and 1 in a one-process session).
  bool isDistributed() const { return distRanks > 0; }
  int64_t rank() const { return distRank; }
  int64_t ranks() const { return distRanks > 0 ? distRanks : 1; }
  /// Rank 0's parameters and optimizer state replace every other rank's
  /// (a collective; nothing in a one-process session).
  bool broadcastTrainingState(std::string &error);
  /// A hash of the parameters' bytes: equal on ranks that hold bitwise
  /// equal parameters.
  uint64_t parameterChecksum();
  /// Data-parallel: whether `value` is the same on every rank (a
  /// collective). False with `error` set to `disagreement` when it is not,
  /// or to MPI's error.
  static bool sameOnEveryRank(uint64_t value, const std::string &disagreement,
                              std::string &error);
  /// True when the step runs on a GPU (--device cuda).
  bool onDevice() const;
  /// Whether the step writes the new parameters and state over the old
  /// ones (one set of buffers; mp-in-place-updates proved it safe).
  bool updatesInPlace() const { return entries.inPlaceUpdates; }
  /// A GPU session's device pool peak bytes (0 on the CPU).
  uint64_t devicePeakBytes() const;
  /// Bytes of the f16/bf16 weight copies the training step reads (held from
  /// the first step on; 0 when the step converts its weights itself).
  uint64_t stepCopyBytes() const;
  /// Bytes of the f16/bf16 weight copies predictions read (held once the
  /// session has predicted; 0 when predictions convert per call).
  uint64_t predictionCopyBytes() const;
  StepState &stepState() { return training.scalars; }
  /// What the compiled entries take: shapes and element types of x, the
  /// labels and the logits.
  const CompiledEntries &compiledEntries() const { return entries; }

  /// One training step on a batch: x and labels as the model takes them
  /// (CompiledEntries: f32 values or integer ids; labels one-hot [B, C] or
  /// class ids). Updates parameters, state and scalars in place;
  /// with gradient accumulation, only the last micro-batch of a window
  /// updates them (the others add their gradients to the window's).
  bool trainStep(const void *x, const void *labels, StepResult &result,
                 std::string &error);
  /// Logits (compiledEntries().logitsShape) for a batch.
  bool predict(const void *x, float *logits, std::string &error);

  /// Writes parameters, optimizer state and the checkpoint's metadata (the
  /// run position, the precision, the step's scalars: step, scale,
  /// growth_tracker, skipped) atomically to `path`; a non-empty
  /// `previousPath` keeps the replaced checkpoint there.
  bool saveCheckpoint(const std::string &path, const RunPosition &position,
                      const std::string &previousPath,
                      std::string &error) const;
  /// Restores the parameters (and, with `withState`, the optimizer state
  /// and scalars) from a checkpoint saveCheckpoint wrote, and where in its
  /// run it was taken; `keptF32`, when given, gets the ops its run kept in
  /// f32 (its --keep-f32 and precision repairs; none in older checkpoints).
  bool loadCheckpoint(const std::string &path, bool withState,
                      RunPosition &position, std::string &error,
                      std::vector<std::string> *keptF32 = nullptr);

private:
  Session();
  bool compile(const std::string &modelPath, const TrainOptions &requested,
               std::string &error);
  /// `requested` with precision=auto and TF32 resolved for this machine
  /// (opening the GPU when they depend on it).
  bool resolveHardwareOptions(const TrainOptions &requested,
                              TrainOptions &options,
                              std::unique_ptr<CudaDevice> &cuda,
                              std::string &error);
  /// The step from the compile cache, when a CPU step may come from there
  /// and it holds one; sets cachePath where the step compiled next goes.
  bool loadCachedStep(const std::string &modelPath,
                      const TrainOptions &options);
  /// The JIT-compiled step's entries.
  bool lookUpTrainEntries(std::string &error);
  /// Runs the session's pipelines on `modelPath` (training step, mixed
  /// precision, CPU lowering to the LLVM dialect) into `module` and fills
  /// the session's shapes, names and scalars.
  bool lower(const std::string &modelPath, const TrainOptions &options,
             mlir::OwningOpRef<mlir::ModuleOp> &module, std::string &error);
  /// The backend that calls the entry points: on `cuda` when it is given
  /// (buffers in device memory), else on host buffers.
  bool createBackend(std::unique_ptr<CudaDevice> cuda, std::string &error);
  /// A GPU session's host copies brought up to date (and marked as possibly
  /// changed by the caller).
  void syncToHost() const;
  /// Joins the MPI job (TrainOptions::distributed): initializes MPI, sets
  /// `options.ranks`, and checks that every rank compiles the same step.
  bool joinJob(const std::string &modelPath, TrainOptions &options,
               std::string &error);
  /// The metadata record of an artifact (Artifact.cpp).
  llvm::json::Object artifactMetadata() const;
  bool readArtifactMetadata(const llvm::json::Object &metadata,
                            std::string &error);
  /// Generates object code for `module` (this session's, lowered), links
  /// it with `cc -shared` and writes the artifact to `outputPath`
  /// atomically.
  bool emitArtifact(mlir::ModuleOp module, const std::string &modelPath,
                    const std::string &cc, const std::string &outputPath,
                    std::string &error,
                    llvm::function_ref<void(const std::string &)> progress);
  /// Checks and dlopens the artifact at `path` and binds its entries; with
  /// `codeOnly` the session's shapes, options and state are left as they
  /// are (they came from lowering the same module), else read from its
  /// metadata. `error` completes "artifact 'PATH' ...".
  bool loadArtifact(const std::string &path, bool codeOnly,
                    std::string &error);
  // What the step's entries say after mp-session-train (CompiledStep.cpp):
  // shapes, parameters, state and accumulation sums, the step's weight
  // copies; the prediction's arguments and weight copies; the probes.
  bool readTrainEntry(mlir::ModuleOp module, std::string &error);
  bool readPredictEntries(mlir::ModuleOp module, std::string &error);
  bool readWeightCopies(mlir::func::FuncOp weights, std::string &error);
  bool readPredictArguments(mlir::func::FuncOp predict, std::string &error);
  void readProbeSites(mlir::ModuleOp module);
  /// The index of the parameter named `name`; -1 when there is none.
  int64_t paramIndex(mlir::StringAttr name) const;
  /// Lowers the step for the CPU or the GPU and records the lowering's
  /// pipeline in `pipelines`.
  bool lowerStep(mlir::OwningOpRef<mlir::ModuleOp> &module,
                 const TrainOptions &options, std::string &diagnostics);
  /// A CPU step from the cache, or compiled into it (Session::compile).
  bool loadFromCache(const std::string &path, const TrainOptions &options);
  bool storeInCache(mlir::ModuleOp module, const std::string &path);

  // The compiled model: its entry points and what they take, and the JIT
  // engine or the artifact's library that holds their code.
  CompiledEntries entries;
  std::string model;
  std::map<std::string, ProbeSite> sites;
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void *library = nullptr; // dlopen handle of an artifact
  CacheUse cacheUsed = CacheUse::Off;
  std::string cacheProblem, cachePath;
  TrainOptions compiledOptions;
  std::string pipelineText;
  /// The model's mp.initial_value of each parameter that has one.
  std::map<std::string, std::vector<float>> initialValues;
  std::string decision;
  /// compiledOptions.lossScale resolved for the precision.
  LossScalingMode scaleMode = LossScalingMode::None;
  bool hasPredict = false;
  bool vectorized = true;
  /// Data-parallel: this rank, and the job's size (0: not distributed).
  int64_t distRank = 0, distRanks = 0;

  // The training state; mutable: on a GPU session the backend refreshes
  // the host copies, also from const members such as saving.
  mutable TrainingState training;
  // Where the buffers live (StepBackend.h: CPU or CUDA).
  std::unique_ptr<StepBackend> backend;
};

} // namespace mp

#endif // MP_SESSION_SESSION_H
