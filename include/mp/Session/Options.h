//===- Options.h - the session's typed options and their text forms -*- C++
//-*-//
//
// Sessions take enums (the passes' own, from the MP dialect); mp-run's
// flags, the C API's strings and Python's keywords are text, parsed here
// once so that every front end accepts the same spellings and refuses a bad
// one with the same message.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_OPTIONS_H
#define MP_SESSION_OPTIONS_H

#include "mp/Session/CompileCache.h"
#include "mp/Transforms/Passes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mp {

using mlir::mp::FloatPrecision;
using mlir::mp::LossScalingMode;
using mlir::mp::OptimizerAlgorithm;
using mlir::mp::QuantizationMethod;

/// Where a session's compiled code runs.
enum class Device { Cpu, Cuda };

/// What a CPU f16/bf16 training step does with the 16-bit forms of its
/// weights: Keep them between steps (the optimizer update writes the next
/// step's; faster, 2 bytes per converted weight stay allocated), or Convert
/// the f32 weights in every step (nothing 16-bit outlives a step or the
/// predictions between two steps). The results are the same bit for bit.
enum class WeightCopies { Keep, Convert };

/// --loss-scale: a mode (Auto: dynamic for f16, none for bf16 and f32) and,
/// for Static, the scale.
struct LossScaleOption {
  LossScalingMode mode = LossScalingMode::Auto;
  double initial = 65536.0;

  /// The text form parseLossScale reads back: "" for Auto, "none",
  /// "dynamic", "static:N".
  std::string str() const;
  bool operator==(const LossScaleOption &other) const {
    return mode == other.mode &&
           (mode != LossScalingMode::Static || initial == other.initial);
  }
};

/// The mode a run uses: Auto resolved for `precision`; an explicit mode
/// other than none with f32 is an error (f32 does not underflow).
bool resolveLossScale(const LossScaleOption &option, FloatPrecision precision,
                      LossScalingMode &mode, std::string &error);

// Text forms. Each parser returns false with an error naming the flag and
// the values it takes.
bool parsePrecision(llvm::StringRef text, FloatPrecision &precision,
                    std::string &error);
bool parseLossScale(llvm::StringRef text, LossScaleOption &option,
                    std::string &error);
bool parseOptimizer(llvm::StringRef text, OptimizerAlgorithm &algorithm,
                    std::string &error);
bool parseDevice(llvm::StringRef text, Device &device, std::string &error);
bool parseWeightCopies(llvm::StringRef text, WeightCopies &copies,
                       std::string &error);
/// --loss, the loss put around a model that only predicts (ONNX): "" (none
/// asked for), cross-entropy or mse; '_' may stand for '-'.
bool parseLossKind(llvm::StringRef text,
                   std::optional<mlir::mp::LossKind> &kind, std::string &error);
llvm::StringRef stringifyDevice(Device device);
llvm::StringRef stringifyWeightCopies(WeightCopies copies);
bool parseQuantMethod(llvm::StringRef text, QuantizationMethod &method,
                      std::string &error);
/// An INT8 fallback precision: f32 or f16 (bf16 is refused).
bool parseQuantFallback(llvm::StringRef text, FloatPrecision &precision,
                        std::string &error);

/// The options of a training session (mp-run train, mp-compile, the C API,
/// Python): declared once, in TrainOptions.def.
struct TrainOptions {
  // The options of TrainOptions.def: a member each, with its default.
#define MP_TRAIN_OPTION(NAME, MEMBER, TYPE, DEFAULT, SCOPE, HELP)              \
  TYPE MEMBER = DEFAULT;
#include "mp/Session/TrainOptions.def"

  // Members of the table's custom options (PrecisionCodec, CacheCodec,
  // CacheDirCodec in Options.cpp).
  FloatPrecision precision = FloatPrecision::F32;
  /// --precision auto: the session replaces `precision` (and an unset
  /// `tf32`) by what the hardware supports (Hardware.h) and says why in
  /// Session::precisionDecision.
  bool automaticPrecision = false;
  /// Where a CPU session's compiled step is cached (CompileCache.h).
  CompileCacheOption cache;

  /// Probes after each op (--mp-check-numerics) for a numerics checker
  /// (EveryOp) or an op-by-op comparison with FP32 (ComputeOps: without
  /// conversions, so FP32 and mixed runs name their ops alike): the
  /// `probes` row (ProbesCodec).
  enum class Probes { None, EveryOp, ComputeOps } probes = Probes::None;
};

/// Training's --precision: f32, f16, bf16, or auto (automaticPrecision).
bool parseTrainPrecision(llvm::StringRef text, TrainOptions &options,
                         std::string &error);

/// What an option shapes (TrainOptions.def, InferOptions.def): the
/// compiled code, how and where a session runs it, or the code as the
/// session itself sets it (Derived: no tool flag).
enum class OptionScope { Step, Run, Derived };

/// One row of an options table: its name (the flag, the key of the options
/// string and of metadata), help, scope and text form. `flag`: a value may
/// be left out ("--qat", "qat" mean true); `list`: each value given is
/// appended (comma-separated elements).
template <typename Options> struct OptionSpec {
  llvm::StringLiteral name;
  const char *help;
  OptionScope scope;
  bool flag = false;
  bool list = false;
  bool (*parse)(Options &, llvm::StringRef name, llvm::StringRef text,
                std::string &error);
  std::string (*print)(const Options &);
  /// Back to the default (a list: empty).
  void (*reset)(Options &);
};
using TrainOptionSpec = OptionSpec<TrainOptions>;

