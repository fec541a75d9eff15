//===- Artifact.cpp - write and open mp-compile's artifacts ---------------===//
//
// An artifact (docs/artifacts.md) is the lowered session module as a shared
// object, followed by a metadata record and a fixed trailer:
//
//   [ELF shared object][metadata: JSON][trailer: 40 bytes]
//   trailer = u64 objectSize, u64 metadataSize, u64 checksum (CRC-32 of
//             the object and metadata bytes), u32 version, u32 0, "MPARTIFx"
//
// The dynamic loader ignores bytes after the ELF image, so dlopen takes the
// file as it is; the trailer is read (and checked) before dlopen, so a
// truncated, corrupt or foreign file is an error, not a crash. The object
// code calls the runtime (mprt_gemm, the counted heap, memrefCopy) through
// pointers `mp_import_<name>` that the loader binds, so the shared object
// needs nothing but libc and libm and the host needs no RTLD_GLOBAL.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/ArtifactFile.h"
#include "mp/Session/Hardware.h"
#include "mp/Session/JitEntry.h"
#include "mp/Session/Session.h"

#include "mprt/mprt.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Base64.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <numeric>
#include <thread>

using namespace mlir;

namespace mp {

namespace {

constexpr char kMagic[8] = {'M', 'P', 'A', 'R', 'T', 'I', 'F', 'x'};
// 3: the options are their declared text forms (TrainOptions.def), by
// option name.
constexpr uint32_t kVersion = 3;
constexpr size_t kTrailerSize = 40;

struct Trailer {
  uint64_t objectSize = 0, metadataSize = 0, checksum = 0;
  uint32_t version = 0;
};

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getU64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

/// The runtime functions the object code calls through `mp_import_<name>`:
/// what the JIT session binds (runtimeSymbols).
using Import = RuntimeSymbol;

const Import *findImport(llvm::StringRef name) {
  for (const Import &import : runtimeSymbols())
    if (name == import.name)
      return &import;
  return nullptr;
}

/// ExecutionEngine's `_mlir_<name>(void **)` wrappers (packFunctionArguments
/// in MLIR's ExecutionEngine.cpp, which is not public): the same unpacking,
/// so the artifact's entries take PackedArgs as invokePacked does.
void packFunctionArguments(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::IRBuilder<> builder(ctx);
  llvm::SmallVector<llvm::Function *> functions;
  for (llvm::Function &func : module.functions())
    if (!func.isDeclaration() && !func.hasLocalLinkage())
      functions.push_back(&func);
  for (llvm::Function *func : functions) {
    auto *type =
        llvm::FunctionType::get(builder.getVoidTy(), builder.getPtrTy(), false);
    auto *wrapper = llvm::cast<llvm::Function>(
        module.getOrInsertFunction("_mlir_" + func->getName().str(), type)
            .getCallee());
    auto *block = llvm::BasicBlock::Create(ctx);
    block->insertInto(wrapper);
    builder.SetInsertPoint(block);
    llvm::Value *argList = wrapper->arg_begin();
    llvm::SmallVector<llvm::Value *, 8> args;
    for (auto [index, arg] : llvm::enumerate(func->args())) {
      llvm::Value *argIndex = llvm::Constant::getIntegerValue(
          builder.getInt64Ty(), llvm::APInt(64, index));
      llvm::Value *argPtrPtr =
          builder.CreateGEP(builder.getPtrTy(), argList, argIndex);
      llvm::Value *argPtr = builder.CreateLoad(builder.getPtrTy(), argPtrPtr);
      args.push_back(builder.CreateLoad(arg.getType(), argPtr));
    }
    llvm::Value *result = builder.CreateCall(func, args);
    if (!result->getType()->isVoidTy()) {
      llvm::Value *retIndex = llvm::Constant::getIntegerValue(
          builder.getInt64Ty(), llvm::APInt(64, func->arg_size()));
      llvm::Value *retPtrPtr =
          builder.CreateGEP(builder.getPtrTy(), argList, retIndex);
      llvm::Value *retPtr = builder.CreateLoad(builder.getPtrTy(), retPtrPtr);
      builder.CreateStore(result, retPtr);
    }
    builder.CreateRetVoid();
  }
}

/// The runtime functions `module` calls: those the loader binds and any
/// other mprt_/mgpu function (which rewriteImports refuses).
llvm::SmallVector<llvm::Function *> runtimeDeclarations(llvm::Module &module) {
  llvm::SmallVector<llvm::Function *> declarations;
  for (llvm::Function &func : module.functions())
    if (func.isDeclaration() && !func.isIntrinsic() && !func.use_empty() &&
        (findImport(func.getName()) || func.getName().starts_with("mprt_") ||
         func.getName().starts_with("mgpu")))
      declarations.push_back(&func);
  return declarations;
}

/// Points each call of `func` at a load of its `mp_import_<name>` pointer
/// and erases the declaration; false when a use is not an instruction.
bool callThroughImport(llvm::Function *func, std::string &error) {
  llvm::Module &module = *func->getParent();
  auto *pointer = new llvm::GlobalVariable(
      module, llvm::PointerType::getUnqual(module.getContext()),
      /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantPointerNull::get(
          llvm::PointerType::getUnqual(module.getContext())),
      "mp_import_" + func->getName().str());
  llvm::SmallVector<llvm::Use *> uses;
  for (llvm::Use &use : func->uses())
    uses.push_back(&use);
  for (llvm::Use *use : uses) {
    auto *user = llvm::dyn_cast<llvm::Instruction>(use->getUser());
    if (!user || llvm::isa<llvm::PHINode>(user)) {
      error = "runtime function '" + func->getName().str() +
              "' is used other than by an instruction";
      return false;
    }
    llvm::IRBuilder<> builder(user);
    use->set(builder.CreateLoad(pointer->getValueType(), pointer,
                                func->getName() + ".import"));
  }
  func->eraseFromParent();
  return true;
}

/// Calls to runtime functions go through `mp_import_<name>` pointers the
/// loader binds (after optimization, so the JIT and the artifact optimize
/// the same IR). Fills `imports` with the names; false when the code needs a
/// runtime function the loader does not know.
bool rewriteImports(llvm::Module &module, std::vector<std::string> &imports,
                    std::string &error) {
  for (llvm::Function *func : runtimeDeclarations(module)) {
    if (!findImport(func->getName())) {
      error = "the compiled code calls runtime function '" +
              func->getName().str() + "', which artifacts cannot bind yet";
      return false;
    }
    std::string name = func->getName().str();
    if (!callThroughImport(func, error))
      return false;
    imports.push_back(name);
  }
  return true;
}

llvm::json::Array tensorsJson(const std::vector<HostTensor> &tensors) {
  llvm::json::Array array;
  for (const HostTensor &t : tensors)
    array.push_back(llvm::json::Object{
        {"name", t.name}, {"shape", artifactShape(t.shape)}, {"dtype", "f32"}});
  return array;
}

/// An internal function or variable made visible to the other pieces of
/// its module (hidden, so still not exported by the shared object).
void makeLinkable(llvm::GlobalValue &value) {
  if (!value.hasLocalLinkage())
    return;
  if (!value.hasName())
    value.setName("mp_piece_local");
  value.setLinkage(llvm::GlobalValue::ExternalLinkage);
  value.setVisibility(llvm::GlobalValue::HiddenVisibility);
}

/// Whether something other than an instruction (a variable's initializer)
/// names `function`: such functions stay with the variables, in piece 0.
bool namedByVariable(const llvm::Function &function) {
  return llvm::any_of(function.users(), [](const llvm::User *user) {
    return !llvm::isa<llvm::Instruction>(user);
  });
}

/// The piece that defines each function: those named by variables in piece
/// 0, the others in the piece with the fewest instructions so far, largest
/// first. Returns each piece's instruction count.
std::vector<size_t>
assignPieces(llvm::Module &module, unsigned pieces,
             llvm::DenseMap<const llvm::GlobalValue *, unsigned> &pieceOf) {
  std::vector<size_t> load(pieces, 0);
  std::vector<std::pair<size_t, llvm::Function *>> bySize;
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    size_t size = function.getInstructionCount();
    if (namedByVariable(function)) {
      pieceOf[&function] = 0;
      load[0] += size;
    } else {
      bySize.push_back({size, &function});
    }
  }
  llvm::stable_sort(
      bySize, [](const auto &a, const auto &b) { return a.first > b.first; });
  for (auto [size, function] : bySize) {
    unsigned lightest =
        static_cast<unsigned>(llvm::min_element(load) - load.begin());
    pieceOf[function] = lightest;
    load[lightest] += size;
  }
  return load;
}

/// `module` as `pieces` modules that link into the same program, heaviest
/// first: internal functions and variables become hidden (so that a piece
/// can call into another); each function is defined in the piece with the
/// fewest instructions so far, largest first (by count, one large entry
/// and many small parallel bodies would be uneven); the variables, and what
/// their initializers name (llvm.used's __truncsfbf2), in piece 0.
std::vector<std::unique_ptr<llvm::Module>> splitEvenly(llvm::Module &module,
                                                       unsigned pieces) {
  for (llvm::Function &function : module)
    makeLinkable(function);
  for (llvm::GlobalVariable &variable : module.globals())
    if (!variable.getName().starts_with("llvm."))
      makeLinkable(variable);
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> pieceOf;
  std::vector<size_t> load = assignPieces(module, pieces, pieceOf);

  // Heaviest first, so that threads taking them in order finish together.
  std::vector<unsigned> order(pieces);
  std::iota(order.begin(), order.end(), 0u);
  llvm::stable_sort(order,
                    [&](unsigned a, unsigned b) { return load[a] > load[b]; });
  std::vector<std::unique_ptr<llvm::Module>> result;
  for (unsigned i : order) {
    llvm::ValueToValueMapTy map;
    result.push_back(
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          auto found = pieceOf.find(value);
          return found == pieceOf.end() ? i == 0 : found->second == i;
        }));
  }
  return result;
}

