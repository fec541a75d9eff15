//===- FakeQuant.cpp - fake quantization for QAT --------------------------===//
//
// Quantization-aware training: the loss function's int8-eligible
// contractions read their inputs rounded to the int8 grid (mp.fake_quant),
// weights per output channel, activations through a named observer.
//
//===----------------------------------------------------------------------===//

#include "QuantizeBuilders.h"

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"
#include "mp/Transforms/Quantization.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPFAKEQUANT
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

SmallVector<FakeQuantTarget> mlir::mp::fakeQuantTargets(func::FuncOp func) {
  SmallVector<FakeQuantTarget> targets;
  llvm::StringMap<unsigned> uses;
  func.walk([&](linalg::LinalgOp op) {
    // The ops and layouts --mp-quantize rewrites (QuantizePlan.cpp).
    FailureOr<quantize::ChannelDims> dims =
        quantize::int8ChannelDims(op.getOperation());
    if (failed(dims))
      return;
    if (op.getNumDpsInputs() != 2 || op->getNumResults() != 1 ||
        !quantize::isZeroFill(op.getDpsInitOperand(0)->get()))
      return;
    if (!llvm::all_of(op->getOperandTypes(), [](Type t) {
          auto tensor = dyn_cast<RankedTensorType>(t);
          return tensor && tensor.getElementType().isF32();
        }))
      return;
    auto weight = dyn_cast<BlockArgument>(op.getDpsInputOperand(1)->get());
    if (!weight || weight.getOwner()->getParentOp() != func)
      return;
    auto name = func.getArgAttrOfType<StringAttr>(weight.getArgNumber(),
                                                  kParamAttrName);
    if (!name)
      return;
    FakeQuantTarget target;
    target.op = op;
    target.channelDim = dims->weight;
    target.param = name.str();
    unsigned use = ++uses[name.getValue()];
    target.observer = target.param + ".input_amax";
    if (use > 1)
      target.observer += "." + std::to_string(use);
    targets.push_back(std::move(target));
  });
  return targets;
}

namespace {

struct FakeQuantPass : mp::impl::MPFakeQuantBase<FakeQuantPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> losses;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kLossAttrName) && !func.isExternal())
        losses.push_back(func);
    if (losses.empty()) {
      emitError(module.getLoc())
          << "mp-fake-quant: no function marked '" << kLossAttrName
          << "' to train with fake quantization";
      return signalPassFailure();
    }
    for (func::FuncOp loss : losses) {
      SmallVector<FakeQuantTarget> targets = fakeQuantTargets(loss);
      if (targets.empty()) {
        loss.emitError()
            << "mp-fake-quant: no linalg.matmul, linalg.batch_matmul or "
               "linalg.conv_2d_nchw_fchw on f32 with an mp.param weight and a "
               "zero-filled accumulator to fake-quantize";
        return signalPassFailure();
      }
      for (const FakeQuantTarget &target : targets)
        rewrite(target);
    }
  }

  void rewrite(const FakeQuantTarget &target) {
    linalg::LinalgOp op = target.op;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type f32 = b.getF32Type();
    OpOperand *activation = op.getDpsInputOperand(0);
    OpOperand *weight = op.getDpsInputOperand(1);

    Value x = activation->get();
    auto xScale =
        QuantScaleOp::create(b, loc, RankedTensorType::get({}, f32), x,
                             IntegerAttr(), b.getStringAttr(target.observer));
    activation->set(FakeQuantOp::create(b, loc, x.getType(), x,
                                        xScale.getScale(), IntegerAttr()));

    Value w = weight->get();
    auto wType = cast<RankedTensorType>(w.getType());
    IntegerAttr axis = b.getI64IntegerAttr(target.channelDim);
    auto wScale = QuantScaleOp::create(
        b, loc,
        RankedTensorType::get({wType.getDimSize(target.channelDim)}, f32), w,
        axis, StringAttr());
    weight->set(FakeQuantOp::create(b, loc, wType, w, wScale.getScale(), axis));
    ++numFakeQuantized;
  }
};

} // namespace
