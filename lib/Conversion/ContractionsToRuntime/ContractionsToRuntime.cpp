//===- ContractionsToRuntime.cpp - matrix products to mprt_gemm
//------------===//
//
// The CPU lowering turns linalg ops into scalar loops; matrix products are
// handed to libmprt (oneDNN) instead, which is blocked and vectorized.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_CONVERTCONTRACTIONSTORUNTIME
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kGemmName = "mprt_gemm";
// Must match mprt_gemm_type and the flag bits in runtime/include/mprt/mprt.h.
enum GemmType { F32 = 0, F16 = 1, BF16 = 2, S8 = 3 };
enum GemmFlags { TransA = 1, TransB = 2 };

/// Strips the widening of a contraction body's input (extf, or extsi for
/// the i8 -> i32 products of --mp-quantize).
Value throughExtension(Value value) {
  if (auto ext = value.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  if (auto ext = value.getDefiningOp<arith::ExtSIOp>())
    return ext.getIn();
  return value;
}

/// A matrix product C[i, j] += A[.] * B[.] over one reduction loop r.
struct Product {
  // Null until matched: when both inputs index the same way, one of them is
  // never set (and was read uninitialized before).
  OpOperand *a = nullptr, *b = nullptr;
  bool transA = false, transB = false;
};

std::optional<Product> matchProduct(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return std::nullopt;
  // Body: yield(acc + x * y), operands of either order, inputs maybe widened.
  Block &body = *op.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!isa_and_present<arith::AddFOp, arith::AddIOp>(add) ||
      body.getOperations().size() > 5)
    return std::nullopt;
  Value acc = op.getRegionOutputArgs()[0];
  Value product = add->getOperand(0) == acc   ? add->getOperand(1)
                  : add->getOperand(1) == acc ? add->getOperand(0)
                                              : Value();
  Operation *mul = product ? product.getDefiningOp() : nullptr;
  if (!isa_and_present<arith::MulFOp, arith::MulIOp>(mul))
    return std::nullopt;
  Value x = throughExtension(mul->getOperand(0)),
        y = throughExtension(mul->getOperand(1));
  auto inputs = op.getRegionInputArgs();
  if (!((x == inputs[0] && y == inputs[1]) ||
        (x == inputs[1] && y == inputs[0])))
    return std::nullopt;

  // Loops: the output indexes (i, j) directly; r is the reduction.
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() != 2 || !out.isProjectedPermutation())
    return std::nullopt;
  unsigned i = out.getDimPosition(0), j = out.getDimPosition(1);
  unsigned r = 3 - i - j;
  auto dimsOf =
      [&](OpOperand *operand) -> std::optional<std::pair<unsigned, unsigned>> {
    AffineMap map = op.getMatchingIndexingMap(operand);
    if (map.getNumResults() != 2 || !map.isProjectedPermutation())
      return std::nullopt;
    return std::make_pair(map.getDimPosition(0), map.getDimPosition(1));
  };
  Product result;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    auto dims = dimsOf(operand);
    if (!dims)
      return std::nullopt;
    if (*dims == std::make_pair(i, r) || *dims == std::make_pair(r, i)) {
      result.a = operand;
      result.transA = dims->first == r;
    } else if (*dims == std::make_pair(r, j) || *dims == std::make_pair(j, r)) {
      result.b = operand;
      result.transB = dims->first == j;
    } else {
      return std::nullopt;
    }
  }
  if (!result.a || !result.b || result.a == result.b)
    return std::nullopt;
  return result;
}

std::optional<GemmType> gemmType(Type a, Type b, Type c) {
  if (a != b)
    return std::nullopt;
  // Signless or signed i8 (the body sign-extends) into i32.
  if (a.isInteger(8) && !a.isUnsignedInteger() && c.isInteger(32))
    return S8;
  if (!c.isF32())
    return std::nullopt;
  if (a.isF32())
    return F32;
  if (a.isF16())
    return F16;
  if (a.isBF16())
    return BF16;
  return std::nullopt;
}

/// Rows are contiguous: the innermost stride is statically 1.
bool hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return strides.size() == 2 && strides[1] == 1;
}

struct ContractionsToRuntimePass
    : mp::impl::ConvertContractionsToRuntimeBase<ContractionsToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, Product>> products;
    module.walk([&](linalg::LinalgOp op) {
      std::optional<Product> product = matchProduct(op);
      if (!product)
        return;
      auto typeOf = [](Value v) { return cast<MemRefType>(v.getType()); };
      MemRefType a = typeOf(product->a->get()), b = typeOf(product->b->get()),
                 c = typeOf(op.getDpsInitOperand(0)->get());
      if (!gemmType(a.getElementType(), b.getElementType(),
                    c.getElementType()) ||
          !hasUnitInnerStride(a) || !hasUnitInnerStride(b) ||
          !hasUnitInnerStride(c))
        return;
      products.push_back({op, *product});
    });
    if (products.empty())
      return;

    OpBuilder b(module.getBodyRegion());
    Type i64 = b.getI64Type(), i32 = b.getI32Type();
    auto callee = module.lookupSymbol<func::FuncOp>(kGemmName);
    if (!callee) {
      b.setInsertionPointToStart(module.getBody());
      SmallVector<Type> args(9, i64);
      args.append({i32, i32});
      callee = func::FuncOp::create(b, module.getLoc(), kGemmName,
                                    b.getFunctionType(args, {i32}));
      callee.setPrivate();
    }
    for (auto [op, product] : products) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      auto index = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      // Base pointer + offset (in bytes) and leading dimension, as i64.
      auto matrix = [&](Value memref) -> std::pair<Value, Value> {
        auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
        Value base = memref::ExtractAlignedPointerAsIndexOp::create(
            b, loc, meta.getBaseBuffer());
        unsigned bytes =
            cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
        Value offset =
            arith::MulIOp::create(b, loc, meta.getOffset(), index(bytes));
        Value address = arith::AddIOp::create(b, loc, base, offset);
        return {arith::IndexCastOp::create(b, loc, i64, address),
                arith::IndexCastOp::create(b, loc, i64, meta.getStrides()[0])};
      };
      Value aMem = product.a->get(), bMem = product.b->get(),
            cMem = op.getDpsInitOperand(0)->get();
      auto [aPtr, lda] = matrix(aMem);
      auto [bPtr, ldb] = matrix(bMem);
      auto [cPtr, ldc] = matrix(cMem);
      auto dim = [&](Value memref, int64_t d) -> Value {
        return arith::IndexCastOp::create(
            b, loc, i64, memref::DimOp::create(b, loc, memref, d));
      };
      Value m = dim(cMem, 0), n = dim(cMem, 1);
      Value k = dim(aMem, product.transA ? 0 : 1);
      int32_t flags =
          (product.transA ? TransA : 0) | (product.transB ? TransB : 0);
      auto type = *gemmType(cast<MemRefType>(aMem.getType()).getElementType(),
                            cast<MemRefType>(bMem.getType()).getElementType(),
                            cast<MemRefType>(cMem.getType()).getElementType());
      Value flagsValue = arith::ConstantIntOp::create(b, loc, i32, flags);
      Value typeValue = arith::ConstantIntOp::create(b, loc, i32, type);
      func::CallOp::create(b, loc, callee,
                           ValueRange{aPtr, lda, bPtr, ldb, cPtr, ldc, m, n, k,
                                      flagsValue, typeValue});
      op->erase();
      ++numCalls;
    }
  }
};

} // namespace
