//===- memref.cpp - strided memref copies for compiled code ---------------===//
//
// Lowered code copies between strided buffers (tensor.pad's interior, a
// subview) with a call of memrefCopy. MLIR ships it in
// libmlir_c_runner_utils, which needs libMLIR and libLLVM; this one needs
// nothing, so mp-run's device bundle carries no MLIR library.
//
//===----------------------------------------------------------------------===//

#include "mprt/mprt.h"

#include <cstring>
#include <vector>

namespace {

/// A ranked descriptor's fields, read from its memory layout.
struct Strided {
  char *data; // aligned pointer, already advanced by the offset
  const int64_t *sizes;
  const int64_t *strides;
};

Strided view(const mprt_unranked_memref &m, int64_t elementBytes) {
  auto *fields = static_cast<char *>(m.descriptor);
  char *aligned;
  int64_t offset;
  std::memcpy(&aligned, fields + sizeof(void *), sizeof(aligned));
  std::memcpy(&offset, fields + 2 * sizeof(void *), sizeof(offset));
  auto *sizes = reinterpret_cast<const int64_t *>(fields + 2 * sizeof(void *) +
                                                  sizeof(int64_t));
  return {aligned + offset * elementBytes, sizes, sizes + m.rank};
}

} // namespace

extern "C" void mprt_memref_copy(int64_t elementBytes,
                                 const mprt_unranked_memref *src,
                                 const mprt_unranked_memref *dst) {
  int64_t rank = src->rank;
  Strided s = view(*src, elementBytes), d = view(*dst, elementBytes);
  if (rank == 0) {
    std::memcpy(d.data, s.data, elementBytes);
    return;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (s.sizes[i] == 0)
      return;
  // The innermost dimension is copied in one memcpy when both sides are
  // contiguous there; an odometer walks the outer indices.
  int64_t inner = rank - 1;
  bool contiguous = s.strides[inner] == 1 && d.strides[inner] == 1;
  std::vector<int64_t> index(rank, 0);
  int64_t srcOffset = 0, dstOffset = 0;
  while (true) {
    if (contiguous) {
      std::memcpy(d.data + dstOffset * elementBytes,
                  s.data + srcOffset * elementBytes,
                  s.sizes[inner] * elementBytes);
    } else {
      for (int64_t j = 0; j < s.sizes[inner]; ++j)
        std::memcpy(d.data + (dstOffset + j * d.strides[inner]) * elementBytes,
                    s.data + (srcOffset + j * s.strides[inner]) * elementBytes,
                    elementBytes);
    }
    int64_t dim = inner - 1;
    for (; dim >= 0; --dim) {
      srcOffset += s.strides[dim];
      dstOffset += d.strides[dim];
      if (++index[dim] < s.sizes[dim])
        break;
      srcOffset -= s.strides[dim] * s.sizes[dim];
      dstOffset -= d.strides[dim] * d.sizes[dim];
      index[dim] = 0;
    }
    if (dim < 0)
      return;
  }
}
