//===- OnnxElementwiseOps.cpp - ONNX elementwise operators ---------------===//
//
// Unary and broadcasting n-ary operators, comparisons, logic, Where, Clip,
// Cast: each one linalg.generic (OnnxImporter.h's `elementwise`) whose body
// is arith/math on scalars.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

using namespace mlir;

namespace mp::onnx_import {
namespace {

using Body = std::function<Value(OpBuilder &, Location, ValueRange, DType)>;

/// Requires the inputs `which` to have one element type, except for the
/// operators whose inputs differ by definition (Where's condition, Pow's
/// exponent, PRelu's slope).
LogicalResult checkSameElementType(NodeContext &ctx, ArrayRef<unsigned> which) {
  StringRef op = ctx.node.op_type();
  if (which.size() < 2 || op == "Where" || op == "Pow" || op == "PRelu")
    return success();
  DType inType = ctx.dtype(which.front());
  for (unsigned i : which)
    if (ctx.dtype(i) != inType) {
      ctx.error() << "inputs have different element types ("
                  << dtypeName(inType) << " and " << dtypeName(ctx.dtype(i))
                  << ")";
      return failure();
    }
  return success();
}

/// Broadcasts the given inputs and applies `body`; the result has element
/// type `resultType` (the first input's when 0).
Results mapInputs(NodeContext &ctx, ArrayRef<unsigned> which, DType resultType,
                  const Body &body) {
  SmallVector<Value> operands;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (unsigned i : which) {
    if (!ctx.hasInput(i)) {
      ctx.error() << "input " << i << " is required";
      return failure();
    }
    operands.push_back(ctx.input(i));
    shapes.push_back(ctx.shape(i));
  }
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (failed(shape)) {
    InFlightDiagnostic diag = ctx.error();
    diag << "input shapes do not broadcast:";
    for (unsigned i : which)
      diag << " " << ctx.type(i);
    return failure();
  }
  DType inType = ctx.dtype(which.front());
  if (failed(checkSameElementType(ctx, which)))
    return failure();
  DType outType = resultType ? resultType : inType;
  Type elem = elementType(ctx.b.getContext(), outType);
  Value result = elementwise(
      ctx.b, ctx.loc, operands, *shape, elem,
      [&](OpBuilder &b, Location loc, ValueRange args) {
        return body(b, loc, args, inType);
      });
  return SmallVector<TypedValue>{{result, outType}};
}

Value fconst(OpBuilder &b, Location loc, Value like, double v) {
  return scalarConstant(b, loc, like.getType(), v);
}

/// A float-only unary operator.
ImportFn unaryFloat(std::function<Value(OpBuilder &, Location, Value,
                                        NodeContext &)>
                        fn) {
  return [fn](NodeContext &ctx) -> Results {
    if (failed(ctx.requireFloat(0)))
      return failure();
    return mapInputs(ctx, {0}, 0,
                     [&](OpBuilder &b, Location loc, ValueRange a, DType) {
                       return fn(b, loc, a[0], ctx);
                     });
  };
}

/// A binary arithmetic operator on floats or integers (variadic ones fold
/// left over all inputs).
ImportFn arithmetic(std::function<Value(OpBuilder &, Location, Value, Value)>
                        onFloat,
                    std::function<Value(OpBuilder &, Location, Value, Value,
                                        bool isUnsigned)>
                        onInt) {
  return [=](NodeContext &ctx) -> Results {
    SmallVector<unsigned> which;
    for (unsigned i = 0; i < ctx.numInputs(); ++i)
      which.push_back(i);
    if (which.empty()) {
      ctx.error() << "needs at least one input";
      return failure();
    }
    if (isBoolDType(ctx.dtype(0)) || (!onInt && !isFloatDType(ctx.dtype(0)))) {
      ctx.error() << "element type " << dtypeName(ctx.dtype(0))
                  << " is not supported";
      return failure();
    }
    return mapInputs(
        ctx, which, 0,
        [&](OpBuilder &b, Location loc, ValueRange a, DType t) -> Value {
          Value acc = a[0];
          for (Value v : a.drop_front())
            acc = isFloatDType(t) ? onFloat(b, loc, acc, v)
                                  : onInt(b, loc, acc, v, isUnsignedDType(t));
          return acc;
        });
  };
}

/// A comparison producing BOOL.
ImportFn comparison(arith::CmpFPredicate fp, arith::CmpIPredicate sp,
                    arith::CmpIPredicate up) {
  return [=](NodeContext &ctx) -> Results {
    return mapInputs(ctx, {0, 1}, onnx::TensorProto::BOOL,
                     [&](OpBuilder &b, Location loc, ValueRange a,
                         DType t) -> Value {
                       if (isFloatDType(t))
                         return arith::CmpFOp::create(b, loc, fp, a[0], a[1]);
                       return arith::CmpIOp::create(
                           b, loc, isUnsignedDType(t) ? up : sp, a[0], a[1]);
                     });
  };
}

/// And, Or, Xor on BOOL.
template <typename OpTy> ImportFn logical() {
  return [](NodeContext &ctx) -> Results {
    if (!isBoolDType(ctx.dtype(0)) || !isBoolDType(ctx.dtype(1))) {
      ctx.error() << "inputs must be BOOL";
      return failure();
    }
    return mapInputs(ctx, {0, 1}, 0,
                     [](OpBuilder &b, Location loc, ValueRange a, DType) {
                       return OpTy::create(b, loc, a[0], a[1]).getResult();
                     });
  };
}

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = fconst(b, loc, x, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

Value clamp(OpBuilder &b, Location loc, Value x, Value lo, Value hi) {
  return arith::MinimumFOp::create(b, loc,
                                   arith::MaximumFOp::create(b, loc, x, lo),
                                   hi);
}

/// Clip's bounds as scalars, null where a bound is left out: attributes
/// before opset 11, optional scalar inputs from 11.
LogicalResult clipBounds(NodeContext &ctx, Value &lo, Value &hi) {
  Type elem = ctx.type(0).getElementType();
  if (ctx.opset < 11) {
    lo =
        scalarConstant(ctx.b, ctx.loc, elem,
                       ctx.getFloat("min", -std::numeric_limits<float>::max()));
    hi = scalarConstant(ctx.b, ctx.loc, elem,
                        ctx.getFloat("max", std::numeric_limits<float>::max()));
    return success();
  }
  for (unsigned i = 1; i <= 2; ++i) {
    if (!ctx.hasInput(i))
      continue;
    if (ctx.rank(i) != 0 && ctx.type(i).getNumElements() != 1) {
      ctx.error() << (i == 1 ? "min" : "max") << " must be a scalar";
      return failure();
    }
    Value v = reshape(ctx.b, ctx.loc, ctx.input(i), {});
    (i == 1 ? lo : hi) =
        tensor::ExtractOp::create(ctx.b, ctx.loc, v, ValueRange{});
  }
  return success();
}

/// The float, unsigned or signed variant of a max or min op.
template <typename FloatOp, typename UnsignedOp, typename SignedOp>
Value typedMinMax(OpBuilder &b, Location loc, Value x, Value y, DType t) {
  if (isFloatDType(t))
    return FloatOp::create(b, loc, x, y);
  if (isUnsignedDType(t))
    return UnsignedOp::create(b, loc, x, y);
  return SignedOp::create(b, loc, x, y);
}

Results importClip(NodeContext &ctx) {
  DType t = ctx.dtype(0);
  if (isBoolDType(t)) {
    ctx.error() << "BOOL inputs are not supported";
    return failure();
  }
  Value lo, hi;
  if (failed(clipBounds(ctx, lo, hi)))
    return failure();
  return mapInputs(
      ctx, {0}, 0, [&](OpBuilder &b, Location loc, ValueRange a, DType) {
        Value x = a[0];
        if (lo)
          x = typedMinMax<arith::MaximumFOp, arith::MaxUIOp, arith::MaxSIOp>(
              b, loc, x, lo, t);
        if (hi)
          x = typedMinMax<arith::MinimumFOp, arith::MinUIOp, arith::MinSIOp>(
              b, loc, x, hi, t);
        return x;
      });
}

Results importCast(NodeContext &ctx) {
  DType to = ctx.node.op_type() == "CastLike" ? ctx.dtype(1)
                                              : (DType)ctx.getInt("to", 0);
  DType from = ctx.dtype(0);
  if (!elementType(ctx.b.getContext(), to)) {
    ctx.error() << "cast to " << dtypeName(to) << " is not supported";
    return failure();
  }
  return SmallVector<TypedValue>{
      {convertTensor(ctx.b, ctx.loc, ctx.input(0), from, to), to}};
}

Results importWhere(NodeContext &ctx) {
  if (!isBoolDType(ctx.dtype(0))) {
    ctx.error() << "the condition must be BOOL";
    return failure();
  }
  if (ctx.dtype(1) != ctx.dtype(2)) {
    ctx.error() << "X and Y have different element types";
    return failure();
  }
  return mapInputs(ctx, {0, 1, 2}, ctx.dtype(1),
                   [](OpBuilder &b, Location loc, ValueRange a, DType) {
                     return arith::SelectOp::create(b, loc, a[0], a[1], a[2])
                         .getResult();
                   });
}

Results importPow(NodeContext &ctx) {
  DType base = ctx.dtype(0), exponent = ctx.dtype(1);
  if (isBoolDType(base) || isBoolDType(exponent)) {
    ctx.error() << "BOOL inputs are not supported";
    return failure();
  }
  // Integer bases are raised in f64 and converted back (exact while the
  // result fits f64's 53-bit mantissa).
  DType compute = isFloatDType(base) ? base : DType(onnx::TensorProto::DOUBLE);
  return mapInputs(ctx, {0, 1}, base,
                   [&](OpBuilder &b, Location loc, ValueRange a, DType) {
                     Value x = convertScalar(b, loc, a[0], base, compute);
                     Value e = convertScalar(b, loc, a[1], exponent, compute);
                     Value y = math::PowFOp::create(b, loc, x, e);
                     return convertScalar(b, loc, y, compute, base);
                   });
}

Results importPRelu(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  // Before opset 7 a slope of C values applies along the channel dimension.
  if (ctx.opset < 7 && ctx.rank(1) == 1 && ctx.rank(0) >= 2 &&
      ctx.shape(1)[0] == ctx.shape(0)[1] && ctx.shape(1)[0] != 1) {
    SmallVector<int64_t> cs = {ctx.shape(0)[1]};
    cs.append(ctx.rank(0) - 2, 1);
    ctx.inputs[1].value = reshape(ctx.b, ctx.loc, ctx.input(1), cs);
  }
  return mapInputs(ctx, {0, 1}, 0,
                   [](OpBuilder &b, Location loc, ValueRange a, DType) {
                     Value zero = fconst(b, loc, a[0], 0.0);
                     Value neg = arith::CmpFOp::create(
                         b, loc, arith::CmpFPredicate::OLT, a[0], zero);
                     return arith::SelectOp::create(
                                b, loc, neg,
                                arith::MulFOp::create(b, loc, a[0], a[1]), a[0])
                         .getResult();
                   });
}

Results importMean(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  SmallVector<unsigned> which;
  for (unsigned i = 0; i < ctx.numInputs(); ++i)
    which.push_back(i);
  double n = which.size();
  return mapInputs(ctx, which, 0,
                   [&](OpBuilder &b, Location loc, ValueRange a, DType) {
                     Value acc = a[0];
                     for (Value v : a.drop_front())
                       acc = arith::AddFOp::create(b, loc, acc, v);
                     return arith::DivFOp::create(b, loc, acc,
                                                  fconst(b, loc, acc, n))
                         .getResult();
                   });
}

Results importNot(NodeContext &ctx) {
  if (!isBoolDType(ctx.dtype(0))) {
    ctx.error() << "the input must be BOOL";
    return failure();
  }
  return mapInputs(ctx, {0}, 0,
                   [](OpBuilder &b, Location loc, ValueRange a, DType) {
                     Value one = scalarConstant(b, loc, b.getI1Type(), 1);
                     return arith::XOrIOp::create(b, loc, a[0], one)
                         .getResult();
                   });
}

Results importIsNaN(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  return mapInputs(ctx, {0}, onnx::TensorProto::BOOL,
                   [](OpBuilder &b, Location loc, ValueRange a, DType) {
                     return arith::CmpFOp::create(
                                b, loc, arith::CmpFPredicate::UNO, a[0], a[0])
                         .getResult();
                   });
}

Results importIsInf(NodeContext &ctx) {
  if (failed(ctx.requireFloat(0)))
    return failure();
  bool pos = ctx.getInt("detect_positive", 1),
       neg = ctx.getInt("detect_negative", 1);
  return mapInputs(
      ctx, {0}, onnx::TensorProto::BOOL,
      [&](OpBuilder &b, Location loc, ValueRange a, DType) -> Value {
        double inf = std::numeric_limits<double>::infinity();
        Value isPos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            a[0], fconst(b, loc, a[0], inf));
        Value isNeg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            a[0], fconst(b, loc, a[0], -inf));
        if (pos && neg)
          return arith::OrIOp::create(b, loc, isPos, isNeg);
        if (pos)
          return isPos;
        if (neg)
          return isNeg;
        return scalarConstant(b, loc, b.getI1Type(), 0);
      });
}

Results importMod(NodeContext &ctx) {
  DType t = ctx.dtype(0);
  bool fmod = ctx.getInt("fmod", 0);
  if (isBoolDType(t) || (isFloatDType(t) && !fmod)) {
    ctx.error() << (isBoolDType(t) ? "BOOL inputs are not supported"
                                   : "floating-point Mod needs fmod=1");
    return failure();
  }
  return mapInputs(
      ctx, {0, 1}, 0, [&](OpBuilder &b, Location loc, ValueRange a, DType) -> Value {
        if (isFloatDType(t))
          return arith::RemFOp::create(b, loc, a[0], a[1]);
        if (isUnsignedDType(t))
          return arith::RemUIOp::create(b, loc, a[0], a[1]);
        Value r = arith::RemSIOp::create(b, loc, a[0], a[1]);
        if (fmod)
          return r; // the sign of the dividend, as C's fmod
        // Python's %: the sign of the divisor.
        Value zero = scalarConstant(b, loc, r.getType(), 0);
        Value nonzero =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
        Value rNeg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
        Value bNeg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a[1], zero);
        Value differ = arith::XOrIOp::create(b, loc, rNeg, bNeg);
        Value fix = arith::AndIOp::create(b, loc, nonzero, differ);
        return arith::SelectOp::create(
            b, loc, fix, arith::AddIOp::create(b, loc, r, a[1]), r);
      });
}

