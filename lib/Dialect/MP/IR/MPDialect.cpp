//===- MPDialect.cpp - the mp dialect and its attributes ------------------===//

#include "mp/Dialect/MP/IR/MPDialect.h"
#include "mp/Dialect/MP/IR/MPAttrs.h"
#include "mp/Dialect/MP/IR/MPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

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

LogicalResult LossScalingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, LossScalingMode mode,
    APFloat initScaleValue, APFloat growthFactorValue,
    APFloat backoffFactorValue, int64_t growthInterval, APFloat clipNormValue,
    std::optional<APFloat> marginValue, std::optional<int64_t> hysteresis) {
  double initScale = initScaleValue.convertToDouble();
  double growthFactor = growthFactorValue.convertToDouble();
  double backoffFactor = backoffFactorValue.convertToDouble();
  double clipNorm = clipNormValue.convertToDouble();
  if (mode == LossScalingMode::Auto)
    return emitError() << "loss-scaling mode must be dynamic, adaptive, "
                          "static or none (auto is resolved by "
                          "--mp-loss-scaling)";
  if (!(initScale > 0) || std::isinf(initScale) || !(growthFactor > 1) ||
      !(backoffFactor > 0 && backoffFactor < 1) || growthInterval < 1 ||
      !(clipNorm >= 0))
    return emitError()
           << "loss scaling needs init_scale > 0, growth_factor > 1, "
              "0 < backoff_factor < 1, growth_interval >= 1 and "
              "clip_norm >= 0";
  if (mode != LossScalingMode::Adaptive) {
    if (marginValue || hysteresis)
      return emitError() << "margin and hysteresis are settings of adaptive "
                            "loss scaling only, not of mode "
                         << stringifyLossScalingMode(mode);
    return success();
  }
  if (!marginValue || !hysteresis)
    return emitError() << "adaptive loss scaling needs a margin and a "
                          "hysteresis";
  // The step computes in f32: a margin beyond f32's range would be inf.
  double margin = marginValue->convertToDouble();
  if (!(margin >= 1) || std::isinf(static_cast<float>(margin)) ||
      *hysteresis < 1)
    return emitError() << "adaptive loss scaling needs 1 <= margin < inf and "
                          "hysteresis >= 1";
  // The step's growth tracker is an i32: it counts the hysteresis up and
  // the cool-down after an overflow from -growth_interval.
  if (growthInterval > INT32_MAX || *hysteresis > INT32_MAX)
    return emitError() << "adaptive loss scaling needs growth_interval and "
                          "hysteresis to fit the step's i32 growth tracker";
  return success();
}

//===----------------------------------------------------------------------===//
// The contract attributes (discardable mp.* attributes)
//===----------------------------------------------------------------------===//

