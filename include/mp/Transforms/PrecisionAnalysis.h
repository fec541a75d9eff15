//===- PrecisionAnalysis.h - per-op precision decisions ---------*- C++ -*-===//
//
// Classifies ops (allow, infer, clear, deny) and decides, by a minimum cut
// over the op graph, which of them compute in the low-precision type. The
// analysis pass reports the decisions; the rewrite pass applies them.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_PRECISIONANALYSIS_H
#define MP_TRANSFORMS_PRECISIONANALYSIS_H

#include "mp/Dialect/MP/IR/MPAttrs.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir {
namespace mp {

/// Measured range of one value, from a calibration statistics file.
struct MeasuredRange {
  double absMax = 0;
  /// Fraction of non-zero elements with |x| below f16's smallest normal.
  double belowF16NormalFraction = 0;
};

struct PrecisionAnalysisOptions {
  Type lowType;
  std::vector<std::string> allowOps;
  std::vector<std::string> denyOps;
  /// Keyed by value id (see valueId()); empty without calibration data.
  llvm::StringMap<MeasuredRange> ranges;
  double f16SafeMax = 32752.0;
  bool keepSignature = true;
};

/// Which rule or override decided an op's class: the typed reason of a
/// decision (the report's "rule"; "reason" says the same for people).
enum class PrecisionRule {
  Contraction,
  Convolution,
  DataMovement,
  Gather,
  Fill,
  Broadcast,
  Elementwise,
  Sigmoid,
  SensitiveMath,
  Softmax,
  MaxMinPooling,
  SumPooling,
  MaxMinReduction,
  SumReduction,
  Comparison,
  ScalarBoundary,
  MPOp,
  CollectiveBuffer,
  Call,
  ControlFlow,
  NoBody,
  NotUnderstood,
  AllowOps,
  DenyOps,
  GivenDecision,
  UserAttribute,
  Range,
};

/// The report's spelling of `rule` ("gather", "sensitive-math", ...).
llvm::StringRef stringifyPrecisionRule(PrecisionRule rule);

/// The verdict for one op.
struct OpDecision {
  PrecisionClass precisionClass = PrecisionClass::Deny;
  /// f32, or the low type (allow ops: the type of their inputs).
  Type computeType;
  std::string reason;
  PrecisionRule rule = PrecisionRule::NotUnderstood;
};

/// Decisions for every op on float tensors in a module.
class PrecisionAnalysis {
public:
  /// Analyses `module`. Fails (after emitting a located error) only on
  /// malformed user input such as a bad `mp.precision` value.
  static FailureOr<PrecisionAnalysis>
  run(ModuleOp module, const PrecisionAnalysisOptions &options);

  /// The decision of `op`, or null when the analysis ignores it.
  const OpDecision *lookup(Operation *op) const;

  /// Analysed ops in program order, with their decisions.
  ArrayRef<std::pair<Operation *, OpDecision>> decisions() const {
    return ordered;
  }

  /// Function arguments that may take the low type (keep-signature=false).
  const llvm::DenseMap<Value, Type> &lowArguments() const {
    return argumentTypes;
  }
  /// Function results that may take the low type (keep-signature=false),
  /// keyed by (function, result index).
  const llvm::DenseMap<std::pair<Operation *, unsigned>, Type> &
  lowResults() const {
    return resultTypes;
  }

private:
  std::vector<std::pair<Operation *, OpDecision>> ordered;
  llvm::DenseMap<Operation *, size_t> index;
  llvm::DenseMap<Value, Type> argumentTypes;
  llvm::DenseMap<std::pair<Operation *, unsigned>, Type> resultTypes;
  friend class PrecisionGraphBuilder;
};

/// What the rules say of an op, before overrides and ranges.
struct Classified {
  PrecisionRule rule;
  PrecisionClass precisionClass;
  std::string reason;
  /// False for ops no rule knows: they stay f32 and are reported.
  bool understood = true;
};

/// The tensor.extract of a gather: when `op` is a linalg op with parallel
/// loops and one result whose body yields one tensor.extract of a tensor
/// defined outside it (the table: an embedding lookup, ONNX Gather), with
/// no other float arithmetic in the body, that extract; null otherwise.
/// The analysis treats a gather as a copy of table elements: it may write
/// any float type and read whichever copy of the table exists.
tensor::ExtractOp gatheredExtract(linalg::LinalgOp op);

/// The rule-based class of `op` and why, before overrides and ranges.
/// Returns failure for ops the analysis ignores (no float tensors).
FailureOr<Classified> classifyOp(Operation *op);

/// Stable id of `value` for calibration statistics: the producer's `mp.id`
/// attribute, else its name location, else "<function>/<ordinal>", with
/// "#<result>" appended for results other than the first.
std::string valueId(Value value, llvm::StringRef functionName,
                    unsigned ordinal);

/// The id (valueId) of every float tensor value of `func` that the analysis
/// numbers: its arguments and the results of the ops it classifies, with the
/// ordinals the analysis uses. Calibration (--mp-calibrate) names its probes
/// with these ids and --mp-quantize looks them up, so all three agree.
llvm::DenseMap<Value, std::string> valueIds(func::FuncOp func);

/// Reads a calibration statistics file (docs/calibration-stats.md).
FailureOr<llvm::StringMap<MeasuredRange>>
readCalibrationStats(llvm::StringRef path, std::string &error);

/// Reads a calibration statistics file and calls `visit` for every entry
/// of its "values" object with the entry and its numeric min and max. Fails
/// with `error` on a missing file, bad JSON, no "values" object, an entry
/// without numeric min/max, or when `visit` fails (it sets `error`).
LogicalResult forEachCalibrationEntry(
    llvm::StringRef path, std::string &error,
    llvm::function_ref<LogicalResult(llvm::StringRef key,
                                     const llvm::json::Object &stats,
                                     double min, double max)>
        visit);

/// The MLIR type of `precision` (f32, f16 or bf16).
Type typeOf(MLIRContext *context, FloatPrecision precision);

/// Builds analysis options from pass options; emits a located error on
/// `module` for an f32 dtype or an unreadable calibration file.
FailureOr<PrecisionAnalysisOptions> makeAnalysisOptions(
    ModuleOp module, FloatPrecision dtype, ArrayRef<std::string> allowOps,
    ArrayRef<std::string> denyOps, llvm::StringRef calibrationPath,
    double f16SafeMax, bool keepSignature);

/// The JSON report: every decision with location, class, type and reason;
/// totals per class and per type.
llvm::json::Object buildReport(const PrecisionAnalysis &analysis,
                               const PrecisionAnalysisOptions &options);

/// Writes `report` to `path`; a located error on `module` if it cannot.
LogicalResult writeReport(ModuleOp module, llvm::json::Object report,
                          llvm::StringRef path);

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_PRECISIONANALYSIS_H
