//===- ContractionsToRuntime.cpp - matrix products to runtime GEMMs -------===//
//
// The CPU lowering turns linalg ops into scalar loops and the GPU lowering
// into one-thread-per-output kernels; matrix products are handed to the
// runtime instead: libmprt's mprt_gemm (oneDNN) or libmprt_cuda's
// mprt_cuda_gemm_sync (cuBLASLt, strided-batched).
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"
#include "mp/Support/IRUtils.h"
#include "mprt/mprt.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_CONVERTCONTRACTIONSTORUNTIME
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kGemmName = "mprt_gemm";
constexpr llvm::StringLiteral kBatchedGemmName = "mprt_gemm_batched";
constexpr llvm::StringLiteral kBatched2dGemmName = "mprt_gemm_batched_2d";
constexpr llvm::StringLiteral kCudaGemmName = "mprt_cuda_gemm_sync";
constexpr llvm::StringLiteral kBiasGemmName = "mprt_gemm_bias";
constexpr llvm::StringLiteral kDequantizeGemmName = "mprt_gemm_s8_dequantize";
constexpr llvm::StringLiteral kDequantizeAbsMaxGemmName =
    "mprt_gemm_s8_dequantize_absmax";

/// Strips the widening of a contraction body's input (extf, or extsi for
/// the i8 -> i32 products of --mp-quantize).
Value throughExtension(Value value) {
  if (auto ext = value.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  if (auto ext = value.getDefiningOp<arith::ExtSIOp>())
    return ext.getIn();
  return value;
}

/// A matrix product C[i, j] += A[.] * B[.] over one reduction loop r, or a
/// batch of them, C[p, i, j] += A[p, .] * B[p, .], when one more parallel
/// loop p leads the result and the inputs; an input without p is one matrix
/// shared by the batch (the filter of an im2col convolution).
struct Product {
  // Null until matched: when both inputs index the same way, one of them is
  // never set (and was read uninitialized before).
  OpOperand *a = nullptr, *b = nullptr;
  bool transA = false, transB = false;
  bool batched = false;
  bool sharedA = false, sharedB = false; // batched product, no batch loop
  // The matrix a transposed-copy operand was copied from, read instead
  // with the operand's transpose flag flipped (transposedCopyOf); null
  // when the operand is read as it is.
  Value sourceA, sourceB;
};

std::optional<Product> matchProduct(linalg::LinalgOp op) {
  unsigned numLoops = op.getNumLoops();
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || (numLoops != 3 && numLoops != 4) ||
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

  // Loops: the output indexes ([p,] i, j) directly; r is the reduction.
  Product result;
  result.batched = numLoops == 4;
  unsigned first = result.batched ? 1 : 0;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() != numLoops - 1 || !out.isProjectedPermutation())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned r =
      llvm::find(iterators, utils::IteratorType::reduction) - iterators.begin();
  if (llvm::is_contained(out.getResults(),
                         getAffineDimExpr(r, op.getContext())))
    return std::nullopt;
  unsigned i = out.getDimPosition(first), j = out.getDimPosition(first + 1);
  // A batched operand is [p, rows, cols]: the batch loop leads it; a shared
  // one (in a batched product) is [rows, cols].
  struct Dims {
    unsigned rows, cols;
    bool shared;
  };
  auto dimsOf = [&](OpOperand *operand) -> std::optional<Dims> {
    AffineMap map = op.getMatchingIndexingMap(operand);
    if (!map.isProjectedPermutation())
      return std::nullopt;
    if (result.batched && map.getNumResults() == 2 &&
        map.getDimPosition(0) != out.getDimPosition(0) &&
        map.getDimPosition(1) != out.getDimPosition(0))
      return Dims{map.getDimPosition(0), map.getDimPosition(1), true};
    if (map.getNumResults() != numLoops - 1)
      return std::nullopt;
    if (result.batched && map.getDimPosition(0) != out.getDimPosition(0))
      return std::nullopt;
    return Dims{map.getDimPosition(first), map.getDimPosition(first + 1),
                false};
  };
  for (OpOperand *operand : op.getDpsInputOperands()) {
    std::optional<Dims> dims = dimsOf(operand);
    if (!dims)
      return std::nullopt;
    auto is = [&](unsigned x, unsigned y) {
      return dims->rows == x && dims->cols == y;
    };
    if (is(i, r) || is(r, i)) {
      result.a = operand;
      result.transA = dims->rows == r;
      result.sharedA = dims->shared;
    } else if (is(r, j) || is(j, r)) {
      result.b = operand;
      result.transB = dims->rows == j;
      result.sharedB = dims->shared;
    } else {
      return std::nullopt;
    }
  }
  if (!result.a || !result.b || result.a == result.b ||
      (result.sharedA && result.sharedB))
    return std::nullopt;
  return result;
}

/// The runtime's GEMM type code (mprt_gemm_type) of a product.
std::optional<mprt_gemm_type> gemmType(Type a, Type b, Type c) {
  if (a != b)
    return std::nullopt;
  // Signless or signed i8 (the body sign-extends) into i32.
  if (a.isInteger(8) && !a.isUnsignedInteger() && c.isInteger(32))
    return MPRT_GEMM_S8;
  if (!c.isF32())
    return std::nullopt;
  if (a.isF32())
    return MPRT_GEMM_F32;
  if (a.isF16())
    return MPRT_GEMM_F16;
  if (a.isBF16())
    return MPRT_GEMM_BF16;
  return std::nullopt;
}

/// A matrix (or a batch of them, \p rank 3) whose rows are contiguous: the
/// innermost stride is statically 1.
bool hasUnitInnerStride(MemRefType type, int64_t rank) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return static_cast<int64_t>(strides.size()) == rank && strides.back() == 1;
}

/// The permutation of \p rank dimensions that swaps the last two.
SmallVector<unsigned> lastTwoSwapped(unsigned rank) {
  auto permutation = llvm::to_vector(llvm::seq<unsigned>(0, rank));
  std::swap(permutation[rank - 2], permutation[rank - 1]);
  return permutation;
}

/// How a rounding copy lays out its result.
enum class RoundingLayout { Same, Transposed };

/// Whether \p op is a linalg.generic that only rounds \p from into its
/// init, all loops parallel, body `yield(truncf(in))`: with identity maps
/// (Same), or with the last two dimensions of one of the two swapped
/// (Transposed: each matrix of the init is the transpose of one of
/// \p from's).
std::optional<RoundingLayout> roundingCopyLayout(Operation *op, Value from) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getDpsInputOperand(0)->get() != from ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return std::nullopt;
  Block &body = *generic.getBlock();
  if (body.getOperations().size() != 2)
    return std::nullopt;
  auto truncf = dyn_cast<arith::TruncFOp>(&body.front());
  if (!truncf || truncf.getIn() != body.getArgument(0) ||
      body.getTerminator()->getOperand(0) != truncf.getResult())
    return std::nullopt;
  AffineMap in = generic.getIndexingMapsArray()[0],
            out = generic.getIndexingMapsArray()[1];
  if (in.isIdentity() && out.isIdentity())
    return RoundingLayout::Same;
  unsigned rank = generic.getNumLoops();
  if (rank < 2)
    return std::nullopt;
  AffineMap swapped =
      AffineMap::getPermutationMap(lastTwoSwapped(rank), op->getContext());
  if ((in.isIdentity() && out == swapped) ||
      (in == swapped && out.isIdentity()))
    return RoundingLayout::Transposed;
  return std::nullopt;
}

