//===- MPDialect.cpp - the mp dialect and its attributes ------------------===//

#include "mp/Dialect/MP/IR/MPDialect.h"
#include "mp/Dialect/MP/IR/MPAttrs.h"
#include "mp/Dialect/MP/IR/MPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mp;

#include "mp/Dialect/MP/IR/MPEnums.cpp.inc"
#include "mp/Dialect/MP/IR/MPOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "mp/Dialect/MP/IR/MPAttrs.cpp.inc"

namespace {
/// Every mp op may be inlined: a function that scales, unscales or observes
/// (a training step with loss scaling) is inlined into its caller like any
/// other (mp-run inlines the step so that its results are computed in the
/// caller's buffers).
struct MPInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void MPDialect::initialize() {
  addInterfaces<MPInlinerInterface>();
  addOperations<
#define GET_OP_LIST
#include "mp/Dialect/MP/IR/MPOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mp/Dialect/MP/IR/MPAttrs.cpp.inc"
      >();
}

LogicalResult
PrecisionDecisionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              PrecisionClass precisionClass, Type computeType) {
  if (!computeType.isF16() && !computeType.isBF16() && !computeType.isF32())
    return emitError() << "compute type must be f16, bf16 or f32, got "
                       << computeType;
  return success();
}

Operation *MPDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  if (auto typed = dyn_cast<TypedAttr>(value))
    if (arith::ConstantOp::isBuildableWith(typed, type))
      return arith::ConstantOp::create(builder, loc, type, typed);
  return nullptr;
}