// -- scalar bodies of the float unary operators -------------------------------

/// The scalar body of a float-only unary operator (`ctx` for attributes).
using UnaryBuilder = Value (*)(OpBuilder &, Location, Value, NodeContext &);

/// A math dialect op of one operand.
template <typename OpTy>
Value mathUnary(OpBuilder &b, Location l, Value x, NodeContext &) {
  return OpTy::create(b, l, x).getResult();
}

Value buildReciprocal(OpBuilder &b, Location l, Value x, NodeContext &) {
  return arith::DivFOp::create(b, l, fconst(b, l, x, 1.0), x).getResult();
}

Value buildSigmoid(OpBuilder &b, Location l, Value x, NodeContext &) {
  return sigmoid(b, l, x);
}

Value buildRelu(OpBuilder &b, Location l, Value x, NodeContext &) {
  return arith::MaximumFOp::create(b, l, x, fconst(b, l, x, 0.0)).getResult();
}

Value buildLeakyRelu(OpBuilder &b, Location l, Value x, NodeContext &ctx) {
  Value alpha = fconst(b, l, x, ctx.getFloat("alpha", 0.01f));
  Value neg = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, x,
                                    fconst(b, l, x, 0.0));
  return arith::SelectOp::create(b, l, neg,
                                 arith::MulFOp::create(b, l, x, alpha), x)
      .getResult();
}

