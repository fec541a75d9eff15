//===- onednn_matmul.h - cached oneDNN matmul primitives --------*- C++ -*-===//
//
// The 16-bit (gemm.cpp) and int8 (gemm_s8.cpp) products share one way of
// running oneDNN's matmul primitive: C += op(A) op(B) with strided 2-D
// operands, built once per shape, layout and data types and cached for the
// process (a sum post-op makes it accumulate, as linalg.matmul does).
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_SRC_ONEDNN_MATMUL_H
#define MPRT_SRC_ONEDNN_MATMUL_H

#include <oneapi/dnnl/dnnl.h>

#include <cstdint>
#include <string>

namespace mprt {

/// With MPRT_CPU_DISABLE set (and oneDNN's own ONEDNN_MAX_CPU_ISA not),
/// caps oneDNN's ISA at what the remaining features allow, so its kernels
/// follow the features mprt reports as mp's own do. Once per process,
/// before oneDNN's first call; every caller of oneDNN calls it first.
void capOneDnnIsa();

/// `count` products whose operands and results lie `stride*` elements
/// apart (a stride of 0: one operand shared by every product), `outer`
/// times over, each time `outerStride*` elements further (a batch in two
/// dimensions: attention's [sequences, heads] read in the projections'
/// [tokens, heads x features] layout).
struct MatmulBatch {
  int64_t count = 1, strideA = 0, strideB = 0, strideC = 0;
  int64_t outer = 1, outerStrideA = 0, outerStrideB = 0, outerStrideC = 0;
};

/// What the primitive adds to op(A) op(B) before storing it: `bias` (n
/// values of `biasType`, converted to f32) to every row; none when null.
struct MatmulEpilogue {
  const void *bias = nullptr;
  dnnl_data_type_t biasType = dnnl_f32;
};

/// C(`cType`) += op(A) op(B) with A and B of `abType`, row-major with
/// leading dimensions lda, ldb, ldc (op: transposed when transA/transB);
/// without `accumulate`, C = op(A) op(B), converted to `cType` once, after
/// the `epilogue` (in f32). False when oneDNN has no primitive for it (an
/// old CPU or oneDNN): the caller then takes another path. With `batch`,
/// all its products in one call. A B inside a range declared with
/// mprt_gemm_declare_constant (not a batch) is read from a copy in the
/// kernel's layout. Thread-safe.
bool runCachedMatmul(const void *a, int64_t lda, const void *b, int64_t ldb,
                     void *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                     bool transA, bool transB, dnnl_data_type_t abType,
                     dnnl_data_type_t cType, bool accumulate = true,
                     const MatmulBatch &batch = MatmulBatch(),
                     const MatmulEpilogue &epilogue = MatmulEpilogue());

/// The name of the kernel oneDNN picks for A(`abType`) B -> C(`cType`) on
/// this CPU ("brg:avx512_core_bf16", "gemm:jit", ...), or "" when it has
/// none.
std::string matmulImplementation(dnnl_data_type_t abType,
                                 dnnl_data_type_t cType);

} // namespace mprt

#endif // MPRT_SRC_ONEDNN_MATMUL_H
