//===- cublaslt.cpp - A cuBLASLt stand-in for machines without a GPU ------===//
//
// libcublasLt.so.13 next to the driver stand-in (driver.cpp), linked
// against it: device memory is host memory there, so products really run,
// on the host (f32, f16, bf16 and s8 inputs; f32, f16, bf16, s32 and s8
// results). Before that, what a real cuBLASLt requires of the host side is
// checked, and violations are recorded with the driver stand-in's (same log
// and summary): handles and descriptors created and not destroyed,
// attribute values of the documented size, layouts that agree with the
// operation (op(A) m x k, op(B) k x n, C and D m x n, one batch count, a
// leading dimension that keeps columns apart), every operand and the
// workspace inside live device allocations for their whole extent (rows,
// columns, ld, batch count and stride, element size), operands aligned as
// the algorithm from the heuristic assumes (the preference's minimum
// alignments, 256 bytes unless set), D not overlapping A or B, nor its own
// batches.
//
// CUBLAS_COMPUTE_32F_FAST_TF32 (f32 inputs only) is emulated: each element
// of A and B is rounded to TF32 (a 10-bit significand, to nearest, ties to
// even) before the f32 products and sums, as on sm_80 and newer; on a device
// that reports an older compute capability (MPRT_CUDA_STANDIN_COMPUTE_
// CAPABILITY), which has no TF32 tensor cores, the product stays f32.
//
// The heuristic returns one algorithm, except that s8 products are only
// offered in the "TN" form (op(A) = T, op(B) = N) with m, k and leading
// dimensions multiples of 4 and 4-byte aligned operands, as int8
// tensor-core kernels require: libmprt_cuda's padded copies then run too.
//
//===----------------------------------------------------------------------===//

#include "standin.h"

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Descriptors
//===----------------------------------------------------------------------===//

struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t order = CUBLASLT_ORDER_COL;
  int32_t batch = 1;
  int64_t stride = 0;
};

struct MatmulDesc {
  cublasComputeType_t compute;
  cudaDataType scale;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

struct TransformDesc {
  cudaDataType scale;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
};

struct Preference {
  uint64_t maxWorkspace = 0;
  /// Minimum alignments of A, B, C and D the algorithms may assume.
  uint32_t alignment[4] = {256, 256, 256, 256};
};

/// What the heuristic writes into cublasLtMatmulAlgo_t::data: a tag and the
/// alignments it assumed.
constexpr uint64_t kAlgoTag = 0x6d702d7374616e64; // "mp-stand"

struct State {
  std::mutex mutex;
  std::unordered_set<const void *> handles;
  std::unordered_map<const void *, Layout> layouts;
  std::unordered_map<const void *, MatmulDesc> matmuls;
  std::unordered_map<const void *, TransformDesc> transforms;
  std::unordered_map<const void *, Preference> preferences;
};

State &state() {
  static State *s = new State; // used until exit
  return *s;
}

/// Records a violation of `function` and returns `status` for it to fail
/// with.
cublasStatus_t fail(cublasStatus_t status, const char *function,
                    const char *format, ...)
    __attribute__((format(printf, 3, 4)));
cublasStatus_t fail(cublasStatus_t status, const char *function,
                    const char *format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  mp_cuda_standin_violation(function, 0, "%s", message);
  return status;
}

/// Looks `key` up in `map`; records "`what` is not ..." when it is missing.
template <typename Map>
auto *lookup(Map &map, const void *key, const char *function,
             const char *what) {
  auto it = map.find(key);
  if (it == map.end()) {
    mp_cuda_standin_violation(
        function, 0, "%s %p was not created (or was destroyed)", what, key);
    return static_cast<decltype(&it->second)>(nullptr);
  }
  return &it->second;
}

bool checkHandle(State &s, cublasLtHandle_t handle, const char *function) {
  if (s.handles.count(handle))
    return true;
  mp_cuda_standin_violation(function, 0,
                            "handle %p is not from cublasLtCreate (or was "
                            "destroyed)",
                            (void *)handle);
  return false;
}

/// Copies an attribute value of exactly `size` bytes, as cuBLASLt demands.
template <typename T>
cublasStatus_t setValue(T &field, const void *buf, size_t sizeInBytes,
                        const char *function, const char *attribute) {
  if (!buf || sizeInBytes != sizeof(T))
    return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                "attribute %s takes %zu bytes, not %zu%s", attribute, sizeof(T),
                sizeInBytes, buf ? "" : " (and buf is NULL)");
  memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

/// The same for an enum field stored as a `Raw` integer.
template <typename Raw, typename T>
cublasStatus_t setAs(T &field, const void *buf, size_t sizeInBytes,
                     const char *function, const char *attribute) {
  Raw raw{};
  cublasStatus_t st = setValue(raw, buf, sizeInBytes, function, attribute);
  if (st == CUBLAS_STATUS_SUCCESS)
    field = static_cast<T>(raw);
  return st;
}

/// Accepts an attribute the stand-in does not interpret.
cublasStatus_t ignoreValue(const void *buf, size_t sizeInBytes,
                           const char *function) {
  if (!buf || sizeInBytes == 0)
    return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                "buf is NULL or sizeInBytes is 0");
  return CUBLAS_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Elements
//===----------------------------------------------------------------------===//

size_t elementSize(cudaDataType type) {
  switch (type) {
  case CUDA_R_8I:
    return 1;
  case CUDA_R_16F:
  case CUDA_R_16BF:
    return 2;
  case CUDA_R_32F:
  case CUDA_R_32I:
    return 4;
  case CUDA_R_64F:
    return 8;
  default:
    return 0;
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 31, mantissa = h & 1023;
  float value;
  if (exponent == 0)
    value = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    value = mantissa ? NAN : INFINITY;
  else
    value = std::ldexp(static_cast<float>(mantissa | 1024), exponent - 25);
  return sign ? -value : value;
}

/// Rounds to the nearest f16 (ties to even), with overflow to infinity.
uint16_t floatToHalf(float f) {
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (std::isnan(f))
    return sign | 0x7e00;
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  int exponent;
  float m = std::frexp(a, &exponent); // a = m * 2^exponent, m in [0.5, 1)
  uint32_t mantissa = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));
  if (mantissa == 2048) { // rounded up to the next power of two
    mantissa = 1024;
    ++exponent;
  }
  return sign | static_cast<uint16_t>((exponent + 14) << 10) |
         static_cast<uint16_t>(mantissa - 1024);
}

