//===- OnnxResizeScatterOps.cpp - Resize, TopK, GatherND and scatters ----===//
//
// Resize / Upsample: the source positions and interpolation weights of every
// output index depend only on static shapes and constant scales, so they are
// computed here (in double, as ONNX's reference does) and become constant
// tables; the op is one linalg.generic reading the input with tensor.extract
// at the tabled positions and, for linear and cubic modes, summing over the
// taps of each resized axis (reduction loops).
//
// TopK: without a sort. Each element's rank along the axis is the number of
// elements that precede it (a greater value, or an equal one at a lower
// index), one reduction generic; the k outputs then pick the element of
// rank 0..k-1. Ties come out lower index first, as the spec says.
//
// GatherND reads with tensor.extract at indices read from the index tensor.
// ScatterElements / ScatterND are written as gathers: each output element
// starts from the data and folds, in order, every update whose index names
// it (a reduction loop over the updates along the axis, or over all update
// slices), so duplicate indices keep the last update (reduction none) or
// combine (add, mul).
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;

namespace mp::onnx_import {
namespace {

using utils::IteratorType;

SmallVector<TypedValue> one(Value v, DType t) { return {{v, t}}; }

Value loopIndex(OpBuilder &b, Location loc, int64_t dim) {
  return linalg::IndexOp::create(b, loc, dim);
}

Value indexAsI64(OpBuilder &b, Location loc, int64_t dim) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                    loopIndex(b, loc, dim));
}

/// A scatter's `reduction` attribute.
enum class ScatterReduction { None, Add, Mul };

Value combine(OpBuilder &b, Location loc, ScatterReduction reduction, Value acc,
              Value update) {
  bool isFloat = llvm::isa<FloatType>(acc.getType());
  if (reduction == ScatterReduction::Add)
    return isFloat ? arith::AddFOp::create(b, loc, acc, update).getResult()
                   : arith::AddIOp::create(b, loc, acc, update).getResult();
  if (reduction == ScatterReduction::Mul)
    return isFloat ? arith::MulFOp::create(b, loc, acc, update).getResult()
                   : arith::MulIOp::create(b, loc, acc, update).getResult();
  return update;
}

LogicalResult requireIntegerIndices(NodeContext &ctx, unsigned i) {
  if (isFloatDType(ctx.dtype(i)) || isBoolDType(ctx.dtype(i)))
    return ctx.error() << "indices must be integers, got "
                       << dtypeName(ctx.dtype(i));
  return success();
}

/// The scatter reduction attribute (opset 16+; "none" before).
FailureOr<ScatterReduction> scatterReduction(NodeContext &ctx) {
  std::string text = ctx.getString("reduction", "none");
  std::optional<ScatterReduction> reduction =
      llvm::StringSwitch<std::optional<ScatterReduction>>(text)
          .Case("none", ScatterReduction::None)
          .Case("add", ScatterReduction::Add)
          .Case("mul", ScatterReduction::Mul)
          .Default(std::nullopt);
  if (!reduction) {
    ctx.error() << "reduction '" << text
                << "' is not supported (none, add and mul are)";
    return failure();
  }
  if (*reduction != ScatterReduction::None && isBoolDType(ctx.dtype(0))) {
    ctx.error() << "reduction '" << text << "' on BOOL data is not supported";
    return failure();
  }
  return *reduction;
}

// -- GatherND -----------------------------------------------------------------

/// GatherND's data and indices: rank 1 or more, batch_dims leading
/// dimensions in common, and index tuples (the last dimension of indices)
/// no longer than the data's remaining rank.
LogicalResult checkGatherNDShapes(NodeContext &ctx, int64_t batch) {
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1);
  int64_t r = data.size(), q = indices.size();
  if (q < 1 || r < 1) {
    ctx.error() << "data and indices must have rank 1 or more";
    return failure();
  }
  if (batch < 0 || batch >= std::min(q, r)) {
    ctx.error() << "batch_dims " << batch << " must be in [0, min(rank(data) "
                << r << ", rank(indices) " << q << "))";
    return failure();
  }
  for (int64_t d = 0; d < batch; ++d)
    if (data[d] != indices[d]) {
      ctx.error() << "batch dimension " << d << " differs: data " << data[d]
                  << ", indices " << indices[d];
      return failure();
    }
  int64_t k = indices[q - 1];
  if (k < 1 || k > r - batch) {
    ctx.error() << "the last dimension of indices (" << k
                << ") must be in [1, rank(data) - batch_dims = " << r - batch
                << "]";
    return failure();
  }
  return success();
}

/// The data element that one GatherND output element reads: the batch
/// loops, the k indices read (clamped) from the index tensor, then the
/// loops over the rest of the data.
SmallVector<Value> gatherNDSource(OpBuilder &b, Location loc, Value idxTensor,
                                  ArrayRef<int64_t> data, int64_t batch,
                                  int64_t q, int64_t k) {
  int64_t r = data.size();
  SmallVector<Value> coords;
  for (int64_t d = 0; d < batch; ++d)
    coords.push_back(loopIndex(b, loc, d));
  SmallVector<Value> at;
  for (int64_t d = 0; d < q - 1; ++d)
    at.push_back(loopIndex(b, loc, d));
  at.push_back(Value());
  for (int64_t t = 0; t < k; ++t) {
    at.back() = arith::ConstantIndexOp::create(b, loc, t);
    Value raw = tensor::ExtractOp::create(b, loc, idxTensor, at);
    coords.push_back(clampedIndex(b, loc, raw, data[batch + t]));
  }
  for (int64_t d = batch + k; d < r; ++d)
    coords.push_back(loopIndex(b, loc, q - 1 + d - batch - k));
  return coords;
}

Results importGatherND(NodeContext &ctx) {
  if (failed(requireIntegerIndices(ctx, 1)))
    return failure();
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1);
  int64_t q = indices.size();
  int64_t batch = ctx.getInt("batch_dims", 0);
  if (failed(checkGatherNDShapes(ctx, batch)))
    return failure();
  int64_t k = indices[q - 1];
  SmallVector<int64_t> shape(indices.begin(), indices.end() - 1);
  shape.append(data.begin() + batch + k, data.end());
  int64_t outRank = shape.size();
  OpBuilder &b = ctx.b;
  MLIRContext *mctx = b.getContext();
  Value source = ctx.input(0), idxTensor = ctx.input(1);
  Value init = emptyTensor(b, ctx.loc, shape, ctx.type(0).getElementType());
  Value y =
      linalg::GenericOp::create(
          b, ctx.loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
          {AffineMap::getMultiDimIdentityMap(outRank, mctx)},
          SmallVector<IteratorType>(outRank, IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange) {
            SmallVector<Value> coords =
                gatherNDSource(nb, nl, idxTensor, data, batch, q, k);
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{tensor::ExtractOp::create(nb, nl, source, coords)});
          })
          .getResult(0);
  return one(y, ctx.dtype(0));
}

