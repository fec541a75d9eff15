//===- AutoMixedPrecision.cpp - f16/bf16 compute, f32 accumulation --------===//
//
// Applies the precision analysis: rebuilds ops in the low type, converts each
// value at most once per type, folds constant casts, cancels cast pairs and
// folds boundary casts into neighbouring linalg.generic ops.
//
//===----------------------------------------------------------------------===//

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/Passes.h"
#include "mp/Transforms/PrecisionAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_AUTOMIXEDPRECISION
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Type elementType(Value value) { return getElementTypeOrSelf(value.getType()); }

RankedTensorType withElementType(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

int64_t staticElements(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

/// Makes the users \p value has now read \p makeReplacement() instead: a
/// conversion of \p value, which may take more than one op (f16 <-> bf16
/// goes through f32), none of which may be redirected to its own result.
template <typename Fn> void redirectUses(Value value, Fn makeReplacement) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : value.getUses())
    uses.push_back(&use);
  Value replacement = makeReplacement();
  for (OpOperand *use : uses)
    use->set(replacement);
}

/// Rewrites one function according to the analysis.
class Rewriter {
public:
  Rewriter(const PrecisionAnalysis &analysis, Type lowType)
      : analysis(analysis), lowType(lowType) {}

  using Decisions = SmallVector<std::pair<Operation *, OpDecision>>;
  /// Rewrites `func`; `todo` holds its decisions in program order.
  void rewrite(func::FuncOp func, const Decisions &todo);
  int64_t numDemoted = 0;
  int64_t numFused = 0;

private:
  Value convert(Value value, Type element);
  Value freshInit(OpBuilder &b, Location loc, Value like, Type element);
  void rewriteOp(Operation *op, const OpDecision &decision);
  void finishReplacements();
  /// The value that currently stands for `value` (its rewritten version).
  Value current(Value value) const {
    Value replaced = replacement.lookup(value);
    return replaced ? replaced : value;
  }
  Operation *rebuild(Operation *op, ValueRange operands, TypeRange resultTypes);
  void retypeSignature(func::FuncOp func);
  void foldCastsIntoGenerics(func::FuncOp func);
  bool foldIntoProducer(linalg::GenericOp castOp);
  void absorbIntoConsumers(linalg::GenericOp castOp);
  void absorbInto(OpOperand *use, Value input, Type target);
  Value loweredOperand(OpOperand &operand, Type compute, bool accumulateF32,
                       OpBuilder &b, bool &changed);
  void eraseDeadOps();
  Value tableCopy(Value table, Type element);
  void readCheapestTable(Operation *gather);

  const PrecisionAnalysis &analysis;
  Type lowType;
  DenseMap<std::pair<Value, Type>, Value> converted;
  llvm::SetVector<Operation *> maybeDead;
  /// Rewritten ops (erased at the end) and their results' replacements.
  llvm::SetVector<Operation *> replaced;
  DenseMap<Value, Value> replacement;
};

/// A tensor with the shape of `like` and element type `element` whose
/// contents do not matter (an init the op never reads).
Value Rewriter::freshInit(OpBuilder &b, Location loc, Value like,
                          Type element) {
  if (auto empty = like.getDefiningOp<tensor::EmptyOp>())
    maybeDead.insert(empty);
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, like), element);
  maybeDead.insert(init.getDefiningOp());
  return init;
}

Value Rewriter::convert(Value value, Type element) {
  if (elementType(value) == element)
    return value;
  Operation *def = value.getDefiningOp();
  // Convert from the original value, never a cast of a cast.
  if (isCastGeneric(def))
    return convert(cast<linalg::GenericOp>(def).getDpsInputs()[0], element);
  auto key = std::make_pair(value, element);
  if (Value known = converted.lookup(key))
    return known;

  OpBuilder b(value.getContext());
  if (def)
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
  Location loc = value.getLoc();
  RankedTensorType type = withElementType(value.getType(), element);
  Value result;

  DenseElementsAttr dense;
  linalg::FillOp fill = value.getDefiningOp<linalg::FillOp>();
  if (matchPattern(value, m_Constant(&dense))) {
    // Fold the cast into the constant.
    const llvm::fltSemantics &semantics =
        cast<FloatType>(element).getFloatSemantics();
    Attribute folded = dense.mapValues(element, [&](const APFloat &v) {
      APFloat copy = v;
      bool lostInfo;
      copy.convert(semantics, APFloat::rmNearestTiesToEven, &lostInfo);
      return copy.bitcastToAPInt();
    });
    result = arith::ConstantOp::create(b, loc, type, cast<TypedAttr>(folded));
  } else if (fill && matchPattern(fill.getInputs()[0], m_Constant()) &&
             fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
    // Re-create the fill in the new type.
    Value scalar = convertFloatScalar(b, loc, fill.getInputs()[0], element);
    Value init = freshInit(b, loc, value, element);
    result =
        linalg::FillOp::create(b, loc, ValueRange{scalar}, ValueRange{init})
            .getResult(0);
  } else {
    Value init = freshInit(b, loc, value, element);
    unsigned rank = type.getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    result =
        linalg::GenericOp::create(
            b, loc, type, ValueRange{value}, ValueRange{init},
            ArrayRef<AffineMap>{id, id}, iterators,
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              linalg::YieldOp::create(
                  nb, nloc, convertFloatScalar(nb, nloc, args[0], element));
            })
            .getResult(0);
  }
  maybeDead.insert(result.getDefiningOp());
  converted[key] = result;
  return result;
}