float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if (std::isnan(f))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

double load(cudaDataType type, const void *base, uint64_t index) {
  const char *p = static_cast<const char *>(base) + index * elementSize(type);
  switch (type) {
  case CUDA_R_8I:
    return *reinterpret_cast<const int8_t *>(p);
  case CUDA_R_16F:
    return halfToFloat(*reinterpret_cast<const uint16_t *>(p));
  case CUDA_R_16BF:
    return bf16ToFloat(*reinterpret_cast<const uint16_t *>(p));
  case CUDA_R_32F:
    return *reinterpret_cast<const float *>(p);
  case CUDA_R_32I:
    return *reinterpret_cast<const int32_t *>(p);
  case CUDA_R_64F:
    return *reinterpret_cast<const double *>(p);
  default:
    return 0;
  }
}

void store(cudaDataType type, void *base, uint64_t index, double v) {
  char *p = static_cast<char *>(base) + index * elementSize(type);
  switch (type) {
  case CUDA_R_8I:
    *reinterpret_cast<int8_t *>(p) =
        static_cast<int8_t>(std::clamp(std::nearbyint(v), -128.0, 127.0));
    break;
  case CUDA_R_16F:
    *reinterpret_cast<uint16_t *>(p) = floatToHalf(static_cast<float>(v));
    break;
  case CUDA_R_16BF:
    *reinterpret_cast<uint16_t *>(p) = floatToBf16(static_cast<float>(v));
    break;
  case CUDA_R_32F:
    *reinterpret_cast<float *>(p) = static_cast<float>(v);
    break;
  case CUDA_R_32I:
    // Integer products wrap like the tensor cores' 32-bit accumulators.
    *reinterpret_cast<int32_t *>(p) = static_cast<int32_t>(
        static_cast<uint32_t>(static_cast<int64_t>(std::nearbyint(v))));
    break;
  case CUDA_R_64F:
    *reinterpret_cast<double *>(p) = v;
    break;
  default:
    break;
  }
}

/// Rounds an f32 to TF32, what FAST_TF32 compute reads: the 13 low bits of
/// the significand go, to nearest, ties to even (a carry may reach the
/// exponent, and infinity). NaN and infinity stay as they are.
float roundToTf32(float f) {
  if (!std::isfinite(f))
    return f;
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits += 0xfffu + ((bits >> 13) & 1);
  bits &= ~0x1fffu;
  memcpy(&f, &bits, 4);
  return f;
}

