//===- GradientFunction.cpp - checks on a gradient function ---------------===//

#include "mp/Transforms/GradientFunction.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::mp;

namespace {

/// Checks one gradient function, step by step; each step reports its own
/// error on the function and fails.
class GradientChecker {
public:
  GradientChecker(func::FuncOp grad, bool scaled, StringRef pass,
                  GradientFunctionInfo &info, bool amax)
      : grad(grad), scaled(scaled), amax(scaled && amax), pass(pass),
        info(info) {}

  LogicalResult check() {
    if (failed(checkBody()) || failed(checkArguments()) ||
        failed(checkResultCount()) || failed(checkLoss()) ||
        failed(checkGradients()) || failed(checkScalingResults()))
      return failure();
    return success();
  }

private:
  InFlightDiagnostic error() {
    return grad.emitError()
           << pass << ": gradient function '@" << grad.getSymName() << "' ";
  }
  LogicalResult checkBody();
  LogicalResult checkArguments();
  LogicalResult checkParameter(unsigned index);
  LogicalResult checkResultCount();
  LogicalResult checkLoss();
  LogicalResult checkGradient(unsigned k, unsigned index);
  LogicalResult checkGradients();
  LogicalResult checkScalingResults();

  func::FuncOp grad;
  bool scaled;
  /// Adaptive loss scaling (an amax result) applies only when scaled.
  bool amax;
  StringRef pass;
  GradientFunctionInfo &info;
  func::ReturnOp ret;
};

} // namespace

/// One block, as --mp-autodiff builds, ending in func.return.
LogicalResult GradientChecker::checkBody() {
  if (grad.isExternal())
    return error() << "has no body";
  if (!grad.getBody().hasOneBlock())
    return error() << "has " << grad.getBody().getBlocks().size()
                   << " blocks; expected one, as --mp-autodiff builds";
  ret = dyn_cast<func::ReturnOp>(grad.getBody().front().getTerminator());
  if (!ret)
    return error() << "does not end in func.return";
  return success();
}

LogicalResult GradientChecker::checkParameter(unsigned index) {
  // The dialect verifies that a parameter's name is a non-empty string.
  auto string = grad.getArgAttrOfType<StringAttr>(index, kParamAttrName);
  if (!string)
    return success();
  Type argType = grad.getArgument(index).getType();
  auto type = dyn_cast<RankedTensorType>(argType);
  if (!type || !isa<FloatType>(type.getElementType()))
    return error() << "argument #" << index << " ('" << string.getValue()
                   << "'): parameters must be ranked float tensors here, "
                      "got "
                   << argType << " (a scalar parameter can be a tensor<f32>)";
  info.paramIndices.push_back(index);
  return success();
}

/// The loss's arguments (all but a trailing f32 scale when scaled), of
/// which at least one is a parameter.
LogicalResult GradientChecker::checkArguments() {
  unsigned numArgs = grad.getNumArguments();
  if (scaled &&
      (numArgs == 0 || !grad.getArgument(numArgs - 1).getType().isF32()))
    return error() << "has loss scaling but no trailing f32 scale argument";
  info.numLossArgs = numArgs - (scaled ? 1 : 0);
  info.paramIndices.clear();
  for (unsigned i = 0; i < info.numLossArgs; ++i)
    if (failed(checkParameter(i)))
      return failure();
  if (info.paramIndices.empty())
    return error() << "has no '" << kParamAttrName << "' arguments";
  return success();
}

/// The loss, a gradient per parameter, then found_inf and amax when the
/// loss is scaled.
LogicalResult GradientChecker::checkResultCount() {
  unsigned expected =
      1 + info.paramIndices.size() + (scaled ? 1 : 0) + (amax ? 1 : 0);
  if (ret.getNumOperands() == expected)
    return success();
  StringRef tail = amax     ? ", found_inf and amax)"
                   : scaled ? " and found_inf)"
                            : ")";
  return error() << "returns " << ret.getNumOperands() << " values; expected "
                 << expected << " (the loss, " << info.paramIndices.size()
                 << " gradient(s)" << tail;
}

/// True when \p type is a float scalar or a 0-d float tensor.
static bool isFloatScalarLike(Type type) {
  if (!isa<FloatType>(getElementTypeOrSelf(type)))
    return false;
  if (!isa<ShapedType>(type))
    return true;
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0;
}

LogicalResult GradientChecker::checkLoss() {
  Type lossType = ret.getOperand(0).getType();
  if (isFloatScalarLike(lossType))
    return success();
  return error() << "result #0 (the loss) must be a float scalar or a 0-d "
                    "tensor, got "
                 << lossType;
}

/// Result 1 + \p k is the gradient of the parameter at argument \p index:
/// a float tensor of its shape.
LogicalResult GradientChecker::checkGradient(unsigned k, unsigned index) {
  auto param = cast<RankedTensorType>(grad.getArgument(index).getType());
  Type resultType = ret.getOperand(1 + k).getType();
  auto gradient = dyn_cast<RankedTensorType>(resultType);
  if (gradient && isa<FloatType>(gradient.getElementType()) &&
      gradient.getShape() == param.getShape())
    return success();
  return error()
         << "result #" << 1 + k << " must be the gradient of "
         << "parameter '"
         << cast<StringAttr>(grad.getArgAttr(index, kParamAttrName)).getValue()
         << "' (a float tensor of shape " << param << "), got " << resultType;
}

LogicalResult GradientChecker::checkGradients() {
  for (auto [k, index] : llvm::enumerate(info.paramIndices))
    if (failed(checkGradient(k, index)))
      return failure();
  return success();
}

/// found_inf (i1) after the gradients when scaled; amax (f32) last when
/// adaptive.
LogicalResult GradientChecker::checkScalingResults() {
  if (scaled) {
    Type foundInf = ret.getOperand(1 + info.paramIndices.size()).getType();
    if (!foundInf.isInteger(1))
      return error() << "has loss scaling but its result #"
                     << 1 + info.paramIndices.size() << " (found_inf) is "
                     << foundInf << ", not i1";
  }
  if (amax && !ret.getOperands().back().getType().isF32())
    return error() << "has adaptive loss scaling but its last result (amax) "
                      "is "
                   << ret.getOperands().back().getType() << ", not f32";
  return success();
}

LogicalResult mlir::mp::checkGradientFunction(func::FuncOp grad, bool scaled,
                                              StringRef pass,
                                              GradientFunctionInfo &info,
                                              bool amax) {
  return GradientChecker(grad, scaled, pass, info, amax).check();
}