/// Clones `op` with new operands and result types; linalg bodies are rebuilt
/// (named ops) or patched with conversions at their edges (other ops).
Operation *Rewriter::rebuild(Operation *op, ValueRange operands,
                             TypeRange resultTypes) {
  OpBuilder b(op);
  Operation *clone = b.clone(*op);
  clone->setOperands(operands);
  for (auto [result, type] : llvm::zip(clone->getResults(), resultTypes))
    result.setType(type);

  auto linalgOp = dyn_cast<linalg::LinalgOp>(clone);
  if (linalgOp) {
    // Named op: its body follows from the operand types.
    if (rebuildNamedLinalgBody(b, clone))
      return clone;
    // Other linalg ops: convert at the block arguments and the yield, so
    // the arithmetic in between keeps its types.
    Block &body = clone->getRegion(0).front();
    for (OpOperand &operand : clone->getOpOperands()) {
      if (operand.getOperandNumber() >= body.getNumArguments())
        continue;
      BlockArgument arg = linalgOp.getMatchingBlockArgument(&operand);
      Type newType = getElementTypeOrSelf(operand.get().getType());
      Type oldType = arg.getType();
      if (newType == oldType)
        continue;
      arg.setType(newType);
      if (arg.use_empty())
        continue;
      b.setInsertionPointToStart(&body);
      redirectUses(arg, [&] {
        return convertFloatScalar(b, op->getLoc(), arg, oldType);
      });
    }
    Operation *yield = body.getTerminator();
    b.setInsertionPoint(yield);
    for (auto [operand, type] :
         llvm::zip(yield->getOpOperands(), clone->getResultTypes()))
      operand.set(convertFloatScalar(b, op->getLoc(), operand.get(),
                                     getElementTypeOrSelf(type)));
    return clone;
  }
  if (auto pad = dyn_cast<tensor::PadOp>(clone)) {
    Operation *yield = pad.getRegion().front().getTerminator();
    b.setInsertionPoint(yield);
    yield->setOperand(0,
                      convertFloatScalar(b, op->getLoc(), yield->getOperand(0),
                                         pad.getResultType().getElementType()));
  }
  return clone;
}

/// The value \p operand's op reads once it computes in \p compute; sets
/// \p changed when that is a low value where an f32 one was.
Value Rewriter::loweredOperand(OpOperand &operand, Type compute,
                               bool accumulateF32, OpBuilder &b,
                               bool &changed) {
  Operation *op = operand.getOwner();
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  Value original = operand.get();
  Value value = current(original);
  bool isInit = linalgOp && linalgOp.isDpsInit(&operand);
  bool isFloat = isFloatTensor(original.getType());
  if (!isFloat || !elementType(original).isF32() || (isInit && accumulateF32))
    return isFloat ? convert(value, elementType(original)) : value;
  changed = true;
  if (isInit && !linalgOp.payloadUsesValueFromOperand(&operand))
    return freshInit(b, op->getLoc(), value, compute);
  return convert(value, compute);
}

/// The type of \p result once its op computes in \p compute (f32 results
/// stay when the op accumulates in f32); sets \p changed when it differs.
static Type loweredResultType(Value result, Type compute, bool accumulateF32,
                              bool &changed) {
  Type type = result.getType();
  if (!isFloatTensor(type) || !elementType(result).isF32() || accumulateF32)
    return type;
  changed = true;
  return withElementType(type, compute);
}

