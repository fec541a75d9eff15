//===- ProbesToRuntime.cpp - mp.observe to mprt_observe calls -------------===//
//
// A probe hands its tensor to the runtime, which passes it on to whatever
// observer the driver installed (calibration statistics, numerics checks).
// The lowering happens on tensors so that bufferization decides whether the
// value's buffer is already dense (no copy) or needs one (strided views).
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/MP/IR/MPOps.h"
#include "mp/Support/IRUtils.h"
#include "mprt/mprt.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_CONVERTPROBESTORUNTIME
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kObserveName = "mprt_observe";

/// The runtime's code of an element type (mprt_dtype, the ABI of
/// mprt_observe).
std::optional<mprt_dtype> runtimeDtype(Type type) {
  if (type.isF32())
    return MPRT_DTYPE_F32;
  if (type.isF16())
    return MPRT_DTYPE_F16;
  if (type.isBF16())
    return MPRT_DTYPE_BF16;
  if (type.isF64())
    return MPRT_DTYPE_F64;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return std::nullopt;
  switch (integer.getWidth()) {
  case 8:
    return integer.isUnsigned() ? MPRT_DTYPE_U8 : MPRT_DTYPE_I8;
  case 32:
    return integer.isUnsigned() ? std::nullopt : std::optional(MPRT_DTYPE_I32);
  case 64:
    return integer.isUnsigned() ? std::nullopt : std::optional(MPRT_DTYPE_I64);
  default:
    return std::nullopt;
  }
}

/// `i1` elements widened to `ui8` (0 or 1), which the runtime knows.
Value widenBooleans(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Type i8 = b.getI8Type();
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, tensor, d));
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), i8, dynamicSizes);
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto widened = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{tensor}, ValueRange{init},
      ArrayRef<AffineMap>{id, id}, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value ext = arith::ExtUIOp::create(nested, nestedLoc, i8, args[0]);
        linalg::YieldOp::create(nested, nestedLoc, ext);
      });
  return widened.getResult(0);
}

/// A fresh dense tensor with `tensor`'s values (a linalg copy loop).
Value denseCopy(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, tensor, d));
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                       type.getElementType(), dynamicSizes);
  return linalg::CopyOp::create(b, loc, tensor, init).getResult(0);
}

struct ProbesToRuntimePass
    : mp::impl::ConvertProbesToRuntimeBase<ProbesToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<mp::ObserveOp> probes;
    module.walk([&](mp::ObserveOp op) { probes.push_back(op); });
    if (probes.empty())
      return;

    // Check every probe first so a bad one leaves the module untouched.
    bool ok = true;
    for (mp::ObserveOp op : probes) {
      Type element =
          cast<RankedTensorType>(op.getInput().getType()).getElementType();
      if (!element.isInteger(1) && !runtimeDtype(element)) {
        op.emitError("probe '")
            << op.getId() << "' observes elements of type " << element
            << ", which the runtime cannot receive (supported: f32, f16, "
               "bf16, f64, i1, i8, ui8, i32, i64)";
        ok = false;
      }
    }
    if (!ok)
      return signalPassFailure();

    // The callee and the id strings are symbols of the module that holds
    // the probe (a nested module's functions cannot reach the outer one's).
    OpBuilder b(module.getBodyRegion());
    Type i64 = b.getI64Type(), i32 = b.getI32Type();
    llvm::DenseMap<Operation *, func::FuncOp> callees;
    auto calleeIn = [&](ModuleOp holder) {
      func::FuncOp &callee = callees[holder];
      if (!callee)
        callee = holder.lookupSymbol<func::FuncOp>(kObserveName);
      if (!callee) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(holder.getBody());
        callee =
            func::FuncOp::create(b, holder.getLoc(), kObserveName,
                                 b.getFunctionType({i64, i64, i64, i32}, {}));
        callee.setPrivate();
      }
      return callee;
    };

    // One NUL-terminated global per distinct id and module.
    llvm::DenseMap<Operation *, llvm::StringMap<memref::GlobalOp>> idGlobals;
    auto idGlobal = [&](ModuleOp holder, StringRef id) {
      llvm::StringMap<memref::GlobalOp> &globals = idGlobals[holder];
      auto found = globals.find(id);
      if (found != globals.end())
        return found->second;
      SmallVector<int8_t> bytes(id.begin(), id.end());
      bytes.push_back(0);
      auto type =
          MemRefType::get({static_cast<int64_t>(bytes.size())}, b.getI8Type());
      auto value = DenseElementsAttr::get(
          RankedTensorType::get(type.getShape(), b.getI8Type()),
          ArrayRef<int8_t>(bytes));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(holder.getBody());
      std::string name = "__mp_probe_id_" + std::to_string(globals.size());
      while (holder.lookupSymbol(name))
        name += "_";
      auto global = memref::GlobalOp::create(
          b, holder.getLoc(), name, b.getStringAttr("private"), type, value,
          /*constant=*/true, /*alignment=*/IntegerAttr());
      globals[id] = global;
      return global;
    };

    for (mp::ObserveOp op : probes) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      Value input = op.getInput();
      Type element = cast<RankedTensorType>(input.getType()).getElementType();
      mprt_dtype dtype =
          element.isInteger(1) ? MPRT_DTYPE_U8 : *runtimeDtype(element);
      Value observed =
          element.isInteger(1) ? widenBooleans(b, loc, input) : input;
      // A slice would bufferize to a strided view, which bufferization
      // copies with memref.copy (a runtime library call); copy it with a
      // compiled loop instead.
      if (observed.getDefiningOp<tensor::ExtractSliceOp>())
        observed = denseCopy(b, loc, observed);
      auto tensorType = cast<RankedTensorType>(observed.getType());
      auto bufferType =
          MemRefType::get(tensorType.getShape(), tensorType.getElementType());
      Value buffer = bufferization::ToBufferOp::create(
          b, loc, bufferType, observed, b.getUnitAttr());

      auto index = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      auto address = [&](Value memref) -> Value {
        return arith::IndexCastOp::create(
            b, loc, i64, mlir::mp::alignedAddress(b, loc, memref));
      };

      auto holder = op->getParentOfType<ModuleOp>();
      memref::GlobalOp global = idGlobal(holder, op.getId());
      Value idBuffer = memref::GetGlobalOp::create(b, loc, global.getType(),
                                                   global.getSymName());
      Value count = index(1);
      for (int64_t d = 0; d < tensorType.getRank(); ++d)
        count = arith::MulIOp::create(b, loc, count,
                                      memref::DimOp::create(b, loc, buffer, d));
      func::CallOp::create(
          b, loc, calleeIn(holder),
          ValueRange{address(idBuffer), address(buffer),
                     arith::IndexCastOp::create(b, loc, i64, count),
                     arith::ConstantIntOp::create(b, loc, i32, dtype)});
      op.getOutput().replaceAllUsesWith(input);
      op->erase();
      ++numProbes;
    }
  }
};

} // namespace