// -- ScatterElements / Scatter ------------------------------------------------

/// ScatterElements' indices and updates: one shape, the data's rank, and
/// no dimension but the axis longer than the data's. Returns the axis.
FailureOr<int64_t> checkScatterElementsShapes(NodeContext &ctx) {
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1);
  int64_t r = data.size();
  if ((int64_t)indices.size() != r || ctx.shape(2) != indices) {
    ctx.error() << "indices and updates must have the same shape and the "
                   "rank of data";
    return failure();
  }
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", 0), r);
  if (failed(axis))
    return failure();
  for (int64_t d = 0; d < r; ++d)
    if (d != *axis && indices[d] > data[d]) {
      ctx.error() << "indices dimension " << d << " (" << indices[d]
                  << ") exceeds the data's (" << data[d] << ")";
      return failure();
    }
  return axis;
}

/// What the body of ScatterElements' generic needs: the shapes, the axis,
/// the index and update tensors and the reduction.
struct ScatterElementsBody {
  ArrayRef<int64_t> data, indices;
  int64_t axis;
  Value idxTensor, updates;
  ScatterReduction reduction;
};

/// The position in indices and updates that loop k reads for the current
/// output element: the output's own index off the axis (clamped where
/// indices are shorter, with `inRange` false past their end), k on it.
SmallVector<Value> scatterElementsUpdateAt(OpBuilder &b, Location loc,
                                           const ScatterElementsBody &s,
                                           Value &inRange) {
  int64_t r = s.data.size();
  SmallVector<Value> at;
  for (int64_t d = 0; d < r; ++d) {
    if (d == s.axis) {
      at.push_back(loopIndex(b, loc, r));
      continue;
    }
    Value p = loopIndex(b, loc, d);
    if (s.indices[d] < s.data[d]) {
      Value bound = arith::ConstantIndexOp::create(b, loc, s.indices[d]);
      Value ok =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, p, bound);
      inRange = inRange ? arith::AndIOp::create(b, loc, inRange, ok).getResult()
                        : ok;
      p = arith::MinSIOp::create(
          b, loc, p, arith::ConstantIndexOp::create(b, loc, s.indices[d] - 1));
    }
    at.push_back(p);
  }
  return at;
}

/// One step of the fold: the update at loop k replaces (or combines with)
/// `acc` where its index names the current output element.
void scatterElementsStep(OpBuilder &b, Location loc,
                         const ScatterElementsBody &s, Value acc) {
  Value inRange;
  SmallVector<Value> at = scatterElementsUpdateAt(b, loc, s, inRange);
  Value raw = tensor::ExtractOp::create(b, loc, s.idxTensor, at);
  Value target = normalizedIndex(b, loc, raw, s.data[s.axis]);
  Value hit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, target,
                                    loopIndex(b, loc, s.axis));
  if (inRange)
    hit = arith::AndIOp::create(b, loc, hit, inRange);
  Value u = tensor::ExtractOp::create(b, loc, s.updates, at);
  Value next = combine(b, loc, s.reduction, acc, u);
  linalg::YieldOp::create(
      b, loc, ValueRange{arith::SelectOp::create(b, loc, hit, next, acc)});
}

Results importScatterElements(NodeContext &ctx) {
  if (failed(requireIntegerIndices(ctx, 1)))
    return failure();
  FailureOr<ScatterReduction> reduction = scatterReduction(ctx);
  if (failed(reduction))
    return failure();
  FailureOr<int64_t> axis = checkScatterElementsShapes(ctx);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1);
  int64_t r = data.size(), a = *axis;
  int64_t count = indices[a];
  if (count == 0 || product(indices) == 0)
    return one(ctx.input(0), ctx.dtype(0));
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  // Loops: the output's dimensions, then k along the updates' axis. The
  // zero-size loop operand only gives k its range.
  Value range = emptyTensor(b, loc, {count}, b.getI1Type());
  SmallVector<AffineMap> maps = {
      AffineMap::get(r + 1, 0, {getAffineDimExpr(r, mctx)}, mctx),
      AffineMap::getMultiDimIdentityMap(r + 1, mctx).getMajorSubMap(r)};
  SmallVector<IteratorType> iterators(r, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);
  ScatterElementsBody body{data, indices, a, ctx.input(1), ctx.input(2),
                           *reduction};
  Value y = linalg::GenericOp::create(
                b, loc, TypeRange{ctx.type(0)}, ValueRange{range},
                ValueRange{ctx.input(0)}, maps, iterators,
                [&](OpBuilder &nb, Location nl, ValueRange v) {
                  scatterElementsStep(nb, nl, body, v[1]);
                })
                .getResult(0);
  return one(y, ctx.dtype(0));
}

// -- ScatterND ----------------------------------------------------------------

/// ScatterND's index tuples (the last dimension of indices) at most the
/// data's rank long, and updates shaped indices[:-1] + data[k:].
LogicalResult checkScatterNDShapes(NodeContext &ctx) {
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1),
                    updates = ctx.shape(2);
  int64_t r = data.size(), q = indices.size();
  if (q < 1) {
    ctx.error() << "indices must have rank 1 or more";
    return failure();
  }
  int64_t k = indices[q - 1];
  if (k > r) {
    ctx.error() << "the last dimension of indices (" << k
                << ") exceeds the rank of data (" << r << ")";
    return failure();
  }
  SmallVector<int64_t> expected(indices.begin(), indices.end() - 1);
  expected.append(data.begin() + k, data.end());
  if (updates != ArrayRef<int64_t>(expected)) {
    ctx.error() << "updates have shape " << ctx.type(2)
                << "; indices and data give "
                << RankedTensorType::get(expected,
                                         ctx.type(2).getElementType());
    return failure();
  }
  return success();
}

/// One step of ScatterND's fold over the update slices: slice m's update
/// `u` replaces (or combines with) `acc` where its index tuple names the
/// current output element's leading k indices.
void scatterNDStep(OpBuilder &nb, Location nl, Value idxTensor,
                   ArrayRef<int64_t> data, int64_t k, ScatterReduction red,
                   Value u, Value acc) {
  int64_t r = data.size();
  Value m = loopIndex(nb, nl, r);
  Value hit;
  for (int64_t t = 0; t < k; ++t) {
    Value raw = tensor::ExtractOp::create(
        nb, nl, idxTensor,
        ValueRange{m, arith::ConstantIndexOp::create(nb, nl, t)});
    Value eq = arith::CmpIOp::create(
        nb, nl, arith::CmpIPredicate::eq,
        normalizedIndex(nb, nl, raw, data[t]), loopIndex(nb, nl, t));
    hit = hit ? arith::AndIOp::create(nb, nl, hit, eq).getResult() : eq;
  }
  Value next = combine(nb, nl, red, acc, u);
  Value out =
      hit ? arith::SelectOp::create(nb, nl, hit, next, acc).getResult() : next;
  linalg::YieldOp::create(nb, nl, ValueRange{out});
}

