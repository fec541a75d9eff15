//===- ParallelLaunchesToRuntime.cpp - launches to mprt_parallel_for ------===//
//
// --mp-parallelize-loops leaves each parallel loop as a call of a
// declaration `@body_launch(n, captured...)` beside the outlined
// `@body(begin, end, captured...)`. Here, on the LLVM dialect, the captured
// values (memref descriptors already expanded into pointers and integers)
// have their final types: they are stored into one struct on the caller's
// stack and the runtime gets a single pointer, which an entry point
// `@body_entry(begin, end, context)` unpacks. That keeps the runtime's
// interface one C signature whatever a loop captures.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPPARALLELLAUNCHESTORUNTIME
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kRuntimeName = "mprt_parallel_for";

/// Whether \p launchType is (i64 n, captured...) and \p bodyType
/// (i64 begin, i64 end, captured...) -> void.
bool signaturesMatch(LLVM::LLVMFunctionType launchType,
                     LLVM::LLVMFunctionType bodyType, Type i64) {
  ArrayRef<Type> captured = launchType.getParams().drop_front();
  return launchType.getNumParams() >= 1 && launchType.getParams()[0] == i64 &&
         bodyType.getNumParams() == launchType.getNumParams() + 1 &&
         bodyType.getParams()[0] == i64 && bodyType.getParams()[1] == i64 &&
         bodyType.getParams().drop_front(2) == captured &&
         isa<LLVM::LLVMVoidType>(bodyType.getReturnType());
}

/// Pointers to buffers that no other argument reaches (the positions the
/// body's mp.parallel_noalias names) become noalias arguments.
LogicalResult markNoalias(LLVM::LLVMFuncOp body) {
  auto noalias =
      body->getAttrOfType<DenseI64ArrayAttr>(mp::kParallelNoaliasAttrName);
  if (!noalias)
    return success();
  LLVM::LLVMFunctionType bodyType = body.getFunctionType();
  for (int64_t position : noalias.asArrayRef()) {
    if (position >= bodyType.getNumParams() ||
        !isa<LLVM::LLVMPointerType>(bodyType.getParams()[position]))
      return body.emitError()
             << "mp-parallel-launches-to-runtime: "
             << mp::kParallelNoaliasAttrName << " position " << position
             << " is not a pointer argument of " << bodyType;
    body.setArgAttr(position, LLVM::LLVMDialect::getNoAliasAttrName(),
                    UnitAttr::get(body.getContext()));
  }
  body->removeAttr(mp::kParallelNoaliasAttrName);
  return success();
}

/// @body_entry(begin, end, context) after \p body: unpacks the captured
/// values from the struct \p context points to and calls the body.
LLVM::LLVMFuncOp buildEntry(OpBuilder &builder, LLVM::LLVMFuncOp body,
                            LLVM::LLVMStructType contextType,
                            ArrayRef<Type> captured, SymbolTable &symbols) {
  MLIRContext *context = body.getContext();
  Location loc = body.getLoc();
  Type i64 = IntegerType::get(context, 64);
  Type ptr = LLVM::LLVMPointerType::get(context);
  Type voidType = LLVM::LLVMVoidType::get(context);
  builder.setInsertionPointAfter(body);
  auto entry = LLVM::LLVMFuncOp::create(
      builder, loc, (body.getSymName() + "_entry").str(),
      LLVM::LLVMFunctionType::get(voidType, {i64, i64, ptr}),
      LLVM::Linkage::Internal);
  symbols.insert(entry);
  Block *block = entry.addEntryBlock(builder);
  builder.setInsertionPointToStart(block);
  SmallVector<Value> arguments = {block->getArgument(0), block->getArgument(1)};
  if (!captured.empty()) {
    Value packed =
        LLVM::LoadOp::create(builder, loc, contextType, block->getArgument(2));
    for (int64_t i = 0, e = captured.size(); i < e; ++i)
      arguments.push_back(
          LLVM::ExtractValueOp::create(builder, loc, packed, i));
  }
  LLVM::CallOp::create(builder, loc, body, arguments);
  LLVM::ReturnOp::create(builder, loc, ValueRange());
  return entry;
}

/// The pointer to the captured values \p call passes: null when there are
/// none, else a struct on the caller's stack (allocated once, in its entry
/// block) filled before the call.
Value packCaptured(OpBuilder &builder, Location loc, LLVM::CallOp call,
                   LLVM::LLVMStructType contextType, bool capturesNothing) {
  Type ptr = LLVM::LLVMPointerType::get(builder.getContext());
  if (capturesNothing) {
    builder.setInsertionPoint(call);
    return LLVM::ZeroOp::create(builder, loc, ptr);
  }
  auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
  builder.setInsertionPointToStart(&caller.getBody().front());
  Value one = LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                       builder.getI64IntegerAttr(1));
  Value contextPointer =
      LLVM::AllocaOp::create(builder, loc, ptr, contextType, one);
  builder.setInsertionPoint(call);
  Value packed = LLVM::UndefOp::create(builder, loc, contextType);
  for (auto [i, value] : llvm::enumerate(call.getArgOperands().drop_front()))
    packed = LLVM::InsertValueOp::create(builder, loc, packed, value, i);
  LLVM::StoreOp::create(builder, loc, packed, contextPointer);
  return contextPointer;
}

