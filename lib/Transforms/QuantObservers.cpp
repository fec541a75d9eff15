//===- QuantObservers.cpp - QAT activation observers as step state --------===//
//
// The activation scales of quantization-aware training come from moving
// averages of max |x| that live in the training step's optimizer state, so
// that checkpoints carry them to int8 inference.
//
//===----------------------------------------------------------------------===//

#include "QuantizeBuilders.h"

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPQUANTOBSERVERS
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

/// Index of the argument or result of `func` carrying the unit attribute
/// `name`, or -1.
int64_t argumentWith(func::FuncOp func, StringRef name) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, name))
      return i;
  return -1;
}
int64_t resultWith(func::FuncOp func, StringRef name) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, name))
      return i;
  return -1;
}

/// A rank-0 f32 tensor holding `value`.
Value scalarTensor(OpBuilder &b, Location loc, Value value) {
  Value empty =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getF32Type());
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

struct QuantObserversPass : mp::impl::MPQuantObserversBase<QuantObserversPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(averagingConstant > 0 && averagingConstant <= 1) || freezeAfter < 0) {
      emitError(module.getLoc())
          << "mp-quant-observers needs 0 < averaging-constant <= 1 and "
             "freeze-after >= 0";
      return signalPassFailure();
    }
    bool found = false;
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      SmallVector<QuantScaleOp> observed;
      func.walk([&](QuantScaleOp op) {
        if (op.getObserver())
          observed.push_back(op);
      });
      if (observed.empty())
        continue;
      // The loss and its gradient function keep the batch's own scales.
      if (func->hasAttr(kLossAttrName) || func->hasAttr(kGradientOfAttrName))
        continue;
      if (func->hasAttr(kAccumulationOfAttrName)) {
        func.emitError()
            << "mp-quant-observers: quantization-aware training with "
               "gradient accumulation is not supported (the micro-batches "
               "of a window have no observer state to update); train with "
               "accumulate=1";
        return signalPassFailure();
      }
      if (failed(thread(func, observed)))
        return signalPassFailure();
      found = true;
    }
    if (!found) {
      emitError(module.getLoc())
          << "mp-quant-observers: no training step (a function with an '"
          << kStepAttrName
          << "' argument) reads an observed mp.quant_scale: run "
             "--mp-fake-quant before --mp-autodiff and --mp-optimizer";
      return signalPassFailure();
    }
  }

  LogicalResult thread(func::FuncOp step, SmallVector<QuantScaleOp> &observed) {
    int64_t stepArg = argumentWith(step, kStepAttrName);
    int64_t stepResult = resultWith(step, kStepAttrName);
    if (stepArg < 0 || stepResult < 0 || !step.getBody().hasOneBlock())
      return step.emitError()
             << "mp-quant-observers: '@" << step.getSymName()
             << "' reads observed scales but is not a training step (one "
                "block, an '"
             << kStepAttrName << "' argument and result)";
    llvm::StringSet<> names;
    for (QuantScaleOp op : observed)
      if (!names.insert(*op.getObserver()).second)
        return op->emitError() << "mp-quant-observers: observer '"
                               << *op.getObserver() << "' appears twice";

    MLIRContext *context = &getContext();
    Builder attrs(context);
    Type f32 = Float32Type::get(context);
    auto stateType = RankedTensorType::get({}, f32);
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    // Observers go after the optimizer's state, before the step counter,
    // in arguments and results alike: the session pairs the first results
    // (parameters, then state) with the arguments after x and labels.
    for (unsigned k = 0; k < observed.size(); ++k) {
      QuantScaleOp op = observed[k];
      auto name = attrs.getDictionaryAttr(attrs.getNamedAttr(
          kStateAttrName, attrs.getStringAttr(*op.getObserver())));
      unsigned argIndex = stepArg + k, resultIndex = stepResult + k;
      if (failed(step.insertArgument(argIndex, stateType, name, op.getLoc())))
        return failure();
      Value old = step.getArgument(argIndex);
      OpBuilder b(op);
      Value amax = update(b, op, old, step);
      Value updated = scalarTensor(b, op.getLoc(), amax);
      Value scale = scaleOf(b, op.getLoc(), amax);
      op.getScale().replaceAllUsesWith(scale);
      op.erase();
      ret->insertOperands(resultIndex, updated);
      if (failed(step.insertResult(resultIndex, stateType, name)))
        return failure();
      ++numObservers;
    }
    return success();
  }

  /// The observer's new max |x|: the batch's at first (0 = never seen),
  /// then a moving average; held from step `freezeAfter` on.
  Value update(OpBuilder &b, QuantScaleOp op, Value old, func::FuncOp step) {
    Location loc = op.getLoc();
    auto constant = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
    };
    // The batch's max |x|, measured in f32 whatever AMP decides later.
    linalg::GenericOp reduction =
        quantize::absMaxReduction(b, loc, op.getInput());
    reduction->setAttr(
        kPrecisionAttrName,
        FloatPrecisionAttr::get(b.getContext(), FloatPrecision::F32));
    Value batchMax = reduction.getResult(0);
    Value current = tensor::ExtractOp::create(b, loc, batchMax, ValueRange{});
    Value previous = tensor::ExtractOp::create(b, loc, old, ValueRange{});
    Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                       previous, constant(0.0));
    Value moved = arith::AddFOp::create(
        b, loc, previous,
        arith::MulFOp::create(
            b, loc, constant(averagingConstant),
            arith::SubFOp::create(b, loc, current, previous)));
    Value next = arith::SelectOp::create(b, loc, seen, moved, current);
    if (freezeAfter > 0) {
      Value count = step.getArgument(argumentWith(step, kStepAttrName));
      Value limit = arith::ConstantIntOp::create(
          b, loc, count.getType(), static_cast<int64_t>(freezeAfter));
      Value frozen = arith::AndIOp::create(
          b, loc, seen,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, count,
                                limit));
      next = arith::SelectOp::create(b, loc, frozen, previous, next);
    }
    return next;
  }

  /// amax / 127 as a rank-0 tensor (1 while amax is 0), as mp.quant_scale.
  Value scaleOf(OpBuilder &b, Location loc, Value amax) {
    auto constant = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
    };
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           amax, constant(0.0));
    Value scale = arith::SelectOp::create(
        b, loc, positive, arith::DivFOp::create(b, loc, amax, constant(127.0)),
        constant(1.0));
    return scalarTensor(b, loc, scale);
  }
};

} // namespace
