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

/// Calls to runtime functions go through `mp_import_<name>` pointers the
/// loader binds (after optimization, so the JIT and the artifact optimize
/// the same IR). Fills `imports` with the names; false when the code needs a
/// runtime function the loader does not know.
bool rewriteImports(llvm::Module &module, std::vector<std::string> &imports,
                    std::string &error) {
  llvm::SmallVector<llvm::Function *> declarations;
  for (llvm::Function &func : module.functions())
    if (func.isDeclaration() && !func.isIntrinsic() && !func.use_empty() &&
        (findImport(func.getName()) || func.getName().starts_with("mprt_") ||
         func.getName().starts_with("mgpu")))
      declarations.push_back(&func);
  for (llvm::Function *func : declarations) {
    if (!findImport(func->getName())) {
      error = "the compiled code calls runtime function '" +
              func->getName().str() + "', which artifacts cannot bind yet";
      return false;
    }
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
    imports.push_back(func->getName().str());
    func->eraseFromParent();
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

/// `module` as `pieces` modules that link into the same program, heaviest
/// first: internal functions and variables become hidden (so that a piece
/// can call into another); each function is defined in the piece with the
/// fewest instructions so far, largest first (by count, one large entry
/// and many small parallel bodies would be uneven); the variables, and what
/// their initializers name (llvm.used's __truncsfbf2), in piece 0.
std::vector<std::unique_ptr<llvm::Module>> splitEvenly(llvm::Module &module,
                                                       unsigned pieces) {
  auto externalize = [](llvm::GlobalValue &value) {
    if (!value.hasLocalLinkage())
      return;
    if (!value.hasName())
      value.setName("mp_piece_local");
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  };
  for (llvm::Function &function : module)
    externalize(function);
  for (llvm::GlobalVariable &variable : module.globals())
    if (!variable.getName().starts_with("llvm."))
      externalize(variable);

  llvm::DenseMap<const llvm::GlobalValue *, unsigned> pieceOf;
  std::vector<size_t> load(pieces, 0);
  std::vector<std::pair<size_t, llvm::Function *>> bySize;
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    size_t size = function.getInstructionCount();
    bool namedByVariable = llvm::any_of(function.users(), [](llvm::User *user) {
      return !llvm::isa<llvm::Instruction>(user);
    });
    if (namedByVariable) {
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
  auto compile = [&](size_t i) {
    llvm::LLVMContext context;
    auto piece = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(bitcode[i].str(), "piece"), context);
    if (!piece) {
      errors[i] = "reading a piece of the step back failed: " +
                  llvm::toString(piece.takeError());
      return;
    }
    llvm::orc::JITTargetMachineBuilder ownBuilder = builder;
    auto machine = ownBuilder.createTargetMachine();
    if (!machine) {
      errors[i] = "no target machine for this host: " +
                  llvm::toString(machine.takeError());
      return;
    }
    if (llvm::Error e = optimizeStep(**piece)) {
      errors[i] =
          "optimizing the LLVM IR failed: " + llvm::toString(std::move(e));
      return;
    }
    llvm::raw_svector_ostream os(objects[i]);
    llvm::legacy::PassManager codegen;
    if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                        llvm::CodeGenFileType::ObjectFile)) {
      errors[i] = "this target cannot emit object files";
      return;
    }
    codegen.run(**piece);
  };
  // Each thread takes the next piece.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < bitcode.size();)
      compile(i);
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < threadCount; ++i)
    threads.emplace_back(work);
  work();
  for (std::thread &thread : threads)
    thread.join();
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
  if (!weights || !copies || !arguments)
    return false;
  auto index = [](std::optional<int64_t> i, size_t size) {
    return i && *i >= 0 && static_cast<size_t>(*i) < size;
  };
  for (const llvm::json::Value &w : *weights) {
    if (!index(w.getAsInteger(), params))
      return false;
    entries.weightsArguments.push_back(*w.getAsInteger());
  }
  if (!readCopies(*copies, params, entries.weightCopies))
    return false;
  for (const llvm::json::Value &a : *arguments) {
    const llvm::json::Object *o = a.getAsObject();
    std::optional<bool> copy = o ? o->getBoolean("copy") : std::nullopt;
    std::optional<int64_t> i = o ? o->getInteger("index") : std::nullopt;
    if (!copy || !index(i, *copy ? entries.weightCopies.size() : params))
      return false;
    entries.predictArguments.push_back({*copy, *i});
  }
  return true;
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

