//===- onednn_matmul.cpp - cached oneDNN matmul primitives ----------------===//

#include "onednn_matmul.h"

#include "internal.h"

#include "mprt/mprt.h"

#include <array>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <tuple>

void mprt::capOneDnnIsa() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char *disabled = std::getenv("MPRT_CPU_DISABLE");
    if (!disabled || !*disabled || std::getenv("ONEDNN_MAX_CPU_ISA") ||
        std::getenv("DNNL_MAX_CPU_ISA"))
      return;
    // The highest oneDNN ISA whose instructions the remaining features
    // cover (oneDNN's ISAs nest: each includes the ones below it).
    uint32_t f = mprt_cpu_features();
    dnnl_cpu_isa_t isa = dnnl_cpu_isa_sse41;
    if ((f & MPRT_CPU_AMX_BF16) && (f & MPRT_CPU_AMX_INT8) &&
        (f & MPRT_CPU_AVX512_BF16))
      isa = dnnl_cpu_isa_all;
    else if (f & MPRT_CPU_AVX512_BF16)
      isa = dnnl_cpu_isa_avx512_core_bf16;
    else if (f & MPRT_CPU_AVX512_VNNI)
      isa = dnnl_cpu_isa_avx512_core_vnni;
    else if (f & MPRT_CPU_AVX512F)
      isa = dnnl_cpu_isa_avx512_core;
    else if (f & MPRT_CPU_AVX2)
      isa = dnnl_cpu_isa_avx2;
    dnnl_set_max_cpu_isa(isa);
  });
}

