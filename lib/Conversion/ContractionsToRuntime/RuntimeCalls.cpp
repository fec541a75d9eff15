//===- RuntimeCalls.cpp - the runtime functions lowered code calls --------===//
//
// The table of MP_RUNTIME_CALLS as data, and the declarations of its
// functions in IR.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/RuntimeCalls.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::mp;

llvm::ArrayRef<RuntimeCallInfo> mlir::mp::getRuntimeCalls() {
#define MP_RUNTIME_CALL_INFO(Id, Symbol, Library, ...)                         \
  RuntimeCallInfo{                                                             \
      RuntimeCall::Id, #Symbol, RuntimeLibrary::Library,                       \
      detail::RuntimePrototypeKinds<RuntimeCallPrototype<RuntimeCall::Id>>::   \
          args,                                                                \
      detail::RuntimePrototypeKinds<                                           \
          RuntimeCallPrototype<RuntimeCall::Id>>::result},
  static const RuntimeCallInfo calls[] = {
      MP_RUNTIME_CALLS(MP_RUNTIME_CALL_INFO)};
#undef MP_RUNTIME_CALL_INFO
  return calls;
}

const RuntimeCallInfo &mlir::mp::getRuntimeCallInfo(RuntimeCall call) {
  const RuntimeCallInfo &info = getRuntimeCalls()[static_cast<unsigned>(call)];
  assert(info.call == call && "the table is in RuntimeCall's order");
  return info;
}

static Type typeOf(MLIRContext *context, RuntimeValueKind kind) {
  return IntegerType::get(context, kind == RuntimeValueKind::I64 ? 64 : 32);
}

FunctionType mlir::mp::getRuntimeCallType(MLIRContext *context,
                                          RuntimeCall call) {
  const RuntimeCallInfo &info = getRuntimeCallInfo(call);
  SmallVector<Type> args;
  for (RuntimeValueKind kind : info.args)
    args.push_back(typeOf(context, kind));
  return FunctionType::get(context, args, {typeOf(context, info.result)});
}

func::FuncOp mlir::mp::lookupOrDeclareRuntimeCall(OpBuilder &builder,
                                                  ModuleOp module,
                                                  RuntimeCall call) {
  StringRef symbol = getRuntimeCallInfo(call).symbol;
  if (auto existing = module.lookupSymbol<func::FuncOp>(symbol))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  auto callee =
      func::FuncOp::create(builder, module.getLoc(), symbol,
                           getRuntimeCallType(module.getContext(), call));
  callee.setPrivate();
  return callee;
}
