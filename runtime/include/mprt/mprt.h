/*===- mprt.h - mp runtime: tensors, .npy/.npz and checkpoints ----*- C -*-===*
 *
 * The C API of libmprt, the runtime library that compiled mp programs and
 * their drivers use to move tensors in and out of files. Usable from C and
 * C++; the library itself needs neither exceptions nor RTTI.
 *
 * Conventions:
 *  - Every function that can fail returns an `mprt_status`. On failure,
 *    `mprt_last_error()` describes what went wrong, naming the file (and the
 *    archive member) involved. Each status-returning call first clears the
 *    message, so after MPRT_OK it is "".
 *  - Output handles are written only on success; on failure `*out` is set to
 *    NULL. Handles are owned by the caller and released with the matching
 *    `_free`/`_close` function (which accept NULL). Accessors given a NULL
 *    handle return 0 (NULL for pointers).
 *  - Files are little-endian and tensors are dense, C (row-major) order.
 *  - Nothing read from a file is trusted: malformed, truncated or hostile
 *    input yields an error status, never a crash or an unbounded allocation
 *    (allocations are bounded by the size of the input).
 *
 * See docs/runtime-io.md for the formats and the error behaviour.
 *===----------------------------------------------------------------------===*/

#ifndef MPRT_MPRT_H
#define MPRT_MPRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In C++ the enums below get `int` as their fixed underlying type, so that
 * any int a C caller passes (which the functions must reject, not trust) is
 * a valid value there too; without it, an out-of-range value is undefined
 * behaviour in C++ (UBSan's -fsanitize=enum reports it). */
#ifdef __cplusplus
#define MPRT_ENUM_BASE : int
#else
#define MPRT_ENUM_BASE
#endif

/*===----------------------------------------------------------------------===*
 * Status and errors
 *===----------------------------------------------------------------------===*/

typedef enum mprt_status MPRT_ENUM_BASE {
  MPRT_OK = 0,
  /* The operating system refused: missing file, permissions, disk full. */
  MPRT_ERROR_IO = 1,
  /* The bytes are not a valid file of the expected format (bad magic,
   * truncation, corrupt header, CRC mismatch, ...). */
  MPRT_ERROR_FORMAT = 2,
  /* A shape is invalid: negative or too many dimensions, or a byte count that
   * overflows. */
  MPRT_ERROR_SHAPE = 3,
  /* The element type is not supported here (e.g. '<c8', big-endian data, or
   * bf16 in a plain .npy file). */
  MPRT_ERROR_DTYPE = 4,
  /* The caller passed an invalid argument (NULL pointer, empty or duplicate
   * name, ...). */
  MPRT_ERROR_ARGUMENT = 5,
  /* A named tensor is not in the archive or checkpoint. */
  MPRT_ERROR_NOT_FOUND = 6,
  /* An allocation failed. */
  MPRT_ERROR_OUT_OF_MEMORY = 7
} mprt_status;

/* The enumerator's name without the prefix ("OK", "ERROR_IO", ...), or
 * "UNKNOWN" for a value outside the enum. */
const char *mprt_status_name(mprt_status status);

/* A human-readable description of the last failure in this thread, or "" if
 * the last status-returning call in this thread succeeded. The pointer stays
 * valid until the next mprt call in this thread. */
const char *mprt_last_error(void);

/*===----------------------------------------------------------------------===*
 * Tensors
 *===----------------------------------------------------------------------===*/

typedef enum mprt_dtype MPRT_ENUM_BASE {
  MPRT_DTYPE_F32 = 0,
  MPRT_DTYPE_F16 = 1,
  MPRT_DTYPE_BF16 = 2,
  MPRT_DTYPE_F64 = 3,
  MPRT_DTYPE_I32 = 4,
  MPRT_DTYPE_I64 = 5,
  MPRT_DTYPE_U8 = 6,
  MPRT_DTYPE_I8 = 7
} mprt_dtype;

/* Number of mprt_dtype values; valid dtypes are 0 .. MPRT_DTYPE_COUNT-1. */
#define MPRT_DTYPE_COUNT 8

/* The largest rank a tensor may have (NumPy 2's limit). */
#define MPRT_MAX_RANK 64

/* Short name ("f32", "bf16", ...), or NULL for an invalid dtype. */
const char *mprt_dtype_name(mprt_dtype dtype);

/* Bytes per element, or 0 for an invalid dtype. */
size_t mprt_dtype_size(mprt_dtype dtype);

/* A dense, C-order tensor that owns its data. */
typedef struct mprt_tensor mprt_tensor;

/* Creates a zero-filled tensor. `shape` holds `rank` non-negative extents
 * (it may be NULL when rank is 0, which makes a one-element scalar).
 * Errors: MPRT_ERROR_DTYPE (unknown dtype), MPRT_ERROR_SHAPE (negative
 * extent, rank > MPRT_MAX_RANK, byte size overflow), MPRT_ERROR_ARGUMENT,
 * MPRT_ERROR_OUT_OF_MEMORY. */
mprt_status mprt_tensor_create(mprt_dtype dtype, size_t rank,
                               const int64_t *shape, mprt_tensor **out);

/* Creates a deep copy of `src`. */
mprt_status mprt_tensor_copy(const mprt_tensor *src, mprt_tensor **out);

/* Releases the tensor and its data; NULL is ignored. */
void mprt_tensor_free(mprt_tensor *tensor);

mprt_dtype mprt_tensor_dtype(const mprt_tensor *tensor);
size_t mprt_tensor_rank(const mprt_tensor *tensor);
/* The `rank` extents; valid while the tensor lives. */
const int64_t *mprt_tensor_shape(const mprt_tensor *tensor);
/* Product of the extents (1 for a scalar). */
size_t mprt_tensor_num_elements(const mprt_tensor *tensor);
/* num_elements * dtype size. */
size_t mprt_tensor_byte_size(const mprt_tensor *tensor);
/* The elements, C order, little-endian; never NULL for a live tensor, even
 * when the byte size is 0. Aligned for any element type (as by malloc). */
void *mprt_tensor_data(const mprt_tensor *tensor);

/*===----------------------------------------------------------------------===*
 * .npy files (NumPy format versions 1.0, 2.0 and 3.0)
 *
 * Supported descr strings: '<f4' (f32), '<f2' (f16), '<f8' (f64), '<i4'
 * (i32), '<i8' (i64), '|u1' (u8), '|i1' (i8). bf16 has no NumPy descr, so
 * bf16 tensors are rejected with MPRT_ERROR_DTYPE (checkpoints store them).
 * fortran_order must be False.
 *===----------------------------------------------------------------------===*/

/* Reads a .npy file into a new tensor. */
mprt_status mprt_npy_read(const char *path, mprt_tensor **out);

/* Parses a .npy image held in memory (`size` bytes at `data`); messages
 * call it "<memory>". */
mprt_status mprt_npy_read_buffer(const void *data, size_t size,
                                 mprt_tensor **out);

/* Writes a version 1.0 .npy file (2.0 if the header needs it), header padded
 * to 64 bytes as NumPy does. Not atomic: use checkpoints for that. */
mprt_status mprt_npy_write(const char *path, const mprt_tensor *tensor);

/*===----------------------------------------------------------------------===*
 * .npz archives (np.savez and np.savez_compressed)
 *
 * Reading accepts stored and deflate members, Zip64 records, and verifies
 * every member's CRC-32. Writing produces stored members (Zip64 when sizes
 * or offsets need it). Member names are the tensor names plus ".npy".
 *===----------------------------------------------------------------------===*/

/* An open archive: the central directory is parsed and kept; member data is
 * read on demand. Getting members from several threads at once is safe. */
typedef struct mprt_npz mprt_npz;

/* Opens an archive on disk; the file stays open until mprt_npz_close. */
mprt_status mprt_npz_open(const char *path, mprt_npz **out);

/* Opens an archive held in memory; messages call it "<memory>". The buffer
 * is not copied: it must outlive the handle. */
mprt_status mprt_npz_open_buffer(const void *data, size_t size, mprt_npz **out);

/* Closes the archive; NULL is ignored. */
void mprt_npz_close(mprt_npz *npz);

/* Number of members. */
size_t mprt_npz_count(const mprt_npz *npz);

/* The name of member `index` in archive order, without its ".npy" suffix,
 * or NULL if `index` is out of range. Valid while the archive is open. */
const char *mprt_npz_name(const mprt_npz *npz, size_t index);

/* Reads member `name` (given without ".npy") into a new tensor, checking its
 * CRC-32. MPRT_ERROR_NOT_FOUND if there is no such member. */
mprt_status mprt_npz_get(const mprt_npz *npz, const char *name,
                         mprt_tensor **out);

/* Writes `count` tensors as an uncompressed archive that numpy.load reads,
 * in the given order. Names must be non-empty, unique and at most 65000
 * bytes. Not atomic: use checkpoints for that. */
mprt_status mprt_npz_write(const char *path, const char *const *names,
                           const mprt_tensor *const *tensors, size_t count);

/*===----------------------------------------------------------------------===*
 * Checkpoints
 *
 * A checkpoint is an .npz archive that numpy.load also reads. bf16 tensors
 * are stored as '<u2' members (their raw bits) and listed in a "__dtypes__"
 * member; the optional metadata string is a u8 member "__metadata__". Names
 * starting with "__" are reserved.
 *===----------------------------------------------------------------------===*/

typedef struct mprt_checkpoint mprt_checkpoint;

/* Atomically writes a checkpoint: the archive goes to `path` + ".tmp", is
 * fsync'ed, then renamed over `path` (and the directory is fsync'ed), so a
 * crash or a failed save leaves the previous checkpoint intact. On failure
 * the temporary file is removed. `metadata_json` may be NULL; it is stored
 * verbatim (not parsed). Concurrent saves to one path are not supported. */
mprt_status mprt_checkpoint_save(const char *path, const char *const *names,
                                 const mprt_tensor *const *tensors,
                                 size_t count, const char *metadata_json);

/* Reads every tensor of a checkpoint (or of any .npz of supported dtypes),
 * verifying CRCs. A truncated or corrupt file gives MPRT_ERROR_FORMAT. */
mprt_status mprt_checkpoint_load(const char *path, mprt_checkpoint **out);

/* Releases the checkpoint and all its tensors; NULL is ignored. */
void mprt_checkpoint_free(mprt_checkpoint *checkpoint);

/* Number of tensors (reserved members not counted). */
size_t mprt_checkpoint_count(const mprt_checkpoint *checkpoint);

/* Name and tensor at `index` in file order, or NULL if out of range. Both
 * are owned by the checkpoint (copy the tensor to keep it longer). */
const char *mprt_checkpoint_name(const mprt_checkpoint *checkpoint,
                                 size_t index);
const mprt_tensor *mprt_checkpoint_tensor(const mprt_checkpoint *checkpoint,
                                          size_t index);

/* Looks a tensor up by name; MPRT_ERROR_NOT_FOUND if absent. */
mprt_status mprt_checkpoint_find(const mprt_checkpoint *checkpoint,
                                 const char *name, const mprt_tensor **out);

/* The metadata string saved with the checkpoint, or NULL if it had none. */
const char *mprt_checkpoint_metadata(const mprt_checkpoint *checkpoint);

/*===----------------------------------------------------------------------===*
 * Kernels that compiled code calls
 *===----------------------------------------------------------------------===*/

/* Element types of mprt_gemm's A and B (C is always f32). */
typedef enum mprt_gemm_type MPRT_ENUM_BASE {
  MPRT_GEMM_F32 = 0,
  MPRT_GEMM_F16 = 1,
  MPRT_GEMM_BF16 = 2
} mprt_gemm_type;

/* Bits of mprt_gemm's `flags`. */
#define MPRT_GEMM_TRANS_A 1
#define MPRT_GEMM_TRANS_B 2

/* C[m x n] += op(A)[m x k] * op(B)[k x n] with f32 accumulation, as
 * linalg.matmul does; row-major with leading dimensions lda, ldb, ldc;
 * op(X) is X or its transpose (flags). Pointers arrive as integers: this is
 * what --mp-contractions-to-runtime emits. f16 and bf16 inputs are widened
 * to f32 before the product. Runs on oneDNN's sgemm. Returns MPRT_OK, or
 * MPRT_ERROR_ARGUMENT (with mprt_last_error) for bad sizes or types. */
mprt_status mprt_gemm(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                      int64_t c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                      int32_t flags, int32_t type);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MPRT_MPRT_H */
