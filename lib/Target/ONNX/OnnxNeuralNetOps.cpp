//===- OnnxNeuralNetOps.cpp - ONNX products, convolutions, pooling, norms -===//
//
// MatMul, Gemm and Einsum become linalg.matmul / batch_matmul or one
// contraction linalg.generic; Conv (any rank, groups) the named NCHW op where
// it exists and a generic with strided, dilated window maps otherwise;
// ConvTranspose a convolution of the stride-dilated input with the flipped
// kernel; pooling a generic over a window; normalizations, softmax and the
// Reduce* family generic reductions (the forms mp's precision analysis and
// autodiff take).
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/AffineExpr.h"

using namespace mlir;

namespace mp::onnx_import {
namespace {

using utils::IteratorType;

SmallVector<TypedValue> one(Value v, DType t) { return {{v, t}}; }

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  if (llvm::isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  if (llvm::isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}

/// A 2-D or batched (3-D) product, zero-initialized.
Value product2d(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  auto lt = llvm::cast<RankedTensorType>(lhs.getType());
  auto rt = llvm::cast<RankedTensorType>(rhs.getType());
  Type elem = lt.getElementType();
  if (lt.getRank() == 2) {
    Value init = filledTensor(b, loc, {lt.getDimSize(0), rt.getDimSize(1)},
                              elem, 0.0);
    return linalg::MatmulOp::create(b, loc, ValueRange{lhs, rhs},
                                    ValueRange{init})
        .getResult(0);
  }
  Value init = filledTensor(
      b, loc, {lt.getDimSize(0), lt.getDimSize(1), rt.getDimSize(2)}, elem,
      0.0);
  return linalg::BatchMatmulOp::create(b, loc, ValueRange{lhs, rhs},
                                       ValueRange{init})
      .getResult(0);
}

/// Copies `v` broadcast to `shape` (the identity where it already has it).
Value broadcastTo(OpBuilder &b, Location loc, Value v,
                  ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return elementwise(b, loc, v, shape, type.getElementType(),
                     [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

/// MatMul's operands must share a numeric element type and have rank 1 or
/// more.
LogicalResult checkMatMulInputs(NodeContext &ctx) {
  if (isBoolDType(ctx.dtype(0)) || ctx.dtype(0) != ctx.dtype(1)) {
    ctx.error() << "inputs must have the same numeric element type";
    return failure();
  }
  if (ctx.rank(0) == 0 || ctx.rank(1) == 0) {
    ctx.error() << "inputs must have rank 1 or more";
    return failure();
  }
  return success();
}

/// The product of `a` [batch..., m, k] and `w` [batch..., k, n] (their
/// batch dimensions `aBatch` and `bBatch` broadcast to `batch`), of shape
/// [batch..., m, n].
Value batchedProduct(OpBuilder &b, Location loc, Value a, Value w,
                     ArrayRef<int64_t> batch, ArrayRef<int64_t> aBatch,
                     ArrayRef<int64_t> bBatch, int64_t m, int64_t k,
                     int64_t n) {
  SmallVector<int64_t> outShape(batch);
  outShape.push_back(m);
  outShape.push_back(n);
  SmallVector<int64_t> fullA(batch), fullB(batch);
  fullA.append({m, k});
  fullB.append({k, n});
  int64_t count = product(batch);
  if (bBatch.empty() || (product(bBatch) == 1 && count == product(aBatch))) {
    // One weight matrix: fold A's batch into its rows.
    Value a2 =
        reshape(b, loc, broadcastTo(b, loc, a, fullA), {count * m, k});
    Value w2 = reshape(b, loc, w, {k, n});
    return reshape(b, loc, product2d(b, loc, a2, w2), outShape);
  }
  Value a3 = reshape(b, loc, broadcastTo(b, loc, a, fullA), {count, m, k});
  Value w3 = reshape(b, loc, broadcastTo(b, loc, w, fullB), {count, k, n});
  return reshape(b, loc, product2d(b, loc, a3, w3), outShape);
}

Results importMatMul(NodeContext &ctx) {
  if (failed(checkMatMulInputs(ctx)))
    return failure();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  SmallVector<int64_t> as(ctx.shape(0)), bs(ctx.shape(1));
  // Vectors become matrices: a row on the left, a column on the right.
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  if (vecA)
    as.insert(as.begin(), 1);
  if (vecB)
    bs.push_back(1);
  Value a = reshape(b, loc, ctx.input(0), as);
  Value w = reshape(b, loc, ctx.input(1), bs);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) {
    ctx.error() << "inner dimensions differ: " << ctx.type(0) << " x "
                << ctx.type(1);
    return failure();
  }
  ArrayRef<int64_t> aBatch = ArrayRef<int64_t>(as).drop_back(2),
                    bBatch = ArrayRef<int64_t>(bs).drop_back(2);
  FailureOr<SmallVector<int64_t>> batch = broadcastShapes({aBatch, bBatch});
  if (failed(batch)) {
    ctx.error() << "batch dimensions do not broadcast: " << ctx.type(0)
                << " x " << ctx.type(1);
    return failure();
  }
  Value result = batchedProduct(b, loc, a, w, *batch, aBatch, bBatch, m, k, n);
  SmallVector<int64_t> finalShape(*batch);
  if (!vecA)
    finalShape.push_back(m);
  if (!vecB)
    finalShape.push_back(n);
  return one(reshape(b, loc, result, finalShape), ctx.dtype(0));
}

/// Gemm's A and B as the product takes them (transA and transB applied);
/// an error unless both are matrices with matching inner dimensions.
LogicalResult gemmOperands(NodeContext &ctx, Value &a, Value &w) {
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2) {
    ctx.error() << "A and B must be matrices";
    return failure();
  }
  a = ctx.input(0);
  w = ctx.input(1);
  if (ctx.getInt("transA", 0))
    a = transpose(ctx.b, ctx.loc, a, {1, 0});
  if (ctx.getInt("transB", 0))
    w = transpose(ctx.b, ctx.loc, w, {1, 0});
  auto at = llvm::cast<RankedTensorType>(a.getType());
  auto wt = llvm::cast<RankedTensorType>(w.getType());
  if (at.getDimSize(1) != wt.getDimSize(0)) {
    ctx.error() << "inner dimensions differ after the transposes";
    return failure();
  }
  return success();
}

/// Gemm's C must broadcast to the product's `shape`.
LogicalResult checkGemmBias(NodeContext &ctx, ArrayRef<int64_t> shape) {
  FailureOr<SmallVector<int64_t>> c = broadcastShapes({ctx.shape(2), shape});
  if (succeeded(c) && ArrayRef<int64_t>(*c) == shape)
    return success();
  ctx.error() << "C of shape " << ctx.type(2)
              << " does not broadcast to the product's";
  return failure();
}

/// alpha * y (+ beta * c where Gemm has C) for one element; a factor of 1
/// is left out.
Value gemmEpilogue(OpBuilder &b, Location loc, ValueRange v, double alpha,
                   double beta, bool hasC) {
  Value r = v[0];
  if (alpha != 1.0)
    r = arith::MulFOp::create(b, loc, scalarConstant(b, loc, r.getType(), alpha),
                              r);
  if (!hasC)
    return r;
  Value c = v[1];
  if (beta != 1.0)
    c = arith::MulFOp::create(b, loc, scalarConstant(b, loc, c.getType(), beta),
                              c);
  return arith::AddFOp::create(b, loc, r, c);
}

Results importGemm(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  Value a, w;
  if (failed(gemmOperands(ctx, a, w)))
    return failure();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto at = llvm::cast<RankedTensorType>(a.getType());
  auto wt = llvm::cast<RankedTensorType>(w.getType());
  Value y = product2d(b, loc, a, w);
  double alpha = ctx.getFloat("alpha", 1.0f), beta = ctx.getFloat("beta", 1.0f);
  SmallVector<int64_t> shape = {at.getDimSize(0), wt.getDimSize(1)};
  SmallVector<Value> operands = {y};
  bool hasC = ctx.hasInput(2) && beta != 0.0;
  if (hasC && failed(checkGemmBias(ctx, shape)))
    return failure();
  if (hasC)
    operands.push_back(ctx.input(2));
  if (!hasC && alpha == 1.0)
    return one(y, ctx.dtype(0));
  Value result = elementwise(b, loc, operands, shape, at.getElementType(),
                             [&](OpBuilder &nb, Location nl, ValueRange v) {
                               return gemmEpilogue(nb, nl, v, alpha, beta,
                                                   hasC);
                             });
  return one(result, ctx.dtype(0));
}

/// An einsum equation: one subscript string per operand and the output's,
/// ellipses already replaced by letters.
struct EinsumEquation {
  SmallVector<std::string> terms;
  std::string output;
};

/// The comma-separated operand subscripts of an equation's left-hand side.
SmallVector<std::string> splitEinsumTerms(const std::string &lhs) {
  SmallVector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return terms;
}

/// Replaces the ellipses by upper-case letters for the broadcast dimensions
/// (the output's too when it is explicit).
void expandEllipses(NodeContext &ctx, EinsumEquation &eq, bool explicitOut) {
  int64_t ellipsisRank = 0;
  for (unsigned i = 0; i < eq.terms.size(); ++i)
    if (size_t p = eq.terms[i].find("..."); p != std::string::npos)
      ellipsisRank = std::max<int64_t>(ellipsisRank,
                                       ctx.rank(i) - (eq.terms[i].size() - 3));
  auto expand = [&](std::string &term, int64_t rank) {
    size_t p = term.find("...");
    if (p == std::string::npos)
      return;
    std::string fill;
    for (int64_t j = ellipsisRank - rank; j < ellipsisRank; ++j)
      fill += char('A' + j);
    term = term.substr(0, p) + fill + term.substr(p + 3);
  };
  for (unsigned i = 0; i < eq.terms.size(); ++i) {
    std::string &t = eq.terms[i];
    expand(t, ctx.rank(i) -
                  (t.size() - (t.find("...") == std::string::npos ? 0 : 3)));
  }
  if (explicitOut)
    expand(eq.output, ellipsisRank);
}

/// The implicit output: the letters that occur once, in alphabetical order,
/// after the broadcast (upper-case) ones.
std::string implicitEinsumOutput(ArrayRef<std::string> terms) {
  std::map<char, int> counts;
  for (const std::string &t : terms)
    for (char c : t)
      ++counts[c];
  std::string out;
  for (auto [c, n] : counts) // upper-case (ellipsis) letters sort first
    if (n == 1 || (c >= 'A' && c <= 'Z'))
      out += c;
  return out;
}

FailureOr<EinsumEquation> parseEinsum(NodeContext &ctx) {
  std::string eq = ctx.getString("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  std::string lhs = eq;
  EinsumEquation parsed;
  bool explicitOut = false;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    parsed.output = eq.substr(arrow + 2);
    explicitOut = true;
  }
  parsed.terms = splitEinsumTerms(lhs);
  if (parsed.terms.size() != ctx.numInputs()) {
    ctx.error() << "the equation '" << eq << "' names " << parsed.terms.size()
                << " operands; the node has " << ctx.numInputs();
    return failure();
  }
  expandEllipses(ctx, parsed, explicitOut);
  if (!explicitOut)
    parsed.output = implicitEinsumOutput(parsed.terms);
  return parsed;
}

/// The size of every subscript, checked to agree between operands; appends
/// to `letters` (which starts as the output's subscripts) the reduced ones.
FailureOr<llvm::StringMap<int64_t>>
einsumSizes(NodeContext &ctx, const EinsumEquation &eq, std::string &letters) {
  llvm::StringMap<int64_t> sizes;
  for (unsigned i = 0; i < eq.terms.size(); ++i) {
    const std::string &term = eq.terms[i];
    if ((int64_t)term.size() != ctx.rank(i)) {
      ctx.error() << "operand " << i << " has rank " << ctx.rank(i)
                  << "; the equation gives it " << term.size() << " subscripts";
      return failure();
    }
    for (size_t d = 0; d < term.size(); ++d) {
      char c = term[d];
      std::string key(1, c);
      int64_t s = ctx.shape(i)[d];
      auto it = sizes.find(key);
      if (it != sizes.end() && it->second != s) {
        ctx.error() << "subscript '" << c << "' has sizes " << it->second
                    << " and " << s << " (broadcasting is not imported)";
        return failure();
      }
      sizes[key] = s;
      if (letters.find(c) == std::string::npos)
        letters += c;
    }
  }
  return sizes;
}

/// The output's shape; an error for an output subscript no operand has.
FailureOr<SmallVector<int64_t>>
einsumOutputShape(NodeContext &ctx, const std::string &output,
                  const llvm::StringMap<int64_t> &sizes) {
  SmallVector<int64_t> shape;
  for (char c : output) {
    auto it = sizes.find(std::string(1, c));
    if (it == sizes.end()) {
      ctx.error() << "output subscript '" << c << "' is not in any operand";
      return failure();
    }
    shape.push_back(it->second);
  }
  return shape;
}

/// One linalg.generic: a loop per letter (the output's parallel, the others
/// reductions) summing the product of the operands.
Results importEinsum(NodeContext &ctx) {
  FailureOr<EinsumEquation> eq = parseEinsum(ctx);
  if (failed(eq))
    return failure();
  std::string letters = eq->output;
  FailureOr<llvm::StringMap<int64_t>> sizes = einsumSizes(ctx, *eq, letters);
  if (failed(sizes))
    return failure();
  MLIRContext *mctx = ctx.b.getContext();
  auto mapOf = [&](const std::string &term) {
    SmallVector<AffineExpr> exprs;
    for (char c : term)
      exprs.push_back(getAffineDimExpr(letters.find(c), mctx));
    return AffineMap::get(letters.size(), 0, exprs, mctx);
  };
  SmallVector<AffineMap> maps;
  for (const std::string &t : eq->terms)
    maps.push_back(mapOf(t));
  maps.push_back(mapOf(eq->output));
  SmallVector<IteratorType> iterators;
  for (size_t i = 0; i < letters.size(); ++i)
    iterators.push_back(i < eq->output.size() ? IteratorType::parallel
                                              : IteratorType::reduction);
  FailureOr<SmallVector<int64_t>> shape =
      einsumOutputShape(ctx, eq->output, *sizes);
  if (failed(shape))
    return failure();
  Type elem = ctx.type(0).getElementType();
  Value init = filledTensor(ctx.b, ctx.loc, *shape, elem, 0.0);
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.numInputs(); ++i)
    inputs.push_back(ctx.input(i));
  Value result =
      linalg::GenericOp::create(
          ctx.b, ctx.loc, TypeRange{init.getType()}, inputs, ValueRange{init},
          maps, iterators,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            Value p = args[0];
            for (Value v : args.drop_front().drop_back())
              p = mul(b, loc, p, v);
            linalg::YieldOp::create(b, loc, add(b, loc, args.back(), p));
          })
          .getResult(0);
  return one(result, ctx.dtype(0));
}

// -- convolution and pooling --------------------------------------------------------

struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
};

/// Kernel, strides and dilations of a window over `k` spatial dimensions
/// (strides and dilations default to 1).
LogicalResult readWindowSteps(NodeContext &ctx, size_t k,
                              ArrayRef<int64_t> kernel, Window &w) {
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = ctx.getInts("strides");
  w.dilations = ctx.getInts("dilations");
  if (w.strides.empty())
    w.strides.assign(k, 1);
  if (w.dilations.empty())
    w.dilations.assign(k, 1);
  if (w.kernel.size() != k || w.strides.size() != k ||
      w.dilations.size() != k) {
    ctx.error() << "kernel_shape, strides and dilations must have one entry "
                   "per spatial dimension ("
                << k << ")";
    return failure();
  }
  return success();
}

/// The pads attribute (auto_pad NOTSET): begins then ends, zeros if absent.
LogicalResult explicitWindowPads(NodeContext &ctx, size_t k, Window &w) {
  SmallVector<int64_t> pads = ctx.getInts("pads");
  if (pads.empty())
    pads.assign(2 * k, 0);
  if (pads.size() != 2 * k) {
    ctx.error() << "pads must have 2 x " << k << " entries";
    return failure();
  }
  w.padBegin.assign(pads.begin(), pads.begin() + k);
  w.padEnd.assign(pads.begin() + k, pads.end());
  return success();
}

/// auto_pad SAME_UPPER / SAME_LOWER: pads so that the output has
/// ceil(size / stride) positions, the odd one at the end for SAME_UPPER.
void samePadding(ArrayRef<int64_t> spatial, bool upper, Window &w) {
  for (size_t i = 0; i < spatial.size(); ++i) {
    int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total = std::max<int64_t>(
        0, (out - 1) * w.strides[i] + extent - spatial[i]);
    int64_t small = total / 2, large = total - small;
    w.padBegin.push_back(upper ? small : large);
    w.padEnd.push_back(upper ? large : small);
  }
}

/// The window's pads as auto_pad resolves them.
LogicalResult windowPads(NodeContext &ctx, ArrayRef<int64_t> spatial,
                         Window &w) {
  size_t k = spatial.size();
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return explicitWindowPads(ctx, k, w);
  if (autoPad == "VALID") {
    w.padBegin.assign(k, 0);
    w.padEnd.assign(k, 0);
    return success();
  }
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    samePadding(spatial, autoPad == "SAME_UPPER", w);
    return success();
  }
  ctx.error() << "auto_pad '" << autoPad << "' is not a valid value";
  return failure();
}

