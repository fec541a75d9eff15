//===- ProductMatchers.cpp - what a runtime GEMM call can take ------------===//
//
// Matrix products on buffers, the copies their GEMM calls may read around
// and the consumers whose work the calls may do (ProductMatchers.h). Each
// fusion's matcher says why it declined under
// -debug-only=mp-contractions-to-runtime.
//
//===----------------------------------------------------------------------===//

#include "ProductMatchers.h"

#include "mp/Conversion/Passes.h"
#include "mp/Support/IRUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "mp-contractions-to-runtime"

using namespace mlir;

namespace mlir {
namespace mp {
namespace contractions {

/// Logs why \p fusion was not done for \p product and returns null.
static std::nullptr_t
declined(Operation *product, StringRef fusion, StringRef why) {
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] no " << fusion << " for "
                          << product->getName() << " at " << product->getLoc()
                          << ": " << why << "\n");
  (void)product, (void)fusion, (void)why;
  return nullptr;
}

/// Strips the widening of a contraction body's input (extf, or extsi for
/// the i8 -> i32 products of --mp-quantize).
static Value throughExtension(Value value) {
  if (auto ext = value.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  if (auto ext = value.getDefiningOp<arith::ExtSIOp>())
    return ext.getIn();
  return value;
}

/// Whether \p op's body is yield(acc + x * y) over its two inputs, of
/// either order, the inputs maybe widened.
static bool hasMultiplyAddBody(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!isa_and_present<arith::AddFOp, arith::AddIOp>(add) ||
      body.getOperations().size() > 5)
    return false;
  Value acc = op.getRegionOutputArgs()[0];
  Value product = add->getOperand(0) == acc   ? add->getOperand(1)
                  : add->getOperand(1) == acc ? add->getOperand(0)
                                              : Value();
  Operation *mul = product ? product.getDefiningOp() : nullptr;
  if (!isa_and_present<arith::MulFOp, arith::MulIOp>(mul))
    return false;
  Value x = throughExtension(mul->getOperand(0)),
        y = throughExtension(mul->getOperand(1));
  auto inputs = op.getRegionInputArgs();
  return (x == inputs[0] && y == inputs[1]) ||
         (x == inputs[1] && y == inputs[0]);
}

namespace {
/// The loops a product's input indexes its rows and columns with.
struct OperandDims {
  unsigned rows, cols;
  bool shared;
};
} // namespace

/// The dims of \p operand of \p op, whose result is indexed by \p out
/// ([p,] i, j): a batched operand is [p, rows, cols] (the batch loop leads
/// it); a shared one (in a batched product) is [rows, cols].
static std::optional<OperandDims>
operandDims(linalg::LinalgOp op, OpOperand *operand,
            AffineMap out, bool batched) {
  unsigned numLoops = op.getNumLoops(), first = batched ? 1 : 0;
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (!map.isProjectedPermutation())
    return std::nullopt;
  if (batched && map.getNumResults() == 2 &&
      map.getDimPosition(0) != out.getDimPosition(0) &&
      map.getDimPosition(1) != out.getDimPosition(0))
    return OperandDims{map.getDimPosition(0), map.getDimPosition(1), true};
  if (map.getNumResults() != numLoops - 1)
    return std::nullopt;
  if (batched && map.getDimPosition(0) != out.getDimPosition(0))
    return std::nullopt;
  return OperandDims{map.getDimPosition(first), map.getDimPosition(first + 1),
                     false};
}

/// Makes \p operand \p result's A when it indexes (i, r) or (r, i), its B
/// when it indexes (r, j) or (j, r); false when neither.
static bool assignOperand(Product &result, OpOperand *operand, OperandDims dims,
                          unsigned i, unsigned j, unsigned r) {
  auto is = [&](unsigned x, unsigned y) {
    return dims.rows == x && dims.cols == y;
  };
  if (is(i, r) || is(r, i)) {
    result.a = operand;
    result.transA = dims.rows == r;
    result.sharedA = dims.shared;
    return true;
  }
  if (is(r, j) || is(j, r)) {
    result.b = operand;
    result.transB = dims.rows == j;
    result.sharedB = dims.shared;
    return true;
  }
  return false;
}

/// Whether \p op is a multiply-add on buffers of two inputs into one init
/// over three or four loops, one of them a reduction.
static bool hasProductShape(linalg::LinalgOp op) {
  unsigned numLoops = op.getNumLoops();
  return op.hasPureBufferSemantics() && op.getNumDpsInputs() == 2 &&
         op.getNumDpsInits() == 1 && (numLoops == 3 || numLoops == 4) &&
         op.getNumReductionLoops() == 1 && hasMultiplyAddBody(op);
}

/// The reduction loop of \p op when its result map \p out ([p,] i, j)
/// indexes the result by the other loops directly.
static std::optional<unsigned>
reductionOutside(linalg::LinalgOp op, AffineMap out) {
  if (out.getNumResults() != op.getNumLoops() - 1 ||
      !out.isProjectedPermutation())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned r =
      llvm::find(iterators, utils::IteratorType::reduction) - iterators.begin();
  if (llvm::is_contained(out.getResults(),
                         getAffineDimExpr(r, op.getContext())))
    return std::nullopt;
  return r;
}

static std::optional<Product> matchProduct(linalg::LinalgOp op) {
  if (!hasProductShape(op))
    return std::nullopt;
  // Loops: the output indexes ([p,] i, j) directly; r is the reduction.
  Product result;
  result.batched = op.getNumLoops() == 4;
  unsigned first = result.batched ? 1 : 0;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> reduction = reductionOutside(op, out);
  if (!reduction)
    return std::nullopt;
  unsigned r = *reduction;
  unsigned i = out.getDimPosition(first), j = out.getDimPosition(first + 1);
  for (OpOperand *operand : op.getDpsInputOperands()) {
    std::optional<OperandDims> dims =
        operandDims(op, operand, out, result.batched);
    if (!dims || !assignOperand(result, operand, *dims, i, j, r))
      return std::nullopt;
  }
  if (!result.isComplete())
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
static bool hasUnitInnerStride(MemRefType type, int64_t rank) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return static_cast<int64_t>(strides.size()) == rank && strides.back() == 1;
}

MemRefType memrefTypeOf(Value value) {
  return cast<MemRefType>(value.getType());
}

Type elementTypeOf(Value value) {
  return memrefTypeOf(value).getElementType();
}

/// A product the runtime computes: its element types have a GEMM type
/// code and its matrices' rows are contiguous.
std::optional<Product> matchSupportedProduct(linalg::LinalgOp op) {
  std::optional<Product> product = matchProduct(op);
  if (!product)
    return std::nullopt;
  int64_t rank = product->batched ? 3 : 2;
  MemRefType a = memrefTypeOf(product->a->get()),
             b = memrefTypeOf(product->b->get()),
             c = memrefTypeOf(op.getDpsInitOperand(0)->get());
  if (!gemmType(a.getElementType(), b.getElementType(), c.getElementType()) ||
      !hasUnitInnerStride(a, product->sharedA ? 2 : rank) ||
      !hasUnitInnerStride(b, product->sharedB ? 2 : rank) ||
      !hasUnitInnerStride(c, rank))
    return std::nullopt;
  return product;
}

/// The permutation of \p rank dimensions that swaps the last two.
static SmallVector<unsigned> lastTwoSwapped(unsigned rank) {
  auto permutation = llvm::to_vector(llvm::seq<unsigned>(0, rank));
  std::swap(permutation[rank - 2], permutation[rank - 1]);
  return permutation;
}

/// Whether \p body is `yield(truncf(in))`.
static bool isTruncfBody(Block &body) {
  if (body.getOperations().size() != 2)
    return false;
  auto truncf = dyn_cast<arith::TruncFOp>(&body.front());
  return truncf && truncf.getIn() == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == truncf.getResult();
}

static std::optional<RoundingLayout>
roundingCopyLayout(Operation *op, Value from) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getDpsInputOperand(0)->get() != from ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !isTruncfBody(*generic.getBlock()))
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
static void collectUses(Value value,
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
static bool onlyReads(Operation *user, Value value) {
  if (isa<memref::LoadOp, affine::AffineLoadOp, vector::TransferReadOp,
          memref::DimOp>(user))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
  return linalgOp && llvm::none_of(linalgOp.getDpsInits(),
                                   [&](Value init) { return init == value; });
}

/// The transpose that writes \p x when \p x's other users are
/// deallocations and ops of \p products that only read it; else null.
static linalg::TransposeOp
soleTransposeInto(Value x, const llvm::DenseSet<Operation *> &products) {
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
  return transpose;
}

/// Whether \p buffer, an allocation of \p product's block, is written only
/// before \p copy (which reads it) or after \p product, and freed after
/// \p product.
static bool
unwrittenBetween(Value buffer, Operation *copy, Operation *product) {
  Block *block = product->getBlock();
  SmallVector<std::pair<Operation *, Value>> uses;
  collectUses(buffer, uses);
  for (auto [user, value] : uses) {
    if (user == copy)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock)
      return false;
    bool afterProduct = product->isBeforeInBlock(inBlock);
    if (isa<memref::DeallocOp>(user)) {
      if (!afterProduct)
        return false;
      continue;
    }
    if (!onlyReads(user, value) && !inBlock->isBeforeInBlock(copy) &&
        !afterProduct)
      return false;
  }
  return true;
}

