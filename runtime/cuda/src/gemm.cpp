//===- gemm.cpp - Contractions on the device with cuBLASLt ----------------===//
//
// mprt_cuda_gemm has mprt_gemm's row-major convention. cuBLASLt is
// column-major: a row-major X is the column-major X^T, so C = op(A) op(B)
// runs as C^T = op(B)^T op(A)^T with the operands swapped and no copy.
// libcublasLt is loaded with dlopen like the driver. The handle, a workspace
// per stream and, per shape, the descriptors and the heuristic's algorithm are
// cached.
//
//===----------------------------------------------------------------------===//

#include "../../src/internal.h"
#include "driver.h"
#include "pool.h"

#include <cublasLt.h>

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

// One plan per shape, layout and type.
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int32_t, int32_t>;
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
cublasStatus_t describe(State &s, cudaDataType_t inType, cudaDataType_t outType,
                        cudaDataType_t scaleType, cublasComputeType_t compute,
                        cublasOperation_t opA, uint64_t rowsA, uint64_t colsA,
                        int64_t ldA, cublasOperation_t opB, uint64_t rowsB,
                        uint64_t colsB, int64_t ldB, int64_t n, int64_t m,
                        int64_t ldc, Plan &plan, bool &found) {
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

// Describes transposing a column-major rows x cols s8 matrix (ld ld) into a
// dense cols x rows one.
cublasStatus_t describeTranspose(const Lt &lt, uint64_t rows, uint64_t cols,
                                 int64_t ld, Transpose &t) {
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
  t.bytes = rows * cols;
  return st;
}

// Builds the plan for a column-major D' = op(A') op(B') (see the banner).
mprt_status makePlan(State &s, const PlanKey &key, Plan &plan) {
  auto [m, n, k, lda, ldb, ldc, flags, type] = key;
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
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  // A' is B's memory: op(B)^T is n x k. B' is A's memory: op(A)^T is k x m.
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  bool found = false;
  cublasStatus_t st =
      describe(s, inType, outType, scaleType, compute, opA, transB ? k : n,
               transB ? n : k, ldb, opB, transA ? m : k, transA ? k : m, lda, n,
               m, ldc, plan, found);
  if (st == CUBLAS_STATUS_SUCCESS && !found && type == MPRT_GEMM_S8 &&
      (opA != CUBLAS_OP_T || opB != CUBLAS_OP_N)) {
    // int8 kernels want op(A') = T, op(B') = N: transpose the operands that
    // are the other way into dense copies, then multiply those.
    plan = Plan();
    plan.transposeA = opA != CUBLAS_OP_T;
    plan.transposeB = opB != CUBLAS_OP_N;
    if (plan.transposeA) // A' is n x k (ld ldb); its copy k x n (ld k)
      st = describeTranspose(lt, n, k, ldb, plan.copyA);
    if (st == CUBLAS_STATUS_SUCCESS && plan.transposeB) // m x k -> k x m
      st = describeTranspose(lt, m, k, lda, plan.copyB);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = describe(s, inType, outType, scaleType, compute, CUBLAS_OP_T, k, n,
                    plan.transposeA ? k : ldb, CUBLAS_OP_N, k, m,
                    plan.transposeB ? k : lda, n, m, ldc, plan, found);
  }
  if (st != CUBLAS_STATUS_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "mprt_cuda_gemm: cannot describe the %s product: %s",
                      typeName(type), statusText(lt, st).c_str());
  if (!found)
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "mprt_cuda_gemm: cuBLASLt has no algorithm for %s "
                      "m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld%s%s",
                      typeName(type), (long long)m, (long long)n, (long long)k,
                      (long long)lda, (long long)ldb, (long long)ldc,
                      transA ? " trans-a" : "", transB ? " trans-b" : "");
  return MPRT_OK;
}

} // namespace

