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
// Alignment: lowered code passes an aligned base plus an offset, and
// cuBLASLt assumes 256-byte aligned operands unless told otherwise. Each
// pointer's alignment goes into the heuristic's preference
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES) and into the plan's cache key,
// so an algorithm chosen for aligned operands is never run on misaligned ones.
//
// TF32: f32 products use CUBLAS_COMPUTE_32F_FAST_TF32 instead of
// CUBLAS_COMPUTE_32F while the switch is on (mprt_cuda_gemm_set_tf32, or
// MPRT_CUDA_TF32=1 read at the first product); the compute type is part of
// the plan's key, so a switch between products takes effect at once.
//
// int8: cuBLASLt's int8 kernels (IMMA) take regular column-major operands
// only in the "TN" form (A' transposed, B' not), with m, k and the leading
// dimensions multiples of 4 and 4-byte aligned pointers (cuBLAS
// documentation, cublasLtMatmul). Products of models often miss these (the
// digits classifier has n = 10), and the heuristic alone is no guide (it
// may offer what then fails), so an s8 plan decides from the rules, per
// operand, whether it is read in place or copied first into a zero-padded
// TN pool block (zeros along k add nothing to integer sums): transposed by
// cublasLtMatrixTransform, else by cuMemcpy2DAsync. C is accumulated in
// place, or copied into a padded int32 block, accumulated there and copied
// back. Should cuBLASLt still refuse an operand read in place (heuristic or
// cublasLtMatmul), every operand is staged.
//
//===----------------------------------------------------------------------===//

#include "../../src/internal.h"
#include "driver.h"
#include "pool.h"

#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
  X(cublasLtMatmulPreferenceDestroy)                                           \
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
// cuBLASLt's default (and largest) assumed alignment.
constexpr uint32_t kMaxAlignment = 256;

// One plan per shape, layout, type, batch, alignment and compute type: m, n,
// k, lda, ldb, ldc, flags, type, batch, strideA, strideB, strideC (strides 0
// when batch is 1), the alignments of A, B and C in bytes, and the
// cublasComputeType_t (FAST_TF32 or not for f32).
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int32_t, int32_t, int64_t, int64_t, int64_t, int64_t,
                           uint32_t, uint32_t, uint32_t, int32_t>;

/// Whether f32 products run on TF32 tensor cores: -1 until decided (by
/// mprt_cuda_gemm_set_tf32, or from MPRT_CUDA_TF32 when first needed), then
/// 0 or 1.
std::atomic<int> tf32Mode{-1};

bool tf32Enabled() {
  int mode = tf32Mode.load();
  if (mode < 0) {
    const char *env = getenv("MPRT_CUDA_TF32");
    int fromEnv = env && strcmp(env, "1") == 0 ? 1 : 0;
    // A concurrent mprt_cuda_gemm_set_tf32 wins.
    if (tf32Mode.compare_exchange_strong(mode, fromEnv))
      mode = fromEnv;
  }
  return mode == 1;
}

