//===- ProductMatchers.h - what a runtime GEMM call can take ----*- C++ -*-===//
//
// The recognisers of --mp-contractions-to-runtime (ProductMatchers.cpp):
// matrix products on buffers, the operands a GEMM may read around
// (transposed copies, attention's head splits) and the results it may
// compute itself instead of loops (its epilogue). They only read IR: what
// must move before the product for a fusion is returned in `moves`, in
// order, never moved. Private to lib/Conversion/ContractionsToRuntime.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_CONVERSION_CONTRACTIONSTORUNTIME_PRODUCTMATCHERS_H
#define MP_LIB_CONVERSION_CONTRACTIONSTORUNTIME_PRODUCTMATCHERS_H

#include "mprt/mprt.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace mlir {
namespace mp {
namespace contractions {

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

  /// Whether both inputs are matched, one each, not both shared.
  bool isComplete() const {
    return a && b && a != b && !(sharedA && sharedB);
  }

  /// What the call reads as A and B: the source of a transposed copy, or
  /// the operand.
  Value readA() const { return sourceA ? sourceA : a->get(); }
  Value readB() const { return sourceB ? sourceB : b->get(); }
};

/// How a rounding copy lays out its result.
enum class RoundingLayout { Same, Transposed };

/// Whether \p op is a linalg.generic that only rounds \p from into its
/// init, all loops parallel, body `yield(truncf(in))`: with identity maps
/// (Same), or with the last two dimensions of one of the two swapped
/// (Transposed: each matrix of the init is the transpose of one of
/// \p from's).

/// A product the runtime computes: a matrix product (or a batch) whose
/// element types have a GEMM type code and whose rows are contiguous.
std::optional<Product> matchSupportedProduct(linalg::LinalgOp op);

/// The runtime's GEMM type code (mprt_gemm_type) of A, B and C's types.
std::optional<mprt_gemm_type> gemmType(Type a, Type b, Type c);

MemRefType memrefTypeOf(Value value);
Type elementTypeOf(Value value);

/// The input of \p op when it copies a 4-D buffer into its init with the
/// middle two dimensions swapped; else null.
Value middleSwapInput(Operation *op);

/// The transpose whose copy \p x of a matrix \p product may read around
/// (the original, its transpose flag flipped); \p products are the ops
/// that may read \p x besides. Null if none.
linalg::TransposeOp
transposedCopyOf(Value x, linalg::LinalgOp product,
                 const llvm::DenseSet<Operation *> &products);

/// The swap of attention's head split that the batched operand \p v
/// collapses, when its products can read the source in place (every
/// reader of the copy passes \p readInPlace); sets the deallocations of
/// the source's buffer and of the copy. Null if none.
Operation *
headSplitOf(Value v, llvm::function_ref<bool(Operation *, Value)> readInPlace,
            Operation *&sourceDealloc, Operation *&tDealloc);

/// The generic that only rounds \p product's f32 result (into \p layout),
/// which the call can write rounded; else null.
Operation *roundedResultOf(linalg::LinalgOp product, RoundingLayout &layout,
                           SmallVectorImpl<Operation *> &moves);

/// The generic that adds a bias to a 16-bit \p product's f32 result
/// (mprt_gemm_bias); sets \p bias and, when more follows the sum in the
/// generic, \p sum. Else null.
linalg::GenericOp biasedResultOf(linalg::LinalgOp product,
                                 const Product &matched, Value &bias,
                                 Value &sum,
                                 SmallVectorImpl<Operation *> &moves);

/// The generic that dequantizes an int8 \p product's int32 result
/// (mprt_gemm_s8_dequantize); sets \p bias (null for none), \p scale and
/// \p relu. Else null.
linalg::GenericOp dequantizedResultOf(linalg::LinalgOp product,
                                      const Product &matched, Value &bias,
                                      Value &scale, bool &relu,
                                      SmallVectorImpl<Operation *> &moves);

/// Dynamic quantization's max |x| partials of \p dequantized's result,
/// which mprt_gemm_s8_dequantize_absmax computes too; else null.
linalg::GenericOp absMaxPartialsOf(linalg::LinalgOp product,
                                   linalg::GenericOp dequantized,
                                   SmallVectorImpl<Operation *> &moves);

/// The zero fill of \p product's C made for it alone
/// (MPRT_GEMM_OVERWRITE_C); else null.
linalg::FillOp zeroFillOf(linalg::LinalgOp product);

/// Attention's head merge of the result \p d that \p writer writes (the
/// product into \p zeroFill, or its rounding), which the call can write
/// in place; else null.
Operation *headMergeOf(linalg::LinalgOp product, Operation *writer, Value d,
                       Operation *zeroFill,
                       SmallVectorImpl<Operation *> &moves);

} // namespace contractions
} // namespace mp
} // namespace mlir

#endif // MP_LIB_CONVERSION_CONTRACTIONSTORUNTIME_PRODUCTMATCHERS_H
