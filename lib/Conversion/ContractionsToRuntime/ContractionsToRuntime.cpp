//===- ContractionsToRuntime.cpp - matrix products to runtime GEMMs -------===//
//
// The CPU lowering turns linalg ops into scalar loops and the GPU lowering
// into one-thread-per-output kernels; matrix products are handed to the
// runtime instead: libmprt's mprt_gemm (oneDNN) or libmprt_cuda's
// mprt_cuda_gemm_sync (cuBLASLt, strided-batched), through the signatures
// of RuntimeCalls.h.
//
// Three steps: planContractions finds the products and what needs the
// whole module (operands that are transposed copies or attention's head
// splits); the ProductToRuntimeCall pattern replaces each product, with
// the results it fuses (one matcher per fusion in ProductMatchers.cpp:
// rounding, bias, ReLU and what follows a bias, dequantization, max |x|
// partials, zero fill, head merge), by one call; eraseCopiesReadAround
// erases the copies no product reads then.
// `-debug-only=mp-contractions-to-runtime` says why a fusion declined.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/ContractionsToRuntime.h"
#include "ProductMatchers.h"
#include "mp/Conversion/Passes.h"
#include "mp/Conversion/RuntimeCalls.h"
#include "mp/Support/IRUtils.h"
#include "mprt/mprt.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "mp-contractions-to-runtime"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_CONVERTCONTRACTIONSTORUNTIME
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using mlir::mp::ContractionPlan;
using mlir::mp::ContractionRuntime;
using mlir::mp::RuntimeCall;
using namespace mlir::mp::contractions;

namespace {

/// What a bias generic computes after the sum (\p sum: its value of %d),
/// as a generic over %d in place, where the bias generic stands (%d then
/// holds the sum mprt_gemm_bias wrote).
void applyInPlace(RewriterBase &rewriter, linalg::GenericOp biased,
                  Value sum) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(biased);
  Value d = biased.getDpsInitOperand(0)->get();
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(2, biased.getContext());
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  Block &body = *biased.getBlock();
  linalg::GenericOp::create(
      rewriter, biased.getLoc(), TypeRange(), ValueRange(), ValueRange{d},
      ArrayRef<AffineMap>{identity}, parallel,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        IRMapping mapping;
        mapping.map(sum, args[0]);
        // Every op but the sum and its rounding (what %d holds), in order.
        Operation *rounding = sum.getDefiningOp();
        Operation *add = isa<arith::TruncFOp>(rounding)
                             ? rounding->getOperand(0).getDefiningOp()
                             : rounding;
        for (Operation &op : body.without_terminator())
          if (&op != rounding && &op != add)
            nested.clone(op, mapping);
        linalg::YieldOp::create(
            nested, loc, mapping.lookup(body.getTerminator()->getOperand(0)));
      });
}

/// Erases \p copy, the allocation it writes and that buffer's other users
/// when each of those is a deallocation or \p unused; whether it did.
bool eraseUnreadCopy(RewriterBase &rewriter, Operation *copy,
                     llvm::function_ref<bool(Operation *)> unused) {
  Value buffer = cast<linalg::LinalgOp>(copy).getDpsInitOperand(0)->get();
  if (!llvm::all_of(buffer.getUsers(), [&](Operation *user) {
        return user == copy || isa<memref::DeallocOp>(user) || unused(user);
      }))
    return false;
  rewriter.eraseOp(copy);
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    rewriter.eraseOp(user);
  rewriter.eraseOp(buffer.getDefiningOp());
  return true;
}

/// What a product's call computes besides the product: the results it
/// writes in place of loops (its epilogue), found before anything moves.
struct Epilogue {
  /// A rounding of the f32 result (MPRT_GEMM_ROUNDED_C), maybe transposed.
  Operation *rounding = nullptr;
  RoundingLayout layout = RoundingLayout::Same;
  /// A bias added to the f32 result (mprt_gemm_bias), with the value %d
  /// holds when more (a ReLU) follows the sum in the generic.
  linalg::GenericOp biased;
  Value biasedSum;
  /// A dequantization of the int32 result (mprt_gemm_s8_dequantize).
  linalg::GenericOp dequantized;
  bool relu = false;
  Value bias, scale;
  /// Dynamic quantization's max |x| partials of the dequantized result.
  linalg::GenericOp absMax;
  /// A zero fill of C made for the product (MPRT_GEMM_OVERWRITE_C).
  linalg::FillOp zeroFill;
  /// Attention's head merge of the (rounded) result.
  Operation *headMerge = nullptr;
  /// Allocations and fills to move before the product, in order.
  SmallVector<Operation *> moves;

