//===- QuantizationStats.cpp - INT8 thresholds and error estimates --------===//
//
// The statistics side of --mp-quantize: calibration entries with their
// histograms read from the file --mp-calibrate's probes produced, the
// clipping threshold each method picks, and the relative error int8
// quantization is estimated to add (Quantization.h).
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/PrecisionAnalysis.h"
#include "mp/Transforms/Quantization.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::mp;

FailureOr<llvm::StringMap<CalibrationEntry>>
mlir::mp::readCalibrationEntries(StringRef path, std::string &error) {
  llvm::StringMap<CalibrationEntry> entries;
  auto read = [&](StringRef key, const llvm::json::Object &stats,
                  double minimum, double maximum) -> LogicalResult {
    CalibrationEntry entry;
    entry.min = minimum;
    entry.max = maximum;
    entry.absMax = std::max(std::fabs(minimum), std::fabs(maximum));
    if (std::optional<double> absMax = stats.getNumber("abs_max"))
      entry.absMax = std::max(entry.absMax, *absMax);
    entry.count = stats.getInteger("count").value_or(0);
    entry.zeroCount = stats.getInteger("zero_count").value_or(0);
    if (const llvm::json::Object *hist = stats.getObject("histogram")) {
      std::optional<double> histMax = hist->getNumber("max");
      const llvm::json::Array *counts = hist->getArray("counts");
      if (!histMax || !counts || counts->empty() || *histMax < 0) {
        error = "calibration entry '" + key.str() + "' in '" + path.str() +
                "': \"histogram\" needs a number \"max\" >= 0 and a "
                "non-empty array \"counts\"";
        return failure();
      }
      entry.histMax = *histMax;
      for (const llvm::json::Value &c : *counts) {
        std::optional<double> n = c.getAsNumber();
        if (!n || *n < 0) {
          error = "calibration entry '" + key.str() + "' in '" + path.str() +
                  "': histogram counts must be non-negative numbers";
          return failure();
        }
        entry.counts.push_back(*n);
      }
    }
    entries[key] = std::move(entry);
    return success();
  };
  if (failed(forEachCalibrationEntry(path, error, read)))
    return failure();
  return entries;
}

/// Minimises KL(P || Q) over thresholds, P the histogram clipped at the
/// threshold and Q its 128-level quantization (TensorRT's calibration).
static double entropyThreshold(const CalibrationEntry &entry) {
  const std::vector<double> &bins = entry.counts;
  size_t numBins = bins.size();
  const size_t levels = 128;
  if (numBins <= levels)
    return entry.absMax;
  double binWidth = entry.histMax / numBins;
  double bestDivergence = std::numeric_limits<double>::infinity();
  size_t best = numBins;
  std::vector<double> p, q;
  double tail = 0;
  for (size_t b = levels; b < numBins; ++b)
    tail += bins[b];
  for (size_t i = levels; i <= numBins; ++i) {
    // P: the first i bins with everything beyond folded into the last one.
    p.assign(bins.begin(), bins.begin() + i);
    p[i - 1] += tail;
    if (i < numBins)
      tail -= bins[i];
    // Q: the first i bins merged into `levels` groups, spread back evenly
    // over each group's non-empty bins.
    q.assign(i, 0);
    for (size_t j = 0; j < levels; ++j) {
      size_t start = j * i / levels, end = (j + 1) * i / levels;
      double sum = 0;
      size_t nonEmpty = 0;
      for (size_t k = start; k < end; ++k) {
        sum += bins[k];
        nonEmpty += bins[k] != 0;
      }
      for (size_t k = start; k < end; ++k)
        if (bins[k] != 0)
          q[k] = sum / nonEmpty;
    }
    double pSum = 0, qSum = 0;
    for (size_t k = 0; k < i; ++k) {
      pSum += p[k];
      qSum += q[k];
    }
    if (pSum == 0 || qSum == 0)
      continue;
    double divergence = 0;
    for (size_t k = 0; k < i; ++k) {
      if (p[k] == 0)
        continue;
      double pk = p[k] / pSum;
      // Outliers folded into the last bin may have no mass in Q.
      double qk = std::max(q[k] / qSum, 1e-12);
      divergence += pk * std::log(pk / qk);
    }
    if (divergence < bestDivergence) {
      bestDivergence = divergence;
      best = i;
    }
  }
  return std::min(entry.absMax, best * binWidth);
}

double mlir::mp::chooseThreshold(const CalibrationEntry &entry,
                                 QuantizationMethod method, double percentile) {
  if (method == QuantizationMethod::MinMax || entry.counts.empty() ||
      entry.histMax <= 0)
    return entry.absMax;
  if (method == QuantizationMethod::Entropy)
    return entropyThreshold(entry);
  double total = 0;
  for (double c : entry.counts)
    total += c;
  double target = total * percentile / 100.0, seen = 0;
  double binWidth = entry.histMax / entry.counts.size();
  for (size_t b = 0; b < entry.counts.size(); ++b) {
    seen += entry.counts[b];
    if (seen >= target)
      return std::min(entry.absMax, (b + 1) * binWidth);
  }
  return entry.absMax;
}

double mlir::mp::estimateRelativeError(const CalibrationEntry &entry,
                                       double threshold) {
  if (entry.absMax <= 0)
    return 0; // all zeros: exact
  double scale = threshold / 127.0;
  double rounding = scale * scale / 12.0;
  if (entry.counts.empty() || entry.histMax <= 0) {
    // Uniform |x| on [0, absMax]: E[x^2] = absMax^2 / 3.
    double clipped = 0;
    if (threshold < entry.absMax) {
      double excess = entry.absMax - threshold;
      clipped = excess * excess * excess / (3 * entry.absMax);
    }
    double inside = rounding * std::min(threshold, entry.absMax) / entry.absMax;
    return std::sqrt((inside + clipped) / (entry.absMax * entry.absMax / 3));
  }
  double binWidth = entry.histMax / entry.counts.size();
  double noise = 0, signal = 0;
  for (size_t b = 0; b < entry.counts.size(); ++b) {
    double c = entry.counts[b];
    if (b == 0) // zeros quantize exactly
      c = std::max(0.0, c - static_cast<double>(entry.zeroCount));
    if (c == 0)
      continue;
    double x = (b + 0.5) * binWidth;
    signal += c * x * x;
    if (x > threshold)
      noise += c * (x - threshold) * (x - threshold);
    else
      noise += c * std::min(rounding, x * x);
  }
  return signal > 0 ? std::sqrt(noise / signal) : 0;
}