/// Element offset of (row, col) of batch `p`.
uint64_t offset(const Layout &l, uint64_t row, uint64_t col, uint64_t p) {
  uint64_t inMatrix =
      l.order == CUBLASLT_ORDER_ROW ? row * l.ld + col : row + col * l.ld;
  return p * l.stride + inMatrix;
}

/// Bytes from the first element to one past the last of all batches.
uint64_t extentBytes(const Layout &l) {
  if (!l.rows || !l.cols || l.batch <= 0)
    return 0;
  uint64_t last = offset(l, l.rows - 1, l.cols - 1, l.batch - 1);
  return (last + 1) * elementSize(l.type);
}

/// Bytes one matrix of a batch spans.
uint64_t matrixBytes(const Layout &l) {
  Layout one = l;
  one.batch = 1;
  return extentBytes(one);
}

/// Checks what a layout can be checked for alone: a known type and order,
/// columns (rows) that do not overlap, a non-negative batch stride.
bool checkLayout(const Layout &l, const char *function, const char *name) {
  if (!elementSize(l.type)) {
    mp_cuda_standin_violation(function, 0, "%s: data type %d is not handled",
                              name, l.type);
    return false;
  }
  if (l.order != CUBLASLT_ORDER_COL && l.order != CUBLASLT_ORDER_ROW) {
    mp_cuda_standin_violation(function, 0, "%s: order %d is not handled", name,
                              l.order);
    return false;
  }
  uint64_t needed = l.order == CUBLASLT_ORDER_COL ? l.rows : l.cols;
  if (l.ld < 0 || (needed > 0 && static_cast<uint64_t>(l.ld) < needed)) {
    mp_cuda_standin_violation(function, 0,
                              "%s: ld %lld is less than its %s (%llu): "
                              "columns would overlap",
                              name, (long long)l.ld,
                              l.order == CUBLASLT_ORDER_COL ? "rows" : "cols",
                              (unsigned long long)needed);
    return false;
  }
  if (l.batch < 1 || l.stride < 0) {
    mp_cuda_standin_violation(function, 0,
                              "%s: batch count %d / stride %lld is not "
                              "supported",
                              name, l.batch, (long long)l.stride);
    return false;
  }
  return true;
}

bool overlaps(const void *a, uint64_t aBytes, const void *b, uint64_t bBytes) {
  uintptr_t x = reinterpret_cast<uintptr_t>(a),
            y = reinterpret_cast<uintptr_t>(b);
  return aBytes && bBytes && x < y + bBytes && y < x + aBytes;
}

/// Rows and columns of op(X).
void opShape(const Layout &l, int32_t op, uint64_t &rows, uint64_t &cols) {
  rows = op == CUBLAS_OP_N ? l.rows : l.cols;
  cols = op == CUBLAS_OP_N ? l.cols : l.rows;
}

/// The operation's shapes agree: op(A) m x k, op(B) k x n, C and D m x n,
/// one batch count.
bool checkShapes(const MatmulDesc &d, const Layout &a, const Layout &b,
                 const Layout &c, const Layout &dl, const char *function) {
  if (!checkLayout(a, function, "A") || !checkLayout(b, function, "B") ||
      !checkLayout(c, function, "C") || !checkLayout(dl, function, "D"))
    return false;
  uint64_t m, k, k2, n;
  opShape(a, d.transA, m, k);
  opShape(b, d.transB, k2, n);
  if (k != k2 || c.rows != m || c.cols != n || dl.rows != m || dl.cols != n) {
    mp_cuda_standin_violation(
        function, 0,
        "shapes do not agree: op(A) %llux%llu, op(B) %llux%llu, C %llux%llu, "
        "D %llux%llu",
        (unsigned long long)m, (unsigned long long)k, (unsigned long long)k2,
        (unsigned long long)n, (unsigned long long)c.rows,
        (unsigned long long)c.cols, (unsigned long long)dl.rows,
        (unsigned long long)dl.cols);
    return false;
  }
  if (a.batch != b.batch || a.batch != c.batch || a.batch != dl.batch) {
    mp_cuda_standin_violation(function, 0,
                              "batch counts differ: A %d, B %d, C %d, D %d",
                              a.batch, b.batch, c.batch, dl.batch);
    return false;
  }
  return true;
}

