//===- Autodiff.cpp - reverse-mode differentiation on tensors -------------===//
//
// Builds `@<loss>_grad`: the forward computation followed by a reverse sweep
// that accumulates the gradient of every active value. linalg ops share one
// rule: the gradient of an input is a linalg.generic over the forward
// iteration space whose body is the reverse derivative of the forward body.
//
//===----------------------------------------------------------------------===//

#include "AutodiffMovement.h"
#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPAUTODIFF
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

bool isFloatLike(Type type) {
  return isa<FloatType>(getElementTypeOrSelf(type));
}

Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// A tensor like `like` filled with `value`.
Value filledLike(OpBuilder &b, Location loc, Value like, double value) {
  auto type = cast<RankedTensorType>(like.getType());
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, like), type.getElementType());
  Value scalar = floatConstant(b, loc, type.getElementType(), value);
  return linalg::FillOp::create(b, loc, ValueRange{scalar}, ValueRange{empty})
      .getResult(0);
}

/// The value a single-result generic's body yields, if its block is just
/// the ops computing it.
Value yielded(linalg::GenericOp op) {
  return op.getNumDpsInits() == 1
             ? op.getBlock()->getTerminator()->getOperand(0)
             : Value();
}

/// Whether \p value is `Op(lhs, rhs)` with exactly these operands.
template <typename Op>
bool isBinary(Value value, Value lhs, Value rhs) {
  auto op = value.getDefiningOp<Op>();
  return op && op.getLhs() == lhs && op.getRhs() == rhs;
}

/// Whether \p op is `out = combine(in, out)` or `combine(out, in)` over one
/// input read through the identity map.
template <typename... Combine>
bool isReductionOf(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 ||
      !op.getIndexingMapsArray()[0].isIdentity())
    return false;
  Value in = op.getBlock()->getArgument(0), out = op.getBlock()->getArgument(1);
  Operation *combine = yielded(op).getDefiningOp();
  return combine && isa<Combine...>(combine) &&
         ((combine->getOperand(0) == in && combine->getOperand(1) == out) ||
          (combine->getOperand(0) == out && combine->getOperand(1) == in));
}

/// Whether \p op is elementwise over \p numLoops loops with inputs
/// \p first (identity map) and \p second (through \p secondMap).
bool isElementwiseOf(linalg::GenericOp op, Value first, Value second,
                     AffineMap secondMap, unsigned numLoops) {
  return op && op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1 &&
         op.getNumReductionLoops() == 0 && op.getNumLoops() == numLoops &&
         op.getDpsInputs()[0] == first && op.getDpsInputs()[1] == second &&
         op.getIndexingMapsArray()[0].isIdentity() &&
         op.getIndexingMapsArray()[1] == secondMap;
}

/// The elementwise `exp(x - m)` that \p m, the result of \p max over
/// \p x, feeds, or null.
linalg::GenericOp shiftedExponential(linalg::GenericOp max, Value x, Value m) {
  auto exps = dyn_cast<linalg::GenericOp>(*m.getUsers().begin());
  if (!isElementwiseOf(exps, x, m, max.getIndexingMapsArray()[1],
                       max.getNumLoops()))
    return {};
  auto exp = yielded(exps).getDefiningOp<math::ExpOp>();
  Block *expBody = exps.getBlock();
  if (!exp ||
      !isBinary<arith::SubFOp>(exp.getOperand(), expBody->getArgument(0),
                               expBody->getArgument(1)))
    return {};
  return exps;
}

/// Whether \p sum adds up \p e over \p numLoops loops into a zero-filled
/// tensor read through \p rowMap, and has one use.
bool isZeroStartedSumOf(linalg::GenericOp sum, Value e, AffineMap rowMap,
                        unsigned numLoops) {
  if (!isReductionOf<arith::AddFOp>(sum) || sum.getDpsInputs()[0] != e ||
      sum.getNumLoops() != numLoops ||
      sum.getIndexingMapsArray()[1] != rowMap || !sum->getResult(0).hasOneUse())
    return false;
  auto init = sum.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  return init && matchPattern(init.getInputs()[0], m_AnyZeroFloat());
}

/// Whether \p divide is the elementwise `e / total`.
bool isDivisionOf(linalg::GenericOp divide, Value e, Value total,
                  AffineMap rowMap, unsigned numLoops) {
  if (!isElementwiseOf(divide, e, total, rowMap, numLoops))
    return false;
  Block *divideBody = divide.getBlock();
  return isBinary<arith::DivFOp>(yielded(divide), divideBody->getArgument(0),
                                 divideBody->getArgument(1));
}

/// Of \p e's users, the generic that reduces (the sum) and the other (the
/// division, null when not a generic).
std::pair<linalg::GenericOp, linalg::GenericOp> sumAndDivision(Value e) {
  linalg::GenericOp sum, divide;
  for (Operation *user : e.getUsers()) {
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (generic && generic.getNumReductionLoops() > 0)
      sum = generic;
    else
      divide = generic;
  }
  return {sum, divide};
}

/// Whether \p op is the maximum a numerically stable softmax subtracts:
/// m = max(x) over some loops, e = exp(x - m), p = e / sum(e) with the sum
/// starting from zero, and m, e and the sum used nowhere else. p does not
/// change when m does, so m gets no gradient; differentiating it anyway
/// would count ties and keep x alive for the comparison, only to add
/// gradients that cancel.
bool isSoftmaxShift(Operation *op) {
  auto max = dyn_cast<linalg::GenericOp>(op);
  if (!max || !isReductionOf<arith::MaximumFOp, arith::MaxNumFOp>(max) ||
      !max->getResult(0).hasOneUse())
    return false;
  Value x = max.getDpsInputs()[0], m = max->getResult(0);
  AffineMap rowMap = max.getIndexingMapsArray()[1];
  unsigned numLoops = max.getNumLoops();
  linalg::GenericOp exps = shiftedExponential(max, x, m);
  if (!exps)
    return false;
  Value e = exps->getResult(0);
  if (!llvm::hasNItems(e.getUses(), 2))
    return false;
  auto [sum, divide] = sumAndDivision(e);
  return sum && divide && isZeroStartedSumOf(sum, e, rowMap, numLoops) &&
         isDivisionOf(divide, e, sum->getResult(0), rowMap, numLoops);
}

//===----------------------------------------------------------------------===//
// Scalar reverse mode (linalg bodies and top-level scalar code)
//===----------------------------------------------------------------------===//

/// Accumulates adjoints of scalar float values while walking ops backwards.
class ScalarAdjoints {
public:
  /// `acc`, when set, is a reduction body's accumulator, bound to the final
  /// result: max/min against it send the gradient to the elements equal to
  /// it, split evenly among the `tieCount` of them (when given), so ties
  /// (a blank window after relu) do not multiply the gradient.
  ScalarAdjoints(OpBuilder &b, Value acc = {}, Value tieCount = {})
      : b(b), acc(acc), tieCount(tieCount) {}