/// Whether \p transpose (of \p rank dimensions, at least 2) swaps the last
/// two.
static bool swapsLastTwo(linalg::TransposeOp transpose, unsigned rank) {
  if (rank < 2)
    return false;
  auto permutation = llvm::to_vector_of<int64_t>(lastTwoSwapped(rank));
  return transpose.getPermutation() == ArrayRef<int64_t>(permutation);
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
  linalg::TransposeOp transpose = soleTransposeInto(x, products);
  if (!transpose || transpose->getBlock() != block ||
      !transpose->isBeforeInBlock(product))
    return {};
  unsigned rank = memrefTypeOf(x).getRank();
  if (!swapsLastTwo(transpose, rank))
    return {};
  Value source = transpose.getInput();
  if (!hasUnitInnerStride(memrefTypeOf(source), rank))
    return {};
  Value buffer = mlir::mp::viewedBuffer(source);
  auto sourceAlloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!sourceAlloc || sourceAlloc->getBlock() != block ||
      !unwrittenBetween(buffer, transpose, product))
    return {};
  return transpose;
}

/// Whether \p user fills \p c with zero before \p product, in its block:
/// +0 only with \p positiveOnly (what round(0 + x) equals round(x) for),
/// else either sign, float or integer.
static bool isZeroFillBefore(Operation *user, Value c, linalg::LinalgOp product,
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
static memref::AllocOp resultAllocInBlock(linalg::LinalgOp product) {
  auto alloc =
      product.getDpsInitOperand(0)->get().getDefiningOp<memref::AllocOp>();
  return alloc && alloc->getBlock() == product->getBlock() ? alloc : nullptr;
}

/// Whether \p product may write \p consumer's result %d (its init) in
/// its place: %d is a fresh buffer of the product's block that no op uses
/// before \p consumer (a view of it made earlier counts as a use). Adds
/// %d's allocation to \p moves (to go before the product) when it comes
/// after.
static bool
writableEarly(linalg::LinalgOp product, Operation *consumer, Value d,
              SmallVectorImpl<Operation *> &moves) {
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
    moves.push_back(dAlloc);
  return true;
}

/// The rounding copy of \p product's result (\p alloc) when its other
/// users are a +0 fill before the product and deallocations, the copy
/// after the product in its block; sets \p layout. Else null.
static Operation *soleRoundingAfterFill(linalg::LinalgOp product,
                                        memref::AllocOp alloc,
                                        RoundingLayout &layout) {
  Value c = product.getDpsInitOperand(0)->get();
  Operation *fill = nullptr, *rounding = nullptr;
  for (Operation *user : alloc->getUsers()) {
    if (user == product.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (!fill && isZeroFillBefore(user, c, product, /*positiveOnly=*/true)) {
      fill = user;
      continue;
    }
    std::optional<RoundingLayout> userLayout = roundingCopyLayout(user, c);
    if (rounding || !userLayout)
      return nullptr;
    rounding = user;
    layout = *userLayout;
  }
  if (!fill || !rounding || rounding->getBlock() != product->getBlock() ||
      !product->isBeforeInBlock(rounding))
    return nullptr;
  return rounding;
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
/// added to \p moves when it comes after the product, or null (leaving
/// \p layout as it was).
Operation *roundedResultOf(linalg::LinalgOp product, RoundingLayout &layout,
                           SmallVectorImpl<Operation *> &moves) {
  memref::AllocOp alloc = resultAllocInBlock(product);
  if (!alloc)
    return declined(product, "rounded result", "C is not made in its block");
  RoundingLayout copyLayout = RoundingLayout::Same;
  Operation *rounding = soleRoundingAfterFill(product, alloc, copyLayout);
  if (!rounding)
    return declined(product, "rounded result",
                    "C is not +0-filled and read by one rounding after it");
  // The result %d: of the operands' type.
  Value d = cast<linalg::GenericOp>(rounding).getDpsInitOperand(0)->get();
  if (elementTypeOf(d) != elementTypeOf(product.getDpsInputOperand(0)->get()))
    return declined(product, "rounded result",
                    "the rounding's type is not the operands'");
  if (!writableEarly(product, rounding, d, moves))
    return declined(product, "rounded result",
                    "the rounded buffer is not fresh at the product");
  layout = copyLayout;
  return rounding;
}

/// The one generic besides a zero fill before \p product and the
/// deallocation that uses \p product's fresh result (\p alloc): a generic
/// of the block after the product; null if there is none, or other users.
static linalg::GenericOp soleReaderAfterZeroFill(linalg::LinalgOp product,
                                                 memref::AllocOp alloc) {
  Value c = product.getDpsInitOperand(0)->get();
  Block *block = product->getBlock();
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
  return fill ? consumer : nullptr;
}

/// Whether \p operand of \p generic (2-D) is read as a row vector,
/// (d0, d1) -> (d1), of unit stride with elements of \p element.
static bool
isRowVector(linalg::GenericOp generic, OpOperand *operand, Type element) {
  AffineMap row =
      AffineMap::get(2, 0, getAffineDimExpr(1, generic.getContext()));
  auto type = dyn_cast<MemRefType>(operand->get().getType());
  return generic.getMatchingIndexingMap(operand) == row && type &&
         type.getElementType() == element && hasUnitInnerStride(type, 1);
}

static AffineMap identity2D(MLIRContext *context) {
  return AffineMap::getMultiDimIdentityMap(2, context);
}

/// The inputs of a bias generic: \p c read as it is and an f32 row vector
/// (the bias), with an identity init of f32 or \p aType. False if not.
static bool matchBiasOperands(linalg::GenericOp consumer, Value c, Type aType,
                              OpOperand *&cOperand, OpOperand *&biasOperand) {
  AffineMap identity = identity2D(consumer.getContext());
  AffineMap row =
      AffineMap::get(2, 0, getAffineDimExpr(1, consumer.getContext()));
  cOperand = biasOperand = nullptr;
  for (OpOperand *operand : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(operand);
    if (operand->get() == c && map == identity && !cOperand)
      cOperand = operand;
    else if (map == row)
      biasOperand = operand;
  }
  OpOperand *init = consumer.getDpsInitOperand(0);
  Type dType = elementTypeOf(init->get());
  return cOperand && biasOperand &&
         isRowVector(consumer, biasOperand,
                     Float32Type::get(consumer.getContext())) &&
         consumer.getMatchingIndexingMap(init) == identity &&
         (dType.isF32() || dType == aType);
}

/// The value a bias generic's body gives %d: c + bias, rounded to %d's
/// type when that is \p aType (only the rounding then reads the sum); null
/// unless c, the bias and %d's old value are read by the sum alone.
static Value biasedValueOf(linalg::GenericOp consumer, OpOperand *cOperand,
                           OpOperand *biasOperand, Type aType) {
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
    return {};
  Value stored = sumOp->getResult(0);
  Type dType = elementTypeOf(consumer.getDpsInitOperand(0)->get());
  if (dType == aType) {
    // Only its rounding reads the unrounded sum (%d holds the rounded).
    if (!stored.hasOneUse())
      return {};
    auto truncf = dyn_cast<arith::TruncFOp>(*stored.getUsers().begin());
    if (!truncf || truncf.getType() != dType)
      return {};
    stored = truncf.getResult();
  }
  for (BlockArgument arg : body.getArguments())
    if (!llvm::all_of(arg.getUsers(),
                      [&](Operation *user) { return user == &*sumOp; }))
      return {};
  return stored;
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
/// the same values. Returns the bias generic, with %d's alloc added to
/// \p moves when it comes after the product, or null.
linalg::GenericOp biasedResultOf(linalg::LinalgOp product,
                                 const Product &matched, Value &bias,
                                 Value &sum,
                                 SmallVectorImpl<Operation *> &moves) {
  memref::AllocOp alloc = resultAllocInBlock(product);
  Type aType = elementTypeOf(matched.a->get());
  if (matched.batched || !alloc || !isa<Float16Type, BFloat16Type>(aType))
    return declined(product, "bias",
                    "not a 2-D 16-bit product into a buffer of its block");
  linalg::GenericOp consumer = soleReaderAfterZeroFill(product, alloc);
  if (!consumer || consumer.getNumDpsInputs() != 2 ||
      consumer.getNumDpsInits() != 1 || consumer.getNumLoops() != 2 ||
      consumer.getNumParallelLoops() != 2)
    return declined(product, "bias",
                    "C is not zero-filled and read by one 2-D generic");
  OpOperand *cOperand, *biasOperand;
  Value c = product.getDpsInitOperand(0)->get();
  if (!matchBiasOperands(consumer, c, aType, cOperand, biasOperand))
    return declined(product, "bias",
                    "the reader does not take C and an f32 row vector");
  Value stored = biasedValueOf(consumer, cOperand, biasOperand, aType);
  if (!stored)
    return declined(product, "bias", "the reader's body is not C + bias");
  if (!writableEarly(product, consumer, consumer.getDpsInitOperand(0)->get(),
                     moves))
    return declined(product, "bias",
                    "the result buffer is not fresh at the product");
  // Null when nothing comes after the sum.
  Block &body = *consumer.getBlock();
  sum = body.getTerminator()->getOperand(0) == stored ? Value() : stored;
  bias = biasOperand->get();
  return consumer;
}

/// Whether every op strictly between \p from and \p to (one block), other
/// than \p except, is an allocation or has no effect on memory: then no
/// buffer read at \p to changes between the two.
static bool
onlyAllocationsBetween(Operation *from, Operation *to, Operation *except) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (op != except && !isa<memref::AllocOp>(op) && !isMemoryEffectFree(op))
      return false;
  return true;
}

/// Whether \p generic has two parallel loops and one init.
static bool isAllParallel2D(linalg::GenericOp generic) {
  return generic.getNumLoops() == 2 && generic.getNumParallelLoops() == 2 &&
         generic.getNumDpsInits() == 1;
}

/// Whether \p generic, before \p product, broadcasts a row vector into
/// \p c: %c[i, j] = %bq[j] (an int8 product's accumulator preset to its
/// quantized bias).
static bool isBiasBroadcast(linalg::GenericOp generic, linalg::LinalgOp product,
                            Value c) {
  if (!generic->isBeforeInBlock(product) || !isAllParallel2D(generic) ||
      generic.getNumDpsInputs() != 1)
    return false;
  OpOperand *init = generic.getDpsInitOperand(0),
            *input = generic.getDpsInputOperand(0);
  return init->get() == c &&
         generic.getMatchingIndexingMap(init) ==
             identity2D(generic.getContext()) &&
         isRowVector(generic, input, elementTypeOf(c)) &&
         generic.getBlock()->getTerminator()->getOperand(0) ==
             generic.getMatchingBlockArgument(input);
}

namespace {
/// The users of an int8 product's fresh result besides the product and
/// its deallocation: what sets it before the product (a zero fill, or a
/// bias broadcast from \c broadcastFrom), and the one generic after.
struct DequantizationUsers {
  Operation *init = nullptr;
  Value broadcastFrom;
  linalg::GenericOp consumer;
};
} // namespace

static std::optional<DequantizationUsers>
dequantizationUsersOf(linalg::LinalgOp product, memref::AllocOp alloc) {
  Value c = product.getDpsInitOperand(0)->get();
  DequantizationUsers users;
  for (Operation *user : alloc->getUsers()) {
    if (user == product.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (!users.init &&
        isZeroFillBefore(user, c, product, /*positiveOnly=*/false)) {
      users.init = user;
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || generic->getBlock() != product->getBlock())
      return std::nullopt;
    if (!users.init && isBiasBroadcast(generic, product, c)) {
      users.init = generic;
      users.broadcastFrom = generic.getDpsInputOperand(0)->get();
      continue;
    }
    if (users.consumer || !product->isBeforeInBlock(generic))
      return std::nullopt;
    users.consumer = generic;
  }
  if (!users.init || !users.consumer)
    return std::nullopt;
  return users;
}

/// Whether \p value is a constant +0.0.
static bool isPositiveZero(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  auto attr = constant ? dyn_cast<FloatAttr>(constant.getValue()) : FloatAttr();
  return attr && attr.getValue().isPosZero();
}

/// \p yielded without a max(., 0) around it (setting \p relu when there
/// is one); null for a max with neither side zero.
static Value throughRelu(Value yielded, bool &relu) {
  relu = false;
  auto max = yielded.getDefiningOp<arith::MaximumFOp>();
  if (!max)
    return yielded;
  relu = true;
  if (isPositiveZero(max.getRhs()))
    return max.getLhs();
  if (isPositiveZero(max.getLhs()))
    return max.getRhs();
  return {};
}

/// Whether a dequantization's body is sitofp(c) * scale[j], maybe
/// max(., 0) (\p relu), and nothing more (but the constant zero).
static bool isScalingBody(linalg::GenericOp consumer, OpOperand *cOperand,
                          OpOperand *scaleOperand, bool &relu) {
  Block &body = *consumer.getBlock();
  Value yielded = throughRelu(body.getTerminator()->getOperand(0), relu);
  auto mul =
      yielded ? yielded.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
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
  return sitofp &&
         sitofp.getIn() == consumer.getMatchingBlockArgument(cOperand) &&
         (size == expected ||
          (size == expected + 1 &&
           isa<arith::ConstantOp>(body.getOperations().front())));
}

/// The inputs of a dequantization: \p c read as it is and an f32 row
/// vector (the scale), into an identity f32 init. False if not.
static bool matchScalingOperands(linalg::GenericOp consumer, Value c,
                                 OpOperand *&cOperand,
                                 OpOperand *&scaleOperand) {
  AffineMap identity = identity2D(consumer.getContext());
  if (!isAllParallel2D(consumer) || consumer.getNumDpsInputs() != 2 ||
      !elementTypeOf(consumer.getDpsInitOperand(0)->get()).isF32() ||
      consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0)) !=
          identity)
    return false;
  cOperand = consumer.getDpsInputOperand(0);
  scaleOperand = consumer.getDpsInputOperand(1);
  if (cOperand->get() != c)
    std::swap(cOperand, scaleOperand);
  return cOperand->get() == c &&
         consumer.getMatchingIndexingMap(cOperand) == identity &&
         isRowVector(consumer, scaleOperand,
                     Float32Type::get(consumer.getContext()));
}

/// Whether \p value is defined before \p product where it is defined in
/// \p product's block (a value in scope at the product).
static bool inScopeAt(Value value, Operation *product) {
  Operation *def = value ? value.getDefiningOp() : nullptr;
  return !def || def->getBlock() != product->getBlock() ||
         def->isBeforeInBlock(product);
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
/// read). Returns the dequantization, with %d's alloc added to \p moves
/// when it comes after the product, and sets \p bias (null for a zero
/// fill), \p scale and \p relu; or null, setting nothing.
linalg::GenericOp dequantizedResultOf(linalg::LinalgOp product,
                                      const Product &matched, Value &bias,
                                      Value &scale, bool &relu,
                                      SmallVectorImpl<Operation *> &moves) {
  Value c = product.getDpsInitOperand(0)->get();
  memref::AllocOp alloc = resultAllocInBlock(product);
  if (matched.batched || !alloc ||
      !elementTypeOf(matched.a->get()).isInteger(8) ||
      !elementTypeOf(matched.b->get()).isInteger(8))
    return declined(product, "dequantization",
                    "not a 2-D int8 product into a buffer of its block");
  std::optional<DequantizationUsers> users =
      dequantizationUsersOf(product, alloc);
  if (!users)
    return declined(product, "dequantization",
                    "C is not preset (zero or bias) and read by one generic");
  linalg::GenericOp consumer = users->consumer;
  OpOperand *cOperand, *scaleOperand;
  bool withRelu;
  if (!matchScalingOperands(consumer, c, cOperand, scaleOperand) ||
      !isScalingBody(consumer, cOperand, scaleOperand, withRelu))
    return declined(product, "dequantization",
                    "the reader is not sitofp(C) * scale[j], maybe max 0");
  if (!onlyAllocationsBetween(users->init, consumer, product))
    return declined(product, "dequantization",
                    "memory changes between C's preset and its reader");
  if (!inScopeAt(users->broadcastFrom, product) ||
      !inScopeAt(scaleOperand->get(), product))
    return declined(product, "dequantization",
                    "the bias or the scale is made after the product");
  if (!writableEarly(product, consumer, consumer.getDpsInitOperand(0)->get(),
                     moves))
    return declined(product, "dequantization",
                    "the result buffer is not fresh at the product");
  bias = users->broadcastFrom;
  scale = scaleOperand->get();
  relu = withRelu;
  return consumer;
}

/// The generic that reads \p d through an expansion of its columns into
/// lanes, ([m, n / L, L]), the expansion's only user; else null.
static linalg::GenericOp laneReaderOf(Value d) {
  for (Operation *user : d.getUsers()) {
    auto expand = dyn_cast<memref::ExpandShapeOp>(user);
    if (!expand || !expand->hasOneUse() ||
        expand.getReassociationIndices().size() != 2 ||
        expand.getReassociationIndices()[1].size() != 2)
      continue;
    auto reader = dyn_cast<linalg::GenericOp>(*expand->getUsers().begin());
    if (reader && reader.getNumDpsInputs() == 1 &&
        reader.getDpsInputOperand(0)->get() == expand.getResult())
      return reader;
  }
  return {};
}

/// Whether \p d is only read between \p writer and \p reader (both in one
/// block); after \p reader anything goes.
static bool onlyReadBetween(Value d, Operation *writer, Operation *reader) {
  Block *block = reader->getBlock();
  SmallVector<std::pair<Operation *, Value>> uses;
  collectUses(d, uses);
  for (auto [user, value] : uses) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (user == writer || onlyReads(user, value) ||
        (inBlock && reader->isBeforeInBlock(inBlock)))
      continue;
    return false;
  }
  return true;
}

static bool isAbsMaxBody(Block &body);

/// Whether \p partials computes per-row, per-lane max |x|: maps
/// (i, r, p) -> (i, r, p) and (i, p), r the only reduction, body
/// maximumf(absf(x), acc) of either order.
static bool isLaneAbsMax(linalg::GenericOp partials) {
  if (partials.getNumDpsInits() != 1 || partials.getNumLoops() != 3)
    return false;
  MLIRContext *context = partials.getContext();
  AffineExpr i = getAffineDimExpr(0, context), p = getAffineDimExpr(2, context);
  SmallVector<AffineMap> maps = partials.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators =
      partials.getIteratorTypesArray();
  if (!maps[0].isIdentity() ||
      maps[1] != AffineMap::get(3, 0, {i, p}, context) ||
      iterators[0] != utils::IteratorType::parallel ||
      iterators[1] != utils::IteratorType::reduction ||
      iterators[2] != utils::IteratorType::parallel)
    return false;
  return isAbsMaxBody(*partials.getBlock());
}

/// Whether \p body is maximumf(absf(x), acc), of either order.
static bool isAbsMaxBody(Block &body) {
  if (body.getOperations().size() != 3)
    return false;
  auto abs = dyn_cast<math::AbsFOp>(&body.front());
  auto max = dyn_cast<arith::MaximumFOp>(abs ? abs->getNextNode() : nullptr);
  Value acc = body.getArgument(1);
  return abs && max && abs.getOperand() == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == max.getResult() &&
         ((max.getLhs() == abs.getResult() && max.getRhs() == acc) ||
          (max.getRhs() == abs.getResult() && max.getLhs() == acc));
}

/// Whether \p q is a static allocation of \p block with the identity
/// (row-major) layout.
static bool isStaticAllocationIn(Value q, Block *block) {
  auto qAlloc = q.getDefiningOp<memref::AllocOp>();
  MemRefType qType = memrefTypeOf(q);
  return qAlloc && qAlloc->getBlock() == block &&
         qAlloc->getNumOperands() == 0 && qType.hasStaticShape() &&
         hasUnitInnerStride(qType, 2) && qType.getLayout().isIdentity();
}

/// The fill of \p partials' init %q, a static allocation of the block
/// whose fill is its first use (its value in scope at \p product) and whose
/// other users come after \p partials; else null.
static linalg::FillOp partialsFillOf(linalg::GenericOp partials,
                                     linalg::LinalgOp product) {
  Block *block = product->getBlock();
  Value q = partials.getDpsInitOperand(0)->get();
  if (!isStaticAllocationIn(q, block))
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
  // The fill's value must exist at the product (a block argument does).
  if (!fill || !inScopeAt(fill.getInputs()[0], product))
    return {};
  return fill;
}

/// The per-row partials of max |D| that dynamic quantization reads the
/// result %d of \p dequantized for, split into lanes by
/// --mp-split-reductions{lanes}:
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
/// the generic. Adds %q's allocation and fill to \p moves where they come
/// after \p product and returns the generic, or null.
linalg::GenericOp absMaxPartialsOf(linalg::LinalgOp product,
                                   linalg::GenericOp dequantized,
                                   SmallVectorImpl<Operation *> &moves) {
  Value d = dequantized.getDpsInitOperand(0)->get();
  linalg::GenericOp partials = laneReaderOf(d);
  if (!partials || partials->getBlock() != product->getBlock() ||
      !dequantized->isBeforeInBlock(partials))
    return declined(product, "max |x| partials",
                    "no lane reader of the result after it in its block");
  // Between the dequantization and the partials' loop D is only read (they
  // must see what the call wrote).
  if (!onlyReadBetween(d, dequantized, partials) || !isLaneAbsMax(partials))
    return declined(product, "max |x| partials",
                    "the reader is not a lane max |x| right after");
  linalg::FillOp fill = partialsFillOf(partials, product);
  if (!fill)
    return declined(product, "max |x| partials",
                    "the partials are not a static buffer filled first");
  Operation *qAlloc = fill.getOutputs()[0].getDefiningOp();
  for (Operation *moved : {qAlloc, fill.getOperation()})
    if (product->isBeforeInBlock(moved))
      moves.push_back(moved);
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
    return declined(product, "overwrite", "C is not made in its block");
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
      return declined(product, "overwrite", "C is used before the product");
  }
  return fill;
}

/// The permutation of attention's head split and merge: the middle two of
/// four dimensions swapped ([S, T, H, F] <-> [S, H, T, F]); its own
/// inverse.
constexpr std::array<int64_t, 4> kMiddleSwapped = {0, 2, 1, 3};

/// Whether \p generic (one input, one init, four loops) yields its input
/// through maps that swap the middle two dimensions.
static bool isMiddleSwapCopy(linalg::GenericOp generic) {
  Block &body = *generic.getBlock();
  if (generic.getNumParallelLoops() != 4 || body.getOperations().size() != 1 ||
      body.getTerminator()->getOperand(0) != body.getArgument(0))
    return false;
  AffineMap in = generic.getIndexingMapsArray()[0],
            out = generic.getIndexingMapsArray()[1];
  AffineMap swapped = AffineMap::getPermutationMap(
      ArrayRef<unsigned>{0, 2, 1, 3}, generic.getContext());
  return (in.isIdentity() && out == swapped) ||
         (in == swapped && out.isIdentity());
}

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
  return generic && isMiddleSwapCopy(generic) ? input : Value();
}

