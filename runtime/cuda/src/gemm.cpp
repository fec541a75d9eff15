//===- gemm.cpp - Contractions on the device with cuBLASLt ----------------===//
//
// mprt_cuda_gemm has mprt_gemm's row-major convention. cuBLASLt is
// column-major: a row-major X is the column-major X^T, so C = op(A) op(B)
// runs as C^T = op(B)^T op(A)^T with the operands swapped and no copy.
// Batches are strided: the layouts carry CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
// and STRIDED_BATCH_OFFSET, so a batch is one cublasLtMatmul.
// libcublasLt is loaded with dlopen like the driver. The handle, a workspace
// per stream and, per shape, the descriptors and the heuristic's algorithm are
// cached. mprt_cuda_gemm_sync, what --mp-lower-gpu calls, runs on a stream
// of its own and waits for it, and reports failures like the mgpu functions.
//
//===----------------------------------------------------------------------===//

#include "../../src/internal.h"
#include "driver.h"
#include "pool.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <tuple>

using namespace mprt::cuda;

namespace {

#define MPRT_LT_FUNCTIONS(X)                                                   \
  X(cublasLtCreate)                                                            \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatrixTransformDescCreate)                                         \
  X(cublasLtMatrixTransformDescSetAttribute)                                   \
  X(cublasLtMatrixTransform)

struct Lt {
#define MPRT_LT_DECLARE(name) decltype(&::name) name = nullptr;
  MPRT_LT_FUNCTIONS(MPRT_LT_DECLARE)
#undef MPRT_LT_DECLARE
};

constexpr uint64_t kWorkspaceBytes = 32ull << 20;

// One plan per shape, layout, type and batch: m, n, k, lda, ldb, ldc, flags,
// type, batch, strideA, strideB, strideC (strides 0 when batch is 1).
using PlanKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t,
               int32_t, int64_t, int64_t, int64_t, int64_t>;
// A transposed copy of an s8 operand (see makePlan): cuBLASLt's int8
// kernels may support only the "TN" form of operands.
struct Transpose {
  cublasLtMatrixTransformDesc_t desc = nullptr;
  cublasLtMatrixLayout_t from = nullptr, to = nullptr;
  uint64_t bytes = 0;
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  // s8 operands multiplied from transposed copies (see makePlan).
  bool transposeA = false, transposeB = false;
  Transpose copyA, copyB;
};

struct State {
  std::mutex mutex;
  bool tried = false;
  std::string why; // why cuBLASLt cannot be used
  Lt lt;
  cublasLtHandle_t handle = nullptr;
  // One workspace per stream: gemms queued on different streams may run at
  // once and must not share scratch memory.
  std::map<void *, CUdeviceptr> workspaces;
  std::map<PlanKey, Plan> plans;
  // The non-blocking stream mprt_cuda_gemm_sync runs on (created on first
  // use; kept to exit).
  CUstream syncStream = nullptr;
};

State &state() {
  static State *s = new State; // kept to exit: plans are never destroyed
  return *s;
}

#define MPRT_LT_STRINGIZE2(x) #x
#define MPRT_LT_STRINGIZE(x) MPRT_LT_STRINGIZE2(x)

std::string statusText(const Lt &lt, cublasStatus_t status) {
  const char *text =
      lt.cublasLtGetStatusString ? lt.cublasLtGetStatusString(status) : nullptr;
  return text ? text : "cuBLAS status " + std::to_string(status);
}