  void add(Value value, Value adjoint) {
    if (!adjoint || !isa<FloatType>(value.getType()))
      return;
    Value &slot = adjoints[value];
    slot = slot ? arith::AddFOp::create(b, value.getLoc(), slot, adjoint)
                      .getResult()
                : adjoint;
  }
  Value get(Value value) const { return adjoints.lookup(value); }

  /// Propagates the adjoint of `op`'s result to its operands. Fails for a
  /// float op without a rule.
  LogicalResult propagate(Operation *op);

private:
  OpBuilder &b;
  Value acc, tieCount;
  DenseMap<Value, Value> adjoints;
};

LogicalResult ScalarAdjoints::propagate(Operation *op) {
  if (op->getNumResults() != 1)
    return success(!llvm::any_of(op->getResultTypes(), isFloatLike));
  Value result = op->getResult(0);
  Value g = get(result);
  if (!g)
    return success();
  Location loc = op->getLoc();
  Type type = result.getType();
  auto zero = [&]() { return floatConstant(b, loc, type, 0.0); };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, loc, x, y);
  };
  auto div = [&](Value x, Value y) -> Value {
    return arith::DivFOp::create(b, loc, x, y);
  };
  auto neg = [&](Value x) -> Value { return arith::NegFOp::create(b, loc, x); };

  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::AddFOp o) {
        add(o.getLhs(), g);
        add(o.getRhs(), g);
        return success();
      })
      .Case([&](arith::SubFOp o) {
        add(o.getLhs(), g);
        add(o.getRhs(), neg(g));
        return success();
      })
      .Case([&](arith::MulFOp o) {
        add(o.getLhs(), mul(g, o.getRhs()));
        add(o.getRhs(), mul(g, o.getLhs()));
        return success();
      })
      .Case([&](arith::DivFOp o) {
        add(o.getLhs(), div(g, o.getRhs()));
        add(o.getRhs(), neg(div(mul(g, result), o.getRhs())));
        return success();
      })
      .Case([&](arith::NegFOp o) {
        add(o.getOperand(), neg(g));
        return success();
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>([&](Operation *o) {
        Value lhs = o->getOperand(0), rhs = o->getOperand(1);
        if (acc && (lhs == acc || rhs == acc)) {
          // Reduction: the elements equal to the result share the gradient.
          Value other = lhs == acc ? rhs : lhs;
          Value equal = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                              other, acc);
          Value share = tieCount ? div(g, tieCount) : g;
          add(other, arith::SelectOp::create(b, loc, equal, share, zero()));
          return success();
        }
        bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(o);
        Value lhsWins = arith::CmpFOp::create(b, loc,
                                              isMax ? arith::CmpFPredicate::OGE
                                                    : arith::CmpFPredicate::OLE,
                                              lhs, rhs);
        add(lhs, arith::SelectOp::create(b, loc, lhsWins, g, zero()));
        add(rhs, arith::SelectOp::create(b, loc, lhsWins, zero(), g));
        return success();
      })
      .Case([&](arith::SelectOp o) {
        add(o.getTrueValue(),
            arith::SelectOp::create(b, loc, o.getCondition(), g, zero()));
        add(o.getFalseValue(),
            arith::SelectOp::create(b, loc, o.getCondition(), zero(), g));
        return success();
      })
      .Case([&](math::ExpOp o) {
        add(o.getOperand(), mul(g, result));
        return success();
      })
      .Case([&](math::LogOp o) {
        add(o.getOperand(), div(g, o.getOperand()));
        return success();
      })
      .Case([&](math::TanhOp o) {
        Value one = floatConstant(b, loc, type, 1.0);
        Value dt = arith::SubFOp::create(b, loc, one, mul(result, result));
        add(o.getOperand(), mul(g, dt));
        return success();
      })
      .Case([&](math::SqrtOp o) {
        Value half = floatConstant(b, loc, type, 0.5);
        add(o.getOperand(), div(mul(g, half), result));
        return success();
      })
      .Case([&](math::RsqrtOp o) {
        // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 r^3
        Value minusHalf = floatConstant(b, loc, type, -0.5);
        add(o.getOperand(),
            mul(g, mul(minusHalf, mul(result, mul(result, result)))));
        return success();
      })
      .Case([&](math::ErfOp o) {
        Value x = o.getOperand();
        Value scale = floatConstant(b, loc, type, 2.0 / std::sqrt(M_PI));
        Value e = math::ExpOp::create(b, loc, neg(mul(x, x)));
        add(x, mul(g, mul(scale, e)));
        return success();
      })
      .Case([&](math::AbsFOp o) {
        Value x = o.getOperand();
        Value positive =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x, zero());
        add(x, arith::SelectOp::create(b, loc, positive, g, neg(g)));
        return success();
      })
      .Case([&](math::PowFOp o) {
        Value x = o.getLhs(), y = o.getRhs();
        // d/dx = y x^(y-1), raised rather than y r / x: that is 0/0 where x
        // is 0 (a centred value in a variance, x^2).
        Value one = floatConstant(b, loc, type, 1.0);
        Value lowered = math::PowFOp::create(
            b, loc, x, arith::SubFOp::create(b, loc, y, one));
        add(x, mul(g, mul(y, lowered)));
        // d/dy = r log x, which is 0 * -inf where x is 0: 0 there for y >= 0,
        // as PyTorch takes it.
        Value atZero = arith::AndIOp::create(
            b, loc,
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, zero()),
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, y,
                                  zero()));
        add(y, arith::SelectOp::create(
                   b, loc, atZero, zero(),
                   mul(g, mul(result, math::LogOp::create(b, loc, x)))));
        return success();
      })
      .Case([&](math::FmaOp o) {
        add(o.getA(), mul(g, o.getB()));
        add(o.getB(), mul(g, o.getA()));
        add(o.getC(), g);
        return success();
      })
      .Case([&](arith::ExtFOp o) {
        add(o.getIn(), arith::TruncFOp::create(b, loc, o.getIn().getType(), g));
        return success();
      })
      .Case([&](arith::TruncFOp o) {
        add(o.getIn(), arith::ExtFOp::create(b, loc, o.getIn().getType(), g));
        return success();
      })
      .Case<arith::ConstantOp, arith::SIToFPOp, arith::UIToFPOp>(
          [&](Operation *) { return success(); })
      .Default([&](Operation *) { return failure(); });
}

//===----------------------------------------------------------------------===//
// The reverse sweep over a function
//===----------------------------------------------------------------------===//