/// One piece's object code (compileInPieces): `bitcode` read into an
/// LLVMContext of its own, optimized and compiled. Returns the error, or "".
std::string compilePiece(const llvm::SmallString<0> &bitcode,
                         llvm::orc::JITTargetMachineBuilder builder,
                         llvm::SmallString<0> &object) {
  llvm::LLVMContext context;
  auto piece = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(bitcode.str(), "piece"), context);
  if (!piece)
    return "reading a piece of the step back failed: " +
           llvm::toString(piece.takeError());
  auto machine = builder.createTargetMachine();
  if (!machine)
    return "no target machine for this host: " +
           llvm::toString(machine.takeError());
  if (llvm::Error e = optimizeStep(**piece))
    return "optimizing the LLVM IR failed: " + llvm::toString(std::move(e));
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return "this target cannot emit object files";
  codegen.run(**piece);
  return "";
}

/// Runs `body` for 0 .. count-1 on `threadCount` threads (this one
/// included), each taking the next index.
void forEachOnThreads(size_t count, unsigned threadCount,
                      llvm::function_ref<void(size_t)> body) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < count;)
      body(i);
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < threadCount; ++i)
    threads.emplace_back(work);
  work();
  for (std::thread &thread : threads)
    thread.join();
}

/// Object code for `module` (translated, wrappers added, imports rewritten)
/// compiled on `threadCount` threads: split into four pieces per thread
/// (splitEvenly), which the threads take heaviest first; each piece reaches
/// its thread as bitcode, is read into an LLVMContext of its own, optimized
/// (optimizeStep) and compiled to an object file. Splitting changes what
/// gets inlined, not what a function computes (no fast-math flags), so the
/// numbers are the whole module's (test/mp-compile/artifact.test compares
/// training from an artifact with the JIT's, bit for bit).
bool compileInPieces(llvm::Module &module,
                     const llvm::orc::JITTargetMachineBuilder &builder,
                     unsigned threadCount,
                     std::vector<llvm::SmallString<0>> &objects,
                     std::string &error) {
  std::vector<llvm::SmallString<0>> bitcode;
  unsigned pieces = threadCount == 1 ? 1 : 4 * threadCount;
  for (std::unique_ptr<llvm::Module> &piece : splitEvenly(module, pieces)) {
    llvm::raw_svector_ostream os(bitcode.emplace_back());
    llvm::WriteBitcodeToFile(*piece, os);
  }
  objects.assign(bitcode.size(), {});
  std::vector<std::string> errors(bitcode.size());
  forEachOnThreads(bitcode.size(), threadCount, [&](size_t i) {
    errors[i] = compilePiece(bitcode[i], builder, objects[i]);
  });
  for (const std::string &message : errors)
    if (!message.empty()) {
      error = message;
      return false;
    }
  return true;
}

