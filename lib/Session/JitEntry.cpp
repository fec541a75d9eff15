//===- JitEntry.cpp - call JIT-compiled functions on host buffers --------===//

#include "mp/Session/JitEntry.h"
#include "mp/Conversion/RuntimeCalls.h"
#include "mp/Session/CudaDevice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "mp/InitAll.h"
#include "mp/Target/ONNX/ImportOnnx.h"
#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Pipelines.h"
#include "mprt/mprt.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <cstdlib>

using namespace mlir;

namespace mp {

std::unique_ptr<MLIRContext> createSessionContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  mlir::mp::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // --device cuda: gpu.binary (the kernels) and NVVM ops to LLVM IR.
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

bool dumpModuleIfAsked(ModuleOp module, const std::string &path,
                       std::string &error) {
  if (path.empty())
    return true;
  std::error_code ec;
  llvm::raw_fd_ostream dump(path, ec);
  if (ec) {
    error = "dump-ir: cannot write '" + path + "': " + ec.message();
    return false;
  }
  module.print(dump);
  return true;
}

DiagnosticText::DiagnosticText(MLIRContext *context)
    : handler(context, [this](Diagnostic &diag) {
        os << diag.getLocation() << ": " << diag << "\n";
        return success();
      }) {}

bool isOnnxModel(const std::string &path) {
  return llvm::StringRef(path).ends_with_insensitive(".onnx");
}

OwningOpRef<ModuleOp> parseModel(const std::string &path, MLIRContext *context,
                                 const DiagnosticText &diagnostics,
                                 std::string &error, int64_t batch) {
  OwningOpRef<ModuleOp> module;
  if (isOnnxModel(path)) {
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file) {
      error = "cannot load model '" + path + "': " + file.getError().message();
      return nullptr;
    }
    OnnxImportOptions options;
    options.batchSize = batch;
    module = importOnnxModel((*file)->getBuffer(), path, context, options);
  } else {
    llvm::SourceMgr sources;
    module = parseSourceFile<ModuleOp>(path, sources, context);
  }
  if (!module)
    error = "cannot load model '" + path + "'\n" + diagnostics.text;
  return module;
}

std::map<std::string, std::vector<float>> takeInitialValues(ModuleOp module) {
  std::map<std::string, std::vector<float>> values;
  for (auto func : module.getOps<func::FuncOp>()) {
    bool model = func->hasAttr(mlir::mp::kLossAttrName) ||
                 func->hasAttr(mlir::mp::kPredictAttrName);
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto value = func.getArgAttrOfType<DenseElementsAttr>(
          i, mlir::mp::kInitialValueAttrName);
      if (!value)
        continue;
      auto name =
          func.getArgAttrOfType<StringAttr>(i, mlir::mp::kParamAttrName);
      if (model && name && value.getElementType().isF32()) {
        std::vector<float> &data = values[name.str()];
        data.clear();
        for (float v : value.getValues<float>())
          data.push_back(v);
      }
      func.removeArgAttr(i, mlir::mp::kInitialValueAttrName);
    }
  }
  return values;
}

bool hostHasNativeBf16() {
  return llvm::sys::getHostCPUFeatures().lookup("avx512bf16");
}

/// `builtin.module(<name><options>)`: a pipeline as mp-opt takes it.
template <typename Options>
static std::string modulePipeline(llvm::StringRef name,
                                  const Options &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "builtin.module(" << name;
  options.print(os);
  os << ")";
  return text;
}

bool lowerModule(OwningOpRef<ModuleOp> &module, bool gpu,
                 const LoweringChoices &choices, std::string &diagnostics,
                 bool &vectorized, std::string &pipeline) {
  MLIRContext *context = module->getContext();
  if (gpu) {
    // Kernels for the elementwise work, cuBLASLt for the products, every
    // tensor in device memory (docs/gpu.md).
    mlir::mp::LowerGpuOptions options;
    options.deviceMemory = true;
    pipeline = modulePipeline("mp-lower-gpu", options);
    PassManager pm(context);
    return succeeded(mlir::mp::buildLowerGpuPipeline(
               pm, options,
               [&](const llvm::Twine &message) {
                 diagnostics += message.str() + "\n";
                 return failure();
               })) &&
           succeeded(pm.run(*module));
  }
  // Vectorized first; should the vectorizer still reject a loop nest (it
  // skips those it cannot vectorize correctly), then scalar loops.
  OwningOpRef<ModuleOp> scalarCopy = module->clone();
  mlir::mp::LowerCpuOptions options;
  options.runtimeContractions = true;
  options.parallel = choices.parallelLoops;
  options.approximateMath = choices.approximateMath;
  options.nativeBf16 = choices.nativeBf16 && hostHasNativeBf16();
  pipeline = modulePipeline("mp-lower-cpu", options);
  PassManager pm(context);
  mlir::mp::buildLowerCpuPipeline(pm, options);
  vectorized = succeeded(pm.run(*module));
  if (vectorized)
    return true;
  diagnostics.clear();
  options.vectorize = false;
  pipeline = modulePipeline("mp-lower-cpu", options);
  PassManager scalar(context);
  mlir::mp::buildLowerCpuPipeline(scalar, options);
  if (failed(scalar.run(*scalarCopy)))
    return false;
  module = std::move(scalarCopy);
  return true;
}

