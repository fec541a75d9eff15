//===- AutodiffMovement.h - derivatives of ops that move data ---*- C++ -*-===//
//
// Reverse-mode rules for ops that only move elements: tensor slices,
// insertion into a slice, concatenation, and a gather (a linalg.generic
// that yields an element it extracts from a table at computed indices).
// Each rule maps the gradient of the op's result to the gradients of its
// operands; Autodiff.cpp accumulates them.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_AUTODIFFMOVEMENT_H
#define MP_TRANSFORMS_AUTODIFFMOVEMENT_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::mp {

/// One operand's gradient.
struct OperandGradient {
  Value operand;
  Value gradient;
};

/// The gradients of a data-movement op's tensor operands from \p resultGrad
/// (tensor.extract_slice, tensor.insert_slice, tensor.concat); fails,
/// reported, for dynamic shapes or positions. Returns an empty list for an
/// op it has no rule for: check `isDataMovement` first.
FailureOr<SmallVector<OperandGradient>>
dataMovementGradients(Operation *op, Value resultGrad, OpBuilder &b);

/// Whether dataMovementGradients has a rule for \p op.
bool isDataMovement(Operation *op);

/// The tensors \p op's body reads with tensor.extract without taking them
/// as operands (a gather's table).
SmallVector<Value> extractedTables(linalg::LinalgOp op);

/// The gradient of \p table, which the body of \p op (a gather: parallel
/// loops, a body that yields the element it extracts from \p table) reads:
/// a scatter-add of \p resultGrad into zeros shaped like the table, one
/// element at a time in loop order, so repeated indices (a token seen
/// twice) add up. Fails (reported) for any other use of the table.
FailureOr<Value> gatherTableGradient(linalg::LinalgOp op, Value table,
                                     Value resultGrad, OpBuilder &b);

} // namespace mlir::mp

#endif // MP_TRANSFORMS_AUTODIFFMOVEMENT_H