bool readTensors(const llvm::json::Object &metadata, llvm::StringRef key,
                 std::vector<HostTensor> &tensors) {
  const llvm::json::Array *array = metadata.getArray(key);
  if (!array)
    return false;
  for (const llvm::json::Value &value : *array) {
    const llvm::json::Object *object = value.getAsObject();
    if (!object)
      return false;
    HostTensor t;
    std::optional<llvm::StringRef> name = object->getString("name");
    std::optional<llvm::StringRef> dtype = object->getString("dtype");
    if (!name || dtype != "f32" ||
        !readArtifactShape(object->get("shape"), t.shape))
      return false;
    t.name = name->str();
    int64_t n = t.numElements();
    if (n > (int64_t(1) << 32))
      return false;
    t.data.assign(n, 0.0f);
    tensors.push_back(std::move(t));
  }
  return true;
}

/// Weight copies (CompiledEntries::WeightCopy) as artifact metadata
/// records them, and read back: false unless each names a parameter and 2
/// bytes an element (f16, bf16).
llvm::json::Array copiesJson(
    const std::vector<CompiledEntries::WeightCopy> &copies) {
  llvm::json::Array array;
  for (const CompiledEntries::WeightCopy &c : copies)
    array.push_back(llvm::json::Object{{"param", c.param},
                                       {"element_bytes", c.elementBytes}});
  return array;
}

bool readCopies(const llvm::json::Array &array, size_t params,
                std::vector<CompiledEntries::WeightCopy> &copies) {
  copies.clear();
  for (const llvm::json::Value &c : array) {
    const llvm::json::Object *o = c.getAsObject();
    std::optional<int64_t> param = o ? o->getInteger("param") : std::nullopt;
    std::optional<int64_t> bytes =
        o ? o->getInteger("element_bytes") : std::nullopt;
    if (!param || *param < 0 || static_cast<size_t>(*param) >= params ||
        bytes != 2)
      return false;
    copies.push_back({*param, *bytes});
  }
  return true;
}

/// The prediction's weight copies, the parameters its conversion takes and
/// what each prediction argument is (absent: it takes every parameter).
llvm::json::Object predictCopiesJson(const CompiledEntries &entries) {
  llvm::json::Array arguments;
  for (const CompiledEntries::PredictArgument &a : entries.predictArguments)
    arguments.push_back(
        llvm::json::Object{{"copy", a.copy}, {"index", a.index}});
  return llvm::json::Object{
      {"weights_arguments", llvm::json::Array(entries.weightsArguments)},
      {"copies", copiesJson(entries.weightCopies)},
      {"arguments", std::move(arguments)}};
}

/// Whether `i` indexes a vector of `size` elements.
bool isIndex(std::optional<int64_t> i, size_t size) {
  return i && *i >= 0 && static_cast<size_t>(*i) < size;
}

/// The parameters the prediction's weight conversion takes.
bool readWeightsArguments(const llvm::json::Array &weights, size_t params,
                          std::vector<int64_t> &arguments) {
  for (const llvm::json::Value &w : weights) {
    if (!isIndex(w.getAsInteger(), params))
      return false;
    arguments.push_back(*w.getAsInteger());
  }
  return true;
}

/// What each prediction argument is: a weight copy or a parameter.
bool readPredictArguments(const llvm::json::Array &arguments, size_t params,
                          CompiledEntries &entries) {
  for (const llvm::json::Value &a : arguments) {
    const llvm::json::Object *o = a.getAsObject();
    std::optional<bool> copy = o ? o->getBoolean("copy") : std::nullopt;
    std::optional<int64_t> i = o ? o->getInteger("index") : std::nullopt;
    if (!copy || !isIndex(i, *copy ? entries.weightCopies.size() : params))
      return false;
    entries.predictArguments.push_back({*copy, *i});
  }
  return true;
}

bool readPredictCopies(const llvm::json::Object *record, size_t params,
                       CompiledEntries &entries) {
  entries.weightsArguments.clear();
  entries.weightCopies.clear();
  entries.predictArguments.clear();
  if (!record) // written before predictions had copies
    return true;
  const llvm::json::Array *weights = record->getArray("weights_arguments");
  const llvm::json::Array *copies = record->getArray("copies");
  const llvm::json::Array *arguments = record->getArray("arguments");
  return weights && copies && arguments &&
         readWeightsArguments(*weights, params, entries.weightsArguments) &&
         readCopies(*copies, params, entries.weightCopies) &&
         readPredictArguments(*arguments, params, entries);
}

} // namespace

llvm::json::Array artifactShape(const std::vector<int64_t> &shape) {
  llvm::json::Array array;
  for (int64_t d : shape)
    array.push_back(d);
  return array;
}

bool readArtifactShape(const llvm::json::Value *value,
                       std::vector<int64_t> &shape) {
  const llvm::json::Array *array = value ? value->getAsArray() : nullptr;
  if (!array)
    return false;
  shape.clear();
  for (const llvm::json::Value &d : *array) {
    std::optional<int64_t> size = d.getAsInteger();
    if (!size || *size < 0 || *size > (int64_t(1) << 32))
      return false;
    shape.push_back(*size);
  }
  return true;
}

