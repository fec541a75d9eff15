//===- PrecisionAnalysis.cpp - classify ops and place boundaries ----------===//
//
// Rules give each op a class; ranges and user overrides adjust it; a minimum
// cut over the op graph decides where infer and clear ops run.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/PrecisionAnalysis.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mp/Dialect/MP/IR/MPDialect.h"
#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mp/Support/MinCut.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

using namespace mlir;
using namespace mlir::mp;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

static bool touchesFloatTensors(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isFloatTensor) ||
         llvm::any_of(op->getResultTypes(), isFloatTensor);
}

/// Ops that look at a tensor's shape only; they accept any element type.
static bool isShapeOnly(Operation *op) {
  return isa<tensor::DimOp, tensor::RankOp>(op);
}

/// Calls `visit` on the ops of `func`'s graph, in pre-order: ops on float
/// tensors other than returns, constants, empty tensors and shape queries.
/// The bodies of linalg ops and pads (scalar code the op owns) are not
/// entered.
static void forEachGraphOp(func::FuncOp func,
                           llvm::function_ref<void(Operation *)> visit) {
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == func.getOperation())
      return WalkResult::advance();
    if (!isa<func::ReturnOp, arith::ConstantOp, tensor::EmptyOp>(op) &&
        !isShapeOnly(op) && touchesFloatTensors(op))
      visit(op);
    return isa<linalg::LinalgOp, tensor::PadOp>(op) ? WalkResult::skip()
                                                    : WalkResult::advance();
  });
}

/// Number of elements, with dynamic dimensions counted as 1024.
static int64_t numElements(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t n = 1;
  for (int64_t d : tensor.getShape())
    n *= ShapedType::isDynamic(d) ? 1024 : std::max<int64_t>(d, 1);
  return n;
}

Type mlir::mp::typeOf(MLIRContext *context, FloatPrecision precision) {
  switch (precision) {
  case FloatPrecision::F16:
    return Float16Type::get(context);
  case FloatPrecision::BF16:
    return BFloat16Type::get(context);
  case FloatPrecision::F32:
    break;
  }
  return Float32Type::get(context);
}

//===----------------------------------------------------------------------===//
// Classification rules
//===----------------------------------------------------------------------===//

namespace {
enum class BodyKind { Copy, Safe, Sigmoid, MaxMin, Sensitive, Unknown };
struct BodySummary {
  BodyKind kind = BodyKind::Copy;
  std::string detail; // the op that decided, for the reason
};
} // namespace

static bool isSensitiveMath(Operation *op) {
  return isa<math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp,
             math::Log2Op, math::Log10Op, math::Log1pOp, math::PowFOp,
             math::FPowIOp, math::IPowIOp, math::RsqrtOp, math::SqrtOp,
             math::CbrtOp, arith::RemFOp>(op);
}

static bool isSafeScalarOp(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::NegFOp,
             arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
             arith::MinNumFOp, arith::SelectOp, arith::CmpFOp, arith::CmpIOp,
             arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::ExtFOp,
             arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
             arith::ConstantOp, arith::IndexCastOp, math::TanhOp, math::AbsFOp,
             math::ErfOp, math::CopySignOp, math::FmaOp, linalg::IndexOp,
             linalg::YieldOp>(op);
}

static bool isConstantFloat(Value value) {
  return matchPattern(value, m_Constant());
}

/// 1 / (1 + exp(-x)): sigmoid is safe in low precision although it uses exp.
static bool isSigmoidBody(Block &body) {
  bool sawExp = false, sawDiv = false;
  for (Operation &op : body) {
    if (isa<math::ExpOp>(op))
      sawExp = true;
    else if (auto div = dyn_cast<arith::DivFOp>(op)) {
      if (!isConstantFloat(div.getLhs()))
        return false;
      sawDiv = true;
    } else if (!isSafeScalarOp(&op))
      return false;
  }
  return sawExp && sawDiv;
}

