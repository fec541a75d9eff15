//===- ConvertWeightsOnce.cpp - f16/bf16 weights made once, not per call --===//
//
// After --mp-auto-mixed-precision, an inference function converts each f32
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

/// One low-precision copy of a weight: the weight's argument, its name,
/// the copy's type and the conversions it replaces.
struct WeightCopy {
  unsigned arg;
  StringAttr name;
  RankedTensorType type;
  SmallVector<linalg::GenericOp> conversions;
};

/// Whether \p user is a whole-tensor truncation of \p arg.
linalg::GenericOp truncationOf(Operation *user, BlockArgument arg) {
  auto generic = dyn_cast<linalg::GenericOp>(user);
  if (!generic || !isWholeTruncation(generic) ||
      generic.getDpsInputOperand(0)->get() != arg)
    return {};
  return generic;
}

/// Records \p conversion of weight \p arg (named \p name) in \p copies:
/// one copy per weight; a weight wanted in two types keeps its second
/// conversion inline (the copy is named by the weight).
void addConversion(SmallVectorImpl<WeightCopy> &copies, BlockArgument arg,
                   StringAttr name, linalg::GenericOp conversion) {
  auto type = cast<RankedTensorType>(conversion.getResult(0).getType());
  auto it = llvm::find_if(
      copies, [&](const WeightCopy &c) { return c.arg == arg.getArgNumber(); });
  if (it == copies.end())
    copies.push_back({arg.getArgNumber(), name, type, {conversion}});
  else if (it->type == type)
    it->conversions.push_back(conversion);
}

/// The copies to make of \p func's weights (mp.param arguments).
SmallVector<WeightCopy> findWeightCopies(func::FuncOp func) {
  SmallVector<WeightCopy> copies;
  for (BlockArgument arg : func.getBody().front().getArguments()) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttrName);
    if (!name)
      continue;
    for (Operation *user : arg.getUsers())
      if (linalg::GenericOp conversion = truncationOf(user, arg))
        addConversion(copies, arg, name, conversion);
  }
  return copies;
}

/// `<f>_convert_weights`, with as many `_` appended as make it unused.
std::string convertFunctionName(func::FuncOp func) {
  auto module = func->getParentOfType<ModuleOp>();
  std::string name = (func.getSymName() + "_convert_weights").str();
  while (module.lookupSymbol(name))
    name += "_";
  return name;
}

DictionaryAttr convertedAttrs(Builder &b, const WeightCopy &c) {
  return b.getDictionaryAttr(b.getNamedAttr(kConvertedAttrName, c.name));
}

/// Builds @<f>_convert_weights(f32 weights) -> (low-precision copies)
/// after \p func: the first conversion of each copy, with its init.
func::FuncOp buildConvertFunction(func::FuncOp func,
                                  ArrayRef<WeightCopy> copies) {
  Block &entry = func.getBody().front();
  Builder b(func.getContext());
  SmallVector<Type> argTypes, resultTypes;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  for (const WeightCopy &c : copies) {
    argTypes.push_back(entry.getArgument(c.arg).getType());
    argAttrs.push_back(func.getArgAttrDict(c.arg));
    resultTypes.push_back(c.type);
    resultAttrs.push_back(convertedAttrs(b, c));
  }
  OpBuilder ob(func);
  ob.setInsertionPointAfter(func);
  auto convertFn =
      func::FuncOp::create(ob, func.getLoc(), convertFunctionName(func),
                           ob.getFunctionType(argTypes, resultTypes));
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
  return convertFn;
}

/// \p func's argument attributes, an empty dictionary where it has none.
SmallVector<DictionaryAttr> argAttrDicts(func::FuncOp func) {
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    DictionaryAttr dict = func.getArgAttrDict(i);
    attrs.push_back(dict ? dict : DictionaryAttr::get(func.getContext(), {}));
  }
  return attrs;
}

/// f32 weights the function no longer reads are dropped from it.
LogicalResult dropUnreadWeights(func::FuncOp func,
                                ArrayRef<WeightCopy> copies) {
  Block &entry = func.getBody().front();
  llvm::BitVector unused(func.getNumArguments());
  for (const WeightCopy &c : copies)
    if (entry.getArgument(c.arg).use_empty())
      unused.set(c.arg);
  if (unused.any() && failed(func.eraseArguments(unused)))
    return func.emitError("mp-convert-weights-once: cannot drop the f32 "
                          "weights @")
           << func.getSymName() << " no longer reads";
  return success();
}

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

  /// <f> takes the copies as new arguments in place of the conversions.
  void takeCopiesAsArguments(func::FuncOp func, ArrayRef<WeightCopy> copies) {
    Block &entry = func.getBody().front();
    Builder b(func.getContext());
    SmallVector<DictionaryAttr> newArgAttrs = argAttrDicts(func);
    for (const WeightCopy &c : copies) {
      BlockArgument copy = entry.addArgument(c.type, func.getLoc());
      newArgAttrs.push_back(convertedAttrs(b, c));
      for (linalg::GenericOp conversion : c.conversions) {
        conversion.getResult(0).replaceAllUsesWith(copy);
        conversion.erase();
      }
      ++numConverted;
      numBytesPerCall +=
          c.type.getNumElements() * (c.type.getElementTypeBitWidth() / 8);
    }
    func.setType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                   func.getResultTypes()));
    func.setAllArgAttrs(newArgAttrs);
  }

  LogicalResult runOnFunction(func::FuncOp func) {
    if (func->hasAttr(kConvertWeightsAttrName))
      return success(); // already done
    SmallVector<WeightCopy> copies = findWeightCopies(func);
    if (copies.empty())
      return success();
    func::FuncOp convertFn = buildConvertFunction(func, copies);
    takeCopiesAsArguments(func, copies);
    func->setAttr(
        kConvertWeightsAttrName,
        FlatSymbolRefAttr::get(func.getContext(), convertFn.getSymName()));
    return dropUnreadWeights(func, copies);
  }
};

} // namespace
