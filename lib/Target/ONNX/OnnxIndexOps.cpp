//===- OnnxIndexOps.cpp - ONNX operators computed from element indices ---===//
//
// ArgMax/ArgMin, Hardmax, CumSum, GatherElements, Trilu, OneHot and the
// NegativeLogLikelihood / SoftmaxCrossEntropy losses: each a linalg.generic
// whose body reads its position (linalg.index) or gathers with
// tensor.extract.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/AffineExpr.h"

using namespace mlir;

namespace mp::onnx_import {
namespace {

using utils::IteratorType;

SmallVector<TypedValue> one(Value v, DType t) { return {{v, t}}; }

AffineMap identity(int64_t rank, MLIRContext *ctx) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}

/// The map (d0..dn-1) -> (all but `skip`).
AffineMap dropDim(int64_t rank, int64_t skip, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i)
    if (i != skip)
      exprs.push_back(getAffineDimExpr(i, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value indexAsI64(OpBuilder &b, Location loc, int64_t dim) {
  Value i = linalg::IndexOp::create(b, loc, dim);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
}

/// Which extreme ArgMax/ArgMin looks for, and in what element type.
struct ExtremeKind {
  bool isFloat, isUnsigned, isMax, last;
};

/// The running extreme's start: the element type's worst value for the
/// search (-inf or the smallest integer for a maximum).
double extremeInit(const ExtremeKind &kind, Type elem) {
  if (kind.isFloat)
    return kind.isMax ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
  unsigned w = elem.getIntOrFloatBitWidth();
  if (kind.isUnsigned)
    return double((kind.isMax ? APInt::getMinValue(w) : APInt::getMaxValue(w))
                      .getZExtValue());
  return double((kind.isMax ? APInt::getSignedMinValue(w)
                            : APInt::getSignedMaxValue(w))
                    .getSExtValue());
}

/// Whether element `x` replaces the running extreme `best`: strictly
/// better for the first position, better or equal for the last.
Value replacesExtreme(OpBuilder &b, Location loc, const ExtremeKind &kind,
                      Value x, Value best) {
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  // Indexed [isMax][last].
  static const FP floatPreds[2][2] = {{FP::OLT, FP::OLE}, {FP::OGT, FP::OGE}};
  // Indexed [isMax][last][isUnsigned].
  static const IP intPreds[2][2][2] = {{{IP::slt, IP::ult}, {IP::sle, IP::ule}},
                                       {{IP::sgt, IP::ugt}, {IP::sge, IP::uge}}};
  if (kind.isFloat)
    return arith::CmpFOp::create(b, loc, floatPreds[kind.isMax][kind.last], x,
                                 best);
  return arith::CmpIOp::create(
      b, loc, intPreds[kind.isMax][kind.last][kind.isUnsigned], x, best);
}

/// The first (or last) position of the maximum (or minimum) along `axis`,
/// as i64 with the axis dropped.
Value argExtreme(OpBuilder &b, Location loc, Value x, int64_t axis, DType dt,
                 bool isMax, bool last) {
  MLIRContext *ctx = b.getContext();
  auto t = llvm::cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  Type elem = t.getElementType();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      shape.push_back(t.getDimSize(i));
  ExtremeKind kind{isFloatDType(dt), isUnsignedDType(dt), isMax, last};
  Value bestInit = filledTensor(b, loc, shape, elem, extremeInit(kind, elem));
  Value indexInit = filledTensor(b, loc, shape, b.getI64Type(), 0);
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators[axis] = IteratorType::reduction;
  SmallVector<AffineMap> maps = {identity(rank, ctx), dropDim(rank, axis, ctx),
                                 dropDim(rank, axis, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{bestInit.getType(), indexInit.getType()},
      ValueRange{x}, ValueRange{bestInit, indexInit}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value better = replacesExtreme(nb, nl, kind, a[0], a[1]);
        Value i = indexAsI64(nb, nl, axis);
        Value v = arith::SelectOp::create(nb, nl, better, a[0], a[1]);
        Value j = arith::SelectOp::create(nb, nl, better, i, a[2]);
        linalg::YieldOp::create(nb, nl, ValueRange{v, j});
      });
  return generic.getResult(1);
}

Results importArgExtreme(NodeContext &ctx) {
  if (isBoolDType(ctx.dtype(0))) {
    ctx.error() << "BOOL inputs are not supported";
    return failure();
  }
  int64_t rank = ctx.rank(0);
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  bool isMax = ctx.node.op_type() == "ArgMax";
  Value idx = argExtreme(ctx.b, ctx.loc, ctx.input(0), *axis, ctx.dtype(0),
                         isMax, ctx.getInt("select_last_index", 0));
  if (ctx.getInt("keepdims", 1)) {
    SmallVector<int64_t> shape(ctx.shape(0));
    shape[*axis] = 1;
    idx = reshape(ctx.b, ctx.loc, idx, shape);
  }
  return one(idx, onnx::TensorProto::INT64);
}

Results importHardmax(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  int64_t rank = ctx.rank(0);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.getInt("axis", ctx.opset < 13 ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  Value x = ctx.input(0);
  ArrayRef<int64_t> s = ctx.shape(0);
  int64_t a = *axis;
  if (ctx.opset < 13) { // coerced to 2-D at axis
    x = reshape(b, loc, x, {product(s.take_front(a)), product(s.drop_front(a))});
    a = 1;
  }
  auto t = llvm::cast<RankedTensorType>(x.getType());
  int64_t r = t.getRank();
  Value best = argExtreme(b, loc, x, a, ctx.dtype(0), true, false);
  Value init = emptyTensor(b, loc, t.getShape(), t.getElementType());
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{best}, ValueRange{init},
          {dropDim(r, a, mctx), identity(r, mctx)},
          SmallVector<IteratorType>(r, IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange v) {
            Value here = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                               indexAsI64(nb, nl, a), v[0]);
            Type e = t.getElementType();
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{arith::SelectOp::create(
                    nb, nl, here, scalarConstant(nb, nl, e, 1.0),
                    scalarConstant(nb, nl, e, 0.0))});
          })
          .getResult(0);
  return one(reshape(b, loc, y, s), ctx.dtype(0));
}

Results importCumSum(NodeContext &ctx) {
  DType dt = ctx.dtype(0);
  if (isBoolDType(dt)) {
    ctx.error() << "BOOL inputs are not supported";
    return failure();
  }
  FailureOr<SmallVector<int64_t>> axisValue = ctx.constInts(1, "axis");
  if (failed(axisValue))
    return failure();
  int64_t rank = ctx.rank(0);
  FailureOr<int64_t> axis = ctx.axis((*axisValue)[0], rank);
  if (failed(axis))
    return failure();
  bool exclusive = ctx.getInt("exclusive", 0), reverse = ctx.getInt("reverse", 0);
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  auto t = ctx.type(0);
  // Loops: the output's dimensions and k, the summed position on the axis.
  SmallVector<AffineExpr> in;
  for (int64_t i = 0; i < rank; ++i)
    in.push_back(getAffineDimExpr(i == *axis ? rank : i, mctx));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);
  Value init = filledTensor(b, loc, t.getShape(), t.getElementType(), 0.0);
  int64_t a = *axis;
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{ctx.input(0)},
          ValueRange{init},
          {AffineMap::get(rank + 1, 0, in, mctx),
           dropDim(rank + 1, rank, mctx)},
          iterators,
          [&](OpBuilder &nb, Location nl, ValueRange v) {
            Value i = linalg::IndexOp::create(nb, nl, a);
            Value k = linalg::IndexOp::create(nb, nl, rank);
            auto pred = reverse ? (exclusive ? arith::CmpIPredicate::sgt
                                             : arith::CmpIPredicate::sge)
                                : (exclusive ? arith::CmpIPredicate::slt
                                             : arith::CmpIPredicate::sle);
            Value take = arith::CmpIOp::create(nb, nl, pred, k, i);
            Value zero = scalarConstant(nb, nl, v[0].getType(), 0.0);
            Value x = arith::SelectOp::create(nb, nl, take, v[0], zero);
            Value sum = isFloatDType(dt)
                            ? arith::AddFOp::create(nb, nl, v[1], x).getResult()
                            : arith::AddIOp::create(nb, nl, v[1], x).getResult();
            linalg::YieldOp::create(nb, nl, sum);
          })
          .getResult(0);
  return one(y, dt);
}

