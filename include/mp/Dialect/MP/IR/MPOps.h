//===- MPOps.h - mp dialect operations --------------------------*- C++ -*-===//
//
// Loss-scaling and calibration ops, and the loss-scale state machine they
// share with their folders.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPOPS_H
#define MP_DIALECT_MP_IR_MPOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mp/Dialect/MP/IR/MPAttrs.h"
#include "mp/Dialect/MP/IR/MPDialect.h"

namespace mlir {
namespace mp {

/// Dynamic loss-scale state: the scale and the clean steps since it changed.
struct LossScaleState {
  float scale;
  int64_t growthTracker;
};

/// Parameters of the dynamic loss-scale state machine (mp.update_scale).
struct LossScaleParams {
  float growthFactor = 2.0f;
  float backoffFactor = 0.5f;
  int64_t growthInterval = 2000;
  float minScale = 1.0f;
  float maxScale = 16777216.0f;
};

/// One step of the state machine; the reference the folder and the
/// lowering follow.
LossScaleState updateLossScale(LossScaleState state, bool foundInf,
                               const LossScaleParams &params);

} // namespace mp
} // namespace mlir

#define GET_OP_CLASSES
#include "mp/Dialect/MP/IR/MPOps.h.inc"

#endif // MP_DIALECT_MP_IR_MPOPS_H
