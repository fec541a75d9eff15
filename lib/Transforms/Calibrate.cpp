//===- Calibrate.cpp - probes on the ops INT8 quantization rewrites -------===//
//
// Calibration measures the values that flow into and out of every
// contraction; the probes carry the ids the quantizer looks up.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Transforms/Passes.h"
#include "mp/Transforms/PrecisionAnalysis.h"
#include "mp/Transforms/Quantization.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPCALIBRATE
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

bool mlir::mp::isCalibrationTarget(Operation *op) {
  bool eligible =
      isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::Conv2DNchwFchwOp,
          linalg::Conv2DNhwcHwcfOp, linalg::Conv2DNhwcFhwcOp, linalg::Conv2DOp,
          tosa::MatMulOp, tosa::Conv2DOp, tosa::DepthwiseConv2DOp>(op);
  if (!eligible)
    return false;
  auto isFloatTensor = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && isa<FloatType>(tensor.getElementType());
  };
  return llvm::any_of(op->getResultTypes(), isFloatTensor);
}

SmallVector<OpOperand *> mlir::mp::calibratedInputs(Operation *op) {
  SmallVector<OpOperand *> inputs;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    for (OpOperand *operand : linalgOp.getDpsInputOperands())
      inputs.push_back(operand);
    return inputs;
  }
  // tosa: the data and weight operands (not zero points or biases).
  unsigned count = 2;
  for (unsigned i = 0; i < count && i < op->getNumOperands(); ++i)
    inputs.push_back(&op->getOpOperand(i));
  return inputs;
}

namespace {

struct CalibratePass : mp::impl::MPCalibrateBase<CalibratePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // Ids first: the probes themselves would shift the ordinals.
      llvm::DenseMap<Value, std::string> ids = valueIds(func);
      SmallVector<Operation *> targets;
      func.walk([&](Operation *op) {
        if (isCalibrationTarget(op))
          targets.push_back(op);
      });
      // (block, value) -> its probe, so a value is probed once per block.
      llvm::DenseMap<std::pair<Block *, Value>, Value> probed;
      OpBuilder b(func.getContext());
      for (Operation *op : targets) {
        for (OpOperand *operand : calibratedInputs(op)) {
          Value value = operand->get();
          auto id = ids.find(value);
          if (id == ids.end())
            continue; // not a float tensor the analysis numbers
          Value &probe = probed[{op->getBlock(), value}];
          if (!probe) {
            b.setInsertionPoint(op);
            probe = ObserveOp::create(b, op->getLoc(), value.getType(), value,
                                      id->second);
            ++numProbes;
          }
          operand->set(probe);
        }
        for (Value result : op->getResults()) {
          auto id = ids.find(result);
          if (id == ids.end())
            continue;
          b.setInsertionPointAfter(op);
          auto probe = ObserveOp::create(b, op->getLoc(), result.getType(),
                                         result, id->second);
          result.replaceAllUsesExcept(probe, probe);
          probed[{op->getBlock(), result}] = probe;
          ++numProbes;
        }
      }
    }
  }
};

} // namespace