/// libmprt's \p function at the symbol RuntimeCalls.h gives \p Call: a
/// function of another prototype than the table's does not compile.
template <mlir::mp::RuntimeCall Call>
static RuntimeSymbol
runtimeCallSymbol(mlir::mp::RuntimeCallPrototype<Call> *function) {
  return {mlir::mp::getRuntimeCallInfo(Call).symbol.data(),
          reinterpret_cast<void *>(function)};
}

llvm::ArrayRef<RuntimeSymbol> runtimeSymbols() {
  // malloc/free go to the counted heap, so mp-run can say how many bytes a
  // call held; memrefCopy copies into strided buffers such as tensor.pad's
  // interior (libmprt's, so no MLIR library is needed at run time).
  using mlir::mp::RuntimeCall;
  static const RuntimeSymbol symbols[] = {
      // --mp-contractions-to-runtime's calls (RuntimeCalls.h).
      runtimeCallSymbol<RuntimeCall::Gemm>(&mprt_gemm),
      runtimeCallSymbol<RuntimeCall::GemmBatched>(&mprt_gemm_batched),
      runtimeCallSymbol<RuntimeCall::GemmS8DequantizeAbsMax>(
          &mprt_gemm_s8_dequantize_absmax),
      runtimeCallSymbol<RuntimeCall::GemmBatched2d>(&mprt_gemm_batched_2d),
      runtimeCallSymbol<RuntimeCall::GemmBias>(&mprt_gemm_bias),
      runtimeCallSymbol<RuntimeCall::GemmS8Dequantize>(
          &mprt_gemm_s8_dequantize),
      {"mprt_observe", reinterpret_cast<void *>(&mprt_observe)},
      {"mprt_parallel_for", reinterpret_cast<void *>(&mprt_parallel_for)},
      // --mp-data-parallel's all-reduces, through the runtime's MPI.
      {"MPI_Allreduce", reinterpret_cast<void *>(&mprt_dist_mpi_allreduce)},
      {"malloc", reinterpret_cast<void *>(&mprt_counted_malloc)},
      {"free", reinterpret_cast<void *>(&mprt_counted_free)},
      {"memrefCopy", reinterpret_cast<void *>(&mprt_memref_copy)},
  };
  return symbols;
}

void registerRuntimeSymbols(ExecutionEngine &engine) {
  engine.registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (const RuntimeSymbol &symbol : runtimeSymbols())
      map[interner(symbol.name)] = {
          llvm::orc::ExecutorAddr::fromPtr(symbol.address),
          llvm::JITSymbolFlags::Exported};
    return map;
  });
}

void defineBf16Truncation(llvm::Module &module) {
  constexpr const char *name = "__truncsfbf2";
  llvm::Function *existing = module.getFunction(name);
  if (existing && !existing->isDeclaration())
    return;
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::Type::getBFloatTy(context),
                                       {llvm::Type::getFloatTy(context)},
                                       /*isVarArg=*/false);
  auto *function = llvm::cast<llvm::Function>(
      module.getOrInsertFunction(name, type).getCallee());
  // Nothing in the IR calls it (the code generator does), so llvm.used
  // keeps it; hidden: the call binds inside this module or shared object.
  // optnone keeps the optimizer from turning the bit arithmetic back into
  // an fptrunc, which would call this function.
  function->setLinkage(llvm::GlobalValue::ExternalLinkage);
  function->setVisibility(llvm::GlobalValue::HiddenVisibility);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoInline);
  function->addFnAttr(llvm::Attribute::OptimizeNone);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  llvm::Value *bits = b.CreateBitCast(function->getArg(0), b.getInt32Ty());
  llvm::Value *high = b.CreateLShr(bits, 16);
  llvm::Value *lsb = b.CreateAnd(high, 1);
  llvm::Value *rounded =
      b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(b.getInt32(0x7fff), lsb)), 16);
  llvm::Value *isNan =
      b.CreateICmpUGT(b.CreateAnd(bits, 0x7fffffff), b.getInt32(0x7f800000));
  llvm::Value *quietNan = b.CreateOr(high, 0x40);
  llvm::Value *result = b.CreateSelect(isNan, quietNan, rounded);
  b.CreateRet(
      b.CreateBitCast(b.CreateTrunc(result, b.getInt16Ty()), b.getBFloatTy()));
  llvm::appendToUsed(module, {function});
}

