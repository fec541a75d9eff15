//===- internal.h - libmprt implementation details --------------*- C++ -*-===//
//
// Shared between the runtime's source files and its unit tests; not installed.
// Everything here reports errors the way the C API does: it returns an
// mprt_status and leaves the message in the thread's last-error slot.
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_SRC_INTERNAL_H
#define MPRT_SRC_INTERNAL_H

#include "mprt/mprt.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
// Tensor data is kept in file byte order; a big-endian host would need swaps.
#error "libmprt supports little-endian hosts only"
#endif

struct mprt_tensor {
  mprt_dtype dtype;
  size_t rank;
  int64_t shape[MPRT_MAX_RANK];
  size_t numElements;
  size_t byteSize;
  void *data;
};

namespace mprt {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Clears the thread's last-error message (done on entry to each API call).
void clearError();

/// Records a printf-style message as the thread's last error and returns
/// `status`, so failures read `return fail(MPRT_ERROR_IO, "...", ...);`.
mprt_status fail(mprt_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// Puts context (such as "archive.npz: member 'w.npy': ") in front of the
/// thread's last-error message when a lower layer failed.
void prefixError(const char *format, ...) __attribute__((format(printf, 1, 2)));

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

bool isValidDtype(mprt_dtype dtype);

/// Creates a tensor; without `zeroFill` the data is left uninitialized for
/// callers that fill it at once. `label` prefixes error messages.
mprt_status createTensor(mprt_dtype dtype, size_t rank, const int64_t *shape,
                         bool zeroFill, const char *label, mprt_tensor **out);

/// Byte size of a tensor of `shape`, or false on a negative extent or
/// overflow past INT64_MAX.
bool computeByteSize(mprt_dtype dtype, size_t rank, const int64_t *shape,
                     uint64_t &numElements, uint64_t &byteSize);

//===----------------------------------------------------------------------===//
// Byte sources and streams
//===----------------------------------------------------------------------===//

/// Random-access bytes: a file read with pread (so concurrent readers do not
/// share a file position) or a caller-owned memory buffer.
class Source {
public:
  Source() = default;
  ~Source();
  Source(const Source &) = delete;
  Source &operator=(const Source &) = delete;

  /// Opens a regular file for reading.
  mprt_status openFile(const char *path);
  void openMemory(const void *data, size_t size, const char *label);

  uint64_t size() const { return byteCount; }
  const char *label() const { return name.c_str(); }

  /// Reads exactly `length` bytes at `offset`; past the end is a format error
  /// ("truncated"), an OS failure an I/O error.
  mprt_status readAt(uint64_t offset, void *dst, size_t length) const;

private:
  int fd = -1;
  const uint8_t *memory = nullptr;
  uint64_t byteCount = 0;
  std::string name;
};

/// A sequential stream of bytes of known length, such as a .npy file or one
/// decompressed archive member. `finish` validates what can only be checked
/// at the end (CRC-32, end of the deflate stream).
class InputStream {
public:
  virtual ~InputStream() = default;
  /// Bytes still to come.
  virtual uint64_t remaining() const = 0;
  /// Reads exactly `length` bytes; asking for more than remaining() fails.
  virtual mprt_status read(void *dst, size_t length) = 0;
  virtual mprt_status finish() = 0;
};

/// `length` bytes of `source` from `offset`, optionally checked against a
/// CRC-32 when finished.
class RangeStream : public InputStream {
public:
  RangeStream(const Source &source, uint64_t offset, uint64_t length,
              const char *label);
  void expectCrc(uint32_t crc) {
    checkCrc = true;
    expectedCrc = crc;
  }
  uint64_t remaining() const override { return end - position; }
  mprt_status read(void *dst, size_t length) override;
  mprt_status finish() override;

private:
  const Source &source;
  uint64_t position, end;
  const char *label;
  bool checkCrc = false;
  uint32_t expectedCrc = 0, crc;
};

/// Raw-deflate data of `compressedSize` bytes at `offset` that must inflate
/// to exactly `uncompressedSize` bytes with CRC-32 `expectedCrc`.
class InflateStream : public InputStream {
public:
  InflateStream(const Source &source, uint64_t offset, uint64_t compressedSize,
                uint64_t uncompressedSize, uint32_t expectedCrc,
                const char *label);
  ~InflateStream() override;
  /// Must succeed before the stream is read.
  mprt_status init();
  uint64_t remaining() const override { return outputRemaining; }
  mprt_status read(void *dst, size_t length) override;
  mprt_status finish() override;

private:
  mprt_status refill();
  mprt_status inflateInto(uint8_t *dst, size_t length, size_t &produced);

  const Source &source;
  uint64_t inputPosition, inputEnd, outputRemaining, declaredSize;
  uint32_t expectedCrc, crc;
  const char *label;
  std::vector<uint8_t> buffer;
  void *zstream = nullptr; // z_stream, kept out of this header
  bool streamEnded = false;
};

/// CRC-32 (zlib's) of any length.
uint32_t crc32Update(uint32_t crc, const void *data, uint64_t length);

/// Buffered file output that remembers the first failure.
class FileWriter {
public:
  ~FileWriter();
  mprt_status open(const char *path);
  mprt_status write(const void *data, size_t length);
  /// Flushes and, if asked, fsyncs; then closes. On failure the file is
  /// removed.
  mprt_status close(bool sync);
  /// Closes and removes the file after a failed write, keeping the error.
  void discard();
  uint64_t offset() const { return bytesWritten; }

private:
  FILE *file = nullptr;
  std::string path;
  uint64_t bytesWritten = 0;
};

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

/// Parses one .npy image from `in`, which must hold exactly that image.
/// With `bf16AsU2`, the descr must be '<u2' and the tensor becomes bf16 (how
/// checkpoints store bf16); otherwise '<u2' is unsupported.
mprt_status readNpy(InputStream &in, const char *label, bool bf16AsU2,
                    mprt_tensor **out);

/// The .npy header (magic through padding) for `tensor`; bf16 becomes '<u2'
/// when `bf16AsU2`, and is a dtype error otherwise.
mprt_status npyHeader(const mprt_tensor &tensor, bool bf16AsU2,
                      const char *label, std::string &header);

//===----------------------------------------------------------------------===//
// .npz
//===----------------------------------------------------------------------===//

struct NpzMember {
  std::string name; // without ".npy"
  const mprt_tensor *tensor;
  bool bf16AsU2;
};

struct NpzWriteOptions {
  /// Give every member Zip64 extra fields and end records, as if the archive
  /// were over 4 GiB (lets tests cover that path with small files).
  bool forceZip64 = false;
  /// fsync before closing (checkpoints).
  bool sync = false;
};

/// Writes an uncompressed .npz to `path`. A failure before the file is
/// created leaves `path` alone; a later one removes the partial file.
mprt_status writeNpz(const char *path, const std::vector<NpzMember> &members,
                     const NpzWriteOptions &options);

/// Checks the names of an npz write: non-empty, unique, short enough.
mprt_status validateMemberNames(const char *const *names, size_t count,
                                const char *label);

/// Reads member `name` (without ".npy") of `npz`; see readNpy for bf16AsU2.
mprt_status readNpzMember(const mprt_npz &npz, const char *name, bool bf16AsU2,
                          mprt_tensor **out);

/// Whether `npz` has a member `name` (without ".npy").
bool npzHasMember(const mprt_npz &npz, const char *name);

/// The label used in messages about `npz` (its path, or "<memory>").
const char *npzLabel(const mprt_npz &npz);

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Adds the outermost GEMM entry point on this thread (a batch and the
/// products it makes count once) to mprt_gemm_totals.
class GemmCallTimer {
public:
  GemmCallTimer();
  ~GemmCallTimer();

private:
  std::chrono::steady_clock::time_point start;
};

/// mprt_gemm_s8_dequantize without oneDNN's primitive: the exact int32
/// product in a scratch buffer, then each element converted to f32, plus
/// bias[j] converted to f32 (when `bias`), times scales[j], max(., 0) with
/// MPRT_GEMM_RELU: the order oneDNN's epilogue computes in.
mprt_status gemmS8DequantizeSteps(int64_t a, int64_t lda, int64_t b,
                                  int64_t ldb, float *d, int64_t ldd, int64_t m,
                                  int64_t n, int64_t k, int32_t flags,
                                  const int32_t *bias, const float *scales);

/// mprt_gemm for MPRT_GEMM_S8: int8 A and B, int32 C (gemm_s8.cpp).
mprt_status gemmS8(int64_t a, int64_t lda, int64_t b, int64_t ldb, int64_t c,
                   int64_t ldc, int64_t m, int64_t n, int64_t k, int32_t flags);
/// True where oneDNN's s8 kernels accumulate exactly (the CPU has, and
/// mprt_cpu_features reports, AVX512-VNNI, AVX-VNNI or AMX-INT8); else
/// gemmS8 runs its own exact kernel.
bool hasInt8DotProducts();

/// The thread count MPRT_NUM_THREADS, else OMP_NUM_THREADS, asks for (its
/// first number); 0 where neither does.
int32_t threadsFromEnvironment();
/// What gemmS8 runs without them: C += op(A) op(B) exactly, operands
/// widened to int16 and pairs of products summed in int32 (AVX2's vpmaddwd
/// in register blocks on every thread when `avx2`, else portable loops).
void gemmS8Widened(const int8_t *a, int64_t lda, const int8_t *b, int64_t ldb,
                   int32_t *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                   bool transA, bool transB, bool avx2);

} // namespace mprt

#endif // MPRT_SRC_INTERNAL_H
