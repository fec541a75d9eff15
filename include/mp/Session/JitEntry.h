//===- JitEntry.h - call JIT-compiled functions on host buffers -*- C++ -*-===//
//
// What Session and InferSession share: their MLIR context, the lowering for
// the CPU or the GPU, the runtime functions compiled code calls, and the
// packed arguments ExecutionEngine's invokePacked takes to call an entry.
// (The entries themselves are passes: mp/Transforms/Entries.h.)
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_JITENTRY_H
#define MP_SESSION_JITENTRY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include "mprt/mprt.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mp {

/// While it lives, the calling thread's OpenMP thread count (compiled
/// loops and oneDNN's products) is mp's own, mprt_threads(): every core,
/// MPRT_NUM_THREADS or OMP_NUM_THREADS, whatever another library in the
/// process set libgomp to. A compiled step or prediction runs inside one.
class StepThreads {
public:
  StepThreads() : previous(mprt_threads_enter()) {}
  ~StepThreads() { mprt_threads_leave(previous); }
  StepThreads(const StepThreads &) = delete;
  StepThreads &operator=(const StepThreads &) = delete;

private:
  int32_t previous;
};

/// The expanded memref arguments of an LLVM-lowered function (allocated
/// pointer, aligned pointer, offset, sizes, strides), packed as pointers for
/// ExecutionEngine::invokePacked.
class PackedArgs {
public:
  void addMemRef(void *data, const std::vector<int64_t> &shape) {
    auto desc = std::make_unique<Descriptor>();
    desc->allocated = desc->aligned = data;
    desc->offset = 0;
    int64_t stride = 1;
    desc->sizes.assign(shape.begin(), shape.end());
    desc->strides.assign(shape.size(), 0);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
      desc->strides[i] = stride;
      stride *= shape[i];
    }
    pointers.push_back(&desc->allocated);
    pointers.push_back(&desc->aligned);
    pointers.push_back(&desc->offset);
    for (int64_t &s : desc->sizes)
      pointers.push_back(&s);
    for (int64_t &s : desc->strides)
      pointers.push_back(&s);
    descriptors.push_back(std::move(desc));
  }
  llvm::MutableArrayRef<void *> get() { return pointers; }

private:
  struct Descriptor {
    void *allocated;
    void *aligned;
    int64_t offset;
    std::vector<int64_t> sizes, strides;
  };
  std::vector<std::unique_ptr<Descriptor>> descriptors;
  std::vector<void *> pointers;
};

/// A context with every dialect a session parses and lowers, loaded, and
/// the translations to LLVM IR of CPU and GPU (gpu.binary, NVVM) code.
std::unique_ptr<mlir::MLIRContext> createSessionContext();

/// While alive, collects every diagnostic of `context` as a "location:
/// message" line in `text`, which the sessions' errors quote.
class DiagnosticText {
public:
  explicit DiagnosticText(mlir::MLIRContext *context);
  std::string text;

private:
  llvm::raw_string_ostream os{text};
  mlir::ScopedDiagnosticHandler handler;
};

/// Parses the model file `path` in `context`: MLIR, or an ONNX model
/// (`.onnx`, imported by mp::importOnnxModel with its weights as
/// mp.initial_value and a dynamic batch dimension set to `batch` when it
/// is not 0). Null with `error` ("cannot load model" and the
/// diagnostics) when it cannot.
mlir::OwningOpRef<mlir::ModuleOp> parseModel(const std::string &path,
                                             mlir::MLIRContext *context,
                                             const DiagnosticText &diagnostics,
                                             std::string &error,
                                             int64_t batch = 0);

/// Whether `path` names an ONNX model (by its extension).
bool isOnnxModel(const std::string &path);

/// The starting values (mp.initial_value) of the mp.param arguments of the
/// model's mp.loss or mp.predict function, by parameter name; the
/// attributes are removed from the module (the pipelines do not need
/// them).
std::map<std::string, std::vector<float>>
takeInitialValues(mlir::ModuleOp module);

/// Writes `module` to `path` when it is not empty (the dump-ir option:
/// debugging); false with `error` when that file cannot be written.
bool dumpModuleIfAsked(mlir::ModuleOp module, const std::string &path,
                       std::string &error);