Results importScatterND(NodeContext &ctx) {
  if (failed(requireIntegerIndices(ctx, 1)))
    return failure();
  FailureOr<ScatterReduction> reduction = scatterReduction(ctx);
  if (failed(reduction) || failed(checkScatterNDShapes(ctx)))
    return failure();
  ArrayRef<int64_t> data = ctx.shape(0), indices = ctx.shape(1);
  int64_t r = data.size(), k = indices.back();
  int64_t count = product(indices.drop_back());
  if (count == 0)
    return one(ctx.input(0), ctx.dtype(0));
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  // Update slices flattened: indices [M, k], updates [M, data[k:]...].
  Value idxTensor = reshape(b, loc, ctx.input(1), {count, k});
  SmallVector<int64_t> flatUpdates = {count};
  flatUpdates.append(data.begin() + k, data.end());
  Value upd = reshape(b, loc, ctx.input(2), flatUpdates);
  // Loops: the output's dimensions, then m over the update slices.
  SmallVector<AffineExpr> updExprs = {getAffineDimExpr(r, mctx)};
  for (int64_t d = k; d < r; ++d)
    updExprs.push_back(getAffineDimExpr(d, mctx));
  SmallVector<AffineMap> maps = {
      AffineMap::get(r + 1, 0, updExprs, mctx),
      AffineMap::getMultiDimIdentityMap(r + 1, mctx).getMajorSubMap(r)};
  SmallVector<IteratorType> iterators(r, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);
  ScatterReduction red = *reduction;
  Value y = linalg::GenericOp::create(
                b, loc, TypeRange{ctx.type(0)}, ValueRange{upd},
                ValueRange{ctx.input(0)}, maps, iterators,
                [&](OpBuilder &nb, Location nl, ValueRange v) {
                  scatterNDStep(nb, nl, idxTensor, data, k, red, v[0], v[1]);
                })
                .getResult(0);
  return one(y, ctx.dtype(0));
}

// -- TopK ---------------------------------------------------------------------

/// Whether `a` comes before `b` in TopK's order (NaN largest, as the greatest
/// value), and whether they are equivalent.
std::pair<Value, Value> topkOrder(OpBuilder &b, Location loc, Value a, Value x,
                                  DType dt, bool largest) {
  if (isFloatDType(dt)) {
    Value aNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, a, a);
    Value xNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    Value notXNan = arith::XOrIOp::create(
        b, loc, xNan, arith::ConstantIntOp::create(b, loc, 1, 1));
    Value notANan = arith::XOrIOp::create(
        b, loc, aNan, arith::ConstantIntOp::create(b, loc, 1, 1));
    Value before;
    if (largest)
      before = arith::OrIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a, x),
          arith::AndIOp::create(b, loc, aNan, notXNan));
    else
      before = arith::OrIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a, x),
          arith::AndIOp::create(b, loc, notANan, xNan));
    Value same = arith::OrIOp::create(
        b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a, x),
        arith::AndIOp::create(b, loc, aNan, xNan));
    return {before, same};
  }
  bool isUnsigned = isUnsignedDType(dt) || isBoolDType(dt);
  auto pred = largest ? (isUnsigned ? arith::CmpIPredicate::ugt
                                    : arith::CmpIPredicate::sgt)
                      : (isUnsigned ? arith::CmpIPredicate::ult
                                    : arith::CmpIPredicate::slt);
  return {arith::CmpIOp::create(b, loc, pred, a, x),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, x)};
}

/// Below this k and above this axis size, TopK takes k passes of O(n)
/// instead of the O(n^2) ranks.
constexpr int64_t kTopKPassesMaxK = 8, kTopKPassesMinN = 64;

/// TopK as k argmax passes: pass t takes the first of the best elements
/// that come after pass t-1's pick in TopK's order (value, then index).
Results topkByPasses(NodeContext &ctx, Value x, int64_t a, int64_t k, DType dt,
                     bool largest) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  auto t = llvm::cast<RankedTensorType>(x.getType());
  int64_t r = t.getRank();
  Type elem = t.getElementType();
  SmallVector<int64_t> outer;
  SmallVector<AffineExpr> outerExprs;
  for (int64_t d = 0; d < r; ++d)
    if (d != a) {
      outer.push_back(t.getDimSize(d));
      outerExprs.push_back(getAffineDimExpr(d, mctx));
    }
  AffineMap outerMap = AffineMap::get(r, 0, outerExprs, mctx);
  AffineMap all = AffineMap::getMultiDimIdentityMap(r, mctx);
  SmallVector<IteratorType> iterators(r, IteratorType::parallel);
  iterators[a] = IteratorType::reduction;
  SmallVector<Value> vals, idxs;
  for (int64_t pass = 0; pass < k; ++pass) {
    Value bestInit = filledTensor(b, loc, outer, elem, 0);
    Value idxInit = filledTensor(b, loc, outer, b.getI64Type(), -1);
    SmallVector<Value> ins = {x};
    SmallVector<AffineMap> maps = {all};
    if (pass) {
      ins.append({vals.back(), idxs.back()});
      maps.append({outerMap, outerMap});
    }
    maps.append({outerMap, outerMap});
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{bestInit.getType(), idxInit.getType()}, ins,
        ValueRange{bestInit, idxInit}, maps, iterators,
        [&](OpBuilder &nb, Location nl, ValueRange v) {
          Value xi = v[0], i = indexAsI64(nb, nl, a);
          Value best = v[v.size() - 2], bestIdx = v.back();
          Value none =
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, bestIdx,
                                    scalarConstant(nb, nl, nb.getI64Type(), 0));
          // Strictly before the best so far (equal: the earlier index stays).
          Value better = arith::OrIOp::create(
              nb, nl, none, topkOrder(nb, nl, xi, best, dt, largest).first);
          Value take = better;
          if (pass) {
            auto [prevBefore, same] = topkOrder(nb, nl, v[1], xi, dt, largest);
            Value later = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::sgt, i, v[2]);
            Value after = arith::OrIOp::create(
                nb, nl, prevBefore, arith::AndIOp::create(nb, nl, same, later));
            take = arith::AndIOp::create(nb, nl, take, after);
          }
          linalg::YieldOp::create(
              nb, nl,
              ValueRange{arith::SelectOp::create(nb, nl, take, xi, best),
                         arith::SelectOp::create(nb, nl, take, i, bestIdx)});
        });
    vals.push_back(g.getResult(0));
    idxs.push_back(g.getResult(1));
  }
  // Pass t's picks at position t along the axis.
  SmallVector<int64_t> outShape(t.getShape());
  outShape[a] = k;
  auto gather = [&](ArrayRef<Value> parts, Type e) {
    SmallVector<AffineMap> maps(parts.size(), outerMap);
    maps.push_back(all);
    Value init = emptyTensor(b, loc, outShape, e);
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, parts, ValueRange{init}, maps,
               SmallVector<IteratorType>(r, IteratorType::parallel),
               [&](OpBuilder &nb, Location nl, ValueRange v) {
                 Value pos = loopIndex(nb, nl, a), out = v[0];
                 for (int64_t p = 1; p < k; ++p) {
                   Value here = arith::CmpIOp::create(
                       nb, nl, arith::CmpIPredicate::eq, pos,
                       arith::ConstantIndexOp::create(nb, nl, p));
                   out = arith::SelectOp::create(nb, nl, here, v[p], out);
                 }
                 linalg::YieldOp::create(nb, nl, ValueRange{out});
               })
        .getResult(0);
  };
  return SmallVector<TypedValue>{
      {gather(vals, elem), dt},
      {gather(idxs, b.getI64Type()), onnx::TensorProto::INT64}};
}