/// The ops that use \p value or a view of it (not the views themselves),
/// each with the value it uses.
void collectUses(Value value,
                 SmallVectorImpl<std::pair<Operation *, Value>> &uses) {
  for (Operation *user : value.getUsers()) {
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (view && view.getViewSource() == value) {
      collectUses(view->getResult(0), uses);
      continue;
    }
    uses.push_back({user, value});
  }
}

/// Whether \p user only reads \p value (and the memory it views).
bool onlyReads(Operation *user, Value value) {
  if (isa<memref::LoadOp, affine::AffineLoadOp, vector::TransferReadOp,
          memref::DimOp>(user))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
  return linalgOp && llvm::none_of(linalgOp.getDpsInits(),
                                   [&](Value init) { return init == value; });
}

/// A product operand %x that is a copy of a matrix (or a batch of them)
/// with the last two dimensions swapped, made for products:
///
///   %x = memref.alloc()                  (in the product's block)
///   linalg.transpose ins(%s) outs(%x) permutation = [.., n-1, n-2]
///   <product> ins(%x, ...)               (%x's other users: products and
///                                         its dealloc)
///
/// The GEMM can read %s with the operand's transpose flag flipped, when
/// %s's buffer is an allocation of the block that nothing writes between
/// the transpose and \p product and that is freed after it. Returns the
/// transpose, or null.
linalg::TransposeOp
transposedCopyOf(Value x, linalg::LinalgOp product,
                 const llvm::DenseSet<Operation *> &products) {
  Block *block = product->getBlock();
  auto alloc = x.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != block)
    return {};
  linalg::TransposeOp transpose;
  for (Operation *user : x.getUsers()) {
    if (isa<memref::DeallocOp>(user))
      continue;
    if (auto copy = dyn_cast<linalg::TransposeOp>(user);
        copy && copy.getInit() == x && !transpose) {
      transpose = copy;
      continue;
    }
    if (!products.contains(user) || !onlyReads(user, x))
      return {};
  }
  if (!transpose || transpose->getBlock() != block ||
      !transpose->isBeforeInBlock(product))
    return {};
  unsigned rank = cast<MemRefType>(x.getType()).getRank();
  if (rank < 2 ||
      transpose.getPermutation() !=
          ArrayRef<int64_t>(llvm::to_vector_of<int64_t>(lastTwoSwapped(rank))))
    return {};
  Value source = transpose.getInput();
  if (!hasUnitInnerStride(cast<MemRefType>(source.getType()), rank))
    return {};
  Value buffer = mlir::mp::viewedBuffer(source);
  auto sourceAlloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!sourceAlloc || sourceAlloc->getBlock() != block)
    return {};
  // Writes of the buffer come before the transpose or after the product;
  // it is freed after the product.
  SmallVector<std::pair<Operation *, Value>> uses;
  collectUses(buffer, uses);
  for (auto [user, value] : uses) {
    if (user == transpose.getOperation())
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock)
      return {};
    bool afterProduct = product->isBeforeInBlock(inBlock);
    if (isa<memref::DeallocOp>(user)) {
      if (!afterProduct)
        return {};
      continue;
    }
    if (!onlyReads(user, value) && !inBlock->isBeforeInBlock(transpose) &&
        !afterProduct)
      return {};
  }
  return transpose;
}

/// Whether \p user fills \p c with zero before \p product, in its block:
/// +0 only with \p positiveOnly (what round(0 + x) equals round(x) for),
/// else either sign, float or integer.
bool isZeroFillBefore(Operation *user, Value c, linalg::LinalgOp product,
                      bool positiveOnly) {
  auto fill = dyn_cast<linalg::FillOp>(user);
  if (!fill || fill.getOutputs()[0] != c ||
      fill->getBlock() != product->getBlock() ||
      !fill->isBeforeInBlock(product))
    return false;
  auto constant = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  if (!constant)
    return false;
  if (auto value = dyn_cast<FloatAttr>(constant.getValue()))
    return positiveOnly ? value.getValue().isPosZero()
                        : value.getValue().isZero();
  auto value = dyn_cast<IntegerAttr>(constant.getValue());
  return !positiveOnly && value && value.getValue().isZero();
}

/// The allocation of \p product's C when it is made in the product's
/// block (a buffer the pass may reason about whole), else null.
memref::AllocOp resultAllocInBlock(linalg::LinalgOp product) {
  auto alloc =
      product.getDpsInitOperand(0)->get().getDefiningOp<memref::AllocOp>();
  return alloc && alloc->getBlock() == product->getBlock() ? alloc : nullptr;
}

/// Whether \p product may write \p consumer's result %d (its init) in
/// its place: %d is a fresh buffer of the product's block that no op uses
/// before \p consumer (a view of it made earlier counts as a use). Moves
/// %d's allocation before the product when it comes after.
bool writableEarly(linalg::LinalgOp product, Operation *consumer, Value d) {
  Block *block = product->getBlock();
  auto dAlloc = d.getDefiningOp<memref::AllocOp>();
  if (!dAlloc || dAlloc->getBlock() != block)
    return false;
  for (Operation *user : d.getUsers()) {
    if (user == consumer)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock || !consumer->isBeforeInBlock(inBlock))
      return false;
  }
  if (dAlloc->getNumOperands() != 0 && product->isBeforeInBlock(dAlloc))
    return false; // dynamic sizes computed after the product: left alone
  if (product->isBeforeInBlock(dAlloc))
    dAlloc->moveBefore(product);
  return true;
}