/// Type combinations the stand-in computes (what libmprt_cuda asks for and
/// a little more).
bool supported(const MatmulDesc &d, const Layout &a, const Layout &b,
               const Layout &c, const Layout &dl) {
  if (a.type != b.type || c.type != dl.type)
    return false;
  bool floating =
      a.type == CUDA_R_32F || a.type == CUDA_R_16F || a.type == CUDA_R_16BF;
  // FAST_TF32 takes f32 inputs and results only.
  if (d.compute == CUBLAS_COMPUTE_32F_FAST_TF32)
    return a.type == CUDA_R_32F && c.type == CUDA_R_32F &&
           d.scale == CUDA_R_32F;
  if (floating)
    return (d.compute == CUBLAS_COMPUTE_32F ||
            d.compute == CUBLAS_COMPUTE_32F_PEDANTIC) &&
           d.scale == CUDA_R_32F && (c.type == CUDA_R_32F || c.type == a.type);
  if (a.type == CUDA_R_8I)
    return (d.compute == CUBLAS_COMPUTE_32I ||
            d.compute == CUBLAS_COMPUTE_32I_PEDANTIC) &&
           ((d.scale == CUDA_R_32I && c.type == CUDA_R_32I) ||
            (d.scale == CUDA_R_32F && c.type == CUDA_R_8I));
  return false;
}

/// D = alpha op(A) op(B) + beta C, one batch at a time: op(A) and op(B) are
/// widened into dense column-major copies (rounded to TF32 for FAST_TF32 on
/// a device with TF32 tensor cores), and columns of D are computed eight at
/// a time so that each column of op(A) is read once per eight.
void multiply(const MatmulDesc &d, double alpha, const void *A, const Layout &a,
              const void *B, const Layout &b, double beta, const void *C,
              const Layout &c, void *D, const Layout &dl) {
  uint64_t m, k, k2, n;
  opShape(a, d.transA, m, k);
  opShape(b, d.transB, k2, n);
  bool integer = a.type == CUDA_R_8I;
  // TF32 tensor cores came with sm_80; older devices compute in f32.
  bool tf32 = d.compute == CUBLAS_COMPUTE_32F_FAST_TF32 &&
              mp_cuda_standin_compute_capability() >= 80;
  std::vector<float> af(m * k), bf(k * n), acc(m * 8);
  std::vector<int64_t> accI(integer ? m * 8 : 0);
  for (int32_t p = 0; p < a.batch; ++p) {
    for (uint64_t l = 0; l < k; ++l)
      for (uint64_t i = 0; i < m; ++i)
        af[i + l * m] = static_cast<float>(load(
            a.type, A,
            d.transA == CUBLAS_OP_N ? offset(a, i, l, p) : offset(a, l, i, p)));
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t l = 0; l < k; ++l)
        bf[l + j * k] = static_cast<float>(load(
            b.type, B,
            d.transB == CUBLAS_OP_N ? offset(b, l, j, p) : offset(b, j, l, p)));
    if (tf32) {
      for (float &x : af)
        x = roundToTf32(x);
      for (float &x : bf)
        x = roundToTf32(x);
    }
    for (uint64_t j0 = 0; j0 < n; j0 += 8) {
      uint64_t width = std::min<uint64_t>(8, n - j0);
      if (integer) {
        // s8 products are exact in int64 (k < 2^40); they wrap at the store.
        std::fill(accI.begin(), accI.end(), 0);
        for (uint64_t l = 0; l < k; ++l)
          for (uint64_t jj = 0; jj < width; ++jj) {
            int64_t bv = static_cast<int64_t>(bf[l + (j0 + jj) * k]);
            const float *__restrict column = &af[l * m];
            int64_t *__restrict out = &accI[jj * m];
            for (uint64_t i = 0; i < m; ++i)
              out[i] += static_cast<int64_t>(column[i]) * bv;
          }
      } else {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (uint64_t l = 0; l < k; ++l)
          for (uint64_t jj = 0; jj < width; ++jj) {
            float bv = bf[l + (j0 + jj) * k];
            const float *__restrict column = &af[l * m];
            float *__restrict out = &acc[jj * m];
            for (uint64_t i = 0; i < m; ++i)
              out[i] += column[i] * bv;
          }
      }
      for (uint64_t jj = 0; jj < width; ++jj)
        for (uint64_t i = 0; i < m; ++i) {
          double product = integer ? static_cast<double>(accI[jj * m + i])
                                   : static_cast<double>(acc[jj * m + i]);
          double v = alpha * product;
          if (beta != 0)
            v += beta * load(c.type, C, offset(c, i, j0 + jj, p));
          store(dl.type, D, offset(dl, i, j0 + jj, p), v);
        }
    }
  }
}