class ReverseSweep {
public:
  ReverseSweep(func::FuncOp func) : func(func) {}

  /// Appends the reverse sweep before the return; returns the gradient of
  /// each argument in `params` (zeros where the loss does not depend on it).
  FailureOr<SmallVector<Value>> run(Value loss, ArrayRef<BlockArgument> params);

private:
  LogicalResult differentiate(Operation *op, OpBuilder &b);
  LogicalResult differentiateLinalg(linalg::LinalgOp op, OpBuilder &b);
  LogicalResult checkDifferentiable(linalg::LinalgOp op);
  LogicalResult operandGradient(linalg::LinalgOp op, unsigned resultIndex,
                                OpOperand &operand, Value resultGrad,
                                OpBuilder &b);
  LogicalResult accumulatorGradient(linalg::LinalgOp op, unsigned resultIndex,
                                    OpOperand &init, Value resultGrad,
                                    OpBuilder &b);
  LogicalResult differentiateScalar(Operation *op, OpBuilder &b);
  LogicalResult differentiateExpand(tensor::ExpandShapeOp expand, OpBuilder &b);
  LogicalResult differentiateCollapse(tensor::CollapseShapeOp collapse,
                                      OpBuilder &b);
  LogicalResult differentiatePad(tensor::PadOp pad, OpBuilder &b);
  LogicalResult differentiateFakeQuant(FakeQuantOp fakeQuant, OpBuilder &b);
  LogicalResult differentiateExtract(tensor::ExtractOp extract, OpBuilder &b);
  LogicalResult differentiateDataMovement(Operation *op, OpBuilder &b);
  LogicalResult differentiateDropout(DropoutOp dropout, OpBuilder &b);
  bool needsDifferentiating(Operation *op);
  /// The gradient of `input` through result `resultIndex` of `op`, or null
  /// when the body does not make the result depend on it.
  FailureOr<Value> inputGradient(linalg::LinalgOp op, unsigned resultIndex,
                                 OpOperand &input, Value resultGrad,
                                 OpBuilder &b, bool readsResult = false);
  /// inputGradient, reading the forward result instead of recomputing it
  /// where that reads fewer elements (exp, tanh: the derivative is the
  /// result; the inputs need not be kept for the backward pass).
  FailureOr<Value> leanInputGradient(linalg::LinalgOp op, unsigned resultIndex,
                                     OpOperand &input, Value resultGrad,
                                     OpBuilder &b);
  void addGrad(OpBuilder &b, Value value, Value grad);
  bool isActive(Value value) const;
  bool usesActive(Operation &op) const;
  void markActive(Block &body, ArrayRef<BlockArgument> params);
  void seedLoss(OpBuilder &b, Location loc, Value loss);
  Value dropUnusedInputs(linalg::GenericOp op, OpBuilder &b);
  Value tieCountOf(linalg::LinalgOp op, unsigned resultIndex,
                   ArrayRef<Value> ins, ArrayRef<AffineMap> maps, OpBuilder &b);

  func::FuncOp func;
  llvm::SetVector<Value> active;
  DenseMap<Value, Value> grads;
};

void ReverseSweep::addGrad(OpBuilder &b, Value value, Value grad) {
  if (!grad || !active.contains(value))
    return;
  Value &slot = grads[value];
  if (!slot) {
    slot = grad;
    return;
  }
  Location loc = value.getLoc();
  if (!isa<RankedTensorType>(value.getType())) {
    slot = arith::AddFOp::create(b, loc, slot, grad);
    return;
  }
  auto type = cast<RankedTensorType>(value.getType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, value), type.getElementType());
  slot =
      linalg::GenericOp::create(
          b, loc, type, ValueRange{slot, grad}, ValueRange{init},
          ArrayRef<AffineMap>{id, id, id}, iterators,
          [](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(
                nb, nloc,
                arith::AddFOp::create(nb, nloc, args[0], args[1]).getResult());
          })
          .getResult(0);
}

/// Maps \p body's arguments to \p args and clones its ops (not the
/// terminator) at \p nb's insertion point.
void cloneBody(OpBuilder &nb, Block &body, ValueRange args,
               IRMapping &mapping) {
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    mapping.map(arg, args[i]);
  for (Operation &inner : body.without_terminator())
    nb.clone(inner, mapping);
}

/// Erases the ops of \p block no one uses, last first, so that chains of
/// them go too.
void eraseTriviallyDeadOps(Block *block) {
  for (Operation &inner : llvm::make_early_inc_range(llvm::reverse(*block)))
    if (isOpTriviallyDead(&inner))
      inner.erase();
}

/// Inputs of the backward generic of one input of \p op: the forward
/// inputs, one value per forward init (the final result for reductions,
/// the init otherwise), and the result's gradient; their maps, then the
/// input's own map for the init.
void backwardOperands(linalg::LinalgOp op, unsigned resultIndex,
                      AffineMap targetMap, Value resultGrad,
                      SmallVectorImpl<Value> &ins,
                      SmallVectorImpl<AffineMap> &maps) {
  bool reduces = op.getNumReductionLoops() > 0;
  for (OpOperand *in : op.getDpsInputOperands()) {
    ins.push_back(in->get());
    maps.push_back(op.getMatchingIndexingMap(in));
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned k = init.getOperandNumber() - op.getNumDpsInputs();
    ins.push_back(reduces ? op->getResult(k) : init.get());
    maps.push_back(op.getMatchingIndexingMap(&init));
  }
  ins.push_back(resultGrad);
  maps.push_back(op.getIndexingMapMatchingResult(op->getResult(resultIndex)));
  maps.push_back(targetMap);
}

/// The loops of \p targetMap's expressions: in \p indexed those it reads
/// directly as a result, in \p mixed those inside a compound expression.
void classifyIndexedLoops(AffineMap targetMap, llvm::SmallBitVector &indexed,
                          llvm::SmallBitVector &mixed) {
  for (AffineExpr e : targetMap.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) {
      indexed.set(dim.getPosition());
      continue;
    }
    e.walk([&](AffineExpr sub) {
      if (auto dim = dyn_cast<AffineDimExpr>(sub))
        mixed.set(dim.getPosition());
    });
  }
}

/// A loop stays parallel only when the input indexes it directly and in no
/// other way; every other loop accumulates. An input read through
/// `oh + kh` (convolution, pooling) gets a scatter-add over the window.
SmallVector<utils::IteratorType> backwardIterators(linalg::LinalgOp op,
                                                   AffineMap targetMap) {
  llvm::SmallBitVector indexed(op.getNumLoops());
  llvm::SmallBitVector mixed(op.getNumLoops());
  classifyIndexedLoops(targetMap, indexed, mixed);
  indexed.reset(mixed);
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    iterators.push_back(indexed.test(d) ? utils::IteratorType::parallel
                                        : utils::IteratorType::reduction);
  return iterators;
}