void moveBf16VectorsAsIntegers(llvm::Module &module) {
  auto isBf16Vector = [](llvm::Type *type) {
    auto *vector = llvm::dyn_cast<llvm::VectorType>(type);
    return vector && vector->getElementType()->isBFloatTy();
  };
  auto bitsType = [](llvm::Type *type) {
    return llvm::VectorType::get(
        llvm::Type::getInt16Ty(type->getContext()),
        llvm::cast<llvm::VectorType>(type)->getElementCount());
  };
  // A bf16 vector's bits: most come from the i16 vectors the bf16
  // emulation cast them from, constants fold.
  llvm::SmallVector<llvm::WeakTrackingVH> maybeDead;
  auto bitsOf = [&](llvm::IRBuilder<> &b, llvm::Value *value) {
    if (auto *cast = llvm::dyn_cast<llvm::BitCastInst>(value))
      if (cast->getSrcTy() == bitsType(value->getType())) {
        maybeDead.push_back(cast);
        return cast->getOperand(0);
      }
    return b.CreateBitCast(value, bitsType(value->getType()));
  };
  llvm::SmallVector<llvm::Instruction *> moves;
  for (llvm::Function &function : module)
    for (llvm::Instruction &instruction : llvm::instructions(function))
      if (((llvm::isa<llvm::LoadInst>(instruction) ||
            llvm::isa<llvm::SelectInst>(instruction)) &&
           isBf16Vector(instruction.getType())) ||
          (llvm::isa<llvm::StoreInst>(instruction) &&
           isBf16Vector(instruction.getOperand(0)->getType())))
        moves.push_back(&instruction);
  for (llvm::Instruction *move : moves) {
    llvm::IRBuilder<> b(move);
    llvm::Value *replacement;
    if (auto *load = llvm::dyn_cast<llvm::LoadInst>(move)) {
      replacement = b.CreateAlignedLoad(bitsType(load->getType()),
                                        load->getPointerOperand(),
                                        load->getAlign(), load->isVolatile());
    } else if (auto *select = llvm::dyn_cast<llvm::SelectInst>(move)) {
      replacement = b.CreateSelect(select->getCondition(),
                                   bitsOf(b, select->getTrueValue()),
                                   bitsOf(b, select->getFalseValue()));
    } else {
      auto *store = llvm::cast<llvm::StoreInst>(move);
      replacement = b.CreateAlignedStore(
          bitsOf(b, store->getValueOperand()), store->getPointerOperand(),
          store->getAlign(), store->isVolatile());
    }
    if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(replacement))
      instruction->copyMetadata(*move);
    if (!move->getType()->isVoidTy())
      move->replaceAllUsesWith(b.CreateBitCast(replacement, move->getType()));
    move->eraseFromParent();
  }
  llvm::RecursivelyDeleteTriviallyDeadInstructionsPermissive(maybeDead);
}

llvm::Error optimizeStep(llvm::Module &module) {
  if (llvm::Error error =
          makeOptimizingTransformer(kStepOptLevel, 0, nullptr)(&module))
    return error;
  // After the optimizer, whose instcombine would fold the casts back.
  moveBf16VectorsAsIntegers(module);
  return llvm::Error::success();
}

std::unique_ptr<ExecutionEngine>
compileModule(ModuleOp module, CudaDevice *cuda, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  ExecutionEngineOptions engineOptions;
  // ExecutionEngineOptions::transformer is a function_ref: the callable
  // must outlive ExecutionEngine::create (a temporary lambda left it
  // dangling, and the JIT ran unoptimized IR).
  auto transform = [](llvm::Module *llvmModule) {
    defineBf16Truncation(*llvmModule);
    return optimizeStep(*llvmModule);
  };
  engineOptions.transformer = transform;
  auto created = ExecutionEngine::create(module, engineOptions);
  if (!created) {
    error = "JIT compilation failed: " + llvm::toString(created.takeError());
    return nullptr;
  }
  std::unique_ptr<ExecutionEngine> engine = std::move(*created);
  registerRuntimeSymbols(*engine);
  // The module's global constructors load its GPU kernels (through
  // mgpuModuleLoad): they run here, once, and not at the first
  // invokePacked, which entries found with lookupPacked never go through.
  engine->initialize();
  if (cuda && !cuda->check(error)) {
    error = "loading the GPU kernels failed: " + error;
    return nullptr;
  }
  return engine;
}

bool lookUpEntry(ExecutionEngine &engine, StringRef name,
                 void (*&entry)(void **), std::string &error) {
  auto found = engine.lookupPacked(name);
  if (!found) {
    error = "JIT compilation failed: " + llvm::toString(found.takeError());
    return false;
  }
  entry = *found;
  return true;
}

} // namespace mp