static BodySummary summarizeBody(Block &body) {
  BodySummary summary;
  if (isSigmoidBody(body))
    return {BodyKind::Sigmoid, "sigmoid"};
  for (Operation &op : body) {
    if (isa<linalg::YieldOp>(op))
      continue;
    // Index and integer arithmetic has no precision to choose.
    auto isFloat = [](Type t) { return isa<FloatType>(t); };
    if (!llvm::any_of(op.getOperandTypes(), isFloat) &&
        !llvm::any_of(op.getResultTypes(), isFloat))
      continue;
    StringRef name = op.getName().getStringRef();
    if (isSensitiveMath(&op))
      return {BodyKind::Sensitive, name.str()};
    if (auto div = dyn_cast<arith::DivFOp>(op)) {
      if (isConstantFloat(div.getRhs())) {
        summary.kind = std::max(summary.kind, BodyKind::Safe);
        continue;
      }
      return {BodyKind::Sensitive, "arith.divf by a computed value"};
    }
    if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
            arith::MinNumFOp>(op)) {
      if (summary.kind == BodyKind::Copy)
        summary.kind = BodyKind::MaxMin;
      summary.detail = name.str();
      continue;
    }
    if (!isSafeScalarOp(&op))
      return {BodyKind::Unknown, name.str()};
    if (!isa<arith::ConstantOp, linalg::IndexOp, arith::IndexCastOp>(op))
      summary.kind = BodyKind::Safe;
    if (summary.detail.empty())
      summary.detail = name.str();
  }
  return summary;
}

static Classified classifyLinalg(linalg::LinalgOp op) {
  Operation *operation = op.getOperation();
  StringRef name = operation->getName().getStringRef();
  if (name.starts_with("linalg.pooling_")) {
    if (name.contains("_max") || name.contains("_min"))
      return {PrecisionClass::Clear, "max/min pooling is precision-neutral"};
    return {PrecisionClass::Deny, "sum pooling accumulates; kept in f32"};
  }
  if (isa<linalg::FillOp>(operation))
    return {PrecisionClass::Clear, "fill is precision-neutral"};
  if (isa<linalg::TransposeOp, linalg::CopyOp>(operation))
    return {PrecisionClass::Clear, "data movement is precision-neutral"};
  if (isa<linalg::BroadcastOp>(operation))
    return {PrecisionClass::Infer, "broadcast follows its input"};
  // Contractions and convolutions reduce; skip the costly structural
  // matching for the many elementwise ops.
  bool reduces = op.getNumReductionLoops() > 0;
  if (reduces && linalg::isaContractionOpInterface(op))
    return {PrecisionClass::Allow,
            "contraction: low-precision inputs, f32 accumulation"};
  if (reduces && linalg::isaConvolutionOpInterface(op))
    return {PrecisionClass::Allow,
            "convolution: low-precision inputs, f32 accumulation"};

  if (operation->getNumRegions() != 1 || operation->getRegion(0).empty())
    return {PrecisionClass::Deny, "linalg op without a body; kept in f32"};
  BodySummary body = summarizeBody(operation->getRegion(0).front());
  if (reduces) {
    if (body.kind == BodyKind::MaxMin || body.kind == BodyKind::Copy)
      return {PrecisionClass::Clear, "max/min reduction is precision-neutral"};
    return {PrecisionClass::Deny,
            "sum/mean/variance reduction accumulates; kept in f32"};
  }
  switch (body.kind) {
  case BodyKind::Copy: {
    bool permutes = llvm::all_of(op.getIndexingMapsArray(),
                                 [](AffineMap m) { return m.isPermutation(); });
    if (permutes)
      return {PrecisionClass::Clear, "data movement is precision-neutral"};
    return {PrecisionClass::Infer, "broadcast follows its input"};
  }
  case BodyKind::MaxMin:
  case BodyKind::Safe:
    return {PrecisionClass::Infer,
            "elementwise " + body.detail + " follows its inputs"};
  case BodyKind::Sigmoid:
    return {PrecisionClass::Infer, "sigmoid follows its input"};
  case BodyKind::Sensitive:
    return {PrecisionClass::Deny,
            body.detail + " is numerically sensitive; kept in f32"};
  case BodyKind::Unknown:
    break;
  }
  return {PrecisionClass::Deny,
          "body op " + body.detail + " is not understood; kept in f32",
          /*understood=*/false};
}

