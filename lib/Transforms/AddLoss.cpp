//===- AddLoss.cpp - an mp.loss function around mp.predict ----------------===//
//
// Copies the prediction function's body into @loss(x, labels, params...)
// and reduces its logits against the labels (softmax cross-entropy or mean
// squared error), so a model that only predicts can be trained.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPADDLOSS
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

Value f32Constant(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, double v) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  return linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, v)},
                                ValueRange{empty})
      .getResult(0);
}

/// A reduction of the [B, C] inputs over `iterators`' reduction dimensions
/// into `init` (indexed by `outMap`), with `body(args..., acc)`.
Value reduce2d(OpBuilder &b, Location loc, ValueRange inputs,
               ArrayRef<AffineMap> inputMaps, Value init, AffineMap outMap,
               ArrayRef<utils::IteratorType> iterators,
               function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(outMap);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, body(nb, nl, args));
             })
      .getResult(0);
}

/// sum over b, c of labels * (logsumexp(logits[b]) - logits[b, c]), / B.
Value crossEntropy(OpBuilder &b, Location loc, Value logits, Value labels) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t batch = type.getDimSize(0);
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
  AffineMap all = AffineMap::get(2, 0, {d0, d1}, ctx);
  AffineMap row = AffineMap::get(2, 0, {d0}, ctx);
  AffineMap none = AffineMap::get(2, 0, {}, ctx);
  using IT = utils::IteratorType;
  SmallVector<IT> rows = {IT::parallel, IT::reduction};
  SmallVector<IT> both = {IT::reduction, IT::reduction};
  Value max = reduce2d(b, loc, logits, {all},
                       filled(b, loc, {batch}, -INFINITY), row, rows,
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         return arith::MaximumFOp::create(nb, nl, a[0], a[1])
                             .getResult();
                       });
  Value sum = reduce2d(b, loc, {logits, max}, {all, row},
                       filled(b, loc, {batch}, 0.0), row, rows,
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
                         Value e = math::ExpOp::create(nb, nl, d);
                         return arith::AddFOp::create(nb, nl, e, a[2])
                             .getResult();
                       });
  Value total = reduce2d(
      b, loc, {logits, max, sum, labels}, {all, row, row, all},
      filled(b, loc, {}, 0.0), none, both,
      [](OpBuilder &nb, Location nl, ValueRange a) {
        // log_softmax = (l - max) - log(sum); the loss subtracts label * it.
        Value logSum = math::LogOp::create(nb, nl, a[2]);
        Value shifted = arith::SubFOp::create(nb, nl, a[0], a[1]);
        Value logProb = arith::SubFOp::create(nb, nl, shifted, logSum);
        Value term = arith::MulFOp::create(nb, nl, logProb, a[3]);
        return arith::SubFOp::create(nb, nl, a[4], term).getResult();
      });
  Value scalar = tensor::ExtractOp::create(b, loc, total, ValueRange{});
  return arith::MulFOp::create(b, loc, scalar,
                               f32Constant(b, loc, 1.0 / double(batch)));
}

/// Per position of \p logits [P..., V]: the reduction over the classes of
/// `combine(value, acc)` from `init`, as a tensor<P...xf32>.
Value reduceClasses(OpBuilder &b, Location loc, ValueRange inputs,
                    ArrayRef<AffineMap> inputMaps, double init,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  unsigned rank = type.getRank();
  AffineMap positions = AffineMap::getMultiDimIdentityMap(rank, b.getContext())
                            .getMajorSubMap(rank - 1);
  SmallVector<utils::IteratorType> iterators(rank - 1,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  return reduce2d(b, loc, inputs, inputMaps,
                  filled(b, loc, type.getShape().drop_back(), init), positions,
                  iterators, body);
}

/// logits[p, clamp(id[p])] for every position p (a gather, which the
/// autodiff reverses with a scatter-add); ignored positions read class 0.
Value targetScores(OpBuilder &b, Location loc, Value logits, Value ids,
                   int64_t ignoreIndex) {
  auto type = cast<RankedTensorType>(logits.getType());
  unsigned positions = type.getRank() - 1;
  int64_t classes = type.getShape().back();
  AffineMap id = b.getMultiDimIdentityMap(positions);
  Value init = tensor::EmptyOp::create(b, loc, type.getShape().drop_back(),
                                       b.getF32Type());
  auto body = [&](OpBuilder &nb, Location nl, ValueRange args) {
    Type idType = args[0].getType();
    auto idConstant = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(nb, nl, idType, v);
    };
    Value kept = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne,
                                       args[0], idConstant(ignoreIndex));
    Value target = arith::SelectOp::create(nb, nl, kept, args[0], idConstant(0));
    target = arith::MaxSIOp::create(nb, nl, target, idConstant(0));
    target = arith::MinSIOp::create(nb, nl, target, idConstant(classes - 1));
    SmallVector<Value> coords;
    for (unsigned d = 0; d < positions; ++d)
      coords.push_back(linalg::IndexOp::create(nb, nl, d));
    coords.push_back(
        arith::IndexCastOp::create(nb, nl, nb.getIndexType(), target));
    linalg::YieldOp::create(
        nb, nl, tensor::ExtractOp::create(nb, nl, logits, coords).getResult());
  };
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{ids},
             ValueRange{init}, ArrayRef<AffineMap>{id, id},
             SmallVector<utils::IteratorType>(positions,
                                              utils::IteratorType::parallel),
             body)
      .getResult(0);
}