/// Kernel, strides, dilations and pads of a conv/pool node over `spatial`
/// input sizes (auto_pad resolved).
FailureOr<Window> windowOf(NodeContext &ctx, ArrayRef<int64_t> spatial,
                           ArrayRef<int64_t> kernel) {
  size_t k = spatial.size();
  Window w;
  if (failed(readWindowSteps(ctx, k, kernel, w)) ||
      failed(windowPads(ctx, spatial, w)))
    return failure();
  for (size_t i = 0; i < k; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1 ||
        w.padBegin[i] < 0 || w.padEnd[i] < 0) {
      ctx.error() << "strides, dilations and kernel sizes must be positive "
                     "and pads not negative";
      return failure();
    }
  return w;
}

/// Pads the trailing `lo.size()` dimensions of `x` with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> lo,
                 ArrayRef<int64_t> hi, double value) {
  auto type = llvm::cast<RankedTensorType>(x.getType());
  int64_t lead = type.getRank() - lo.size();
  if (llvm::all_of(lo, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(hi, [](int64_t p) { return p == 0; }))
    return x;
  SmallVector<OpFoldResult> low(lead, b.getIndexAttr(0)),
      high(lead, b.getIndexAttr(0));
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < lo.size(); ++i) {
    low.push_back(b.getIndexAttr(lo[i]));
    high.push_back(b.getIndexAttr(hi[i]));
    shape[lead + i] += lo[i] + hi[i];
  }
  Value pad = scalarConstant(b, loc, type.getElementType(), value);
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x, low, high,
      pad);
}

