//===- QuantizeReport.cpp - the JSON report of --mp-quantize --------------===//
//
// Every decision with its reason, threshold, scales and error estimates, and
// for int8 ops what the rewrite did with the weights, the dequantization and
// the bias; then the options and the totals per precision.
//
//===----------------------------------------------------------------------===//

#include "QuantizePlan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace mlir::mp;
using namespace mlir::mp::quantize;

// The report's words for the decisions' enums, in the enums' order.

static StringRef nameOf(OpPrecision precision) {
  static const char *const names[] = {"f32", "f16", "int8"};
  return names[static_cast<int>(precision)];
}

static StringRef nameOf(Unsupported unsupported) {
  static const char *const names[] = {
      "",
      "not quantized: int8 rewriting supports linalg.matmul, "
      "linalg.batch_matmul and linalg.conv_2d_nchw_fchw",
      "not quantized: operands are not all f32",
      "not quantized: matmul with a transposed A or broadcast operands "
      "(plain and transposed-B matmuls and plain batch_matmuls are "
      "quantized)",
      "not quantized: batch_matmul of two activations (its B is neither a "
      "constant nor an mp.param weight)",
      "not quantized: accumulates into a value other than a zero fill",
      "not quantized: its input has no calibration id (a constant or an "
      "uncounted op)"};
  return names[static_cast<int>(unsupported)];
}

static StringRef nameOf(WeightSource weights) {
  static const char *const names[] = {"", "hoisted", "constant", "inline"};
  return names[static_cast<int>(weights)];
}

static StringRef nameOf(Dequantization dequantize) {
  static const char *const names[] = {"", "fused", "separate"};
  return names[static_cast<int>(dequantize)];
}

/// The report's sentence for a decision.
static std::string reasonText(const Decision &d, const PlanOptions &options) {
  if (d.unsupported != Unsupported::None)
    return nameOf(d.unsupported).str();
  if (!d.fellBack())
    return "int8: estimated error within max-error";
  std::string reason;
  if (d.exceedsMaxError)
    reason = "estimated error " + std::to_string(d.error) +
             " exceeds max-error " + std::to_string(options.maxError);
  if (d.namedInFallbackOps)
    reason += (reason.empty() ? "" : "; ") +
              std::string("fallback-ops names '") + d.resultId + "'";
  reason += "; runs in " + nameOf(d.precision).str();
  return reason;
}

LogicalResult mlir::mp::quantize::writeReport(StringRef path, StringRef mode,
                                              StringRef calibration,
                                              const PlanOptions &options,
                                              ArrayRef<Decision> decisions,
                                              std::string &error) {
  llvm::json::Array ops;
  std::map<std::string, int64_t> counts;
  for (const Decision &d : decisions) {
    std::string precision = nameOf(d.precision).str();
    llvm::json::Object entry{{"function", d.function},
                             {"op", d.opName},
                             {"location", d.location},
                             {"precision", precision},
                             {"reason", reasonText(d, options)},
                             {"activation", d.activationId},
                             {"weight", d.weightId}};
    if (d.dequantize != Dequantization::None ||
        d.precision != OpPrecision::F32 || d.exceedsMaxError) {
      entry["threshold"] = d.threshold;
      entry["activation_scale"] = d.activationScale;
      entry["activation_error"] = d.activationError;
      if (d.weightError >= 0)
        entry["weight_error"] = d.weightError;
      entry["estimated_error"] = d.error;
    }
    if (d.precision == OpPrecision::Int8) {
      entry["weights"] = nameOf(d.weights);
      entry["dequantize"] = nameOf(d.dequantize);
      entry["bias_in_i32"] = d.biasInI32;
    }
    ops.push_back(std::move(entry));
    ++counts[precision];
  }
  llvm::json::Object totals;
  for (const auto &[precision, n] : counts)
    totals[precision] = n;
  llvm::json::Object root{
      {"mode", mode.str()},
      {"method", stringifyQuantizationMethod(options.method)},
      {"per_channel", options.perChannel},
      {"max_error", options.maxError},
      {"fallback", nameOf(options.fallback)},
      {"calibration", calibration.str()},
      {"ops", std::move(ops)},
      {"totals", std::move(totals)}};
  if (options.method == QuantizationMethod::Percentile)
    root["percentile"] = options.percentile;
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    error = "cannot write report '" + path.str() + "': " + ec.message();
    return failure();
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return success();
}