bool Session::readArtifactMetadata(const llvm::json::Object &metadata,
                                   std::string &error) {
  auto bad = [&](const std::string &what) {
    error = "bad metadata (" + what + ")";
    return false;
  };
  const llvm::json::Object *o = metadata.getObject("options");
  std::optional<llvm::StringRef> modeText =
      metadata.getString("loss_scale_mode");
  std::optional<LossScalingMode> mode =
      modeText ? mlir::mp::symbolizeLossScalingMode(*modeText) : std::nullopt;
  std::string optionsError;
  compiledOptions = TrainOptions();
  if (!o || !mode ||
      !readTrainOptionsJson(*o, compiledOptions, optionsError) ||
      !verifyTrainOptions(compiledOptions, optionsError))
    return bad("options" + (optionsError.empty() ? "" : ": " + optionsError));
  scaleMode = *mode;
  int64_t window = compiledOptions.accumulate;
  entries.window = window;
  entries.windowOverflow = scaleMode != LossScalingMode::None;
  entries.windowAmax = scaleMode == LossScalingMode::Adaptive;
  std::optional<int64_t> b = metadata.getInteger("batch");
  std::optional<int64_t> f = metadata.getInteger("features");
  std::optional<int64_t> c = metadata.getInteger("classes");
  if (!b || !f || !c || *b <= 0 || *f <= 0 || *c <= 0 ||
      !readArtifactShape(metadata.get("input_shape"), entries.inputShape) ||
      entries.inputShape.size() < 2 || entries.inputShape[0] != *b)
    return bad("shapes");
  entries.batch = *b;
  entries.features = *f;
  entries.classes = *c;
  int64_t elements = 1;
  for (int64_t d : entries.inputShape)
    elements *= d;
  if (elements != entries.batch * entries.features)
    return bad("input_shape does not match batch x features");
  std::optional<bool> v = metadata.getBoolean("vectorized");
  std::optional<bool> p = metadata.getBoolean("has_predict");
  std::optional<double> scale = metadata.getNumber("initial_scale");
  if (!v || !p || !scale)
    return bad("flags");
  vectorized = *v;
  hasPredict = *p;
  // Absent from artifacts written before they were recorded: two sets of
  // buffers, which is correct for any entry. MP_IN_PLACE_UPDATES=0 keeps
  // two sets here too, as for a JIT session.
  const char *inPlace = std::getenv("MP_IN_PLACE_UPDATES");
  bool allowInPlace = !(inPlace && std::string(inPlace) == "0");
  entries.inPlaceUpdates =
      allowInPlace && metadata.getBoolean("in_place_updates").value_or(false);
  entries.accumulateInPlace =
      allowInPlace &&
      metadata.getBoolean("accumulate_in_place").value_or(false);
  training.scalars.scale = static_cast<float>(*scale);
  if (!readTensors(metadata, "parameters", training.params))
    return bad("parameters");
  if (!readTensors(metadata, "state", training.state))
    return bad("state");
  if (!readPredictCopies(metadata.getObject("predict_weight_copies"),
                         training.params.size(), entries))
    return bad("predict_weight_copies");
  // Absent from artifacts written before steps had copies: none.
  const llvm::json::Array *stepCopies =
      metadata.getArray("train_weight_copies");
  entries.stepCopies.clear();
  if (stepCopies &&
      !readCopies(*stepCopies, training.params.size(), entries.stepCopies))
    return bad("train_weight_copies");
  // Absent from artifacts written before they carried them: none.
  initialValues.clear();
  if (const llvm::json::Object *initial = metadata.getObject("initial_values"))
    for (const auto &[name, encoded] : *initial) {
      std::optional<llvm::StringRef> text = encoded.getAsString();
      std::vector<char> bytes;
      if (!text)
        return bad("initial_values");
      if (llvm::Error e = llvm::decodeBase64(*text, bytes)) {
        llvm::consumeError(std::move(e));
        return bad("initial_values");
      }
      auto param = llvm::find_if(training.params, [&](const HostTensor &t) {
        return t.name == name.str();
      });
      if (param == training.params.end() ||
          bytes.size() != size_t(param->numElements()) * sizeof(float))
        return bad("initial_values");
      std::vector<float> &values = initialValues[name.str()];
      values.resize(param->numElements());
      std::memcpy(values.data(), bytes.data(), bytes.size());
    }
  training.sums.clear();
  if (entries.window > 1)
    for (const HostTensor &p : training.params) {
      HostTensor sum = p;
      sum.name = p.name + ".accumulator";
      training.sums.push_back(sum);
    }
  return true;
}