/// Convolution of padded x [N, C, S...] with w [M, C/G, K...] (groups G),
/// strides and dilations; the output [N, M, O...].
Value convolve(OpBuilder &b, Location loc, Value x, Value w, int64_t groups,
               ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
  MLIRContext *mctx = b.getContext();
  auto xt = llvm::cast<RankedTensorType>(x.getType());
  auto wt = llvm::cast<RankedTensorType>(w.getType());
  Type elem = xt.getElementType();
  int64_t k = xt.getRank() - 2;
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), m = wt.getDimSize(0);
  SmallVector<int64_t> out = {n, m};
  for (int64_t i = 0; i < k; ++i)
    out.push_back((xt.getDimSize(2 + i) -
                   ((wt.getDimSize(2 + i) - 1) * dilations[i] + 1)) /
                      strides[i] +
                  1);
  if (k == 2 && groups == 1) {
    Value init = filledTensor(b, loc, out, elem, 0.0);
    auto attr = [&](ArrayRef<int64_t> v) {
      return DenseIntElementsAttr::get(
          RankedTensorType::get({2}, b.getI64Type()), v);
    };
    return linalg::Conv2DNchwFchwOp::create(
               b, loc, TypeRange{init.getType()}, ValueRange{x, w},
               ValueRange{init}, attr(strides), attr(dilations))
        .getResult(0);
  }
  // Generic over (n, g, m, o..., c, k...), the group dimension always
  // present (size 1 without groups).
  int64_t cg = c / groups, mg = m / groups;
  SmallVector<int64_t> xs = {n, groups, cg}, ws = {groups, mg, cg},
                       ys = {n, groups, mg};
  for (int64_t i = 0; i < k; ++i) {
    xs.push_back(xt.getDimSize(2 + i));
    ws.push_back(wt.getDimSize(2 + i));
    ys.push_back(out[2 + i]);
  }
  Value xg = reshape(b, loc, x, xs), wg = reshape(b, loc, w, ws);
  int64_t loops = 3 + k + 1 + k;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, mctx); };
  // Dimensions: 0 n, 1 g, 2 m, 3..3+k-1 o, 3+k c, 4+k.. kernel.
  SmallVector<AffineExpr> xe = {d(0), d(1), d(3 + k)}, we = {d(1), d(2),
                                                             d(3 + k)},
                          ye = {d(0), d(1), d(2)};
  for (int64_t i = 0; i < k; ++i) {
    xe.push_back(d(3 + i) * strides[i] + d(4 + k + i) * dilations[i]);
    we.push_back(d(4 + k + i));
    ye.push_back(d(3 + i));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, xe, mctx),
                                 AffineMap::get(loops, 0, we, mctx),
                                 AffineMap::get(loops, 0, ye, mctx)};
  SmallVector<IteratorType> iterators(3 + k, IteratorType::parallel);
  iterators.append(1 + k, IteratorType::reduction);
  Value init = filledTensor(b, loc, ys, elem, 0.0);
  Value y = linalg::GenericOp::create(
                b, loc, TypeRange{init.getType()}, ValueRange{xg, wg},
                ValueRange{init}, maps, iterators,
                [](OpBuilder &nb, Location nl, ValueRange a) {
                  linalg::YieldOp::create(
                      nb, nl, add(nb, nl, a[2], mul(nb, nl, a[0], a[1])));
                })
                .getResult(0);
  return reshape(b, loc, y, out);
}