void Rewriter::rewriteOp(Operation *op, const OpDecision &decision) {
  Type compute = decision.computeType;
  if (compute.isF32())
    return;
  bool accumulateF32 = decision.precisionClass == PrecisionClass::Allow &&
                       !op->getAttr(kPrecisionAttrName);
  OpBuilder b(op);

  SmallVector<Value> operands;
  bool changed = false;
  for (OpOperand &operand : op->getOpOperands())
    operands.push_back(
        loweredOperand(operand, compute, accumulateF32, b, changed));
  SmallVector<Type> resultTypes;
  for (Value result : op->getResults())
    resultTypes.push_back(
        loweredResultType(result, compute, accumulateF32, changed));
  if (!changed)
    return;

  // Later low users read the new results directly; users that still want
  // the old types are redirected once, in finishReplacements().
  Operation *rebuilt = rebuild(op, operands, resultTypes);
  for (auto [oldResult, newResult] :
       llvm::zip(op->getResults(), rebuilt->getResults()))
    replacement[oldResult] = newResult;
  replaced.insert(op);
  ++numDemoted;
}

/// The copy of \p table that a gather writing \p element reads: the
/// table itself (the input of a conversion of it) when it has that type or
/// a narrower one, else a conversion to \p element that another reader
/// made (a tied contraction's low weight), else the table itself.
Value Rewriter::tableCopy(Value table, Type element) {
  Value original = table;
  if (Operation *def = table.getDefiningOp(); isCastGeneric(def))
    original = cast<linalg::GenericOp>(def).getDpsInputs()[0];
  Type own = elementType(original);
  if (own == element ||
      own.getIntOrFloatBitWidth() < element.getIntOrFloatBitWidth())
    return original;
  if (Value copy = converted.lookup({original, element}))
    return copy;
  return original;
}

/// The tensor.extract of \p gather's body that reads its table.
static tensor::ExtractOp tableExtract(Operation *gather) {
  tensor::ExtractOp found;
  gather->getRegion(0).walk([&](tensor::ExtractOp extract) {
    if (!gather->isAncestor(extract.getTensor().getParentBlock()->getParentOp()))
      found = extract;
  });
  return found;
}

/// Makes \p gather read the cheapest copy of its table (tableCopy) and
/// convert each element it copies: a gather never makes its table be
/// converted whole, and reads the low copy a tied contraction reads.
void Rewriter::readCheapestTable(Operation *gather) {
  tensor::ExtractOp extract = tableExtract(gather);
  if (!extract)
    return;
  Value table = extract.getTensor();
  Type written = elementType(gather->getResult(0));
  Value copy = tableCopy(table, written);
  if (copy == table)
    return;
  Operation *yield = gather->getRegion(0).front().getTerminator();
  OpBuilder b(yield);
  Location loc = extract.getLoc();
  Value element = tensor::ExtractOp::create(b, loc, copy, extract.getIndices());
  Value old = yield->getOperand(0);
  yield->setOperand(0, convertFloatScalar(b, loc, element, written));
  // The old read and its conversions go; the table's conversion may too.
  while (Operation *def = old.getDefiningOp()) {
    if (!def->use_empty() || def->getBlock() != yield->getBlock())
      break;
    bool isRead = isa<tensor::ExtractOp>(def);
    old = def->getOperand(0);
    def->erase();
    if (isRead)
      break;
  }
  if (Operation *def = table.getDefiningOp())
    maybeDead.insert(def);
}

void Rewriter::finishReplacements() {
  for (Operation *op : replaced) {
    for (OpResult oldResult : op->getResults()) {
      Value newResult = replacement.lookup(oldResult);
      auto isOutside = [&](OpOperand &use) {
        return !replaced.contains(use.getOwner());
      };
      if (llvm::none_of(oldResult.getUses(), isOutside))
        continue;
      // One conversion back to the old type for all remaining users.
      oldResult.replaceUsesWithIf(convert(newResult, elementType(oldResult)),
                                  isOutside);
    }
  }
  // Users first: each replaced op is then free of uses when it goes.
  for (Operation *op : llvm::reverse(replaced)) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (!replaced.contains(def))
          maybeDead.insert(def);
    op->erase();
  }
  replaced.clear();
  replacement.clear();
}

void Rewriter::retypeSignature(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    auto it = analysis.lowArguments().find(arg);
    if (it == analysis.lowArguments().end())
      continue;
    Type oldElement = elementType(arg);
    arg.setType(withElementType(arg.getType(), it->second));
    // Users that still want f32 read one conversion at the entry.
    redirectUses(arg, [&] { return convert(arg, oldElement); });
  }
}