/// A product whose f32 result is only rounded to its operands' 16-bit
/// type:
///
///   %c = memref.alloc()                  (f32, nothing else uses it)
///   linalg.fill ins(0) outs(%c)
///   <product> outs(%c)
///   linalg.generic ins(%c) outs(%d) { truncf }
///   memref.dealloc %c
///
/// The GEMM can write %d itself (MPRT_GEMM_ROUNDED_C): the f32 result, its
/// fill and the rounding pass are never stored. When the rounding also
/// swaps the last two dimensions (\p layout Transposed: attention's
/// gradients in the layout the next product reads), the GEMM writes
/// D = C^T = op(B)^T op(A)^T. Returns the rounding generic, with %d's alloc
/// moved before the product, or null.
Operation *roundedResultOf(linalg::LinalgOp product, RoundingLayout &layout) {
  Value c = product.getDpsInitOperand(0)->get();
  memref::AllocOp alloc = resultAllocInBlock(product);
  if (!alloc)
    return nullptr;
  Operation *fill = nullptr, *rounding = nullptr;
  for (Operation *user : alloc->getUsers()) {
    if (user == product.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (!fill && isZeroFillBefore(user, c, product, /*positiveOnly=*/true)) {
      fill = user;
      continue;
    }
    std::optional<RoundingLayout> copyLayout = roundingCopyLayout(user, c);
    if (!rounding && copyLayout) {
      rounding = user;
      layout = *copyLayout;
      continue;
    }
    return nullptr;
  }
  if (!fill || !rounding || rounding->getBlock() != product->getBlock() ||
      !product->isBeforeInBlock(rounding))
    return nullptr;
  // The result %d: of the operands' type.
  Value d = cast<linalg::GenericOp>(rounding).getDpsInitOperand(0)->get();
  auto aType = cast<MemRefType>(product.getDpsInputOperand(0)->get().getType());
  if (cast<MemRefType>(d.getType()).getElementType() != aType.getElementType())
    return nullptr;
  return writableEarly(product, rounding, d) ? rounding : nullptr;
}

/// A 16-bit product whose f32 result only feeds a bias addition (a linear
/// layer), maybe rounded to the operands' type:
///
///   %c = memref.alloc()                  (f32, nothing else uses it)
///   linalg.fill ins(0) outs(%c)
///   <product> outs(%c)                   (2-D)
///   linalg.generic ins(%c, %bias) outs(%d) { yield([truncf](c + bias[j])) }
///   memref.dealloc %c
///
/// mprt_gemm_bias writes %d itself (with MPRT_GEMM_ROUNDED_C when %d has
/// the operands' type): the f32 result, its fill and the bias pass are
/// never stored. The body may go on from that sum (\p sum: the value %d
/// gets, then the yield of g(sum) for an elementwise g such as a ReLU,
/// which elementwise fusion put there): g then runs over %d in place, on
/// the same values. Returns the bias generic, with %d's alloc moved before
/// the product, or null.
linalg::GenericOp biasedResultOf(linalg::LinalgOp product,
                                 const Product &matched, Value &bias,
                                 Value &sum) {
  Value c = product.getDpsInitOperand(0)->get();
  memref::AllocOp alloc = resultAllocInBlock(product);
  Block *block = product->getBlock();
  Type aType = cast<MemRefType>(matched.a->get().getType()).getElementType();
  if (matched.batched || !alloc || !isa<Float16Type, BFloat16Type>(aType))
    return nullptr;
  Operation *fill = nullptr;
  linalg::GenericOp consumer;
  for (Operation *user : alloc->getUsers()) {
    if (user == product.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (!fill && isZeroFillBefore(user, c, product, /*positiveOnly=*/false)) {
      fill = user;
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (consumer || !generic || generic->getBlock() != block ||
        !product->isBeforeInBlock(generic))
      return nullptr;
    consumer = generic;
  }
  if (!fill || !consumer || consumer.getNumDpsInputs() != 2 ||
      consumer.getNumDpsInits() != 1 || consumer.getNumLoops() != 2 ||
      consumer.getNumParallelLoops() != 2)
    return nullptr;
  // Inputs: %c (identity) and a unit-stride f32 row vector (d0, d1) -> (d1);
  // the init: identity, f32 or the operands' type.
  MLIRContext *context = product.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap row = AffineMap::get(2, 0, getAffineDimExpr(1, context));
  OpOperand *cOperand = nullptr, *biasOperand = nullptr;
  for (OpOperand *operand : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(operand);
    if (operand->get() == c && map == identity && !cOperand)
      cOperand = operand;
    else if (map == row)
      biasOperand = operand;
  }
  OpOperand *init = consumer.getDpsInitOperand(0);
  auto biasType = biasOperand
                      ? dyn_cast<MemRefType>(biasOperand->get().getType())
                      : MemRefType();
  Type dType = cast<MemRefType>(init->get().getType()).getElementType();
  if (!cOperand || !biasType || !biasType.getElementType().isF32() ||
      !hasUnitInnerStride(biasType, 1) ||
      consumer.getMatchingIndexingMap(init) != identity ||
      (!dType.isF32() && dType != aType))
    return nullptr;
  // Body: c + bias, rounded to %d's type when it is 16-bit (the value %d
  // gets), then maybe more that reads only that value.
  Block &body = *consumer.getBlock();
  Value cArg = consumer.getMatchingBlockArgument(cOperand),
        biasArg = consumer.getMatchingBlockArgument(biasOperand);
  auto isSum = [&](Operation &op) {
    auto add = dyn_cast<arith::AddFOp>(op);
    return add && ((add.getLhs() == cArg && add.getRhs() == biasArg) ||
                   (add.getLhs() == biasArg && add.getRhs() == cArg));
  };
  auto sumOp = llvm::find_if(body, isSum);
  if (sumOp == body.end())
    return nullptr;
  Value stored = sumOp->getResult(0);
  if (dType == aType) {
    // Only its rounding reads the unrounded sum (%d holds the rounded).
    if (!stored.hasOneUse())
      return nullptr;
    auto truncf = dyn_cast<arith::TruncFOp>(*stored.getUsers().begin());
    if (!truncf || truncf.getType() != dType)
      return nullptr;
    stored = truncf.getResult();
  }
  // c, the bias and %d's old value are read by the sum alone.
  for (BlockArgument arg : body.getArguments())
    if (!llvm::all_of(arg.getUsers(),
                      [&](Operation *user) { return user == &*sumOp; }))
      return nullptr;
  if (!writableEarly(product, consumer, consumer.getDpsInitOperand(0)->get()))
    return nullptr;
  // Null when nothing comes after the sum.
  sum = body.getTerminator()->getOperand(0) == stored ? Value() : stored;
  bias = biasOperand->get();
  return consumer;
}

/// What a bias generic computes after the sum (\p sum: its value of %d),
/// as a generic over %d in place, where the bias generic stands (%d then
/// holds the sum mprt_gemm_bias wrote).
void applyInPlace(linalg::GenericOp biased, Value sum) {
  OpBuilder b(biased);
  Value d = biased.getDpsInitOperand(0)->get();
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(2, biased.getContext());
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  Block &body = *biased.getBlock();
  linalg::GenericOp::create(
      b, biased.getLoc(), TypeRange(), ValueRange(), ValueRange{d},
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

/// Whether every op strictly between \p from and \p to (one block), other
/// than \p except, is an allocation or has no effect on memory: then no
/// buffer read at \p to changes between the two.
bool onlyAllocationsBetween(Operation *from, Operation *to, Operation *except) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (op != except && !isa<memref::AllocOp>(op) && !isMemoryEffectFree(op))
      return false;
  return true;
}

/// An int8 product of --mp-quantize whose int32 result is only dequantized
/// (a quantized linear layer):
///
///   %c = memref.alloc()                  (i32, nothing else uses it)
///   linalg.generic ins(%bq) outs(%c) { yield %bq[j] }  (or fill(0, %c))
///   <product> outs(%c)                   (2-D, i8 x i8)
///   linalg.generic ins(%c, %scale) outs(%d)
///       { yield [max](sitofp(c) * scale[j], 0) }   (%d f32)
///   memref.dealloc %c
///
/// mprt_gemm_s8_dequantize writes %d itself: the int32 result, the bias
/// broadcast and the dequantization pass are never stored. Between the
/// broadcast and the dequantization only allocations and effect-free ops
/// may stand (so %bq and %scale read at the product hold what the loops
/// read). Returns the dequantization, with %d's alloc moved before the
/// product, and sets \p bias (null for a zero fill), \p scale and \p relu.
linalg::GenericOp dequantizedResultOf(linalg::LinalgOp product,
                                      const Product &matched, Value &bias,
                                      Value &scale, bool &relu) {
  Value c = product.getDpsInitOperand(0)->get();
  memref::AllocOp alloc = resultAllocInBlock(product);
  Block *block = product->getBlock();
  auto elementType = [](Value v) {
    return cast<MemRefType>(v.getType()).getElementType();
  };
  if (matched.batched || !alloc ||
      !elementType(matched.a->get()).isInteger(8) ||
      !elementType(matched.b->get()).isInteger(8))
    return nullptr;
  MLIRContext *context = product.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap row = AffineMap::get(2, 0, getAffineDimExpr(1, context));
  auto isRowVector = [&](linalg::GenericOp generic, OpOperand *operand,
                         Type element) {
    auto type = dyn_cast<MemRefType>(operand->get().getType());
    return generic.getMatchingIndexingMap(operand) == row && type &&
           type.getElementType() == element && hasUnitInnerStride(type, 1);
  };
  auto allParallel2D = [](linalg::GenericOp generic) {
    return generic.getNumLoops() == 2 && generic.getNumParallelLoops() == 2 &&
           generic.getNumDpsInits() == 1;
  };
  Operation *init = nullptr;
  Value broadcastFrom;
  linalg::GenericOp consumer;
  for (Operation *user : alloc->getUsers()) {
    if (user == product.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (!init && isZeroFillBefore(user, c, product, /*positiveOnly=*/false)) {
      init = user;
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || generic->getBlock() != block)
      return nullptr;
    // The bias broadcast: %c[i, j] = %bq[j], before the product.
    if (!init && generic->isBeforeInBlock(product) && allParallel2D(generic) &&
        generic.getNumDpsInputs() == 1 &&
        generic.getDpsInitOperand(0)->get() == c &&
        generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)) ==
            identity &&
        isRowVector(generic, generic.getDpsInputOperand(0), elementType(c)) &&
        generic.getBlock()->getTerminator()->getOperand(0) ==
            generic.getMatchingBlockArgument(generic.getDpsInputOperand(0))) {
      init = generic;
      broadcastFrom = generic.getDpsInputOperand(0)->get();
      continue;
    }
    if (consumer || !product->isBeforeInBlock(generic))
      return nullptr;
    consumer = generic;
  }
  if (!init || !consumer || !allParallel2D(consumer) ||
      consumer.getNumDpsInputs() != 2 ||
      !elementType(consumer.getDpsInitOperand(0)->get()).isF32() ||
      consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0)) !=
          identity)
    return nullptr;
  OpOperand *cOperand = consumer.getDpsInputOperand(0),
            *scaleOperand = consumer.getDpsInputOperand(1);
  if (cOperand->get() != c)
    std::swap(cOperand, scaleOperand);
  if (cOperand->get() != c ||
      consumer.getMatchingIndexingMap(cOperand) != identity ||
      !isRowVector(consumer, scaleOperand, Float32Type::get(context)))
    return nullptr;
  // Body: sitofp(c) * scale[j], maybe max(., 0).
  Block &body = *consumer.getBlock();
  Value yielded = body.getTerminator()->getOperand(0);
  relu = false;
  if (auto max = yielded.getDefiningOp<arith::MaximumFOp>()) {
    auto isZero = [](Value v) {
      auto constant = v.getDefiningOp<arith::ConstantOp>();
      auto value =
          constant ? dyn_cast<FloatAttr>(constant.getValue()) : FloatAttr();
      return value && value.getValue().isPosZero();
    };
    if (isZero(max.getRhs()))
      yielded = max.getLhs();
    else if (isZero(max.getLhs()))
      yielded = max.getRhs();
    else
      return nullptr;
    relu = true;
  }
  auto mul = yielded.getDefiningOp<arith::MulFOp>();
  Value scaleArg = consumer.getMatchingBlockArgument(scaleOperand);
  Value converted = !mul                       ? Value()
                    : mul.getRhs() == scaleArg ? mul.getLhs()
                    : mul.getLhs() == scaleArg ? mul.getRhs()
                                               : Value();
  auto sitofp = converted ? converted.getDefiningOp<arith::SIToFPOp>()
                          : arith::SIToFPOp();
  // Only the ops matched above, and the constant zero if defined inside.
  size_t expected = (relu ? 4 : 3);
  size_t size = body.getOperations().size();
  if (!sitofp ||
      sitofp.getIn() != consumer.getMatchingBlockArgument(cOperand) ||
      (size != expected && size != expected + 1) ||
      (size == expected + 1 &&
       !isa<arith::ConstantOp>(body.getOperations().front())))
    return nullptr;
  if (!onlyAllocationsBetween(init, consumer, product))
    return nullptr;
  // %bq and %scale are defined before the product (values in scope there).
  for (Value v : {broadcastFrom, scaleOperand->get()})
    if (v && v.getDefiningOp() && v.getDefiningOp()->getBlock() == block &&
        !v.getDefiningOp()->isBeforeInBlock(product))
      return nullptr;
  if (!writableEarly(product, consumer, consumer.getDpsInitOperand(0)->get()))
    return nullptr;
  bias = broadcastFrom;
  scale = scaleOperand->get();
  return consumer;
}

/// The per-row partials of max |D| that dynamic quantization reads the
/// result %d of \p dequantized for, split into lanes by
/// --mp-gpu-split-reductions{lanes}:
///
///   %e = memref.expand_shape %d [[0], [1, 2]]     ([m, n / L, L])
///   %q = memref.alloc()                           ([m, L], in the block)
///   linalg.fill ins(%init) outs(%q)
///   linalg.generic ins(%e) outs(%q)               ((i, r, p) -> (i, p),
///       { yield maximumf(absf(x), acc) }           r the reduction)
///
/// mprt_gemm_s8_dequantize_absmax computes them while its scaling pass
/// holds D's rows, instead of in one more pass over D. Everything else
/// only reads %d; nothing but the fill and the generic touches %q before
/// the generic. Moves %q's allocation and fill before \p product and
/// returns the generic, or null.
linalg::GenericOp absMaxPartialsOf(linalg::LinalgOp product,
                                   linalg::GenericOp dequantized) {
  Block *block = product->getBlock();
  Value d = dequantized.getDpsInitOperand(0)->get();
  linalg::GenericOp partials;
  for (Operation *user : d.getUsers()) {
    auto expand = dyn_cast<memref::ExpandShapeOp>(user);
    if (!expand || !expand->hasOneUse() ||
        expand.getReassociationIndices().size() != 2 ||
        expand.getReassociationIndices()[1].size() != 2)
      continue;
    auto reader = dyn_cast<linalg::GenericOp>(*expand->getUsers().begin());
    if (reader && reader.getNumDpsInputs() == 1 &&
        reader.getDpsInputOperand(0)->get() == expand.getResult()) {
      partials = reader;
      break;
    }
  }
  if (!partials || partials->getBlock() != block ||
      !dequantized->isBeforeInBlock(partials) ||
      partials.getNumDpsInits() != 1 || partials.getNumLoops() != 3)
    return {};
  // Between the dequantization and the partials' loop D is only read (they
  // must see what the call wrote); after it anything goes.
  SmallVector<std::pair<Operation *, Value>> uses;
  collectUses(d, uses);
  for (auto [user, value] : uses) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (user == dequantized.getOperation() || onlyReads(user, value) ||
        (inBlock && partials->isBeforeInBlock(inBlock)))
      continue;
    return {};
  }
  // (i, r, p) -> (i, r, p) and (i, p), r the only reduction.
  MLIRContext *context = product->getContext();
  AffineExpr i = getAffineDimExpr(0, context), p = getAffineDimExpr(2, context);
  SmallVector<AffineMap> maps = partials.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators =
      partials.getIteratorTypesArray();
  if (!maps[0].isIdentity() ||
      maps[1] != AffineMap::get(3, 0, {i, p}, context) ||
      iterators[0] != utils::IteratorType::parallel ||
      iterators[1] != utils::IteratorType::reduction ||
      iterators[2] != utils::IteratorType::parallel)
    return {};
  // Body: maximumf(absf(x), acc), either order.
  Block &body = *partials.getBlock();
  if (body.getOperations().size() != 3)
    return {};
  auto abs = dyn_cast<math::AbsFOp>(&body.front());
  auto max = dyn_cast<arith::MaximumFOp>(abs ? abs->getNextNode() : nullptr);
  if (!abs || !max || abs.getOperand() != body.getArgument(0) ||
      body.getTerminator()->getOperand(0) != max.getResult() ||
      !((max.getLhs() == abs.getResult() && max.getRhs() == body.getArgument(1)) ||
        (max.getRhs() == abs.getResult() && max.getLhs() == body.getArgument(1))))
    return {};
  // %q: a static allocation of the block whose fill comes first.
  Value q = partials.getDpsInitOperand(0)->get();
  auto qAlloc = q.getDefiningOp<memref::AllocOp>();
  auto qType = cast<MemRefType>(q.getType());
  if (!qAlloc || qAlloc->getBlock() != block || qAlloc->getNumOperands() != 0 ||
      !qType.hasStaticShape() || !hasUnitInnerStride(qType, 2) ||
      !qType.getLayout().isIdentity())
    return {};
  linalg::FillOp fill;
  for (Operation *user : q.getUsers()) {
    if (user == partials.getOperation())
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock)
      return {};
    auto userFill = dyn_cast<linalg::FillOp>(user);
    if (userFill && !fill && userFill->getBlock() == block &&
        userFill->isBeforeInBlock(partials)) {
      fill = userFill;
      continue;
    }
    if (!partials->isBeforeInBlock(inBlock))
      return {};
  }
  if (!fill)
    return {};
  // The fill's value must exist at the product (a block argument does).
  if (Operation *def = fill.getInputs()[0].getDefiningOp();
      def && def->getBlock() == block && !def->isBeforeInBlock(product))
    return {};
  if (product->isBeforeInBlock(qAlloc))
    qAlloc->moveBefore(product);
  if (product->isBeforeInBlock(fill))
    fill->moveBefore(product);
  return partials;
}