/// Adds bias [M] along dimension 1 of y [N, M, ...].
Value addChannelBias(OpBuilder &b, Location loc, Value y, Value bias) {
  auto yt = llvm::cast<RankedTensorType>(y.getType());
  SmallVector<int64_t> bs = {yt.getDimSize(1)};
  bs.append(yt.getRank() - 2, 1);
  return elementwise(b, loc, {y, reshape(b, loc, bias, bs)}, yt.getShape(),
                     yt.getElementType(),
                     [](OpBuilder &nb, Location nl, ValueRange a) {
                       return add(nb, nl, a[0], a[1]);
                     });
}

/// Conv's X [N, C, D...] and W [M, C/group, K...]: one rank, and channels
/// that `groups` divides.
LogicalResult checkConvShapes(NodeContext &ctx, int64_t groups) {
  ArrayRef<int64_t> xs = ctx.shape(0), ws = ctx.shape(1);
  if (xs.size() < 3 || ws.size() != xs.size()) {
    ctx.error() << "X must be [N, C, D...] and W [M, C/group, K...] of the "
                   "same rank";
    return failure();
  }
  if (groups < 1 || xs[1] % groups || ws[0] % groups ||
      ws[1] * groups != xs[1]) {
    ctx.error() << "group " << groups << " does not fit X " << ctx.type(0)
                << " and W " << ctx.type(1);
    return failure();
  }
  return success();
}

Results importConv(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  ArrayRef<int64_t> xs = ctx.shape(0), ws = ctx.shape(1);
  int64_t groups = ctx.getInt("group", 1);
  if (failed(checkConvShapes(ctx, groups)))
    return failure();
  SmallVector<int64_t> kernel = ctx.getInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(ws.begin() + 2, ws.end());
  if (ArrayRef<int64_t>(kernel) != ws.drop_front(2)) {
    ctx.error() << "kernel_shape does not match W";
    return failure();
  }
  FailureOr<Window> w = windowOf(ctx, xs.drop_front(2), kernel);
  if (failed(w))
    return failure();
  Value x = padSpatial(ctx.b, ctx.loc, ctx.input(0), w->padBegin, w->padEnd, 0);
  Value y = convolve(ctx.b, ctx.loc, x, ctx.input(1), groups, w->strides,
                     w->dilations);
  if (ctx.hasInput(2))
    y = addChannelBias(ctx.b, ctx.loc, y, ctx.input(2));
  return one(y, ctx.dtype(0));
}

/// A ConvTranspose's strides, dilations and output_padding, and the pads
/// it removes from the full output at the start (`lo`) and end (`hi`) of
/// every spatial axis (negative: extra zeros).
struct TransposedWindow {
  SmallVector<int64_t> strides, dilations, outPad, lo, hi;
};

/// The pads of a ConvTranspose: from output_shape or SAME_UPPER/LOWER as
/// the spec computes them, else the pads attribute.
void convTransposePads(NodeContext &ctx, TransposedWindow &w,
                       ArrayRef<int64_t> pads) {
  ArrayRef<int64_t> xs = ctx.shape(0), ws = ctx.shape(1);
  int64_t k = xs.size() - 2;
  SmallVector<int64_t> outShape = ctx.getInts("output_shape");
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  w.lo.assign(k, 0);
  w.hi.assign(k, 0);
  for (int64_t i = 0; i < k; ++i) {
    if (outShape.empty() && autoPad != "SAME_UPPER" &&
        autoPad != "SAME_LOWER") {
      w.lo[i] = pads[i];
      w.hi[i] = pads[k + i];
      continue;
    }
    int64_t extent = (ws[2 + i] - 1) * w.dilations[i] + 1;
    int64_t full = w.strides[i] * (xs[2 + i] - 1) + w.outPad[i] + extent;
    int64_t target = outShape.empty() ? xs[2 + i] * w.strides[i]
                                      : outShape[outShape.size() - k + i];
    // The spec's pads for an output shape (negative: extra zeros at the
    // end); half, rounded down, at the start only for SAME_UPPER.
    int64_t total = full - target;
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    bool upper = autoPad == "SAME_UPPER";
    w.lo[i] = upper ? half : total - half;
    w.hi[i] = total - w.lo[i];
  }
}

FailureOr<TransposedWindow> transposedWindowOf(NodeContext &ctx) {
  int64_t k = ctx.rank(0) - 2;
  TransposedWindow w;
  w.strides = ctx.getInts("strides");
  w.dilations = ctx.getInts("dilations");
  w.outPad = ctx.getInts("output_padding");
  SmallVector<int64_t> pads = ctx.getInts("pads");
  if (w.strides.empty())
    w.strides.assign(k, 1);
  if (w.dilations.empty())
    w.dilations.assign(k, 1);
  if (w.outPad.empty())
    w.outPad.assign(k, 0);
  if (pads.empty())
    pads.assign(2 * k, 0);
  if ((int64_t)w.strides.size() != k || (int64_t)w.dilations.size() != k ||
      (int64_t)w.outPad.size() != k || (int64_t)pads.size() != 2 * k) {
    ctx.error() << "strides, dilations, output_padding and pads must have "
                   "one (pads: two) entries per spatial dimension";
    return failure();
  }
  convTransposePads(ctx, w, pads);
  return w;
}

/// Stride-dilates x [N, C, S...]: zeros with x at every stride-th position.
Value strideDilate(OpBuilder &b, Location loc, Value x,
                   ArrayRef<int64_t> strides) {
  if (llvm::none_of(strides, [](int64_t s) { return s != 1; }))
    return x;
  auto xt = llvm::cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> xs = xt.getShape();
  int64_t k = xs.size() - 2;
  SmallVector<int64_t> dilated = {xs[0], xs[1]};
  SmallVector<OpFoldResult> offsets(k + 2, b.getIndexAttr(0)), sizes,
      steps = {b.getIndexAttr(1), b.getIndexAttr(1)};
  for (int64_t d : xs)
    sizes.push_back(b.getIndexAttr(d));
  for (int64_t i = 0; i < k; ++i) {
    dilated.push_back((xs[2 + i] - 1) * strides[i] + 1);
    steps.push_back(b.getIndexAttr(strides[i]));
  }
  return tensor::InsertSliceOp::create(
      b, loc, x, filledTensor(b, loc, dilated, xt.getElementType(), 0.0),
      offsets, sizes, steps);
}

/// Pads the spatial dimensions of x by the kernel extent minus the pads
/// (crops where that is negative), plus output_padding at the end.
Value padForTransposedConv(OpBuilder &b, Location loc, Value x,
                           ArrayRef<int64_t> ws, const TransposedWindow &w) {
  int64_t k = ws.size() - 2;
  SmallVector<int64_t> padLo(k), padHi(k);
  SmallVector<int64_t> cropLo(k), cropHi(k);
  for (int64_t i = 0; i < k; ++i) {
    int64_t extent = (ws[2 + i] - 1) * w.dilations[i];
    int64_t l = extent - w.lo[i], h = extent - w.hi[i] + w.outPad[i];
    padLo[i] = std::max<int64_t>(l, 0);
    padHi[i] = std::max<int64_t>(h, 0);
    cropLo[i] = std::max<int64_t>(-l, 0);
    cropHi[i] = std::max<int64_t>(-h, 0);
  }
  x = padSpatial(b, loc, x, padLo, padHi, 0);
  if (llvm::none_of(cropLo, [](int64_t v) { return v; }) &&
      llvm::none_of(cropHi, [](int64_t v) { return v; }))
    return x;
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> off(2, b.getIndexAttr(0)), sz,
      st(k + 2, b.getIndexAttr(1));
  sz.push_back(b.getIndexAttr(t.getDimSize(0)));
  sz.push_back(b.getIndexAttr(t.getDimSize(1)));
  for (int64_t i = 0; i < k; ++i) {
    off.push_back(b.getIndexAttr(cropLo[i]));
    sz.push_back(b.getIndexAttr(t.getDimSize(2 + i) - cropLo[i] - cropHi[i]));
  }
  return tensor::ExtractSliceOp::create(b, loc, x, off, sz, st);
}