/// Builds the body of one input's backward generic: the forward body
/// cloned, then reversed from the result's gradient to the input's
/// adjoint, which is added to the accumulator.
class BackwardBody {
public:
  BackwardBody(linalg::LinalgOp op, unsigned resultIndex, OpOperand &input,
               Value accumulatorArg, bool countsTies, bool readsResult)
      : op(op), resultIndex(resultIndex), input(input),
        accumulatorArg(accumulatorArg), countsTies(countsTies),
        readsResult(readsResult) {}

  void build(OpBuilder &nb, Location nloc, ValueRange args);

  /// Failure when an op of the body has no derivative (reported).
  LogicalResult status = success();
  /// Whether the result depends on the input at all.
  bool dependent = false;

private:
  LogicalResult propagateBackwards(ScalarAdjoints &adjoints, Block *block);

  linalg::LinalgOp op;
  unsigned resultIndex;
  OpOperand &input;
  Value accumulatorArg;
  bool countsTies, readsResult;
};

/// Propagates adjoints over the ops of \p block (the cloned body), last
/// first.
LogicalResult BackwardBody::propagateBackwards(ScalarAdjoints &adjoints,
                                               Block *block) {
  SmallVector<Operation *> cloned;
  for (Operation &inner : *block)
    cloned.push_back(&inner);
  for (Operation *inner : llvm::reverse(cloned))
    if (failed(adjoints.propagate(inner)))
      return op->emitError()
             << "cannot differentiate '" << op->getName()
             << "': no derivative for '" << inner->getName() << "' in its body";
  return success();
}

void BackwardBody::build(OpBuilder &nb, Location nloc, ValueRange args) {
  Block &forwardBody = *op.getBlock();
  IRMapping mapping;
  cloneBody(nb, forwardBody, args, mapping);
  Value grad = args[forwardBody.getNumArguments()];
  Value acc = args.back();
  ScalarAdjoints adjoints(
      nb, accumulatorArg ? mapping.lookup(accumulatorArg) : Value(),
      countsTies ? args[forwardBody.getNumArguments() + 1] : Value());
  Value recomputed = mapping.lookupOrDefault(
      forwardBody.getTerminator()->getOperand(resultIndex));
  adjoints.add(recomputed, grad);
  // Reverse over the cloned body (it is the tail of this block).
  Block *block = nb.getInsertionBlock();
  status = propagateBackwards(adjoints, block);
  if (readsResult && recomputed.getDefiningOp())
    recomputed.replaceAllUsesWith(args[args.size() - 2]);
  Value adjoint =
      adjoints.get(args[op.getMatchingBlockArgument(&input).getArgNumber()]);
  dependent = adjoint != nullptr;
  Value sum =
      adjoint ? arith::AddFOp::create(nb, nloc, acc, adjoint).getResult() : acc;
  linalg::YieldOp::create(nb, nloc, sum);
  // Drop the recomputed forward ops and adjoints this input does not
  // need: a matmul's gradient then has a multiply-add body that later
  // passes recognise as a contraction.
  eraseTriviallyDeadOps(block);
}

FailureOr<Value> ReverseSweep::inputGradient(linalg::LinalgOp op,
                                             unsigned resultIndex,
                                             OpOperand &input, Value resultGrad,
                                             OpBuilder &b, bool readsResult) {
  Location loc = op.getLoc();
  bool reduces = op.getNumReductionLoops() > 0;
  AffineMap targetMap = op.getMatchingIndexingMap(&input);
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  backwardOperands(op, resultIndex, targetMap, resultGrad, ins, maps);
  SmallVector<utils::IteratorType> iterators = backwardIterators(op, targetMap);

  Value init = filledLike(b, loc, input.get(), 0.0);
  Value accumulatorArg =
      reduces ? op.getBlock()->getArgument(op.getNumDpsInputs() + resultIndex)
              : Value();
  // A max/min reduction shares its gradient among tied elements: their
  // count per result element is one more input.
  Value tieCount = tieCountOf(op, resultIndex, ins, maps, b);
  if (tieCount) {
    AffineMap resultMap = maps[maps.size() - 2];
    maps.insert(maps.end() - 1, resultMap);
    ins.push_back(tieCount);
  }
  // The forward result, read in place of the body's recomputation of it.
  readsResult = readsResult && !reduces;
  if (readsResult) {
    Value result = op->getResult(resultIndex);
    maps.insert(maps.end() - 1,
                op.getIndexingMapMatchingResult(cast<OpResult>(result)));
    ins.push_back(result);
  }
  BackwardBody body(op, resultIndex, input, accumulatorArg,
                    /*countsTies=*/tieCount != nullptr, readsResult);
  auto backward = linalg::GenericOp::create(
      b, loc, init.getType(), ins, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        body.build(nb, nloc, args);
      });
  if (failed(body.status))
    return failure();
  if (!body.dependent) {
    backward->erase();
    return Value();
  }
  return dropUnusedInputs(backward, b);
}

/// Elements of a tensor value (0 for a scalar; the maximum when dynamic).
static int64_t elementsOf(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  if (!type)
    return 0;
  return type.hasStaticShape() ? type.getNumElements()
                               : std::numeric_limits<int32_t>::max();
}

/// Elements of the tensors \p op reads.
static int64_t elementsRead(Operation *op) {
  int64_t total = 0;
  for (Value operand : op->getOperands())
    total += elementsOf(operand);
  return total;
}

/// Erases \p op and the producers only it kept alive.
static void eraseWithDeadProducers(Operation *op) {
  SmallVector<Operation *> worklist = {op};
  while (!worklist.empty()) {
    Operation *dead = worklist.pop_back_val();
    SmallVector<Operation *> producers;
    for (Value operand : dead->getOperands())
      if (Operation *def = operand.getDefiningOp())
        producers.push_back(def);
    dead->erase();
    for (Operation *def : producers)
      if (isOpTriviallyDead(def) && !llvm::is_contained(worklist, def))
        worklist.push_back(def);
  }
}

FailureOr<Value> ReverseSweep::leanInputGradient(linalg::LinalgOp op,
                                                 unsigned resultIndex,
                                                 OpOperand &input,
                                                 Value resultGrad,
                                                 OpBuilder &b) {
  FailureOr<Value> recomputing =
      inputGradient(op, resultIndex, input, resultGrad, b);
  if (failed(recomputing) || !*recomputing || op.getNumReductionLoops() > 0)
    return recomputing;
  // The reading variant reads at least the result, its gradient and an
  // init shaped like the input: build it only where it can read less.
  Operation *recomputingOp = recomputing->getDefiningOp();
  if (elementsRead(recomputingOp) <= elementsOf(op->getResult(resultIndex)) +
                                         elementsOf(resultGrad) +
                                         elementsOf(input.get()))
    return recomputing;
  FailureOr<Value> reading =
      inputGradient(op, resultIndex, input, resultGrad, b, true);
  if (failed(reading) || !*reading)
    return recomputing;
  Operation *readingOp = reading->getDefiningOp();
  if (elementsRead(readingOp) < elementsRead(recomputingOp)) {
    eraseWithDeadProducers(recomputingOp);
    return reading;
  }
  eraseWithDeadProducers(readingOp);
  return recomputing;
}