llvm::json::Object Session::artifactMetadata() const {
  // The step's options, and the seed the artifact starts from by default.
  llvm::json::Object options =
      trainOptionsJson(compiledOptions, OptionScope::Step);
  options["seed"] = findTrainOption("seed")->print(compiledOptions);
  // The model's own starting values (an ONNX model's weights), by
  // parameter: little-endian f32 bytes in base64.
  llvm::json::Object initial;
  for (const auto &[name, values] : initialValues)
    initial[name] = llvm::encodeBase64(
        llvm::StringRef(reinterpret_cast<const char *>(values.data()),
                        values.size() * sizeof(float)));
  return llvm::json::Object{
      {"initial_values", std::move(initial)},
      {"options", std::move(options)},
      {"loss_scale_mode", mlir::mp::stringifyLossScalingMode(scaleMode)},
      {"format", kTrainingArtifactFormat},
      {"version", kVersion},
      {"batch", entries.batch},
      {"features", entries.features},
      {"classes", entries.classes},
      {"input_shape", artifactShape(entries.inputShape)},
      {"label_shape", artifactShape(entries.labelShape)},
      {"logits_shape", artifactShape(entries.logitsShape)},
      {"input_element", static_cast<int64_t>(entries.inputElement)},
      {"label_element", static_cast<int64_t>(entries.labelElement)},
      {"vectorized", vectorized},
      {"has_predict", hasPredict},
      // The entries write over their parameter and state arguments
      // (docs/memory.md): one set of buffers, as in a JIT session.
      {"in_place_updates", entries.inPlaceUpdates},
      {"accumulate_in_place", entries.accumulateInPlace},
      {"initial_scale", static_cast<double>(training.scalars.scale)},
      {"parameters", tensorsJson(training.params)},
      {"state", tensorsJson(training.state)},
      {"predict_weight_copies", predictCopiesJson(entries)},
      {"train_weight_copies", copiesJson(entries.stepCopies)},
  };
}

namespace {

/// The artifact's step options and loss scaling mode, read and checked
/// (verifyTrainOptions); `error` says what is wrong with the options.
bool readArtifactOptions(const llvm::json::Object &metadata,
                         TrainOptions &options, LossScalingMode &scaleMode,
                         std::string &error) {
  const llvm::json::Object *o = metadata.getObject("options");
  std::optional<llvm::StringRef> modeText =
      metadata.getString("loss_scale_mode");
  std::optional<LossScalingMode> mode =
      modeText ? mlir::mp::symbolizeLossScalingMode(*modeText) : std::nullopt;
  options = TrainOptions();
  if (!o || !mode || !readTrainOptionsJson(*o, options, error) ||
      !verifyTrainOptions(options, error))
    return false;
  scaleMode = *mode;
  return true;
}

bool isPositive(std::optional<int64_t> value) { return value && *value > 0; }

/// The labels' and logits' shapes and what x and the labels hold; an
/// artifact written before they were recorded has f32 one-hot labels.
std::string readArtifactIds(const llvm::json::Object &metadata,
                            CompiledEntries &entries) {
  using Element = CompiledEntries::Element;
  entries.labelShape = entries.logitsShape = {entries.batch, entries.classes};
  entries.inputElement = entries.labelElement = Element::F32;
  if (!metadata.get("label_shape"))
    return "";
  std::optional<int64_t> input = metadata.getInteger("input_element");
  std::optional<int64_t> label = metadata.getInteger("label_element");
  auto valid = [](std::optional<int64_t> e) {
    return e && *e >= 0 && *e <= static_cast<int64_t>(Element::I64);
  };
  if (!valid(input) || !valid(label) ||
      !readArtifactShape(metadata.get("label_shape"), entries.labelShape) ||
      !readArtifactShape(metadata.get("logits_shape"), entries.logitsShape))
    return "label or logits shapes";
  entries.inputElement = static_cast<Element>(*input);
  entries.labelElement = static_cast<Element>(*label);
  return "";
}

/// The batch, features, classes and input shape; "" or what is bad.
std::string readArtifactShapes(const llvm::json::Object &metadata,
                               CompiledEntries &entries) {
  std::optional<int64_t> b = metadata.getInteger("batch");
  std::optional<int64_t> f = metadata.getInteger("features");
  std::optional<int64_t> c = metadata.getInteger("classes");
  if (!isPositive(b) || !isPositive(f) || !isPositive(c) ||
      !readArtifactShape(metadata.get("input_shape"), entries.inputShape) ||
      entries.inputShape.size() < 2 || entries.inputShape[0] != *b)
    return "shapes";
  entries.batch = *b;
  entries.features = *f;
  entries.classes = *c;
  int64_t elements = 1;
  for (int64_t d : entries.inputShape)
    elements *= d;
  if (elements != entries.batch * entries.features)
    return "input_shape does not match batch x features";
  return readArtifactIds(metadata, entries);
}

/// The flags artifact metadata records (all required).
struct ArtifactFlags {
  bool vectorized = false, hasPredict = false;
  double initialScale = 0;
};

bool readArtifactFlags(const llvm::json::Object &metadata,
                       ArtifactFlags &flags) {
  std::optional<bool> v = metadata.getBoolean("vectorized");
  std::optional<bool> p = metadata.getBoolean("has_predict");
  std::optional<double> scale = metadata.getNumber("initial_scale");
  if (!v || !p || !scale)
    return false;
  flags = {*v, *p, *scale};
  return true;
}

/// The parameters, optimizer state and weight copies: "" or the metadata
/// key that is bad.
std::string readArtifactTensors(const llvm::json::Object &metadata,
                                TrainingState &training,
                                CompiledEntries &entries) {
  if (!readTensors(metadata, "parameters", training.params))
    return "parameters";
  if (!readTensors(metadata, "state", training.state))
    return "state";
  if (!readPredictCopies(metadata.getObject("predict_weight_copies"),
                         training.params.size(), entries))
    return "predict_weight_copies";
  // Absent from artifacts written before steps had copies: none.
  const llvm::json::Array *stepCopies =
      metadata.getArray("train_weight_copies");
  entries.stepCopies.clear();
  if (stepCopies &&
      !readCopies(*stepCopies, training.params.size(), entries.stepCopies))
    return "train_weight_copies";
  return "";
}

/// One parameter's starting values: little-endian f32 bytes in base64
/// (Session::artifactMetadata), as many as the parameter has elements.
bool decodeInitialValues(const llvm::json::Value &encoded,
                         const HostTensor &param, std::vector<float> &values) {
  std::optional<llvm::StringRef> text = encoded.getAsString();
  std::vector<char> bytes;
  if (!text)
    return false;
  if (llvm::Error e = llvm::decodeBase64(*text, bytes)) {
    llvm::consumeError(std::move(e));
    return false;
  }
  if (bytes.size() != size_t(param.numElements()) * sizeof(float))
    return false;
  values.resize(param.numElements());
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return true;
}

/// The model's own starting values by parameter name (absent from
/// artifacts written before they carried them: none).
bool readInitialValues(const llvm::json::Object *initial,
                       const std::vector<HostTensor> &params,
                       std::map<std::string, std::vector<float>> &values) {
  values.clear();
  if (!initial)
    return true;
  for (const auto &[name, encoded] : *initial) {
    auto param = llvm::find_if(
        params, [&](const HostTensor &t) { return t.name == name.str(); });
    if (param == params.end() ||
        !decodeInitialValues(encoded, *param, values[name.str()]))
      return false;
  }
  return true;
}

/// With gradient accumulation, a window's gradient sum per parameter.
void addAccumulators(TrainingState &training, int64_t window) {
  training.sums.clear();
  if (window <= 1)
    return;
  for (const HostTensor &p : training.params) {
    HostTensor sum = p;
    sum.name = p.name + ".accumulator";
    training.sums.push_back(sum);
  }
}

} // namespace