/// The producer writes the converted type directly: when \p castOp's
/// input is the only use of a generic's result whose init it does not
/// read, that generic converts in its body instead. True when it did.
bool Rewriter::foldIntoProducer(linalg::GenericOp castOp) {
  Value input = castOp.getDpsInputs()[0];
  Value output = castOp.getResult(0);
  Type target = elementType(output);
  auto producer = input.getDefiningOp<linalg::GenericOp>();
  if (!producer || isCastGeneric(producer) || !input.hasOneUse())
    return false;
  unsigned index = cast<OpResult>(input).getResultNumber();
  OpOperand *init = producer.getDpsInitOperand(index);
  if (producer.payloadUsesValueFromOperand(init))
    return false;
  OpBuilder b(producer);
  init->set(freshInit(b, producer.getLoc(), init->get(), target));
  producer.getMatchingBlockArgument(init).setType(target);
  input.setType(output.getType());
  Operation *yield = producer.getRegion().front().getTerminator();
  b.setInsertionPoint(yield);
  yield->setOperand(index,
                    convertFloatScalar(b, producer.getLoc(),
                                       yield->getOperand(index), target));
  output.replaceAllUsesWith(input);
  maybeDead.remove(castOp);
  castOp.erase();
  ++numFused;
  return true;
}

/// Whether \p use of a conversion's result \p output can read the
/// unconverted value instead: an input of a generic other than a cast. A
/// contraction keeps its matrix operands low: the runtime's GEMMs take
/// both operands in one type (a scalar factor may still fold).
static bool canAbsorbConversion(OpOperand &use, Value output) {
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  return consumer && !isCastGeneric(consumer) && consumer.isDpsInput(&use) &&
         !(linalg::isaContractionOpInterface(consumer) &&
           cast<ShapedType>(output.getType()).getRank() >= 2);
}

/// The uses of \p output when it has some and all of them can absorb the
/// conversion that made it; nothing otherwise.
static std::optional<SmallVector<OpOperand *>> absorbingUses(Value output) {
  if (output.use_empty())
    return std::nullopt;
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : output.getUses()) {
    if (!canAbsorbConversion(use, output))
      return std::nullopt;
    uses.push_back(&use);
  }
  return uses;
}

/// Makes the generic that \p use belongs to read \p input and convert it
/// to \p target in its body.
void Rewriter::absorbInto(OpOperand *use, Value input, Type target) {
  auto consumer = cast<linalg::GenericOp>(use->getOwner());
  BlockArgument arg = consumer.getMatchingBlockArgument(use);
  use->set(input);
  arg.setType(elementType(input));
  if (!arg.use_empty()) {
    OpBuilder b = OpBuilder::atBlockBegin(arg.getOwner());
    redirectUses(arg, [&] {
      return convertFloatScalar(b, consumer.getLoc(), arg, target);
    });
  }
  ++numFused;
}

/// Consumers read the unconverted value and convert in their bodies;
/// only when that removes the cast and reads fewer bytes (<= 2 users).
void Rewriter::absorbIntoConsumers(linalg::GenericOp castOp) {
  Value input = castOp.getDpsInputs()[0];
  Value output = castOp.getResult(0);
  std::optional<SmallVector<OpOperand *>> uses = absorbingUses(output);
  if (!uses || uses->size() > 2)
    return;
  for (OpOperand *use : *uses)
    absorbInto(use, input, elementType(output));
  maybeDead.insert(castOp);
}

void Rewriter::foldCastsIntoGenerics(func::FuncOp func) {
  SmallVector<linalg::GenericOp> casts;
  func.walk([&](linalg::GenericOp op) {
    if (isCastGeneric(op))
      casts.push_back(op);
  });
  for (linalg::GenericOp castOp : casts)
    if (!foldIntoProducer(castOp))
      absorbIntoConsumers(castOp);
}

/// In linalg bodies, extf(truncf(x)) back to x's own type only loses
/// precision: the rewrite produces such pairs where a body converts its
/// input back to the type it computes in.
void foldRoundTripsInBodies(func::FuncOp func) {
  func.walk([](arith::ExtFOp ext) {
    auto trunc = ext.getIn().getDefiningOp<arith::TruncFOp>();
    if (!trunc || trunc.getIn().getType() != ext.getType() ||
        !isa<linalg::LinalgOp>(ext->getParentOp()))
      return;
    ext.replaceAllUsesWith(trunc.getIn());
    ext.erase();
    if (trunc->use_empty())
      trunc.erase();
  });
}