// Loads cuBLASLt and creates the handle and workspace; called with the
// mutex held and the context current.
bool initialize(State &s) {
  if (s.tried)
    return s.why.empty();
  s.tried = true;
  void *handle = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    handle = dlopen("/usr/local/cuda/lib64/libcublasLt.so.13",
                    RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *err = dlerror();
    s.why = std::string("cannot load cuBLASLt (libcublasLt.so.13): ") +
            (err ? err : "unknown dlopen error");
    return false;
  }
#define MPRT_LT_LOAD(name)                                                     \
  s.lt.name = reinterpret_cast<decltype(s.lt.name)>(                           \
      dlsym(handle, MPRT_LT_STRINGIZE(name)));                                 \
  if (!s.lt.name) {                                                            \
    s.why = "libcublasLt.so.13 lacks " MPRT_LT_STRINGIZE(name);                \
    return false;                                                              \
  }
  MPRT_LT_FUNCTIONS(MPRT_LT_LOAD)
#undef MPRT_LT_LOAD
  cublasStatus_t st = s.lt.cublasLtCreate(&s.handle);
  if (st != CUBLAS_STATUS_SUCCESS) {
    s.why = "cublasLtCreate failed: " + statusText(s.lt, st);
    return false;
  }
  return true;
}

const char *typeName(int32_t type) {
  switch (type) {
  case MPRT_GEMM_F32:
    return "f32";
  case MPRT_GEMM_F16:
    return "f16";
  case MPRT_GEMM_BF16:
    return "bf16";
  default:
    return "s8";
  }
}

// Creates the matmul descriptor, layouts and algorithm for a column-major
// D' (n x m, ld ldc) = op(A') op(B'), where A' (stored rowsA x colsA, ld
// ldA) and B' (rowsB x colsB, ld ldB) are given with their operations.
// Returns the cuBLAS status of the first failing call, and `found` says
// whether the heuristic had an algorithm.
/// Makes \p layout a strided batch of \p count matrices \p stride elements
/// apart (nothing to do for one).
cublasStatus_t setBatch(const Lt &lt, cublasLtMatrixLayout_t layout,
                        int64_t count, int64_t stride) {
  if (count == 1)
    return CUBLAS_STATUS_SUCCESS;
  int32_t count32 = static_cast<int32_t>(count);
  cublasStatus_t st = lt.cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count32, sizeof(count32));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride));
  return st;
}

/// The batch of a product: count and the strides of A', B' and C (in
/// elements).
struct Batch {
  int64_t count = 1, strideA = 0, strideB = 0, strideC = 0;
};

cublasStatus_t describe(State &s, cudaDataType_t inType, cudaDataType_t outType,
                        cudaDataType_t scaleType, cublasComputeType_t compute,
                        cublasOperation_t opA, uint64_t rowsA, uint64_t colsA,
                        int64_t ldA, cublasOperation_t opB, uint64_t rowsB,
                        uint64_t colsB, int64_t ldB, int64_t n, int64_t m,
                        int64_t ldc, const Batch &batch, Plan &plan,
                        bool &found) {
  const Lt &lt = s.lt;
  found = false;
  cublasStatus_t st =
      lt.cublasLtMatmulDescCreate(&plan.desc, compute, scaleType);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutCreate(&plan.a, inType, rowsA, colsA, ldA);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutCreate(&plan.b, inType, rowsB, colsB, ldB);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutCreate(&plan.c, outType, n, m, ldc);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = setBatch(lt, plan.a, batch.count, batch.strideA);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = setBatch(lt, plan.b, batch.count, batch.strideB);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = setBatch(lt, plan.c, batch.count, batch.strideC);
  cublasLtMatmulPreference_t preference = nullptr;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulPreferenceCreate(&preference);
  uint64_t workspace = kWorkspaceBytes;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
        sizeof(workspace));
  cublasLtMatmulHeuristicResult_t result;
  memset(&result, 0, sizeof(result));
  int count = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulAlgoGetHeuristic(s.handle, plan.desc, plan.a, plan.b,
                                           plan.c, plan.c, preference, 1,
                                           &result, &count);
  if (st == CUBLAS_STATUS_SUCCESS && count > 0) {
    plan.algo = result.algo;
    found = true;
  }
  // "Not supported" from the heuristic means no algorithm, not a failure.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)
    st = CUBLAS_STATUS_SUCCESS;
  return st;
}