/// The zero fill of a product's C that nothing else sees:
///
///   %c = memref.alloc()
///   linalg.fill ins(0) outs(%c)
///   <product> outs(%c)                   (%c's other users come after)
///
/// The GEMM can then overwrite C (MPRT_GEMM_OVERWRITE_C): the fill, and
/// the GEMM's read of its zeros, are never done. Returns the fill, or null.
linalg::FillOp zeroFillOf(linalg::LinalgOp product) {
  Value c = product.getDpsInitOperand(0)->get();
  memref::AllocOp alloc = resultAllocInBlock(product);
  if (!alloc)
    return nullptr;
  Block *block = product->getBlock();
  linalg::FillOp fill;
  for (Operation *user : alloc->getUsers()) {
    if (user == product.getOperation())
      continue;
    if (!fill && isZeroFillBefore(user, c, product, /*positiveOnly=*/false)) {
      fill = cast<linalg::FillOp>(user);
      continue;
    }
    // Anything else (a view, a read, another write) after the product.
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock || !product->isBeforeInBlock(inBlock))
      return nullptr;
  }
  return fill;
}

/// The permutation of attention's head split and merge: the middle two of
/// four dimensions swapped ([S, T, H, F] <-> [S, H, T, F]); its own
/// inverse.
constexpr std::array<int64_t, 4> kMiddleSwapped = {0, 2, 1, 3};