/// A ConvTranspose's kernel w [C, M/G, K...] as a convolution's:
/// [G*M/G, C/G, K...], flipped spatially.
Value flippedKernel(OpBuilder &b, Location loc, Value w, int64_t groups) {
  MLIRContext *mctx = b.getContext();
  auto wt = llvm::cast<RankedTensorType>(w.getType());
  ArrayRef<int64_t> ws = wt.getShape();
  int64_t k = ws.size() - 2, c = ws[0], mg = ws[1];
  SmallVector<int64_t> wShape = {groups, c / groups, mg};
  SmallVector<int64_t> fShape = {groups, mg, c / groups};
  for (int64_t i = 0; i < k; ++i) {
    wShape.push_back(ws[2 + i]);
    fShape.push_back(ws[2 + i]);
  }
  Value wg = reshape(b, loc, w, wShape);
  int64_t rank = 3 + k;
  SmallVector<AffineExpr> in = {getAffineDimExpr(0, mctx),
                                getAffineDimExpr(2, mctx),
                                getAffineDimExpr(1, mctx)};
  for (int64_t i = 0; i < k; ++i)
    in.push_back(getAffineConstantExpr(ws[2 + i] - 1, mctx) -
                 getAffineDimExpr(3 + i, mctx));
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, in, mctx),
                                 AffineMap::getMultiDimIdentityMap(rank, mctx)};
  Value init = emptyTensor(b, loc, fShape, wt.getElementType());
  Value flipped =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{wg}, ValueRange{init},
          maps, SmallVector<IteratorType>(rank, IteratorType::parallel),
          [](OpBuilder &nb, Location nl, ValueRange a) {
            linalg::YieldOp::create(nb, nl, a[0]);
          })
          .getResult(0);
  SmallVector<int64_t> convW = {groups * mg, c / groups};
  convW.append(ws.begin() + 2, ws.end());
  return reshape(b, loc, flipped, convW);
}

/// A convolution of the stride-dilated, padded input with the flipped
/// kernel.
Results importConvTranspose(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  ArrayRef<int64_t> xs = ctx.shape(0), ws = ctx.shape(1);
  int64_t k = xs.size() - 2;
  if (k < 1 || ws.size() != xs.size()) {
    ctx.error() << "X must be [N, C, D...] and W [C, M/group, K...]";
    return failure();
  }
  int64_t groups = ctx.getInt("group", 1);
  int64_t c = xs[1];
  if (groups < 1 || c % groups || ws[0] != c) {
    ctx.error() << "group " << groups << " does not fit X " << ctx.type(0)
                << " and W " << ctx.type(1);
    return failure();
  }
  FailureOr<TransposedWindow> w = transposedWindowOf(ctx);
  if (failed(w))
    return failure();
  Value x = strideDilate(b, loc, ctx.input(0), w->strides);
  x = padForTransposedConv(b, loc, x, ws, *w);
  Value kernel = flippedKernel(b, loc, ctx.input(1), groups);
  Value y = convolve(b, loc, x, kernel, groups, SmallVector<int64_t>(k, 1),
                     w->dilations);
  if (ctx.hasInput(2))
    y = addChannelBias(b, loc, y, ctx.input(2));
  return one(y, ctx.dtype(0));
}

/// The output shape of a pooling over x of shape `xs` with window `w`, and
/// in `extra` the padding that ceil mode adds past the end padding (read,
/// never counted).
FailureOr<SmallVector<int64_t>> poolOutputShape(NodeContext &ctx,
                                                ArrayRef<int64_t> xs,
                                                const Window &w,
                                                SmallVector<int64_t> &extra) {
  bool ceil = ctx.getInt("ceil_mode", 0);
  int64_t k = xs.size() - 2;
  SmallVector<int64_t> out = {xs[0], xs[1]};
  extra.assign(k, 0);
  for (int64_t i = 0; i < k; ++i) {
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t span = xs[2 + i] + w.padBegin[i] + w.padEnd[i] - extent;
    if (span < 0) {
      ctx.error() << "the window is larger than the padded input";
      return failure();
    }
    int64_t o = (ceil ? (span + w.strides[i] - 1) / w.strides[i]
                      : span / w.strides[i]) +
                1;
    out.push_back(o);
    // Ceil mode may read past the end padding: pad there too, uncounted.
    extra[i] =
        std::max<int64_t>(0, (o - 1) * w.strides[i] + extent -
                                 (xs[2 + i] + w.padBegin[i] + w.padEnd[i]));
  }
  return out;
}

/// The neutral value of a pooling: 0 for averages, -inf for float max
/// pooling, the type's smallest value for integer max pooling.
double poolInit(bool isMax, DType dt, Type elem) {
  if (isFloatDType(dt))
    return isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  if (isUnsignedDType(dt))
    return 0.0;
  return double(
      APInt::getSignedMinValue(elem.getIntOrFloatBitWidth()).getSExtValue());
}

/// The max or the sum over the window of each output position of padded x.
Value poolWindows(OpBuilder &b, Location loc, Value x, const Window &w,
                  ArrayRef<int64_t> out, double init, bool isMax, DType dt) {
  MLIRContext *mctx = b.getContext();
  int64_t k = out.size() - 2;
  Type elem = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  bool isFloat = isFloatDType(dt), isUnsigned = isUnsignedDType(dt);
  int64_t loops = 2 + 2 * k;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, mctx); };
  SmallVector<AffineExpr> xe = {d(0), d(1)}, ke, ye = {d(0), d(1)};
  for (int64_t i = 0; i < k; ++i) {
    xe.push_back(d(2 + i) * w.strides[i] + d(2 + k + i) * w.dilations[i]);
    ke.push_back(d(2 + k + i));
    ye.push_back(d(2 + i));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, xe, mctx),
                                 AffineMap::get(loops, 0, ke, mctx),
                                 AffineMap::get(loops, 0, ye, mctx)};
  SmallVector<IteratorType> iterators(2 + k, IteratorType::parallel);
  iterators.append(k, IteratorType::reduction);
  Value window = emptyTensor(b, loc, w.kernel, elem);
  Value acc = filledTensor(b, loc, out, elem, init);
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{x, window},
             ValueRange{acc}, maps, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value r;
               if (!isMax)
                 r = arith::AddFOp::create(nb, nl, a[2], a[0]);
               else if (isFloat)
                 r = arith::MaximumFOp::create(nb, nl, a[2], a[0]);
               else if (isUnsigned)
                 r = arith::MaxUIOp::create(nb, nl, a[2], a[0]);
               else
                 r = arith::MaxSIOp::create(nb, nl, a[2], a[0]);
               linalg::YieldOp::create(nb, nl, r);
             })
      .getResult(0);
}