/// TopK's k: the "k" attribute before opset 10, the one-value constant
/// input 1 from it; an error unless 0 <= k <= the axis' size `n`.
FailureOr<int64_t> readTopKCount(NodeContext &ctx, int64_t a, int64_t n) {
  int64_t k;
  if (ctx.opset < 10) {
    if (!ctx.has("k")) {
      ctx.error() << "attribute 'k' is missing";
      return failure();
    }
    k = ctx.getInt("k", 0);
  } else {
    FailureOr<SmallVector<int64_t>> kv = ctx.constInts(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1) {
      ctx.error() << "k must hold one value";
      return failure();
    }
    k = (*kv)[0];
  }
  if (k < 0 || k > n) {
    ctx.error() << "k = " << k << " is out of range for axis " << a
                << " of size " << n;
    return failure();
  }
  return k;
}

/// TopK by ranks: each element's rank along the axis is the number of
/// elements before it in TopK's order; output position p takes the element
/// of rank p.
Results topkByRanks(NodeContext &ctx, Value x, int64_t a, int64_t k, DType dt,
                    bool largest) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  MLIRContext *mctx = b.getContext();
  auto t = llvm::cast<RankedTensorType>(x.getType());
  int64_t r = t.getRank();
  Type elem = t.getElementType();
  SmallVector<int64_t> outShape(t.getShape());
  outShape[a] = k;
  // The map (d0..dr) -> (d0..dr-1) with the axis read from loop dim r.
  SmallVector<AffineExpr> alongExprs;
  for (int64_t d = 0; d < r; ++d)
    alongExprs.push_back(getAffineDimExpr(d == a ? r : d, mctx));
  AffineMap along = AffineMap::get(r + 1, 0, alongExprs, mctx);
  AffineMap outer =
      AffineMap::getMultiDimIdentityMap(r + 1, mctx).getMajorSubMap(r);
  SmallVector<IteratorType> iterators(r, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);

  // rank(i) = #{j : x_j before x_i, or equivalent and j < i}.
  Value rankInit = filledTensor(b, loc, t.getShape(), b.getI64Type(), 0);
  Value ranks =
      linalg::GenericOp::create(
          b, loc, TypeRange{rankInit.getType()}, ValueRange{x, x},
          ValueRange{rankInit}, {outer, along, outer}, iterators,
          [&](OpBuilder &nb, Location nl, ValueRange v) {
            auto [before, same] = topkOrder(nb, nl, v[1], v[0], dt, largest);
            Value lower = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ult, loopIndex(nb, nl, r),
                loopIndex(nb, nl, a));
            Value precedes = arith::OrIOp::create(
                nb, nl, before, arith::AndIOp::create(nb, nl, same, lower));
            Value inc =
                arith::ExtUIOp::create(nb, nl, nb.getI64Type(), precedes);
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::AddIOp::create(nb, nl, v[2], inc)});
          })
          .getResult(0);

  // Output position p along the axis takes the element of rank p.
  Value valInit = filledTensor(b, loc, outShape, elem, 0);
  Value idxInit = filledTensor(b, loc, outShape, b.getI64Type(), 0);
  auto pick = linalg::GenericOp::create(
      b, loc, TypeRange{valInit.getType(), idxInit.getType()},
      ValueRange{ranks, x}, ValueRange{valInit, idxInit},
      {along, along, outer, outer}, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange v) {
        Value hit = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                          v[0], indexAsI64(nb, nl, a));
        Value val = arith::SelectOp::create(nb, nl, hit, v[1], v[2]);
        Value idx =
            arith::SelectOp::create(nb, nl, hit, indexAsI64(nb, nl, r), v[3]);
        linalg::YieldOp::create(nb, nl, ValueRange{val, idx});
      });
  return SmallVector<TypedValue>{{pick.getResult(0), dt},
                                 {pick.getResult(1), onnx::TensorProto::INT64}};
}

Results importTopK(NodeContext &ctx) {
  int64_t r = ctx.rank(0);
  if (r < 1) {
    ctx.error() << "the input must have rank 1 or more";
    return failure();
  }
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", -1), r);
  if (failed(axis))
    return failure();
  int64_t a = *axis, n = ctx.shape(0)[a];
  FailureOr<int64_t> k = readTopKCount(ctx, a, n);
  if (failed(k))
    return failure();
  bool largest = ctx.getInt("largest", 1);
  DType dt = ctx.dtype(0);
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto t = ctx.type(0);
  Type elem = t.getElementType();
  SmallVector<int64_t> outShape(t.getShape());
  outShape[a] = *k;
  if (*k == 0 || product(outShape) == 0)
    return SmallVector<TypedValue>{
        {emptyTensor(b, loc, outShape, elem), dt},
        {emptyTensor(b, loc, outShape, b.getI64Type()),
         onnx::TensorProto::INT64}};
  if (*k <= kTopKPassesMaxK && n > kTopKPassesMinN)
    return topkByPasses(ctx, ctx.input(0), a, *k, dt, largest);
  return topkByRanks(ctx, ctx.input(0), a, *k, dt, largest);
}

// -- Resize / Upsample --------------------------------------------------------