  /// The generic whose result the call writes instead of C, or null.
  Operation *consumer() const {
    if (rounding)
      return rounding;
    if (Operation *bias = biased)
      return bias;
    return dequantized;
  }
};

/// The head merge of what a batched \p op writes: its rounded result, or
/// its result into a zero fill made for it; else null.
Operation *matchHeadMerge(linalg::LinalgOp op, Epilogue &e) {
  if (e.rounding)
    return headMergeOf(
        op, e.rounding,
        cast<linalg::GenericOp>(e.rounding).getDpsInitOperand(0)->get(),
        nullptr, e.moves);
  if (e.zeroFill)
    return headMergeOf(op, op, op.getDpsInitOperand(0)->get(), e.zeroFill,
                       e.moves);
  return nullptr;
}

/// The fusions of \p op's result, by precedence: a rounding; else, on
/// libmprt (libmprt_cuda has neither yet), a bias (with what follows it)
/// or a dequantization (with its max |x| partials); else a zero fill made
/// for it; and for a batched product, the head merge of what it writes.
Epilogue matchEpilogue(linalg::LinalgOp op, const Product &product,
                       bool cuda) {
  Epilogue e;
  e.rounding = roundedResultOf(op, e.layout, e.moves);
  if (cuda)
    return e;
  if (!e.rounding)
    e.biased = biasedResultOf(op, product, e.bias, e.biasedSum, e.moves);
  if (!e.rounding && !e.biased)
    e.dequantized = dequantizedResultOf(op, product, e.bias, e.scale, e.relu,
                                        e.moves);
  if (e.dequantized)
    e.absMax = absMaxPartialsOf(op, e.dequantized, e.moves);
  if (!e.consumer())
    e.zeroFill = zeroFillOf(op);
  if (product.batched)
    e.headMerge = matchHeadMerge(op, e);
  return e;
}

int64_t rankOf(Value memref) { return memrefTypeOf(memref).getRank(); }

/// Builds one product's call before it: the arguments in the order of its
/// prototype in RuntimeCalls.h, each value made where the list needs it.
class GemmCallBuilder {
public:
  GemmCallBuilder(RewriterBase &rewriter, linalg::LinalgOp op,
                  const Product &product, Epilogue &epilogue,
                  ContractionPlan &plan)
      : b(rewriter), loc(op.getLoc()), op(op), product(product),
        epilogue(epilogue), plan(plan), i64(b.getI64Type()),
        i32(b.getI32Type()) {}

  /// The buffers the call reads and writes, and their layout: drops the
  /// epilogue's head merge where its view splits the batch unlike the
  /// operands'.
  void resolveOperands();
  /// The call.
  void emit();

private:
  /// Base pointer + offset (in bytes), leading dimension and batch strides
  /// (in elements; 0 for a matrix shared by the batch), as i64.
  struct Matrix {
    Value pointer, ld, batchStride, outerStride;
  };

  Value toI64(Value v) { return arith::IndexCastOp::create(b, loc, i64, v); }
  Value constantI64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  }
  Value constantI32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  }
  Value dim(Value memref, int64_t d) {
    return toI64(memref::DimOp::create(b, loc, memref, d));
  }
  Value address(Value memref) {
    return toI64(mlir::mp::alignedAddress(b, loc, memref));
  }
  /// One i64 0 for the shared matrices' strides.
  Value zero() {
    if (!zeroValue)
      zeroValue = constantI64(0);
    return zeroValue;
  }
  Value headView(Value memref);
  bool splitsAlike(Value buffer);
  Value operandMem(Value read);
  void transposeResult();
  Matrix matrix(Value memref);
  int32_t flags() const;
  void appendBatchArgs(SmallVectorImpl<Value> &args, const Matrix &a,
                       const Matrix &bm, const Matrix &c);
  RuntimeCall appendEpilogueArgs(SmallVectorImpl<Value> &args);

  RewriterBase &b;
  Location loc;
  linalg::LinalgOp op;
  Product product;
  Epilogue &epilogue;
  ContractionPlan &plan;
  Type i64, i32;
  Value zeroValue;
  // Every 4-D view must split the batch the same way, [S, H] (read off
  // the [S, T, H, F] buffers, statically): then one outer count and one
  // inner count describe all three.
  std::optional<std::pair<int64_t, int64_t>> split;
  Value aMem, bMem, cMem;
  // The 4-D view read or written, if any, and its inner batch count.
  Value view4, count;
};

