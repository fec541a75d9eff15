//===- tensor.cpp - Dense tensors owned by the runtime --------------------===//

#include "internal.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace {

struct DtypeInfo {
  const char *name;
  size_t size;
};

// Indexed by mprt_dtype.
constexpr DtypeInfo kDtypes[MPRT_DTYPE_COUNT] = {
    {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f64", 8},
    {"i32", 4}, {"i64", 8}, {"u8", 1},   {"i8", 1},
};

} // namespace

namespace mprt {

bool isValidDtype(mprt_dtype dtype) {
  return static_cast<unsigned>(dtype) < MPRT_DTYPE_COUNT;
}

bool computeByteSize(mprt_dtype dtype, size_t rank, const int64_t *shape,
                     uint64_t &numElements, uint64_t &byteSize) {
  // Sizes must fit int64 (NumPy's intp) and size_t; INT64_MAX bounds both
  // on the 64-bit hosts this runs on, and keeps offsets signed-safe.
  uint64_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(shape[i]),
                               &elements) ||
        elements > static_cast<uint64_t>(INT64_MAX))
      return false;
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(elements, kDtypes[dtype].size, &bytes) ||
      bytes > static_cast<uint64_t>(INT64_MAX) || bytes > SIZE_MAX)
    return false;
  numElements = elements;
  byteSize = bytes;
  return true;
}

mprt_status createTensor(mprt_dtype dtype, size_t rank, const int64_t *shape,
                         bool zeroFill, const char *label, mprt_tensor **out) {
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT, "%s: output pointer is NULL", label);
  *out = nullptr;
  if (!isValidDtype(dtype))
    return fail(MPRT_ERROR_DTYPE, "%s: invalid dtype value %d", label,
                static_cast<int>(dtype));
  if (rank > MPRT_MAX_RANK)
    return fail(MPRT_ERROR_SHAPE, "%s: rank %zu exceeds the maximum of %d",
                label, rank, MPRT_MAX_RANK);
  if (rank > 0 && !shape)
    return fail(MPRT_ERROR_ARGUMENT, "%s: shape is NULL for rank %zu", label,
                rank);
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 0)
      return fail(MPRT_ERROR_SHAPE, "%s: dimension %zu is negative (%lld)",
                  label, i, static_cast<long long>(shape[i]));
  uint64_t numElements, byteSize;
  if (!computeByteSize(dtype, rank, shape, numElements, byteSize))
    return fail(MPRT_ERROR_SHAPE,
                "%s: the byte size of a %s tensor of this shape overflows",
                label, kDtypes[dtype].name);

  auto *tensor = new (std::nothrow) mprt_tensor();
  if (!tensor)
    return fail(MPRT_ERROR_OUT_OF_MEMORY, "%s: out of memory", label);
  // One byte at least, so that data is never NULL for empty tensors.
  size_t allocation = byteSize ? static_cast<size_t>(byteSize) : 1;
  tensor->data = zeroFill ? calloc(allocation, 1) : malloc(allocation);
  if (!tensor->data) {
    delete tensor;
    return fail(MPRT_ERROR_OUT_OF_MEMORY,
                "%s: out of memory allocating %llu bytes", label,
                static_cast<unsigned long long>(byteSize));
  }
  tensor->dtype = dtype;
  tensor->rank = rank;
  for (size_t i = 0; i < rank; ++i)
    tensor->shape[i] = shape[i];
  tensor->numElements = static_cast<size_t>(numElements);
  tensor->byteSize = static_cast<size_t>(byteSize);
  *out = tensor;
  return MPRT_OK;
}

} // namespace mprt

using namespace mprt;

extern "C" {

const char *mprt_dtype_name(mprt_dtype dtype) {
  return isValidDtype(dtype) ? kDtypes[dtype].name : nullptr;
}

size_t mprt_dtype_size(mprt_dtype dtype) {
  return isValidDtype(dtype) ? kDtypes[dtype].size : 0;
}

mprt_status mprt_tensor_create(mprt_dtype dtype, size_t rank,
                               const int64_t *shape, mprt_tensor **out) {
  clearError();
  return createTensor(dtype, rank, shape, /*zeroFill=*/true,
                      "mprt_tensor_create", out);
}

mprt_status mprt_tensor_copy(const mprt_tensor *src, mprt_tensor **out) {
  clearError();
  if (out)
    *out = nullptr;
  if (!src)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_tensor_copy: source is NULL");
  mprt_status status =
      createTensor(src->dtype, src->rank, src->shape,
                   /*zeroFill=*/false, "mprt_tensor_copy", out);
  if (status != MPRT_OK)
    return status;
  memcpy((*out)->data, src->data, src->byteSize);
  return MPRT_OK;
}

void mprt_tensor_free(mprt_tensor *tensor) {
  if (!tensor)
    return;
  free(tensor->data);
  delete tensor;
}

mprt_dtype mprt_tensor_dtype(const mprt_tensor *tensor) {
  return tensor ? tensor->dtype : MPRT_DTYPE_F32;
}

size_t mprt_tensor_rank(const mprt_tensor *tensor) {
  return tensor ? tensor->rank : 0;
}

const int64_t *mprt_tensor_shape(const mprt_tensor *tensor) {
  return tensor ? tensor->shape : nullptr;
}

size_t mprt_tensor_num_elements(const mprt_tensor *tensor) {
  return tensor ? tensor->numElements : 0;
}

size_t mprt_tensor_byte_size(const mprt_tensor *tensor) {
  return tensor ? tensor->byteSize : 0;
}

void *mprt_tensor_data(const mprt_tensor *tensor) {
  return tensor ? tensor->data : nullptr;
}

} // extern "C"