bool Session::readArtifactMetadata(const llvm::json::Object &metadata,
                                   std::string &error) {
  auto bad = [&](const std::string &what) {
    error = "bad metadata (" + what + ")";
    return false;
  };
  std::string optionsError;
  if (!readArtifactOptions(metadata, compiledOptions, scaleMode, optionsError))
    return bad("options" + (optionsError.empty() ? "" : ": " + optionsError));
  int64_t window = compiledOptions.accumulate;
  entries.window = window;
  entries.windowOverflow = scaleMode != LossScalingMode::None;
  entries.windowAmax = scaleMode == LossScalingMode::Adaptive;
  std::string problem = readArtifactShapes(metadata, entries);
  if (!problem.empty())
    return bad(problem);
  ArtifactFlags flags;
  if (!readArtifactFlags(metadata, flags))
    return bad("flags");
  vectorized = flags.vectorized;
  hasPredict = flags.hasPredict;
  // Absent from artifacts written before they were recorded: two sets of
  // buffers, which is correct for any entry. A step compiled with
  // in-place-updates=false recorded false.
  entries.inPlaceUpdates =
      metadata.getBoolean("in_place_updates").value_or(false);
  entries.accumulateInPlace =
      metadata.getBoolean("accumulate_in_place").value_or(false);
  training.scalars.scale = static_cast<float>(flags.initialScale);
  problem = readArtifactTensors(metadata, training, entries);
  if (!problem.empty())
    return bad(problem);
  if (!readInitialValues(metadata.getObject("initial_values"), training.params,
                         initialValues))
    return bad("initial_values");
  addAccumulators(training, entries.window);
  return true;
}

namespace {

/// What artifacts cannot carry, refused before anything is compiled.
bool checkArtifactRequest(const TrainOptions &requested, std::string &error) {
  if (!verifyTrainOptions(requested, error))
    return false;
  if (requested.probes != TrainOptions::Probes::None) {
    error = "artifacts do not carry numerics probes";
    return false;
  }
  if (requested.device != Device::Cpu || requested.distributed) {
    error = "artifacts are CPU code for one process: drop --device cuda and "
            "--distributed (mp-run compiles the model for those)";
    return false;
  }
  return true;
}

/// The linker driver on PATH, and the output's directory: what does not
/// need the compilation fails before it.
bool checkArtifactTools(const std::string &linker,
                        const std::string &outputPath, std::string &cc,
                        std::string &error) {
  llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(linker);
  if (!found) {
    error = "cannot find the linker driver '" + linker +
            "' on PATH (mp-compile links the object code with `" + linker +
            " -shared`; install a C compiler or pass --linker)";
    return false;
  }
  cc = *found;
  llvm::StringRef outputDir = llvm::sys::path::parent_path(outputPath);
  if (!outputDir.empty() && !llvm::sys::fs::is_directory(outputDir)) {
    error = "cannot write '" + outputPath + "': No such file or directory";
    return false;
  }
  return true;
}

} // namespace

bool Session::writeArtifact(
    const std::string &modelPath, const TrainOptions &requested,
    const std::string &outputPath, const std::string &linker,
    std::string &error,
    llvm::function_ref<void(const std::string &)> progress) {
  if (!checkArtifactRequest(requested, error))
    return false;
  // An artifact is CPU code for this machine's CPU: auto picks for it.
  HardwareInfo cpu = detectCpu();
  if (requested.tf32.value_or(false) && !checkTf32(cpu, Device::Cpu, error))
    return false;
  TrainOptions options = requested;
  if (options.automaticPrecision) {
    PrecisionChoice choice = choosePrecision(cpu, Device::Cpu);
    options.precision = choice.precision;
    options.automaticPrecision = false;
    progress(choice.line());
  }
  std::string cc;
  if (!checkArtifactTools(linker, outputPath, cc, error))
    return false;
  progress("compiling the training step of '" + modelPath + "' (" +
           mlir::mp::stringifyFloatPrecision(options.precision).str() + ")");
  std::unique_ptr<Session> session(new Session());
  OwningOpRef<ModuleOp> module;
  if (!session->lower(modelPath, options, module, error))
    return false;

  return session->emitArtifact(*module, modelPath, cc, outputPath, error,
                               progress);
}

namespace {

/// The threads that compile an artifact's pieces: the host's, at most 8.
unsigned artifactThreadCount() {
  return std::min(
      8u, std::max(1u, llvm::hardware_concurrency().compute_thread_count()));
}

/// `module` as LLVM IR for this host's CPU, as position-independent code;
/// `builder` is left describing that target and `target` records it for the
/// metadata (openArtifactFile compares it with the loading host).
std::unique_ptr<llvm::Module>
translateForHost(ModuleOp module, llvm::LLVMContext &llvmContext,
                 std::optional<llvm::orc::JITTargetMachineBuilder> &builder,
                 llvm::json::Object &target, std::string &error) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    error = "translating the lowered module to LLVM IR failed";
    return nullptr;
  }
  auto detected = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!detected) {
    error = "no target for this host: " + llvm::toString(detected.takeError());
    return nullptr;
  }
  builder = std::move(*detected);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = "no target machine for this host: " +
            llvm::toString(machine.takeError());
    return nullptr;
  }
  llvm::TargetMachine &tm = **machine;
  ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), &tm);
  llvmModule->setPICLevel(llvm::PICLevel::BigPIC);
  target = llvm::json::Object{{"triple", tm.getTargetTriple().str()},
                              {"cpu", tm.getTargetCPU().str()},
                              {"features", tm.getTargetFeatureString().str()}};
  return llvmModule;
}