namespace {
/// Where a contract attribute may appear.
enum Place : unsigned {
  OnFunction = 1, // a function-like op (func.func, llvm.func)
  OnOp = 2,       // any op
  OnValue = 4     // a function argument or result
};

/// One contract attribute: its name (from ODS), where it goes and what its
/// value must be.
struct ContractAttr {
  StringRef name;
  unsigned places;
  bool (*isValid)(Attribute);
  const char *expected;
};

bool isUnit(Attribute a) { return isa<UnitAttr>(a); }
bool isName(Attribute a) {
  auto s = dyn_cast<StringAttr>(a);
  return s && !s.empty();
}
bool isSymbol(Attribute a) { return isa<FlatSymbolRefAttr>(a); }
bool isDenseFloats(Attribute a) {
  auto d = dyn_cast<DenseElementsAttr>(a);
  return d && d.getElementType().isF32();
}
bool isIndex(Attribute a) {
  auto i = dyn_cast<IntegerAttr>(a);
  return i && i.getType().isInteger(64) && i.getInt() >= 0;
}
bool isIndices(Attribute a) {
  auto array = dyn_cast<DenseI64ArrayAttr>(a);
  return array &&
         llvm::all_of(array.asArrayRef(), [](int64_t i) { return i >= 0; });
}
bool isWindow(Attribute a) {
  auto i = dyn_cast<IntegerAttr>(a);
  return i && i.getType().isInteger(64) && i.getInt() >= 2 &&
         i.getInt() <= INT32_MAX;
}
bool isLossScaling(Attribute a) { return isa<LossScalingAttr>(a); }
bool isPrecision(Attribute a) { return isa<FloatPrecisionAttr>(a); }
bool isDecision(Attribute a) { return isa<PrecisionDecisionAttr>(a); }

const ContractAttr *lookupContract(StringRef name) {
  using D = MPDialect;
  static const ContractAttr table[] = {
      {D::LossAttrHelper::getNameStr(), OnFunction | OnValue, isUnit, "a unit"},
      {D::PredictAttrHelper::getNameStr(), OnFunction, isUnit, "a unit"},
      {D::GradientOfAttrHelper::getNameStr(), OnFunction, isSymbol,
       "a symbol reference (@function)"},
      {D::LossScalingAttrHelper::getNameStr(), OnFunction, isLossScaling,
       "#mp.loss_scaling<...>"},
      {D::QuantizeWeightsAttrHelper::getNameStr(), OnFunction, isSymbol,
       "a symbol reference (@function)"},
      {D::ConvertWeightsAttrHelper::getNameStr(), OnFunction, isSymbol,
       "a symbol reference (@function)"},
      {D::InPlaceUpdatesAttrHelper::getNameStr(), OnFunction, isUnit, "a unit"},
      {D::EntryAttrHelper::getNameStr(), OnFunction, isIndex,
       "a non-negative i64 (how many of the entry's arguments are inputs)"},
      {D::AccumulationOfAttrHelper::getNameStr(), OnFunction, isSymbol,
       "a symbol reference (@function)"},
      {D::AccumulateAttrHelper::getNameStr(), OnFunction, isWindow,
       "an i64 from 2 to 2^31-1 (micro-batches per optimizer step)"},
      {D::ParallelBodyAttrHelper::getNameStr(), OnFunction, isUnit, "a unit"},
      {D::ParallelLaunchAttrHelper::getNameStr(), OnFunction, isSymbol,
       "a symbol reference (@function)"},
      {D::ParallelNoaliasAttrHelper::getNameStr(), OnFunction, isIndices,
       "array<i64: ...> of non-negative argument positions"},
      {D::InputAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the model input's name)"},
      {D::OutputAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the model output's name)"},
      {D::ParamAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::InitialValueAttrHelper::getNameStr(), OnValue, isDenseFloats,
       "dense f32 elements (the parameter's starting value)"},
      {D::GradAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::StateAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (\"<parameter>.<slot>\")"},
      {D::QweightAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::QscaleAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::ConvertedAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::UpdateOfAttrHelper::getNameStr(), OnValue, isIndex,
       "a non-negative i64 (an argument index)"},
      {D::AccumulatorAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::CopyOfAttrHelper::getNameStr(), OnValue, isName,
       "a non-empty string (the parameter's name)"},
      {D::StepAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::LossScaleAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::GrowthTrackerAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::SteppedAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::FoundInfAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::GradAmaxAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::GradNormAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::WindowOverflowAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::WindowAmaxAttrHelper::getNameStr(), OnValue, isUnit, "a unit"},
      {D::SeedAttrHelper::getNameStr(), OnOp, isUnit, "a unit"},
      {D::SavedAttrHelper::getNameStr(), OnOp, isUnit, "a unit"},
      {D::ParallelChunkAttrHelper::getNameStr(), OnOp, isUnit, "a unit"},
      {D::PrecisionAttrHelper::getNameStr(), OnOp, isPrecision,
       "#mp.precision<f32>, #mp.precision<f16> or #mp.precision<bf16>"},
      {D::DecisionAttrHelper::getNameStr(), OnOp, isDecision,
       "#mp.decision<...>"},
      {D::IdAttrHelper::getNameStr(), OnOp, isName,
       "a non-empty string (the value's calibration id)"},
  };
  for (const ContractAttr &attr : table)
    if (attr.name == name)
      return &attr;
  return nullptr;
}

/// Checks `attr` against the contract; `what` names where it was found
/// ("", "argument #1 ", "result #0 ") for the message.
LogicalResult verifyContract(Operation *op, NamedAttribute attr, unsigned place,
                             const Twine &what) {
  const ContractAttr *contract = lookupContract(attr.getName().getValue());
  if (!contract)
    return op->emitError() << what << "has an unknown mp attribute '"
                           << attr.getName().getValue() << "'";
  // An attribute of functions sits on any op that is one.
  bool allowed = (contract->places & place) ||
                 (place == OnOp && (contract->places & OnFunction) &&
                  isa<FunctionOpInterface>(op));
  if (!allowed) {
    const char *where = "an op";
    if (contract->places & OnValue)
      where = contract->places & OnFunction ? "a function or a function result"
                                            : "a function argument or result";
    else if (contract->places & OnFunction)
      where = "a function";
    return op->emitError() << what << "'" << attr.getName().getValue()
                           << "' belongs on " << where;
  }
  if (!contract->isValid(attr.getValue()))
    return op->emitError() << what << "'" << attr.getName().getValue()
                           << "' must be " << contract->expected << ", got "
                           << attr.getValue();
  return success();
}
} // namespace

LogicalResult MPDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  return verifyContract(op, attr, OnOp, "");
}

LogicalResult MPDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  return verifyContract(op, attr, OnValue,
                        "argument #" + Twine(argIndex) + " ");
}

LogicalResult MPDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  return verifyContract(op, attr, OnValue,
                        "result #" + Twine(resultIndex) + " ");
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
