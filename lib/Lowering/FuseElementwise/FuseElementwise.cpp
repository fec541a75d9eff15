//===- FuseElementwise.cpp - safe fusion of elementwise linalg chains -----===//
//
// Upstream's linalg-fuse-elementwise-ops fuses a producer into any consumer.
// Two cases hurt the step mp's autodiff builds:
//  - a producer whose payload reads its init (a gradient accumulated into a
//    zero-filled tensor) fused into a consumer with a loop the producer lacks
//    (the transposed product of a weight gradient): the fused op keeps the
//    init as an output and accumulates into it once per iteration of the
//    extra loop, so the result is wrong;
//  - any producer fused into a consumer with such an extra loop is
//    recomputed on every iteration of it (512 times for a 512-wide product).
// This pass fuses only producers that do not read their inits into
// consumers that read the fused value through a permutation: each element
// is computed exactly once and the result is the unfused one, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPFUSEELEMENTWISE
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

bool isSafeToFuse(OpOperand *fusedOperand) {
  auto producer = fusedOperand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(fusedOperand->getOwner());
  if (!producer || !consumer || !producer->hasOneUse())
    return false;
  // A low-precision copy saved for the backward pass (mp-save-low-precision)
  // is made where its f32 source dies; fused into its reader, it would keep
  // the source alive.
  if (producer->hasAttr(mlir::mp::kSavedAttrName))
    return false;
  for (OpOperand &init : producer.getDpsInitsMutable())
    if (producer.payloadUsesValueFromOperand(&init))
      return false;
  return consumer.getMatchingIndexingMap(fusedOperand).isPermutation();
}

struct FuseElementwisePass
    : public mp::impl::MPFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, isSafeToFuse);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
