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

StringRef mlir::mp::stringifyPrecisionRule(PrecisionRule rule) {
  switch (rule) {
  case PrecisionRule::Contraction:
    return "contraction";
  case PrecisionRule::Convolution:
    return "convolution";
  case PrecisionRule::DataMovement:
    return "data-movement";
  case PrecisionRule::Gather:
    return "gather";
  case PrecisionRule::Fill:
    return "fill";
  case PrecisionRule::Broadcast:
    return "broadcast";
  case PrecisionRule::Elementwise:
    return "elementwise";
  case PrecisionRule::Sigmoid:
    return "sigmoid";
  case PrecisionRule::SensitiveMath:
    return "sensitive-math";
  case PrecisionRule::Softmax:
    return "softmax";
  case PrecisionRule::MaxMinPooling:
    return "max-min-pooling";
  case PrecisionRule::SumPooling:
    return "sum-pooling";
  case PrecisionRule::MaxMinReduction:
    return "max-min-reduction";
  case PrecisionRule::SumReduction:
    return "sum-reduction";
  case PrecisionRule::Comparison:
    return "comparison";
  case PrecisionRule::ScalarBoundary:
    return "scalar-boundary";
  case PrecisionRule::MPOp:
    return "mp-op";
  case PrecisionRule::CollectiveBuffer:
    return "collective-buffer";
  case PrecisionRule::Call:
    return "call";
  case PrecisionRule::ControlFlow:
    return "control-flow";
  case PrecisionRule::NoBody:
    return "no-body";
  case PrecisionRule::NotUnderstood:
    return "not-understood";
  case PrecisionRule::AllowOps:
    return "allow-ops";
  case PrecisionRule::DenyOps:
    return "deny-ops";
  case PrecisionRule::GivenDecision:
    return "given-decision";
  case PrecisionRule::UserAttribute:
    return "user-attribute";
  case PrecisionRule::Range:
    return "range";
  }
  llvm_unreachable("unknown precision rule");
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

static bool touchesFloats(Operation &op) {
  auto isFloat = [](Type t) { return isa<FloatType>(t); };
  return llvm::any_of(op.getOperandTypes(), isFloat) ||
         llvm::any_of(op.getResultTypes(), isFloat);
}

tensor::ExtractOp mlir::mp::gatheredExtract(linalg::LinalgOp op) {
  Operation *operation = op.getOperation();
  if (operation->getNumResults() != 1 || op.getNumReductionLoops() != 0 ||
      operation->getNumRegions() != 1 || operation->getRegion(0).empty())
    return {};
  Block &body = operation->getRegion(0).front();
  auto extract = body.getTerminator()
                     ->getOperand(0)
                     .getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract->getBlock() != &body ||
      !isa<FloatType>(extract.getType()))
    return {};
  // The table comes from outside: not an operand (those are block
  // arguments, scalars) and not computed in the body.
  if (operation->isAncestor(extract.getTensor().getParentBlock()->getParentOp()))
    return {};
  // Index arithmetic only, besides the extract.
  WalkResult floats = operation->getRegion(0).walk([&](Operation *inner) {
    if (inner == extract.getOperation() || isa<linalg::YieldOp>(inner))
      return WalkResult::advance();
    return touchesFloats(*inner) ? WalkResult::interrupt()
                                 : WalkResult::advance();
  });
  return floats.wasInterrupted() ? tensor::ExtractOp() : extract;
}