/// For a max/min reduction (the result's body value is a max/min against
/// its accumulator), the number of elements equal to each result element,
/// as a generic over the forward loops; null otherwise. `ins`/`maps` are the
/// forward inputs followed by the final results.
Value ReverseSweep::tieCountOf(linalg::LinalgOp op, unsigned resultIndex,
                               ArrayRef<Value> ins, ArrayRef<AffineMap> maps,
                               OpBuilder &b) {
  if (op.getNumReductionLoops() == 0)
    return Value();
  Block &body = *op.getBlock();
  Value accumulator = body.getArgument(op.getNumDpsInputs() + resultIndex);
  Operation *reduce =
      body.getTerminator()->getOperand(resultIndex).getDefiningOp();
  if (!reduce ||
      !isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
           arith::MinNumFOp>(reduce) ||
      !llvm::is_contained(reduce->getOperands(), accumulator))
    return Value();
  Value element = reduce->getOperand(0) == accumulator ? reduce->getOperand(1)
                                                       : reduce->getOperand(0);
  Location loc = op.getLoc();
  Value result = op->getResult(resultIndex);
  Value zeros = filledLike(b, loc, result, 0.0);
  unsigned numForwardArgs = body.getNumArguments();
  SmallVector<AffineMap> countMaps(maps.begin(), maps.begin() + numForwardArgs);
  countMaps.push_back(op.getIndexingMapMatchingResult(cast<OpResult>(result)));
  auto count = linalg::GenericOp::create(
      b, loc, zeros.getType(), ins.take_front(numForwardArgs),
      ValueRange{zeros}, countMaps, op.getIteratorTypesArray(),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping mapping;
        cloneBody(nb, body, args, mapping);
        Type type = args.back().getType();
        Value equal = arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OEQ,
                                            mapping.lookupOrDefault(element),
                                            mapping.lookup(accumulator));
        Value one = arith::SelectOp::create(nb, nloc, equal,
                                            floatConstant(nb, nloc, type, 1.0),
                                            floatConstant(nb, nloc, type, 0.0));
        Value sum = arith::AddFOp::create(nb, nloc, args.back(), one);
        linalg::YieldOp::create(nb, nloc, sum);
        eraseTriviallyDeadOps(nb.getInsertionBlock());
      });
  return count.getResult(0);
}

/// Whether the operands in \p keep, read through \p maps, index every one
/// of \p numLoops loops directly.
static bool indexAllLoops(ArrayRef<AffineMap> maps,
                          const llvm::SmallBitVector &keep, unsigned numLoops) {
  llvm::SmallBitVector covered(numLoops);
  for (unsigned j = 0; j < maps.size(); ++j) {
    if (!keep.test(j))
      continue;
    for (AffineExpr e : maps[j].getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        covered.set(dim.getPosition());
  }
  return covered.all();
}

/// The operands of \p op to keep: all but the inputs its body does not
/// read, unless dropping one leaves a loop without an operand to give it
/// its extent.
static llvm::SmallBitVector operandsToKeep(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::SmallBitVector keep(maps.size(), true);
  for (unsigned i = 0; i < op.getNumDpsInputs(); ++i) {
    if (!body.getArgument(i).use_empty())
      continue;
    keep.reset(i);
    if (!indexAllLoops(maps, keep, op.getNumLoops()))
      keep.set(i); // it still gives a loop its extent
  }
  return keep;
}

/// Rebuilds `op` without the inputs its body does not read (as long as the
/// loops they index stay indexed by another operand), so that a gradient
/// of a matmul has the two inputs of a contraction.
Value ReverseSweep::dropUnusedInputs(linalg::GenericOp op, OpBuilder &b) {
  llvm::SmallBitVector keep = operandsToKeep(op);
  if (keep.all())
    return op.getResult(0);
  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Value> ins;
  SmallVector<AffineMap> keptMaps;
  llvm::BitVector dropArgs(body.getNumArguments());
  for (unsigned i = 0; i < maps.size(); ++i) {
    if (!keep.test(i)) {
      dropArgs.set(i);
      continue;
    }
    keptMaps.push_back(maps[i]);
    if (i < numInputs)
      ins.push_back(op.getDpsInputs()[i]);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  auto slim = linalg::GenericOp::create(b, op.getLoc(), op.getResultTypes(),
                                        ins, op.getDpsInits(), keptMaps,
                                        op.getIteratorTypesArray());
  slim.getRegion().takeBody(op.getRegion());
  slim.getRegion().front().eraseArguments(dropArgs);
  op->erase();
  return slim.getResult(0);
}

/// Fails (reported) unless \p op is a linalg op on tensors whose body
/// captures no active value (that would get no gradient through it) other
/// than a table it gathers from.
LogicalResult ReverseSweep::checkDifferentiable(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op->getNumRegions() != 1)
    return op->emitError() << "cannot differentiate '" << op->getName()
                           << "': expected a linalg op on tensors";
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegion(0), captured);
  for (Value value : captured)
    if (active.contains(value) && !isa<RankedTensorType>(value.getType()))
      return op->emitError()
             << "cannot differentiate '" << op->getName()
             << "': its body uses a value that depends on a parameter "
                "without taking it as an operand";
  return success();
}

/// The gradient through a reduction's accumulator \p init: only
/// accumulators that are added to pass it through, each to its own result.
LogicalResult ReverseSweep::accumulatorGradient(linalg::LinalgOp op,
                                                unsigned resultIndex,
                                                OpOperand &init,
                                                Value resultGrad,
                                                OpBuilder &b) {
  unsigned initIndex = init.getOperandNumber() - op.getNumDpsInputs();
  BlockArgument accArg = op.getMatchingBlockArgument(&init);
  auto sum = op.getBlock()
                 ->getTerminator()
                 ->getOperand(initIndex)
                 .getDefiningOp<arith::AddFOp>();
  if (!sum || (sum.getLhs() != accArg && sum.getRhs() != accArg))
    return op->emitError()
           << "cannot differentiate '" << op->getName()
           << "': its reduction does not add to a computed accumulator";
  if (static_cast<size_t>(initIndex) == resultIndex)
    addGrad(b, init.get(), resultGrad);
  return success();
}