/// A head split's source, or a head merge's result, as the 4-D view the
/// products read or write: [S, H, T, F] with H and T's strides swapped.
Value GemmCallBuilder::headView(Value memref) {
  return memref::TransposeOp::create(
      b, loc, memref,
      AffineMapAttr::get(AffineMap::getPermutationMap(
          ArrayRef<unsigned>{0, 2, 1, 3}, b.getContext())));
}

bool GemmCallBuilder::splitsAlike(Value buffer) {
  MemRefType type = memrefTypeOf(buffer);
  if (type.isDynamicDim(0) || type.isDynamicDim(2))
    return false;
  std::pair<int64_t, int64_t> dims{type.getDimSize(0), type.getDimSize(2)};
  if (!split)
    split = dims;
  return *split == dims;
}

/// What the call reads for an operand (\p read: a transposed copy's
/// original, its flag flipped later), through a head view where it is a
/// head split.
Value GemmCallBuilder::operandMem(Value read) {
  Operation *swap = plan.headSources.lookup(read);
  Value source = swap ? middleSwapInput(swap) : Value();
  if (!source || !splitsAlike(source))
    return read;
  plan.splitsReadInPlace.insert(swap);
  return headView(source);
}

void GemmCallBuilder::resolveOperands() {
  Value merged = epilogue.headMerge ? cast<linalg::LinalgOp>(epilogue.headMerge)
                                          .getDpsInitOperand(0)
                                          ->get()
                                    : Value();
  if (merged && !splitsAlike(merged))
    epilogue.headMerge = nullptr;
  aMem = operandMem(product.readA());
  bMem = operandMem(product.readB());
  if (epilogue.headMerge)
    cMem = headView(merged);
  else if (Operation *consumer = epilogue.consumer())
    cMem = cast<linalg::GenericOp>(consumer).getDpsInitOperand(0)->get();
  else
    cMem = op.getDpsInitOperand(0)->get();
  product.transA ^= static_cast<bool>(product.sourceA);
  product.transB ^= static_cast<bool>(product.sourceB);
  if (epilogue.layout == RoundingLayout::Transposed)
    transposeResult();
  // Two batch dimensions [outer, count] when a head view is read or
  // written; a 3-D operand's batch p = outer * count + inner.
  for (Value memref : {aMem, bMem, cMem})
    if (!view4 && rankOf(memref) == 4)
      view4 = memref;
  count = view4 ? dim(view4, 1) : Value();
}

/// A transposed result: D = op(B)^T op(A)^T, operands swapped and their
/// transpose flags flipped.
void GemmCallBuilder::transposeResult() {
  std::swap(aMem, bMem);
  std::swap(product.sharedA, product.sharedB);
  std::tie(product.transA, product.transB) =
      std::make_pair(!product.transB, !product.transA);
}

GemmCallBuilder::Matrix GemmCallBuilder::matrix(Value memref) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  int64_t rank = rankOf(memref);
  Matrix result{address(memref), toI64(meta.getStrides()[rank - 2]), Value(),
                Value()};
  if (!product.batched)
    return result;
  result.batchStride =
      rank == 2 ? zero() : toI64(meta.getStrides()[rank - 3]);
  if (view4)
    result.outerStride =
        rank == 2   ? zero()
        : rank == 4 ? toI64(meta.getStrides()[0])
                    : arith::MulIOp::create(b, loc, result.batchStride, count)
                          .getResult();
  return result;
}

int32_t GemmCallBuilder::flags() const {
  bool roundedC = epilogue.rounding ||
                  (epilogue.biased && !elementTypeOf(cMem).isF32());
  return (product.transA ? MPRT_GEMM_TRANS_A : 0) |
         (product.transB ? MPRT_GEMM_TRANS_B : 0) |
         (roundedC ? MPRT_GEMM_ROUNDED_C : 0) |
         (epilogue.zeroFill ? MPRT_GEMM_OVERWRITE_C : 0) |
         (epilogue.relu ? MPRT_GEMM_RELU : 0);
}