/// Every row of TrainOptions.def, in its order.
llvm::ArrayRef<TrainOptionSpec> trainOptionSpecs();
/// The row named `name`; null when there is none.
const TrainOptionSpec *findTrainOption(llvm::StringRef name);

/// Sets option `name` from its text form; false with an error naming the
/// option and what it takes.
bool setTrainOption(TrainOptions &options, llvm::StringRef name,
                    llvm::StringRef value, std::string &error);

/// Reads an options string, "name=value name=value ..." (the form MLIR's
/// pipeline options take; a value with spaces in "..." or '...'; a flag's
/// name alone means true), over `options`: what it does not name keeps its
/// value. False with an error for an unknown name or a bad value.
bool parseTrainOptions(llvm::StringRef text, TrainOptions &options,
                       std::string &error);

/// The options string of every option in `scope` (all when unset), in the
/// table's order: parseTrainOptions reads it back to the same options.
std::string printTrainOptions(const TrainOptions &options,
                              std::optional<OptionScope> scope = {});
/// The options string of every option in one of `scopes`.
std::string printTrainOptionsInScopes(const TrainOptions &options,
                                      llvm::ArrayRef<OptionScope> scopes);

/// The options of `scope` as a JSON object of their text forms, by name:
/// the compile cache's key and artifact and checkpoint metadata.
llvm::json::Object trainOptionsJson(const TrainOptions &options,
                                    OptionScope scope);
/// Reads what trainOptionsJson wrote; options it lacks keep their value.
bool readTrainOptionsJson(const llvm::json::Object &object,
                          TrainOptions &options, std::string &error);

/// The first option among `names` whose value differs between `a` and `b`
/// (by text form); "" when none does.
std::string firstDifferentOption(const TrainOptions &a, const TrainOptions &b,
                                 llvm::ArrayRef<std::string> names);

/// Checks the combinations of options that no single value shows wrong
/// (--qat-freeze-after without --qat, adaptive-scaling settings without
/// --loss-scale adaptive, ...): the same checks and messages for mp-run,
/// mp-compile, the C API and Python. False with `error`.
bool verifyTrainOptions(const TrainOptions &options, std::string &error);

/// The options of an inference session (mp-run infer, the C API's
/// mp_infer_create_with, Python's InferSession): declared once, in
/// InferOptions.def.
struct InferOptions {
  // The options of InferOptions.def: a member each, with its default.
#define MP_INFER_OPTION(NAME, MEMBER, TYPE, DEFAULT, SCOPE, HELP)              \
  TYPE MEMBER = DEFAULT;
#include "mp/Session/InferOptions.def"

  // Members of the table's custom options.
  /// Float: @predict in `precision` (f32, or f16/bf16 through
  /// --mp-auto-mixed-precision); Calibrate: f32 with --mp-calibrate's probes;
  /// Int8: --mp-quantize in `quantization` mode.
  enum class Mode { Float, Calibrate, Int8 };
  Mode mode = Mode::Float;
  FloatPrecision precision = FloatPrecision::F32;
  /// precision=auto: what the hardware has (Hardware.h) replaces it.
  bool automaticPrecision = false;
  mlir::mp::QuantizationMode quantization = mlir::mp::MPQuantizeOptions().mode;
  FloatPrecision fallback = mlir::mp::MPQuantizeOptions().fallback;
  CompileCacheOption cache;

  /// Int8 without a calibration file: the activation ranges
  /// quantization-aware training observed (max |x| by observer name, as a
  /// QAT checkpoint holds them; readCheckpointScalars). Every contraction
  /// QAT fake-quantized then takes its observer's scale and per-channel
  /// weights, as in training; a missing observer is an error. Data, not an
  /// option: the session writes them as a calibration file.
  std::map<std::string, float> qatObservers;
};

/// Copies the lowering's step options (LoweringOptions.def: parallel-loops,
/// approximate-math, native-bf16) from one option set to another, so that a
/// session made from another's options lowers alike; a row added there is
/// copied too. Run options (dump-ir) stay the target's.
template <typename To, typename From>
void copyLoweringOptions(To &to, const From &from) {
#define MP_LOWERING_OPTION(NAME, MEMBER, TYPE, DEFAULT, SCOPE, HELP)           \
  if (OptionScope::SCOPE == OptionScope::Step)                                 \
    to.MEMBER = from.MEMBER;
#include "mp/Session/LoweringOptions.def"
}

/// Inference's --precision: f32, f16, bf16 or auto (Mode::Float), or int8
/// or int8-dynamic (Mode::Int8); false with an error for anything else.
bool parseInferPrecision(llvm::StringRef text, InferOptions &options,
                         std::string &error);

/// Every row of InferOptions.def, in its order, and the one named `name`.
llvm::ArrayRef<OptionSpec<InferOptions>> inferOptionSpecs();
const OptionSpec<InferOptions> *findInferOption(llvm::StringRef name);

/// The inference options string, as parseTrainOptions and
/// printTrainOptions read and write the training one.
bool parseInferOptions(llvm::StringRef text, InferOptions &options,
                       std::string &error);
std::string printInferOptions(const InferOptions &options,
                              llvm::ArrayRef<OptionScope> scopes = {});
/// The options of `scope` as JSON text forms (the compile cache's key).
llvm::json::Object inferOptionsJson(const InferOptions &options,
                                    OptionScope scope);

/// Checks the combinations of inference options no single value shows
/// wrong (int8 settings without int8, int8-dynamic with a calibration
/// file, probes on the GPU, ...), for every front end alike. False with
/// `error`.
bool verifyInferOptions(const InferOptions &options, std::string &error);

} // namespace mp

#endif // MP_SESSION_OPTIONS_H