/// Adds the gradient of \p operand through result \p resultIndex.
LogicalResult ReverseSweep::operandGradient(linalg::LinalgOp op,
                                            unsigned resultIndex,
                                            OpOperand &operand,
                                            Value resultGrad, OpBuilder &b) {
  if (!active.contains(operand.get()))
    return success();
  bool isInit = op.isDpsInit(&operand);
  if (isInit && !op.payloadUsesValueFromOperand(&operand))
    return success();
  if (isInit && op.getNumReductionLoops() > 0)
    return accumulatorGradient(op, resultIndex, operand, resultGrad, b);
  FailureOr<Value> grad =
      leanInputGradient(op, resultIndex, operand, resultGrad, b);
  if (failed(grad))
    return failure();
  addGrad(b, operand.get(), *grad);
  return success();
}

LogicalResult ReverseSweep::differentiateLinalg(linalg::LinalgOp op,
                                                OpBuilder &b) {
  if (failed(checkDifferentiable(op)))
    return failure();
  for (auto [resultIndex, result] : llvm::enumerate(op->getResults())) {
    Value resultGrad = grads.lookup(result);
    if (!resultGrad)
      continue;
    for (OpOperand &operand : op->getOpOperands())
      if (failed(operandGradient(op, resultIndex, operand, resultGrad, b)))
        return failure();
    for (Value table : extractedTables(op)) {
      if (!active.contains(table))
        continue;
      FailureOr<Value> grad = gatherTableGradient(op, table, resultGrad, b);
      if (failed(grad))
        return failure();
      addGrad(b, table, *grad);
    }
  }
  return success();
}

LogicalResult ReverseSweep::differentiateDataMovement(Operation *op,
                                                      OpBuilder &b) {
  FailureOr<SmallVector<OperandGradient>> operandGrads =
      dataMovementGradients(op, grads.lookup(op->getResult(0)), b);
  if (failed(operandGrads))
    return failure();
  for (auto [operand, grad] : *operandGrads)
    addGrad(b, operand, grad);
  return success();
}

LogicalResult ReverseSweep::differentiateScalar(Operation *op, OpBuilder &b) {
  ScalarAdjoints adjoints(b);
  for (Value result : op->getResults())
    if (Value g = grads.lookup(result))
      adjoints.add(result, g);
  if (failed(adjoints.propagate(op)))
    return op->emitError() << "cannot differentiate '" << op->getName()
                           << "': no derivative rule";
  for (Value operand : op->getOperands())
    addGrad(b, operand, adjoints.get(operand));
  return success();
}

LogicalResult ReverseSweep::differentiateExpand(tensor::ExpandShapeOp expand,
                                                OpBuilder &b) {
  addGrad(b, expand.getSrc(),
          tensor::CollapseShapeOp::create(b, expand.getLoc(),
                                          expand.getSrcType(),
                                          grads.lookup(expand.getResult()),
                                          expand.getReassociationIndices()));
  return success();
}

LogicalResult
ReverseSweep::differentiateCollapse(tensor::CollapseShapeOp collapse,
                                    OpBuilder &b) {
  addGrad(b, collapse.getSrc(),
          tensor::ExpandShapeOp::create(b, collapse.getLoc(),
                                        collapse.getSrcType(),
                                        grads.lookup(collapse.getResult()),
                                        collapse.getReassociationIndices()));
  return success();
}

/// Whether some dimension is padded at its end only.
static bool padsOnlyAtTheEnd(ArrayRef<int64_t> lows, ArrayRef<int64_t> highs) {
  for (auto [low, high] : llvm::zip_equal(lows, highs))
    if (low == 0 && high != 0)
      return true;
  return false;
}

/// \p padded without the high padding of every dimension: the leading
/// `low + size` elements.
static Value sliceOffHighPadding(OpBuilder &b, Location loc, Value padded,
                                 tensor::PadOp pad) {
  RankedTensorType sourceType = pad.getSourceType();
  unsigned rank = sourceType.getRank();
  ArrayRef<int64_t> lows = pad.getStaticLow();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1)), sizes;
  for (unsigned d = 0; d < rank; ++d)
    sizes.push_back(b.getIndexAttr(lows[d] + sourceType.getDimSize(d)));
  return tensor::ExtractSliceOp::create(b, loc, padded, offsets, sizes,
                                        strides);
}

static void yieldFirstArgument(OpBuilder &nb, Location nloc, ValueRange args) {
  linalg::YieldOp::create(nb, nloc, args[0]);
}

LogicalResult ReverseSweep::differentiatePad(tensor::PadOp pad, OpBuilder &b) {
  // The source's gradient is the interior of the result's gradient (a
  // convolution's zero padding): a copy reading at offset `low`, as a
  // generic, so no strided slice reaches the CPU lowering. The padding
  // value must be inactive.
  Location loc = pad.getLoc();
  auto sourceType = pad.getSourceType();
  Value padValue = pad.getConstantPaddingValue();
  if (!sourceType.hasStaticShape() ||
      ShapedType::isDynamicShape(pad.getStaticLow()) ||
      ShapedType::isDynamicShape(pad.getStaticHigh()) || !padValue ||
      active.contains(padValue))
    return pad->emitError()
           << "cannot differentiate 'tensor.pad': needs static shapes and "
              "pads and a padding value that does not depend on a parameter";
  SmallVector<AffineExpr> shifted;
  for (auto [dim, low] : llvm::enumerate(pad.getStaticLow()))
    shifted.push_back(b.getAffineDimExpr(dim) + low);
  unsigned rank = sourceType.getRank();
  AffineMap read = AffineMap::get(rank, 0, shifted, b.getContext());
  // A dimension padded only at the end reads at `d`, which linalg takes
  // as the loop's size: the high padding is sliced off first there.
  Value padded = grads.lookup(pad.getResult());
  if (padsOnlyAtTheEnd(pad.getStaticLow(), pad.getStaticHigh()))
    padded = sliceOffHighPadding(b, loc, padded, pad);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, sourceType.getShape(),
                                       sourceType.getElementType());
  Value interior =
      linalg::GenericOp::create(
          b, loc, sourceType, ValueRange{padded}, ValueRange{init},
          ArrayRef<AffineMap>{read, b.getMultiDimIdentityMap(rank)}, iterators,
          yieldFirstArgument)
          .getResult(0);
  addGrad(b, pad.getSource(), interior);
  return success();
}