/// mprt_gemm_batched_2d's outer count and strides before the inner ones;
/// mprt_gemm_batched's and mprt_cuda_gemm_sync's batch and strides (a
/// batch of 1 and strides of 0 for an unbatched product on CUDA).
void GemmCallBuilder::appendBatchArgs(SmallVectorImpl<Value> &args,
                                      const Matrix &a, const Matrix &bm,
                                      const Matrix &c) {
  if (view4) {
    args.append({dim(view4, 0), a.outerStride, bm.outerStride, c.outerStride,
                 count, a.batchStride, bm.batchStride, c.batchStride});
  } else if (product.batched) {
    args.append({dim(cMem, 0), a.batchStride, bm.batchStride, c.batchStride});
  } else if (plan.runtime == ContractionRuntime::Cuda) {
    Value zeroStride = zero();
    Value one = constantI64(1);
    args.append({one, zeroStride, zeroStride, zeroStride});
  }
}

/// The arguments after the batch's: mprt_gemm_bias's bias;
/// mprt_gemm_s8_dequantize's bias (0 when there is none) and scale, and
/// the partials and lanes of its _absmax form. Returns the function to
/// call.
RuntimeCall GemmCallBuilder::appendEpilogueArgs(SmallVectorImpl<Value> &args) {
  if (epilogue.biased) {
    args.push_back(address(epilogue.bias));
    return RuntimeCall::GemmBias;
  }
  if (epilogue.dequantized) {
    args.push_back(epilogue.bias ? address(epilogue.bias) : constantI64(0));
    args.push_back(address(epilogue.scale));
    if (!epilogue.absMax)
      return RuntimeCall::GemmS8Dequantize;
    // Q: [m, lanes].
    Value q = epilogue.absMax.getDpsInitOperand(0)->get();
    args.push_back(address(q));
    args.push_back(constantI64(memrefTypeOf(q).getDimSize(1)));
    return RuntimeCall::GemmS8DequantizeAbsMax;
  }
  if (view4)
    return RuntimeCall::GemmBatched2d;
  if (plan.runtime == ContractionRuntime::Cuda)
    return RuntimeCall::CudaGemmSync;
  return product.batched ? RuntimeCall::GemmBatched : RuntimeCall::Gemm;
}

void GemmCallBuilder::emit() {
  Matrix a = matrix(aMem);
  Matrix bm = matrix(bMem);
  Matrix c = matrix(cMem);
  int64_t cRank = rankOf(cMem), aRank = rankOf(aMem);
  Value m = dim(cMem, cRank - 2);
  Value n = dim(cMem, cRank - 1);
  Value k = dim(aMem, aRank - 2 + (product.transA ? 0 : 1));
  auto type = *gemmType(elementTypeOf(aMem), elementTypeOf(bMem),
                        elementTypeOf(op.getDpsInitOperand(0)->get()));
  SmallVector<Value> args{a.pointer, a.ld, bm.pointer, bm.ld, c.pointer,
                          c.ld,      m,    n,          k};
  args.push_back(constantI32(flags()));
  // mprt_gemm_s8_dequantize takes no type (s8).
  if (!epilogue.dequantized)
    args.push_back(constantI32(type));
  appendBatchArgs(args, a, bm, c);
  RuntimeCall call = appendEpilogueArgs(args);
  auto module = op->getParentOfType<ModuleOp>();
  func::CallOp::create(b, loc,
                       mp::lookupOrDeclareRuntimeCall(b, module, call), args);
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << op->getName() << " at "
                          << loc << " -> "
                          << mp::getRuntimeCallInfo(call).symbol << "\n");
}

/// Erases \p headMerge, the expansion it reads and the buffer that one
/// views (with its deallocation).
void eraseHeadMerge(RewriterBase &rewriter, Operation *headMerge) {
  auto expand =
      middleSwapInput(headMerge).getDefiningOp<memref::ExpandShapeOp>();
  Value d = expand.getSrc();
  rewriter.eraseOp(headMerge);
  rewriter.eraseOp(expand);
  for (Operation *user : llvm::make_early_inc_range(d.getUsers()))
    rewriter.eraseOp(user);
  rewriter.eraseOp(d.getDefiningOp());
}