FailureOr<Classified> mlir::mp::classifyOp(Operation *op) {
  if (!touchesFloatTensors(op))
    return failure();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return classifyLinalg(linalgOp);
  if (isa<linalg::SoftmaxOp>(op))
    return Classified{PrecisionClass::Deny,
                      "softmax is numerically sensitive; kept in f32"};
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp,
          tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
          tensor::PadOp, tensor::CastOp, tensor::GatherOp>(op))
    return Classified{PrecisionClass::Clear,
                      "data movement is precision-neutral"};
  if (isa<arith::CmpFOp>(op))
    return Classified{PrecisionClass::Clear, "comparison is precision-neutral"};
  if (isSensitiveMath(op) || isa<arith::DivFOp>(op))
    return Classified{PrecisionClass::Deny,
                      op->getName().getStringRef().str() +
                          " is numerically sensitive; kept in f32"};
  if (isSafeScalarOp(op) &&
      !isa<arith::ConstantOp, arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
           arith::UIToFPOp>(op))
    return Classified{PrecisionClass::Infer,
                      "elementwise " + op->getName().getStringRef().str() +
                          " follows its inputs"};
  if (isa<tensor::ExtractOp, tensor::InsertOp, tensor::FromElementsOp,
          tensor::SplatOp>(op))
    return Classified{PrecisionClass::Deny,
                      "scalar boundary: scalar code stays f32"};
  if (isa<MPDialect>(op->getDialect()))
    return Classified{PrecisionClass::Deny,
                      "mp ops keep the types they declare (loss scaling "
                      "unscales in f32)"};
  // --mp-data-parallel's buffers: gradients are all-reduced in f32.
  if (isa<bufferization::ToBufferOp, bufferization::ToTensorOp>(op))
    return Classified{PrecisionClass::Deny,
                      "buffers of a collective (--mp-data-parallel) are "
                      "all-reduced in f32"};
  if (isa<CallOpInterface>(op))
    return Classified{PrecisionClass::Deny,
                      "calls pass f32; the callee is analysed on its own"};
  if (isa<RegionBranchOpInterface, RegionBranchTerminatorOpInterface>(op))
    return Classified{PrecisionClass::Deny,
                      "control flow carries f32 across its boundaries; the "
                      "ops inside are analysed on their own"};
  return Classified{PrecisionClass::Deny,
                    "op '" + op->getName().getStringRef().str() +
                        "' is not understood by the precision analysis; "
                        "kept in f32",
                    /*understood=*/false};
}

//===----------------------------------------------------------------------===//
// Value ids and calibration statistics
//===----------------------------------------------------------------------===//

std::string mlir::mp::valueId(Value value, StringRef functionName,
                              unsigned ordinal) {
  std::string base;
  unsigned resultIndex = 0;
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    resultIndex = result.getResultNumber();
    if (auto id = op->getAttrOfType<StringAttr>(kIdAttrName))
      base = id.str();
    else if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      base = name.getName().str();
    else
      base = (functionName + "/" + Twine(ordinal)).str();
  } else {
    auto arg = cast<BlockArgument>(value);
    base = (functionName + "/arg" + Twine(arg.getArgNumber())).str();
  }
  if (resultIndex != 0)
    base += "#" + std::to_string(resultIndex);
  return base;
}