/// gamma * (x <= 0 ? alpha * (exp(x) - 1) : x), Elu's and Selu's body.
Value eluLike(OpBuilder &b, Location l, Value x, double alpha, double gamma) {
  Value zero = fconst(b, l, x, 0.0);
  Value em1 = arith::SubFOp::create(b, l, math::ExpOp::create(b, l, x),
                                    fconst(b, l, x, 1.0));
  Value neg = arith::MulFOp::create(b, l, fconst(b, l, x, alpha), em1);
  Value isNeg = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLE, x, zero);
  Value y = arith::SelectOp::create(b, l, isNeg, neg, x);
  return gamma == 1.0 ? y
                      : arith::MulFOp::create(b, l, fconst(b, l, x, gamma), y)
                            .getResult();
}

Value buildElu(OpBuilder &b, Location l, Value x, NodeContext &ctx) {
  return eluLike(b, l, x, ctx.getFloat("alpha", 1.0f), 1.0);
}

Value buildSelu(OpBuilder &b, Location l, Value x, NodeContext &ctx) {
  return eluLike(b, l, x, ctx.getFloat("alpha", 1.67326319217681884765625f),
                 ctx.getFloat("gamma", 1.05070102214813232421875f));
}

Value buildHardSigmoid(OpBuilder &b, Location l, Value x, NodeContext &ctx) {
  Value ax = arith::MulFOp::create(
      b, l, fconst(b, l, x, ctx.getFloat("alpha", 0.2f)), x);
  Value y = arith::AddFOp::create(b, l, ax,
                                  fconst(b, l, x, ctx.getFloat("beta", 0.5f)));
  return clamp(b, l, y, fconst(b, l, x, 0.0), fconst(b, l, x, 1.0));
}

