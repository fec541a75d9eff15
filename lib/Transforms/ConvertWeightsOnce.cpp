//===- ConvertWeightsOnce.cpp - f16/bf16 weights made once, not per call --===//
//
// After --auto-mixed-precision, an inference function converts each f32
// weight to f16/bf16 on every call: each call holds the low-precision copy
// next to the f32 weight and pays the conversion. This pass moves those
// conversions into @<f>_convert_weights, to be run once by whoever holds
// the weights (mp-run's InferSession), and gives <f> the copies as
// arguments; f32 weights <f> no longer reads are dropped from it.
//
//===----------------------------------------------------------------------===//

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPCONVERTWEIGHTSONCE
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

struct ConvertWeightsOncePass
    : public mlir::mp::impl::MPConvertWeightsOnceBase<ConvertWeightsOncePass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func->hasAttr(kPredictAttrName))
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(runOnFunction(func)))
        return signalPassFailure();
  }

  LogicalResult runOnFunction(func::FuncOp func) {
    if (func->hasAttr(kConvertWeightsAttrName))
      return success(); // already done
    Block &entry = func.getBody().front();
    // One copy per (weight, type); a weight wanted in two types keeps its
    // second conversion inline (the copy is named by the weight).
    struct Copy {
      unsigned arg;
      StringAttr name;
      RankedTensorType type;
      SmallVector<linalg::GenericOp> conversions;
    };
    SmallVector<Copy> copies;
    for (BlockArgument arg : entry.getArguments()) {
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttrName);
      if (!name)
        continue;
      for (Operation *user : arg.getUsers()) {
        auto generic = dyn_cast<linalg::GenericOp>(user);
        if (!generic || !isWholeTruncation(generic) ||
            generic.getDpsInputOperand(0)->get() != arg)
          continue;
        auto type = cast<RankedTensorType>(generic.getResult(0).getType());
        auto it = llvm::find_if(
            copies, [&](const Copy &c) { return c.arg == arg.getArgNumber(); });
        if (it == copies.end())
          copies.push_back({arg.getArgNumber(), name, type, {generic}});
        else if (it->type == type)
          it->conversions.push_back(generic);
      }
    }
    if (copies.empty())
      return success();

    MLIRContext *context = func.getContext();
    Builder b(context);
    auto module = func->getParentOfType<ModuleOp>();
    std::string name = (func.getSymName() + "_convert_weights").str();
    while (module.lookupSymbol(name))
      name += "_";

    // @<f>_convert_weights(f32 weights) -> (low-precision copies).
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    for (const Copy &c : copies) {
      argTypes.push_back(entry.getArgument(c.arg).getType());
      argAttrs.push_back(func.getArgAttrDict(c.arg));
      resultTypes.push_back(c.type);
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr(kConvertedAttrName, c.name)));
    }
    OpBuilder ob(func);
    ob.setInsertionPointAfter(func);
    auto convertFn = func::FuncOp::create(
        ob, func.getLoc(), name, ob.getFunctionType(argTypes, resultTypes));
    convertFn.setAllArgAttrs(argAttrs);
    convertFn.setAllResultAttrs(resultAttrs);
    Block *body = convertFn.addEntryBlock();
    ob.setInsertionPointToStart(body);
    SmallVector<Value> results;
    IRMapping mapping;
    for (auto [i, c] : llvm::enumerate(copies)) {
      linalg::GenericOp first = c.conversions.front();
      mapping.map(entry.getArgument(c.arg), body->getArgument(i));
      // Its init (a tensor.empty) comes along.
      for (Value init : first.getDpsInits())
        if (Operation *def = init.getDefiningOp())
          mapping.map(init, ob.clone(*def, mapping)->getResult(0));
      results.push_back(ob.clone(*first, mapping)->getResult(0));
    }
    func::ReturnOp::create(ob, func.getLoc(), results);

    // <f> takes the copies in place of the conversions.
    SmallVector<DictionaryAttr> newArgAttrs;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      newArgAttrs.push_back(func.getArgAttrDict(i)
                                ? func.getArgAttrDict(i)
                                : DictionaryAttr::get(context, {}));
    for (const Copy &c : copies) {
      BlockArgument copy = entry.addArgument(c.type, func.getLoc());
      newArgAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr(kConvertedAttrName, c.name)));
      for (linalg::GenericOp conversion : c.conversions) {
        conversion.getResult(0).replaceAllUsesWith(copy);
        conversion.erase();
      }
      ++numConverted;
      numBytesPerCall +=
          c.type.getNumElements() * (c.type.getElementTypeBitWidth() / 8);
    }
    func.setType(FunctionType::get(context, entry.getArgumentTypes(),
                                   func.getResultTypes()));
    func.setAllArgAttrs(newArgAttrs);
    func->setAttr(kConvertWeightsAttrName,
                  FlatSymbolRefAttr::get(context, convertFn.getSymName()));
    // f32 weights the function no longer reads.
    llvm::BitVector unused(func.getNumArguments());
    for (const Copy &c : copies)
      if (entry.getArgument(c.arg).use_empty())
        unused.set(c.arg);
    if (unused.any() && failed(func.eraseArguments(unused)))
      return func.emitError("mp-convert-weights-once: cannot drop the f32 "
                            "weights @")
             << func.getSymName() << " no longer reads";
    return success();
  }
};

} // namespace