/// Whether \p reassociation merges the first two of four dimensions:
/// [[0, 1], [2], [3]].
static bool mergesBatchDims(ArrayRef<ReassociationIndices> reassociation) {
  return reassociation.size() == 3 && reassociation[0].size() == 2 &&
         reassociation[1].size() == 1 && reassociation[2].size() == 1;
}

/// The swap that writes a head split's copy \p t, when \p t's other users
/// are its deallocation (\p tDealloc, after the swap) and views like the
/// split that only \p readInPlace ops use; else null.
static Operation *
headSplitSwapInto(Value t,
                  llvm::function_ref<bool(Operation *, Value)> readInPlace,
                  Operation *&tDealloc) {
  Block *block = t.getDefiningOp()->getBlock();
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
      if (!llvm::all_of(view->getUsers(), [&](Operation *reader) {
            return readInPlace(reader, view);
          }))
        return nullptr;
    } else {
      return nullptr;
    }
  }
  if (!swap || !tDealloc || !swap->isBeforeInBlock(tDealloc))
    return nullptr;
  return swap;
}

/// Whether nothing writes \p buffer (an allocation of \p swap's block that
/// \p swap reads) between \p swap and \p tDealloc; sets \p sourceDealloc to
/// its deallocation in the block (null if none).
static bool unwrittenUntil(Value buffer, Operation *swap, Operation *tDealloc,
                           Operation *&sourceDealloc) {
  Block *block = swap->getBlock();
  SmallVector<std::pair<Operation *, Value>> uses;
  collectUses(buffer, uses);
  sourceDealloc = nullptr;
  for (auto [user, value] : uses) {
    if (user == swap)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock)
      return false;
    if (isa<memref::DeallocOp>(user) && user->getBlock() == block &&
        !sourceDealloc) {
      sourceDealloc = user;
      continue;
    }
    if (!onlyReads(user, value) && !inBlock->isBeforeInBlock(swap) &&
        !tDealloc->isBeforeInBlock(inBlock))
      return false;
  }
  return true;
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
  Operation *swap = headSplitSwapInto(t, readInPlace, tDealloc);
  if (!swap)
    return nullptr;
  Value source = middleSwapInput(swap);
  if (!hasUnitInnerStride(memrefTypeOf(source), 4))
    return nullptr;
  Value buffer = mlir::mp::viewedBuffer(source);
  auto sourceAlloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!sourceAlloc || sourceAlloc->getBlock() != tAlloc->getBlock() ||
      !unwrittenUntil(buffer, swap, tDealloc, sourceDealloc))
    return nullptr;
  return swap;
}