/// Erases \p op and what its call computes instead: the consumer with the
/// f32 (or int32) result's buffer, fill and deallocation, the partials'
/// pass, the zero fill, the head merge; counts each.
void eraseFused(RewriterBase &rewriter, linalg::LinalgOp op, Epilogue &e,
                mp::ContractionCounts &counts) {
  if (e.biasedSum)
    applyInPlace(rewriter, e.biased, e.biasedSum);
  if (Operation *consumer = e.consumer()) {
    Value c = op.getDpsInitOperand(0)->get();
    rewriter.eraseOp(consumer);
    rewriter.eraseOp(op);
    for (Operation *user : llvm::make_early_inc_range(c.getUsers()))
      rewriter.eraseOp(user);
    rewriter.eraseOp(c.getDefiningOp());
    ++(e.rounding ? counts.rounded
       : e.biased ? counts.biased
                  : counts.dequantized);
  } else {
    rewriter.eraseOp(op);
  }
  if (e.absMax) {
    // The partials' pass and D's view for it.
    Operation *expand = e.absMax.getDpsInputOperand(0)->get().getDefiningOp();
    rewriter.eraseOp(e.absMax);
    rewriter.eraseOp(expand);
    ++counts.absMaxPartials;
  }
  if (e.layout == RoundingLayout::Transposed)
    ++counts.transposedResults;
  if (e.zeroFill) {
    rewriter.eraseOp(e.zeroFill);
    ++counts.overwritten;
  }
  if (e.headMerge) {
    eraseHeadMerge(rewriter, e.headMerge);
    ++counts.headMerges;
  }
  ++counts.calls;
}

/// Replaces a matrix product on buffers, with the results it fuses, by one
/// call of the runtime's GEMM.
struct ProductToRuntimeCall
    : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  ProductToRuntimeCall(MLIRContext *context, ContractionPlan &plan)
      : OpInterfaceRewritePattern(context), plan(plan) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<Product> product = matchSupportedProduct(op);
    if (!product)
      return rewriter.notifyMatchFailure(
          op, "not a matrix product of one GEMM type with contiguous rows");
    if (auto it = plan.transposedSources.find(op);
        it != plan.transposedSources.end()) {
      product->sourceA = it->second[0];
      product->sourceB = it->second[1];
    }
    Epilogue epilogue =
        matchEpilogue(op, *product, plan.runtime == ContractionRuntime::Cuda);
    for (Operation *moved : epilogue.moves)
      rewriter.moveOpBefore(moved, op);
    rewriter.setInsertionPoint(op);
    GemmCallBuilder call(rewriter, op, *product, epilogue, plan);
    call.resolveOperands();
    call.emit();
    eraseFused(rewriter, op, epilogue, plan.counts);
    return success();
  }

  ContractionPlan &plan;
};

using ProductList = SmallVector<std::pair<linalg::LinalgOp, Product>>;

/// Operands that are transposed copies made for products: the GEMM reads
/// the original (sets the products' sources).
void planTransposedOperands(ProductList &products, ContractionPlan &plan) {
  llvm::DenseSet<Operation *> productOps;
  for (auto &[op, product] : products)
    productOps.insert(op);
  for (auto &[op, product] : products) {
    for (auto [operand, source] :
         {std::make_pair(product.a, &product.sourceA),
          std::make_pair(product.b, &product.sourceB)}) {
      if (linalg::TransposeOp copy =
              transposedCopyOf(operand->get(), op, productOps)) {
        *source = copy.getInput();
        plan.transposedCopies.insert(copy);
      }
    }
    if (product.sourceA || product.sourceB)
      plan.transposedSources[op] = {product.sourceA, product.sourceB};
  }
}

/// Whether \p user is a batched product (\p product, null if it is none)
/// that reads \p view as A or B only, or a transposed copy of it that goes.
bool readsInPlace(Operation *user, Value view, const Product *product,
                  const llvm::SetVector<Operation *> &transposedCopies) {
  if (transposedCopies.contains(user))
    return cast<linalg::TransposeOp>(user).getInput() == view;
  return product && product->batched &&
         cast<linalg::LinalgOp>(user).getDpsInitOperand(0)->get() != view &&
         (product->readA() == view || product->readB() == view);
}