/// The alignment of every matrix of a batch that starts at \p address, the
/// matrices \p strideBytes apart: the largest power of two that divides
/// both, at most 256.
uint32_t alignmentOf(int64_t address, int64_t strideBytes) {
  uint64_t bits = static_cast<uint64_t>(address) |
                  static_cast<uint64_t>(strideBytes) | kMaxAlignment;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// A column-major matrix as a product reads it: rows x cols with leading
/// dimension ld, batch stride in elements, and the alignment of its
/// pointers in bytes.
struct Matrix {
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
  uint32_t alignment = kMaxAlignment;
};

/// A staging copy `to` = op(`from`) of a strided batch, where `to` may be
/// the corner of a larger matrix. A transpose (int8) is one batched
/// cublasLtMatrixTransform. A plain copy is cuMemcpy2DAsync: bytes are
/// moved exactly (an int32 C too), and cuBLASLt 13.1's batched transform
/// copies only the first matrix when both layouts are dense.
struct Copy {
  cublasLtMatrixTransformDesc_t desc = nullptr; // null: a plain copy
  cublasLtMatrixLayout_t from = nullptr, to = nullptr;
  // A plain copy: `count` matrices of `columns` columns of `width` bytes,
  // pitches and strides in bytes.
  uint64_t width = 0, columns = 0, count = 0, fromPitch = 0, toPitch = 0,
           fromStride = 0, toStride = 0;
};

/// An s8 operand that is multiplied from a pool block: A' or B' copied in
/// TN form, or C copied in before the product and back after it.
struct Staging {
  bool used = false;
  uint64_t bytes = 0;
  bool zero = false; // the product reads padding: clear the block first
  Copy in, out;      // `out` for C only
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  // s8: A' (B's memory), B' (A's memory) and C staged in pool blocks (see
  // describeS8).
  Staging staged[3];
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

/// Creates the layout of \p x, a strided batch of \p count matrices (no
/// batch attributes for one).
cublasStatus_t createLayout(const Lt &lt, cudaDataType_t type, const Matrix &x,
                            int64_t count, cublasLtMatrixLayout_t &layout) {
  cublasStatus_t st = lt.cublasLtMatrixLayoutCreate(
      &layout, type, static_cast<uint64_t>(x.rows),
      static_cast<uint64_t>(x.cols), x.ld);
  if (st != CUBLAS_STATUS_SUCCESS || count == 1)
    return st;
  int32_t count32 = static_cast<int32_t>(count);
  int64_t stride = x.stride;
  st = lt.cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count32, sizeof(count32));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride));
  return st;
}

/// Creates the matmul descriptor and layouts of a column-major D' (= C, in
/// place) = op(A') op(B') over a batch of \p count, and asks the heuristic
/// for an algorithm given the operands' alignments; `found` says whether it
/// had one.
cublasStatus_t describe(State &s, cudaDataType_t inType, cudaDataType_t outType,
                        cudaDataType_t scaleType, cublasComputeType_t compute,
                        cublasOperation_t opA, const Matrix &a,
                        cublasOperation_t opB, const Matrix &b, const Matrix &c,
                        int64_t count, Plan &plan, bool &found) {
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
    st = createLayout(lt, inType, a, count, plan.a);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = createLayout(lt, inType, b, count, plan.b);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = createLayout(lt, outType, c, count, plan.c);
  cublasLtMatmulPreference_t preference = nullptr;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulPreferenceCreate(&preference);
  uint64_t workspace = kWorkspaceBytes;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
        sizeof(workspace));
  // C and D are the same memory.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] =
      {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, a.alignment},
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, b.alignment},
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c.alignment},
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c.alignment}};
  for (const auto &[attribute, bytes] : alignments)
    if (st == CUBLAS_STATUS_SUCCESS)
      st = lt.cublasLtMatmulPreferenceSetAttribute(preference, attribute,
                                                   &bytes, sizeof(bytes));
  cublasLtMatmulHeuristicResult_t result;
  memset(&result, 0, sizeof(result));
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulAlgoGetHeuristic(s.handle, plan.desc, plan.a, plan.b,
                                           plan.c, plan.c, preference, 1,
                                           &result, &returned);
  if (preference)
    lt.cublasLtMatmulPreferenceDestroy(preference);
  if (st == CUBLAS_STATUS_SUCCESS && returned > 0) {
    plan.algo = result.algo;
    found = true;
  }
  // "Not supported" from the heuristic means no algorithm, not a failure.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)
    st = CUBLAS_STATUS_SUCCESS;
  return st;
}