/// Reads alpha or beta (host pointer mode) as a double.
double scalar(cudaDataType scale, const void *p) {
  return scale == CUDA_R_32I
             ? *static_cast<const int32_t *>(p)
             : (scale == CUDA_R_64F ? *static_cast<const double *>(p)
                                    : *static_cast<const float *>(p));
}

/// Checks `ptr` against the driver stand-in's live allocations for the
/// operand's whole extent, and its alignment.
bool checkOperand(const void *ptr, const Layout &l, uint32_t alignment,
                  const char *function, const char *name) {
  uint64_t bytes = extentBytes(l);
  if (!ptr) {
    mp_cuda_standin_violation(function, 1, "%s is NULL", name);
    return false;
  }
  uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  size_t size = elementSize(l.type);
  if (address % size || (alignment && address % alignment)) {
    mp_cuda_standin_violation(
        function, 1,
        "%s %p is not %u-byte aligned, as the algorithm from "
        "cublasLtMatmulAlgoGetHeuristic assumes (set "
        "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_%s_BYTES to allow less)",
        name, ptr, std::max<uint32_t>(alignment, size), name);
    return false;
  }
  char what[128];
  snprintf(what, sizeof(what),
           "%s (%llux%llu, ld %lld, batch %d, stride %lld, %zu-byte elements)",
           name, (unsigned long long)l.rows, (unsigned long long)l.cols,
           (long long)l.ld, l.batch, (long long)l.stride, size);
  return bytes == 0 || mp_cuda_standin_check_range(ptr, bytes, function, what);
}

const char *statusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

#define MP_LT_LOCK                                                             \
  State &s = state();                                                          \
  std::lock_guard<std::mutex> lock(s.mutex)

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Handle, status, version
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle) {
  MP_LT_LOCK;
  if (!lightHandle)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtCreate",
                "lightHandle is NULL");
  *lightHandle = reinterpret_cast<cublasLtHandle_t>(new char);
  s.handles.insert(*lightHandle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  MP_LT_LOCK;
  if (!checkHandle(s, lightHandle, "cublasLtDestroy"))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  s.handles.erase(lightHandle);
  delete reinterpret_cast<char *>(lightHandle);
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
  return statusName(status);
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "the library was not initialized";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the requested functionality is not supported";
  default:
    return statusName(status);
  }
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

//===----------------------------------------------------------------------===//
// Matrix layouts
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  MP_LT_LOCK;
  if (!matLayout)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutCreate",
                "matLayout is NULL");
  *matLayout = new cublasLtMatrixLayoutOpaque_t();
  s.layouts[*matLayout] = Layout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  MP_LT_LOCK;
  if (!lookup(s.layouts, matLayout, "cublasLtMatrixLayoutDestroy", "layout"))
    return CUBLAS_STATUS_INVALID_VALUE;
  s.layouts.erase(matLayout);
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t sizeInBytes) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatrixLayoutSetAttribute";
  Layout *l = lookup(s.layouts, matLayout, fn, "layout");
  if (!l)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_TYPE:
    return setAs<uint32_t>(l->type, buf, sizeInBytes, fn, "TYPE");
  case CUBLASLT_MATRIX_LAYOUT_ORDER:
    return setValue(l->order, buf, sizeInBytes, fn, "ORDER");
  case CUBLASLT_MATRIX_LAYOUT_ROWS:
    return setValue(l->rows, buf, sizeInBytes, fn, "ROWS");
  case CUBLASLT_MATRIX_LAYOUT_COLS:
    return setValue(l->cols, buf, sizeInBytes, fn, "COLS");
  case CUBLASLT_MATRIX_LAYOUT_LD:
    return setValue(l->ld, buf, sizeInBytes, fn, "LD");
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    return setValue(l->batch, buf, sizeInBytes, fn, "BATCH_COUNT");
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    return setValue(l->stride, buf, sizeInBytes, fn, "STRIDED_BATCH_OFFSET");
  default:
    return ignoreValue(buf, sizeInBytes, fn);
  }
}

