//===- gemm_s8.cpp - int8 matrix products for quantized code --------------===//
//
// --mp-quantize turns matmuls into i8 x i8 -> i32 contractions. They run on
// oneDNN's matmul primitive (s8 source and weights, s32 destination,
// accumulating through a sum post-op), which picks AMX-INT8, AVX512-VNNI or
// AVX-VNNI kernels by what the CPU has at run time; primitives are cached
// per shape and layout. Where no primitive can be built, oneDNN's
// gemm_s8s8s32 runs instead. Accumulation is exact int32 in both.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <oneapi/dnnl/dnnl.h>

#include <map>
#include <mutex>
#include <tuple>

namespace {

struct Primitive {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
  bool usable = false;
};

using Key =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t>;

struct Cache {
  std::mutex mutex;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  std::map<Key, Primitive> entries;
};

Cache &cache() {
  static Cache *instance = [] {
    auto *c = new Cache(); // lives for the process: kernels are reused
    if (dnnl_engine_create(&c->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags) !=
            dnnl_success)
      c->engine = nullptr;
    return c;
  }();
  return *instance;
}

/// C(s32) += op(A)(s8) op(B)(s8); `usable` stays false when oneDNN has no
/// implementation for it.
Primitive build(Cache &c, int64_t m, int64_t n, int64_t k, int64_t lda,
                int64_t ldb, int64_t ldc, bool transA, bool transB) {
  Primitive entry;
  if (!c.engine)
    return entry;
  dnnl_memory_desc_t aDesc, bDesc, cDesc;
  dnnl_dims_t aDims = {m, k}, bDims = {k, n}, cDims = {m, n};
  dnnl_dims_t aStrides = {transA ? 1 : lda, transA ? lda : 1};
  dnnl_dims_t bStrides = {transB ? 1 : ldb, transB ? ldb : 1};
  dnnl_dims_t cStrides = {ldc, 1};
  dnnl_matmul_desc_t matmul;
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t postOps = nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  bool ok = dnnl_memory_desc_init_by_strides(&aDesc, 2, aDims, dnnl_s8,
                                             aStrides) == dnnl_success &&
            dnnl_memory_desc_init_by_strides(&bDesc, 2, bDims, dnnl_s8,
                                             bStrides) == dnnl_success &&
            dnnl_memory_desc_init_by_strides(&cDesc, 2, cDims, dnnl_s32,
                                             cStrides) == dnnl_success &&
            dnnl_matmul_desc_init(&matmul, &aDesc, &bDesc, nullptr, &cDesc) ==
                dnnl_success &&
            dnnl_primitive_attr_create(&attr) == dnnl_success &&
            dnnl_post_ops_create(&postOps) == dnnl_success &&
            // C += ...: linalg.matmul accumulates into its output.
            dnnl_post_ops_append_sum(postOps, 1.0f) == dnnl_success &&
            dnnl_primitive_attr_set_post_ops(attr, postOps) == dnnl_success &&
            dnnl_primitive_desc_create(&pd, &matmul, attr, c.engine, nullptr) ==
                dnnl_success &&
            dnnl_primitive_create(&entry.primitive, pd) == dnnl_success &&
            dnnl_memory_create(&entry.a, &aDesc, c.engine, DNNL_MEMORY_NONE) ==
                dnnl_success &&
            dnnl_memory_create(&entry.b, &bDesc, c.engine, DNNL_MEMORY_NONE) ==
                dnnl_success &&
            dnnl_memory_create(&entry.c, &cDesc, c.engine, DNNL_MEMORY_NONE) ==
                dnnl_success;
  entry.usable = ok;
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (postOps)
    dnnl_post_ops_destroy(postOps);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return entry;
}

/// Runs the cached primitive; false when there is none (then gemm).
bool runPrimitive(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,
                  int64_t ldc, int64_t m, int64_t n, int64_t k, bool transA,
                  bool transB) {
  Cache &primitives = cache();
  std::lock_guard<std::mutex> lock(primitives.mutex);
  Key key{m, n, k, lda, ldb, ldc, (transA ? 1 : 0) | (transB ? 2 : 0)};
  auto it = primitives.entries.find(key);
  if (it == primitives.entries.end())
    it = primitives.entries
             .emplace(key,
                      build(primitives, m, n, k, lda, ldb, ldc, transA, transB))
             .first;
  Primitive &entry = it->second;
  if (!entry.usable)
    return false;
  dnnl_memory_set_data_handle(entry.a, reinterpret_cast<void *>(a));
  dnnl_memory_set_data_handle(entry.b, reinterpret_cast<void *>(b));
  dnnl_memory_set_data_handle(entry.c, reinterpret_cast<void *>(c));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, entry.a},
                            {DNNL_ARG_WEIGHTS, entry.b},
                            {DNNL_ARG_DST, entry.c}};
  return dnnl_primitive_execute(entry.primitive, primitives.stream, 3, args) ==
             dnnl_success &&
         dnnl_stream_wait(primitives.stream) == dnnl_success;
}

} // namespace

mprt_status mprt::gemmS8(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                         int64_t c, int64_t ldc, int64_t m, int64_t n,
                         int64_t k, int32_t flags) {
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  if (m < 0 || n < 0 || k < 0 || !a || !b || !c || ldc < n ||
      lda < (transA ? m : k) || ldb < (transB ? k : n))
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_gemm (s8): bad arguments (m=%lld n=%lld k=%lld "
                "lda=%lld ldb=%lld ldc=%lld)",
                (long long)m, (long long)n, (long long)k, (long long)lda,
                (long long)ldb, (long long)ldc);
  if (m == 0 || n == 0)
    return MPRT_OK;
  if (k > 0 && runPrimitive(a, lda, b, ldb, c, ldc, m, n, k, transA, transB))
    return MPRT_OK;
  const int32_t zero = 0;
  // Row-major C += A B (beta 1), no zero points: symmetric quantization.
  dnnl_status_t status =
      dnnl_gemm_s8s8s32(transA ? 'T' : 'N', transB ? 'T' : 'N', 'F', m, n, k,
                        1.0f, reinterpret_cast<const int8_t *>(a), lda, 0,
                        reinterpret_cast<const int8_t *>(b), ldb, 0, 1.0f,
                        reinterpret_cast<int32_t *>(c), ldc, &zero);
  if (status != dnnl_success)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_gemm (s8): oneDNN gemm_s8s8s32 failed with status %d",
                static_cast<int>(status));
  return MPRT_OK;
}
