//===- QuantizePlan.h - what --mp-quantize decides per op -------*- C++ -*-===//
//
// The planning side of --mp-quantize: for each matmul or convolution, whether
// the int8 rewrite handles it, its threshold, scales and estimated error, and
// whether it runs in int8 or falls back (QuantizePlan.cpp); what the rewrite
// then did (Quantize.cpp); and the JSON report of it all (QuantizeReport.cpp).
// Decisions carry enums; the report spells them out (in the enums' order:
// keep QuantizeReport.cpp in step). Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_TRANSFORMS_QUANTIZEPLAN_H
#define MP_LIB_TRANSFORMS_QUANTIZEPLAN_H

#include "mp/Transforms/Quantization.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace mlir {
namespace mp {
namespace quantize {

/// The precision an eligible op runs in after the pass.
enum class OpPrecision { F32, F16, Int8 };

/// Why the int8 rewrite does not handle an eligible op at all (it stays f32,
/// untouched); `None` when it does.
enum class Unsupported {
  None,
  /// Not linalg.matmul, linalg.batch_matmul or linalg.conv_2d_nchw_fchw.
  OpKind,
  /// An operand is not an f32 tensor.
  NonF32Operands,
  /// A matmul with a transposed A or broadcast operands (a batch_matmul:
  /// any maps of its own).
  MatmulLayout,
  /// A batch_matmul whose B is not a weight (attention's products).
  BatchedActivations,
  /// The accumulator is not a zero fill.
  NonZeroAccumulator,
  /// The activation has no calibration id.
  NoActivationId,
};

/// Where the rewrite took an int8 op's quantized weights from.
enum class WeightSource { None, Hoisted, Constant, Inline };

/// Where the rewrite dequantized an int8 op's result.
enum class Dequantization { None, Fused, Separate };

/// What the pass decided for one eligible op, and what the rewrite did.
struct Decision {
  Operation *op = nullptr;
  std::string function, opName, location, activationId, weightId, resultId;

  // The plan.
  OpPrecision precision = OpPrecision::F32;
  Unsupported unsupported = Unsupported::None;
  /// Falls back because the estimated error exceeds max-error ...
  bool exceedsMaxError = false;
  /// ... or because fallback-ops names its result.
  bool namedInFallbackOps = false;
  double threshold = 0, activationScale = 0;
  double activationError = 0, weightError = -1, error = 0;

  // What the rewrite did (int8 ops).
  WeightSource weights = WeightSource::None;
  Dequantization dequantize = Dequantization::None;
  bool biasInI32 = false;
  /// The f32 value standing for the op's result after the rewrite.
  Value result;

  /// Planned for int8, but runs in the fallback precision.
  bool fellBack() const { return exceedsMaxError || namedInFallbackOps; }
};

/// The pass options planning and the report read (their defaults are the
/// pass's, in Passes.td).
struct PlanOptions {
  QuantizationMethod method;
  double percentile;
  bool perChannel;
  double maxError;
  std::vector<std::string> fallbackOps;
  /// F32 or F16.
  OpPrecision fallback;
  /// mode=int8-dynamic: activation scales at run time, no calibration.
  bool dynamic = false;
};

/// Appends a decision for every eligible op of `func` to `decisions`.
/// Emits an error and fails for a tosa op (not imported) or an activation
/// without calibration data.
LogicalResult planFunction(func::FuncOp func,
                           const llvm::StringMap<CalibrationEntry> &entries,
                           const PlanOptions &options,
                           std::vector<Decision> &decisions);

/// Writes the JSON report of `decisions` to `path` (docs/quantization.md);
/// fails with `error` when the file cannot be written.
LogicalResult writeReport(StringRef path, StringRef mode, StringRef calibration,
                          const PlanOptions &options,
                          ArrayRef<Decision> decisions, std::string &error);

} // namespace quantize
} // namespace mp
} // namespace mlir

#endif // MP_LIB_TRANSFORMS_QUANTIZEPLAN_H