/// Over every position: the sum of `term(args...)` where the position's id
/// is not \p ignoreIndex; `ins` are read at the position.
Value sumKeptPositions(OpBuilder &b, Location loc, ValueRange ins,
                       int64_t ignoreIndex,
                       function_ref<Value(OpBuilder &, Location, ValueRange)>
                           term) {
  auto type = cast<RankedTensorType>(ins[0].getType());
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps(ins.size(), b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  return reduce2d(
      b, loc, ins, maps, filled(b, loc, {}, 0.0),
      AffineMap::get(rank, 0, {}, b.getContext()), iterators,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value ignore =
            arith::ConstantIntOp::create(nb, nl, a[0].getType(), ignoreIndex);
        Value kept = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne,
                                           a[0], ignore);
        Value zero = f32Constant(nb, nl, 0.0);
        Value value = arith::SelectOp::create(nb, nl, kept, term(nb, nl, a),
                                              zero);
        return arith::AddFOp::create(nb, nl, a.back(), value).getResult();
      });
}

/// Mean over the positions whose id is not \p ignoreIndex of
/// logsumexp(logits[p]) - logits[p, id[p]] (0 when all are ignored).
Value tokenCrossEntropy(OpBuilder &b, Location loc, Value logits, Value ids,
                        int64_t ignoreIndex) {
  auto type = cast<RankedTensorType>(logits.getType());
  unsigned rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap position = all.getMajorSubMap(rank - 1);
  Value max = reduceClasses(b, loc, {logits}, {all}, -INFINITY,
                            [](OpBuilder &nb, Location nl, ValueRange a) {
                              return arith::MaximumFOp::create(nb, nl, a[0],
                                                               a[1])
                                  .getResult();
                            });
  Value sum = reduceClasses(b, loc, {logits, max}, {all, position}, 0.0,
                            [](OpBuilder &nb, Location nl, ValueRange a) {
                              Value d =
                                  arith::SubFOp::create(nb, nl, a[0], a[1]);
                              Value e = math::ExpOp::create(nb, nl, d);
                              return arith::AddFOp::create(nb, nl, e, a[2])
                                  .getResult();
                            });
  Value picked = targetScores(b, loc, logits, ids, ignoreIndex);
  Value total = sumKeptPositions(
      b, loc, {ids, max, sum, picked}, ignoreIndex,
      [](OpBuilder &nb, Location nl, ValueRange a) {
        Value logSum = math::LogOp::create(nb, nl, a[2]);
        Value lse = arith::AddFOp::create(nb, nl, a[1], logSum);
        return arith::SubFOp::create(nb, nl, lse, a[3]).getResult();
      });
  Value count = sumKeptPositions(b, loc, {ids}, ignoreIndex,
                                 [](OpBuilder &nb, Location nl, ValueRange) {
                                   return f32Constant(nb, nl, 1.0);
                                 });
  Value totalScalar = tensor::ExtractOp::create(b, loc, total, ValueRange{});
  Value countScalar = tensor::ExtractOp::create(b, loc, count, ValueRange{});
  Value divisor = arith::MaximumFOp::create(b, loc, countScalar,
                                            f32Constant(b, loc, 1.0));
  return arith::DivFOp::create(b, loc, totalScalar, divisor);
}

/// sum over b, c of (logits - labels)^2, / (B * C).
Value meanSquaredError(OpBuilder &b, Location loc, Value logits,
                       Value labels) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(logits.getType());
  AffineMap all = AffineMap::getMultiDimIdentityMap(2, ctx);
  using IT = utils::IteratorType;
  Value total = reduce2d(b, loc, {logits, labels}, {all, all},
                         filled(b, loc, {}, 0.0), AffineMap::get(2, 0, {}, ctx),
                         {IT::reduction, IT::reduction},
                         [](OpBuilder &nb, Location nl, ValueRange a) {
                           Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
                           Value sq = arith::MulFOp::create(nb, nl, d, d);
                           return arith::AddFOp::create(nb, nl, a[2], sq)
                               .getResult();
                         });
  Value scalar = tensor::ExtractOp::create(b, loc, total, ValueRange{});
  return arith::MulFOp::create(
      b, loc, scalar,
      f32Constant(b, loc, 1.0 / double(type.getNumElements())));
}