/// Adds \p op, a float op of a linalg body, to \p summary; returns the
/// summary of the whole body when \p op alone decides it.
static std::optional<BodySummary> addToSummary(Operation &op,
                                               BodySummary &summary) {
  StringRef name = op.getName().getStringRef();
  if (isSensitiveMath(&op))
    return BodySummary{BodyKind::Sensitive, name.str()};
  if (auto div = dyn_cast<arith::DivFOp>(op)) {
    if (!isConstantFloat(div.getRhs()))
      return BodySummary{BodyKind::Sensitive, "arith.divf by a computed value"};
    summary.kind = std::max(summary.kind, BodyKind::Safe);
    return std::nullopt;
  }
  if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp>(op)) {
    if (summary.kind == BodyKind::Copy)
      summary.kind = BodyKind::MaxMin;
    summary.detail = name.str();
    return std::nullopt;
  }
  if (!isSafeScalarOp(&op))
    return BodySummary{BodyKind::Unknown, name.str()};
  if (!isa<arith::ConstantOp, linalg::IndexOp, arith::IndexCastOp>(op))
    summary.kind = BodyKind::Safe;
  if (summary.detail.empty())
    summary.detail = name.str();
  return std::nullopt;
}

static BodySummary summarizeBody(Block &body) {
  if (isSigmoidBody(body))
    return {BodyKind::Sigmoid, "sigmoid"};
  BodySummary summary;
  for (Operation &op : body) {
    // Index and integer arithmetic has no precision to choose.
    if (isa<linalg::YieldOp>(op) || !touchesFloats(op))
      continue;
    if (std::optional<BodySummary> decided = addToSummary(op, summary))
      return *decided;
  }
  return summary;
}

static Classified classifyPooling(StringRef name) {
  if (name.contains("_max") || name.contains("_min"))
    return {PrecisionRule::MaxMinPooling, PrecisionClass::Clear,
            "max/min pooling is precision-neutral"};
  return {PrecisionRule::SumPooling, PrecisionClass::Deny,
          "sum pooling accumulates; kept in f32"};
}

/// The class of linalg ops decided by what they are, not by their body.
static std::optional<Classified> classifyLinalgByKind(linalg::LinalgOp op,
                                                      bool reduces) {
  Operation *operation = op.getOperation();
  StringRef name = operation->getName().getStringRef();
  if (name.starts_with("linalg.pooling_"))
    return classifyPooling(name);
  if (isa<linalg::FillOp>(operation))
    return Classified{PrecisionRule::Fill, PrecisionClass::Clear,
                      "fill is precision-neutral"};
  if (isa<linalg::TransposeOp, linalg::CopyOp>(operation))
    return Classified{PrecisionRule::DataMovement, PrecisionClass::Clear,
                      "data movement is precision-neutral"};
  if (isa<linalg::BroadcastOp>(operation))
    return Classified{PrecisionRule::Broadcast, PrecisionClass::Infer,
                      "broadcast follows its input"};
  // Contractions and convolutions reduce; skip the costly structural
  // matching for the many elementwise ops.
  if (reduces && linalg::isaContractionOpInterface(op))
    return Classified{PrecisionRule::Contraction, PrecisionClass::Allow,
                      "contraction: low-precision inputs, f32 accumulation"};
  if (reduces && linalg::isaConvolutionOpInterface(op))
    return Classified{PrecisionRule::Convolution, PrecisionClass::Allow,
                      "convolution: low-precision inputs, f32 accumulation"};
  return std::nullopt;
}

/// The class of an elementwise linalg op whose body is summarized by
/// \p body.
static Classified classifyElementwise(linalg::LinalgOp op,
                                      const BodySummary &body) {
  switch (body.kind) {
  case BodyKind::Copy: {
    bool permutes = llvm::all_of(op.getIndexingMapsArray(),
                                 [](AffineMap m) { return m.isPermutation(); });
    if (permutes)
      return {PrecisionRule::DataMovement, PrecisionClass::Clear,
              "data movement is precision-neutral"};
    return {PrecisionRule::Broadcast, PrecisionClass::Infer,
            "broadcast follows its input"};
  }
  case BodyKind::MaxMin:
  case BodyKind::Safe:
    return {PrecisionRule::Elementwise, PrecisionClass::Infer,
            "elementwise " + body.detail + " follows its inputs"};
  case BodyKind::Sigmoid:
    return {PrecisionRule::Sigmoid, PrecisionClass::Infer,
            "sigmoid follows its input"};
  case BodyKind::Sensitive:
    return {PrecisionRule::SensitiveMath, PrecisionClass::Deny,
            body.detail + " is numerically sensitive; kept in f32"};
  case BodyKind::Unknown:
    break;
  }
  return {PrecisionRule::NotUnderstood, PrecisionClass::Deny,
          "body op " + body.detail + " is not understood; kept in f32",
          /*understood=*/false};
}