/// Object code for the translated `llvmModule`: packed wrappers added,
/// runtime calls rewritten through the imports it records in `imports`,
/// compiled in pieces (compileInPieces).
bool compileForArtifact(llvm::Module &llvmModule,
                        const llvm::orc::JITTargetMachineBuilder &builder,
                        unsigned threadCount,
                        std::vector<std::string> &imports,
                        std::vector<llvm::SmallString<0>> &objects,
                        std::string &error) {
  packFunctionArguments(llvmModule);
  // Defined once, before the split; rewritten imports too (the pointer
  // each import is bound to must exist once).
  defineBf16Truncation(llvmModule);
  if (!rewriteImports(llvmModule, imports, error))
    return false;
  return compileInPieces(llvmModule, builder, threadCount, objects, error);
}

/// A temporary file, removed when this goes away.
struct TemporaryFile {
  llvm::SmallString<128> path;
  std::unique_ptr<llvm::FileRemover> remover;
};

bool createTemporary(llvm::StringRef suffix, TemporaryFile &file,
                     std::string &error) {
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("mp-compile", suffix, file.path)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  file.remover = std::make_unique<llvm::FileRemover>(file.path);
  return true;
}

/// Each of `objects` in a temporary object file of its own, for the linker.
bool writeTemporaryObjects(const std::vector<llvm::SmallString<0>> &objects,
                           std::vector<TemporaryFile> &files,
                           std::string &error) {
  files.resize(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!createTemporary("o", files[i], error))
      return false;
    std::error_code ec;
    llvm::raw_fd_ostream os(files[i].path, ec);
    if (ec) {
      error =
          "cannot write '" + files[i].path.str().str() + "': " + ec.message();
      return false;
    }
    os << objects[i];
  }
  return true;
}

/// Links `objects` with the system linker driver `cc` into the shared
/// object `soPath`; the error carries the linker's output.
bool linkSharedObject(const std::string &cc,
                      const std::vector<TemporaryFile> &objects,
                      llvm::StringRef soPath, std::string &error) {
  // -z defs: every symbol but the bound imports must resolve in libc/libm
  // now, not at load time. -Bsymbolic: the wrappers call the entries of
  // this object, never a same-named function of the process (the C API's
  // mp_infer_predict once took an inference entry's calls).
  std::vector<llvm::StringRef> args = {cc, "-shared", "-o", soPath};
  for (const TemporaryFile &object : objects)
    args.push_back(object.path);
  args.push_back("-Wl,-z,defs");
  args.push_back("-Wl,-Bsymbolic");
  args.push_back("-lm");
  std::string linkError;
  TemporaryFile log;
  if (!createTemporary("log", log, error))
    return false;
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.path.str(),
                                                log.path.str()};
  int status = llvm::sys::ExecuteAndWait(cc, args, std::nullopt, redirects, 0,
                                         0, &linkError);
  if (status == 0)
    return true;
  auto output = llvm::MemoryBuffer::getFile(log.path);
  error = "linking the artifact with '" + cc + " -shared' failed" +
          (linkError.empty() ? "" : ": " + linkError) + "\n" +
          (output ? (*output)->getBuffer().str() : "");
  return false;
}

/// What the loader needs besides the options: the imports to bind, the
/// packed wrapper (packFunctionArguments) of each entry, and the target.
void addLoaderMetadata(llvm::json::Object &metadata,
                       const std::vector<std::string> &imports,
                       const llvm::json::Object &entries,
                       llvm::json::Object target) {
  llvm::json::Array importNames;
  for (const std::string &name : imports)
    importNames.push_back(name);
  metadata["imports"] = std::move(importNames);
  llvm::json::Object wrappers;
  for (const auto &[key, function] : entries)
    wrappers[key] = "_mlir_" + function.getAsString().value_or("").str();
  metadata["entries"] = std::move(wrappers);
  metadata["target"] = std::move(target);
}

/// The artifact's bytes: the shared object, the metadata and the trailer.
std::string artifactContents(llvm::StringRef sharedObject,
                             llvm::StringRef metadataText) {
  std::string contents = sharedObject.str();
  contents += metadataText;
  uint64_t checksum = llvm::crc32(llvm::arrayRefFromStringRef(contents));
  putU64(contents, sharedObject.size());
  putU64(contents, metadataText.size());
  putU64(contents, checksum);
  for (int i = 0; i < 4; ++i)
    contents.push_back(static_cast<char>((kVersion >> (8 * i)) & 0xff));
  contents.append(4, '\0');
  contents.append(kMagic, sizeof(kMagic));
  return contents;
}

/// Written next to the output, then renamed: no half-written artifact.
bool writeAtomically(const std::string &outputPath, llvm::StringRef contents,
                     std::string &error) {
  llvm::SmallString<128> tempPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          outputPath + ".tmp-%%%%%%", fd, tempPath)) {
    error = "cannot write '" + outputPath + "': " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.close();
    if (os.has_error()) {
      error = "cannot write '" + outputPath + "': " + os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(tempPath);
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, outputPath)) {
    llvm::sys::fs::remove(tempPath);
    error = "cannot write '" + outputPath + "': " + ec.message();
    return false;
  }
  return true;
}

} // namespace

