//===- GradientFunction.h - checks on a gradient function -------*- C++ -*-===//
//
// --mp-loss-scaling and --mp-optimizer rewrite the gradient function that
// --mp-autodiff builds (mp.gradient_of). They also accept one written or
// edited by hand, so they check its shape first and give an error instead of
// building invalid IR (or crashing) on a function they cannot handle.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_GRADIENTFUNCTION_H
#define MP_TRANSFORMS_GRADIENTFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
namespace mp {

/// What a gradient function looks like once checked.
struct GradientFunctionInfo {
  /// Indices of the mp.param arguments, in order; result 1 + k is the
  /// gradient of parameter k.
  SmallVector<unsigned> paramIndices;
  /// Arguments of the loss (all but the trailing loss-scale argument).
  unsigned numLossArgs = 0;
};

/// Checks that `grad` has the form --mp-autodiff (and, with `scaled`,
/// --mp-loss-scaling) produces: one block ending in func.return; mp.param
/// arguments (names the dialect verified) on ranked float tensors; results
/// (loss, one gradient of the parameter's shape per parameter[, found_inf
/// i1][, amax f32 with `amax`: adaptive scaling]), with a trailing f32 scale
/// argument when `scaled`. `pass` names the pass in messages. Emits an
/// error on `grad` and fails otherwise.
LogicalResult checkGradientFunction(func::FuncOp grad, bool scaled,
                                    StringRef pass, GradientFunctionInfo &info,
                                    bool amax = false);

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_GRADIENTFUNCTION_H
