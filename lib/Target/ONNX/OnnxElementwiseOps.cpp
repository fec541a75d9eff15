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
  for (unsigned i : which)
    if (ctx.dtype(i) != inType && which.size() > 1 &&
        ctx.node.op_type() != "Where" && ctx.node.op_type() != "Pow" &&
        ctx.node.op_type() != "PRelu") {
      ctx.error() << "inputs have different element types ("
                  << dtypeName(inType) << " and " << dtypeName(ctx.dtype(i))
                  << ")";
      return failure();
    }
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

Results importClip(NodeContext &ctx) {
  DType t = ctx.dtype(0);
  if (isBoolDType(t)) {
    ctx.error() << "BOOL inputs are not supported";
    return failure();
  }
  bool isFloat = isFloatDType(t), isUnsigned = isUnsignedDType(t);
  Type elem = ctx.type(0).getElementType();
  // Bounds: attributes before opset 11, optional scalar inputs from 11.
  std::optional<double> lo, hi;
  Value loValue, hiValue;
  if (ctx.opset < 11) {
    lo = ctx.getFloat("min", -std::numeric_limits<float>::max());
    hi = ctx.getFloat("max", std::numeric_limits<float>::max());
  } else {
    for (unsigned i = 1; i <= 2; ++i) {
      if (!ctx.hasInput(i))
        continue;
      if (ctx.rank(i) != 0 && ctx.type(i).getNumElements() != 1) {
        ctx.error() << (i == 1 ? "min" : "max") << " must be a scalar";
        return failure();
      }
      Value v = reshape(ctx.b, ctx.loc, ctx.input(i), {});
      Value s = tensor::ExtractOp::create(ctx.b, ctx.loc, v, ValueRange{});
      (i == 1 ? loValue : hiValue) = s;
    }
  }
  if (lo)
    loValue = scalarConstant(ctx.b, ctx.loc, elem, *lo);
  if (hi)
    hiValue = scalarConstant(ctx.b, ctx.loc, elem, *hi);
  return mapInputs(ctx, {0}, 0,
                   [&](OpBuilder &b, Location loc, ValueRange a, DType) {
                     Value x = a[0];
                     if (loValue)
                       x = isFloat ? arith::MaximumFOp::create(b, loc, x,
                                                               loValue)
                                         .getResult()
                           : isUnsigned
                               ? arith::MaxUIOp::create(b, loc, x, loValue)
                                     .getResult()
                               : arith::MaxSIOp::create(b, loc, x, loValue)
                                     .getResult();
                     if (hiValue)
                       x = isFloat ? arith::MinimumFOp::create(b, loc, x,
                                                               hiValue)
                                         .getResult()
                           : isUnsigned
                               ? arith::MinUIOp::create(b, loc, x, hiValue)
                                     .getResult()
                               : arith::MinSIOp::create(b, loc, x, hiValue)
                                     .getResult();
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

} // namespace

void addElementwiseOps(OpTable &t) {
  using B = OpBuilder;
  using L = Location;
  using N = NodeContext;
  t["Exp"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::ExpOp::create(b, l, x).getResult();
  });
  t["Log"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::LogOp::create(b, l, x).getResult();
  });
  t["Sqrt"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::SqrtOp::create(b, l, x).getResult();
  });
  t["Erf"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::ErfOp::create(b, l, x).getResult();
  });
  t["Tanh"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::TanhOp::create(b, l, x).getResult();
  });
  t["Sin"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::SinOp::create(b, l, x).getResult();
  });
  t["Cos"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::CosOp::create(b, l, x).getResult();
  });
#define MP_ONNX_MATH_UNARY(NAME, OP)                                           \
  t[NAME] = unaryFloat([](B &b, L l, Value x, N &) {                          \
    return math::OP::create(b, l, x).getResult();                             \
  });
  MP_ONNX_MATH_UNARY("Tan", TanOp)
  MP_ONNX_MATH_UNARY("Asin", AsinOp)
  MP_ONNX_MATH_UNARY("Acos", AcosOp)
  MP_ONNX_MATH_UNARY("Atan", AtanOp)
  MP_ONNX_MATH_UNARY("Sinh", SinhOp)
  MP_ONNX_MATH_UNARY("Cosh", CoshOp)
  MP_ONNX_MATH_UNARY("Asinh", AsinhOp)
  MP_ONNX_MATH_UNARY("Acosh", AcoshOp)
  MP_ONNX_MATH_UNARY("Atanh", AtanhOp)