/// The input of \p op when it copies a 4-D buffer into its init with the
/// middle two dimensions swapped, out[s, h, t, f] = in[s, t, h, f]: a
/// linalg.transpose with permutation [0, 2, 1, 3], or a linalg.generic
/// that does the same (the backward's copies); else null.
Value middleSwapInput(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics() ||
      linalgOp.getNumDpsInputs() != 1 || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumLoops() != 4)
    return {};
  Value input = linalgOp.getDpsInputOperand(0)->get();
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op))
    return transpose.getPermutation() == ArrayRef<int64_t>(kMiddleSwapped)
               ? input
               : Value();
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumParallelLoops() != 4)
    return {};
  Block &body = *generic.getBlock();
  if (body.getOperations().size() != 1 ||
      body.getTerminator()->getOperand(0) != body.getArgument(0))
    return {};
  AffineMap in = generic.getIndexingMapsArray()[0],
            out = generic.getIndexingMapsArray()[1];
  AffineMap swapped = AffineMap::getPermutationMap(
      ArrayRef<unsigned>{0, 2, 1, 3}, op->getContext());
  if ((in.isIdentity() && out == swapped) ||
      (in == swapped && out.isIdentity()))
    return input;
  return {};
}

/// Whether \p reassociation merges the first two of four dimensions:
/// [[0, 1], [2], [3]].
bool mergesBatchDims(ArrayRef<ReassociationIndices> reassociation) {
  return reassociation.size() == 3 && reassociation[0].size() == 2 &&
         reassociation[1].size() == 1 && reassociation[2].size() == 1;
}