Value buildHardSwish(OpBuilder &b, Location l, Value x, NodeContext &) {
  Value y = arith::AddFOp::create(
      b, l, arith::MulFOp::create(b, l, fconst(b, l, x, 1.0 / 6.0), x),
      fconst(b, l, x, 0.5));
  Value h = clamp(b, l, y, fconst(b, l, x, 0.0), fconst(b, l, x, 1.0));
  return arith::MulFOp::create(b, l, x, h).getResult();
}

Value buildSoftplus(OpBuilder &b, Location l, Value x, NodeContext &) {
  // max(x, 0) + log1p(exp(-|x|)): log(1 + exp(x)) without overflow.
  Value zero = fconst(b, l, x, 0.0);
  Value negAbs = arith::NegFOp::create(b, l, math::AbsFOp::create(b, l, x));
  Value tail = math::Log1pOp::create(b, l, math::ExpOp::create(b, l, negAbs));
  return arith::AddFOp::create(b, l, arith::MaximumFOp::create(b, l, x, zero),
                               tail)
      .getResult();
}

Value buildSoftsign(OpBuilder &b, Location l, Value x, NodeContext &) {
  Value d = arith::AddFOp::create(b, l, fconst(b, l, x, 1.0),
                                  math::AbsFOp::create(b, l, x));
  return arith::DivFOp::create(b, l, x, d).getResult();
}