struct ParallelLaunchesToRuntimePass
    : public mp::impl::MPParallelLaunchesToRuntimeBase<
          ParallelLaunchesToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> launches;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (function->hasAttr(mp::kParallelLaunchAttrName))
        launches.push_back(function);
    if (launches.empty())
      return;
    // The calls of every launch, in one walk (a step has hundreds).
    llvm::DenseMap<StringAttr, SmallVector<LLVM::CallOp>> calls;
    for (LLVM::LLVMFuncOp launch : launches)
      calls[launch.getSymNameAttr()];
    WalkResult walk = module.walk([&](Operation *op) {
      auto call = dyn_cast<LLVM::CallOp>(op);
      if (call && call.getCalleeAttr()) {
        auto found = calls.find(call.getCalleeAttr().getAttr());
        if (found != calls.end())
          found->second.push_back(call);
        return WalkResult::advance();
      }
      // Anything else that names a launch (its address taken, say).
      for (NamedAttribute attr : op->getAttrs()) {
        auto symbol = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
        if (symbol && !isa<LLVM::LLVMFuncOp>(op) &&
            calls.count(symbol.getAttr())) {
          op->emitError() << "mp-parallel-launches-to-runtime: a parallel "
                             "launch may only be called directly";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (LLVM::LLVMFuncOp launch : launches)
      if (failed(lower(launch, calls[launch.getSymNameAttr()], symbols)))
        return signalPassFailure();
  }

  /// The body \p launch names, or null (reported) when it is not an LLVM
  /// function defined in this module.
  static LLVM::LLVMFuncOp bodyOf(LLVM::LLVMFuncOp launch,
                                 SymbolTable &symbols) {
    auto bodyName = dyn_cast<FlatSymbolRefAttr>(
        launch->getAttr(mp::kParallelLaunchAttrName));
    auto body = bodyName ? symbols.lookup<LLVM::LLVMFuncOp>(bodyName.getValue())
                         : LLVM::LLVMFuncOp();
    if (body && !body.isExternal())
      return body;
    launch.emitError()
        << "mp-parallel-launches-to-runtime: the launch's body "
        << launch->getAttr(mp::kParallelLaunchAttrName)
        << " is not an LLVM function defined in this module (run "
           "convert-func-to-llvm first)";
    return {};
  }

  LogicalResult lower(LLVM::LLVMFuncOp launch, ArrayRef<LLVM::CallOp> calls,
                      SymbolTable &symbols) {
    LLVM::LLVMFuncOp body = bodyOf(launch, symbols);
    if (!body)
      return failure();
    LLVM::LLVMFunctionType launchType = launch.getFunctionType();
    LLVM::LLVMFunctionType bodyType = body.getFunctionType();
    ArrayRef<Type> captured = launchType.getParams().drop_front();
    MLIRContext *context = &getContext();
    Type i64 = IntegerType::get(context, 64);
    if (!signaturesMatch(launchType, bodyType, i64))
      return launch.emitError()
             << "mp-parallel-launches-to-runtime: launch " << launchType
             << " does not match body " << bodyType
             << " (expected (i64 n, captured...) and (i64 begin, i64 end, "
                "captured...) -> void)";
    if (failed(markNoalias(body)))
      return failure();

    OpBuilder builder(context);
    Location loc = body.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(context);
    Type voidType = LLVM::LLVMVoidType::get(context);
    auto contextType = LLVM::LLVMStructType::getLiteral(context, captured);
    LLVM::LLVMFuncOp entry =
        buildEntry(builder, body, contextType, captured, symbols);
    // The body is reached only through its entry: LLVM may inline it there.
    body.setLinkage(LLVM::Linkage::Internal);

    FailureOr<LLVM::LLVMFuncOp> runtime = LLVM::lookupOrCreateFn(
        builder, getOperation(), kRuntimeName, {i64, ptr, ptr}, voidType);
    if (failed(runtime))
      return launch.emitError()
             << "mp-parallel-launches-to-runtime: " << kRuntimeName
             << " is declared with another signature";

    // Every call: the captured values, then the runtime.
    for (LLVM::CallOp call : calls) {
      Value contextPointer =
          packCaptured(builder, loc, call, contextType, captured.empty());
      Value function = LLVM::AddressOfOp::create(builder, loc, entry);
      LLVM::CallOp::create(
          builder, loc, *runtime,
          ValueRange{call.getArgOperands()[0], function, contextPointer});
      call.erase();
    }
    symbols.erase(launch);
    return success();
  }
};

} // namespace