namespace {

struct CachedMatmul {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr, bias = nullptr;
  bool usable = false;
};

/// Shape, leading dimensions, transposition, accumulation and epilogue
/// bits, the data types (A and B, C, the bias), and the batch with its
/// strides.
using MatmulKey = std::array<int64_t, 18>;

/// A product whose B is read from declared-constant memory: its primitive
/// takes B in the layout oneDNN's kernel wants, and `b` holds that copy
/// (owned: reordered once from the caller's B).
using PackedKey = std::pair<MatmulKey, const void *>;

struct MatmulCache {
  std::mutex mutex;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  std::map<MatmulKey, CachedMatmul> entries;
  /// mprt_gemm_declare_constant's ranges (first byte -> one past the last)
  /// and the packed products made from them.
  std::map<const char *, const char *> constants;
  std::map<PackedKey, CachedMatmul> packed;
};

void destroyMatmul(CachedMatmul &entry) {
  for (dnnl_memory_t memory : {entry.a, entry.b, entry.c, entry.bias})
    if (memory)
      dnnl_memory_destroy(memory);
  if (entry.primitive)
    dnnl_primitive_destroy(entry.primitive);
  entry = CachedMatmul();
}

MatmulCache &cache() {
  static MatmulCache *instance = [] {
    mprt::capOneDnnIsa();
    auto *c = new MatmulCache(); // lives for the process: kernels are reused
    if (dnnl_engine_create(&c->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags) !=
            dnnl_success)
      c->engine = nullptr;
    return c;
  }();
  return *instance;
}

/// The memory and primitive descriptors of C += op(A) op(B) (C = op(A)
/// op(B) without `accumulate`; then the `epilogue`, whose pointers only
/// say what it does); false (and no `pd`) when oneDNN has no
/// implementation. With
/// `packedB`, B's layout is oneDNN's choice (query it from `pd`); `bDesc`
/// is still the caller's strided B.
bool describeMatmul(dnnl_engine_t engine, int64_t m, int64_t n, int64_t k,
                    int64_t lda, int64_t ldb, int64_t ldc, bool transA,
                    bool transB, dnnl_data_type_t abType,
                    dnnl_data_type_t cType, bool accumulate,
                    const mprt::MatmulEpilogue &epilogue,
                    const mprt::MatmulBatch &batch, bool packedB,
                    dnnl_memory_desc_t &aDesc, dnnl_memory_desc_t &bDesc,
                    dnnl_memory_desc_t &cDesc, dnnl_memory_desc_t &biasDesc,
                    dnnl_primitive_desc_t &pd) {
  pd = nullptr;
  // A batch is a leading dimension (two with an outer batch); an operand
  // whose batch stride is 0 is shared, a batch dimension of 1 that oneDNN
  // broadcasts.
  bool outer = batch.outer > 1, batched = outer || batch.count > 1;
  int rank = outer ? 4 : batched ? 3 : 2, o = rank - 2;
  dnnl_dims_t aDims, bDims, cDims, aStrides, bStrides, cStrides;
  auto fill = [&](dnnl_dims_t dims, dnnl_dims_t strides, int64_t rows,
                  int64_t cols, int64_t rowStride, int64_t colStride,
                  int64_t batchStride, int64_t outerStride) {
    if (batched) {
      dims[o - 1] = batchStride ? batch.count : 1;
      strides[o - 1] = batchStride ? batchStride : rows * cols;
    }
    if (outer) {
      dims[0] = outerStride ? batch.outer : 1;
      strides[0] = outerStride ? outerStride : dims[1] * strides[1];
    }
    dims[o] = rows;
    dims[o + 1] = cols;
    strides[o] = rowStride;
    strides[o + 1] = colStride;
  };
  fill(aDims, aStrides, m, k, transA ? 1 : lda, transA ? lda : 1, batch.strideA,
       batch.outerStrideA);
  fill(bDims, bStrides, k, n, transB ? 1 : ldb, transB ? ldb : 1, batch.strideB,
       batch.outerStrideB);
  fill(cDims, cStrides, m, n, ldc, 1, batch.strideC, batch.outerStrideC);
  // The bias: one row, broadcast over the rows (and the batch).
  dnnl_dims_t biasDims, biasStrides;
  fill(biasDims, biasStrides, 1, n, n, 1, 0, 0);
  dnnl_matmul_desc_t matmul;
  dnnl_memory_desc_t anyB;
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t postOps = nullptr;
  bool ok =
      (batch.count <= 1 || batch.strideC > 0) &&
      (!outer || batch.outerStrideC > 0) &&
      dnnl_memory_desc_init_by_strides(&aDesc, rank, aDims, abType, aStrides) ==
          dnnl_success &&
      dnnl_memory_desc_init_by_strides(&bDesc, rank, bDims, abType, bStrides) ==
          dnnl_success &&
      dnnl_memory_desc_init_by_strides(&cDesc, rank, cDims, cType, cStrides) ==
          dnnl_success &&
      dnnl_memory_desc_init_by_strides(&biasDesc, rank, biasDims,
                                       epilogue.biasType,
                                       biasStrides) == dnnl_success &&
      (!packedB ||
       dnnl_memory_desc_init_by_tag(&anyB, rank, bDims, abType,
                                    dnnl_format_tag_any) == dnnl_success) &&
      dnnl_matmul_desc_init(&matmul, &aDesc, packedB ? &anyB : &bDesc,
                            epilogue.bias ? &biasDesc : nullptr,
                            &cDesc) == dnnl_success &&
      dnnl_primitive_attr_create(&attr) == dnnl_success &&
      dnnl_post_ops_create(&postOps) == dnnl_success &&
      // C += ...: linalg.matmul accumulates into its output.
      (!accumulate ||
       dnnl_post_ops_append_sum(postOps, 1.0f) == dnnl_success) &&
      dnnl_primitive_attr_set_post_ops(attr, postOps) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &matmul, attr, engine, nullptr) ==
          dnnl_success;
  if (!ok && pd) {
    dnnl_primitive_desc_destroy(pd);
    pd = nullptr;
  }
  if (postOps)
    dnnl_post_ops_destroy(postOps);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return ok;
}

/// Reorders B (`from`, described by `plain`) into `packed`, once.
bool reorderOnce(MatmulCache &c, const dnnl_memory_desc_t &plain,
                 const void *from, dnnl_memory_t packed) {
  const dnnl_memory_desc_t *packedDesc = nullptr;
  dnnl_memory_t source = nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t reorder = nullptr;
  bool ok =
      dnnl_memory_get_memory_desc(packed, &packedDesc) == dnnl_success &&
      dnnl_memory_create(&source, &plain, c.engine, const_cast<void *>(from)) ==
          dnnl_success &&
      dnnl_reorder_primitive_desc_create(&pd, &plain, c.engine, packedDesc,
                                         c.engine, nullptr) == dnnl_success &&
      dnnl_primitive_create(&reorder, pd) == dnnl_success;
  if (ok) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, source}, {DNNL_ARG_TO, packed}};
    ok = dnnl_primitive_execute(reorder, c.stream, 2, args) == dnnl_success &&
         dnnl_stream_wait(c.stream) == dnnl_success;
  }
  if (reorder)
    dnnl_primitive_destroy(reorder);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (source)
    dnnl_memory_destroy(source);
  return ok;
}