/// Describes the copy `to` = op(`from`) of \p count matrices of
/// \p elementBytes elements (transposes: int8 only).
cublasStatus_t describeCopy(const Lt &lt, cublasOperation_t op,
                            int64_t elementBytes, const Matrix &from,
                            const Matrix &to, int64_t count, Copy &copy) {
  if (op == CUBLAS_OP_N) {
    copy.width = static_cast<uint64_t>(to.rows * elementBytes);
    copy.columns = static_cast<uint64_t>(to.cols);
    copy.count = static_cast<uint64_t>(count);
    copy.fromPitch = static_cast<uint64_t>(from.ld * elementBytes);
    copy.toPitch = static_cast<uint64_t>(to.ld * elementBytes);
    copy.fromStride = static_cast<uint64_t>(from.stride * elementBytes);
    copy.toStride = static_cast<uint64_t>(to.stride * elementBytes);
    // Matrices that follow each other without a gap on both sides are the
    // columns of one matrix: one call for the batch.
    if (count > 1 && from.stride == from.ld * from.cols &&
        to.stride == to.ld * to.cols) {
      copy.columns *= copy.count;
      copy.count = 1;
    }
    return CUBLAS_STATUS_SUCCESS;
  }
  // Integers pass through f32 scaling exactly: |x| <= 128.
  cudaDataType_t scale = CUDA_R_32F;
  cublasStatus_t st = lt.cublasLtMatrixTransformDescCreate(&copy.desc, scale);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatrixTransformDescSetAttribute(
        copy.desc, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &op, sizeof(op));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = createLayout(lt, CUDA_R_8I, from, count, copy.from);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = createLayout(lt, CUDA_R_8I, to, count, copy.to);
  return st;
}

/// Queues \p copy from \p from to \p to on \p stream; messages start with
/// \p fn and say \p what was copied.
mprt_status runCopy(const char *fn, const char *what, State &s, const Driver &d,
                    const Copy &copy, const void *from, void *to,
                    CUstream stream) {
  if (copy.desc) {
    float one = 1, zero = 0;
    cublasStatus_t st = s.lt.cublasLtMatrixTransform(
        s.handle, copy.desc, &one, from, copy.from, &zero, nullptr, nullptr, to,
        copy.to, static_cast<cudaStream_t>(stream));
    if (st != CUBLAS_STATUS_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "%s: cublasLtMatrixTransform (%s): %s", fn, what,
                        statusText(s.lt, st).c_str());
    return MPRT_OK;
  }
  for (uint64_t p = 0; p < copy.count; ++p) {
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof(m));
    // Unified addressing: operands may be host memory the device reads.
    m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    m.srcDevice = reinterpret_cast<CUdeviceptr>(from) + p * copy.fromStride;
    m.dstDevice = reinterpret_cast<CUdeviceptr>(to) + p * copy.toStride;
    m.srcPitch = copy.fromPitch;
    m.dstPitch = copy.toPitch;
    m.WidthInBytes = copy.width;
    m.Height = copy.columns;
    if (CUresult r = d.cuMemcpy2DAsync(&m, stream))
      return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuMemcpy2DAsync (%s): %s", fn,
                        what, resultText(r).c_str());
  }
  return MPRT_OK;
}

/// Whether an s8 operand may be read where it is: leading dimension and
/// batch stride multiples of 4 elements, every pointer 4-byte aligned.
bool fitsInt8Kernels(const Matrix &x) {
  return x.ld % 4 == 0 && x.stride % 4 == 0 && x.alignment >= 4;
}