/// A batched operand %v that is attention's head split, a collapsed copy
/// of a 4-D buffer with its middle dimensions swapped:
///
///   %t = memref.alloc()                  (in a block)
///   <swap> ins(%s) outs(%t)              ([S, T, H, F] -> [S, H, T, F])
///   %v = memref.collapse_shape %t [[0, 1], [2], [3]]
///   <products> ins(%v, ...)              (or a transposed copy of %v that
///                                         goes: \p readInPlace)
///   memref.dealloc %t
///
/// Its products can read %s through a view with those dimensions swapped
/// (two batch dimensions, mprt_gemm_batched_2d): when every other user of
/// %t is a view like %v that only \p readInPlace ops use, %s's rows are
/// contiguous, %s's buffer is an allocation of the block, and nothing
/// writes it between the swap and %t's dealloc. Returns the swap, or null;
/// sets the deallocations of %s's buffer (null if none in the block) and
/// of %t: the first must move to the second once a product reads %s.
Operation *
headSplitOf(Value v, llvm::function_ref<bool(Operation *, Value)> readInPlace,
            Operation *&sourceDealloc, Operation *&tDealloc) {
  auto collapse = v.getDefiningOp<memref::CollapseShapeOp>();
  if (!collapse || !mergesBatchDims(collapse.getReassociationIndices()))
    return nullptr;
  Value t = collapse.getSrc();
  auto tAlloc = t.getDefiningOp<memref::AllocOp>();
  if (!tAlloc)
    return nullptr;
  Block *block = tAlloc->getBlock();
  Operation *swap = nullptr;
  tDealloc = nullptr;
  for (Operation *user : t.getUsers()) {
    if (user->getBlock() != block)
      return nullptr;
    if (isa<memref::DeallocOp>(user) && !tDealloc) {
      tDealloc = user;
    } else if (!swap && middleSwapInput(user) &&
               cast<linalg::LinalgOp>(user).getDpsInitOperand(0)->get() == t) {
      swap = user;
    } else if (auto view = dyn_cast<memref::CollapseShapeOp>(user);
               view && mergesBatchDims(view.getReassociationIndices())) {
      for (Operation *reader : view->getUsers())
        if (!readInPlace(reader, view))
          return nullptr;
    } else {
      return nullptr;
    }
  }
  if (!swap || !tDealloc || !swap->isBeforeInBlock(tDealloc))
    return nullptr;
  Value source = middleSwapInput(swap);
  if (!hasUnitInnerStride(cast<MemRefType>(source.getType()), 4))
    return nullptr;
  Value buffer = mlir::mp::viewedBuffer(source);
  auto sourceAlloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!sourceAlloc || sourceAlloc->getBlock() != block)
    return nullptr;
  SmallVector<std::pair<Operation *, Value>> uses;
  collectUses(buffer, uses);
  sourceDealloc = nullptr;
  for (auto [user, value] : uses) {
    if (user == swap)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock)
      return nullptr;
    if (isa<memref::DeallocOp>(user) && user->getBlock() == block &&
        !sourceDealloc) {
      sourceDealloc = user;
      continue;
    }
    if (!onlyReads(user, value) && !inBlock->isBeforeInBlock(swap) &&
        !tDealloc->isBeforeInBlock(inBlock))
      return nullptr;
  }
  return swap;
}

/// A batched product's result %d (written by \p writer: the product into
/// its \p zeroFill, or the rounding of its result) that only goes through
/// attention's head merge:
///
///   %d = memref.alloc()                  (in the product's block)
///   <writer> outs(%d)
///   %e = memref.expand_shape %d [[0, 1], [2], [3]]
///   <swap> ins(%e) outs(%t)              ([S, H, T, F] -> [S, T, H, F])
///   memref.dealloc %d
///
/// The GEMM can write %t through a view with those dimensions swapped when
/// %t's rows are contiguous and it is a fresh buffer of the block that no
/// op uses before the swap (see writableEarly). Returns the swap, with %t's
/// alloc moved before the product, or null.
Operation *headMergeOf(linalg::LinalgOp product, Operation *writer, Value d,
                       Operation *zeroFill) {
  auto dAlloc = d.getDefiningOp<memref::AllocOp>();
  if (!dAlloc || dAlloc->getBlock() != product->getBlock())
    return nullptr;
  Operation *swap = nullptr;
  for (Operation *user : d.getUsers()) {
    if (user == writer || user == zeroFill || isa<memref::DeallocOp>(user))
      continue;
    auto expand = dyn_cast<memref::ExpandShapeOp>(user);
    if (swap || !expand || !mergesBatchDims(expand.getReassociationIndices()) ||
        !expand->hasOneUse())
      return nullptr;
    swap = *expand->getUsers().begin();
    if (middleSwapInput(swap) != expand.getResult())
      return nullptr;
  }
  if (!swap)
    return nullptr;
  Value t = cast<linalg::LinalgOp>(swap).getDpsInitOperand(0)->get();
  if (!hasUnitInnerStride(cast<MemRefType>(t.getType()), 4) ||
      !writableEarly(product, swap, t))
    return nullptr;
  return swap;
}

/// Erases \p copy, the allocation it writes and that buffer's other users
/// when each of those is a deallocation or \p unused; whether it did.
bool eraseUnreadCopy(Operation *copy,
                     llvm::function_ref<bool(Operation *)> unused) {
  Value buffer = cast<linalg::LinalgOp>(copy).getDpsInitOperand(0)->get();
  if (!llvm::all_of(buffer.getUsers(), [&](Operation *user) {
        return user == copy || isa<memref::DeallocOp>(user) || unused(user);
      }))
    return false;
  copy->erase();
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    user->erase();
  buffer.getDefiningOp()->erase();
  return true;
}