bool Session::writeArtifact(
    const std::string &modelPath, const TrainOptions &requested,
    const std::string &outputPath, const std::string &linker,
    std::string &error,
    llvm::function_ref<void(const std::string &)> progress) {
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
  // What does not need the compilation fails before it.
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName(linker);
  if (!cc) {
    error = "cannot find the linker driver '" + linker +
            "' on PATH (mp-compile links the object code with `" + linker +
            " -shared`; install a C compiler or pass --linker)";
    return false;
  }
  llvm::StringRef outputDir = llvm::sys::path::parent_path(outputPath);
  if (!outputDir.empty() && !llvm::sys::fs::is_directory(outputDir)) {
    error = "cannot write '" + outputPath + "': No such file or directory";
    return false;
  }
  progress("compiling the training step of '" + modelPath + "' (" +
           mlir::mp::stringifyFloatPrecision(options.precision).str() + ")");
  std::unique_ptr<Session> session(new Session());
  OwningOpRef<ModuleOp> module;
  if (!session->lower(modelPath, options, module, error))
    return false;

  return session->emitArtifact(*module, modelPath, *cc, outputPath, error,
                               progress);
}

bool writeArtifactFile(ModuleOp module, const std::string &cc,
                       llvm::json::Object metadata,
                       const llvm::json::Object &entries,
                       const std::string &outputPath, std::string &error,
                       llvm::function_ref<void(const std::string &)> progress) {
  // What ExecutionEngine::create does, step by step, but into object files
  // compiled in parallel: the same LLVM IR, wrappers, optimizeStep and host
  // target give the same numbers as the JIT.
  unsigned threadCount = std::min(
      8u, std::max(1u, llvm::hardware_concurrency().compute_thread_count()));
  progress("generating object code for this CPU (" +
           llvm::sys::getHostCPUName().str() + ", " +
           std::to_string(threadCount) + " threads)");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    error = "translating the lowered module to LLVM IR failed";
    return false;
  }
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = "no target for this host: " + llvm::toString(builder.takeError());
    return false;
  }
  builder->setRelocationModel(llvm::Reloc::PIC_);
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = "no target machine for this host: " +
            llvm::toString(machine.takeError());
    return false;
  }
  llvm::TargetMachine &tm = **machine;
  ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), &tm);
  llvmModule->setPICLevel(llvm::PICLevel::BigPIC);
  packFunctionArguments(*llvmModule);
  // Defined once, before the split; rewritten imports too (the pointer
  // each import is bound to must exist once).
  defineBf16Truncation(*llvmModule);
  std::vector<std::string> imports;
  if (!rewriteImports(*llvmModule, imports, error))
    return false;
  std::vector<llvm::SmallString<0>> objects;
  if (!compileInPieces(*llvmModule, *builder, threadCount, objects, error))
    return false;
  size_t objectBytes = 0;
  for (const llvm::SmallString<0> &object : objects)
    objectBytes += object.size();

  // Link with the system linker driver into a temporary shared object, then
  // append the metadata and trailer.
  llvm::SmallString<128> soPath;
  std::vector<llvm::SmallString<128>> objectPaths(objects.size());
  std::vector<std::unique_ptr<llvm::FileRemover>> removeObjects;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "mp-compile", "o", objectPaths[i])) {
      error = "cannot create a temporary file: " + ec.message();
      return false;
    }
    removeObjects.push_back(
        std::make_unique<llvm::FileRemover>(objectPaths[i]));
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPaths[i], ec);
    if (ec) {
      error =
          "cannot write '" + objectPaths[i].str().str() + "': " + ec.message();
      return false;
    }
    os << objects[i];
  }
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("mp-compile", "so", soPath)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  llvm::FileRemover removeSo(soPath);
  progress("linking with " + cc + " -shared (" + std::to_string(objectBytes) +
           " bytes of object code)");
  // -z defs: every symbol but the bound imports must resolve in libc/libm
  // now, not at load time. -Bsymbolic: the wrappers call the entries of
  // this object, never a same-named function of the process (the C API's
  // mp_infer_predict once took an inference entry's calls).
  std::vector<llvm::StringRef> args = {cc, "-shared", "-o", soPath};
  for (const llvm::SmallString<128> &path : objectPaths)
    args.push_back(path);
  args.push_back("-Wl,-z,defs");
  args.push_back("-Wl,-Bsymbolic");
  args.push_back("-lm");
  std::string linkError;
  llvm::SmallString<128> logPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("mp-compile", "log", logPath)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  llvm::FileRemover removeLog(logPath);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  int status = llvm::sys::ExecuteAndWait(cc, args, std::nullopt, redirects, 0,
                                         0, &linkError);
  if (status != 0) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    error = "linking the artifact with '" + cc + " -shared' failed" +
            (linkError.empty() ? "" : ": " + linkError) + "\n" +
            (log ? (*log)->getBuffer().str() : "");
    return false;
  }
  auto shared = llvm::MemoryBuffer::getFile(soPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!shared) {
    error = "cannot read the linked object: " + shared.getError().message();
    return false;
  }

  llvm::json::Array importNames;
  for (const std::string &name : imports)
    importNames.push_back(name);
  metadata["imports"] = std::move(importNames);
  // The packed wrappers packFunctionArguments made.
  llvm::json::Object wrappers;
  for (const auto &[key, function] : entries)
    wrappers[key] = "_mlir_" + function.getAsString().value_or("").str();
  metadata["entries"] = std::move(wrappers);
  metadata["target"] =
      llvm::json::Object{{"triple", tm.getTargetTriple().str()},
                         {"cpu", tm.getTargetCPU().str()},
                         {"features", tm.getTargetFeatureString().str()}};
  std::string metadataText;
  {
    llvm::raw_string_ostream os(metadataText);
    os << llvm::json::Value(std::move(metadata));
  }
  std::string contents = (*shared)->getBuffer().str();
  uint64_t objectSize = contents.size();
  contents += metadataText;
  uint64_t checksum = llvm::crc32(llvm::arrayRefFromStringRef(contents));
  putU64(contents, objectSize);
  putU64(contents, metadataText.size());
  putU64(contents, checksum);
  for (int i = 0; i < 4; ++i)
    contents.push_back(static_cast<char>((kVersion >> (8 * i)) & 0xff));
  contents.append(4, '\0');
  contents.append(kMagic, sizeof(kMagic));

  // Written next to the output, then renamed: no half-written artifact.
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