/// Builds the primitive; leaves `usable` false when oneDNN has no
/// implementation. With `packFrom` (B's data), B takes the layout the
/// kernel wants, and the entry owns B copied into it: it reads that copy
/// whatever B address a call passes.
CachedMatmul buildMatmul(MatmulCache &c, int64_t m, int64_t n, int64_t k,
                         int64_t lda, int64_t ldb, int64_t ldc, bool transA,
                         bool transB, dnnl_data_type_t abType,
                         dnnl_data_type_t cType, bool accumulate,
                         const mprt::MatmulEpilogue &epilogue,
                         const mprt::MatmulBatch &batch,
                         const void *packFrom = nullptr) {
  CachedMatmul entry;
  if (!c.engine)
    return entry;
  dnnl_memory_desc_t aDesc, bDesc, cDesc, biasDesc;
  dnnl_primitive_desc_t pd = nullptr;
  bool ok =
      describeMatmul(c.engine, m, n, k, lda, ldb, ldc, transA, transB, abType,
                     cType, accumulate, epilogue, batch, packFrom != nullptr,
                     aDesc, bDesc, cDesc, biasDesc, pd) &&
      dnnl_primitive_create(&entry.primitive, pd) == dnnl_success &&
      dnnl_memory_create(&entry.a, &aDesc, c.engine, DNNL_MEMORY_NONE) ==
          dnnl_success &&
      dnnl_memory_create(&entry.c, &cDesc, c.engine, DNNL_MEMORY_NONE) ==
          dnnl_success &&
      (!epilogue.bias || dnnl_memory_create(&entry.bias, &biasDesc, c.engine,
                                            DNNL_MEMORY_NONE) == dnnl_success);
  if (ok && packFrom) {
    const dnnl_memory_desc_t *packedDesc =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    ok = packedDesc &&
         dnnl_memory_create(&entry.b, packedDesc, c.engine,
                            DNNL_MEMORY_ALLOCATE) == dnnl_success &&
         reorderOnce(c, bDesc, packFrom, entry.b);
  } else if (ok) {
    ok = dnnl_memory_create(&entry.b, &bDesc, c.engine, DNNL_MEMORY_NONE) ==
         dnnl_success;
  }
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (!ok)
    destroyMatmul(entry);
  entry.usable = ok;
  return entry;
}

/// Whether B (`bytes` from `b`) lies in a declared-constant range.
bool inConstantRange(const MatmulCache &c, const void *b, int64_t bytes) {
  const char *first = static_cast<const char *>(b);
  auto it = c.constants.upper_bound(first);
  if (it == c.constants.begin())
    return false;
  --it;
  return first >= it->first && first + bytes <= it->second;
}

} // namespace

