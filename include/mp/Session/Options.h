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

#include "mp/Transforms/Passes.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

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
/// --weight-copies's help text, shared by mp-run and mp-compile.
inline constexpr const char *kWeightCopiesHelp =
    "keep (default): a CPU f16/bf16 step keeps 16-bit copies of its weights "
    "between steps, written by the optimizer update (faster; 2 bytes per "
    "weight more memory); convert: every step converts its f32 weights "
    "(less memory); the same results either way";
/// --loss, the loss put around a model that only predicts (ONNX): "" (none
/// asked for), cross-entropy or mse; '_' may stand for '-'.
/// --loss's help text, shared by mp-run and mp-compile.
inline constexpr const char *kLossKindHelp =
    "cross-entropy or mse: the loss around the model's mp.predict when it "
    "has no mp.loss function (an ONNX model; default there: cross-entropy)";
/// --qat's and --qat-freeze-after's help texts, shared by mp-run and
/// mp-compile.
inline constexpr const char *kQatHelp =
    "train: quantization-aware training (fake int8 weights per channel and "
    "activations through moving-average observers kept in the checkpoint; "
    "then infer --precision int8 with no --calibration); usually with "
    "--init-from an f32 checkpoint";
inline constexpr const char *kQatFreezeAfterHelp =
    "--qat: optimizer steps after which the activation observers stop "
    "moving (0: never)";
bool parseLossKind(llvm::StringRef text,
                   std::optional<mlir::mp::LossKind> &kind, std::string &error);
llvm::StringRef stringifyDevice(Device device);
llvm::StringRef stringifyWeightCopies(WeightCopies copies);
bool parseQuantMethod(llvm::StringRef text, QuantizationMethod &method,
                      std::string &error);
/// An INT8 fallback precision: f32 or f16 (bf16 is refused).
bool parseQuantFallback(llvm::StringRef text, FloatPrecision &precision,
                        std::string &error);

} // namespace mp

#endif // MP_SESSION_OPTIONS_H