/// Describes the s8 product D' (mm x nn, = C) += op(A') op(B') over k (see
/// the banner). An operand is read in place when it meets the int8
/// kernels' rules (and \p stageAll is false); otherwise it is copied into a
/// pool block: A' as a k x mm (ld ldk) matrix used transposed, B' as a
/// k x nn one used as it is, both zero-padded to multiples of 4 along m, n
/// and k; C into an int32 block of padded size, and back after the product.
/// A shared operand (stride 0) is copied once.
cublasStatus_t describeS8(State &s, cublasOperation_t opA, const Matrix &a,
                          cublasOperation_t opB, const Matrix &b,
                          const Matrix &c, int64_t count, int64_t mm,
                          int64_t nn, int64_t k, bool stageAll, Plan &plan,
                          bool &found) {
  const Lt &lt = s.lt;
  // Each matrix's own sizes must be multiples of 4 (A' is k x mm, B'
  // k x nn, C mm x nn); the staged ones are padded to match.
  bool inPlace[3] = {!stageAll && mm % 4 == 0 && k % 4 == 0 &&
                         opA == CUBLAS_OP_T && fitsInt8Kernels(a),
                     !stageAll && nn % 4 == 0 && k % 4 == 0 &&
                         opB == CUBLAS_OP_N && fitsInt8Kernels(b),
                     !stageAll && mm % 4 == 0 && nn % 4 == 0 &&
                         fitsInt8Kernels(c)};
  // ldk: 16-byte aligned columns for the copies.
  int64_t mp = roundUp(mm, 4), np = roundUp(nn, 4), kp = roundUp(k, 4),
          ldk = roundUp(k, 16);
  Matrix used[3] = {a, b, c};
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < 2 && st == CUBLAS_STATUS_SUCCESS; ++i) {
    if (inPlace[i])
      continue;
    const Matrix &from = i == 0 ? a : b;
    int64_t cols = i == 0 ? mm : nn, paddedCols = i == 0 ? mp : np;
    bool shared = from.stride == 0; // or a batch of one
    int64_t copies = shared ? 1 : count;
    int64_t stride = shared ? 0 : ldk * paddedCols;
    // The block is the operand the int8 kernels want: k x cols for A'
    // (used transposed) and B' (used as it is).
    Matrix to{k, cols, ldk, stride, kMaxAlignment};
    Staging &staging = plan.staged[i];
    staging.used = true;
    staging.bytes = static_cast<uint64_t>(ldk * paddedCols * copies);
    staging.zero = k != kp || cols != paddedCols;
    bool asIs = i == 0 ? opA == CUBLAS_OP_T : opB == CUBLAS_OP_N;
    st = describeCopy(lt, asIs ? CUBLAS_OP_N : CUBLAS_OP_T, 1, from, to, copies,
                      staging.in);
    used[i] =
        Matrix{kp, paddedCols, ldk, stride, alignmentOf(kMaxAlignment, stride)};
  }
  if (st == CUBLAS_STATUS_SUCCESS && !inPlace[2]) {
    // C through an mp x np int32 block, copied in and back.
    Staging &staging = plan.staged[2];
    int64_t stride = mp * np;
    staging.used = true;
    staging.bytes = static_cast<uint64_t>(4 * stride * count);
    staging.zero = mm != mp || nn != np;
    Matrix block{mm, nn, mp, stride, kMaxAlignment};
    st = describeCopy(lt, CUBLAS_OP_N, 4, c, block, count, staging.in);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = describeCopy(lt, CUBLAS_OP_N, 4, block, c, count, staging.out);
    used[2] =
        Matrix{mp, np, mp, stride, alignmentOf(kMaxAlignment, 4 * stride)};
  }
  if (st == CUBLAS_STATUS_SUCCESS)
    st = describe(s, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I,
                  inPlace[0] ? opA : CUBLAS_OP_T, used[0],
                  inPlace[1] ? opB : CUBLAS_OP_N, used[1], used[2], count, plan,
                  found);
  return st;
}

/// Whether an s8 plan reads some operand in place (and could be retried
/// with all of them staged).
bool readsInPlace(const Plan &plan) {
  return !plan.staged[0].used || !plan.staged[1].used || !plan.staged[2].used;
}