void Rewriter::eraseDeadOps() {
  // A worklist: erasing an op may leave its operands' producers dead.
  SmallVector<Operation *> worklist(maybeDead.begin(), maybeDead.end());
  maybeDead.clear();
  llvm::DenseSet<Operation *> queued(worklist.begin(), worklist.end());
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    queued.erase(op);
    if (!op->use_empty() || !isPure(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (queued.insert(def).second)
          worklist.push_back(def);
    op->erase();
  }
}

void Rewriter::rewrite(func::FuncOp func, const Decisions &todo) {
  // Erased ops free their values; never look up another function's casts.
  converted.clear();
  retypeSignature(func);
  // Decisions are in program order, so operands are rewritten before users.
  SmallVector<Operation *> gathers;
  for (auto &[op, decision] : todo) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    bool isGather = linalgOp && gatheredExtract(linalgOp);
    rewriteOp(op, decision);
    if (isGather)
      gathers.push_back(current(op->getResult(0)).getDefiningOp());
  }

  // Low results (keep-signature=false).
  bool signatureChanged = !analysis.lowArguments().empty();
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands()) {
      auto it = analysis.lowResults().find(
          {func.getOperation(), operand.getOperandNumber()});
      if (it == analysis.lowResults().end())
        continue;
      operand.set(convert(current(operand.get()), it->second));
      signatureChanged = true;
    }
  });
  finishReplacements();
  for (Operation *gather : gathers)
    readCheapestTable(gather);
  eraseDeadOps();
  foldCastsIntoGenerics(func);
  eraseDeadOps();
  foldRoundTripsInBodies(func);
  if (signatureChanged) {
    SmallVector<Type> results;
    func.walk([&](func::ReturnOp ret) {
      results.assign(ret.getOperandTypes().begin(),
                     ret.getOperandTypes().end());
    });
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getBody().front().getArgumentTypes(), results));
  }
}

/// A conversion whose result is only measured (tensor.dim of a dynamic
/// size, as reshapes of a dynamic batch compute it) converts a whole
/// tensor for nothing: its input has the same shape. The dims read the
/// input, and the conversion goes (with its empty init and the dims that
/// sized it).
/// Erases \p init, an unused tensor.empty, and the tensor.dims that sized
/// it once nothing else reads them.
void eraseEmptyAndItsSizes(Operation *init) {
  SmallVector<Operation *> sizes;
  for (Value size : init->getOperands())
    if (auto dim = size.getDefiningOp<tensor::DimOp>())
      sizes.push_back(dim);
  init->erase();
  for (Operation *dim : sizes)
    if (dim->use_empty())
      dim->erase();
}

void dropConversionsReadForTheirShape(ModuleOp module) {
  SmallVector<Operation *> casts;
  module.walk([&](tensor::DimOp dim) {
    Operation *def = dim.getSource().getDefiningOp();
    if (!isCastGeneric(def) || def->getNumResults() != 1)
      return;
    dim.getSourceMutable().assign(def->getOperand(0));
    casts.push_back(def);
  });
  for (Operation *cast : casts) {
    if (!cast->use_empty())
      continue;
    Operation *init = cast->getOperand(1).getDefiningOp();
    cast->erase();
    if (init && isa<tensor::EmptyOp>(init) && init->use_empty())
      eraseEmptyAndItsSizes(init);
  }
}

/// The number of iterations of \p op's reduction loops, or nothing when
/// one of them is dynamic.
std::optional<int64_t> reductionLength(linalg::LinalgOp op) {
  int64_t length = 1;
  for (auto [range, iterator] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (iterator != utils::IteratorType::reduction)
      continue;
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    length *= range;
  }
  return length;
}

/// The element type of \p op's first init that accumulates in f16 or bf16
/// (its payload reads it), or null.
Type lowAccumulatorType(linalg::LinalgOp op) {
  for (OpOperand &init : op.getDpsInitsMutable()) {
    Type element = elementType(init.get());
    if ((element.isF16() || element.isBF16()) &&
        op.payloadUsesValueFromOperand(&init))
      return element;
  }
  return Type();
}