bool writeArtifactFile(ModuleOp module, const std::string &cc,
                       llvm::json::Object metadata,
                       const llvm::json::Object &entries,
                       const std::string &outputPath, std::string &error,
                       llvm::function_ref<void(const std::string &)> progress) {
  // What ExecutionEngine::create does, step by step, but into object files
  // compiled in parallel: the same LLVM IR, wrappers, optimizeStep and host
  // target give the same numbers as the JIT.
  unsigned threadCount = artifactThreadCount();
  progress("generating object code for this CPU (" +
           llvm::sys::getHostCPUName().str() + ", " +
           std::to_string(threadCount) + " threads)");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  std::optional<llvm::orc::JITTargetMachineBuilder> builder;
  llvm::json::Object target;
  std::unique_ptr<llvm::Module> llvmModule =
      translateForHost(module, llvmContext, builder, target, error);
  if (!llvmModule)
    return false;
  std::vector<std::string> imports;
  std::vector<llvm::SmallString<0>> objects;
  if (!compileForArtifact(*llvmModule, *builder, threadCount, imports, objects,
                          error))
    return false;
  size_t objectBytes = 0;
  for (const llvm::SmallString<0> &object : objects)
    objectBytes += object.size();

  // Link with the system linker driver into a temporary shared object, then
  // append the metadata and trailer.
  std::vector<TemporaryFile> objectFiles;
  TemporaryFile so;
  if (!writeTemporaryObjects(objects, objectFiles, error) ||
      !createTemporary("so", so, error))
    return false;
  progress("linking with " + cc + " -shared (" + std::to_string(objectBytes) +
           " bytes of object code)");
  if (!linkSharedObject(cc, objectFiles, so.path, error))
    return false;
  auto shared = llvm::MemoryBuffer::getFile(so.path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!shared) {
    error = "cannot read the linked object: " + shared.getError().message();
    return false;
  }

  addLoaderMetadata(metadata, imports, entries, std::move(target));
  std::string metadataText;
  {
    llvm::raw_string_ostream os(metadataText);
    os << llvm::json::Value(std::move(metadata));
  }
  uint64_t objectSize = (*shared)->getBufferSize();
  std::string contents = artifactContents((*shared)->getBuffer(), metadataText);
  if (!writeAtomically(outputPath, contents, error))
    return false;
  progress("wrote " + outputPath + " (" + std::to_string(contents.size()) +
           " bytes: " + std::to_string(objectSize) + " shared object, " +
           std::to_string(metadataText.size()) + " metadata)");
  return true;
}

bool Session::emitArtifact(
    ModuleOp module, const std::string &modelPath, const std::string &cc,
    const std::string &outputPath, std::string &error,
    llvm::function_ref<void(const std::string &)> progress) {
  llvm::json::Object metadata = artifactMetadata();
  metadata["model"] = modelPath;
  llvm::json::Object functions{{"train", "mp_train_entry"}};
  if (entries.window > 1)
    functions["accumulate"] = "mp_accumulate_entry";
  if (hasPredict)
    functions["predict"] = "mp_predict_entry";
  if (!entries.weightCopies.empty())
    functions["predict_weights"] = "mp_predict_weights_entry";
  if (!entries.stepCopies.empty())
    functions["train_copies"] = "mp_train_copies_entry";
  return writeArtifactFile(module, cc, std::move(metadata), functions,
                           outputPath, error, progress);
}

/// Reads and checks the trailer of `buffer`; an empty string on success.
static std::string checkTrailer(llvm::StringRef buffer, Trailer &trailer) {
  if (buffer.size() < kTrailerSize ||
      std::memcmp(buffer.end() - sizeof(kMagic), kMagic, sizeof(kMagic)) != 0)
    return "is not an mp artifact (no mp-compile trailer: a foreign, "
           "truncated or stripped file)";
  const char *t = buffer.end() - kTrailerSize;
  trailer.objectSize = getU64(t);
  trailer.metadataSize = getU64(t + 8);
  trailer.checksum = getU64(t + 16);
  trailer.version = static_cast<uint32_t>(getU64(t + 24) & 0xffffffffu);
  if (trailer.version != kVersion)
    return "has artifact format version " + std::to_string(trailer.version) +
           "; this mp reads version " + std::to_string(kVersion) +
           " (compile it again with mp-compile)";
  uint64_t payload = buffer.size() - kTrailerSize;
  if (trailer.objectSize > payload || trailer.metadataSize > payload ||
      trailer.objectSize + trailer.metadataSize != payload)
    return "is corrupt (its trailer's sizes do not match the file)";
  if (llvm::crc32(llvm::arrayRefFromStringRef(buffer.take_front(payload))) !=
      trailer.checksum)
    return "is corrupt (checksum mismatch)";
  return "";
}

bool Session::isArtifact(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  return buffer && (*buffer)->getBufferSize() >= kTrailerSize &&
         std::memcmp((*buffer)->getBufferEnd() - sizeof(kMagic), kMagic,
                     sizeof(kMagic)) == 0;
}

std::unique_ptr<Session> Session::open(const std::string &artifactPath,
                                       std::string &error,
                                       const uint64_t *seed) {
  std::unique_ptr<Session> session(new Session());
  std::string problem;
  if (!session->loadArtifact(artifactPath, /*codeOnly=*/false, problem)) {
    error = "artifact '" + artifactPath + "' " + problem;
    return nullptr;
  }
  session->initialiseParameters(seed ? *seed : session->compiledOptions.seed);
  if (!session->createBackend(nullptr, error))
    return nullptr;
  return session;
}