#undef MP_ONNX_MATH_UNARY
  t["Mod"] = importMod;
  t["Floor"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::FloorOp::create(b, l, x).getResult();
  });
  t["Ceil"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::CeilOp::create(b, l, x).getResult();
  });
  t["Round"] = unaryFloat([](B &b, L l, Value x, N &) {
    return math::RoundEvenOp::create(b, l, x).getResult();
  });
  t["Reciprocal"] = unaryFloat([](B &b, L l, Value x, N &) {
    return arith::DivFOp::create(b, l, fconst(b, l, x, 1.0), x).getResult();
  });
  t["Sigmoid"] = unaryFloat([](B &b, L l, Value x, N &) {
    return sigmoid(b, l, x);
  });
  t["Relu"] = unaryFloat([](B &b, L l, Value x, N &) {
    return arith::MaximumFOp::create(b, l, x, fconst(b, l, x, 0.0))
        .getResult();
  });
  t["LeakyRelu"] = unaryFloat([](B &b, L l, Value x, N &ctx) {
    Value alpha = fconst(b, l, x, ctx.getFloat("alpha", 0.01f));
    Value neg = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, x,
                                      fconst(b, l, x, 0.0));
    return arith::SelectOp::create(b, l, neg,
                                   arith::MulFOp::create(b, l, x, alpha), x)
        .getResult();
  });
  auto eluLike = [](B &b, L l, Value x, double alpha, double gamma) {
    Value zero = fconst(b, l, x, 0.0);
    Value em1 = arith::SubFOp::create(b, l, math::ExpOp::create(b, l, x),
                                      fconst(b, l, x, 1.0));
    Value neg = arith::MulFOp::create(b, l, fconst(b, l, x, alpha), em1);
    Value isNeg =
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLE, x, zero);
    Value y = arith::SelectOp::create(b, l, isNeg, neg, x);
    return gamma == 1.0
               ? y
               : arith::MulFOp::create(b, l, fconst(b, l, x, gamma), y)
                     .getResult();
  };
  t["Elu"] = unaryFloat([eluLike](B &b, L l, Value x, N &ctx) {
    return eluLike(b, l, x, ctx.getFloat("alpha", 1.0f), 1.0);
  });
  t["Selu"] = unaryFloat([eluLike](B &b, L l, Value x, N &ctx) {
    return eluLike(b, l, x, ctx.getFloat("alpha", 1.67326319217681884765625f),
                   ctx.getFloat("gamma", 1.05070102214813232421875f));
  });
  t["HardSigmoid"] = unaryFloat([](B &b, L l, Value x, N &ctx) {
    Value ax = arith::MulFOp::create(
        b, l, fconst(b, l, x, ctx.getFloat("alpha", 0.2f)), x);
    Value y =
        arith::AddFOp::create(b, l, ax, fconst(b, l, x, ctx.getFloat("beta", 0.5f)));
    return clamp(b, l, y, fconst(b, l, x, 0.0), fconst(b, l, x, 1.0));
  });
  t["HardSwish"] = unaryFloat([](B &b, L l, Value x, N &) {
    Value y = arith::AddFOp::create(
        b, l, arith::MulFOp::create(b, l, fconst(b, l, x, 1.0 / 6.0), x),
        fconst(b, l, x, 0.5));
    Value h = clamp(b, l, y, fconst(b, l, x, 0.0), fconst(b, l, x, 1.0));
    return arith::MulFOp::create(b, l, x, h).getResult();
  });
  t["Softplus"] = unaryFloat([](B &b, L l, Value x, N &) {
    // max(x, 0) + log1p(exp(-|x|)): log(1 + exp(x)) without overflow.
    Value zero = fconst(b, l, x, 0.0);
    Value negAbs =
        arith::NegFOp::create(b, l, math::AbsFOp::create(b, l, x));
    Value tail = math::Log1pOp::create(b, l, math::ExpOp::create(b, l, negAbs));
    return arith::AddFOp::create(b, l, arith::MaximumFOp::create(b, l, x, zero),
                                 tail)
        .getResult();
  });
  t["Softsign"] = unaryFloat([](B &b, L l, Value x, N &) {
    Value d = arith::AddFOp::create(b, l, fconst(b, l, x, 1.0),
                                    math::AbsFOp::create(b, l, x));
    return arith::DivFOp::create(b, l, x, d).getResult();
  });
  t["Sign"] = unaryFloat([](B &b, L l, Value x, N &) {
    Value zero = fconst(b, l, x, 0.0);
    Value pos = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, x, zero);
    Value neg = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, x, zero);
    Value y = arith::SelectOp::create(b, l, pos, fconst(b, l, x, 1.0), zero);
    return arith::SelectOp::create(b, l, neg, fconst(b, l, x, -1.0), y)
        .getResult();
  });
  t["Neg"] = [](N &ctx) -> Results {
    return mapInputs(ctx, {0}, 0,
                     [](B &b, L l, ValueRange a, DType t) -> Value {
                       if (isFloatDType(t))
                         return arith::NegFOp::create(b, l, a[0]);
                       return arith::SubIOp::create(
                           b, l, scalarConstant(b, l, a[0].getType(), 0), a[0]);
                     });
  };
  t["Abs"] = [](N &ctx) -> Results {
    return mapInputs(ctx, {0}, 0,
                     [](B &b, L l, ValueRange a, DType t) -> Value {
                       if (isFloatDType(t))
                         return math::AbsFOp::create(b, l, a[0]);
                       if (isUnsignedDType(t))
                         return a[0];
                       return math::AbsIOp::create(b, l, a[0]);
                     });
  };

  t["Add"] = arithmetic(
      [](B &b, L l, Value x, Value y) {
        return arith::AddFOp::create(b, l, x, y).getResult();
      },
      [](B &b, L l, Value x, Value y, bool) {
        return arith::AddIOp::create(b, l, x, y).getResult();
      });
  t["Sum"] = t["Add"];
  t["Sub"] = arithmetic(
      [](B &b, L l, Value x, Value y) {
        return arith::SubFOp::create(b, l, x, y).getResult();
      },
      [](B &b, L l, Value x, Value y, bool) {
        return arith::SubIOp::create(b, l, x, y).getResult();
      });
  t["Mul"] = arithmetic(
      [](B &b, L l, Value x, Value y) {
        return arith::MulFOp::create(b, l, x, y).getResult();
      },
      [](B &b, L l, Value x, Value y, bool) {
        return arith::MulIOp::create(b, l, x, y).getResult();
      });
  t["Div"] = arithmetic(
      [](B &b, L l, Value x, Value y) {
        return arith::DivFOp::create(b, l, x, y).getResult();
      },
      [](B &b, L l, Value x, Value y, bool isUnsigned) -> Value {
        if (isUnsigned)
          return arith::DivUIOp::create(b, l, x, y);
        return arith::DivSIOp::create(b, l, x, y);
      });
  t["Max"] = arithmetic(
      [](B &b, L l, Value x, Value y) {
        return arith::MaximumFOp::create(b, l, x, y).getResult();
      },
      [](B &b, L l, Value x, Value y, bool isUnsigned) -> Value {
        if (isUnsigned)
          return arith::MaxUIOp::create(b, l, x, y);
        return arith::MaxSIOp::create(b, l, x, y);
      });
  t["Min"] = arithmetic(
      [](B &b, L l, Value x, Value y) {
        return arith::MinimumFOp::create(b, l, x, y).getResult();
      },
      [](B &b, L l, Value x, Value y, bool isUnsigned) -> Value {
        if (isUnsigned)
          return arith::MinUIOp::create(b, l, x, y);
        return arith::MinSIOp::create(b, l, x, y);
      });
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
  t["Equal"] = comparison(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq,
                          arith::CmpIPredicate::eq);
  t["Greater"] = comparison(arith::CmpFPredicate::OGT,
                            arith::CmpIPredicate::sgt, arith::CmpIPredicate::ugt);
  t["Less"] = comparison(arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt,
                         arith::CmpIPredicate::ult);
  t["GreaterOrEqual"] =
      comparison(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge,
                 arith::CmpIPredicate::uge);
  t["LessOrEqual"] = comparison(arith::CmpFPredicate::OLE,
                                arith::CmpIPredicate::sle,
                                arith::CmpIPredicate::ule);
}

} // namespace mp::onnx_import