/// Where each output index of one axis reads the input: `taps` positions
/// (clamped into the input) and their weights per output index, and whether
/// the index lies outside the crop (tf_crop_and_resize).
struct AxisTable {
  int64_t taps = 1;
  SmallVector<int64_t> index; // [out][taps]
  SmallVector<double> weight; // [out][taps]
  SmallVector<bool> outside;  // [out]
  bool anyOutside = false;
  bool identity = false;
};

struct ResizeParams {
  std::string mode;      // nearest, linear, cubic
  std::string coordMode; // coordinate_transformation_mode
  std::string nearestMode;
  bool legacyNearest = false; // opset < 11: ORT's rounding (no nearest_mode)
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0.0;
};

/// Coefficients of ONNX's reference implementation for `ratio` in (0, 1].
SmallVector<double> resizeCoeffs(const ResizeParams &p, double ratio,
                                 bool isIntegral) {
  if (p.mode == "linear")
    return {1 - ratio, ratio};
  if (p.mode == "cubic") {
    double A = p.cubicA, r1 = ratio + 1, s = 1 - ratio, s1 = s + 1;
    return {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A,
            ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
            ((A + 2) * s - (A + 3)) * s * s + 1,
            ((A * s1 - 5 * A) * s1 + 8 * A) * s1 - 4 * A};
  }
  if (isIntegral)
    return {0, 1};
  if (p.nearestMode == "round_prefer_floor")
    return {double(ratio <= 0.5), double(ratio > 0.5)};
  if (p.nearestMode == "round_prefer_ceil")
    return {double(ratio < 0.5), double(ratio >= 0.5)};
  if (p.nearestMode == "floor")
    return {1, 0};
  return {0, 1}; // ceil
}

/// The source coordinate of output index `x` of an axis of input size `in`
/// (coordinate_transformation_mode); `outWidth` is the reference's (float)
/// output length, [roiStart, roiEnd] the axis's crop.
double sourceCoordinate(const ResizeParams &p, int64_t x, int64_t in,
                        double scale, double outWidth, double roiStart,
                        double roiEnd) {
  const std::string &m = p.coordMode;
  if (m == "align_corners")
    return outWidth == 1 ? 0.0 : double(x) * double(in - 1) / (outWidth - 1);
  if (m == "asymmetric")
    return double(x) / scale;
  if (m == "tf_half_pixel_for_nn")
    return (double(x) + 0.5) / scale;
  if (m == "tf_crop_and_resize")
    return (outWidth == 1 ? (roiEnd - roiStart) * double(in - 1) / 2
                          : double(x) * (roiEnd - roiStart) * double(in - 1) /
                                (outWidth - 1)) +
           roiStart * double(in - 1);
  if (m == "pytorch_half_pixel")
    return outWidth == 1 ? -0.5 : (double(x) + 0.5) / scale - 0.5;
  return (double(x) + 0.5) / scale - 0.5; // half_pixel
}

/// The `n` positions of an edge-padded input of `limit` positions that are
/// nearest to `xp`, in ascending order (ties: the lower).
SmallVector<int64_t> nearestPositions(double xp, int64_t n, int64_t limit) {
  int64_t c = std::clamp<int64_t>(int64_t(std::floor(xp)), 0, limit - 1);
  int64_t lo = std::max<int64_t>(0, c - n - 1),
          hi = std::min<int64_t>(limit, c + n + 2);
  SmallVector<int64_t> cand;
  for (int64_t i = lo; i < hi; ++i)
    cand.push_back(i);
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t u, int64_t v) {
    double du = std::abs(xp - double(u)), dv = std::abs(xp - double(v));
    return du != dv ? du < dv : u < v;
  });
  cand.resize(n);
  llvm::sort(cand);
  return cand;
}

/// exclude_outside: the taps at padded positions `cand` that fall outside
/// the input get weight 0, and the others are renormalized to sum to 1.
void excludeOutsideTaps(SmallVector<double> &coeffs, ArrayRef<int64_t> cand,
                        int64_t pad, int64_t in) {
  double sum = 0;
  for (size_t i = 0; i < coeffs.size(); ++i) {
    int64_t pos = cand[i] - pad;
    if (pos < 0 || pos >= in)
      coeffs[i] = 0;
    sum += coeffs[i];
  }
  for (double &cf : coeffs)
    cf /= sum;
}

/// Appends to `t` the taps of one output index whose source coordinate `xo`
/// lies inside the input.
void addTaps(AxisTable &t, const ResizeParams &p, double xo, int64_t in,
             double scale) {
  bool nearest = p.mode == "nearest";
  if (nearest && p.legacyNearest) {
    // Before opset 11 (ONNX Runtime's rule): truncate when upsampling,
    // round up when downsampling.
    double v = scale < 1 ? std::ceil(xo) : std::trunc(xo);
    t.index.push_back(std::clamp<int64_t>(int64_t(v), 0, in - 1));
    t.weight.push_back(1);
    return;
  }
  int64_t n = p.mode == "cubic" ? 4 : 2;
  double xoFloor = std::floor(xo);
  bool integral = xo == xoFloor;
  double ratio = integral ? 1.0 : xo - xoFloor;
  SmallVector<double> coeffs = resizeCoeffs(p, ratio, integral);
  // The n nearest positions of the edge-padded input.
  int64_t pad = (n + 1) / 2;
  SmallVector<int64_t> cand = nearestPositions(xo + pad, n, in + 2 * pad);
  if (p.excludeOutside)
    excludeOutsideTaps(coeffs, cand, pad, in);
  if (nearest) {
    int64_t chosen = coeffs[0] != 0 ? 0 : 1;
    t.index.push_back(std::clamp<int64_t>(cand[chosen] - pad, 0, in - 1));
    t.weight.push_back(1);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    t.index.push_back(std::clamp<int64_t>(cand[i] - pad, 0, in - 1));
    t.weight.push_back(coeffs[i]);
  }
}

/// Whether every output index of the axis reads its own input index alone.
bool isIdentityAxis(const AxisTable &t, int64_t in, int64_t out) {
  if (in != out || t.anyOutside)
    return false;
  for (int64_t x = 0; x < out; ++x)
    for (int64_t k = 0; k < t.taps; ++k) {
      double w = t.weight[x * t.taps + k];
      if (w != 0 && (w != 1 || t.index[x * t.taps + k] != x))
        return false;
    }
  return true;
}