/// Operands that are attention's head split: the products read the split's
/// source in place, through a view with two batch dimensions.
void planHeadSplits(const ProductList &products, ContractionPlan &plan) {
  llvm::DenseMap<Operation *, const Product *> productOf;
  for (auto &[op, product] : products)
    productOf[op] = &product;
  auto readInPlace = [&](Operation *user, Value view) {
    return readsInPlace(user, view, productOf.lookup(user),
                        plan.transposedCopies);
  };
  for (auto &[op, product] : products) {
    for (Value operand : {product.readA(), product.readB()}) {
      if (plan.headSources.count(operand))
        continue;
      Operation *sourceDealloc, *tDealloc;
      Operation *swap =
          headSplitOf(operand, readInPlace, sourceDealloc, tDealloc);
      if (!swap)
        continue;
      plan.headSplits[swap] = {sourceDealloc, tDealloc};
      Value t = cast<linalg::LinalgOp>(swap).getDpsInitOperand(0)->get();
      for (Operation *user : t.getUsers())
        if (isa<memref::CollapseShapeOp>(user))
          plan.headSources[user->getResult(0)] = swap;
    }
  }
}

struct ContractionsToRuntimePass
    : mp::impl::ConvertContractionsToRuntimeBase<ContractionsToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ContractionPlan plan = mp::planContractions(getOperation(), runtime);
    if (plan.products.empty())
      return;
    RewritePatternSet patterns(&getContext());
    mp::populateContractionsToRuntimePatterns(patterns, plan);
    FrozenRewritePatternSet frozen(std::move(patterns));
    PatternApplicator applicator(frozen);
    applicator.applyDefaultCostModel();
    // Each product once, in the plan's order (the order the calls'
    // declarations and the moved allocations follow).
    PatternRewriter rewriter(&getContext());
    for (Operation *product : plan.products) {
      rewriter.setInsertionPoint(product);
      (void)applicator.matchAndRewrite(product, rewriter);
    }
    mp::eraseCopiesReadAround(rewriter, plan);
    recordStatistics(plan.counts);
  }

  void recordStatistics(const mp::ContractionCounts &counts) {
    numCalls += counts.calls;
    numRounded += counts.rounded;
    numBiased += counts.biased;
    numDequantized += counts.dequantized;
    numAbsMaxPartials += counts.absMaxPartials;
    numOverwritten += counts.overwritten;
    numTransposedResults += counts.transposedResults;
    numHeadSplits += counts.headSplits;
    numHeadMerges += counts.headMerges;
    numTransposedOperands += counts.transposedOperands;
  }
};

} // namespace

ContractionPlan mlir::mp::planContractions(Operation *root,
                                           ContractionRuntime runtime) {
  ContractionPlan plan;
  plan.runtime = runtime;
  ProductList products;
  root->walk([&](linalg::LinalgOp op) {
    if (std::optional<Product> product = matchSupportedProduct(op))
      products.push_back({op, *product});
  });
  for (auto &[op, product] : products)
    plan.products.push_back(op);
  planTransposedOperands(products, plan);
  if (runtime != ContractionRuntime::Cuda)
    planHeadSplits(products, plan);
  return plan;
}

void mlir::mp::populateContractionsToRuntimePatterns(
    RewritePatternSet &patterns, ContractionPlan &plan) {
  patterns.add<ProductToRuntimeCall>(patterns.getContext(), plan);
}

void mlir::mp::eraseCopiesReadAround(RewriterBase &rewriter,
                                     ContractionPlan &plan) {
  // Copies that no product reads any more go, with their buffers: the
  // transposed copies (whose buffers only deallocations use then) and the
  // head splits (whose collapsed views nothing uses then).
  for (Operation *transpose : plan.transposedCopies)
    if (eraseUnreadCopy(rewriter, transpose, [](Operation *) { return false; }))
      ++plan.counts.transposedOperands;
  for (auto &[swap, deallocs] : plan.headSplits) {
    // A source read in place lives as long as its copy did.
    auto [sourceDealloc, tDealloc] = deallocs;
    if (plan.splitsReadInPlace.contains(swap) && sourceDealloc &&
        sourceDealloc->isBeforeInBlock(tDealloc))
      rewriter.moveOpBefore(sourceDealloc, tDealloc);
    if (eraseUnreadCopy(rewriter, swap, [](Operation *user) {
          return isa<memref::CollapseShapeOp>(user) && user->use_empty();
        }))
      ++plan.counts.headSplits;
  }
  // What they pointed to may be gone.
  plan.transposedCopies.clear();
  plan.headSplits.clear();
  plan.headSources.clear();
  plan.splitsReadInPlace.clear();
  plan.transposedSources.clear();
  plan.products.clear();
}
