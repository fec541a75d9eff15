//===- QuantizePlan.cpp - what --mp-quantize decides per op ---------------===//
//
// For each matmul or convolution: whether the int8 rewrite handles it, the
// activation threshold and scale calibration gives it, the estimated error
// of its activation and weight in int8, and whether that error (or
// fallback-ops) sends it to the fallback precision.
//
//===----------------------------------------------------------------------===//

#include "QuantizePlan.h"
#include "QuantizeBuilders.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/PrecisionAnalysis.h"

#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::mp;
using namespace mlir::mp::quantize;

/// A batched product's B operand that is a weight: a constant, or an
/// mp.param argument of the function.
static bool isWeight(Value value) {
  if (matchPattern(value, m_Constant()))
    return true;
  auto arg = dyn_cast<BlockArgument>(value);
  auto func =
      arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  return func && arg.getOwner() == &func.getBody().front() &&
         func.getArgAttr(arg.getArgNumber(), kParamAttrName);
}

/// Why the int8 rewrite does not handle `op`, or Unsupported::None.
static Unsupported unsupportedReason(linalg::LinalgOp op,
                                     StringRef activationId) {
  Operation *operation = op.getOperation();
  auto allF32 = llvm::all_of(operation->getOperandTypes(), [](Type t) {
    return cast<RankedTensorType>(t).getElementType().isF32();
  });
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::Conv2DNchwFchwOp>(
          operation))
    return Unsupported::OpKind;
  if (!allF32)
    return Unsupported::NonF32Operands;
  if (failed(int8ChannelDims(operation)))
    return Unsupported::MatmulLayout;
  // Attention's products multiply two activations: neither has channels
  // to scale once.
  if (isa<linalg::BatchMatmulOp>(operation) &&
      !isWeight(op.getDpsInputOperand(1)->get()))
    return Unsupported::BatchedActivations;
  if (!isZeroFill(op.getDpsInitOperand(0)->get()))
    return Unsupported::NonZeroAccumulator;
  if (activationId.empty())
    return Unsupported::NoActivationId;
  return Unsupported::None;
}

LogicalResult mlir::mp::quantize::planFunction(
    func::FuncOp func, const llvm::StringMap<CalibrationEntry> &entries,
    const PlanOptions &options, std::vector<Decision> &decisions) {
  llvm::DenseMap<Value, std::string> ids = valueIds(func);
  bool ok = true;
  func.walk([&](Operation *op) {
    if (!isCalibrationTarget(op))
      return;
    if (isa<tosa::TosaOp>(op)) {
      op->emitError() << op->getName()
                      << " must be imported to linalg before quantization; "
                         "run --mp-import first (and calibrate the imported "
                         "module)";
      ok = false;
      return;
    }
    Decision d;
    d.op = op;
    d.function = func.getSymName().str();
    d.opName = op->getName().getStringRef().str();
    d.location = locationText(op->getLoc());
    auto linalgOp = cast<linalg::LinalgOp>(op);
    Value weight = linalgOp.getDpsInputOperand(1)->get();
    d.activationId = ids.lookup(linalgOp.getDpsInputOperand(0)->get());
    d.weightId = ids.lookup(weight);
    d.resultId = ids.lookup(op->getResult(0));
    d.result = op->getResult(0);
    d.unsupported = unsupportedReason(linalgOp, d.activationId);
    if (d.unsupported != Unsupported::None) {
      decisions.push_back(std::move(d));
      return;
    }
    if (options.dynamic) {
      // Scaled by its own max |x| on every call: nothing clipped, and no
      // threshold or scale known here.
      d.activationError = 0;
    } else {
      auto entry = entries.find(d.activationId);
      if (entry == entries.end()) {
        op->emitError() << "no calibration data for '" << d.activationId
                        << "', the input of this " << op->getName()
                        << "; calibrate this module first (mp-run infer "
                           "--calibrate N, or --mp-calibrate and a run)";
        ok = false;
        return;
      }
      d.threshold =
          chooseThreshold(entry->second, options.method, options.percentile);
      d.activationScale = d.threshold > 0 ? d.threshold / 127.0 : 1.0;
      d.activationError = estimateRelativeError(entry->second, d.threshold);
    }
    DenseElementsAttr constant;
    if (matchPattern(weight, m_Constant(&constant))) {
      d.weightError = quantizeConstant(constant, int8ChannelDims(op)->weight,
                                       options.perChannel)
                          .error;
    } else {
      auto w = entries.find(d.weightId);
      if (!d.weightId.empty() && w != entries.end())
        d.weightError = estimateRelativeError(w->second, w->second.absMax);
    }
    double we = std::max(d.weightError, 0.0);
    d.error = std::sqrt(d.activationError * d.activationError + we * we);
    d.exceedsMaxError = d.error > options.maxError;
    d.namedInFallbackOps = llvm::is_contained(options.fallbackOps, d.resultId);
    d.precision = d.fellBack() ? options.fallback : OpPrecision::Int8;
    decisions.push_back(std::move(d));
  });
  return success(ok);
}