/// The table of one axis: input size `in`, output size `out`, the scale
/// the coordinates use, and the axis's crop [roiStart, roiEnd].
AxisTable axisTable(const ResizeParams &p, int64_t in, int64_t out,
                    double scale, double roiStart, double roiEnd) {
  AxisTable t;
  t.taps = p.mode == "nearest" ? 1 : p.mode == "cubic" ? 4 : 2;
  double outWidth = scale * double(in); // the reference's (float) length
  for (int64_t x = 0; x < out; ++x) {
    double xo = sourceCoordinate(p, x, in, scale, outWidth, roiStart, roiEnd);
    bool outside =
        p.coordMode == "tf_crop_and_resize" && (xo < 0 || xo > double(in - 1));
    t.outside.push_back(outside);
    t.anyOutside |= outside;
    if (outside) {
      t.index.append(t.taps, 0);
      t.weight.append(t.taps, 0);
      continue;
    }
    addTaps(t, p, xo, in, scale);
  }
  t.identity = isIdentityAxis(t, in, out);
  return t;
}

/// Floats of a constant input (scales, roi).
FailureOr<SmallVector<double>> constFloats(NodeContext &ctx, unsigned i,
                                           llvm::StringRef what) {
  std::optional<DenseElementsAttr> c = ctx.constant(i);
  if (!c || !llvm::isa<FloatType>(c->getElementType())) {
    ctx.error() << what
                << " must be a constant float tensor (an initializer or a "
                   "Constant); mp compiles static shapes";
    return failure();
  }
  SmallVector<double> out;
  for (const APFloat &v : c->getValues<APFloat>()) {
    APFloat d = v;
    bool lost;
    d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    out.push_back(d.convertToDouble());
  }
  return out;
}

/// The tables of every axis of a resize, and the axes it changes.
struct ResizePlan {
  SmallVector<AxisTable> tables; // one per axis
  SmallVector<int64_t> resized;  // the axes that are not the identity
  bool anyOutside = false;       // an output index lies outside the crop
};

ResizePlan planResize(const ResizeParams &p, ArrayRef<int64_t> inShape,
                      ArrayRef<int64_t> outShape, ArrayRef<double> scales,
                      ArrayRef<double> roi) {
  ResizePlan plan;
  int64_t r = inShape.size();
  for (int64_t d = 0; d < r; ++d) {
    double start = roi.empty() ? 0.0 : roi[d];
    double end = roi.empty() ? 1.0 : roi[d + r];
    plan.tables.push_back(
        axisTable(p, inShape[d], outShape[d], scales[d], start, end));
    if (!plan.tables.back().identity)
      plan.resized.push_back(d);
    plan.anyOutside |= plan.tables.back().anyOutside;
  }
  return plan;
}

/// What a resize's linalg.generic reads besides the data: per resized axis
/// the constant table of input positions and, for linear and cubic, of
/// weights (in `compute`); `maps` ends with the output's.
struct ResizeOperands {
  SmallVector<Value> tables;
  SmallVector<AffineMap> maps;
};

/// A constant of the weights `w` of `shape` in `compute` (f32 or f64).
Value weightTable(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type compute, ArrayRef<double> weight) {
  auto wt = RankedTensorType::get(shape, compute);
  if (compute.isF64())
    return constantOf(b, loc, DenseElementsAttr::get(wt, weight));
  SmallVector<float> f(weight.begin(), weight.end());
  return constantOf(b, loc, DenseElementsAttr::get(wt, ArrayRef<float>(f)));
}

/// The operands of the resize's generic over `loops` loops: the output's
/// dimensions, then (linear, cubic) one tap loop per resized axis.
ResizeOperands resizeOperands(OpBuilder &b, Location loc, bool nearest,
                              const ResizePlan &plan,
                              ArrayRef<int64_t> outShape, int64_t loops,
                              Type compute) {
  MLIRContext *mctx = b.getContext();
  int64_t r = outShape.size();
  ResizeOperands ops;
  for (auto [j, axis] : llvm::enumerate(plan.resized)) {
    const AxisTable &t = plan.tables[axis];
    SmallVector<int64_t> shape = {outShape[axis]};
    SmallVector<AffineExpr> exprs = {getAffineDimExpr(axis, mctx)};
    if (!nearest) {
      shape.push_back(t.taps);
      exprs.push_back(getAffineDimExpr(r + j, mctx));
    }
    ops.tables.push_back(constantOf(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get(shape, b.getI64Type()),
                               ArrayRef<int64_t>(t.index))));
    ops.maps.push_back(AffineMap::get(loops, 0, exprs, mctx));
    if (!nearest) {
      ops.tables.push_back(weightTable(b, loc, shape, compute, t.weight));
      ops.maps.push_back(AffineMap::get(loops, 0, exprs, mctx));
    }
  }
  ops.maps.push_back(
      AffineMap::getMultiDimIdentityMap(loops, mctx).getMajorSubMap(r));
  return ops;
}

/// The input coordinates the body reads: on a resized axis the tabled
/// position (`idx`, one per resized axis), elsewhere the loop index.
SmallVector<Value> sourceCoords(OpBuilder &nb, Location nl, ValueRange idx,
                                ArrayRef<int64_t> resized, int64_t r) {
  SmallVector<Value> coords;
  for (int64_t d = 0, j = 0; d < r; ++d) {
    if (j < (int64_t)resized.size() && resized[j] == d)
      coords.push_back(
          arith::IndexCastOp::create(nb, nl, nb.getIndexType(), idx[j++]));
    else
      coords.push_back(loopIndex(nb, nl, d));
  }
  return coords;
}

/// Nearest mode: each output element is the input element at the tabled
/// positions.
Value buildNearestResize(OpBuilder &b, Location loc, Value data,
                         ArrayRef<int64_t> outShape, const ResizeOperands &ops,
                         ArrayRef<int64_t> resized) {
  int64_t r = outShape.size();
  Type elem = llvm::cast<RankedTensorType>(data.getType()).getElementType();
  Value init = emptyTensor(b, loc, outShape, elem);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ops.tables, ValueRange{init},
             ops.maps, SmallVector<IteratorType>(r, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange v) {
               SmallVector<Value> coords =
                   sourceCoords(nb, nl, v.drop_back(), resized, r);
               linalg::YieldOp::create(
                   nb, nl,
                   ValueRange{tensor::ExtractOp::create(nb, nl, data, coords)});
             })
      .getResult(0);
}