// Builds the plan for a column-major D' = op(A') op(B') (see the banner);
// \p stageAll stages every s8 operand.
mprt_status makePlan(const char *fn, State &s, const PlanKey &key,
                     bool stageAll, Plan &plan) {
  auto [m, n, k, lda, ldb, ldc, flags, type, count, strideA, strideB, strideC,
        alignA, alignB, alignC, compute] = key;
  const Lt &lt = s.lt;
  cudaDataType_t inType = CUDA_R_32F, outType = CUDA_R_32F;
  switch (type) {
  case MPRT_GEMM_F16:
    inType = CUDA_R_16F;
    break;
  case MPRT_GEMM_BF16:
    inType = CUDA_R_16BF;
    break;
  default:
    break;
  }
  // A rounded C has the operands' 16-bit type; the compute stays f32.
  if (flags & MPRT_GEMM_ROUNDED_C)
    outType = inType;
  bool transA = flags & MPRT_GEMM_TRANS_A, transB = flags & MPRT_GEMM_TRANS_B;
  // A' is B's memory: op(B)^T is n x k. B' is A's memory: op(A)^T is k x m.
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  Matrix a{transB ? k : n, transB ? n : k, ldb, strideB, alignB};
  Matrix b{transA ? m : k, transA ? k : m, lda, strideA, alignA};
  Matrix c{n, m, ldc, strideC, alignC};
  bool found = false;
  cublasStatus_t st;
  if (type == MPRT_GEMM_S8) {
    st =
        describeS8(s, opA, a, opB, b, c, count, n, m, k, stageAll, plan, found);
    if (st == CUBLAS_STATUS_SUCCESS && !found && readsInPlace(plan)) {
      // The rules said yes, the heuristic no: stage everything (the
      // descriptors of the first try leak, as failing shapes do).
      plan = Plan();
      st = describeS8(s, opA, a, opB, b, c, count, n, m, k,
                      /*stageAll=*/true, plan, found);
    }
  } else {
    st = describe(s, inType, outType, CUDA_R_32F,
                  static_cast<cublasComputeType_t>(compute), opA, a, opB, b, c,
                  count, plan, found);
  }
  const char *what = compute == CUBLAS_COMPUTE_32F_FAST_TF32
                         ? "f32 (TF32 compute)"
                         : typeName(type);
  if (st != CUBLAS_STATUS_SUCCESS)
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "%s: cannot describe the %s product: %s", fn, what,
                      statusText(lt, st).c_str());
  if (!found) {
    char batchText[96] = "";
    if (count > 1)
      snprintf(batchText, sizeof(batchText),
               " batch=%lld strides=%lld,%lld,%lld", (long long)count,
               (long long)strideA, (long long)strideB, (long long)strideC);
    return mprt::fail(MPRT_ERROR_DEVICE,
                      "%s: cuBLASLt has no algorithm for %s m=%lld n=%lld "
                      "k=%lld lda=%lld ldb=%lld ldc=%lld%s%s%s alignments "
                      "%u,%u,%u",
                      fn, what, (long long)m, (long long)n, (long long)k,
                      (long long)lda, (long long)ldb, (long long)ldc, batchText,
                      transA ? " trans-a" : "", transB ? " trans-b" : "",
                      alignA, alignB, alignC);
  }
  return MPRT_OK;
}