// Describes transposing a column-major rows x cols s8 matrix (ld ld; a
// batch of `count`, `stride` elements apart) into dense cols x rows ones.
cublasStatus_t describeTranspose(const Lt &lt, uint64_t rows, uint64_t cols,
                                 int64_t ld, int64_t count, int64_t stride,
                                 Transpose &t) {
  cublasOperation_t op = CUBLAS_OP_T;
  cudaDataType_t scale = CUDA_R_32F;
  cublasStatus_t st = lt.cublasLtMatrixTransformDescCreate(&t.desc, scale);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixTransformDescSetAttribute(
        t.desc, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &op, sizeof(op));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutCreate(&t.from, CUDA_R_8I, rows, cols, ld);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutCreate(&t.to, CUDA_R_8I, cols, rows, cols);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = setBatch(lt, t.from, count, stride);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = setBatch(lt, t.to, count, static_cast<int64_t>(rows * cols));
  t.bytes = rows * cols * static_cast<uint64_t>(count);
  return st;
}

// Builds the plan for a column-major D' = op(A') op(B') (see the banner).
mprt_status makePlan(const char *fn, State &s, const PlanKey &key, Plan &plan) {
  auto [m, n, k, lda, ldb, ldc, flags, type, count, strideA, strideB, strideC] =
      key;
  const Lt &lt = s.lt;
  cudaDataType_t inType = CUDA_R_32F, outType = CUDA_R_32F,
                 scaleType = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (type) {
  case MPRT_GEMM_F32:
    break;
  case MPRT_GEMM_F16:
    inType = CUDA_R_16F;
    break;
  case MPRT_GEMM_BF16:
    inType = CUDA_R_16BF;
    break;
  case MPRT_GEMM_S8:
    inType = CUDA_R_8I;
    outType = scaleType = CUDA_R_32I;
    compute = CUBLAS_COMPUTE_32I;
    break;
  }
  // A rounded C has the operands' 16-bit type; the compute stays f32.
  if (flags & MPRT_GEMM_ROUNDED_C)
    outType = inType;
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  // A' is B's memory: op(B)^T is n x k. B' is A's memory: op(A)^T is k x m.
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  // A' is B's memory and B' is A's: their batch strides swap too.
  Batch batch{count, strideB, strideA, strideC};
  bool found = false;
  cublasStatus_t st =
      describe(s, inType, outType, scaleType, compute, opA, transB ? k : n,
               transB ? n : k, ldb, opB, transA ? m : k, transA ? k : m, lda, n,
               m, ldc, batch, plan, found);
  if (st == CUBLAS_STATUS_SUCCESS && !found && type == MPRT_GEMM_S8 &&
      (opA != CUBLAS_OP_T || opB != CUBLAS_OP_N)) {
    // int8 kernels want op(A') = T, op(B') = N: transpose the operands that
    // are the other way into dense copies, then multiply those.
    plan = Plan();
    plan.transposeA = opA != CUBLAS_OP_T;
    plan.transposeB = opB != CUBLAS_OP_N;
    if (plan.transposeA) // A' is n x k (ld ldb); its copy k x n (ld k)
      st = describeTranspose(lt, n, k, ldb, count, strideB, plan.copyA);
    if (st == CUBLAS_STATUS_SUCCESS && plan.transposeB) // m x k -> k x m
      st = describeTranspose(lt, m, k, lda, count, strideA, plan.copyB);
    Batch copied = batch;
    if (plan.transposeA)
      copied.strideA = n * k;
    if (plan.transposeB)
      copied.strideB = m * k;
    if (st == CUBLAS_STATUS_SUCCESS)
      st = describe(s, inType, outType, scaleType, compute, CUBLAS_OP_T, k, n,
                    plan.transposeA ? k : ldb, CUBLAS_OP_N, k, m,
                    plan.transposeB ? k : lda, n, m, ldc, copied, plan, found);
  }
  if (st != CUBLAS_STATUS_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "%s: cannot describe the %s product: %s", fn,
                      typeName(type), statusText(lt, st).c_str());
  if (!found) {
    char batchText[96] = "";
    if (count > 1)
      snprintf(batchText, sizeof(batchText),
               " batch=%lld strides=%lld,%lld,%lld", (long long)count,
               (long long)strideA, (long long)strideB, (long long)strideC);
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "%s: cuBLASLt has no algorithm for %s m=%lld n=%lld "
                      "k=%lld lda=%lld ldb=%lld ldc=%lld%s%s%s",
                      fn, typeName(type), (long long)m, (long long)n,
                      (long long)k, (long long)lda, (long long)ldb,
                      (long long)ldc, batchText, transA ? " trans-a" : "",
                      transB ? " trans-b" : "");
  }
  return MPRT_OK;
}