Value buildSign(OpBuilder &b, Location l, Value x, NodeContext &) {
  Value zero = fconst(b, l, x, 0.0);
  Value pos = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, x, zero);
  Value neg = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, x, zero);
  Value y = arith::SelectOp::create(b, l, pos, fconst(b, l, x, 1.0), zero);
  return arith::SelectOp::create(b, l, neg, fconst(b, l, x, -1.0), y)
      .getResult();
}

/// The float-only unary operators.
const struct {
  const char *name;
  UnaryBuilder build;
} kFloatUnaryOps[] = {
    {"Exp", mathUnary<math::ExpOp>},
    {"Log", mathUnary<math::LogOp>},
    {"Sqrt", mathUnary<math::SqrtOp>},
    {"Erf", mathUnary<math::ErfOp>},
    {"Tanh", mathUnary<math::TanhOp>},
    {"Sin", mathUnary<math::SinOp>},
    {"Cos", mathUnary<math::CosOp>},
    {"Tan", mathUnary<math::TanOp>},
    {"Asin", mathUnary<math::AsinOp>},
    {"Acos", mathUnary<math::AcosOp>},
    {"Atan", mathUnary<math::AtanOp>},
    {"Sinh", mathUnary<math::SinhOp>},
    {"Cosh", mathUnary<math::CoshOp>},
    {"Asinh", mathUnary<math::AsinhOp>},
    {"Acosh", mathUnary<math::AcoshOp>},
    {"Atanh", mathUnary<math::AtanhOp>},
    {"Floor", mathUnary<math::FloorOp>},
    {"Ceil", mathUnary<math::CeilOp>},
    {"Round", mathUnary<math::RoundEvenOp>},
    {"Reciprocal", buildReciprocal},
    {"Sigmoid", buildSigmoid},
    {"Relu", buildRelu},
    {"LeakyRelu", buildLeakyRelu},
    {"Elu", buildElu},
    {"Selu", buildSelu},
    {"HardSigmoid", buildHardSigmoid},
    {"HardSwish", buildHardSwish},
    {"Softplus", buildSoftplus},
    {"Softsign", buildSoftsign},
    {"Sign", buildSign},
};

// -- unary and n-ary operators on floats and integers -------------------------