/// The body of a fake quantization's gradient: dy where x rounds into
/// [-127, 127] at its scale, 0 where it was clamped. \p args are x, the
/// scale, dy and the init.
static void buildStraightThroughBody(OpBuilder &nb, Location nloc,
                                     ValueRange args) {
  Value x = args[0];
  if (!x.getType().isF32())
    x = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), x);
  Value r = math::RoundEvenOp::create(
      nb, nloc, arith::DivFOp::create(nb, nloc, x, args[1]));
  Value limit = floatConstant(nb, nloc, r.getType(), 127.0);
  Value inside =
      arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OLE,
                            math::AbsFOp::create(nb, nloc, r), limit);
  Value zero = floatConstant(nb, nloc, args[2].getType(), 0.0);
  linalg::YieldOp::create(
      nb, nloc,
      arith::SelectOp::create(nb, nloc, inside, args[2], zero).getResult());
}

LogicalResult ReverseSweep::differentiateFakeQuant(FakeQuantOp fakeQuant,
                                                   OpBuilder &b) {
  // The straight-through estimator, clipped; the scale gets no gradient.
  Location loc = fakeQuant.getLoc();
  auto type = fakeQuant.getInput().getType();
  unsigned rank = type.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap scaleMap = AffineMap::get(rank, 0, b.getContext());
  if (std::optional<int64_t> axis = fakeQuant.getAxis())
    scaleMap =
        AffineMap::get(rank, 0, b.getAffineDimExpr(*axis), b.getContext());
  Value dy = grads.lookup(fakeQuant.getOutput());
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  Value dx =
      linalg::GenericOp::create(
          b, loc, TypeRange{type},
          ValueRange{fakeQuant.getInput(), fakeQuant.getScale(), dy},
          ValueRange{init}, ArrayRef<AffineMap>{id, scaleMap, id, id},
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          buildStraightThroughBody)
          .getResult(0);
  addGrad(b, fakeQuant.getInput(), dx);
  return success();
}

LogicalResult ReverseSweep::differentiateExtract(tensor::ExtractOp extract,
                                                 OpBuilder &b) {
  Location loc = extract.getLoc();
  Value zeros = filledLike(b, loc, extract.getTensor(), 0.0);
  addGrad(b, extract.getTensor(),
          tensor::InsertOp::create(b, loc, grads.lookup(extract.getResult()),
                                   zeros, extract.getIndices()));
  return success();
}

/// Dropout is linear with its mask: the gradient is dropped by the same
/// mask, which the same stream regenerates.
LogicalResult ReverseSweep::differentiateDropout(DropoutOp dropout,
                                                 OpBuilder &b) {
  addGrad(b, dropout.getInput(),
          DropoutOp::create(b, dropout.getLoc(), dropout.getType(),
                            grads.lookup(dropout.getOutput()),
                            dropout.getRatioAttr(), dropout.getStreamAttr()));
  return success();
}

/// Whether some result of \p op is active and has a gradient.
bool ReverseSweep::needsDifferentiating(Operation *op) {
  bool hasGrad = llvm::any_of(op->getResults(),
                              [&](Value r) { return grads.count(r) > 0; });
  bool anyActive = llvm::any_of(op->getResults(),
                                [&](Value v) { return active.contains(v); });
  return hasGrad && anyActive;
}

/// Scalar code: no regions and no shaped operands.
static bool isScalarOp(Operation *op) {
  return op->getNumRegions() == 0 &&
         llvm::none_of(op->getOperandTypes(),
                       [](Type t) { return isa<ShapedType>(t); });
}

LogicalResult ReverseSweep::differentiate(Operation *op, OpBuilder &b) {
  if (!needsDifferentiating(op))
    return success();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return differentiateLinalg(linalgOp, b);
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return differentiateExpand(expand, b);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return differentiateCollapse(collapse, b);
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return differentiatePad(pad, b);
  if (auto fakeQuant = dyn_cast<FakeQuantOp>(op))
    return differentiateFakeQuant(fakeQuant, b);
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return differentiateExtract(extract, b);
  if (isDataMovement(op))
    return differentiateDataMovement(op, b);
  if (auto dropout = dyn_cast<DropoutOp>(op))
    return differentiateDropout(dropout, b);
  if (isScalarOp(op))
    return differentiateScalar(op, b);
  return op->emitError() << "cannot differentiate '" << op->getName()
                         << "': no derivative rule";
}

bool ReverseSweep::isActive(Value value) const {
  return active.contains(value);
}

/// Whether \p op reads an active value, as an operand or from inside one
/// of its regions.
bool ReverseSweep::usesActive(Operation &op) const {
  if (llvm::any_of(op.getOperands(), [&](Value v) { return isActive(v); }))
    return true;
  llvm::SetVector<Value> captured;
  for (Region &region : op.getRegions())
    getUsedValuesDefinedAbove(region, captured);
  return llvm::any_of(captured, [&](Value v) { return isActive(v); });
}

/// Active values: the parameters and the float results that depend on
/// them (except a softmax's shift, which gets no gradient).
void ReverseSweep::markActive(Block &body, ArrayRef<BlockArgument> params) {
  for (BlockArgument param : params)
    active.insert(param);
  for (Operation &op : body.without_terminator()) {
    if (!usesActive(op) || isSoftmaxShift(&op))
      continue;
    for (Value result : op.getResults())
      if (isFloatLike(result.getType()))
        active.insert(result);
  }
}

/// d loss / d loss = 1; marked so --mp-loss-scaling can scale the seed.
void ReverseSweep::seedLoss(OpBuilder &b, Location loc, Value loss) {
  if (!active.contains(loss))
    return;
  Value seed = isa<RankedTensorType>(loss.getType())
                   ? filledLike(b, loc, loss, 1.0)
                   : floatConstant(b, loc, loss.getType(), 1.0);
  seed.getDefiningOp()->setAttr(kSeedAttrName, b.getUnitAttr());
  grads[loss] = seed;
}

/// A forward op pinned to a precision (mp.precision, the user's or the
/// session's repair) pins the products and loops of its derivative too:
/// they read the same values (a pinned product's weight gradient reads
/// its f32 input), so leaving them to AMP would overflow where the
/// forward op no longer does. The derivative is the ops from after
/// \p before (or the block's start) up to \p ret.
static void pinDerivative(Operation *forwardOp, Operation *before,
                          Operation *ret) {
  auto pin = forwardOp->getAttrOfType<FloatPrecisionAttr>(kPrecisionAttrName);
  if (!pin)
    return;
  Operation *first = before ? before->getNextNode() : &ret->getBlock()->front();
  for (Operation *built = first; built != ret; built = built->getNextNode())
    if (isa<linalg::LinalgOp>(built) && !isa<linalg::FillOp>(built))
      built->setAttr(kPrecisionAttrName, pin);
}