/// C[p] += op(A[p]) op(B[p]) for p < batch (see mprt_cuda_gemm_batched);
/// messages start with \p fn. With \p synchronous, \p stream is ignored:
/// the product runs on State::syncStream, which is waited for.
mprt_status gemm(const char *fn, int64_t a, int64_t lda, int64_t b, int64_t ldb,
                 int64_t c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                 int32_t flags, int32_t type, int64_t batch, int64_t strideA,
                 int64_t strideB, int64_t strideC, void *stream,
                 bool synchronous) {
  mprt::clearError();
  if (type < MPRT_GEMM_F32 || type > MPRT_GEMM_S8)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "%s: bad type %d", fn, type);
  if (flags & ~(MPRT_GEMM_TRANS_A | MPRT_GEMM_TRANS_B | MPRT_GEMM_ROUNDED_C))
    return mprt::fail(MPRT_ERROR_ARGUMENT, "%s: bad flags %d", fn, flags);
  bool rounded = flags & MPRT_GEMM_ROUNDED_C;
  if (rounded && type != MPRT_GEMM_F16 && type != MPRT_GEMM_BF16)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "%s: a rounded C needs f16 or bf16 operands, not %s", fn,
                      typeName(type));
  if (m < 0 || n < 0 || k < 0)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "%s: negative size m=%lld n=%lld k=%lld", fn,
                      (long long)m, (long long)n, (long long)k);
  // Row-major leading dimensions: at least the row length of each stored
  // matrix.
  int64_t aRow = (flags & MPRT_GEMM_TRANS_A) ? m : k;
  int64_t bRow = (flags & MPRT_GEMM_TRANS_B) ? k : n;
  if (lda < std::max<int64_t>(1, aRow) || ldb < std::max<int64_t>(1, bRow) ||
      ldc < std::max<int64_t>(1, n))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "%s: leading dimensions lda=%lld ldb=%lld "
                      "ldc=%lld too small for m=%lld n=%lld k=%lld",
                      fn, (long long)lda, (long long)ldb, (long long)ldc,
                      (long long)m, (long long)n, (long long)k);
  if (batch < 0 || batch > INT32_MAX)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "%s: batch %lld is not in [0, 2^31)",
                      fn, (long long)batch);
  if (batch <= 1) {
    strideA = strideB = strideC = 0; // unused; one plan for all
  } else if (strideA < 0 || strideB < 0 || strideC < 0) {
    return mprt::fail(
        MPRT_ERROR_ARGUMENT, "%s: negative batch stride %lld, %lld, %lld", fn,
        (long long)strideA, (long long)strideB, (long long)strideC);
  } else if (m > 0 && n > 0 && strideC < (m - 1) * ldc + n) {
    // A and B may be shared by the whole batch (stride 0), C may not.
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "%s: the batch stride of C, %lld, is less than one "
                      "%lld x %lld matrix with ldc=%lld: results would "
                      "overlap",
                      fn, (long long)strideC, (long long)m, (long long)n,
                      (long long)ldc);
  }
  if (m == 0 || n == 0 || batch == 0 || (k == 0 && !rounded))
    return MPRT_OK; // C += nothing
  if (!a || !b || !c)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "%s: null pointer", fn);

  std::string why;
  const Driver *d = driver(&why);
  if (!d)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: no usable GPU: %s", fn,
                      why.c_str());
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (d->cuCtxPushCurrent(primaryContext()) != CUDA_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: cannot make the context current",
                      fn);
  struct Pop {
    const Driver *d;
    ~Pop() {
      CUcontext previous;
      d->cuCtxPopCurrent(&previous);
    }
  } pop{d};
  if (!initialize(s))
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: %s", fn, s.why.c_str());
  if (synchronous) {
    if (!s.syncStream) {
      CUresult r = d->cuStreamCreate(&s.syncStream, CU_STREAM_NON_BLOCKING);
      if (r != CUDA_SUCCESS) {
        s.syncStream = nullptr;
        return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuStreamCreate failed: %s",
                          fn, resultText(r).c_str());
      }
    }
    stream = s.syncStream;
  }

  if (k == 0) {
    // A rounded C of an empty sum: zeros (cuBLASLt wants k > 0), row by row.
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i) {
        CUdeviceptr row = static_cast<CUdeviceptr>(c) +
                          static_cast<CUdeviceptr>((p * strideC + i * ldc) * 2);
        CUresult r = d->cuMemsetD16Async(row, 0, static_cast<size_t>(n),
                                         static_cast<CUstream>(stream));
        if (r != CUDA_SUCCESS)
          return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuMemsetD16Async: %s", fn,
                            resultText(r).c_str());
      }
    if (synchronous) {
      CUresult r = d->cuStreamSynchronize(static_cast<CUstream>(stream));
      if (r != CUDA_SUCCESS)
        return mprt::fail(MPRT_ERROR_DEVICE,
                          "%s: cuStreamSynchronize failed: %s", fn,
                          resultText(r).c_str());
    }
    return MPRT_OK;
  }
  PlanKey key{m,     n,    k,     lda,     ldb,     ldc,
              flags, type, batch, strideA, strideB, strideC};
  auto it = s.plans.find(key);
  if (it == s.plans.end()) {
    Plan plan;
    if (mprt_status st = makePlan(fn, s, key, plan))
      return st; // the descriptors leak; a failing shape is not retried often
    it = s.plans.emplace(key, plan).first;
  }
  const Plan &plan = it->second;
  CUdeviceptr &workspace = s.workspaces[stream];
  if (!workspace) {
    CUresult r;
    workspace = poolAllocate(kWorkspaceBytes, static_cast<CUstream>(stream), r);
    if (!workspace)
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "%s: cannot allocate the %llu-byte "
                        "cuBLASLt workspace: %s",
                        fn, (unsigned long long)kWorkspaceBytes,
                        resultText(r).c_str());
  }
  // s8 operands the plan multiplies from transposed copies (pool blocks,
  // freed in stream order after the product).
  void *opA = reinterpret_cast<void *>(b), *opB = reinterpret_cast<void *>(a);
  CUdeviceptr temps[2] = {0, 0};
  auto releaseTemps = [&] {
    for (CUdeviceptr t : temps) {
      CUresult ignored;
      if (t)
        poolFree(t, static_cast<CUstream>(stream), ignored);
    }
  };
  const Transpose *copies[2] = {plan.transposeA ? &plan.copyA : nullptr,
                                plan.transposeB ? &plan.copyB : nullptr};
  void **operands[2] = {&opA, &opB};
  for (int i = 0; i < 2; ++i) {
    if (!copies[i])
      continue;
    CUresult r;
    temps[i] = poolAllocate(copies[i]->bytes, static_cast<CUstream>(stream), r);
    if (!temps[i]) {
      releaseTemps();
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "%s: cannot allocate %llu bytes for a "
                        "transposed s8 operand: %s",
                        fn, (unsigned long long)copies[i]->bytes,
                        resultText(r).c_str());
    }
    float one = 1, zero = 0;
    cublasStatus_t st = s.lt.cublasLtMatrixTransform(
        s.handle, copies[i]->desc, &one, *operands[i], copies[i]->from, &zero,
        nullptr, nullptr, reinterpret_cast<void *>(temps[i]), copies[i]->to,
        static_cast<cudaStream_t>(stream));
    if (st != CUBLAS_STATUS_SUCCESS) {
      releaseTemps();
      return mprt::fail(MPRT_ERROR_DEVICE, "%s: cublasLtMatrixTransform: %s",
                        fn, statusText(s.lt, st).c_str());
    }
    *operands[i] = reinterpret_cast<void *>(temps[i]);
  }

  // C += ..., or C = round(...) without reading C.
  float alphaF = 1, betaF = rounded ? 0 : 1;
  int32_t alphaI = 1, betaI = 1;
  const void *alpha = type == MPRT_GEMM_S8 ? (const void *)&alphaI : &alphaF;
  const void *beta = type == MPRT_GEMM_S8 ? (const void *)&betaI : &betaF;
  cublasStatus_t st = s.lt.cublasLtMatmul(
      s.handle, plan.desc, alpha, opA, plan.a, opB, plan.b, beta,
      reinterpret_cast<void *>(c), plan.c, reinterpret_cast<void *>(c), plan.c,
      &plan.algo, reinterpret_cast<void *>(workspace), kWorkspaceBytes,
      static_cast<cudaStream_t>(stream));
  releaseTemps();
  if (st != CUBLAS_STATUS_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: cublasLtMatmul: %s", fn,
                      statusText(s.lt, st).c_str());
  if (synchronous) {
    // Faults of the product itself (a bad address) surface here.
    CUresult r = d->cuStreamSynchronize(static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuStreamSynchronize failed: %s",
                        fn, resultText(r).c_str());
  }
  return MPRT_OK;
}

} // namespace

