//===- Quantization.h - INT8 calibration and quantization -------*- C++ -*-===//
//
// What --mp-calibrate probes, how calibration histograms are read, and the
// threshold and error computations --mp-quantize makes from them.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_QUANTIZATION_H
#define MP_TRANSFORMS_QUANTIZATION_H

#include "mp/Dialect/MP/IR/MPAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace mlir {
namespace mp {

/// Matmuls and convolutions (linalg and tosa) on float tensors: the ops
/// --mp-calibrate probes.
bool isCalibrationTarget(Operation *op);

/// The inputs of a calibration target that get probes: a linalg op's DPS
/// inputs, a tosa op's data and weight operands.
SmallVector<OpOperand *> calibratedInputs(Operation *op);

/// One value's entry in a calibration statistics file.
struct CalibrationEntry {
  double min = 0, max = 0, absMax = 0;
  int64_t count = 0, zeroCount = 0;
  /// Histogram of |x| over [0, histMax]; empty when the file has none.
  double histMax = 0;
  std::vector<double> counts;
};

/// Reads a calibration statistics file (docs/calibration-stats.md) with
/// its histograms. Fails with `error` on a missing file, bad JSON, an entry
/// without numeric min/max, or a malformed histogram.
FailureOr<llvm::StringMap<CalibrationEntry>>
readCalibrationEntries(llvm::StringRef path, std::string &error);

/// The clipping threshold T of |x| for symmetric int8 (scale T / 127).
/// Percentile and entropy need a histogram and fall back to max |x|
/// without one.
double chooseThreshold(const CalibrationEntry &entry, QuantizationMethod method,
                       double percentile);

/// Estimated relative RMS error, sqrt(E[(x - q(x))^2] / E[x^2]), of
/// quantizing the entry's values to int8 with threshold T: rounding noise
/// scale^2/12 (at most x^2) inside T, the excess |x| - T beyond it, zeros
/// exact. Without a histogram, a uniform distribution on [0, max |x|] is
/// assumed.
double estimateRelativeError(const CalibrationEntry &entry, double threshold);

/// A contraction that quantization-aware training fake-quantizes and int8
/// inference then quantizes with the scales it learned.
struct FakeQuantTarget {
  linalg::LinalgOp op;
  /// The weight operand's output-channel dimension.
  unsigned channelDim = 0;
  /// The weight: an mp.param argument of the function.
  std::string param;
  /// The activation's observer: "<param>.input_amax", then ".2", ".3", ...
  /// for a weight's later contractions.
  std::string observer;
};

/// The contractions of `func` --mp-quantize rewrites whose weight is an
/// mp.param argument, in order (the loss and predict functions of a model
/// spell the same forward, so their observers correspond by name).
SmallVector<FakeQuantTarget> fakeQuantTargets(func::FuncOp func);

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_QUANTIZATION_H
