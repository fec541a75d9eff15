//===- CheckNumerics.cpp - probe every op's output ------------------------===//
//
// Puts an mp.observe probe after each op with a floating-point tensor
// result. The runtime turns the probes into a numerics check (first inf/nan
// or out-of-FP16-range output, with its step) or into a per-op comparison
// of an FP32 and a mixed-precision run; the probe id says which op it is.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Support/IRUtils.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPCHECKNUMERICS
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

/// The element type an op only converts to, or null if it computes.
Type conversionTarget(Operation *op) {
  if (isFloatConversion(op))
    return getElementTypeOrSelf(op->getResult(0).getType());
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumResults() != 1)
    return {};
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2 || !isFloatConversion(&body.front()))
    return {};
  return body.front().getResult(0).getType();
}

/// Ops whose values are another op's (views, copies) or constants.
bool isNotWorthProbing(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         isa<tensor::EmptyOp, linalg::FillOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::ReshapeOp, tensor::CastOp,
             ObserveOp>(op);
}

/// "file:line:col" of the first file location in `loc`, else its text.
std::string describe(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (!isa<UnknownLoc>(inner))
        return describe(inner);
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return describe(callSite.getCallee());
  if (isa<UnknownLoc>(loc))
    return "unknown location";
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

struct MPCheckNumericsPass
    : mp::impl::MPCheckNumericsBase<MPCheckNumericsPass> {
  using MPCheckNumericsBase::MPCheckNumericsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (const std::string &name : functions)
      if (!module.lookupSymbol<func::FuncOp>(name)) {
        module.emitError() << "mp-check-numerics: no function '@" << name
                           << "' to probe";
        return signalPassFailure();
      }
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (!functions.empty() &&
          !llvm::is_contained(functions, func.getSymName().str()))
        continue;
      probe(func);
    }
  }

  void probe(func::FuncOp func) {
    unsigned ordinal = 0;
    SmallVector<Operation *> ops;
    // Ops of the function's regions, not the scalar ops of linalg bodies.
    func.walk([&](Operation *op) {
      if (!isa<linalg::LinalgOp>(op->getParentOp()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (isNotWorthProbing(op))
        continue;
      SmallVector<OpResult> results;
      for (OpResult result : op->getResults()) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (type && isa<FloatType>(type.getElementType()))
          results.push_back(result);
      }
      if (results.empty())
        continue;
      Type convertsTo = conversionTarget(op);
      if (convertsTo && skipConversions)
        continue;
      std::string what;
      llvm::raw_string_ostream name(what);
      if (convertsTo)
        name << "conversion to " << convertsTo;
      else
        name << op->getName();
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      for (OpResult result : results) {
        std::string id = (func.getSymName() + "#" + Twine(ordinal) + " " +
                          what + " at " + describe(op->getLoc()))
                             .str();
        if (results.size() > 1)
          id += " result " + std::to_string(result.getResultNumber());
        auto observe = ObserveOp::create(b, op->getLoc(), result.getType(),
                                         result, b.getStringAttr(id));
        result.replaceAllUsesExcept(observe.getOutput(), observe);
      }
      ++ordinal;
    }
  }
};

} // namespace