extern "C" mprt_status mprt_cuda_gemm(int64_t a, int64_t lda, int64_t b,
                                      int64_t ldb, int64_t c, int64_t ldc,
                                      int64_t m, int64_t n, int64_t k,
                                      int32_t flags, int32_t type,
                                      void *stream) {
  mprt::clearError();
  if (type < MPRT_GEMM_F32 || type > MPRT_GEMM_S8)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_cuda_gemm: bad type %d", type);
  if (flags & ~(MPRT_GEMM_TRANS_A | MPRT_GEMM_TRANS_B))
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_cuda_gemm: bad flags %d",
                      flags);
  if (m < 0 || n < 0 || k < 0)
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_cuda_gemm: negative size m=%lld n=%lld k=%lld",
                      (long long)m, (long long)n, (long long)k);
  // Row-major leading dimensions: at least the row length of each stored
  // matrix.
  int64_t aRow = (flags & MPRT_GEMM_TRANS_A) ? m : k;
  int64_t bRow = (flags & MPRT_GEMM_TRANS_B) ? k : n;
  if (lda < std::max<int64_t>(1, aRow) || ldb < std::max<int64_t>(1, bRow) ||
      ldc < std::max<int64_t>(1, n))
    return mprt::fail(MPRT_ERROR_ARGUMENT,
                      "mprt_cuda_gemm: leading dimensions lda=%lld ldb=%lld "
                      "ldc=%lld too small for m=%lld n=%lld k=%lld",
                      (long long)lda, (long long)ldb, (long long)ldc,
                      (long long)m, (long long)n, (long long)k);
  if (m == 0 || n == 0 || k == 0)
    return MPRT_OK; // C += nothing
  if (!a || !b || !c)
    return mprt::fail(MPRT_ERROR_ARGUMENT, "mprt_cuda_gemm: null pointer");

  std::string why;
  const Driver *d = driver(&why);
  if (!d)
    return mprt::fail(MPRT_ERROR_DEVICE, "mprt_cuda_gemm: no usable GPU: %s",
                      why.c_str());
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (d->cuCtxPushCurrent(primaryContext()) != CUDA_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "mprt_cuda_gemm: cannot make the context current");
  struct Pop {
    const Driver *d;
    ~Pop() {
      CUcontext previous;
      d->cuCtxPopCurrent(&previous);
    }
  } pop{d};
  if (!initialize(s))
    return mprt::fail(MPRT_ERROR_DEVICE, "mprt_cuda_gemm: %s", s.why.c_str());

  PlanKey key{m, n, k, lda, ldb, ldc, flags, type};
  auto it = s.plans.find(key);
  if (it == s.plans.end()) {
    Plan plan;
    if (mprt_status st = makePlan(s, key, plan))
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
                        "mprt_cuda_gemm: cannot allocate the %llu-byte "
                        "cuBLASLt workspace: %s",
                        (unsigned long long)kWorkspaceBytes,
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
                        "mprt_cuda_gemm: cannot allocate %llu bytes for a "
                        "transposed s8 operand: %s",
                        (unsigned long long)copies[i]->bytes,
                        resultText(r).c_str());
    }
    float one = 1, zero = 0;
    cublasStatus_t st = s.lt.cublasLtMatrixTransform(
        s.handle, copies[i]->desc, &one, *operands[i], copies[i]->from, &zero,
        nullptr, nullptr, reinterpret_cast<void *>(temps[i]), copies[i]->to,
        static_cast<cudaStream_t>(stream));
    if (st != CUBLAS_STATUS_SUCCESS) {
      releaseTemps();
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "mprt_cuda_gemm: cublasLtMatrixTransform: %s",
                        statusText(s.lt, st).c_str());
    }
    *operands[i] = reinterpret_cast<void *>(temps[i]);
  }

  float alphaF = 1, betaF = 1;
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
    return mprt::fail(MPRT_ERROR_DEVICE, "mprt_cuda_gemm: cublasLtMatmul: %s",
                      statusText(s.lt, st).c_str());
  return MPRT_OK;
}
