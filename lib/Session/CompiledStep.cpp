//===- CompiledStep.cpp - what a session reads from its compiled step -----===//
//
// After mp-session-train, the step's entries say everything the session
// needs to call them: the shapes of x and the labels, the parameters and
// the optimizer state (mp.param, mp.state on the entries' arguments), the
// 16-bit weight copies (mp.converted, mp.copy_of) and the numerics probes.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/Session.h"

#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Entries.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace mp {

namespace {

using mlir::mp::entryInputCount;

std::vector<int64_t> shapeOf(Type type) {
  ArrayRef<int64_t> shape = cast<ShapedType>(type).getShape();
  return {shape.begin(), shape.end()};
}

/// The zero tensor named `name` of `type`'s shape.
HostTensor zeros(StringRef name, Type type) {
  HostTensor tensor;
  tensor.name = name.str();
  tensor.shape = shapeOf(type);
  tensor.data.assign(tensor.numElements(), 0.0f);
  return tensor;
}

/// The input arguments of `entry` marked `attr`, as zero tensors by name.
std::vector<HostTensor> inputsMarked(func::FuncOp entry, StringRef attr) {
  std::vector<HostTensor> tensors;
  for (unsigned i = 0; i < entryInputCount(entry); ++i)
    if (auto name = entry.getArgAttrOfType<StringAttr>(i, attr))
      tensors.push_back(zeros(name.getValue(), entry.getArgumentTypes()[i]));
  return tensors;
}

int64_t elementBytes(Type type) {
  return cast<ShapedType>(type).getElementTypeBitWidth() / 8;
}

/// What a batch argument of an entry holds; fails for other element types.
bool elementOf(Type type, CompiledEntries::Element &element) {
  Type e = cast<ShapedType>(type).getElementType();
  if (e.isF32())
    element = CompiledEntries::Element::F32;
  else if (e.isInteger(32))
    element = CompiledEntries::Element::I32;
  else if (e.isInteger(64))
    element = CompiledEntries::Element::I64;
  else
    return false;
  return true;
}

size_t batchBytes(const std::vector<int64_t> &shape,
                  CompiledEntries::Element element) {
  size_t bytes = element == CompiledEntries::Element::I64 ? 8 : 4;
  for (int64_t d : shape)
    bytes *= static_cast<size_t>(d);
  return bytes;
}

/// "<function>#<ordinal> ...": the function --mp-check-numerics probed.
std::string probedFunction(StringRef id) {
  return id.take_until([](char c) { return c == '#'; }).str();
}

} // namespace

size_t CompiledEntries::inputBytes() const {
  return batchBytes(inputShape, inputElement);
}
size_t CompiledEntries::labelBytes() const {
  return batchBytes(labelShape, labelElement);
}
size_t CompiledEntries::logitsBytes() const {
  return batchBytes(logitsShape, Element::F32);
}

int64_t Session::paramIndex(StringAttr name) const {
  for (auto [i, p] : llvm::enumerate(training.params))
    if (name && p.name == name.getValue())
      return static_cast<int64_t>(i);
  return -1;
}

bool Session::readTrainEntry(ModuleOp module, std::string &error) {
  auto train = module.lookupSymbol<func::FuncOp>("mp_train_entry");
  if (!train) {
    error = "the compiled step has no @mp_train_entry";
    return false;
  }
  // x may be images (B x C x H x W): each data row fills one sample.
  entries.inputShape = shapeOf(train.getArgumentTypes()[0]);
  entries.batch = entries.inputShape[0];
  int64_t elements =
      cast<ShapedType>(train.getArgumentTypes()[0]).getNumElements();
  entries.features = elements / entries.batch;
  entries.labelShape = shapeOf(train.getArgumentTypes()[1]);
  if (!elementOf(train.getArgumentTypes()[0], entries.inputElement) ||
      !elementOf(train.getArgumentTypes()[1], entries.labelElement)) {
    error = "the step's input and labels must hold f32, i32 or i64";
    return false;
  }
  // One-hot labels have the logits' shape; class ids one dimension less
  // (the prediction entry says how many classes).
  entries.logitsShape = entries.labelShape;
  entries.classes = entries.labelShape.back();
  training.params = inputsMarked(train, mlir::mp::kParamAttrName);
  training.state = inputsMarked(train, mlir::mp::kStateAttrName);
  training.sums.clear();
  if (entries.window > 1)
    for (const HostTensor &p : training.params) {
      HostTensor sum = p;
      sum.name = p.name + ".accumulator";
      training.sums.push_back(sum);
    }
  // The copies the step reads (the ones it writes come after them).
  entries.stepCopies.clear();
  for (unsigned i = entryInputCount(train); i < train.getNumArguments(); ++i) {
    auto copyOf =
        train.getArgAttrOfType<StringAttr>(i, mlir::mp::kCopyOfAttrName);
    if (copyOf && !train.getArgAttr(i, mlir::mp::kUpdateOfAttrName))
      entries.stepCopies.push_back(
          {paramIndex(copyOf), elementBytes(train.getArgumentTypes()[i])});
  }
  return true;
}