/// The number of counted elements in the window along one axis at output
/// index `o` (the explicit pads count with count_include_pad).
int64_t countedInWindow(const Window &w, int64_t i, int64_t o, int64_t size,
                        bool countPad) {
  int64_t lo = countPad ? -w.padBegin[i] : 0;
  int64_t hiLimit = countPad ? size + w.padEnd[i] : size;
  int64_t n = 0;
  for (int64_t j = 0; j < w.kernel[i]; ++j) {
    int64_t pos = o * w.strides[i] + j * w.dilations[i] - w.padBegin[i];
    n += pos >= lo && pos < hiLimit;
  }
  return n;
}

/// Average pooling's divisor at each output position of the `spatial`
/// output shape: the number of counted window elements (at least 1).
SmallVector<float> averageDivisors(const Window &w, ArrayRef<int64_t> xs,
                                   ArrayRef<int64_t> spatial, bool countPad) {
  int64_t k = spatial.size();
  SmallVector<float> divisor(product(spatial));
  for (int64_t p = 0, e = divisor.size(); p < e; ++p) {
    int64_t rest = p, count = 1;
    for (int64_t i = k - 1; i >= 0; --i) {
      int64_t o = rest % spatial[i];
      rest /= spatial[i];
      count *= countedInWindow(w, i, o, xs[2 + i], countPad);
    }
    divisor[p] = float(std::max<int64_t>(count, 1));
  }
  return divisor;
}

/// What MaxPool and AveragePool import: numeric X (float for averages) of
/// rank 3 or more, no Indices output, the default storage order.
LogicalResult checkPoolNode(NodeContext &ctx, bool isMax) {
  DType dt = ctx.dtype(0);
  if (!isFloatDType(dt) && (!isMax || isBoolDType(dt)) &&
      failed(ctx.requireFloat(0)))
    return failure();
  if (isMax && ctx.hasOutput(1)) {
    ctx.error() << "the Indices output of MaxPool is not imported";
    return failure();
  }
  if (ctx.rank(0) < 3) {
    ctx.error() << "X must be [N, C, D...]";
    return failure();
  }
  if (ctx.getInt("storage_order", 0)) {
    ctx.error() << "storage_order 1 is not imported";
    return failure();
  }
  return success();
}

/// Average pooling's sums `y` divided by each position's window count.
Value divideByWindowCounts(NodeContext &ctx, Value y, const Window &w,
                           ArrayRef<int64_t> out) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  SmallVector<int64_t> spatial(out.begin() + 2, out.end());
  SmallVector<float> divisor = averageDivisors(
      w, ctx.shape(0), spatial, ctx.getInt("count_include_pad", 0));
  Value div = constantOf(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get(spatial, b.getF32Type()),
                             ArrayRef<float>(divisor)));
  DType dt = ctx.dtype(0);
  return elementwise(b, loc, {y, div}, out, ctx.type(0).getElementType(),
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value dv = convertScalar(nb, nl, a[1],
                                                onnx::TensorProto::FLOAT, dt);
                       return arith::DivFOp::create(nb, nl, a[0], dv)
                           .getResult();
                     });
}

/// MaxPool and AveragePool: one generic over the output and window
/// dimensions of the padded input; averages then divide by the constant
/// count of each position's window.
Results importPool(NodeContext &ctx) {
  bool isMax = ctx.node.op_type() == "MaxPool";
  DType dt = ctx.dtype(0);
  if (failed(checkPoolNode(ctx, isMax)))
    return failure();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  ArrayRef<int64_t> xs = ctx.shape(0);
  int64_t k = xs.size() - 2;
  SmallVector<int64_t> kernel = ctx.getInts("kernel_shape");
  FailureOr<Window> w = windowOf(ctx, xs.drop_front(2), kernel);
  if (failed(w))
    return failure();
  SmallVector<int64_t> extra;
  FailureOr<SmallVector<int64_t>> out = poolOutputShape(ctx, xs, *w, extra);
  if (failed(out))
    return failure();
  SmallVector<int64_t> hi(k);
  for (int64_t i = 0; i < k; ++i)
    hi[i] = w->padEnd[i] + extra[i];
  Type elem = ctx.type(0).getElementType();
  double init = poolInit(isMax, dt, elem);
  Value x = padSpatial(b, loc, ctx.input(0), w->padBegin, hi, init);
  Value y = poolWindows(b, loc, x, *w, *out, init, isMax, dt);
  if (isMax)
    return one(y, ctx.dtype(0));
  return one(divideByWindowCounts(ctx, y, *w, *out), ctx.dtype(0));
}

Value reduceSum(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes,
                bool keep) {
  return reduce(b, loc, x, axes, keep, 0.0,
                [](OpBuilder &nb, Location nl, Value acc, Value v) {
                  return add(nb, nl, acc, v);
                });
}

/// Mean over `axes`, kept as size-1 dimensions.
Value meanOver(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= t.getDimSize(a);
  Value sum = reduceSum(b, loc, x, axes, true);
  auto st = llvm::cast<RankedTensorType>(sum.getType());
  return elementwise(b, loc, sum, st.getShape(), st.getElementType(),
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       return arith::DivFOp::create(
                                  nb, nl, a[0],
                                  scalarConstant(nb, nl, a[0].getType(),
                                                 double(count)))
                           .getResult();
                     });
}

Results importGlobalPool(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < ctx.rank(0); ++i)
    axes.push_back(i);
  if (ctx.node.op_type() == "GlobalAveragePool")
    return one(meanOver(ctx.b, ctx.loc, ctx.input(0), axes), ctx.dtype(0));
  return one(reduce(ctx.b, ctx.loc, ctx.input(0), axes, true,
                    -std::numeric_limits<double>::infinity(),
                    [](OpBuilder &b, Location l, Value acc, Value v) {
                      return arith::MaximumFOp::create(b, l, acc, v)
                          .getResult();
                    }),
             ctx.dtype(0));
}

/// (x - mean) * invStd * scale + bias, all broadcast to x's shape.
Value normalize(OpBuilder &b, Location loc, Value x, Value mean, Value invStd,
                Value scale, Value bias) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SmallVector<Value> operands = {x, mean, invStd};
  if (scale)
    operands.push_back(scale);
  if (bias)
    operands.push_back(bias);
  bool hasScale = bool(scale), hasBias = bool(bias);
  return elementwise(b, loc, operands, t.getShape(), t.getElementType(),
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value y = arith::MulFOp::create(
                           nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]),
                           a[2]);
                       unsigned i = 3;
                       if (hasScale)
                         y = arith::MulFOp::create(nb, nl, y, a[i++]);
                       if (hasBias)
                         y = arith::AddFOp::create(nb, nl, y, a[i++]);
                       return y;
                     });
}

/// 1 / sqrt(var + eps), elementwise on a tensor of variances.
Value invStdOf(OpBuilder &b, Location loc, Value var, double eps) {
  auto t = llvm::cast<RankedTensorType>(var.getType());
  return elementwise(b, loc, var, t.getShape(), t.getElementType(),
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value v = arith::AddFOp::create(
                           nb, nl, a[0],
                           scalarConstant(nb, nl, a[0].getType(), eps));
                       return arith::DivFOp::create(
                                  nb, nl,
                                  scalarConstant(nb, nl, a[0].getType(), 1.0),
                                  math::SqrtOp::create(nb, nl, v))
                           .getResult();
                     });
}