/// Queues \p plan's product C += op(A) op(B) (or C = round(...)) on
/// \p stream: s8 staging copies, the matmul, the copy of a staged C back.
/// `matmulFailed` says whether cublasLtMatmul itself refused (C is
/// untouched then).
mprt_status runPlan(const char *fn, State &s, const Driver &d, const Plan &plan,
                    int64_t a, int64_t b, int64_t c, int32_t type, bool rounded,
                    CUstream stream, CUdeviceptr workspace,
                    bool &matmulFailed) {
  matmulFailed = false;
  const Lt &lt = s.lt;
  // A', B', C; staged ones are replaced by their pool blocks, which are
  // freed in stream order after the product.
  void *operands[3] = {reinterpret_cast<void *>(b), reinterpret_cast<void *>(a),
                       reinterpret_cast<void *>(c)};
  void *const original[3] = {operands[0], operands[1], operands[2]};
  CUdeviceptr blocks[3] = {0, 0, 0};
  auto release = [&] {
    for (CUdeviceptr block : blocks) {
      CUresult ignored;
      if (block)
        poolFree(block, stream, ignored);
    }
  };
  const char *what[3] = {"staging B", "staging A", "staging C"};
  for (int i = 0; i < 3; ++i) {
    const Staging &staging = plan.staged[i];
    if (!staging.used)
      continue;
    CUresult r;
    blocks[i] = poolAllocate(staging.bytes, stream, r);
    if (!blocks[i]) {
      release();
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "%s: cannot allocate %llu bytes for a staged s8 "
                        "operand: %s",
                        fn, (unsigned long long)staging.bytes,
                        resultText(r).c_str());
    }
    // Block sizes are multiples of 16 bytes.
    if (staging.zero && (r = d.cuMemsetD32Async(blocks[i], 0, staging.bytes / 4,
                                                stream)) != CUDA_SUCCESS) {
      release();
      return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuMemsetD32Async: %s", fn,
                        resultText(r).c_str());
    }
    operands[i] = reinterpret_cast<void *>(blocks[i]);
    if (mprt_status st = runCopy(fn, what[i], s, d, staging.in, original[i],
                                 operands[i], stream)) {
      release();
      return st;
    }
  }

  // C += ..., or C = round(...) without reading C.
  float alphaF = 1, betaF = rounded ? 0 : 1;
  int32_t alphaI = 1, betaI = 1;
  const void *alpha = type == MPRT_GEMM_S8 ? (const void *)&alphaI : &alphaF;
  const void *beta = type == MPRT_GEMM_S8 ? (const void *)&betaI : &betaF;
  cublasStatus_t st = lt.cublasLtMatmul(
      s.handle, plan.desc, alpha, operands[0], plan.a, operands[1], plan.b,
      beta, operands[2], plan.c, operands[2], plan.c, &plan.algo,
      reinterpret_cast<void *>(workspace), kWorkspaceBytes,
      static_cast<cudaStream_t>(stream));
  if (st != CUBLAS_STATUS_SUCCESS) {
    release();
    matmulFailed = true;
    return mprt::fail(MPRT_ERROR_DEVICE, "%s: cublasLtMatmul: %s", fn,
                      statusText(lt, st).c_str());
  }
  mprt_status copied = MPRT_OK;
  if (plan.staged[2].used)
    copied = runCopy(fn, "copying C back", s, d, plan.staged[2].out,
                     operands[2], original[2], stream);
  release();
  return copied;
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
  CUstream cuStream = static_cast<CUstream>(stream);

  if (k == 0) {
    // A rounded C of an empty sum: zeros (cuBLASLt wants k > 0), row by row.
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i) {
        CUdeviceptr row = static_cast<CUdeviceptr>(c) +
                          static_cast<CUdeviceptr>((p * strideC + i * ldc) * 2);
        CUresult r =
            d->cuMemsetD16Async(row, 0, static_cast<size_t>(n), cuStream);
        if (r != CUDA_SUCCESS)
          return mprt::fail(MPRT_ERROR_DEVICE, "%s: cuMemsetD16Async: %s", fn,
                            resultText(r).c_str());
      }
    if (synchronous) {
      CUresult r = d->cuStreamSynchronize(cuStream);
      if (r != CUDA_SUCCESS)
        return mprt::fail(MPRT_ERROR_DEVICE,
                          "%s: cuStreamSynchronize failed: %s", fn,
                          resultText(r).c_str());
    }
    return MPRT_OK;
  }
  // Every matrix of a batch is as aligned as the first only when the
  // strides keep it so: alignments count them.
  int64_t inBytes = type == MPRT_GEMM_F32 ? 4 : type == MPRT_GEMM_S8 ? 1 : 2;
  int64_t outBytes = rounded ? 2 : 4;
  uint32_t alignA = alignmentOf(a, strideA * inBytes),
           alignB = alignmentOf(b, strideB * inBytes),
           alignC = alignmentOf(c, strideC * outBytes);
  // f32 on TF32 tensor cores while the switch is on; f16 and bf16 always
  // with f32 compute, s8 with s32.
  cublasComputeType_t compute = type == MPRT_GEMM_S8 ? CUBLAS_COMPUTE_32I
                                : type == MPRT_GEMM_F32 && tf32Enabled()
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  PlanKey key{m,      n,       k,       lda,
              ldb,    ldc,     flags,   type,
              batch,  strideA, strideB, strideC,
              alignA, alignB,  alignC,  static_cast<int32_t>(compute)};
  auto it = s.plans.find(key);
  if (it == s.plans.end()) {
    Plan plan;
    if (mprt_status st = makePlan(fn, s, key, /*stageAll=*/false, plan))
      return st; // the descriptors leak; a failing shape is not retried often
    it = s.plans.emplace(key, plan).first;
  }
  CUdeviceptr &workspace = s.workspaces[stream];
  if (!workspace) {
    CUresult r;
    workspace = poolAllocate(kWorkspaceBytes, cuStream, r);
    if (!workspace)
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "%s: cannot allocate the %llu-byte "
                        "cuBLASLt workspace: %s",
                        fn, (unsigned long long)kWorkspaceBytes,
                        resultText(r).c_str());
  }
  bool matmulFailed = false;
  mprt_status st = runPlan(fn, s, *d, it->second, a, b, c, type, rounded,
                           cuStream, workspace, matmulFailed);
  if (st != MPRT_OK && matmulFailed && type == MPRT_GEMM_S8 &&
      readsInPlace(it->second)) {
    // The heuristic's algorithm refused operands read in place: stage them
    // all from now on (C is untouched when cublasLtMatmul refuses).
    mprt::clearError();
    Plan plan;
    if (mprt_status again = makePlan(fn, s, key, /*stageAll=*/true, plan))
      return again;
    it->second = plan;
    st = runPlan(fn, s, *d, it->second, a, b, c, type, rounded, cuStream,
                 workspace, matmulFailed);
  }
  if (st != MPRT_OK)
    return st;
  if (synchronous) {
    // Faults of the product itself (a bad address) surface here.
    CUresult r = d->cuStreamSynchronize(cuStream);
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

extern "C" mprt_status mprt_cuda_release_cached(void) {
  mprt::clearError();
  const Driver *d = driver();
  if (!d)
    return MPRT_OK; // nothing can have been allocated
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (d->cuCtxPushCurrent(primaryContext()) != CUDA_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE,
                        "mprt_cuda_release_cached: no context");
    // Freed on the null stream after a context-wide wait: the workspaces'
    // streams may be gone already (the JIT's streams live for one call).
    CUresult r = d->cuCtxSynchronize();
    for (auto &entry : s.workspaces) {
      CUresult ignored;
      poolFree(entry.second, nullptr, ignored);
    }
    s.workspaces.clear();
    if (s.syncStream && r == CUDA_SUCCESS)
      r = d->cuStreamDestroy(s.syncStream);
    s.syncStream = nullptr;
    CUcontext previous;
    d->cuCtxPopCurrent(&previous);
    if (r != CUDA_SUCCESS)
      return mprt::fail(MPRT_ERROR_DEVICE, "mprt_cuda_release_cached: %s",
                        resultText(r).c_str());
  }
  return mprt_cuda_pool_trim();
}

extern "C" void mprt_cuda_gemm_set_tf32(int32_t enabled) {
  tf32Mode = enabled ? 1 : 0;
}

extern "C" int32_t mprt_cuda_gemm_tf32(void) { return tf32Enabled() ? 1 : 0; }
