//===- GradientFunction.cpp - checks on a gradient function ---------------===//

#include "mp/Transforms/GradientFunction.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::mp;

LogicalResult mlir::mp::checkGradientFunction(func::FuncOp grad, bool scaled,
                                              StringRef pass,
                                              GradientFunctionInfo &info,
                                              bool amax) {
  auto error = [&]() {
    return grad.emitError()
           << pass << ": gradient function '@" << grad.getSymName() << "' ";
  };
  if (grad.isExternal())
    return error() << "has no body";
  if (!grad.getBody().hasOneBlock())
    return error() << "has " << grad.getBody().getBlocks().size()
                   << " blocks; expected one, as --mp-autodiff builds";
  auto ret = dyn_cast<func::ReturnOp>(grad.getBody().front().getTerminator());
  if (!ret)
    return error() << "does not end in func.return";

  unsigned numArgs = grad.getNumArguments();
  if (scaled &&
      (numArgs == 0 || !grad.getArgument(numArgs - 1).getType().isF32()))
    return error() << "has loss scaling but no trailing f32 scale argument";
  info.numLossArgs = numArgs - (scaled ? 1 : 0);
  info.paramIndices.clear();
  for (unsigned i = 0; i < info.numLossArgs; ++i) {
    // The dialect verifies that a parameter's name is a non-empty string.
    auto string = grad.getArgAttrOfType<StringAttr>(i, kParamAttrName);
    if (!string)
      continue;
    auto type = dyn_cast<RankedTensorType>(grad.getArgument(i).getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      return error() << "argument #" << i << " ('" << string.getValue()
                     << "'): parameters must be ranked float tensors here, "
                        "got "
                     << grad.getArgument(i).getType()
                     << " (a scalar parameter can be a tensor<f32>)";
    info.paramIndices.push_back(i);
  }
  if (info.paramIndices.empty())
    return error() << "has no '" << kParamAttrName << "' arguments";

  amax = scaled && amax;
  unsigned expected =
      1 + info.paramIndices.size() + (scaled ? 1 : 0) + (amax ? 1 : 0);
  if (ret.getNumOperands() != expected)
    return error() << "returns " << ret.getNumOperands() << " values; expected "
                   << expected << " (the loss, " << info.paramIndices.size()
                   << " gradient(s)"
                   << (amax     ? ", found_inf and amax)"
                       : scaled ? " and found_inf)"
                                : ")");
  Type lossType = ret.getOperand(0).getType();
  if (!isa<FloatType>(getElementTypeOrSelf(lossType)) ||
      (isa<ShapedType>(lossType) &&
       !(isa<RankedTensorType>(lossType) &&
         cast<RankedTensorType>(lossType).getRank() == 0)))
    return error() << "result #0 (the loss) must be a float scalar or a 0-d "
                      "tensor, got "
                   << lossType;
  for (auto [k, index] : llvm::enumerate(info.paramIndices)) {
    auto param = cast<RankedTensorType>(grad.getArgument(index).getType());
    auto gradient = dyn_cast<RankedTensorType>(ret.getOperand(1 + k).getType());
    if (!gradient || !isa<FloatType>(gradient.getElementType()) ||
        gradient.getShape() != param.getShape())
      return error() << "result #" << 1 + k << " must be the gradient of "
                     << "parameter '"
                     << cast<StringAttr>(grad.getArgAttr(index, kParamAttrName))
                            .getValue()
                     << "' (a float tensor of shape " << param << "), got "
                     << ret.getOperand(1 + k).getType();
  }
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
