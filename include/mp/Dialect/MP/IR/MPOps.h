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

/// Loss-scale state: the scale and its growth tracker (dynamic: the clean
/// steps since the scale changed; adaptive: see AdaptiveLossScaleParams).
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

/// Parameters of the adaptive loss scaler (mp.adapt_scale). Its growth
/// tracker counts, when >= 0, the clean steps in a row whose target was
/// below the scale (hysteresis) and, when < 0, the clean steps left of the
/// cool-down after an overflow (no growth).
/// The margin and the hysteresis have no default here: theirs are the
/// options' (--mp-loss-scaling, Passes.td).
struct AdaptiveLossScaleParams {
  AdaptiveLossScaleParams(float margin, int64_t hysteresis)
      : margin(margin), hysteresis(hysteresis) {}
  float margin;
  int64_t hysteresis;
  float backoffFactor = 0.5f;
  int64_t growthInterval = 2000; // the cool-down after an overflow
  float minScale = 1.0f;
  float maxScale = 16777216.0f;
  float limit = 65504.0f; // f16's largest finite value
};

/// The scale the adaptive scaler aims for after a clean step at `scale`
/// whose scaled gradients' largest magnitude was `amax`: the largest power
/// of two p with amax * (p / scale) <= limit / margin, clamped to
/// [minScale, maxScale]; `scale` itself when amax is not positive.
float adaptiveLossScaleTarget(float scale, float amax,
                              const AdaptiveLossScaleParams &params);

/// One step of the adaptive scaler; the reference the folder and the
/// lowering of mp.adapt_scale follow. After a clean step the scale moves
/// towards adaptiveLossScaleTarget: up by at most one power of two, down
/// at once but only after `hysteresis` clean steps in a row asked for less
/// (at once while cooling down after an overflow, when it does not grow).
LossScaleState updateAdaptiveLossScale(LossScaleState state, bool foundInf,
                                       float amax,
                                       const AdaptiveLossScaleParams &params);

} // namespace mp
} // namespace mlir

#define GET_OP_CLASSES
#include "mp/Dialect/MP/IR/MPOps.h.inc"

#endif // MP_DIALECT_MP_IR_MPOPS_H