//===----------------------------------------------------------------------===//
// Matmul descriptors and preferences
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  MP_LT_LOCK;
  if (!matmulDesc)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescCreate",
                "matmulDesc is NULL");
  *matmulDesc = new cublasLtMatmulDescOpaque_t();
  s.matmuls[*matmulDesc] = MatmulDesc{computeType, scaleType};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  MP_LT_LOCK;
  if (!lookup(s.matmuls, matmulDesc, "cublasLtMatmulDescDestroy",
              "matmul descriptor"))
    return CUBLAS_STATUS_INVALID_VALUE;
  s.matmuls.erase(matmulDesc);
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatmulDescSetAttribute";
  MatmulDesc *d = lookup(s.matmuls, matmulDesc, fn, "matmul descriptor");
  if (!d)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return setValue(d->transA, buf, sizeInBytes, fn, "TRANSA");
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return setValue(d->transB, buf, sizeInBytes, fn, "TRANSB");
  case CUBLASLT_MATMUL_DESC_POINTER_MODE:
    return setValue(d->pointerMode, buf, sizeInBytes, fn, "POINTER_MODE");
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return setValue(d->epilogue, buf, sizeInBytes, fn, "EPILOGUE");
  case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
    return setAs<int32_t>(d->compute, buf, sizeInBytes, fn, "COMPUTE_TYPE");
  case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
    return setAs<int32_t>(d->scale, buf, sizeInBytes, fn, "SCALE_TYPE");
  default:
    return ignoreValue(buf, sizeInBytes, fn);
  }
}

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  MP_LT_LOCK;
  if (!pref)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceCreate",
                "pref is NULL");
  *pref = new cublasLtMatmulPreferenceOpaque_t();
  s.preferences[*pref] = Preference();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  MP_LT_LOCK;
  if (!lookup(s.preferences, pref, "cublasLtMatmulPreferenceDestroy",
              "preference"))
    return CUBLAS_STATUS_INVALID_VALUE;
  s.preferences.erase(pref);
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t sizeInBytes) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatmulPreferenceSetAttribute";
  Preference *p = lookup(s.preferences, pref, fn, "preference");
  if (!p)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return setValue(p->maxWorkspace, buf, sizeInBytes, fn,
                    "MAX_WORKSPACE_BYTES");
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    return setValue(
        p->alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf,
        sizeInBytes, fn, "MIN_ALIGNMENT_*_BYTES");
  case CUBLASLT_MATMUL_PREF_SEARCH_MODE: {
    uint32_t mode;
    return setValue(mode, buf, sizeInBytes, fn, "SEARCH_MODE");
  }
  default:
    return ignoreValue(buf, sizeInBytes, fn);
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
    cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    int *returnAlgoCount) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatmulAlgoGetHeuristic";
  if (!checkHandle(s, lightHandle, fn))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  MatmulDesc *d = lookup(s.matmuls, operationDesc, fn, "matmul descriptor");
  Layout *a = lookup(s.layouts, Adesc, fn, "layout A");
  Layout *b = lookup(s.layouts, Bdesc, fn, "layout B");
  Layout *c = lookup(s.layouts, Cdesc, fn, "layout C");
  Layout *dl = lookup(s.layouts, Ddesc, fn, "layout D");
  Preference *p = lookup(s.preferences, preference, fn, "preference");
  if (!d || !a || !b || !c || !dl || !p)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "requestedAlgoCount %d, results %p, count %p",
                requestedAlgoCount, (void *)heuristicResultsArray,
                (void *)returnAlgoCount);
  if (!checkShapes(*d, *a, *b, *c, *dl, fn))
    return CUBLAS_STATUS_INVALID_VALUE;
  *returnAlgoCount = 0;
  if (!supported(*d, *a, *b, *c, *dl))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // int8 tensor-core kernels take the "TN" form only, with m, k and the
  // leading dimensions multiples of 4 and 4-byte aligned operands (the
  // cublasLtMatmul documentation on IMMA kernels with regular ordering).
  if (a->type == CUDA_R_8I) {
    uint64_t m = c->rows, k = a->rows; // A is stored k x m (transposed)
    bool lds = a->ld % 4 == 0 && b->ld % 4 == 0 && c->ld % 4 == 0;
    bool aligned =
        p->alignment[0] >= 4 && p->alignment[1] >= 4 && p->alignment[2] >= 4;
    if (d->transA != CUBLAS_OP_T || d->transB != CUBLAS_OP_N || m % 4 ||
        k % 4 || !lds || !aligned)
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  cublasLtMatmulHeuristicResult_t &result = heuristicResultsArray[0];
  memset(&result, 0, sizeof(result));
  result.algo.data[0] = kAlgoTag;
  for (int i = 0; i < 4; ++i)
    result.algo.data[1 + i] = p->alignment[i];
  // Some workspace, so that the matmul's workspace is checked too.
  result.workspaceSize = std::min<uint64_t>(p->maxWorkspace, 1 << 20);
  result.algo.data[5] = result.workspaceSize;
  result.state = CUBLAS_STATUS_SUCCESS;
  result.wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceSizeInBytes,
               cudaStream_t stream) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatmul";
  if (!checkHandle(s, lightHandle, fn))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  MatmulDesc *d = lookup(s.matmuls, computeDesc, fn, "matmul descriptor");
  Layout *a = lookup(s.layouts, Adesc, fn, "layout A");
  Layout *b = lookup(s.layouts, Bdesc, fn, "layout B");
  Layout *c = lookup(s.layouts, Cdesc, fn, "layout C");
  Layout *dl = lookup(s.layouts, Ddesc, fn, "layout D");
  if (!d || !a || !b || !c || !dl)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!checkShapes(*d, *a, *b, *c, *dl, fn))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!supported(*d, *a, *b, *c, *dl))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (d->pointerMode != CUBLASLT_POINTER_MODE_HOST)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "pointer mode %d: the stand-in reads alpha and beta on the "
                "host only",
                d->pointerMode);
  if (!alpha || !beta)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, "alpha or beta is NULL");
  uint32_t alignment[4] = {256, 256, 256, 256};
  if (algo) {
    if (algo->data[0] != kAlgoTag)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "algo %p is not one cublasLtMatmulAlgoGetHeuristic "
                  "returned",
                  (const void *)algo);
    for (int i = 0; i < 4; ++i)
      alignment[i] = static_cast<uint32_t>(algo->data[1 + i]);
    if (workspaceSizeInBytes < algo->data[5])
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "the algorithm needs %llu bytes of workspace, %zu given",
                  (unsigned long long)algo->data[5], workspaceSizeInBytes);
  }
  double alphaValue = scalar(d->scale, alpha),
         betaValue = scalar(d->scale, beta);
  if (!checkOperand(A, *a, alignment[0], fn, "A") ||
      !checkOperand(B, *b, alignment[1], fn, "B") ||
      !checkOperand(D, *dl, alignment[3], fn, "D"))
    return CUBLAS_STATUS_INVALID_VALUE;
  // C is read when beta is not 0; with C == D the layouts must agree.
  if (betaValue != 0 && !checkOperand(C, *c, alignment[2], fn, "C"))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (C == D && (c->ld != dl->ld || c->order != dl->order ||
                 c->type != dl->type || c->stride != dl->stride))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "C and D are the same memory but their layouts differ");
  if (overlaps(D, extentBytes(*dl), A, extentBytes(*a)) ||
      overlaps(D, extentBytes(*dl), B, extentBytes(*b)))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, "D %p overlaps A %p or B %p",
                D, A, B);
  if (dl->batch > 1 &&
      static_cast<uint64_t>(dl->stride) * elementSize(dl->type) <
          matrixBytes(*dl))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "the batches of D overlap (stride %lld elements, one matrix "
                "spans %llu bytes)",
                (long long)dl->stride, (unsigned long long)matrixBytes(*dl));
  if (workspaceSizeInBytes) {
    if (!workspace)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "workspace is NULL but its size is %zu",
                  workspaceSizeInBytes);
    if (reinterpret_cast<uintptr_t>(workspace) % 256)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "workspace %p is not 256-byte aligned", workspace);
    if (!mp_cuda_standin_check_range(workspace, workspaceSizeInBytes, fn,
                                     "workspace"))
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!mp_cuda_standin_check_stream(reinterpret_cast<CUstream>(stream), fn))
    return CUBLAS_STATUS_INVALID_VALUE;
  multiply(*d, alphaValue, A, *a, B, *b, betaValue, C, *c, D, *dl);
  return CUBLAS_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Matrix transforms