bool openArtifactFile(const std::string &artifactPath, llvm::StringRef format,
                      void *&handle, llvm::json::Object &metadataOut,
                      std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  auto buffer = llvm::MemoryBuffer::getFile(artifactPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot be read: " + buffer.getError().message());
  Trailer trailer;
  std::string problem = checkTrailer((*buffer)->getBuffer(), trailer);
  if (!problem.empty())
    return fail(problem);
  llvm::StringRef text =
      (*buffer)->getBuffer().substr(trailer.objectSize, trailer.metadataSize);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return fail("is corrupt (its metadata is not JSON)");
  }
  const llvm::json::Object *metadata = parsed->getAsObject();
  std::optional<llvm::StringRef> kind =
      metadata ? metadata->getString("format") : std::nullopt;
  if (kind == kInferenceArtifactFormat && format != kInferenceArtifactFormat)
    return fail("holds a model's mp.predict alone (an inference session's "
                "compile cache entry), not a training session");
  if (kind != format)
    return fail("is corrupt (bad metadata)");

  // Code for another CPU would die on an illegal instruction: compare the
  // target it was compiled for with this host before loading it.
  const llvm::json::Object *target = metadata->getObject("target");
  std::optional<llvm::StringRef> triple =
      target ? target->getString("triple") : std::nullopt;
  std::optional<llvm::StringRef> cpu =
      target ? target->getString("cpu") : std::nullopt;
  std::optional<llvm::StringRef> features =
      target ? target->getString("features") : std::nullopt;
  if (!triple || !cpu || !features)
    return fail("is corrupt: bad metadata (target)");
  llvm::Triple hostTriple(llvm::sys::getProcessTriple());
  if (llvm::Triple(*triple).getArch() != hostTriple.getArch())
    return fail("was compiled for " + triple->str() + ", this host is " +
                hostTriple.str());
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::string missing;
  llvm::SmallVector<llvm::StringRef> wanted;
  features->split(wanted, ',', -1, false);
  for (llvm::StringRef feature : wanted)
    if (feature.consume_front("+") && !host.lookup(feature))
      missing += (missing.empty() ? "" : " ") + feature.str();
  if (!missing.empty())
    return fail("was compiled for CPU '" + cpu->str() +
                "' and needs features this host lacks (" + missing +
                "): compile it again on this machine");
  const llvm::json::Array *imports = metadata->getArray("imports");
  if (!imports)
    return fail("is corrupt: bad metadata (imports)");

  // dlopen searches the library path for a name without a slash.
  llvm::SmallString<256> absolutePath(artifactPath);
  llvm::sys::fs::make_absolute(absolutePath);
  void *library = dlopen(absolutePath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *message = dlerror();
    return fail("cannot be loaded: " +
                std::string(message ? message : "dlopen failed"));
  }
  for (const llvm::json::Value &value : *imports) {
    std::optional<llvm::StringRef> name = value.getAsString();
    const Import *import = name ? findImport(*name) : nullptr;
    void *slot =
        import ? dlsym(library, ("mp_import_" + name->str()).c_str()) : nullptr;
    if (!slot) {
      dlclose(library);
      return fail(import ? "lacks its import slot for '" + name->str() + "'"
                         : "imports an unknown runtime function '" +
                               (name ? name->str() : std::string("?")) + "'");
    }
    *static_cast<void **>(slot) = import->address;
  }
  handle = library;
  metadataOut = std::move(*parsed->getAsObject());
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

bool Session::loadArtifact(const std::string &artifactPath, bool codeOnly,
                           std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  llvm::json::Object metadata;
  void *handle = nullptr;
  if (!openArtifactFile(artifactPath, kTrainingArtifactFormat, handle, metadata,
                        error))
    return false;
  // The destructor closes it, also when what follows fails.
  library = handle;
  std::string problem;
  if (!codeOnly && !readArtifactMetadata(metadata, problem))
    return fail("is corrupt: " + problem);
  entries.train = artifactEntry(handle, metadata, "train");
  if (!entries.train)
    return fail("lacks its training step entry");
  if (!entries.stepCopies.empty() &&
      !(entries.trainCopies = artifactEntry(handle, metadata, "train_copies")))
    return fail("lacks its weight copies' entry");
  if (entries.window > 1 &&
      !(entries.accumulate = artifactEntry(handle, metadata, "accumulate")))
    return fail("lacks its gradient accumulation entry");
  if (hasPredict) {
    entries.predict = artifactEntry(handle, metadata, "predict");
    if (!entries.predict)
      return fail("lacks its prediction entry");
    if (!entries.weightCopies.empty() &&
        !(entries.predictWeights =
              artifactEntry(handle, metadata, "predict_weights")))
      return fail("lacks its prediction's weight conversion entry");
  }
  return true;
}

} // namespace mp