FailureOr<SmallVector<Value>>
ReverseSweep::run(Value loss, ArrayRef<BlockArgument> params) {
  Block &body = func.getBody().front();
  markActive(body, params);

  Operation *ret = body.getTerminator();
  OpBuilder b(ret);
  Location loc = ret->getLoc();
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);

  seedLoss(b, loc, loss);
  for (Operation *op : llvm::reverse(forward)) {
    Operation *before = ret->getPrevNode();
    if (failed(differentiate(op, b)))
      return failure();
    pinDerivative(op, before, ret);
  }

  SmallVector<Value> result;
  for (BlockArgument param : params) {
    Value grad = grads.lookup(param);
    result.push_back(grad ? grad : filledLike(b, loc, param, 0.0));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// f32 or tensor<f32>.
bool isF32ScalarLike(Type type) {
  if (type.isF32())
    return true;
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0 && tensor.getElementType().isF32();
}

/// A loss function has one block and returns one f32 scalar.
LogicalResult checkLossFunction(func::FuncOp loss) {
  if (loss.isExternal() || !loss.getBody().hasOneBlock())
    return loss.emitError() << "'" << kLossAttrName
                            << "' function must have a single block body";
  FunctionType type = loss.getFunctionType();
  if (type.getNumResults() == 1 && isF32ScalarLike(type.getResult(0)))
    return success();
  return loss.emitError() << "'" << kLossAttrName
                          << "' function must return one f32 scalar or "
                             "tensor<f32>, got "
                          << type.getResults();
}

/// The indices of \p loss's parameters (float arguments named by
/// mp.param); fails (reported) for a non-float one or none at all.
FailureOr<SmallVector<unsigned>> parameterIndices(func::FuncOp loss) {
  SmallVector<unsigned> paramIndices;
  for (unsigned i = 0; i < loss.getNumArguments(); ++i) {
    // The dialect verifies that a parameter's name is a non-empty string.
    if (!loss.getArgAttrOfType<StringAttr>(i, kParamAttrName))
      continue;
    if (!isFloatLike(loss.getArgument(i).getType()))
      return loss.emitError() << "argument #" << i << ": '" << kParamAttrName
                              << "' needs a float tensor or scalar, got "
                              << loss.getArgument(i).getType();
    paramIndices.push_back(i);
  }
  if (paramIndices.empty())
    return loss.emitError() << "'" << kLossAttrName << "' function has no '"
                            << kParamAttrName << "' arguments to differentiate";
  return paramIndices;
}

/// Numbers \p loss's dropouts that have no stream, in order after the
/// largest given, so that the gradient's dropouts (same stream) draw the
/// same masks.
void numberDropoutStreams(func::FuncOp loss) {
  int64_t next = 0;
  loss.walk([&](DropoutOp op) {
    if (IntegerAttr stream = op.getStreamAttr())
      next = std::max(next, stream.getInt() + 1);
  });
  Builder b(loss.getContext());
  loss.walk([&](DropoutOp op) {
    if (!op.getStreamAttr())
      op.setStreamAttr(b.getI64IntegerAttr(next++));
  });
}

/// Aggregate ops (linalg.softmax) are differentiated through their
/// decomposition into generics.
LogicalResult decomposeAggregates(func::FuncOp grad) {
  SmallVector<linalg::AggregatedOpInterface> aggregates;
  grad.walk(
      [&](linalg::AggregatedOpInterface op) { aggregates.push_back(op); });
  for (linalg::AggregatedOpInterface op : aggregates) {
    OpBuilder ab(op);
    FailureOr<SmallVector<Value>> parts = op.decomposeOperation(ab);
    if (failed(parts))
      return op->emitError() << "cannot decompose '" << op->getName()
                             << "' for differentiation";
    op->replaceAllUsesWith(*parts);
    op->erase();
  }
  return success();
}

/// Makes \p grad return the loss followed by \p grads, each gradient's
/// result named after its parameter (mp.grad).
void returnLossAndGradients(func::FuncOp loss, func::FuncOp grad,
                            ArrayRef<Value> grads,
                            ArrayRef<unsigned> paramIndices) {
  auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
  SmallVector<Value> results{ret.getOperand(0)};
  results.append(grads.begin(), grads.end());
  OpBuilder rb(ret);
  func::ReturnOp::create(rb, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  grad.setFunctionType(FunctionType::get(
      grad.getContext(), loss.getFunctionType().getInputs(), resultTypes));
  SmallVector<DictionaryAttr> resultAttrs{
      DictionaryAttr::get(grad.getContext())};
  for (unsigned i : paramIndices)
    resultAttrs.push_back(rb.getDictionaryAttr(
        rb.getNamedAttr(kGradAttrName, loss.getArgAttr(i, kParamAttrName))));
  grad.setAllResultAttrs(resultAttrs);
}

/// Appends the reverse sweep to \p grad, a copy of the loss function, and
/// returns the gradients of the arguments at \p paramIndices.
FailureOr<SmallVector<Value>> sweep(func::FuncOp grad,
                                    ArrayRef<unsigned> paramIndices) {
  if (failed(decomposeAggregates(grad)))
    return failure();
  auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
  SmallVector<BlockArgument> params;
  for (unsigned i : paramIndices)
    params.push_back(grad.getArgument(i));
  return ReverseSweep(grad).run(ret.getOperand(0), params);
}

struct AutodiffPass : mp::impl::MPAutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr(kLossAttrName))
        continue;
      if (failed(buildGradient(func, symbols)))
        return signalPassFailure();
    }
  }

  /// `@<loss>_grad`, a copy of \p loss after it, marked as its gradient.
  static func::FuncOp cloneAsGradient(func::FuncOp loss, StringRef name,
                                      SymbolTable &symbols) {
    OpBuilder b(loss);
    b.setInsertionPointAfter(loss);
    auto grad = cast<func::FuncOp>(b.clone(*loss.getOperation()));
    grad.setSymName(name);
    grad->removeAttr(kLossAttrName);
    grad->setAttr(kGradientOfAttrName,
                  FlatSymbolRefAttr::get(loss.getSymNameAttr()));
    symbols.insert(grad);
    return grad;
  }

  LogicalResult buildGradient(func::FuncOp loss, SymbolTable &symbols) {
    if (failed(checkLossFunction(loss)))
      return failure();
    FailureOr<SmallVector<unsigned>> paramIndices = parameterIndices(loss);
    if (failed(paramIndices))
      return failure();
    std::string name = (loss.getSymName() + "_grad").str();
    if (symbols.lookup(name))
      return loss.emitError()
             << "cannot create '@" << name << "': the symbol already exists";
    numberDropoutStreams(loss);
    func::FuncOp grad = cloneAsGradient(loss, name, symbols);
    FailureOr<SmallVector<Value>> grads = sweep(grad, *paramIndices);
    if (failed(grads)) {
      grad.erase();
      return failure();
    }
    returnLossAndGradients(loss, grad, *grads, *paramIndices);
    return success();
  }
};

} // namespace