//===----------------------------------------------------------------------===//

cublasStatus_t
cublasLtMatrixTransformDescCreate(cublasLtMatrixTransformDesc_t *transformDesc,
                                  cudaDataType scaleType) {
  MP_LT_LOCK;
  if (!transformDesc)
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasLtMatrixTransformDescCreate", "transformDesc is NULL");
  *transformDesc = new cublasLtMatrixTransformDescOpaque_t();
  s.transforms[*transformDesc] = TransformDesc{scaleType};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixTransformDescDestroy(
    cublasLtMatrixTransformDesc_t transformDesc) {
  MP_LT_LOCK;
  if (!lookup(s.transforms, transformDesc, "cublasLtMatrixTransformDescDestroy",
              "transform descriptor"))
    return CUBLAS_STATUS_INVALID_VALUE;
  s.transforms.erase(transformDesc);
  delete transformDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixTransformDescSetAttribute(
    cublasLtMatrixTransformDesc_t transformDesc,
    cublasLtMatrixTransformDescAttributes_t attr, const void *buf,
    size_t sizeInBytes) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatrixTransformDescSetAttribute";
  TransformDesc *t =
      lookup(s.transforms, transformDesc, fn, "transform descriptor");
  if (!t)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE:
    return setAs<int32_t>(t->scale, buf, sizeInBytes, fn, "SCALE_TYPE");
  case CUBLASLT_MATRIX_TRANSFORM_DESC_POINTER_MODE:
    return setValue(t->pointerMode, buf, sizeInBytes, fn, "POINTER_MODE");
  case CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA:
    return setValue(t->transA, buf, sizeInBytes, fn, "TRANSA");
  case CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB:
    return setValue(t->transB, buf, sizeInBytes, fn, "TRANSB");
  default:
    return ignoreValue(buf, sizeInBytes, fn);
  }
}