llvm::DenseMap<Value, std::string> mlir::mp::valueIds(func::FuncOp func) {
  // The same ops and ordinals as PrecisionGraphBuilder::classifyAll.
  llvm::DenseMap<Value, std::string> ids;
  StringRef name = func.getSymName();
  for (BlockArgument arg : func.getArguments())
    if (isFloatTensor(arg.getType()))
      ids[arg] = valueId(arg, name, 0);
  unsigned ordinal = 0;
  forEachGraphOp(func, [&](Operation *op) {
    if (!llvm::any_of(op->getResultTypes(), isFloatTensor))
      return;
    for (Value result : op->getResults())
      if (isFloatTensor(result.getType()))
        ids[result] = valueId(result, name, ordinal);
    ++ordinal;
  });
  return ids;
}

LogicalResult mlir::mp::forEachCalibrationEntry(
    StringRef path, std::string &error,
    llvm::function_ref<LogicalResult(StringRef, const llvm::json::Object &,
                                     double, double)>
        visit) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read calibration statistics '" + path.str() +
            "': " + buffer.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    error = "calibration statistics '" + path.str() +
            "' are not valid JSON: " + llvm::toString(parsed.takeError());
    return failure();
  }
  const llvm::json::Object *root = parsed->getAsObject();
  const llvm::json::Object *values = root ? root->getObject("values") : nullptr;
  if (!values) {
    error = "calibration statistics '" + path.str() +
            "' need a top-level object with a \"values\" object";
    return failure();
  }
  for (const auto &[key, entry] : *values) {
    const llvm::json::Object *stats = entry.getAsObject();
    std::optional<double> minimum =
        stats ? stats->getNumber("min") : std::nullopt;
    std::optional<double> maximum =
        stats ? stats->getNumber("max") : std::nullopt;
    if (!minimum || !maximum) {
      error = "calibration entry '" + key.str() + "' in '" + path.str() +
              "' needs numbers \"min\" and \"max\"";
      return failure();
    }
    if (failed(visit(key, *stats, *minimum, *maximum)))
      return failure();
  }
  return success();
}

FailureOr<llvm::StringMap<MeasuredRange>>
mlir::mp::readCalibrationStats(StringRef path, std::string &error) {
  llvm::StringMap<MeasuredRange> ranges;
  auto read = [&](StringRef key, const llvm::json::Object &stats,
                  double minimum, double maximum) {
    MeasuredRange range;
    range.absMax = std::max(std::abs(minimum), std::abs(maximum));
    if (std::optional<double> absMax = stats.getNumber("abs_max"))
      range.absMax = std::max(range.absMax, *absMax);
    std::optional<int64_t> count = stats.getInteger("count");
    std::optional<int64_t> zeros = stats.getInteger("zero_count");
    std::optional<int64_t> tiny = stats.getInteger("below_f16_normal_count");
    if (count && tiny) {
      int64_t nonZero = *count - zeros.value_or(0);
      if (nonZero > 0)
        range.belowF16NormalFraction = double(*tiny) / double(nonZero);
    }
    ranges[key] = range;
    return success();
  };
  if (failed(forEachCalibrationEntry(path, error, read)))
    return failure();
  return ranges;
}

//===----------------------------------------------------------------------===//
// The graph and its minimum cut
//===----------------------------------------------------------------------===//

/// Fills of constants: the rewrite re-creates them in any element type for
/// free, so converting their results costs nothing. (Constants and empty
/// tensors are not analysed at all, for the same reason.)
static bool isFreeSource(Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureTensorSemantics() &&
           matchPattern(fill.getInputs()[0], m_Constant()) &&
           fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
  return false;
}

/// True when `operand` is a DPS init whose payload the op never reads.
static bool isUnreadInit(OpOperand &operand) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(operand.getOwner());
  if (!linalgOp || !linalgOp.isDpsInit(&operand))
    return false;
  return !linalgOp.payloadUsesValueFromOperand(&operand);
}