static Classified classifyLinalg(linalg::LinalgOp op) {
  Operation *operation = op.getOperation();
  bool reduces = op.getNumReductionLoops() > 0;
  if (std::optional<Classified> byKind = classifyLinalgByKind(op, reduces))
    return *byKind;
  if (operation->getNumRegions() != 1 || operation->getRegion(0).empty())
    return {PrecisionRule::NoBody, PrecisionClass::Deny,
            "linalg op without a body; kept in f32"};
  if (gatheredExtract(op))
    return {PrecisionRule::Gather, PrecisionClass::Clear,
            "gather copies table elements: precision-neutral, reads the "
            "table's copy in its own type"};
  BodySummary body = summarizeBody(operation->getRegion(0).front());
  if (!reduces)
    return classifyElementwise(op, body);
  if (body.kind == BodyKind::MaxMin || body.kind == BodyKind::Copy)
    return {PrecisionRule::MaxMinReduction, PrecisionClass::Clear,
            "max/min reduction is precision-neutral"};
  return {PrecisionRule::SumReduction, PrecisionClass::Deny,
          "sum/mean/variance reduction accumulates; kept in f32"};
}

/// The class of tensor and arith ops on float tensors, when they have one.
static std::optional<Classified> classifyTensorOrArith(Operation *op) {
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp,
          tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
          tensor::PadOp, tensor::CastOp, tensor::GatherOp>(op))
    return Classified{PrecisionRule::DataMovement, PrecisionClass::Clear,
                      "data movement is precision-neutral"};
  if (isa<arith::CmpFOp>(op))
    return Classified{PrecisionRule::Comparison, PrecisionClass::Clear,
                      "comparison is precision-neutral"};
  if (isSensitiveMath(op) || isa<arith::DivFOp>(op))
    return Classified{PrecisionRule::SensitiveMath, PrecisionClass::Deny,
                      op->getName().getStringRef().str() +
                          " is numerically sensitive; kept in f32"};
  if (isSafeScalarOp(op) &&
      !isa<arith::ConstantOp, arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
           arith::UIToFPOp>(op))
    return Classified{PrecisionRule::Elementwise, PrecisionClass::Infer,
                      "elementwise " + op->getName().getStringRef().str() +
                          " follows its inputs"};
  if (isa<tensor::ExtractOp, tensor::InsertOp, tensor::FromElementsOp,
          tensor::SplatOp>(op))
    return Classified{PrecisionRule::ScalarBoundary, PrecisionClass::Deny,
                      "scalar boundary: scalar code stays f32"};
  return std::nullopt;
}

/// Ops that keep f32 because they cross a boundary of the analysis: mp
/// ops, collective buffers, calls, control flow; otherwise unknown ops.
static Classified classifyBoundary(Operation *op) {
  if (isa<MPDialect>(op->getDialect()))
    return Classified{PrecisionRule::MPOp, PrecisionClass::Deny,
                      "mp ops keep the types they declare (loss scaling "
                      "unscales in f32)"};
  // --mp-data-parallel's buffers: gradients are all-reduced in f32.
  if (isa<bufferization::ToBufferOp, bufferization::ToTensorOp>(op))
    return Classified{PrecisionRule::CollectiveBuffer, PrecisionClass::Deny,
                      "buffers of a collective (--mp-data-parallel) are "
                      "all-reduced in f32"};
  if (isa<CallOpInterface>(op))
    return Classified{PrecisionRule::Call, PrecisionClass::Deny,
                      "calls pass f32; the callee is analysed on its own"};
  if (isa<RegionBranchOpInterface, RegionBranchTerminatorOpInterface>(op))
    return Classified{PrecisionRule::ControlFlow, PrecisionClass::Deny,
                      "control flow carries f32 across its boundaries; the "
                      "ops inside are analysed on their own"};
  return Classified{PrecisionRule::NotUnderstood, PrecisionClass::Deny,
                    "op '" + op->getName().getStringRef().str() +
                        "' is not understood by the precision analysis; "
                        "kept in f32",
                    /*understood=*/false};
}