/// Linear and cubic modes: each output element sums, in `compute`, the
/// input elements at the taps of every resized axis times the product of
/// their weights; the result is converted back to the data's type.
Value buildInterpolation(OpBuilder &b, Location loc, Value data,
                         ArrayRef<int64_t> outShape, const ResizeOperands &ops,
                         ArrayRef<int64_t> resized, Type compute) {
  int64_t r = outShape.size(), nr = resized.size();
  Type elem = llvm::cast<RankedTensorType>(data.getType()).getElementType();
  Value init = filledTensor(b, loc, outShape, compute, 0.0);
  SmallVector<IteratorType> iterators(r, IteratorType::parallel);
  iterators.append(nr, IteratorType::reduction);
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ops.tables, ValueRange{init},
          ops.maps, iterators,
          [&](OpBuilder &nb, Location nl, ValueRange v) {
            SmallVector<Value> idx;
            Value w;
            for (int64_t j = 0; j < nr; ++j) {
              idx.push_back(v[2 * j]);
              w = w ? arith::MulFOp::create(nb, nl, w, v[2 * j + 1]).getResult()
                    : v[2 * j + 1];
            }
            Value e = tensor::ExtractOp::create(
                nb, nl, data, sourceCoords(nb, nl, idx, resized, r));
            if (e.getType() != compute)
              e = arith::ExtFOp::create(nb, nl, compute, e);
            Value sum = arith::AddFOp::create(
                nb, nl, v.back(), arith::MulFOp::create(nb, nl, w, e));
            linalg::YieldOp::create(nb, nl, ValueRange{sum});
          })
          .getResult(0);
  if (compute == elem)
    return y;
  return elementwise(
      b, loc, y, outShape, elem, [&](OpBuilder &nb, Location nl, ValueRange a) {
        return arith::TruncFOp::create(nb, nl, elem, a[0]).getResult();
      });
}

/// tf_crop_and_resize: extrapolation_value wherever any axis's position
/// lies outside the input.
Value applyExtrapolation(OpBuilder &b, Location loc, Value y,
                         const ResizePlan &plan, ArrayRef<int64_t> outShape,
                         double extrapolation) {
  MLIRContext *mctx = b.getContext();
  int64_t r = outShape.size();
  Type elem = llvm::cast<RankedTensorType>(y.getType()).getElementType();
  SmallVector<Value> flags = {y};
  SmallVector<AffineMap> flagMaps = {
      AffineMap::getMultiDimIdentityMap(r, mctx)};
  for (int64_t d = 0; d < r; ++d) {
    if (!plan.tables[d].anyOutside)
      continue;
    flags.push_back(
        constantOf(b, loc,
                   DenseElementsAttr::get(
                       RankedTensorType::get({outShape[d]}, b.getI1Type()),
                       ArrayRef<bool>(plan.tables[d].outside))));
    flagMaps.push_back(AffineMap::get(r, 0, {getAffineDimExpr(d, mctx)}, mctx));
  }
  flagMaps.push_back(AffineMap::getMultiDimIdentityMap(r, mctx));
  Value init = emptyTensor(b, loc, outShape, elem);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, flags, ValueRange{init},
             flagMaps, SmallVector<IteratorType>(r, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange v) {
               Value any = v[1];
               for (size_t i = 2; i + 1 < v.size(); ++i)
                 any = arith::OrIOp::create(nb, nl, any, v[i]);
               Value e = scalarConstant(nb, nl, elem, extrapolation);
               linalg::YieldOp::create(
                   nb, nl,
                   ValueRange{arith::SelectOp::create(nb, nl, any, e, v[0])});
             })
      .getResult(0);
}

/// Resize of an empty input or to an empty output: an empty result; an
/// empty input has nothing to give a non-empty output.
Results resizeEmpty(NodeContext &ctx, ArrayRef<int64_t> outShape) {
  if (product(outShape) != 0) {
    ctx.error() << "cannot resize an empty input to a non-empty output";
    return failure();
  }
  return one(emptyTensor(ctx.b, ctx.loc, outShape,
                         ctx.type(0).getElementType()),
             ctx.dtype(0));
}

/// Linear and cubic interpolation are imported for float inputs only.
LogicalResult checkResizeInputType(NodeContext &ctx, const ResizeParams &p) {
  if (p.mode == "nearest" || isFloatDType(ctx.dtype(0)))
    return success();
  ctx.error() << "mode '" << p.mode << "' is imported for floating-point "
              << "inputs only, got " << dtypeName(ctx.dtype(0));
  return failure();
}

Results buildResize(NodeContext &ctx, const ResizeParams &p,
                    ArrayRef<int64_t> outShape, ArrayRef<double> scales,
                    ArrayRef<double> roi) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  ArrayRef<int64_t> inShape = ctx.shape(0);
  Type elem = ctx.type(0).getElementType();
  if (product(outShape) == 0 || product(inShape) == 0)
    return resizeEmpty(ctx, outShape);
  ResizePlan plan = planResize(p, inShape, outShape, scales, roi);
  if (plan.resized.empty())
    return one(ctx.input(0), ctx.dtype(0));
  bool nearest = p.mode == "nearest";
  if (failed(checkResizeInputType(ctx, p)))
    return failure();
  int64_t r = inShape.size();
  int64_t loops = nearest ? r : r + (int64_t)plan.resized.size();
  // Interpolation computes in f32 (f64 for f64 data).
  Type compute = elem.isF64() ? elem : Type(b.getF32Type());
  ResizeOperands ops =
      resizeOperands(b, loc, nearest, plan, outShape, loops, compute);
  Value y = nearest ? buildNearestResize(b, loc, ctx.input(0), outShape, ops,
                                         plan.resized)
                    : buildInterpolation(b, loc, ctx.input(0), outShape, ops,
                                         plan.resized, compute);
  if (plan.anyOutside)
    y = applyExtrapolation(b, loc, y, plan, outShape, p.extrapolation);
  return one(y, ctx.dtype(0));
}

/// mode: nearest and linear, and cubic from Resize-11.
LogicalResult readResizeMode(NodeContext &ctx, ResizeParams &p, bool legacy) {
  p.mode = ctx.getString("mode", "nearest");
  bool modeOk = p.mode == "nearest" || p.mode == "linear" ||
                (!legacy && p.mode == "cubic");
  if (modeOk)
    return success();
  ctx.error() << "mode '" << p.mode << "' is not supported (nearest, linear"
              << (legacy ? "" : ", cubic") << ")";
  return failure();
}

/// Upsample-7/9 and Resize-10: asymmetric coordinates and ONNX Runtime's
/// nearest rounding (the operators before coordinate_transformation_mode
/// and nearest_mode); scales an attribute (Upsample-7) or input 1.
LogicalResult readLegacyResize(NodeContext &ctx, ResizeParams &p, bool upsample,
                               SmallVector<double> &scales) {
  p.coordMode = "asymmetric";
  p.legacyNearest = true;
  if (upsample && ctx.opset < 9) {
    for (float s : ctx.getFloats("scales"))
      scales.push_back(s);
    return success();
  }
  FailureOr<SmallVector<double>> s = constFloats(ctx, 1, "scales");
  if (failed(s))
    return failure();
  scales = *s;
  return success();
}