/// Bytes an op saves per run when it reads and writes the low type.
static int64_t savingsIfLow(Operation *op, Type lowType) {
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp,
          tensor::CastOp>(op))
    return 0; // views: no data moves
  int64_t perElement = 4 - lowType.getIntOrFloatBitWidth() / 8;
  int64_t elements = 0;
  for (OpOperand &operand : op->getOpOperands())
    if (isFloatTensor(operand.get().getType()) && !isUnreadInit(operand))
      elements += numElements(operand.get().getType());
  for (Type type : op->getResultTypes())
    if (isFloatTensor(type))
      elements += numElements(type);
  return elements * perElement;
}

namespace mlir {
namespace mp {

class PrecisionGraphBuilder {
public:
  PrecisionGraphBuilder(PrecisionAnalysis &result,
                        const PrecisionAnalysisOptions &options)
      : result(result), options(options) {}

  LogicalResult analyse(func::FuncOp func);

private:
  struct Node {
    int in = -1, out = -1;
  };
  void classifyAll(func::FuncOp func);
  void applyRanges(func::FuncOp func);
  void buildAndSolve(func::FuncOp func);
  OpDecision &decisionOf(Operation *op) {
    return result.ordered[result.index.lookup(op)].second;
  }
  void forceDeny(Operation *op, const std::string &why) {
    // The user's attribute wins over measured ranges too.
    if (op->hasAttr(kPrecisionAttrName))
      return;
    OpDecision &d = decisionOf(op);
    d.precisionClass = PrecisionClass::Deny;
    d.computeType = f32();
    d.reason = why;
    fixed[op] = true;
  }
  Type f32() { return Float32Type::get(options.lowType.getContext()); }

  PrecisionAnalysis &result;
  const PrecisionAnalysisOptions &options;
  /// Ops whose type no cut may change (rules, overrides, ranges).
  llvm::DenseMap<Operation *, bool> fixed;
  /// Fills of constants in the function (converted for free).
  llvm::DenseSet<Operation *> freeSources;
  std::vector<Operation *> functionOps;
  llvm::DenseMap<Operation *, unsigned> ordinals;
};

} // namespace mp
} // namespace mlir

void PrecisionGraphBuilder::classifyAll(func::FuncOp func) {
  unsigned ordinal = 0;
  forEachGraphOp(func, [&](Operation *op) {
    if (llvm::any_of(op->getResultTypes(), isFloatTensor))
      ordinals[op] = ordinal++;

    FailureOr<Classified> rule = classifyOp(op);
    OpDecision decision;
    decision.precisionClass = rule->precisionClass;
    decision.reason = rule->reason;
    decision.computeType = decision.precisionClass == PrecisionClass::Allow
                               ? options.lowType
                               : f32();
    StringRef name = op->getName().getStringRef();
    bool isFixed = decision.precisionClass == PrecisionClass::Allow ||
                   decision.precisionClass == PrecisionClass::Deny;

    if (llvm::is_contained(options.denyOps, name)) {
      decision = {PrecisionClass::Deny, f32(), "deny-ops names " + name.str()};
      isFixed = true;
    } else if (llvm::is_contained(options.allowOps, name)) {
      decision = {PrecisionClass::Allow, options.lowType,
                  "allow-ops names " + name.str()};
      isFixed = true;
    }
    if (auto given =
            op->getAttrOfType<PrecisionDecisionAttr>(kDecisionAttrName)) {
      decision = {given.getPrecisionClass(), given.getComputeType(),
                  "decision given in the input (mp.decision)"};
      isFixed = true;
    }
    // The dialect verifies that mp.precision is a #mp.precision<...>.
    if (auto forced =
            op->getAttrOfType<FloatPrecisionAttr>(kPrecisionAttrName)) {
      decision.computeType = typeOf(op->getContext(), forced.getValue());
      if (decision.computeType.isF32())
        decision.precisionClass = PrecisionClass::Deny;
      decision.reason = "user attribute mp.precision = #mp.precision<" +
                        stringifyFloatPrecision(forced.getValue()).str() + ">";
      isFixed = true;
    }
    // Ops already holding non-f32 floats keep their types unless told.
    bool allF32 = llvm::all_of(
        llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()),
        [](Type t) {
          return !isFloatTensor(t) ||
                 cast<RankedTensorType>(t).getElementType().isF32();
        });
    if (!allF32 && !isFixed) {
      decision.reason += "; keeps its non-f32 types";
      isFixed = true;
    }
    // An op the rules do not know stays f32, and the user is told.
    if (!rule->understood && decision.precisionClass == PrecisionClass::Deny)
      op->emitWarning() << decision.reason;

    result.index[op] = result.ordered.size();
    result.ordered.push_back({op, decision});
    fixed[op] = isFixed;
    functionOps.push_back(op);
    if (isFreeSource(op))
      freeSources.insert(op);
  });
}

