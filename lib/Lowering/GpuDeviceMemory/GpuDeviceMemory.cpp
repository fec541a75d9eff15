//===- GpuDeviceMemory.cpp - every buffer of host functions on the GPU ----===//
//
// --mp-lower-gpu{device-memory=true}: host functions keep their buffers in
// device memory. Allocations become gpu.alloc/gpu.dealloc (the runtime's
// pool), constants are copied from their host globals into device buffers,
// and the few element reads host code still does (a loss, found_inf: rank-0
// reduction results) are staged through a one-element host buffer with a
// device-to-host gpu.memcpy. Element writes are left to
// --mp-gpu-map-parallel-loops, which makes them one-thread kernels.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPGPUDEVICEMEMORY
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

constexpr StringLiteral kPass = "mp-gpu-device-memory: ";

/// True when no loop (nor gpu.launch) between \p op and its function
/// encloses it: the op runs on the host, not in a future kernel.
bool isHostLevel(Operation *op) {
  for (Operation *parent = op->getParentOp();
       parent && !isa<func::FuncOp>(parent); parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface, gpu::LaunchOp>(parent))
      return false;
  return true;
}

/// Whether \p value, or a view of it, is returned by a func.return.
bool reachesReturn(Value value) {
  SmallVector<Value> work{value};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user))
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v)
        llvm::append_range(work, user->getResults());
      else if (isa<memref::CastOp>(user))
        llvm::append_range(work, user->getResults());
    }
  }
  return false;
}

/// The identity-layout type gpu.alloc and gpu.memcpy lower with.
bool hasIdentityLayout(MemRefType type) {
  return type.getLayout().isIdentity();
}

/// A use of a global's host memref that must read a device copy: any but
/// a host-level load.
bool isDeviceUse(OpOperand &use) {
  auto load = dyn_cast<memref::LoadOp>(use.getOwner());
  return !(load && isHostLevel(load));
}

/// The ops of a function this pass rewrites, collected before any rewrite
/// (which creates ops of the same kinds).
struct MemoryOps {
  SmallVector<memref::AllocOp> allocs;
  SmallVector<memref::DeallocOp> deallocs;
  SmallVector<memref::AllocaOp> allocas;
  SmallVector<memref::GetGlobalOp> globals;
  SmallVector<memref::LoadOp> loads;

  /// Records \p op when the pass rewrites it; interrupts (reported) for an
  /// op device memory cannot serve.
  WalkResult record(Operation *op);

private:
  WalkResult recordHostAccess(Operation *op, bool host);
};

WalkResult MemoryOps::record(Operation *op) {
  bool host = isHostLevel(op);
  if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
    if (!host)
      return op->emitError(kPass)
             << "'memref.alloc' inside a loop nest would allocate in a "
                "kernel; device buffers are allocated by host code";
    allocs.push_back(alloc);
    return WalkResult::advance();
  }
  if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
    if (!host)
      return op->emitError(kPass)
             << "'memref.dealloc' inside a loop nest would free in a "
                "kernel; device buffers are freed by host code";
    deallocs.push_back(dealloc);
    return WalkResult::advance();
  }
  return recordHostAccess(op, host);
}

WalkResult MemoryOps::recordHostAccess(Operation *op, bool host) {
  if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
    // Inside a loop nest it is a kernel thread's private array.
    if (host)
      allocas.push_back(alloca);
  } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
    globals.push_back(global);
  } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
    if (host)
      loads.push_back(load);
  } else if (host && isa<memref::AtomicRMWOp, memref::GenericAtomicRMWOp,
                         memref::ReallocOp, memref::AllocaScopeOp>(op)) {
    return op->emitError(kPass)
           << "host code would access device memory ('" << op->getName()
           << "'); device-memory mode has no staging for it";
  }
  return WalkResult::advance();
}