/// What the CPU lowering may do, from a session's options
/// (LoweringOptions.def): run large parallel loops on every OpenMP thread
/// (--mp-parallelize-loops), compute f32 exp, log, tanh and erf with vector
/// polynomials (--mp-approximate-math), and leave f32 <-> bf16 conversions
/// to LLVM, which uses AVX512-BF16 instructions on a host that has them
/// (--mp-lower-cpu native-bf16). Each off only to compare.
struct LoweringChoices {
  bool parallelLoops = true;
  bool approximateMath = true;
  bool nativeBf16 = true;
};

/// The lowering choices of a training or inference session's options.
template <typename Options>
LoweringChoices loweringChoices(const Options &options) {
  return {options.parallelLoops, options.approximateMath, options.nativeBf16};
}

/// Whether this host has AVX512-BF16 (the features the JIT's and
/// artifacts' target machines are built with).
bool hostHasNativeBf16();

/// Lowers a module on tensors to the LLVM dialect: for the CPU with runtime
/// contractions and `choices`, vectorized, or with
/// scalar loops where the vectorizer fails (`vectorized` says which); with
/// `gpu`, by --mp-lower-gpu with every buffer in device memory. False on
/// failure, with what MLIR reported in `diagnostics` (the string the context's
/// handler writes to). `pipeline` gets the lowering's textual pipeline
/// (`builtin.module(mp-lower-cpu{...})`), as mp-opt takes it.
bool lowerModule(mlir::OwningOpRef<mlir::ModuleOp> &module, bool gpu,
                 const LoweringChoices &choices, std::string &diagnostics,
                 bool &vectorized, std::string &pipeline);

/// A runtime function compiled code calls (mprt_gemm, the counted heap's
/// malloc/free, mprt_observe, memrefCopy), by the symbol the code uses.
struct RuntimeSymbol {
  const char *name;
  void *address;
};
/// Every runtime function compiled code may call: what a JIT session binds
/// and what an artifact's imports resolve to.
llvm::ArrayRef<RuntimeSymbol> runtimeSymbols();
/// Binds runtimeSymbols() in a JIT session.
void registerRuntimeSymbols(mlir::ExecutionEngine &engine);

/// Defines __truncsfbf2 (f32 -> bf16, round to nearest even, NaNs kept
/// quiet) in `module`. On a CPU without AVX512-BF16, LLVM's code generator
/// keeps bf16 values in f32 registers and rounds them back with a call to
/// that function, which libgcc before GCC 13 (Debian 12's) does not have:
/// the JIT could not resolve it and an artifact would not link. Call before
/// optimizing; on CPUs with AVX512-BF16 the definition is simply unused.
void defineBf16Truncation(llvm::Module &module);

/// Loads, stores and selects of bf16 vectors become ones of i16 vectors
/// (the same bits). Without AVX512-BF16, LLVM 22's x86 code generator
/// breaks them into one element at a time: a select (the bf16 rounding's
/// NaN case) into a compare and branch per lane, a transposing copy of
/// attention heads into 2-byte moves (0.5 s to compile that one loop).
/// i16 vectors stay whole registers. Run after the optimizer, whose
/// instcombine would move the casts back.
void moveBf16VectorsAsIntegers(llvm::Module &module);

/// LLVM's optimization level for compiled steps, JIT and artifacts alike.
/// O2: on the encoder block of bench/transformer_bench.py, O3 took twice as
/// long to optimize and generate code (its unrolling doubles the machine
/// code) for the same step time; mp's own passes have vectorized the loops.
constexpr unsigned kStepOptLevel = 2;

/// What a translated step goes through before code generation, in the JIT
/// and in each piece of an artifact: LLVM's kStepOptLevel pipeline, then
/// moveBf16VectorsAsIntegers. defineBf16Truncation comes first, once per
/// program.
llvm::Error optimizeStep(llvm::Module &module);

class CudaDevice;
/// JIT-compiles a lowered module for this CPU (optimizeStep), binds the
/// runtime's symbols and runs the module's global constructors, which load
/// its GPU kernels (one per gpu.binary) on `cuda` when it is not null. Null
/// with `error` on failure.
std::unique_ptr<mlir::ExecutionEngine>
compileModule(mlir::ModuleOp module, CudaDevice *cuda, std::string &error);

/// The packed wrapper (`_mlir_<name>`) of the JIT-compiled entry `name`;
/// false with `error` when the engine has none.
bool lookUpEntry(mlir::ExecutionEngine &engine, llvm::StringRef name,
                 void (*&entry)(void **), std::string &error);

} // namespace mp

#endif // MP_SESSION_JITENTRY_H