namespace {

/// The metadata of the artifact at `artifactPath`, read after its trailer
/// is checked (checkTrailer): "" or what is wrong with the file.
std::string readMetadataRecord(const std::string &artifactPath,
                               llvm::json::Value &metadata) {
  auto buffer = llvm::MemoryBuffer::getFile(artifactPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return "cannot be read: " + buffer.getError().message();
  Trailer trailer;
  std::string problem = checkTrailer((*buffer)->getBuffer(), trailer);
  if (!problem.empty())
    return problem;
  llvm::StringRef text =
      (*buffer)->getBuffer().substr(trailer.objectSize, trailer.metadataSize);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return "is corrupt (its metadata is not JSON)";
  }
  metadata = std::move(*parsed);
  return "";
}

/// "" when `metadata` is an object that records an artifact of `format`.
std::string checkFormat(const llvm::json::Value &metadata,
                        llvm::StringRef format) {
  const llvm::json::Object *object = metadata.getAsObject();
  std::optional<llvm::StringRef> kind =
      object ? object->getString("format") : std::nullopt;
  if (kind == kInferenceArtifactFormat && format != kInferenceArtifactFormat)
    return "holds a model's mp.predict alone (an inference session's "
           "compile cache entry), not a training session";
  if (kind != format)
    return "is corrupt (bad metadata)";
  return "";
}

/// The target an artifact's code was compiled for (metadata "target").
struct ArtifactTarget {
  std::string triple, cpu, features;
};

bool fromJSON(const llvm::json::Value &value, ArtifactTarget &target,
              llvm::json::Path path) {
  llvm::json::ObjectMapper o(value, path);
  return o && o.map("triple", target.triple) && o.map("cpu", target.cpu) &&
         o.map("features", target.features);
}

/// The features ("+avx2,+fma,...") this host's CPU lacks, space-separated.
std::string missingHostFeatures(llvm::StringRef features) {
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::string missing;
  llvm::SmallVector<llvm::StringRef> wanted;
  features.split(wanted, ',', -1, false);
  for (llvm::StringRef feature : wanted)
    if (feature.consume_front("+") && !host.lookup(feature))
      missing += (missing.empty() ? "" : " ") + feature.str();
  return missing;
}

/// Code for another CPU would die on an illegal instruction: "" when the
/// target recorded in `metadata` runs on this host.
std::string checkHostRuns(const llvm::json::Object &metadata) {
  ArtifactTarget target;
  llvm::json::Path::Root root("target");
  const llvm::json::Value *value = metadata.get("target");
  if (!value || !fromJSON(*value, target, root))
    return "is corrupt: bad metadata (target)";
  llvm::Triple hostTriple(llvm::sys::getProcessTriple());
  if (llvm::Triple(target.triple).getArch() != hostTriple.getArch())
    return "was compiled for " + target.triple + ", this host is " +
           hostTriple.str();
  std::string missing = missingHostFeatures(target.features);
  if (!missing.empty())
    return "was compiled for CPU '" + target.cpu +
           "' and needs features this host lacks (" + missing +
           "): compile it again on this machine";
  return "";
}

/// dlopen of the artifact; null with `problem` when it cannot be loaded.
void *loadLibrary(const std::string &artifactPath, std::string &problem) {
  // dlopen searches the library path for a name without a slash.
  llvm::SmallString<256> absolutePath(artifactPath);
  llvm::sys::fs::make_absolute(absolutePath);
  void *library = dlopen(absolutePath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *message = dlerror();
    problem = "cannot be loaded: " +
              std::string(message ? message : "dlopen failed");
  }
  return library;
}

/// Points each of `imports`' slots in `library` at its runtime function:
/// "" or the import that cannot be bound.
std::string bindImports(void *library, const llvm::json::Array &imports) {
  for (const llvm::json::Value &value : imports) {
    std::optional<llvm::StringRef> name = value.getAsString();
    const Import *import = name ? findImport(*name) : nullptr;
    void *slot =
        import ? dlsym(library, ("mp_import_" + name->str()).c_str()) : nullptr;
    if (!slot)
      return import ? "lacks its import slot for '" + name->str() + "'"
                    : "imports an unknown runtime function '" +
                          (name ? name->str() : std::string("?")) + "'";
    *static_cast<void **>(slot) = import->address;
  }
  return "";
}

} // namespace

bool openArtifactFile(const std::string &artifactPath, llvm::StringRef format,
                      void *&handle, llvm::json::Object &metadataOut,
                      std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  llvm::json::Value parsed = nullptr;
  std::string problem = readMetadataRecord(artifactPath, parsed);
  if (problem.empty())
    problem = checkFormat(parsed, format);
  if (problem.empty())
    problem = checkHostRuns(*parsed.getAsObject());
  if (!problem.empty())
    return fail(problem);
  const llvm::json::Array *imports = parsed.getAsObject()->getArray("imports");
  if (!imports)
    return fail("is corrupt: bad metadata (imports)");
  void *library = loadLibrary(artifactPath, problem);
  if (!library)
    return fail(problem);
  problem = bindImports(library, *imports);
  if (!problem.empty()) {
    dlclose(library);
    return fail(problem);
  }
  handle = library;
  metadataOut = std::move(*parsed.getAsObject());
  return true;
}

PackedEntry artifactEntry(void *handle, const llvm::json::Object &metadata,
                          llvm::StringRef key) {
  const llvm::json::Object *entries = metadata.getObject("entries");
  std::optional<llvm::StringRef> name =
      entries ? entries->getString(key) : std::nullopt;
  return name
             ? reinterpret_cast<PackedEntry>(dlsym(handle, name->str().c_str()))
             : nullptr;
}

namespace {

/// The prediction's entries: "" or the one the artifact lacks.
std::string bindPredictEntries(void *handle, const llvm::json::Object &metadata,
                               CompiledEntries &entries) {
  entries.predict = artifactEntry(handle, metadata, "predict");
  if (!entries.predict)
    return "lacks its prediction entry";
  if (!entries.weightCopies.empty() &&
      !(entries.predictWeights =
            artifactEntry(handle, metadata, "predict_weights")))
    return "lacks its prediction's weight conversion entry";
  return "";
}

/// The entries the session calls (those its metadata says it has): "" or
/// the one the artifact lacks.
std::string bindSessionEntries(void *handle, const llvm::json::Object &metadata,
                               bool hasPredict, CompiledEntries &entries) {
  entries.train = artifactEntry(handle, metadata, "train");
  if (!entries.train)
    return "lacks its training step entry";
  if (!entries.stepCopies.empty() &&
      !(entries.trainCopies = artifactEntry(handle, metadata, "train_copies")))
    return "lacks its weight copies' entry";
  if (entries.window > 1 &&
      !(entries.accumulate = artifactEntry(handle, metadata, "accumulate")))
    return "lacks its gradient accumulation entry";
  return hasPredict ? bindPredictEntries(handle, metadata, entries) : "";
}

} // namespace

bool Session::loadArtifact(const std::string &artifactPath, bool codeOnly,
                           std::string &error) {
  llvm::json::Object metadata;
  void *handle = nullptr;
  if (!openArtifactFile(artifactPath, kTrainingArtifactFormat, handle, metadata,
                        error))
    return false;
  // The destructor closes it, also when what follows fails.
  library = handle;
  std::string problem;
  if (!codeOnly && !readArtifactMetadata(metadata, problem)) {
    error = "is corrupt: " + problem;
    return false;
  }
  problem = bindSessionEntries(handle, metadata, hasPredict, entries);
  if (!problem.empty()) {
    error = problem;
    return false;
  }
  return true;
}

} // namespace mp