Results importGatherElements(NodeContext &ctx) {
  int64_t rank = ctx.rank(0);
  if (ctx.rank(1) != rank) {
    ctx.error() << "indices must have the rank of data";
    return failure();
  }
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  Value data = ctx.input(0);
  int64_t dim = ctx.shape(0)[*axis], a = *axis;
  Value init = emptyTensor(b, loc, ctx.shape(1), ctx.type(0).getElementType());
  Value y = linalg::GenericOp::create(
                b, loc, TypeRange{init.getType()}, ValueRange{ctx.input(1)},
                ValueRange{init}, {identity(rank, mctx), identity(rank, mctx)},
                SmallVector<IteratorType>(rank, IteratorType::parallel),
                [&](OpBuilder &nb, Location nl, ValueRange v) {
                  SmallVector<Value> coords;
                  for (int64_t d = 0; d < rank; ++d)
                    coords.push_back(
                        d == a
                            ? clampedIndex(nb, nl, v[0], dim)
                            : linalg::IndexOp::create(nb, nl, d).getResult());
                  Value e = tensor::ExtractOp::create(nb, nl, data, coords);
                  linalg::YieldOp::create(nb, nl, e);
                })
                .getResult(0);
  return one(y, ctx.dtype(0));
}

Results importTrilu(NodeContext &ctx) {
  int64_t rank = ctx.rank(0);
  if (rank < 2) {
    ctx.error() << "the input must have rank 2 or more";
    return failure();
  }
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> v = ctx.constInts(1, "k");
    if (failed(v))
      return failure();
    k = (*v)[0];
  }
  bool upper = ctx.getInt("upper", 1);
  OpBuilder &b = ctx.b;
  MLIRContext *mctx = b.getContext();
  auto t = ctx.type(0);
  Value init = emptyTensor(b, ctx.loc, t.getShape(), t.getElementType());
  Value y =
      linalg::GenericOp::create(
          b, ctx.loc, TypeRange{init.getType()}, ValueRange{ctx.input(0)},
          ValueRange{init}, {identity(rank, mctx), identity(rank, mctx)},
          SmallVector<IteratorType>(rank, IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange v) {
            Value i = indexAsI64(nb, nl, rank - 2);
            Value j = indexAsI64(nb, nl, rank - 1);
            Value diff = arith::SubIOp::create(nb, nl, j, i);
            Value kk = scalarConstant(nb, nl, nb.getI64Type(), double(k));
            Value keep = arith::CmpIOp::create(
                nb, nl, upper ? arith::CmpIPredicate::sge
                              : arith::CmpIPredicate::sle,
                diff, kk);
            Value zero = scalarConstant(nb, nl, v[0].getType(), 0.0);
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{arith::SelectOp::create(nb, nl, keep, v[0], zero)});
          })
          .getResult(0);
  return one(y, ctx.dtype(0));
}

