//===- RuntimeCallsTest.cpp - the runtime call table against mprt.h ------===//
//
// RuntimeCalls.h's table is what --mp-contractions-to-runtime declares and
// what the JIT binds; mprt.h and mprt_cuda.h are what libmprt and
// libmprt_cuda define. A prototype that differs between them does not
// compile (the static_asserts below); the tests check that the JIT binds
// every libmprt function of the table and that the IR declarations take
// the table's types.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/RuntimeCalls.h"
#include "mp/Session/JitEntry.h"
#include "mprt/mprt.h"
#include "mprt/mprt_cuda.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlir;
using namespace mlir::mp;

#define MP_CHECK_RUNTIME_PROTOTYPE(Id, Symbol, Library, ...)                   \
  static_assert(                                                               \
      std::is_same_v<decltype(::Symbol),                                       \
                     RuntimeCallPrototype<RuntimeCall::Id>>,                   \
      #Symbol " is declared with another prototype than RuntimeCalls.h's");
MP_RUNTIME_CALLS(MP_CHECK_RUNTIME_PROTOTYPE)
#undef MP_CHECK_RUNTIME_PROTOTYPE

namespace {

const ::mp::RuntimeSymbol *findJitSymbol(llvm::StringRef name) {
  for (const ::mp::RuntimeSymbol &symbol : ::mp::runtimeSymbols())
    if (name == symbol.name)
      return &symbol;
  return nullptr;
}

TEST(RuntimeCalls, TableFollowsTheEnum) {
  llvm::ArrayRef<RuntimeCallInfo> calls = getRuntimeCalls();
  ASSERT_EQ(calls.size(), 7u);
  for (unsigned i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(static_cast<unsigned>(calls[i].call), i);
    EXPECT_EQ(&getRuntimeCallInfo(calls[i].call), &calls[i]);
  }
  EXPECT_EQ(getRuntimeCallInfo(RuntimeCall::GemmBias).symbol,
            "mprt_gemm_bias");
  EXPECT_EQ(getRuntimeCallInfo(RuntimeCall::CudaGemmSync).library,
            RuntimeLibrary::MprtCuda);
}

// The JIT session binds libmprt's functions of the table, at the symbols
// the lowering calls; libmprt_cuda's come with that library.
TEST(RuntimeCalls, JitBindsEveryLibmprtCall) {
  for (const RuntimeCallInfo &call : getRuntimeCalls()) {
    const ::mp::RuntimeSymbol *symbol = findJitSymbol(call.symbol);
    if (call.library == RuntimeLibrary::MprtCuda) {
      EXPECT_EQ(symbol, nullptr) << call.symbol.str();
      continue;
    }
    ASSERT_NE(symbol, nullptr) << call.symbol.str() << " is not bound";
    EXPECT_NE(symbol->address, nullptr) << call.symbol.str();
  }
  const ::mp::RuntimeSymbol *gemm = findJitSymbol("mprt_gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->address, reinterpret_cast<void *>(&mprt_gemm));
}

TEST(RuntimeCalls, IrTypesFollowThePrototypes) {
  MLIRContext context;
  Builder b(&context);
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  SmallVector<Type> gemm(9, i64);
  gemm.append({i32, i32});
  EXPECT_EQ(getRuntimeCallType(&context, RuntimeCall::Gemm),
            b.getFunctionType(gemm, {i32}));
  SmallVector<Type> dequantize(9, i64);
  dequantize.append({i32, i64, i64, i64, i64});
  EXPECT_EQ(getRuntimeCallType(&context, RuntimeCall::GemmS8DequantizeAbsMax),
            b.getFunctionType(dequantize, {i32}));
  SmallVector<Type> batched2d(9, i64);
  batched2d.append({i32, i32});
  batched2d.append(8, i64);
  EXPECT_EQ(getRuntimeCallType(&context, RuntimeCall::GemmBatched2d),
            b.getFunctionType(batched2d, {i32}));
}

TEST(RuntimeCalls, DeclaresEachFunctionOnce) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  func::FuncOp first =
      lookupOrDeclareRuntimeCall(b, *module, RuntimeCall::GemmBatched);
  func::FuncOp again =
      lookupOrDeclareRuntimeCall(b, *module, RuntimeCall::GemmBatched);
  EXPECT_EQ(first, again);
  EXPECT_TRUE(first.isPrivate());
  EXPECT_EQ(first.getSymName(), "mprt_gemm_batched");
  EXPECT_EQ(first.getFunctionType(),
            getRuntimeCallType(&context, RuntimeCall::GemmBatched));
  EXPECT_EQ(std::distance(module->getBody()->begin(),
                          module->getBody()->end()),
            1);
}

} // namespace