/// Resize-11's attributes: coordinate_transformation_mode, nearest_mode,
/// cubic_coeff_a, exclude_outside, extrapolation_value.
LogicalResult readResizeAttributes(NodeContext &ctx, ResizeParams &p) {
  p.coordMode = ctx.getString("coordinate_transformation_mode", "half_pixel");
  static const char *const coordModes[] = {
      "half_pixel", "pytorch_half_pixel",   "align_corners",
      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (!llvm::is_contained(coordModes, llvm::StringRef(p.coordMode))) {
    ctx.error() << "coordinate_transformation_mode '" << p.coordMode
                << "' is not supported";
    return failure();
  }
  p.nearestMode = ctx.getString("nearest_mode", "round_prefer_floor");
  static const char *const nearestModes[] = {
      "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (!llvm::is_contained(nearestModes, llvm::StringRef(p.nearestMode))) {
    ctx.error() << "nearest_mode '" << p.nearestMode << "' is not supported";
    return failure();
  }
  p.cubicA = ctx.getFloat("cubic_coeff_a", -0.75f);
  p.excludeOutside = ctx.getInt("exclude_outside", 0) != 0;
  p.extrapolation = ctx.getFloat("extrapolation_value", 0.0f);
  return success();
}

/// Resize-11's inputs: roi (used by tf_crop_and_resize only), and scales
/// or sizes (exactly one of them).
/// tf_crop_and_resize's roi: input 1, starts then ends of every axis.
LogicalResult readCropRoi(NodeContext &ctx, SmallVector<double> &roi) {
  int64_t r = ctx.rank(0);
  FailureOr<SmallVector<double>> v =
      ctx.hasInput(1) ? constFloats(ctx, 1, "roi")
                      : FailureOr<SmallVector<double>>(SmallVector<double>{});
  if (failed(v))
    return failure();
  if ((int64_t)v->size() != 2 * r) {
    ctx.error() << "tf_crop_and_resize needs roi with 2 * rank = " << 2 * r
                << " values, got " << v->size();
    return failure();
  }
  roi = *v;
  return success();
}

/// Resize-11's scales (input 2) and sizes (input 3), where present.
LogicalResult readScalesAndSizes(NodeContext &ctx, SmallVector<double> &scales,
                                 SmallVector<int64_t> &sizes) {
  if (ctx.hasInput(2)) {
    FailureOr<SmallVector<double>> s = constFloats(ctx, 2, "scales");
    if (failed(s))
      return failure();
    scales = *s;
  }
  if (ctx.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> s = ctx.constInts(3, "sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  }
  return success();
}

LogicalResult readResizeInputs(NodeContext &ctx, const ResizeParams &p,
                               SmallVector<double> &roi,
                               SmallVector<double> &scales,
                               SmallVector<int64_t> &sizes) {
  if (p.coordMode == "tf_crop_and_resize" && failed(readCropRoi(ctx, roi)))
    return failure();
  if (failed(readScalesAndSizes(ctx, scales, sizes)))
    return failure();
  if (!scales.empty() && !sizes.empty()) {
    ctx.error() << "give scales or sizes, not both";
    return failure();
  }
  if (scales.empty() && sizes.empty()) {
    ctx.error() << "neither scales nor sizes is given";
    return failure();
  }
  return success();
}

/// The scales that the output `sizes` imply (1 for an empty axis).
LogicalResult scalesFromSizes(NodeContext &ctx, ArrayRef<int64_t> sizes,
                              SmallVector<double> &scales) {
  ArrayRef<int64_t> inShape = ctx.shape(0);
  int64_t r = inShape.size();
  if ((int64_t)sizes.size() != r) {
    ctx.error() << "sizes has " << sizes.size()
                << " values for an input of rank " << r;
    return failure();
  }
  for (int64_t d = 0; d < r; ++d) {
    if (sizes[d] < 0) {
      ctx.error() << "sizes[" << d << "] = " << sizes[d] << " is negative";
      return failure();
    }
    scales.push_back(inShape[d] ? double(sizes[d]) / double(inShape[d]) : 1.0);
  }
  return success();
}

/// The output sizes that `scales` give: floor(scale * input size).
LogicalResult sizesFromScales(NodeContext &ctx, ArrayRef<double> scales,
                              SmallVector<int64_t> &sizes) {
  ArrayRef<int64_t> inShape = ctx.shape(0);
  int64_t r = inShape.size();
  if ((int64_t)scales.size() != r) {
    ctx.error() << "scales has " << scales.size()
                << " values for an input of rank " << r;
    return failure();
  }
  for (int64_t d = 0; d < r; ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d])) {
      ctx.error() << "scales[" << d << "] = " << scales[d]
                  << " must be positive";
      return failure();
    }
    sizes.push_back(int64_t(std::floor(scales[d] * double(inShape[d]))));
  }
  return success();
}

/// The operator's scales, roi and output sizes (empty where scales give
/// them), and its remaining attributes.
LogicalResult readResizeOperands(NodeContext &ctx, ResizeParams &p, bool legacy,
                                 bool upsample, SmallVector<double> &roi,
                                 SmallVector<double> &scales,
                                 SmallVector<int64_t> &sizes) {
  if (legacy)
    return readLegacyResize(ctx, p, upsample, scales);
  if (failed(readResizeAttributes(ctx, p)))
    return failure();
  return readResizeInputs(ctx, p, roi, scales, sizes);
}

Results importResize(NodeContext &ctx) {
  bool upsample = ctx.node.op_type() == "Upsample";
  bool legacy = upsample || ctx.opset < 11; // Upsample-7/9, Resize-10
  if (upsample && ctx.opset < 7) {
    ctx.error() << "Upsample before opset 7 (height_scale/width_scale) is "
                   "not supported";
    return failure();
  }
  ResizeParams p;
  if (failed(readResizeMode(ctx, p, legacy)))
    return failure();
  SmallVector<double> scales, roi;
  SmallVector<int64_t> outShape;
  if (failed(readResizeOperands(ctx, p, legacy, upsample, roi, scales,
                                outShape)))
    return failure();
  if (failed(outShape.empty() ? sizesFromScales(ctx, scales, outShape)
                              : scalesFromSizes(ctx, outShape, scales)))
    return failure();
  return buildResize(ctx, p, outShape, scales, roi);
}

} // namespace

void addResizeScatterOps(OpTable &t) {
  t["Resize"] = importResize;
  t["Upsample"] = importResize;
  t["TopK"] = importTopK;
  t["GatherND"] = importGatherND;
  t["ScatterElements"] = importScatterElements;
  t["Scatter"] = importScatterElements;
  t["ScatterND"] = importScatterND;
}

} // namespace mp::onnx_import