struct AutoMixedPrecisionPass
    : mp::impl::AutoMixedPrecisionBase<AutoMixedPrecisionPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    AutoMixedPrecisionBase::getDependentDialects(registry);
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addPass(createMPImport());
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (warnReductionSize < 1) {
      mlir::emitError(module.getLoc())
          << "warn-reduction-size must be at least 1, got "
          << static_cast<int64_t>(warnReductionSize);
      return signalPassFailure();
    }
    FailureOr<PrecisionAnalysisOptions> options =
        makeAnalysisOptions(module, dtype, allowOps, denyOps, calibration,
                            f16SafeMax, keepSignature);
    if (failed(options))
      return signalPassFailure();

    // tosa models are brought to linalg first.
    bool hasTosa = module
                       .walk([](Operation *op) {
                         return isa<tosa::TosaDialect>(op->getDialect())
                                    ? WalkResult::interrupt()
                                    : WalkResult::advance();
                       })
                       .wasInterrupted();
    if (hasTosa) {
      OpPassManager pm(ModuleOp::getOperationName());
      pm.addPass(createMPImport());
      if (failed(runPipeline(pm, module)))
        return signalPassFailure();
    }

    FailureOr<PrecisionAnalysis> analysis =
        PrecisionAnalysis::run(module, *options);
    if (failed(analysis))
      return signalPassFailure();
    // The report names ops the rewrite replaces: build it first.
    llvm::json::Object json;
    if (summary || !report.empty())
      json = buildReport(*analysis, *options);

    // Group decisions by function before rewriting erases any op.
    llvm::MapVector<Operation *, Rewriter::Decisions> perFunction;
    for (const auto &[op, decision] : analysis->decisions())
      perFunction[op->getParentOfType<func::FuncOp>()].push_back(
          {op, decision});
    Rewriter rewriter(*analysis, options->lowType);
    for (auto &[func, todo] : perFunction)
      rewriter.rewrite(cast<func::FuncOp>(func), todo);
    dropConversionsReadForTheirShape(module);

    // LLVM release builds compile statistics out; count here as well.
    int64_t casts = 0, bytes = 0;
    module.walk([&](Operation *op) {
      op->removeAttr(kDecisionAttrName);
      // On tensors only: a cast on memrefs (bufferized input) has no result.
      if (isCastGeneric(op) && op->getNumResults() == 1) {
        ++casts;
        Value in = op->getOperand(0), out = op->getResult(0);
        bytes += staticElements(in.getType()) *
                 (elementType(in).getIntOrFloatBitWidth() / 8 +
                  elementType(out).getIntOrFloatBitWidth() / 8);
      }
      warnLowAccumulation(op);
    });
    numCasts += casts;
    numBytesConverted += bytes;
    numDemoted += rewriter.numDemoted;
    numFusedCasts += rewriter.numFused;

    if (summary) {
      const llvm::json::Object *totals = json.getObject("totals");
      const llvm::json::Object *classes = totals->getObject("class");
      mlir::emitRemark(module.getLoc())
          << "mp-auto-mixed-precision (" << stringifyFloatPrecision(dtype)
          << "): " << *classes->getInteger("allow") << " allow, "
          << *classes->getInteger("infer") << " infer, "
          << *classes->getInteger("clear") << " clear, "
          << *classes->getInteger("deny") << " deny ops; "
          << rewriter.numDemoted << " ops demoted, " << casts
          << " casts inserted (" << bytes << " bytes converted), "
          << rewriter.numFused << " conversions folded into neighbours";
    }
    if (!report.empty()) {
      json["rewrite"] =
          llvm::json::Object{{"ops_demoted", rewriter.numDemoted},
                             {"casts_inserted", casts},
                             {"bytes_converted", bytes},
                             {"conversions_folded", rewriter.numFused}};
      if (failed(writeReport(module, std::move(json), report)))
        return signalPassFailure();
    }
  }

  /// Warns about ops that accumulate in f16/bf16 over long reductions.
  void warnLowAccumulation(Operation *op) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || linalgOp.getNumReductionLoops() == 0)
      return;
    Type element = lowAccumulatorType(linalgOp);
    if (!element)
      return;
    std::optional<int64_t> length = reductionLength(linalgOp);
    if (length && *length <= warnReductionSize)
      return;
    InFlightDiagnostic diag = op->emitWarning()
                              << "accumulates in " << element << " over ";
    if (length)
      diag << *length;
    else
      diag << "a dynamic number of";
    diag << " elements (warn-reduction-size = "
         << static_cast<int64_t>(warnReductionSize)
         << "); keep its accumulator in f32 (mp.precision = "
            "#mp.precision<f32>)";
  }
};

} // namespace