/// Mean and variance (biased) over `axes`, both with kept dimensions.
std::pair<Value, Value> moments(OpBuilder &b, Location loc, Value x,
                                ArrayRef<int64_t> axes) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  Value mean = meanOver(b, loc, x, axes);
  Value sq = elementwise(b, loc, {x, mean}, t.getShape(), t.getElementType(),
                         [](OpBuilder &nb, Location nl, ValueRange a) {
                           Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
                           return arith::MulFOp::create(nb, nl, d, d)
                               .getResult();
                         });
  return {mean, meanOver(b, loc, sq, axes)};
}

Results importBatchNorm(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  if (ctx.getInt("training_mode", 0)) {
    ctx.error() << "training_mode batch normalization is not imported (only "
                   "inference, with the running statistics)";
    return failure();
  }
  if (ctx.opset < 9 && ctx.getInt("spatial", 1) == 0) {
    ctx.error() << "spatial=0 batch normalization is not imported";
    return failure();
  }
  if (ctx.rank(0) < 2) {
    ctx.error() << "X must have a channel dimension";
    return failure();
  }
  int64_t c = ctx.shape(0)[1];
  SmallVector<int64_t> cs = {c};
  cs.append(ctx.rank(0) - 2, 1);
  for (unsigned i = 1; i <= 4; ++i)
    if (!ctx.hasInput(i) || ctx.type(i).getNumElements() != c) {
      ctx.error() << "input " << i << " must hold one value per channel";
      return failure();
    }
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto chan = [&](unsigned i) { return reshape(b, loc, ctx.input(i), cs); };
  Value invStd = invStdOf(b, loc, chan(4), ctx.getFloat("epsilon", 1e-5f));
  return one(normalize(b, loc, ctx.input(0), chan(3), invStd, chan(1),
                       chan(2)),
             ctx.dtype(0));
}

Results importInstanceNorm(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  int64_t rank = ctx.rank(0);
  if (rank < 3) {
    ctx.error() << "X must be [N, C, D...]";
    return failure();
  }
  SmallVector<int64_t> axes, cs = {ctx.shape(0)[1]};
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  cs.append(rank - 2, 1);
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto [mean, var] = moments(b, loc, ctx.input(0), axes);
  Value invStd = invStdOf(b, loc, var, ctx.getFloat("epsilon", 1e-5f));
  return one(normalize(b, loc, ctx.input(0), mean, invStd,
                       reshape(b, loc, ctx.input(1), cs),
                       reshape(b, loc, ctx.input(2), cs)),
             ctx.dtype(0));
}

Results importLayerNorm(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  int64_t rank = ctx.rank(0);
  FailureOr<int64_t> axis = ctx.axis(ctx.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> axes;
  for (int64_t i = *axis; i < rank; ++i)
    axes.push_back(i);
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  // stash_type 1 (the default) computes the statistics in f32.
  DType dt = ctx.dtype(0);
  bool stashF32 = ctx.getInt("stash_type", 1) == 1 &&
                  dt != onnx::TensorProto::FLOAT &&
                  dt != onnx::TensorProto::DOUBLE;
  Value x = stashF32 ? convertTensor(b, loc, ctx.input(0), dt,
                                     onnx::TensorProto::FLOAT)
                     : ctx.input(0);
  DType xt = stashF32 ? onnx::TensorProto::FLOAT : dt;
  auto [mean, var] = moments(b, loc, x, axes);
  Value invStd = invStdOf(b, loc, var, ctx.getFloat("epsilon", 1e-5f));
  auto cast = [&](unsigned i) {
    return ctx.hasInput(i) ? convertTensor(b, loc, ctx.input(i), dt, xt)
                           : Value();
  };
  Value y = normalize(b, loc, x, mean, invStd, cast(1), cast(2));
  SmallVector<TypedValue> out = {
      {convertTensor(b, loc, y, xt, dt), dt}};
  out.push_back({mean, xt});
  out.push_back({invStd, xt});
  return out;
}

} // namespace

/// The pieces of a softmax over `axes`: the maximum, exp(x - max) and its
/// sum (max and sum with the reduced dimensions kept).
struct SoftmaxParts {
  Value max, exp, sum;
};

static SoftmaxParts softmaxParts(OpBuilder &b, Location loc, Value x,
                                 ArrayRef<int64_t> axes) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SoftmaxParts p;
  p.max = reduce(b, loc, x, axes, true,
                 -std::numeric_limits<double>::infinity(),
                 [](OpBuilder &nb, Location nl, Value acc, Value v) {
                   return arith::MaximumFOp::create(nb, nl, acc, v).getResult();
                 });
  p.exp = elementwise(b, loc, {x, p.max}, t.getShape(), t.getElementType(),
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return math::ExpOp::create(
                                   nb, nl,
                                   arith::SubFOp::create(nb, nl, a[0], a[1]))
                            .getResult();
                      });
  p.sum = reduceSum(b, loc, p.exp, axes, true);
  return p;
}

Value logSoftmax(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SoftmaxParts p = softmaxParts(b, loc, x, axes);
  return elementwise(b, loc, {x, p.max, p.sum}, t.getShape(),
                     t.getElementType(),
                     [](OpBuilder &nb, Location nl, ValueRange a) {
                       Value s = arith::SubFOp::create(nb, nl, a[0], a[1]);
                       return arith::SubFOp::create(
                                  nb, nl, s, math::LogOp::create(nb, nl, a[2]))
                           .getResult();
                     });
}