void PrecisionGraphBuilder::applyRanges(func::FuncOp func) {
  if (!options.lowType.isF16())
    return;
  // Constants are measured without calibration: one beyond f16's safe range
  // would fold to inf, so its consumers stay f32.
  func.walk([&](arith::ConstantOp constant) {
    auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
    if (!dense)
      return;
    double absMax = 0;
    for (const APFloat &v : dense.getValues<APFloat>())
      absMax = std::max(absMax, std::abs(v.convertToDouble()));
    if (absMax <= options.f16SafeMax)
      return;
    std::string why = "range: a constant operand reaches |x| = " +
                      llvm::formatv("{0}", absMax).str() +
                      ", beyond f16's safe " +
                      llvm::formatv("{0}", options.f16SafeMax).str();
    for (Operation *user : constant->getUsers())
      if (result.index.count(user) && !freeSources.count(user))
        forceDeny(user, why);
  });
  if (options.ranges.empty())
    return;
  auto check = [&](Value value, const std::string &id) {
    auto it = options.ranges.find(id);
    if (it == options.ranges.end())
      return;
    const MeasuredRange &range = it->second;
    std::string why;
    if (range.absMax > options.f16SafeMax)
      why = "range: '" + id +
            "' reaches |x| = " + llvm::formatv("{0}", range.absMax).str() +
            ", beyond f16's safe " +
            llvm::formatv("{0}", options.f16SafeMax).str();
    else if (range.belowF16NormalFraction > 0.5)
      why =
          "range: " + std::to_string(int(range.belowF16NormalFraction * 100)) +
          "% of '" + id + "' lies below f16's normal range (2^-14)";
    if (why.empty())
      return;
    if (Operation *producer = value.getDefiningOp())
      if (result.index.count(producer) && !freeSources.count(producer))
        forceDeny(producer, why);
    for (Operation *user : value.getUsers())
      if (result.index.count(user) && !freeSources.count(user))
        forceDeny(user, why);
  };
  StringRef name = func.getSymName();
  for (BlockArgument arg : func.getArguments())
    if (isFloatTensor(arg.getType()))
      check(arg, valueId(arg, name, 0));
  for (Operation *op : functionOps)
    for (Value value : op->getResults())
      if (isFloatTensor(value.getType()))
        check(value, valueId(value, name, ordinals.lookup(op)));
}