FailureOr<Classified> mlir::mp::classifyOp(Operation *op) {
  if (!touchesFloatTensors(op))
    return failure();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return classifyLinalg(linalgOp);
  if (isa<linalg::SoftmaxOp>(op))
    return Classified{PrecisionRule::Softmax, PrecisionClass::Deny,
                      "softmax is numerically sensitive; kept in f32"};
  if (std::optional<Classified> known = classifyTensorOrArith(op))
    return *known;
  return classifyBoundary(op);
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

/// The JSON in the file at \p path, or nothing (with \p error set) when
/// it cannot be read or parsed.
static std::optional<llvm::json::Value>
readCalibrationJson(StringRef path, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read calibration statistics '" + path.str() +
            "': " + buffer.getError().message();
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    error = "calibration statistics '" + path.str() +
            "' are not valid JSON: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  return std::move(*parsed);
}

LogicalResult mlir::mp::forEachCalibrationEntry(
    StringRef path, std::string &error,
    llvm::function_ref<LogicalResult(StringRef, const llvm::json::Object &,
                                     double, double)>
        visit) {
  std::optional<llvm::json::Value> parsed = readCalibrationJson(path, error);
  if (!parsed)
    return failure();
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
  class BoundaryCut;
  void classifyAll(func::FuncOp func);
  void classifyOne(Operation *op, unsigned &ordinal);
  OpDecision ruleDecision(const Classified &rule, bool &isFixed);
  void applyOptionLists(Operation *op, OpDecision &decision, bool &isFixed);
  void applyRanges(func::FuncOp func);
  void denyIfAnalysed(Operation *op, const std::string &why);
  void denyUsersOfHugeConstant(arith::ConstantOp constant);
  void denyOutOfRange(Value value, const std::string &id);
  void denyMeasuredOutOfRange(func::FuncOp func);
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
    d.rule = PrecisionRule::Range;
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

/// True when every float tensor \p op reads or writes holds f32.
static bool hasOnlyF32Tensors(Operation *op) {
  return llvm::all_of(
      llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()),
      [](Type t) {
        return !isFloatTensor(t) ||
               cast<RankedTensorType>(t).getElementType().isF32();
      });
}

OpDecision PrecisionGraphBuilder::ruleDecision(const Classified &rule,
                                               bool &isFixed) {
  OpDecision decision;
  decision.precisionClass = rule.precisionClass;
  decision.reason = rule.reason;
  decision.rule = rule.rule;
  decision.computeType = decision.precisionClass == PrecisionClass::Allow
                             ? options.lowType
                             : f32();
  isFixed = decision.precisionClass == PrecisionClass::Allow ||
            decision.precisionClass == PrecisionClass::Deny;
  return decision;
}

void PrecisionGraphBuilder::applyOptionLists(Operation *op,
                                             OpDecision &decision,
                                             bool &isFixed) {
  StringRef name = op->getName().getStringRef();
  if (llvm::is_contained(options.denyOps, name)) {
    decision = {PrecisionClass::Deny, f32(), "deny-ops names " + name.str(),
                PrecisionRule::DenyOps};
    isFixed = true;
  } else if (llvm::is_contained(options.allowOps, name)) {
    decision = {PrecisionClass::Allow, options.lowType,
                "allow-ops names " + name.str(), PrecisionRule::AllowOps};
    isFixed = true;
  }
}

/// The op's own attributes win over rules and option lists: a decision
/// given in the input (mp.decision), then the user's mp.precision.
static void applyOpAttributes(Operation *op, OpDecision &decision,
                              bool &isFixed) {
  if (auto given =
          op->getAttrOfType<PrecisionDecisionAttr>(kDecisionAttrName)) {
    decision = {given.getPrecisionClass(), given.getComputeType(),
                "decision given in the input (mp.decision)",
                PrecisionRule::GivenDecision};
    isFixed = true;
  }
  // The dialect verifies that mp.precision is a #mp.precision<...>.
  auto forced = op->getAttrOfType<FloatPrecisionAttr>(kPrecisionAttrName);
  if (!forced)
    return;
  decision.computeType = typeOf(op->getContext(), forced.getValue());
  if (decision.computeType.isF32())
    decision.precisionClass = PrecisionClass::Deny;
  decision.reason = "user attribute mp.precision = #mp.precision<" +
                    stringifyFloatPrecision(forced.getValue()).str() + ">";
  decision.rule = PrecisionRule::UserAttribute;
  isFixed = true;
}

void PrecisionGraphBuilder::classifyOne(Operation *op, unsigned &ordinal) {
  if (llvm::any_of(op->getResultTypes(), isFloatTensor))
    ordinals[op] = ordinal++;

  FailureOr<Classified> rule = classifyOp(op);
  bool isFixed = false;
  OpDecision decision = ruleDecision(*rule, isFixed);
  applyOptionLists(op, decision, isFixed);
  applyOpAttributes(op, decision, isFixed);
  // Ops already holding non-f32 floats keep their types unless told.
  if (!hasOnlyF32Tensors(op) && !isFixed) {
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
}

void PrecisionGraphBuilder::classifyAll(func::FuncOp func) {
  unsigned ordinal = 0;
  forEachGraphOp(func, [&](Operation *op) { classifyOne(op, ordinal); });
}

void PrecisionGraphBuilder::denyIfAnalysed(Operation *op,
                                           const std::string &why) {
  if (result.index.count(op) && !freeSources.count(op))
    forceDeny(op, why);
}

/// The largest magnitude among \p dense's elements.
static double largestMagnitude(DenseFPElementsAttr dense) {
  double absMax = 0;
  for (const APFloat &v : dense.getValues<APFloat>())
    absMax = std::max(absMax, std::abs(v.convertToDouble()));
  return absMax;
}

void PrecisionGraphBuilder::denyUsersOfHugeConstant(
    arith::ConstantOp constant) {
  auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  if (!dense)
    return;
  double absMax = largestMagnitude(dense);
  if (absMax <= options.f16SafeMax)
    return;
  std::string why = "range: a constant operand reaches |x| = " +
                    llvm::formatv("{0}", absMax).str() +
                    ", beyond f16's safe " +
                    llvm::formatv("{0}", options.f16SafeMax).str();
  for (Operation *user : constant->getUsers())
    denyIfAnalysed(user, why);
}

/// Why \p range, measured for value \p id, rules out f16; empty when it
/// does not.
static std::string f16RangeProblem(const MeasuredRange &range,
                                   const std::string &id, double f16SafeMax) {
  if (range.absMax > f16SafeMax)
    return "range: '" + id +
           "' reaches |x| = " + llvm::formatv("{0}", range.absMax).str() +
           ", beyond f16's safe " + llvm::formatv("{0}", f16SafeMax).str();
  if (range.belowF16NormalFraction > 0.5)
    return "range: " + std::to_string(int(range.belowF16NormalFraction * 100)) +
           "% of '" + id + "' lies below f16's normal range (2^-14)";
  return "";
}

void PrecisionGraphBuilder::denyOutOfRange(Value value, const std::string &id) {
  auto it = options.ranges.find(id);
  if (it == options.ranges.end())
    return;
  std::string why = f16RangeProblem(it->second, id, options.f16SafeMax);
  if (why.empty())
    return;
  if (Operation *producer = value.getDefiningOp())
    denyIfAnalysed(producer, why);
  for (Operation *user : value.getUsers())
    denyIfAnalysed(user, why);
}

void PrecisionGraphBuilder::denyMeasuredOutOfRange(func::FuncOp func) {
  StringRef name = func.getSymName();
  for (BlockArgument arg : func.getArguments())
    if (isFloatTensor(arg.getType()))
      denyOutOfRange(arg, valueId(arg, name, 0));
  for (Operation *op : functionOps)
    for (Value value : op->getResults())
      if (isFloatTensor(value.getType()))
        denyOutOfRange(value, valueId(value, name, ordinals.lookup(op)));
}

void PrecisionGraphBuilder::applyRanges(func::FuncOp func) {
  if (!options.lowType.isF16())
    return;
  // Constants are measured without calibration: one beyond f16's safe range
  // would fold to inf, so its consumers stay f32.
  func.walk(
      [&](arith::ConstantOp constant) { denyUsersOfHugeConstant(constant); });
  if (options.ranges.empty())
    return;
  denyMeasuredOutOfRange(func);
}

/// The minimum-cut problem of one function: a node per op (two for an op
/// with low inputs and an f32 accumulator), one per float argument and per
/// returned float value, and conversion nodes between producers and
/// consumers. Ops on the source side of the cut stay f32.
class PrecisionGraphBuilder::BoundaryCut {
public:
  BoundaryCut(PrecisionGraphBuilder &builder, func::FuncOp func)
      : builder(builder), func(func), lowType(builder.options.lowType),
        bytesPerElement(4 + lowType.getIntOrFloatBitWidth() / 8) {}

  /// Builds the graph, solves it and records the decisions.
  void run() {
    addOpNodes();
    addSignatureNodes();
    connectValues();
    graph.solve();
    for (Operation *op : builder.functionOps)
      decideOp(op);
    decideSignature();
  }

private:
  static constexpr int64_t inf = MinCut::kInfinite;
  /// Node ids start at 2 (source and sink), so -1 never names one.
  static constexpr int kNoNode = -1;

  void fixHigh(int node) { graph.addEdge(MinCut::kSource, node, inf); }
  void fixLow(int node) { graph.addEdge(node, MinCut::kSink, inf); }

  void addOpNodes();
  Node addOpNode(Operation *op);
  bool keepsSignature();
  int addSignatureNode(Type type, bool keepSignature);
  void addSignatureNodes();
  int consumerNode(OpOperand &use);
  void connect(Value value, int producer);
  void connectValues();
  void decideOp(Operation *op);
  void decideSignature();

  PrecisionGraphBuilder &builder;
  func::FuncOp func;
  Type lowType;
  int64_t bytesPerElement;
  MinCut graph;
  llvm::DenseMap<Operation *, Node> nodes;
  llvm::DenseMap<Value, int> argumentNodes;
  llvm::DenseMap<OpOperand *, int> returnNodes;
};

void PrecisionGraphBuilder::BoundaryCut::addOpNodes() {
  for (Operation *op : builder.functionOps)
    if (!builder.freeSources.count(op))
      nodes[op] = addOpNode(op);
}

PrecisionGraphBuilder::Node
PrecisionGraphBuilder::BoundaryCut::addOpNode(Operation *op) {
  const OpDecision &d = builder.decisionOf(op);
  Node node;
  node.in = graph.addNode();
  node.out = node.in;
  if (d.precisionClass == PrecisionClass::Allow && !d.computeType.isF32() &&
      !op->getAttr(kPrecisionAttrName)) {
    // Low inputs, f32 accumulator and result.
    node.out = graph.addNode();
    fixLow(node.in);
    fixHigh(node.out);
  } else if (builder.fixed.lookup(op)) {
    if (d.computeType.isF32())
      fixHigh(node.in);
    else
      fixLow(node.in);
  } else {
    // A free op pays what it would have saved if it stays f32.
    graph.addEdge(node.in, MinCut::kSink, savingsIfLow(op, lowType));
  }
  return node;
}

/// A function that is called in the module keeps its signature: its
/// callers pass f32.
bool PrecisionGraphBuilder::BoundaryCut::keepsSignature() {
  return builder.options.keepSignature ||
         !SymbolTable::symbolKnownUseEmpty(func,
                                           func->getParentOfType<ModuleOp>());
}

int PrecisionGraphBuilder::BoundaryCut::addSignatureNode(Type type,
                                                         bool keepSignature) {
  int node = graph.addNode();
  if (keepSignature || !cast<RankedTensorType>(type).getElementType().isF32())
    fixHigh(node);
  return node;
}

void PrecisionGraphBuilder::BoundaryCut::addSignatureNodes() {
  bool keepSignature = keepsSignature();
  for (BlockArgument arg : func.getArguments())
    if (isFloatTensor(arg.getType()))
      argumentNodes[arg] = addSignatureNode(arg.getType(), keepSignature);
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands())
      if (isFloatTensor(operand.get().getType()))
        returnNodes[&operand] =
            addSignatureNode(operand.get().getType(), keepSignature);
  });
}