extern "C" mprt_status mprt_cuda_gemm(int64_t a, int64_t lda, int64_t b,
                                      int64_t ldb, int64_t c, int64_t ldc,
                                      int64_t m, int64_t n, int64_t k,
                                      int32_t flags, int32_t type,
                                      void *stream) {
  return gemm("mprt_cuda_gemm", a, lda, b, ldb, c, ldc, m, n, k, flags, type, 1,
              0, 0, 0, stream, /*synchronous=*/false);
}

extern "C" mprt_status mprt_cuda_gemm_batched(
    int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c, int64_t ldc,
    int64_t m, int64_t n, int64_t k, int32_t flags, int32_t type, int64_t batch,
    int64_t strideA, int64_t strideB, int64_t strideC, void *stream) {
  return gemm("mprt_cuda_gemm_batched", a, lda, b, ldb, c, ldc, m, n, k, flags,
              type, batch, strideA, strideB, strideC, stream,
              /*synchronous=*/false);
}

extern "C" mprt_status mprt_cuda_gemm_sync(int64_t a, int64_t lda, int64_t b,
                                           int64_t ldb, int64_t c, int64_t ldc,
                                           int64_t m, int64_t n, int64_t k,
                                           int32_t flags, int32_t type,
                                           int64_t batch, int64_t strideA,
                                           int64_t strideB, int64_t strideC) {
  constexpr const char *fn = "mprt_cuda_gemm_sync";
  if (errorPending()) {
    // As for launches: an earlier failure (an allocation, a module load)
    // makes the operands suspect.
    recordError("%s: product skipped after an earlier error", fn);
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "%s: product skipped after an earlier error", fn);
  }
  mprt_status st =
      gemm(fn, a, lda, b, ldb, c, ldc, m, n, k, flags, type, batch, strideA,
           strideB, strideC, nullptr, /*synchronous=*/true);
  if (st != MPRT_OK) {
    // Compiled code ignores the status: print and exit, or record for
    // mprt_cuda_check (mprt_cuda_error_mode).
    std::string message = mprt_last_error();
    recordError("%s", message.c_str());
    mprt::fail(st, "%s", message.c_str());
  }
  return st;
}