void PrecisionGraphBuilder::buildAndSolve(func::FuncOp func) {
  MinCut graph;
  const int64_t inf = MinCut::kInfinite;
  llvm::DenseMap<Operation *, Node> nodes;
  int64_t bytesPerElement = 4 + options.lowType.getIntOrFloatBitWidth() / 8;

  auto fixHigh = [&](int node) { graph.addEdge(MinCut::kSource, node, inf); };
  auto fixLow = [&](int node) { graph.addEdge(node, MinCut::kSink, inf); };

  for (Operation *op : functionOps) {
    if (freeSources.count(op))
      continue;
    const OpDecision &d = decisionOf(op);
    Node node;
    node.in = graph.addNode();
    node.out = node.in;
    if (d.precisionClass == PrecisionClass::Allow && !d.computeType.isF32() &&
        !op->getAttr(kPrecisionAttrName)) {
      // Low inputs, f32 accumulator and result.
      node.out = graph.addNode();
      fixLow(node.in);
      fixHigh(node.out);
    } else if (fixed.lookup(op)) {
      if (d.computeType.isF32())
        fixHigh(node.in);
      else
        fixLow(node.in);
    } else {
      // A free op pays what it would have saved if it stays f32.
      graph.addEdge(node.in, MinCut::kSink, savingsIfLow(op, options.lowType));
    }
    nodes[op] = node;
  }

  // Function arguments and results. A function that is called in the
  // module keeps its signature: its callers pass f32.
  bool keepSignature =
      options.keepSignature || !SymbolTable::symbolKnownUseEmpty(
                                   func, func->getParentOfType<ModuleOp>());
  llvm::DenseMap<Value, int> argumentNodes;
  for (BlockArgument arg : func.getArguments()) {
    if (!isFloatTensor(arg.getType()))
      continue;
    int node = graph.addNode();
    if (keepSignature ||
        !cast<RankedTensorType>(arg.getType()).getElementType().isF32())
      fixHigh(node);
    argumentNodes[arg] = node;
  }
  llvm::DenseMap<OpOperand *, int> returnNodes;
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands()) {
      if (!isFloatTensor(operand.get().getType()))
        continue;
      int node = graph.addNode();
      if (keepSignature || !cast<RankedTensorType>(operand.get().getType())
                                .getElementType()
                                .isF32())
        fixHigh(node);
      returnNodes[&operand] = node;
    }
  });

  // Each value costs one conversion per direction, however many consumers
  // want it converted: auxiliary nodes carry that cost once.
  auto connect = [&](Value value, int producer) {
    SmallVector<int> consumers;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto it = returnNodes.find(&use); it != returnNodes.end()) {
        consumers.push_back(it->second);
        continue;
      }
      auto it = nodes.find(user);
      if (it == nodes.end() || isUnreadInit(use))
        continue;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
      bool isInit = linalgOp && linalgOp.isDpsInit(&use);
      consumers.push_back(isInit ? it->second.out : it->second.in);
    }
    if (consumers.empty())
      return;
    int64_t cost = numElements(value.getType()) * bytesPerElement;
    int toLow = graph.addNode(), toHigh = graph.addNode();
    graph.addEdge(producer, toLow, cost);
    graph.addEdge(toHigh, producer, cost);
    for (int consumer : consumers) {
      graph.addEdge(toLow, consumer, inf);
      graph.addEdge(consumer, toHigh, inf);
    }
  };
  for (auto [arg, node] : argumentNodes)
    connect(arg, node);
  for (Operation *op : functionOps) {
    auto it = nodes.find(op);
    if (it == nodes.end())
      continue;
    for (Value value : op->getResults())
      if (isFloatTensor(value.getType()))
        connect(value, it->second.out);
  }

  graph.solve();

  for (Operation *op : functionOps) {
    auto it = nodes.find(op);
    OpDecision &d = decisionOf(op);
    if (it == nodes.end()) {
      d.reason += "; re-created in whatever type its users need";
      continue;
    }
    if (fixed.lookup(op))
      continue;
    bool high = graph.onSourceSide(it->second.in);
    d.computeType = high ? f32() : options.lowType;
    d.reason += high ? "; f32: converting would move more bytes than running "
                       "low saves (min-cut)"
                     : "; low: cheapest boundary placement (min-cut)";
  }
  for (auto [arg, node] : argumentNodes)
    if (!graph.onSourceSide(node))
      result.argumentTypes[arg] = options.lowType;
  for (auto [operand, node] : returnNodes)
    if (!graph.onSourceSide(node))
      result.resultTypes[{func.getOperation(), operand->getOperandNumber()}] =
          options.lowType;
}

LogicalResult PrecisionGraphBuilder::analyse(func::FuncOp func) {
  fixed.clear();
  freeSources.clear();
  functionOps.clear();
  ordinals.clear();
  classifyAll(func);
  applyRanges(func);
  buildAndSolve(func);
  return success();
}