Results importOneHot(NodeContext &ctx) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  std::optional<DenseElementsAttr> depthAttr = ctx.constant(1);
  if (!depthAttr || depthAttr->getNumElements() != 1) {
    ctx.error() << "depth must be a constant scalar";
    return failure();
  }
  double depthValue =
      llvm::isa<FloatType>(depthAttr->getElementType())
          ? depthAttr->getValues<APFloat>()[0].convertToDouble()
          : double(depthAttr->getValues<APInt>()[0].getSExtValue());
  int64_t depth = int64_t(depthValue);
  if (depth < 1 || ctx.type(2).getNumElements() != 2) {
    ctx.error() << "depth must be positive and values hold [off, on]";
    return failure();
  }
  int64_t rank = ctx.rank(0) + 1;
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(ctx.shape(0));
  shape.insert(shape.begin() + *axis, depth);
  Value values = reshape(b, loc, ctx.input(2), {2});
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value oneIdx = arith::ConstantIndexOp::create(b, loc, 1);
  Value off = tensor::ExtractOp::create(b, loc, values, ValueRange{zero});
  Value on = tensor::ExtractOp::create(b, loc, values, ValueRange{oneIdx});
  DType idxType = ctx.dtype(0);
  int64_t a = *axis;
  Value init = emptyTensor(b, loc, shape, ctx.type(2).getElementType());
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{ctx.input(0)},
          ValueRange{init}, {dropDim(rank, a, mctx), identity(rank, mctx)},
          SmallVector<IteratorType>(rank, IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange v) {
            Value idx = convertScalar(nb, nl, v[0], idxType,
                                      onnx::TensorProto::INT64);
            Value d = scalarConstant(nb, nl, nb.getI64Type(), double(depth));
            Value isNeg = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::slt, idx,
                scalarConstant(nb, nl, nb.getI64Type(), 0));
            idx = arith::SelectOp::create(
                nb, nl, isNeg, arith::AddIOp::create(nb, nl, idx, d), idx);
            Value here = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                               indexAsI64(nb, nl, a), idx);
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::SelectOp::create(nb, nl, here, on, off)});
          })
          .getResult(0);
  return one(y, ctx.dtype(2));
}