struct ContractionsToRuntimePass
    : mp::impl::ConvertContractionsToRuntimeBase<ContractionsToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool cuda = runtime == mlir::mp::ContractionRuntime::Cuda;
    SmallVector<std::pair<linalg::LinalgOp, Product>> products;
    module.walk([&](linalg::LinalgOp op) {
      std::optional<Product> product = matchProduct(op);
      if (!product)
        return;
      int64_t rank = product->batched ? 3 : 2;
      auto typeOf = [](Value v) { return cast<MemRefType>(v.getType()); };
      MemRefType a = typeOf(product->a->get()), b = typeOf(product->b->get()),
                 c = typeOf(op.getDpsInitOperand(0)->get());
      if (!gemmType(a.getElementType(), b.getElementType(),
                    c.getElementType()) ||
          !hasUnitInnerStride(a, product->sharedA ? 2 : rank) ||
          !hasUnitInnerStride(b, product->sharedB ? 2 : rank) ||
          !hasUnitInnerStride(c, rank))
        return;
      products.push_back({op, *product});
    });
    if (products.empty())
      return;
    // Operands that are transposed copies made for products: the GEMM
    // reads the original.
    llvm::DenseSet<Operation *> productOps;
    for (auto &[op, product] : products)
      productOps.insert(op);
    llvm::SetVector<Operation *> transposes;
    for (auto &[op, product] : products) {
      for (auto [operand, source] :
           {std::make_pair(product.a, &product.sourceA),
            std::make_pair(product.b, &product.sourceB)}) {
        if (linalg::TransposeOp copy =
                transposedCopyOf(operand->get(), op, productOps)) {
          *source = copy.getInput();
          transposes.insert(copy);
        }
      }
    }

    // Operands that are attention's head split: the products read the
    // split's source in place, through a view with two batch dimensions.
    llvm::DenseMap<Value, Operation *> headSources; // collapsed copy -> swap
    // Each split's deallocations of its source and its copy; the splits a
    // product reads in place.
    llvm::MapVector<Operation *, std::pair<Operation *, Operation *>>
        headSplits;
    llvm::DenseSet<Operation *> splitsReadInPlace;
    if (!cuda) {
      llvm::DenseMap<Operation *, Product *> productOf;
      for (auto &[op, product] : products)
        productOf[op] = &product;
      auto readA = [](Product &p) {
        return p.sourceA ? p.sourceA : p.a->get();
      };
      auto readB = [](Product &p) {
        return p.sourceB ? p.sourceB : p.b->get();
      };
      // A product that reads \p view as A or B only, or a transposed copy
      // of it that goes.
      auto readInPlace = [&](Operation *user, Value view) {
        if (transposes.contains(user))
          return cast<linalg::TransposeOp>(user).getInput() == view;
        Product *product = productOf.lookup(user);
        return product && product->batched &&
               cast<linalg::LinalgOp>(user).getDpsInitOperand(0)->get() !=
                   view &&
               (readA(*product) == view || readB(*product) == view);
      };
      for (auto &[op, product] : products) {
        for (Value operand : {readA(product), readB(product)}) {
          if (headSources.count(operand))
            continue;
          Operation *sourceDealloc, *tDealloc;
          Operation *swap =
              headSplitOf(operand, readInPlace, sourceDealloc, tDealloc);
          if (!swap)
            continue;
          headSplits[swap] = {sourceDealloc, tDealloc};
          Value t = cast<linalg::LinalgOp>(swap).getDpsInitOperand(0)->get();
          for (Operation *user : t.getUsers())
            if (isa<memref::CollapseShapeOp>(user))
              headSources[user->getResult(0)] = swap;
        }
      }
    }

    OpBuilder b(module.getBodyRegion());
    Type i64 = b.getI64Type(), i32 = b.getI32Type();
    // mprt_gemm(a, lda, b, ldb, c, ldc, m, n, k, flags, type); the batched
    // entries (mprt_gemm_batched on the CPU, mprt_cuda_gemm_sync for every
    // product on CUDA) append batch, strideA, strideB, strideC (4
    // batchArgs); mprt_gemm_batched_2d the outer batch and its strides
    // before those (8). mprt_gemm_s8_dequantize takes no type and appends
    // bias, scale.
    auto declare = [&](StringRef name, unsigned batchArgs, bool bias = false,
                       bool dequantize = false, bool absMax = false) {
      if (auto existing = module.lookupSymbol<func::FuncOp>(name))
        return existing;
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      SmallVector<Type> args(9, i64);
      args.push_back(i32);
      if (dequantize)
        args.append({i64, i64});
      else
        args.push_back(i32);
      if (absMax) // partials, lanes
        args.append({i64, i64});
      args.append(batchArgs, i64);
      if (bias)
        args.push_back(i64);
      auto callee = func::FuncOp::create(b, module.getLoc(), name,
                                         b.getFunctionType(args, {i32}));
      callee.setPrivate();
      return callee;
    };
    for (auto [op, product] : products) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      auto toI64 = [&](Value v) -> Value {
        return arith::IndexCastOp::create(b, loc, i64, v);
      };
      // A result that is only rounded: the call writes the rounded buffer.
      // On libmprt (libmprt_cuda has neither yet), a result that only gets
      // a bias added: mprt_gemm_bias writes the sum; and a result into
      // fresh zeros: the call overwrites C.
      RoundingLayout layout = RoundingLayout::Same;
      Operation *rounding = roundedResultOf(op, layout);
      Value bias, scale, biasedSum;
      bool relu = false;
      linalg::GenericOp biased =
          rounding || cuda ? linalg::GenericOp()
                           : biasedResultOf(op, product, bias, biasedSum);
      linalg::GenericOp dequantized =
          rounding || biased || cuda
              ? linalg::GenericOp()
              : dequantizedResultOf(op, product, bias, scale, relu);
      // Dynamic quantization's max |D| partials, read from D right after.
      linalg::GenericOp absMax = dequantized
                                     ? absMaxPartialsOf(op, dequantized)
                                     : linalg::GenericOp();
      linalg::FillOp zeroFill = rounding || biased || dequantized || cuda
                                    ? linalg::FillOp()
                                    : zeroFillOf(op);
      Operation *consumer = rounding ? rounding
                            : biased ? biased.getOperation()
                                     : dequantized.getOperation();
      // A rounded result, or one into zeros made for it, that only goes
      // through attention's head merge: the call writes the merged layout.
      Operation *headMerge = nullptr;
      if (product.batched && !cuda && rounding)
        headMerge = headMergeOf(
            op, rounding,
            cast<linalg::GenericOp>(rounding).getDpsInitOperand(0)->get(),
            nullptr);
      else if (product.batched && !cuda && zeroFill)
        headMerge =
            headMergeOf(op, op, op.getDpsInitOperand(0)->get(), zeroFill);
      // A head split's source, or a head merge's result, as the 4-D view
      // the products read or write: [S, H, T, F] with H and T's strides
      // swapped.
      auto headView = [&](Value memref) -> Value {
        return memref::TransposeOp::create(
            b, loc, memref,
            AffineMapAttr::get(AffineMap::getPermutationMap(
                ArrayRef<unsigned>{0, 2, 1, 3}, b.getContext())));
      };
      // Every 4-D view must split the batch the same way, [S, H] (read off
      // the [S, T, H, F] buffers, statically): then one outer count and
      // one inner count describe all three.
      std::optional<std::pair<int64_t, int64_t>> split;
      auto splitsAlike = [&](Value buffer) {
        auto type = cast<MemRefType>(buffer.getType());
        if (type.isDynamicDim(0) || type.isDynamicDim(2))
          return false;
        std::pair<int64_t, int64_t> dims{type.getDimSize(0),
                                         type.getDimSize(2)};
        if (!split)
          split = dims;
        return *split == dims;
      };
      Value merged =
          headMerge
              ? cast<linalg::LinalgOp>(headMerge).getDpsInitOperand(0)->get()
              : Value();
      if (merged && !splitsAlike(merged))
        headMerge = nullptr;
      // A transposed copy's original (its flag flipped below), read through
      // a head view where it is a head split.
      auto operandMem = [&](Value read) {
        Operation *swap = headSources.lookup(read);
        Value source = swap ? middleSwapInput(swap) : Value();
        if (!source || !splitsAlike(source))
          return read;
        splitsReadInPlace.insert(swap);
        return headView(source);
      };
      Value aMem = operandMem(product.sourceA ? product.sourceA
                                              : product.a->get()),
            bMem = operandMem(product.sourceB ? product.sourceB
                                              : product.b->get()),
            cMem = headMerge  ? headView(merged)
                   : consumer ? cast<linalg::GenericOp>(consumer)
                                    .getDpsInitOperand(0)
                                    ->get()
                              : op.getDpsInitOperand(0)->get();
      product.transA ^= static_cast<bool>(product.sourceA);
      product.transB ^= static_cast<bool>(product.sourceB);
      // A transposed result: D = op(B)^T op(A)^T.
      if (layout == RoundingLayout::Transposed) {
        std::swap(aMem, bMem);
        std::swap(product.sharedA, product.sharedB);
        std::tie(product.transA, product.transB) =
            std::make_pair(!product.transB, !product.transA);
      }
      auto dim = [&](Value memref, int64_t d) -> Value {
        return toI64(memref::DimOp::create(b, loc, memref, d));
      };
      auto rankOf = [](Value memref) {
        return cast<MemRefType>(memref.getType()).getRank();
      };
      // Two batch dimensions [outer, count] when a head view is read or
      // written; a 3-D operand's batch p = outer * count + inner.
      Value view4 = rankOf(aMem) == 4   ? aMem
                    : rankOf(bMem) == 4 ? bMem
                    : rankOf(cMem) == 4 ? cMem
                                        : Value();
      Value count = view4 ? dim(view4, 1) : Value();
      // Base pointer + offset (in bytes), leading dimension and batch
      // strides (in elements; 0 for a matrix shared by the batch), as i64.
      struct Matrix {
        Value pointer, ld, batchStride, outerStride;
      };
      Value zero; // one i64 0 for the shared matrices' strides
      auto matrix = [&](Value memref) -> Matrix {
        auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
        int64_t rank = rankOf(memref);
        Matrix result{toI64(mlir::mp::alignedAddress(b, loc, memref)),
                      toI64(meta.getStrides()[rank - 2]), Value(), Value()};
        if (!product.batched)
          return result;
        if (rank == 2 && !zero)
          zero = arith::ConstantIntOp::create(b, loc, i64, 0);
        result.batchStride =
            rank == 2 ? zero : toI64(meta.getStrides()[rank - 3]);
        if (view4)
          result.outerStride =
              rank == 2 ? zero
              : rank == 4
                  ? toI64(meta.getStrides()[0])
                  : arith::MulIOp::create(b, loc, result.batchStride, count)
                        .getResult();
        return result;
      };
      Matrix aMat = matrix(aMem), bMat = matrix(bMem), cMat = matrix(cMem);
      int64_t cRank = rankOf(cMem), aRank = rankOf(aMem);
      Value m = dim(cMem, cRank - 2), n = dim(cMem, cRank - 1);
      Value k = dim(aMem, aRank - 2 + (product.transA ? 0 : 1));
      bool roundedC =
          rounding ||
          (biased &&
           !cast<MemRefType>(cMem.getType()).getElementType().isF32());
      int32_t flags = (product.transA ? MPRT_GEMM_TRANS_A : 0) |
                      (product.transB ? MPRT_GEMM_TRANS_B : 0) |
                      (roundedC ? MPRT_GEMM_ROUNDED_C : 0) |
                      (zeroFill ? MPRT_GEMM_OVERWRITE_C : 0) |
                      (relu ? MPRT_GEMM_RELU : 0);
      auto type = *gemmType(
          cast<MemRefType>(aMem.getType()).getElementType(),
          cast<MemRefType>(bMem.getType()).getElementType(),
          cast<MemRefType>(op.getDpsInitOperand(0)->get().getType())
              .getElementType());
      Value flagsValue = arith::ConstantIntOp::create(b, loc, i32, flags);
      SmallVector<Value> args{aMat.pointer,
                              aMat.ld,
                              bMat.pointer,
                              bMat.ld,
                              cMat.pointer,
                              cMat.ld,
                              m,
                              n,
                              k,
                              flagsValue};
      // mprt_gemm_s8_dequantize takes no type (s8).
      if (!dequantized)
        args.push_back(arith::ConstantIntOp::create(b, loc, i32, type));
      if (view4) {
        args.append({dim(view4, 0), aMat.outerStride, bMat.outerStride,
                     cMat.outerStride, count, aMat.batchStride,
                     bMat.batchStride, cMat.batchStride});
      } else if (cuda || product.batched) {
        if (product.batched) {
          args.append({dim(cMem, 0), aMat.batchStride, bMat.batchStride,
                       cMat.batchStride});
        } else {
          if (!zero)
            zero = arith::ConstantIntOp::create(b, loc, i64, 0);
          Value one = arith::ConstantIntOp::create(b, loc, i64, 1);
          args.append({one, zero, zero, zero});
        }
      }
      func::FuncOp callee;
      if (biased) {
        args.push_back(toI64(mlir::mp::alignedAddress(b, loc, bias)));
        callee = declare(kBiasGemmName, /*batchArgs=*/0, /*bias=*/true);
      } else if (dequantized) {
        // ..., flags, bias (0 when there is none), scale.
        args.push_back(
            bias ? toI64(mlir::mp::alignedAddress(b, loc, bias))
                 : arith::ConstantIntOp::create(b, loc, i64, 0).getResult());
        args.push_back(toI64(mlir::mp::alignedAddress(b, loc, scale)));
        if (absMax) {
          // Q: [m, lanes].
          Value q = absMax.getDpsInitOperand(0)->get();
          int64_t lanes = cast<MemRefType>(q.getType()).getDimSize(1);
          args.push_back(toI64(mlir::mp::alignedAddress(b, loc, q)));
          args.push_back(arith::ConstantIntOp::create(b, loc, i64, lanes));
        }
        callee = declare(absMax ? kDequantizeAbsMaxGemmName
                                : kDequantizeGemmName,
                         /*batchArgs=*/0, /*bias=*/false, /*dequantize=*/true,
                         /*absMax=*/static_cast<bool>(absMax));
      } else if (view4) {
        callee = declare(kBatched2dGemmName, /*batchArgs=*/8);
      } else {
        callee = cuda ? declare(kCudaGemmName, 4)
                      : declare(product.batched ? kBatchedGemmName : kGemmName,
                                product.batched ? 4 : 0);
      }
      func::CallOp::create(b, loc, callee, args);
      if (biasedSum)
        applyInPlace(biased, biasedSum);
      if (consumer) {
        // The f32 result's buffer, its fill and deallocation go too.
        Value c = op.getDpsInitOperand(0)->get();
        consumer->erase();
        op->erase();
        for (Operation *user : llvm::make_early_inc_range(c.getUsers()))
          user->erase();
        c.getDefiningOp()->erase();
        ++(rounding ? numRounded : biased ? numBiased : numDequantized);
        if (absMax) {
          // The partials' pass and D's view for it.
          Operation *expand =
              absMax.getDpsInputOperand(0)->get().getDefiningOp();
          absMax->erase();
          expand->erase();
          ++numAbsMaxPartials;
        }
        if (layout == RoundingLayout::Transposed)
          ++numTransposedResults;
      } else {
        op->erase();
      }
      if (zeroFill) {
        zeroFill->erase();
        ++numOverwritten;
      }
      if (headMerge) {
        // The swap, the result's expansion, deallocation and allocation.
        auto expand =
            middleSwapInput(headMerge).getDefiningOp<memref::ExpandShapeOp>();
        Value d = expand.getSrc();
        headMerge->erase();
        expand->erase();
        for (Operation *user : llvm::make_early_inc_range(d.getUsers()))
          user->erase();
        d.getDefiningOp()->erase();
        ++numHeadMerges;
      }
      ++numCalls;
    }
    // Copies that no product reads any more go, with their buffers: the
    // transposed copies (whose buffers only deallocations use then) and
    // the head splits (whose collapsed views nothing uses then).
    for (Operation *transpose : transposes)
      if (eraseUnreadCopy(transpose, [](Operation *) { return false; }))
        ++numTransposedOperands;
    for (auto &[swap, deallocs] : headSplits) {
      // A source read in place lives as long as its copy did.
      auto [sourceDealloc, tDealloc] = deallocs;
      if (splitsReadInPlace.contains(swap) && sourceDealloc &&
          sourceDealloc->isBeforeInBlock(tDealloc))
        sourceDealloc->moveBefore(tDealloc);
      if (eraseUnreadCopy(swap, [](Operation *user) {
            return isa<memref::CollapseShapeOp>(user) && user->use_empty();
          }))
        ++numHeadSplits;
    }
  }
};

} // namespace