/// The copy with its middle dimensions swapped of the one expansion of
/// \p d that merges its batch dimensions, when \p d's other users are
/// \p writer, \p zeroFill and deallocations; else null.
static Operation *soleSwapOfExpansion(Value d, Operation *writer,
                                      Operation *zeroFill) {
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
/// alloc added to \p moves when it comes after the product, or null.
Operation *headMergeOf(linalg::LinalgOp product, Operation *writer, Value d,
                       Operation *zeroFill,
                       SmallVectorImpl<Operation *> &moves) {
  auto dAlloc = d.getDefiningOp<memref::AllocOp>();
  if (!dAlloc || dAlloc->getBlock() != product->getBlock())
    return declined(product, "head merge", "D is not made in its block");
  Operation *swap = soleSwapOfExpansion(d, writer, zeroFill);
  if (!swap)
    return declined(product, "head merge",
                    "D is not read by one expansion copied with its middle "
                    "dimensions swapped");
  Value t = cast<linalg::LinalgOp>(swap).getDpsInitOperand(0)->get();
  if (!hasUnitInnerStride(memrefTypeOf(t), 4) ||
      !writableEarly(product, swap, t, moves))
    return declined(product, "head merge",
                    "the merged buffer is not fresh with contiguous rows");
  return swap;
}

} // namespace contractions
} // namespace mp
} // namespace mlir