bool mprt::runCachedMatmul(const void *a, int64_t lda, const void *b,
                           int64_t ldb, void *c, int64_t ldc, int64_t m,
                           int64_t n, int64_t k, bool transA, bool transB,
                           dnnl_data_type_t abType, dnnl_data_type_t cType,
                           bool accumulate, const MatmulBatch &batch,
                           const MatmulEpilogue &epilogue) {
  MatmulCache &matmuls = cache();
  std::lock_guard<std::mutex> lock(matmuls.mutex);
  MatmulKey key{m,
                n,
                k,
                lda,
                ldb,
                ldc,
                (transA ? 1 : 0) | (transB ? 2 : 0) | (accumulate ? 4 : 0) |
                    (epilogue.bias ? 8 : 0),
                static_cast<int64_t>(abType),
                static_cast<int64_t>(cType),
                static_cast<int64_t>(epilogue.biasType),
                batch.count,
                batch.strideA,
                batch.strideB,
                batch.strideC,
                batch.outer,
                batch.outerStrideA,
                batch.outerStrideB,
                batch.outerStrideC};
  CachedMatmul *packed = nullptr;
  if (batch.count <= 1 && batch.outer <= 1 && !matmuls.constants.empty()) {
    // B's last element is at (rows - 1) * ldb + cols - 1.
    int64_t rows = transB ? n : k, cols = transB ? k : n;
    int64_t elementBytes = static_cast<int64_t>(dnnl_data_type_size(abType));
    if (inConstantRange(matmuls, b, ((rows - 1) * ldb + cols) * elementBytes)) {
      PackedKey packedKey{key, b};
      auto found = matmuls.packed.find(packedKey);
      if (found == matmuls.packed.end())
        found =
            matmuls.packed
                .emplace(packedKey, buildMatmul(matmuls, m, n, k, lda, ldb, ldc,
                                                transA, transB, abType, cType,
                                                accumulate, epilogue, batch,
                                                /*packFrom=*/b))
                .first;
      // Unusable (no packed layout here): the plain primitive instead.
      if (found->second.usable)
        packed = &found->second;
    }
  }
  CachedMatmul *selected = packed;
  if (!selected) {
    auto it = matmuls.entries.find(key);
    if (it == matmuls.entries.end())
      it = matmuls.entries
               .emplace(key, buildMatmul(matmuls, m, n, k, lda, ldb, ldc,
                                         transA, transB, abType, cType,
                                         accumulate, epilogue, batch))
               .first;
    selected = &it->second;
  }
  CachedMatmul &entry = *selected;
  if (!entry.usable)
    return false;
  dnnl_memory_set_data_handle(entry.a, const_cast<void *>(a));
  if (!packed)
    dnnl_memory_set_data_handle(entry.b, const_cast<void *>(b));
  dnnl_memory_set_data_handle(entry.c, c);
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, entry.a},
                             {DNNL_ARG_WEIGHTS, entry.b},
                             {DNNL_ARG_DST, entry.c}};
  int count = 3;
  if (epilogue.bias) {
    dnnl_memory_set_data_handle(entry.bias, const_cast<void *>(epilogue.bias));
    args[count++] = {DNNL_ARG_BIAS, entry.bias};
  }
  return dnnl_primitive_execute(entry.primitive, matmuls.stream, count, args) ==
             dnnl_success &&
         dnnl_stream_wait(matmuls.stream) == dnnl_success;
}

std::string mprt::matmulImplementation(dnnl_data_type_t abType,
                                       dnnl_data_type_t cType) {
  MatmulCache &matmuls = cache();
  if (!matmuls.engine)
    return "";
  // A product the size of a layer's: oneDNN picks kernels by ISA and type,
  // not by this shape.
  constexpr int64_t kSize = 256;
  dnnl_memory_desc_t aDesc, bDesc, cDesc, biasDesc;
  dnnl_primitive_desc_t pd = nullptr;
  std::lock_guard<std::mutex> lock(matmuls.mutex);
  if (!describeMatmul(matmuls.engine, kSize, kSize, kSize, kSize, kSize, kSize,
                      false, false, abType, cType, /*accumulate=*/true,
                      MatmulEpilogue(), MatmulBatch(), /*packedB=*/false, aDesc,
                      bDesc, cDesc, biasDesc, pd))
    return "";
  const char *name = nullptr;
  std::string text;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) ==
          dnnl_success &&
      name)
    text = name;
  dnnl_primitive_desc_destroy(pd);
  return text;
}

extern "C" mprt_status mprt_gemm_declare_constant(const void *data,
                                                  int64_t bytes) {
  mprt::clearError();
  if (!data || bytes <= 0)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_declare_constant: bad range (%p, %lld bytes)",
                      data, static_cast<long long>(bytes));
  MatmulCache &matmuls = cache();
  std::lock_guard<std::mutex> lock(matmuls.mutex);
  const char *first = static_cast<const char *>(data);
  const char *end = first + bytes;
  // Ranges do not overlap: a declared range is released by its start.
  auto next = matmuls.constants.lower_bound(first);
  bool overlaps =
      (next != matmuls.constants.end() && next->first < end) ||
      (next != matmuls.constants.begin() && std::prev(next)->second > first);
  if (overlaps)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_gemm_declare_constant: %p (%lld bytes) overlaps a "
                      "range already declared",
                      data, static_cast<long long>(bytes));
  matmuls.constants.emplace(first, end);
  return MPRT_OK;
}

extern "C" void mprt_gemm_release_constant(const void *data) {
  MatmulCache &matmuls = cache();
  std::lock_guard<std::mutex> lock(matmuls.mutex);
  auto range = matmuls.constants.find(static_cast<const char *>(data));
  if (range == matmuls.constants.end())
    return;
  for (auto it = matmuls.packed.begin(); it != matmuls.packed.end();) {
    const char *b = static_cast<const char *>(it->first.second);
    if (b < range->first || b >= range->second) {
      ++it;
      continue;
    }
    destroyMatmul(it->second);
    it = matmuls.packed.erase(it);
  }
  matmuls.constants.erase(range);
}
