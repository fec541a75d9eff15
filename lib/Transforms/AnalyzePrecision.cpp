//===- AnalyzePrecision.cpp - record precision decisions on ops -----------===//

#include "mp/Transforms/Passes.h"
#include "mp/Transforms/PrecisionAnalysis.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPANALYZEPRECISION
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {
struct AnalyzePrecisionPass
    : mp::impl::MPAnalyzePrecisionBase<AnalyzePrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PrecisionAnalysisOptions> options =
        makeAnalysisOptions(module, dtype, allowOps, denyOps, calibration,
                            f16SafeMax, keepSignature);
    if (failed(options))
      return signalPassFailure();
    FailureOr<PrecisionAnalysis> analysis =
        PrecisionAnalysis::run(module, *options);
    if (failed(analysis))
      return signalPassFailure();

    for (const auto &[op, decision] : analysis->decisions()) {
      op->setAttr(kDecisionAttrName,
                  PrecisionDecisionAttr::get(op->getContext(),
                                             decision.precisionClass,
                                             decision.computeType));
      switch (decision.precisionClass) {
      case PrecisionClass::Allow:
        ++numAllow;
        break;
      case PrecisionClass::Infer:
        ++numInfer;
        break;
      case PrecisionClass::Clear:
        ++numClear;
        break;
      case PrecisionClass::Deny:
        ++numDeny;
        break;
      }
      if (!decision.computeType.isF32())
        ++numLow;
    }
    if (!report.empty() &&
        failed(writeReport(module, buildReport(*analysis, *options), report)))
      return signalPassFailure();
  }
};
} // namespace
