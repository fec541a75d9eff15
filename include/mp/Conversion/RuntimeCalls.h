//===- RuntimeCalls.h - runtime functions lowered code calls ----*- C++ -*-===//
//
// One table of the runtime functions that --mp-contractions-to-runtime's
// calls go to: each one's symbol, library and C prototype, written once
// (MP_RUNTIME_CALLS). The lowering declares the functions from it
// (lookupOrDeclareRuntimeCall), the JIT binds libmprt's symbols through it
// (RuntimeCallPrototype: a function of another prototype does not compile),
// and unittests/RuntimeCallsTest.cpp checks at compile time that mprt.h and
// mprt_cuda.h declare the same prototypes.
//
//===----------------------------------------------------------------------===//

#ifndef MP_CONVERSION_RUNTIMECALLS_H
#define MP_CONVERSION_RUNTIMECALLS_H

#include "mprt/mprt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <type_traits>

/// X(Id, Symbol, Library, Prototype): every runtime function lowered code
/// calls. Pointers travel as int64_t (aligned base pointer plus offset),
/// flags and type codes as int32_t; every call returns an mprt_status.
#define MP_RUNTIME_CALLS(X)                                                    \
  X(Gemm, mprt_gemm, Mprt,                                                     \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,     \
                int64_t ldc, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int32_t type))                                                 \
  X(GemmBatched, mprt_gemm_batched, Mprt,                                      \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,     \
                int64_t ldc, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int32_t type, int64_t batch, int64_t stride_a,                 \
                int64_t stride_b, int64_t stride_c))                           \
  X(GemmBatched2d, mprt_gemm_batched_2d, Mprt,                                 \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,     \
                int64_t ldc, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int32_t type, int64_t outer, int64_t outer_stride_a,           \
                int64_t outer_stride_b, int64_t outer_stride_c,                \
                int64_t batch, int64_t stride_a, int64_t stride_b,             \
                int64_t stride_c))                                             \
  X(GemmBias, mprt_gemm_bias, Mprt,                                            \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,     \
                int64_t ldc, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int32_t type, int64_t bias))                                   \
  X(GemmS8Dequantize, mprt_gemm_s8_dequantize, Mprt,                           \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t d,     \
                int64_t ldd, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int64_t bias, int64_t scale))                                  \
  X(GemmS8DequantizeAbsMax, mprt_gemm_s8_dequantize_absmax, Mprt,              \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t d,     \
                int64_t ldd, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int64_t bias, int64_t scale, int64_t partials,                 \
                int64_t lanes))                                                \
  X(CudaGemmSync, mprt_cuda_gemm_sync, MprtCuda,                               \
    mprt_status(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,     \
                int64_t ldc, int64_t m, int64_t n, int64_t k, int32_t flags,   \
                int32_t type, int64_t batch, int64_t stride_a,                 \
                int64_t stride_b, int64_t stride_c))

namespace mlir {
namespace mp {

/// A runtime function lowered code calls (MP_RUNTIME_CALLS).
enum class RuntimeCall : unsigned {
#define MP_RUNTIME_CALL_ID(Id, Symbol, Library, ...) Id,
  MP_RUNTIME_CALLS(MP_RUNTIME_CALL_ID)
#undef MP_RUNTIME_CALL_ID
};

/// The library that defines a runtime function: libmprt (bound by the JIT
/// session, imported by artifacts) or libmprt_cuda (loaded with the CUDA
/// backend).
enum class RuntimeLibrary { Mprt, MprtCuda };

/// The C types a runtime call passes, as MLIR sees them.
enum class RuntimeValueKind : uint8_t { I32, I64 };

namespace detail {
template <typename T> constexpr RuntimeValueKind runtimeValueKindOf() {
  static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> ||
                    std::is_same_v<T, mprt_status>,
                "runtime calls pass int64_t and int32_t, return mprt_status");
  return std::is_same_v<T, int64_t> ? RuntimeValueKind::I64
                                    : RuntimeValueKind::I32;
}

template <typename Prototype> struct RuntimePrototypeKinds;
template <typename Result, typename... Args>
struct RuntimePrototypeKinds<Result(Args...)> {
  static constexpr RuntimeValueKind result = runtimeValueKindOf<Result>();
  static constexpr std::array<RuntimeValueKind, sizeof...(Args)> args = {
      runtimeValueKindOf<Args>()...};
};

template <RuntimeCall Call> struct RuntimeCallPrototypeOf;
#define MP_RUNTIME_CALL_PROTOTYPE(Id, Symbol, Library, ...)                    \
  template <> struct RuntimeCallPrototypeOf<RuntimeCall::Id> {                 \
    using prototype = __VA_ARGS__;                                             \
  };
MP_RUNTIME_CALLS(MP_RUNTIME_CALL_PROTOTYPE)
#undef MP_RUNTIME_CALL_PROTOTYPE
} // namespace detail

/// The C function type of \p Call, e.g. that of mprt_gemm for
/// RuntimeCall::Gemm.
template <RuntimeCall Call>
using RuntimeCallPrototype =
    typename detail::RuntimeCallPrototypeOf<Call>::prototype;

/// What the table says of one runtime function.
struct RuntimeCallInfo {
  RuntimeCall call;
  llvm::StringLiteral symbol;
  RuntimeLibrary library;
  llvm::ArrayRef<RuntimeValueKind> args;
  RuntimeValueKind result;
};

/// Every entry of the table, in its order.
llvm::ArrayRef<RuntimeCallInfo> getRuntimeCalls();
/// The entry of \p call.
const RuntimeCallInfo &getRuntimeCallInfo(RuntimeCall call);

/// The function type calls of \p call have, e.g. (i64 x 9, i32, i32) -> i32
/// for mprt_gemm.
FunctionType getRuntimeCallType(MLIRContext *context, RuntimeCall call);

/// The private declaration of \p call in \p module: the existing one, or a
/// new one made at the start of the module's body.
func::FuncOp lookupOrDeclareRuntimeCall(OpBuilder &builder, ModuleOp module,
                                        RuntimeCall call);

} // namespace mp
} // namespace mlir

#endif // MP_CONVERSION_RUNTIMECALLS_H