Results importNeg(NodeContext &ctx) {
  return mapInputs(
      ctx, {0}, 0,
      [](OpBuilder &b, Location l, ValueRange a, DType t) -> Value {
        if (isFloatDType(t))
          return arith::NegFOp::create(b, l, a[0]);
        return arith::SubIOp::create(
            b, l, scalarConstant(b, l, a[0].getType(), 0), a[0]);
      });
}

Results importAbs(NodeContext &ctx) {
  return mapInputs(
      ctx, {0}, 0,
      [](OpBuilder &b, Location l, ValueRange a, DType t) -> Value {
        if (isFloatDType(t))
          return math::AbsFOp::create(b, l, a[0]);
        if (isUnsignedDType(t))
          return a[0];
        return math::AbsIOp::create(b, l, a[0]);
      });
}

/// A two-operand op that is the same for every element type it takes.
template <typename OpTy>
Value binaryOp(OpBuilder &b, Location l, Value x, Value y) {
  return OpTy::create(b, l, x, y).getResult();
}

/// An integer op with no signed and unsigned variants.
template <typename OpTy>
Value integerOp(OpBuilder &b, Location l, Value x, Value y, bool) {
  return OpTy::create(b, l, x, y).getResult();
}

/// An integer op with signed and unsigned variants.
template <typename SignedOp, typename UnsignedOp>
Value signedOp(OpBuilder &b, Location l, Value x, Value y, bool isUnsigned) {
  if (isUnsigned)
    return UnsignedOp::create(b, l, x, y);
  return SignedOp::create(b, l, x, y);
}

/// The arithmetic operators (variadic ones fold left over their inputs):
/// the op on floats and the op on integers.
const struct {
  const char *name;
  Value (*onFloat)(OpBuilder &, Location, Value, Value);
  Value (*onInt)(OpBuilder &, Location, Value, Value, bool isUnsigned);
} kArithmeticOps[] = {
    {"Add", binaryOp<arith::AddFOp>, integerOp<arith::AddIOp>},
    {"Sum", binaryOp<arith::AddFOp>, integerOp<arith::AddIOp>},
    {"Sub", binaryOp<arith::SubFOp>, integerOp<arith::SubIOp>},
    {"Mul", binaryOp<arith::MulFOp>, integerOp<arith::MulIOp>},
    {"Div", binaryOp<arith::DivFOp>, signedOp<arith::DivSIOp, arith::DivUIOp>},
    {"Max", binaryOp<arith::MaximumFOp>,
     signedOp<arith::MaxSIOp, arith::MaxUIOp>},
    {"Min", binaryOp<arith::MinimumFOp>,
     signedOp<arith::MinSIOp, arith::MinUIOp>},
};

/// The comparisons: predicates on floats, signed and unsigned integers.
const struct {
  const char *name;
  arith::CmpFPredicate onFloat;
  arith::CmpIPredicate onSigned, onUnsigned;
} kComparisonOps[] = {
    {"Equal", arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq,
     arith::CmpIPredicate::eq},
    {"Greater", arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt,
     arith::CmpIPredicate::ugt},
    {"Less", arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt,
     arith::CmpIPredicate::ult},
    {"GreaterOrEqual", arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge,
     arith::CmpIPredicate::uge},
    {"LessOrEqual", arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle,
     arith::CmpIPredicate::ule},
};

} // namespace

void addElementwiseOps(OpTable &t) {
  for (const auto &op : kFloatUnaryOps)
    t[op.name] = unaryFloat(op.build);
  t["Neg"] = importNeg;
  t["Abs"] = importAbs;
  t["Mod"] = importMod;
  for (const auto &op : kArithmeticOps)
    t[op.name] = arithmetic(op.onFloat, op.onInt);
  t["Mean"] = importMean;
  t["Pow"] = importPow;
  t["PRelu"] = importPRelu;
  t["Clip"] = importClip;
  t["Cast"] = importCast;
  t["CastLike"] = importCast;
  t["Where"] = importWhere;
  t["Not"] = importNot;
  t["IsNaN"] = importIsNaN;
  t["IsInf"] = importIsInf;
  t["And"] = logical<arith::AndIOp>();
  t["Or"] = logical<arith::OrIOp>();
  t["Xor"] = logical<arith::XOrIOp>();
  for (const auto &op : kComparisonOps)
    t[op.name] = comparison(op.onFloat, op.onSigned, op.onUnsigned);
}

} // namespace mp::onnx_import