/// The node that consumes \p use's value: a return's, an op's input (or
/// its output for a DPS init, which the f32 accumulator reads), or none.
/// A gather's read of its table is none: the gather converts the elements
/// it copies, so its table is never converted whole for it (the rewrite
/// lets it read a copy in its own type when another reader made one).
int PrecisionGraphBuilder::BoundaryCut::consumerNode(OpOperand &use) {
  if (auto it = returnNodes.find(&use); it != returnNodes.end())
    return it->second;
  Operation *user = use.getOwner();
  auto it = nodes.find(user);
  if (it == nodes.end() || isUnreadInit(use))
    return kNoNode;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
  bool isInit = linalgOp && linalgOp.isDpsInit(&use);
  return isInit ? it->second.out : it->second.in;
}

/// Each value costs one conversion per direction, however many consumers
/// want it converted: auxiliary nodes carry that cost once.
void PrecisionGraphBuilder::BoundaryCut::connect(Value value, int producer) {
  SmallVector<int> consumers;
  for (OpOperand &use : value.getUses())
    if (int consumer = consumerNode(use); consumer != kNoNode)
      consumers.push_back(consumer);
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
}

void PrecisionGraphBuilder::BoundaryCut::connectValues() {
  for (auto [arg, node] : argumentNodes)
    connect(arg, node);
  for (Operation *op : builder.functionOps) {
    auto it = nodes.find(op);
    if (it == nodes.end())
      continue;
    for (Value value : op->getResults())
      if (isFloatTensor(value.getType()))
        connect(value, it->second.out);
  }
}

void PrecisionGraphBuilder::BoundaryCut::decideOp(Operation *op) {
  auto it = nodes.find(op);
  OpDecision &d = builder.decisionOf(op);
  if (it == nodes.end()) {
    d.reason += "; re-created in whatever type its users need";
    return;
  }
  if (builder.fixed.lookup(op))
    return;
  bool high = graph.onSourceSide(it->second.in);
  d.computeType = high ? builder.f32() : lowType;
  d.reason += high ? "; f32: converting would move more bytes than running "
                     "low saves (min-cut)"
                   : "; low: cheapest boundary placement (min-cut)";
}

void PrecisionGraphBuilder::BoundaryCut::decideSignature() {
  for (auto [arg, node] : argumentNodes)
    if (!graph.onSourceSide(node))
      builder.result.argumentTypes[arg] = lowType;
  for (auto [operand, node] : returnNodes)
    if (!graph.onSourceSide(node))
      builder.result
          .resultTypes[{func.getOperation(), operand->getOperandNumber()}] =
          lowType;
}

void PrecisionGraphBuilder::buildAndSolve(func::FuncOp func) {
  BoundaryCut(*this, func).run();
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
                           {"rule", stringifyPrecisionRule(decision.rule)},
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