bool Session::readWeightCopies(func::FuncOp weights, std::string &error) {
  unsigned inputs = entryInputCount(weights);
  for (unsigned i = 0; i < inputs; ++i) {
    int64_t param = paramIndex(
        weights.getArgAttrOfType<StringAttr>(i, mlir::mp::kParamAttrName));
    if (param < 0) {
      error = "the prediction's weight conversion takes an argument that is "
              "not a parameter";
      return false;
    }
    entries.weightsArguments.push_back(param);
  }
  for (unsigned i = inputs; i < weights.getNumArguments(); ++i) {
    int64_t param = paramIndex(
        weights.getArgAttrOfType<StringAttr>(i, mlir::mp::kConvertedAttrName));
    Type type = weights.getArgumentTypes()[i];
    if (param < 0 || shapeOf(type) != training.params[param].shape) {
      error = "the prediction's weight conversion returns a copy of no "
              "parameter";
      return false;
    }
    entries.weightCopies.push_back({param, elementBytes(type)});
  }
  return true;
}

bool Session::readPredictArguments(func::FuncOp predict, std::string &error) {
  for (unsigned i = 1; i < entryInputCount(predict); ++i) {
    CompiledEntries::PredictArgument argument;
    if (auto copy = predict.getArgAttrOfType<StringAttr>(
            i, mlir::mp::kConvertedAttrName)) {
      int64_t param = paramIndex(copy);
      auto found = llvm::find_if(entries.weightCopies,
                                 [&](const CompiledEntries::WeightCopy &c) {
                                   return c.param == param;
                                 });
      if (found == entries.weightCopies.end()) {
        error = "the prediction reads a weight copy nothing makes";
        return false;
      }
      argument = {true, found - entries.weightCopies.begin()};
    } else {
      argument.index = paramIndex(
          predict.getArgAttrOfType<StringAttr>(i, mlir::mp::kParamAttrName));
      if (argument.index < 0) {
        error = "argument #" + std::to_string(i) +
                " of the prediction is not a parameter";
        return false;
      }
    }
    entries.predictArguments.push_back(argument);
  }
  return true;
}

bool Session::readPredictEntries(ModuleOp module, std::string &error) {
  entries.predictWeights = nullptr;
  entries.weightsArguments.clear();
  entries.weightCopies.clear();
  entries.predictArguments.clear();
  auto predict = module.lookupSymbol<func::FuncOp>("mp_predict_entry");
  hasPredict = static_cast<bool>(predict);
  // The logits are the prediction's last argument (it writes them).
  if (predict && predict.getNumArguments() > 0) {
    entries.logitsShape = shapeOf(predict.getArgumentTypes().back());
    entries.classes = entries.logitsShape.back();
  }
  auto weights = module.lookupSymbol<func::FuncOp>("mp_predict_weights_entry");
  // Without copies (f32, GPU, probes) the prediction takes every parameter.
  if (!predict || !weights)
    return true;
  return readWeightCopies(weights, error) &&
         readPredictArguments(predict, error);
}

void Session::readProbeSites(ModuleOp module) {
  sites.clear();
  module.walk([&](mlir::mp::ObserveOp observe) {
    ProbeSite site;
    site.function = probedFunction(observe.getId());
    Value input = observe.getInput();
    if (Operation *producer = input.getDefiningOp())
      site.op = producer->getName().getStringRef().str();
    site.location = mlir::mp::keepF32Location(observe.getLoc());
    Type element = cast<RankedTensorType>(input.getType()).getElementType();
    site.lowPrecision = element.isF16() || element.isBF16();
    sites[observe.getId().str()] = site;
  });
}

} // namespace mp