namespace {

Results importSoftmax(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  int64_t rank = ctx.rank(0);
  FailureOr<int64_t> axis =
      ctx.axis(ctx.getInt("axis", ctx.opset < 13 ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> axes = {*axis};
  if (ctx.opset < 13) // the input is coerced to 2-D at axis
    for (int64_t i = *axis + 1; i < rank; ++i)
      axes.push_back(i);
  if (ctx.node.op_type() == "LogSoftmax")
    return one(logSoftmax(ctx.b, ctx.loc, ctx.input(0), axes), ctx.dtype(0));
  auto t = ctx.type(0);
  SoftmaxParts p = softmaxParts(ctx.b, ctx.loc, ctx.input(0), axes);
  Value y = elementwise(ctx.b, ctx.loc, {p.exp, p.sum}, t.getShape(),
                        t.getElementType(),
                        [](OpBuilder &nb, Location nl, ValueRange a) {
                          return arith::DivFOp::create(nb, nl, a[0], a[1])
                              .getResult();
                        });
  return one(y, ctx.dtype(0));
}

/// A reduction node after its checks: the input, the sorted distinct axes
/// it reduces, and keepdims.
struct Reduction {
  NodeContext &ctx;
  Value x;
  SmallVector<int64_t> axes;
  bool keep;
  Type elem; // the input's element type
};

/// Builds one reduction operator's result.
using ReductionBuilder = Value (*)(const Reduction &);

/// The sum over the axes of `prologue(x)` (of x when null).
Value sumOf(const Reduction &r,
            std::function<Value(OpBuilder &, Location, Value)> prologue) {
  return reduce(
      r.ctx.b, r.ctx.loc, r.x, r.axes, r.keep, 0.0,
      [](OpBuilder &nb, Location nl, Value acc, Value v) {
        return add(nb, nl, acc, v);
      },
      prologue);
}

/// `fn` of every element of the reduced `v`.
Value mapReduced(const Reduction &r, Value v,
                 std::function<Value(OpBuilder &, Location, Value)> fn) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  return elementwise(r.ctx.b, r.ctx.loc, v, t.getShape(), r.elem,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       return fn(nb, nl, a[0]);
                     });
}

Value square(OpBuilder &b, Location loc, Value v) {
  return arith::MulFOp::create(b, loc, v, v).getResult();
}

Value buildReduceSum(const Reduction &r) { return sumOf(r, nullptr); }

Value buildReduceMean(const Reduction &r) {
  int64_t count = 1;
  for (int64_t a : r.axes)
    count *= r.ctx.shape(0)[a];
  return mapReduced(
      r, sumOf(r, nullptr), [&](OpBuilder &nb, Location nl, Value v) {
        return arith::DivFOp::create(
                   nb, nl, v, scalarConstant(nb, nl, r.elem, double(count)))
            .getResult();
      });
}

Value buildReduceSumSquare(const Reduction &r) { return sumOf(r, square); }

Value buildReduceL1(const Reduction &r) {
  return sumOf(r, [](OpBuilder &nb, Location nl, Value v) {
    return math::AbsFOp::create(nb, nl, v).getResult();
  });
}

Value buildReduceL2(const Reduction &r) {
  return mapReduced(r, sumOf(r, square),
                    [](OpBuilder &nb, Location nl, Value v) {
                      return math::SqrtOp::create(nb, nl, v).getResult();
                    });
}

Value buildReduceLogSum(const Reduction &r) {
  return mapReduced(r, sumOf(r, nullptr),
                    [](OpBuilder &nb, Location nl, Value v) {
                      return math::LogOp::create(nb, nl, v).getResult();
                    });
}

/// max + log(sum(exp(x - max))): no overflow for large inputs.
Value buildReduceLogSumExp(const Reduction &r) {
  OpBuilder &b = r.ctx.b;
  Location loc = r.ctx.loc;
  SoftmaxParts p = softmaxParts(b, loc, r.x, r.axes);
  auto st = llvm::cast<RankedTensorType>(p.sum.getType());
  Value y =
      elementwise(b, loc, {p.sum, p.max}, st.getShape(), r.elem,
                  [](OpBuilder &nb, Location nl, ValueRange a) {
                    return arith::AddFOp::create(
                               nb, nl, math::LogOp::create(nb, nl, a[0]), a[1])
                        .getResult();
                  });
  if (r.keep)
    return y;
  SmallVector<int64_t> shape;
  for (int64_t i = 0, rank = r.ctx.rank(0); i < rank; ++i)
    if (!llvm::is_contained(r.axes, i))
      shape.push_back(r.ctx.shape(0)[i]);
  return reshape(b, loc, y, shape);
}

Value buildReduceProd(const Reduction &r) {
  return reduce(r.ctx.b, r.ctx.loc, r.x, r.axes, r.keep, 1.0,
                [](OpBuilder &nb, Location nl, Value acc, Value v) {
                  return mul(nb, nl, acc, v);
                });
}

/// ReduceMax and ReduceMin, from the type's lowest (highest) value.
Value buildReduceMaxMin(const Reduction &r) {
  bool isMax = r.ctx.node.op_type() == "ReduceMax";
  bool isFloat = isFloatDType(r.ctx.dtype(0));
  double init;
  if (isFloat) {
    init = isMax ? -std::numeric_limits<double>::infinity()
                 : std::numeric_limits<double>::infinity();
  } else {
    unsigned width = r.elem.getIntOrFloatBitWidth();
    init = isMax ? double(APInt::getSignedMinValue(width).getSExtValue())
                 : double(APInt::getSignedMaxValue(width).getSExtValue());
  }
  return reduce(
      r.ctx.b, r.ctx.loc, r.x, r.axes, r.keep, init,
      [isMax, isFloat](OpBuilder &nb, Location nl, Value acc,
                       Value v) -> Value {
        if (isFloat)
          return isMax ? arith::MaximumFOp::create(nb, nl, acc, v).getResult()
                       : arith::MinimumFOp::create(nb, nl, acc, v).getResult();
        return isMax ? arith::MaxSIOp::create(nb, nl, acc, v).getResult()
                     : arith::MinSIOp::create(nb, nl, acc, v).getResult();
      });
}

/// The reduction operators; all but the first four take floats only.
const struct {
  const char *name;
  ReductionBuilder build;
} kReductions[] = {
    {"ReduceSum", buildReduceSum},
    {"ReduceMax", buildReduceMaxMin},
    {"ReduceMin", buildReduceMaxMin},
    {"ReduceProd", buildReduceProd},
    {"ReduceMean", buildReduceMean},
    {"ReduceL1", buildReduceL1},
    {"ReduceL2", buildReduceL2},
    {"ReduceLogSum", buildReduceLogSum},
    {"ReduceLogSumExp", buildReduceLogSumExp},
    {"ReduceSumSquare", buildReduceSumSquare},
};

/// The sorted, distinct axes a reduction reduces (every axis when none are
/// given); `noop` when none are given and noop_with_empty_axes is set.
FailureOr<SmallVector<int64_t>> reductionAxes(NodeContext &ctx, bool &noop) {
  int64_t rank = ctx.rank(0);
  FailureOr<SmallVector<int64_t>> given =
      ctx.axesAttrOrInput(ctx.node.op_type() == "ReduceSum" && ctx.opset >= 13);
  if (failed(given))
    return failure();
  SmallVector<int64_t> axes = *given;
  noop = axes.empty() && ctx.getInt("noop_with_empty_axes", 0);
  if (noop)
    return axes;
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  for (int64_t &a : axes) {
    FailureOr<int64_t> n = ctx.axis(a, rank);
    if (failed(n))
      return failure();
    a = *n;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

Results importReduce(NodeContext &ctx) {
  llvm::StringRef op = ctx.node.op_type();
  DType dt = ctx.dtype(0);
  if (isBoolDType(dt) || isUnsignedDType(dt) ||
      (!isFloatDType(dt) && op != "ReduceSum" && op != "ReduceMax" &&
       op != "ReduceMin" && op != "ReduceProd")) {
    ctx.error() << "element type " << dtypeName(dt) << " is not supported";
    return failure();
  }
  bool noop = false;
  FailureOr<SmallVector<int64_t>> axes = reductionAxes(ctx, noop);
  if (failed(axes))
    return failure();
  if (noop)
    return SmallVector<TypedValue>{ctx.inputs[0]};
  Reduction r{ctx, ctx.input(0), *axes, ctx.getInt("keepdims", 1) != 0,
              ctx.type(0).getElementType()};
  const auto *entry =
      llvm::find_if(kReductions, [&](const auto &e) { return op == e.name; });
  return one(entry->build(r), dt);
}

} // namespace

void addNeuralNetOps(OpTable &t) {
  t["MatMul"] = importMatMul;
  t["Gemm"] = importGemm;
  t["Einsum"] = importEinsum;
  t["Conv"] = importConv;
  t["ConvTranspose"] = importConvTranspose;
  t["MaxPool"] = importPool;
  t["AveragePool"] = importPool;
  t["GlobalAveragePool"] = importGlobalPool;
  t["GlobalMaxPool"] = importGlobalPool;
  t["BatchNormalization"] = importBatchNorm;
  t["InstanceNormalization"] = importInstanceNorm;
  t["LayerNormalization"] = importLayerNorm;
  t["Softmax"] = importSoftmax;
  t["LogSoftmax"] = importSoftmax;
  for (const auto &reduction : kReductions)
    t[reduction.name] = importReduce;
}

} // namespace mp::onnx_import