struct MPGpuDeviceMemory
    : public mp::impl::MPGpuDeviceMemoryBase<MPGpuDeviceMemory> {
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(convertFunction(func)))
        return signalPassFailure();
  }

  /// gpu.dealloc of \p buffer before every return of \p func.
  void deallocAtReturns(func::FuncOp func, Value buffer) {
    func.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      gpu::DeallocOp::create(b, ret.getLoc(), TypeRange(), ValueRange(),
                             buffer);
    });
  }

  LogicalResult moveAllocsToDevice(ArrayRef<memref::AllocOp> allocs) {
    for (memref::AllocOp alloc : allocs) {
      if (!hasIdentityLayout(alloc.getType()))
        return alloc.emitError(kPass)
               << "device buffers need an identity layout, got "
               << alloc.getType();
      OpBuilder b(alloc);
      auto device = gpu::AllocOp::create(
          b, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
          ValueRange(), alloc.getDynamicSizes(), alloc.getSymbolOperands(),
          /*hostShared=*/false);
      alloc.replaceAllUsesWith(device.getMemref());
      alloc.erase();
      ++numAllocs;
    }
    return success();
  }

  void moveDeallocsToDevice(ArrayRef<memref::DeallocOp> deallocs) {
    for (memref::DeallocOp dealloc : deallocs) {
      OpBuilder b(dealloc);
      gpu::DeallocOp::create(b, dealloc.getLoc(), TypeRange(), ValueRange(),
                             dealloc.getMemref());
      dealloc.erase();
      ++numDeallocs;
    }
  }

  /// Stack buffers of element data: device buffers that live until the
  /// function returns, as the alloca's did.
  LogicalResult moveAllocasToDevice(func::FuncOp func,
                                    ArrayRef<memref::AllocaOp> allocas) {
    for (memref::AllocaOp alloca : allocas) {
      if (alloca->getBlock() != &func.getBody().front())
        return alloca.emitError(kPass)
               << "'memref.alloca' of element data outside the function's "
                  "entry block; device-memory mode cannot free a device "
                  "copy of it";
      if (!hasIdentityLayout(alloca.getType()))
        return alloca.emitError(kPass)
               << "device buffers need an identity layout, got "
               << alloca.getType();
      OpBuilder b(alloca);
      auto device = gpu::AllocOp::create(
          b, alloca.getLoc(), alloca.getType(), Type(), ValueRange(),
          alloca.getDynamicSizes(), alloca.getSymbolOperands(), false);
      alloca.replaceAllUsesWith(device.getMemref());
      alloca.erase();
      deallocAtReturns(func, device.getMemref());
      ++numAllocas;
    }
    return success();
  }

  LogicalResult convertFunction(func::FuncOp func) {
    MemoryOps ops;
    WalkResult walk =
        func.walk([&](Operation *op) -> WalkResult { return ops.record(op); });
    if (walk.wasInterrupted())
      return failure();
    if (failed(moveAllocsToDevice(ops.allocs)))
      return failure();
    moveDeallocsToDevice(ops.deallocs);
    if (failed(moveAllocasToDevice(func, ops.allocas)) ||
        failed(copyGlobals(func, ops.globals)) ||
        failed(stageLoads(func, ops.loads)))
      return failure();
    return success();
  }

  /// The device copy of the global \p get reads, made at \p entry (once
  /// per global: \p copy caches it) and freed at the returns.
  Value deviceCopy(func::FuncOp func, memref::GetGlobalOp get, Value &copy) {
    if (copy)
      return copy;
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    Location loc = get.getLoc();
    auto host =
        memref::GetGlobalOp::create(b, loc, get.getType(), get.getNameAttr());
    copy = gpu::AllocOp::create(b, loc, get.getType(), Type(), ValueRange(),
                                ValueRange(), ValueRange(), false)
               .getMemref();
    gpu::MemcpyOp::create(b, loc, TypeRange(), ValueRange(), copy, host);
    deallocAtReturns(func, copy);
    ++numGlobals;
    return copy;
  }

  /// Fails (reported) unless the global \p get reads may have a device
  /// copy: it exists, is constant, and has an identity layout.
  static LogicalResult checkCopyable(memref::GetGlobalOp get,
                                     memref::GlobalOp global) {
    if (!global.getConstant())
      return get.emitError(kPass)
             << "global '" << get.getName()
             << "' is not constant: kernels would write a device copy "
                "that is never copied back";
    if (!hasIdentityLayout(get.getType()))
      return get.emitError(kPass)
             << "device buffers need an identity layout, got " << get.getType();
    return success();
  }

  /// One device copy per global a function reads, made at its entry and
  /// freed at its returns. Host-level loads keep reading the host global.
  LogicalResult copyGlobals(func::FuncOp func,
                            ArrayRef<memref::GetGlobalOp> globals) {
    llvm::MapVector<StringAttr, Value> copies;
    for (memref::GetGlobalOp get : globals) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      if (!global)
        return get.emitError(kPass) << "no memref.global " << get.getName();
      if (llvm::none_of(get->getUses(), isDeviceUse))
        continue;
      if (failed(checkCopyable(get, global)))
        return failure();
      Value copy = deviceCopy(func, get, copies[get.getNameAttr().getAttr()]);
      get.getResult().replaceUsesWithIf(copy, isDeviceUse);
      if (get.use_empty())
        get.erase();
    }
    for (auto [name, copy] : copies)
      if (reachesReturn(copy))
        return func.emitError(kPass)
               << "returns the device copy of constant '" << name.getValue()
               << "', which is freed when the function returns";
    return success();
  }

  /// Host reads of single-element device buffers go through a host buffer.
  LogicalResult stageLoads(func::FuncOp func, ArrayRef<memref::LoadOp> loads) {
    Block &entry = func.getBody().front();
    for (memref::LoadOp load : loads) {
      Value source = load.getMemref();
      if (source.getDefiningOp<memref::GetGlobalOp>())
        continue; // a host global
      auto type = load.getMemRefType();
      if (!type.hasStaticShape() || type.getNumElements() != 1)
        return load.emitError(kPass)
               << "host code would read an element of a device buffer of "
                  "type "
               << type << " ('" << load->getName()
               << "'); only single-element buffers (a rank-0 result such as "
                  "a loss) are copied to the host; keep element accesses in "
                  "kernels";
      if (!hasIdentityLayout(type))
        return load.emitError(kPass)
               << "host code reads a single-element view with a "
                  "non-identity layout ("
               << type << ", '" << load->getName()
               << "'), which gpu.memcpy cannot copy";
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      auto staging = memref::AllocaOp::create(
          b, load.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()));
      b.setInsertionPoint(load);
      gpu::MemcpyOp::create(b, load.getLoc(), TypeRange(), ValueRange(),
                            staging, source);
      load.getMemrefMutable().assign(staging);
      ++numStagedLoads;
    }
    return success();
  }
};

} // namespace