struct MPAddLossPass : public mp::impl::MPAddLossBase<MPAddLossPass> {
  using MPAddLossBase::MPAddLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp predict;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func->hasAttr(kLossAttrName))
        return; // the model has its own loss
      if (!func->hasAttr(kPredictAttrName))
        continue;
      if (predict) {
        func.emitError("--mp-add-loss: more than one function is marked "
                       "mp.predict");
        return signalPassFailure();
      }
      predict = func;
    }
    if (!predict) {
      module.emitError("--mp-add-loss: no function is marked mp.predict");
      return signalPassFailure();
    }
    if (failed(addLoss(module, predict)))
      signalPassFailure();
  }

  /// The logits type of \p predict: its one result, a static
  /// tensor<BxCxf32>; null otherwise.
  static RankedTensorType logitsTypeOf(func::FuncOp predict) {
    FunctionType type = predict.getFunctionType();
    auto logitsType = type.getNumResults() == 1
                          ? dyn_cast<RankedTensorType>(type.getResult(0))
                          : RankedTensorType();
    if (!logitsType || logitsType.getRank() < 2 ||
        !logitsType.hasStaticShape() || !logitsType.getElementType().isF32())
      return {};
    return logitsType;
  }

  /// \p predict takes the input first, then parameters only (mp.param),
  /// and has one block; fails (reported) otherwise.
  static LogicalResult checkArguments(func::FuncOp predict) {
    unsigned numInputs = predict.getFunctionType().getNumInputs();
    if (numInputs == 0 || predict.getArgAttr(0, kParamAttrName))
      return predict.emitError("--mp-add-loss: @")
             << predict.getSymName()
             << " must take the input first (an argument without mp.param)";
    for (unsigned i = 1; i < numInputs; ++i)
      if (!predict.getArgAttr(i, kParamAttrName))
        return predict.emitError("--mp-add-loss: argument #")
               << i << " of @" << predict.getSymName()
               << " is a second input; the loss takes one input and "
                  "parameters (mp.param)";
    if (!predict.getBody().hasOneBlock())
      return predict.emitError("--mp-add-loss: @")
             << predict.getSymName() << " must have one block";
    return success();
  }

  /// `@loss(input, labels, params...) -> f32` after \p predict, with its
  /// argument attributes and entry block, marked mp.loss.
  static func::FuncOp declareLoss(OpBuilder &b, func::FuncOp predict,
                                  Type labelsType) {
    FunctionType type = predict.getFunctionType();
    SmallVector<Type> inputs = {type.getInput(0), labelsType};
    inputs.append(type.getInputs().begin() + 1, type.getInputs().end());
    auto lossFn = func::FuncOp::create(
        b, predict.getLoc(), "loss", b.getFunctionType(inputs, b.getF32Type()));
    lossFn.setArgAttrs(0, predict.getArgAttrDict(0));
    for (unsigned i = 1; i < type.getNumInputs(); ++i)
      lossFn.setArgAttrs(i + 1, predict.getArgAttrDict(i));
    lossFn->setAttr(kLossAttrName, b.getUnitAttr());
    lossFn.addEntryBlock();
    return lossFn;
  }

  /// Clones \p predict's body into \p entry (the labels argument skipped);
  /// returns the cloned logits.
  static Value cloneForward(OpBuilder &b, func::FuncOp predict, Block *entry) {
    IRMapping mapping;
    mapping.map(predict.getArgument(0), entry->getArgument(0));
    for (unsigned i = 1; i < predict.getNumArguments(); ++i)
      mapping.map(predict.getArgument(i), entry->getArgument(i + 1));
    b.setInsertionPointToStart(entry);
    Block &body = predict.getBody().front();
    for (Operation &op : body.without_terminator())
      b.clone(op, mapping);
    return mapping.lookup(body.getTerminator()->getOperand(0));
  }

  LogicalResult addLoss(ModuleOp module, func::FuncOp predict) {
    RankedTensorType logitsType = logitsTypeOf(predict);
    if (!logitsType)
      return predict.emitError("--mp-add-loss: @")
             << predict.getSymName()
             << " must return one static f32 tensor of rank 2 or more "
                "(tensor<BxCxf32> logits, or tensor<BxTxVxf32> for a "
                "sequence), not "
             << predict.getFunctionType().getResults();
    // Sequence logits take one class id per position (a language model).
    bool ids = logitsType.getRank() > 2;
    if (ids && loss != LossKind::CrossEntropy)
      return predict.emitError("--mp-add-loss: loss=mse needs logits of rank "
                               "2, got ")
             << logitsType;
    if (failed(checkArguments(predict)))
      return failure();
    if (module.lookupSymbol("loss"))
      return predict.emitError("--mp-add-loss: the module already has a "
                               "symbol named @loss");

    Location loc = predict.getLoc();
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(predict);
    Type labelsType =
        ids ? RankedTensorType::get(logitsType.getShape().drop_back(),
                                    b.getI64Type())
            : Type(logitsType);
    func::FuncOp lossFn = declareLoss(b, predict, labelsType);
    Block *entry = &lossFn.getBody().front();
    Value logits = cloneForward(b, predict, entry);
    Value labels = entry->getArgument(1);
    Value value =
        ids ? tokenCrossEntropy(b, loc, logits, labels, ignoreIndex)
        : loss == LossKind::CrossEntropy
            ? crossEntropy(b, loc, logits, labels)
            : meanSquaredError(b, loc, logits, labels);
    func::ReturnOp::create(b, loc, value);
    return success();
  }
};

} // namespace