/// NegativeLogLikelihoodLoss of log-probabilities [N, C, d...] against
/// class indices [N, d...] (SoftmaxCrossEntropyLoss applies it to
/// log_softmax of its scores).
Value negativeLogLikelihood(NodeContext &ctx, Value logProb, Value target,
                            DType targetType, Value weight) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  auto pt = llvm::cast<RankedTensorType>(logProb.getType());
  auto tt = llvm::cast<RankedTensorType>(target.getType());
  Type elem = pt.getElementType();
  int64_t rank = tt.getRank(), classes = pt.getDimSize(1);
  std::optional<int64_t> ignore;
  if (ctx.has("ignore_index"))
    ignore = ctx.getInt("ignore_index", 0);
  // Per element: the loss and the weight it counts with (0 when ignored).
  Value lossInit = emptyTensor(b, loc, tt.getShape(), elem);
  Value weightInit = emptyTensor(b, loc, tt.getShape(), elem);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{lossInit.getType(), weightInit.getType()},
      ValueRange{target}, ValueRange{lossInit, weightInit},
      {identity(rank, mctx), identity(rank, mctx), identity(rank, mctx)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange v) {
        Value t = convertScalar(nb, nl, v[0], targetType,
                                onnx::TensorProto::INT64);
        Value idx = clampedIndex(nb, nl, t, classes);
        SmallVector<Value> coords = {linalg::IndexOp::create(nb, nl, 0), idx};
        for (int64_t d = 1; d < rank; ++d)
          coords.push_back(linalg::IndexOp::create(nb, nl, d));
        Value p = tensor::ExtractOp::create(nb, nl, logProb, coords);
        Value w = weight ? tensor::ExtractOp::create(nb, nl, weight,
                                                     ValueRange{idx})
                               .getResult()
                         : scalarConstant(nb, nl, elem, 1.0);
        if (ignore) {
          Value skip = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::eq, t,
              scalarConstant(nb, nl, nb.getI64Type(), double(*ignore)));
          w = arith::SelectOp::create(nb, nl, skip,
                                      scalarConstant(nb, nl, elem, 0.0), w);
        }
        Value loss = arith::NegFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, p, w));
        linalg::YieldOp::create(nb, nl, ValueRange{loss, w});
      });
  Value loss = generic.getResult(0), weights = generic.getResult(1);
  std::string reduction = ctx.getString("reduction", "mean");
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  auto sum = [&](Value v) {
    return reduce(b, loc, v, all, false, 0.0,
                  [](OpBuilder &nb, Location nl, Value acc, Value x) {
                    return arith::AddFOp::create(nb, nl, acc, x).getResult();
                  });
  };
  Value total = sum(loss);
  if (reduction == "sum")
    return total;
  return elementwise(b, loc, {total, sum(weights)}, {}, elem,
                     [](OpBuilder &nb, Location nl, ValueRange a) {
                       return arith::DivFOp::create(nb, nl, a[0], a[1])
                           .getResult();
                     });
}

/// A loss's input [N, C, d...] and target [N, d...] must agree.
LogicalResult checkLossShapes(NodeContext &ctx) {
  if (ctx.rank(0) < 2 || ctx.rank(1) != ctx.rank(0) - 1 ||
      ctx.shape(1)[0] != ctx.shape(0)[0])
    return ctx.error() << "expects input [N, C, d...] and target [N, d...], "
                          "got "
                       << ctx.type(0) << " and " << ctx.type(1);
  for (int64_t d = 1; d < ctx.rank(1); ++d)
    if (ctx.shape(1)[d] != ctx.shape(0)[d + 1])
      return ctx.error() << "target dimension " << d
                         << " differs from the input's";
  return success();
}

LogicalResult checkLossInputs(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  std::string reduction = ctx.getString("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return ctx.error() << "reduction '" << reduction << "' is not valid";
  if (failed(checkLossShapes(ctx)))
    return failure();
  if (isFloatDType(ctx.dtype(1)) || isBoolDType(ctx.dtype(1)))
    return ctx.error() << "the target must hold integer class indices";
  return success();
}

Results importNegativeLogLikelihood(NodeContext &ctx) {
  if (failed(checkLossInputs(ctx)))
    return failure();
  Value weight = ctx.hasInput(2) ? ctx.input(2) : Value();
  return one(negativeLogLikelihood(ctx, ctx.input(0), ctx.input(1),
                                   ctx.dtype(1), weight),
             ctx.dtype(0));
}

Results importSoftmaxCrossEntropy(NodeContext &ctx) {
  if (failed(checkLossInputs(ctx)))
    return failure();
  Value logProb = logSoftmax(ctx.b, ctx.loc, ctx.input(0), {1});
  Value weight = ctx.hasInput(2) ? ctx.input(2) : Value();
  SmallVector<TypedValue> out = {
      {negativeLogLikelihood(ctx, logProb, ctx.input(1), ctx.dtype(1), weight),
       ctx.dtype(0)}};
  out.push_back({logProb, ctx.dtype(0)});
  return out;
}

} // namespace

void addIndexOps(OpTable &t) {
  t["NegativeLogLikelihoodLoss"] = importNegativeLogLikelihood;
  t["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropy;
  t["ArgMax"] = importArgExtreme;
  t["ArgMin"] = importArgExtreme;
  t["Hardmax"] = importHardmax;
  t["CumSum"] = importCumSum;
  t["GatherElements"] = importGatherElements;
  t["Trilu"] = importTrilu;
  t["OneHot"] = importOneHot;
}

} // namespace mp::onnx_import