FailureOr<PrecisionAnalysis>
PrecisionAnalysis::run(ModuleOp module,
                       const PrecisionAnalysisOptions &options) {
  PrecisionAnalysis result;
  PrecisionGraphBuilder builder(result, options);
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(builder.analyse(func)))
      return failure();
  return result;
}

const OpDecision *PrecisionAnalysis::lookup(Operation *op) const {
  auto it = index.find(op);
  return it == index.end() ? nullptr : &ordered[it->second].second;
}

//===----------------------------------------------------------------------===//
// Options and report
//===----------------------------------------------------------------------===//

FailureOr<PrecisionAnalysisOptions> mlir::mp::makeAnalysisOptions(
    ModuleOp module, FloatPrecision dtype, ArrayRef<std::string> allowOps,
    ArrayRef<std::string> denyOps, StringRef calibrationPath, double f16SafeMax,
    bool keepSignature) {
  PrecisionAnalysisOptions options;
  // The option parser offers f16 and bf16; a caller may still set f32.
  if (dtype == FloatPrecision::F32)
    return mlir::emitError(module.getLoc())
           << "dtype must be a low-precision type (f16 or bf16), got f32";
  options.lowType = typeOf(module.getContext(), dtype);
  if (!(f16SafeMax > 0 && f16SafeMax <= 65504))
    return mlir::emitError(module.getLoc())
           << "f16-safe-max must lie in (0, 65504], got "
           << llvm::formatv("{0}", f16SafeMax).str();
  for (const std::string &name : allowOps)
    if (llvm::is_contained(denyOps, name))
      return mlir::emitError(module.getLoc())
             << "op '" << name << "' is named in both allow-ops and deny-ops";
  options.allowOps.assign(allowOps.begin(), allowOps.end());
  options.denyOps.assign(denyOps.begin(), denyOps.end());
  options.f16SafeMax = f16SafeMax;
  options.keepSignature = keepSignature;
  if (!calibrationPath.empty()) {
    std::string error;
    FailureOr<llvm::StringMap<MeasuredRange>> ranges =
        readCalibrationStats(calibrationPath, error);
    if (failed(ranges))
      return mlir::emitError(module.getLoc()) << error;
    options.ranges = std::move(*ranges);
  }
  return options;
}

static std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

llvm::json::Object
mlir::mp::buildReport(const PrecisionAnalysis &analysis,
                      const PrecisionAnalysisOptions &options) {
  llvm::json::Array ops;
  std::map<std::string, int64_t> perClass = {
      {"allow", 0}, {"infer", 0}, {"clear", 0}, {"deny", 0}};
  std::map<std::string, int64_t> perType;
  for (const auto &[op, decision] : analysis.decisions()) {
    std::string cls = stringifyPrecisionClass(decision.precisionClass).str();
    std::string type = typeText(decision.computeType);
    ++perClass[cls];
    ++perType[type];
    auto func = op->getParentOfType<func::FuncOp>();
    ops.push_back(
        llvm::json::Object{{"op", op->getName().getStringRef()},
                           {"function", func ? func.getSymName() : StringRef()},
                           {"loc", locationText(op->getLoc())},
                           {"class", cls},
                           {"decision", type},
                           {"reason", decision.reason}});
  }
  llvm::json::Object classes, types;
  for (auto &[k, v] : perClass)
    classes[k] = v;
  for (auto &[k, v] : perType)
    types[k] = v;
  return llvm::json::Object{
      {"dtype", typeText(options.lowType)},
      {"ops", std::move(ops)},
      {"totals", llvm::json::Object{{"class", std::move(classes)},
                                    {"decision", std::move(types)}}}};
}

LogicalResult mlir::mp::writeReport(ModuleOp module, llvm::json::Object report,
                                    StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return mlir::emitError(module.getLoc())
           << "cannot write report '" << path << "': " << ec.message();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
  return success();
}