/// C = alpha op(A) + beta op(B); B (and its layout) may be NULL when beta
/// is 0.
cublasStatus_t cublasLtMatrixTransform(
    cublasLtHandle_t lightHandle, cublasLtMatrixTransformDesc_t transformDesc,
    const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
    const void *beta, const void *B, cublasLtMatrixLayout_t Bdesc, void *C,
    cublasLtMatrixLayout_t Cdesc, cudaStream_t stream) {
  MP_LT_LOCK;
  constexpr const char *fn = "cublasLtMatrixTransform";
  if (!checkHandle(s, lightHandle, fn))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  TransformDesc *t =
      lookup(s.transforms, transformDesc, fn, "transform descriptor");
  Layout *a = lookup(s.layouts, Adesc, fn, "layout A");
  Layout *c = lookup(s.layouts, Cdesc, fn, "layout C");
  if (!t || !a || !c)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (t->pointerMode != CUBLASLT_POINTER_MODE_HOST)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "pointer mode %d: the stand-in reads alpha and beta on the "
                "host only",
                t->pointerMode);
  if (!alpha || !beta)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, "alpha or beta is NULL");
  double alphaValue = scalar(t->scale, alpha),
         betaValue = scalar(t->scale, beta);
  Layout *b = nullptr;
  if (betaValue != 0 || B || Bdesc) {
    b = lookup(s.layouts, Bdesc, fn, "layout B");
    if (!b)
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!checkLayout(*a, fn, "A") || !checkLayout(*c, fn, "C") ||
      (b && !checkLayout(*b, fn, "B")))
    return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t rows, cols;
  opShape(*a, t->transA, rows, cols);
  if (rows != c->rows || cols != c->cols || a->batch != c->batch)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "op(A) is %llux%llu (batch %d) but C is %llux%llu (batch %d)",
                (unsigned long long)rows, (unsigned long long)cols, a->batch,
                (unsigned long long)c->rows, (unsigned long long)c->cols,
                c->batch);
  if (b) {
    uint64_t bRows, bCols;
    opShape(*b, t->transB, bRows, bCols);
    if (bRows != c->rows || bCols != c->cols || b->batch != c->batch)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "op(B) is %llux%llu (batch %d) but C is %llux%llu",
                  (unsigned long long)bRows, (unsigned long long)bCols,
                  b->batch, (unsigned long long)c->rows,
                  (unsigned long long)c->cols);
  }
  if (!checkOperand(A, *a, 0, fn, "A") || !checkOperand(C, *c, 0, fn, "C") ||
      (b && !checkOperand(B, *b, 0, fn, "B")))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (overlaps(C, extentBytes(*c), A, extentBytes(*a)) ||
      (b && overlaps(C, extentBytes(*c), B, extentBytes(*b))))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, "C %p overlaps A %p or B %p",
                C, A, B);
  if (!mp_cuda_standin_check_stream(reinterpret_cast<CUstream>(stream), fn))
    return CUBLAS_STATUS_INVALID_VALUE;
  for (int32_t p = 0; p < c->batch; ++p)
    for (uint64_t j = 0; j < c->cols; ++j)
      for (uint64_t i = 0; i < c->rows; ++i) {
        auto at = [&](const Layout &l, int32_t op) {
          return op == CUBLAS_OP_N ? offset(l, i, j, p) : offset(l, j, i, p);
        };
        double v = alphaValue * load(a->type, A, at(*a, t->transA));
        if (b && betaValue != 0)
          v += betaValue * load(b->type, B, at(*b, t->transB));
        store(c->type, C, offset(*c, i, j, p), v);
      }
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
