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
  MPRT_ERROR_OUT_OF_MEMORY = 7,
  /* A GPU could not be used: no driver or device, or a failing CUDA or
   * cuBLASLt call (libmprt_cuda, mprt/mprt_cuda.h). */
  MPRT_ERROR_DEVICE = 8
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

/* mprt_checkpoint_save that also keeps the checkpoint it replaces under
 * `previous_path` (NULL: keep nothing). The old file gets the second name by
 * a hard link renamed into place before the new one is renamed over `path`,
 * so `path` never disappears and, after the second save, a previous good
 * checkpoint survives a later corrupt or truncated `path`. */
mprt_status mprt_checkpoint_save_rotate(const char *path,
                                        const char *const *names,
                                        const mprt_tensor *const *tensors,
                                        size_t count, const char *metadata_json,
                                        const char *previous_path);

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
  MPRT_GEMM_BF16 = 2,
  /* A and B signed 8-bit, C int32 (C += A * B in exact integer arithmetic):
   * the contractions of --mp-quantize. oneDNN's matmul primitive (AMX-INT8,
   * AVX512-VNNI or AVX-VNNI kernels, chosen at run time), cached per shape;
   * gemm_s8s8s32 where no primitive can be built. On a CPU without those
   * instructions oneDNN's kernels saturate 16-bit pair sums, so mprt runs
   * its own exact (slower) kernel there. */
  MPRT_GEMM_S8 = 3
} mprt_gemm_type;

/* Bits of mprt_gemm's `flags`. */
#define MPRT_GEMM_TRANS_A 1
#define MPRT_GEMM_TRANS_B 2
/* With f16 or bf16 A and B: C has their type and is overwritten with
 * op(A) op(B), accumulated in f32 and rounded once to nearest even (C's old
 * contents are not read; k == 0 stores zeros). What a product whose f32
 * result is only rounded compiles to (--mp-contractions-to-runtime): the
 * f32 result is never stored. */
#define MPRT_GEMM_ROUNDED_C 4
/* C = op(A) op(B) in C's own type: C's old contents are not read (k == 0
 * stores zeros). What a product into a zero-filled buffer compiles to
 * (--mp-contractions-to-runtime): the fill, and the GEMM's read of the
 * zeros, are gone. (The sum then keeps the sign of a -0 product, which
 * 0 + x would have made +0.) */
#define MPRT_GEMM_OVERWRITE_C 8

/* C[m x n] += op(A)[m x k] * op(B)[k x n] with f32 accumulation (int32 for
 * MPRT_GEMM_S8; C = round(...) with MPRT_GEMM_ROUNDED_C, C = ... with
 * MPRT_GEMM_OVERWRITE_C), as
 * linalg.matmul does; row-major with leading dimensions lda, ldb, ldc;
 * op(X) is X or its transpose (flags). Pointers arrive as integers: this is
 * what --mp-contractions-to-runtime emits. f32 runs on oneDNN's sgemm;
 * bf16 on oneDNN's matmul primitive (AMX-BF16 or AVX512-BF16 kernels where
 * the CPU has them, else the inputs are widened to f32; AVX512-BF16's dot
 * products flush subnormal products to zero), which also writes a rounded
 * bf16 C itself; f16 as mprt_gemm_f16_mode says. Returns MPRT_OK, or
 * MPRT_ERROR_ARGUMENT (with mprt_last_error) for bad sizes or types. */
mprt_status mprt_gemm(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                      int64_t c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                      int32_t flags, int32_t type);

/* C = op(A) op(B) + bias: the product (f32 accumulation, C's old contents
 * not read), then bias[j] (f32, n values at the address `bias`) added to
 * every row in f32, then stored: in f32, or rounded once to A's type with
 * MPRT_GEMM_ROUNDED_C. A layer's product and bias in one call, what
 * --mp-contractions-to-runtime emits where a 16-bit product's f32 result
 * only feeds `C + bias` (maybe rounded); bf16 runs on oneDNN's matmul
 * primitive with its bias input. f16 or bf16 A and B only. */
mprt_status mprt_gemm_bias(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                           int64_t c, int64_t ldc, int64_t m, int64_t n,
                           int64_t k, int32_t flags, int32_t type,
                           int64_t bias);

/* Bit of mprt_gemm_s8_dequantize's `flags`: negative results become 0. */
#define MPRT_GEMM_RELU 16

/* D[m x n] (f32) = (op(A) op(B) + bias[j]) * scale[j]: an int8 product
 * (A and B signed 8-bit, exact int32 sums) dequantized. `bias` is the
 * address of n int32 values, or 0 for none; `scale` of n f32 values. With
 * MPRT_GEMM_RELU, max(D, 0) after the scaling. D's old contents are not
 * read. Flags: MPRT_GEMM_TRANS_A, MPRT_GEMM_TRANS_B, MPRT_GEMM_RELU. What
 * --mp-contractions-to-runtime emits where an int8 product of
 * --mp-quantize (its accumulator preset to the quantized bias, or zero)
 * is only dequantized: the int32 result, the bias broadcast and the
 * dequantization pass are never stored. oneDNN's int8 matmul primitive
 * writes the sum with the bias in f32 where the CPU has int8 dot products
 * (else mp's exact int32 product, then the same steps), then one pass
 * scales it (oneDNN 2.6's fast kernels take no per-call scales). The sum
 * and the bias are each rounded to f32 before they are added (oneDNN's
 * order): equal to the int32 sum converted once while both are below 2^24
 * in magnitude, at most one rounding of f32 apart beyond. Errors:
 * MPRT_ERROR_ARGUMENT. */
mprt_status mprt_gemm_s8_dequantize(int64_t a, int64_t lda, int64_t b,
                                    int64_t ldb, int64_t d, int64_t ldd,
                                    int64_t m, int64_t n, int64_t k,
                                    int32_t flags, int64_t bias, int64_t scale);

/* A batch of mprt_gemm products: C[p] += op(A[p]) op(B[p]) for p < batch,
 * where X[p] starts stride_x elements after X[p - 1]. A stride of A or B may
 * be 0 (one matrix shared by the batch: the filter of an im2col
 * convolution); C's must keep the results apart when batch > 1: stacked
 * (at least (m - 1) * ldc + n) or side by side within C's rows (at least
 * n, the last result ending within the first row: (batch - 1) * stride_c +
 * n <= ldc), else MPRT_ERROR_ARGUMENT. What --mp-contractions-to-runtime emits
 * for batch_matmul and other products with a leading batch loop; the same
 * convention as libmprt_cuda's mprt_cuda_gemm_batched. A bf16 or f32
 * batch runs as one oneDNN matmul with a batch dimension (f32 then on the
 * matmul primitive's kernels, whose sums may be ordered differently from
 * sgemm's); f16 and s8 one product at a time. */
mprt_status mprt_gemm_batched(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                              int64_t c, int64_t ldc, int64_t m, int64_t n,
                              int64_t k, int32_t flags, int32_t type,
                              int64_t batch, int64_t stride_a,
                              int64_t stride_b, int64_t stride_c);

/* mprt_gemm_s8_dequantize, and then each row's largest magnitudes per
 * lane: partials[i * lanes + j % lanes] = maximumf(that value, |D[i, j]|)
 * over the row's j (arith.maximumf: NaN if any is NaN), n a multiple of
 * `lanes`, `partials` the address of m * lanes f32 values. What
 * --mp-contractions-to-runtime emits where the dequantized result's next
 * use is dynamic quantization's max |x| in per-row partials
 * (--mp-split-reductions{lanes}): computed while the scaling pass
 * holds the row, instead of in one more pass over D. Errors:
 * MPRT_ERROR_ARGUMENT. */
mprt_status mprt_gemm_s8_dequantize_absmax(int64_t a, int64_t lda, int64_t b,
                                           int64_t ldb, int64_t d, int64_t ldd,
                                           int64_t m, int64_t n, int64_t k,
                                           int32_t flags, int64_t bias,
                                           int64_t scale, int64_t partials,
                                           int64_t lanes);

/* mprt_gemm_batched in two batch dimensions: C[q][p] += op(A[q][p])
 * op(B[q][p]) for q < outer, p < batch, where X[q][p] starts
 * q * outer_stride_x + p * stride_x elements after X[0][0]. What
 * --mp-contractions-to-runtime emits for attention's products when it reads
 * the heads straight from the [tokens, heads x features] layout (or writes
 * them there) instead of from a [sequences x heads, tokens, features] copy:
 * the head stride is the inner one (features), the sequence stride the
 * outer. Strides of A or B
 * may be 0 (shared); C's results must lie apart within each outer block (as
 * in mprt_gemm_batched) and the blocks after each other (outer_stride_c at
 * least (batch - 1) * stride_c + (m - 1) * ldc + n). bf16 and f32 run as
 * one oneDNN matmul with two batch dimensions. */
mprt_status mprt_gemm_batched_2d(int64_t a, int64_t lda, int64_t b, int64_t ldb,
                                 int64_t c, int64_t ldc, int64_t m, int64_t n,
                                 int64_t k, int32_t flags, int32_t type,
                                 int64_t outer, int64_t outer_stride_a,
                                 int64_t outer_stride_b, int64_t outer_stride_c,
                                 int64_t batch, int64_t stride_a,
                                 int64_t stride_b, int64_t stride_c);

/* Declares the `bytes` from `data` constant until
 * mprt_gemm_release_constant(data): a 16-bit or s8 product (mprt_gemm,
 * mprt_gemm_bias, not a batch) whose B lies inside keeps B in the layout
 * oneDNN's kernel reads (copied once, at the first product of each shape
 * and layout), where it would otherwise repack B on every call. What an
 * inference session declares for its weights after converting them once.
 * The caller must not change or free the memory before releasing it: the
 * products would go on reading the old values. MPRT_ERROR_ARGUMENT for an
 * empty range or one that overlaps a declared range. */
mprt_status mprt_gemm_declare_constant(const void *data, int64_t bytes);
/* Ends the range declared at `data` and frees the copies made from it
 * (nothing for an address that starts no declared range). */
void mprt_gemm_release_constant(const void *data);

/* What mprt_gemm, mprt_gemm_batched(_2d), mprt_gemm_bias and
 * mprt_gemm_s8_dequantize(_absmax) have done in this process so far: calls
 * (a batch counts once) and wall-clock seconds inside them, summed over the threads
 * that called them. A step's time minus the change in
 * `seconds` is the time it spends outside its products
 * (bench/transformer_bench.py reports it). Either pointer may be NULL. */
void mprt_gemm_totals(int64_t *calls, double *seconds);

/*===-- Parallel loops ------------------------------------------------------===
 *
 * Compiled loops run on the OpenMP threads that oneDNN's products use
 * (libgomp; MPRT_NUM_THREADS or OMP_NUM_THREADS sets how many for both,
 * every core by default).
 *===----------------------------------------------------------------------===*/

/* How many threads compiled steps and their products run on: the last
 * mprt_set_threads, else MPRT_NUM_THREADS, else OMP_NUM_THREADS, else
 * every core the process may run on. Not libgomp's current setting, which
 * other libraries in the process change (importing PyTorch set it to 1 on
 * a 2-core machine, and mp's steps ran at half speed). */
int32_t mprt_threads(void);
/* Fixes mprt_threads (n >= 1; data-parallel ranks take their share of the
 * host's cores this way). */
void mprt_set_threads(int32_t n);
/* Around a compiled step: sets the calling thread's OpenMP thread count to
 * mprt_threads() and returns the one it replaces, for
 * mprt_threads_leave to restore. */
int32_t mprt_threads_enter(void);
void mprt_threads_leave(int32_t previous);

/* The body of a loop outlined by --mp-parallelize-loops: runs iterations
 * [begin, end) with the captured values at context. */
typedef void (*mprt_loop_body)(int64_t begin, int64_t end, void *context);

/* Runs body over [0, n) split into one contiguous, nearly equal share per
 * thread (at most n threads); serially on the calling thread where OpenMP
 * has one thread or the caller already is in a parallel region. Returns when
 * every share is done. What --mp-parallel-launches-to-runtime emits. */
void mprt_parallel_for(int64_t n, mprt_loop_body body, void *context);

/* How mprt_gemm runs f16 products. oneDNN 2.6 has an f16 matmul only for
 * CPUs with AVX512-FP16, so by default (AUTO) the CPU's features decide:
 *   NATIVE  oneDNN's f16 primitive, where the CPU has AVX512-FP16;
 *   BF16    the operands rounded to bf16 (round to nearest even: f16's
 *           11-bit significand becomes 8 bits, the range only widens) and
 *           the bf16 primitive, where the CPU has AVX512-BF16 or AMX-BF16;
 *   F32     the operands widened to f32 (exact; F16C where present) and
 *           sgemm, everywhere else.
 * Accumulation is f32 in every mode. The environment variable
 * MPRT_F16_GEMM=auto|native|bf16|f32 sets the mode at the first product;
 * mprt_gemm_set_f16_mode sets it later (AUTO for an unknown value). */
typedef enum mprt_f16_gemm_mode MPRT_ENUM_BASE {
  MPRT_F16_GEMM_AUTO = 0,
  MPRT_F16_GEMM_NATIVE = 1,
  MPRT_F16_GEMM_BF16 = 2,
  MPRT_F16_GEMM_F32 = 3
} mprt_f16_gemm_mode;

void mprt_gemm_set_f16_mode(int32_t mode);

/* How mprt_gemm runs products of `type` (an mprt_gemm_type) on this CPU, in
 * words: the oneDNN kernel (the implementation oneDNN itself names, such as
 * "brg:avx512_core_bf16") and any conversion of the inputs first ("inputs
 * rounded to bf16, ..."). Written to `out`, NUL-terminated, at most `n`
 * bytes. Errors: MPRT_ERROR_ARGUMENT (NULL out, n == 0, a bad type). */
mprt_status mprt_gemm_describe(int32_t type, char *out, size_t n);
/* The mode f16 products run in now: NATIVE, BF16 or F32 (never AUTO). */
int32_t mprt_gemm_f16_mode(void);

/*===----------------------------------------------------------------------===*
 * Probes and calibration statistics
 *
 * `mp.observe %x as "id"` compiles (--mp-probes-to-runtime, part of
 * --mp-lower-cpu) to a call of mprt_observe with the tensor's elements,
 * dense and in C order. What happens to them is up to the driver: it
 * installs an observer, for instance the statistics collector below
 * (calibration) or a numerics checker. See docs/probes.md.
 *===----------------------------------------------------------------------===*/

/* Receives every probed tensor: `id` is the probe's id (a NUL-terminated
 * string constant of the compiled module), `data` holds `numElements`
 * elements of `dtype`, valid only during the call. */
typedef void (*mprt_observer_fn)(void *user, const char *id, const void *data,
                                 int64_t numElements, mprt_dtype dtype);

/* Installs `fn` (called with `user`) as the process-wide observer; NULL
 * uninstalls. Install before running compiled code, not while it runs in
 * another thread. */
void mprt_set_observer(mprt_observer_fn fn, void *user);

/* The installed observer and its user data (NULL, NULL when none), so that
 * a driver that installs its own for a while can put the previous one back. */
void mprt_get_observer(mprt_observer_fn *fn, void **user);

/* What compiled probes call: forwards to the installed observer, or does
 * nothing (one atomic load) when none is installed. `dtype` is an
 * mprt_dtype code; calls with an invalid dtype or a negative count are
 * ignored, since compiled code has no way to handle an error here. */
void mprt_observe(const char *id, const void *data, int64_t numElements,
                  int32_t dtype);

/* Bins of the |x| histogram each probe keeps. */
#define MPRT_STATS_BINS 2048

/* Per-probe statistics gathered over every call: count, min, max, and a
 * histogram of |x| over [0, hist_max] in MPRT_STATS_BINS equal bins. The
 * range starts at the first non-zero |x| maximum seen and doubles (merging
 * pairs of bins) whenever a later tensor exceeds it, so the histogram is
 * exact up to its bin width. Non-finite elements (inf, nan) are counted
 * apart and kept out of every other field. Safe to feed from several
 * threads. */
typedef struct mprt_stats mprt_stats;

mprt_status mprt_stats_create(mprt_stats **out);
void mprt_stats_free(mprt_stats *stats);

/* Adds one tensor's elements to probe `id` (created on first use).
 * Errors: MPRT_ERROR_ARGUMENT (NULL stats or id, empty id, negative count,
 * NULL data with a positive count), MPRT_ERROR_DTYPE, or a dtype that
 * differs from the one this probe saw before. */
mprt_status mprt_stats_add(mprt_stats *stats, const char *id, const void *data,
                           int64_t numElements, mprt_dtype dtype);

/* An mprt_observer_fn that feeds the mprt_stats passed as `user`:
 * mprt_set_observer(mprt_stats_observer, stats). Errors are kept and
 * reported by mprt_stats_error. */
void mprt_stats_observer(void *user, const char *id, const void *data,
                         int64_t numElements, mprt_dtype dtype);

/* The first error mprt_stats_observer met, or NULL if none. */
const char *mprt_stats_error(const mprt_stats *stats);

/* A snapshot of one probe; pointers stay valid until the next call that
 * adds to or frees `stats`. With no finite element, min = max = 0. */
typedef struct mprt_probe_stats {
  const char *id;
  mprt_dtype dtype;
  int64_t calls;          /* tensors observed */
  int64_t count;          /* finite elements */
  int64_t nonfinite_count; /* inf and nan elements */
  int64_t zero_count;
  int64_t below_f16_normal_count; /* non-zero, |x| < 2^-14 */
  double min, max, abs_max;
  double hist_max;         /* upper end of the histogram's range */
  const int64_t *histogram; /* MPRT_STATS_BINS counts of |x| */
} mprt_probe_stats;

/* Number of probes, and probe `index` in order of first appearance. */
size_t mprt_stats_count(const mprt_stats *stats);
mprt_status mprt_stats_get(const mprt_stats *stats, size_t index,
                           mprt_probe_stats *out);
/* MPRT_ERROR_NOT_FOUND when no tensor reached probe `id`. */
mprt_status mprt_stats_find(const mprt_stats *stats, const char *id,
                            mprt_probe_stats *out);

/* Writes the calibration statistics file (docs/calibration-stats.md,
 * version 1) with every probe, atomically (temporary file + rename). */
mprt_status mprt_stats_write_json(const mprt_stats *stats, const char *path);

/*===----------------------------------------------------------------------===*
 * Counted heap for compiled code
 *
 * Lowered code allocates its buffers with malloc/free. A driver that
 * resolves those symbols of the compiled module to the functions below
 * (mp-run does) can read how many bytes a step holds at its peak:
 * activations, gradients, low-precision copies and temporaries, everything
 * except the buffers the caller passes in (parameters, optimizer state,
 * data). Blocks from mprt_counted_malloc must be freed with
 * mprt_counted_free. Thread-safe.
 *
 * Freed blocks of 64 KiB and more are kept and handed out again for the
 * same size (each training step allocates the same buffers; giving them
 * back to the OS made every step page-fault them in again). At most
 * $MPRT_HEAP_CACHE_MB MiB are kept (default 1024, 0 turns reuse off; ASan
 * builds keep none). Kept blocks are not counted as held.
 *===----------------------------------------------------------------------===*/

void *mprt_counted_malloc(size_t size);
void mprt_counted_free(void *pointer);

typedef struct mprt_memory {
  int64_t current_bytes;   /* held now */
  int64_t peak_bytes;      /* most held at once since the last reset */
  int64_t allocated_bytes; /* sum of every allocation ever made */
} mprt_memory;

void mprt_memory_stats(mprt_memory *out);
/* Starts a new peak measurement from the bytes held now. */
void mprt_memory_reset_peak(void);
/* Returns the blocks kept for reuse to the system; returns their bytes. */
int64_t mprt_memory_trim(void);

/*===----------------------------------------------------------------------===*
 * Strided copies for compiled code
 *
 * What MLIR's memrefCopy (libmlir_c_runner_utils) does, so that drivers of
 * compiled code need no MLIR library at run time: copies every element of
 * the strided memref `src` into `dst` (same rank and sizes). Both are
 * unranked descriptors as lowered code passes them: {int64_t rank; void
 * *ranked}, the ranked one {allocated, aligned, offset, sizes[rank],
 * strides[rank]}. mp-run binds compiled code's memrefCopy to this.
 *===----------------------------------------------------------------------===*/

typedef struct mprt_unranked_memref {
  int64_t rank;
  void *descriptor;
} mprt_unranked_memref;

void mprt_memref_copy(int64_t element_bytes, const mprt_unranked_memref *src,
                      const mprt_unranked_memref *dst);

/*===----------------------------------------------------------------------===*
 * CPU features (detected once, at run time, with cpuid)
 *===----------------------------------------------------------------------===*/

#define MPRT_CPU_AVX2 (1u << 0)
#define MPRT_CPU_F16C (1u << 1)
#define MPRT_CPU_AVX512F (1u << 2)
#define MPRT_CPU_AVX512_VNNI (1u << 3)   /* int8 dot products, 512-bit */
#define MPRT_CPU_AVX512_BF16 (1u << 4)
#define MPRT_CPU_AVX512_FP16 (1u << 5)
#define MPRT_CPU_AVX_VNNI (1u << 6)      /* int8 dot products, 256-bit */
#define MPRT_CPU_AMX_INT8 (1u << 7)
#define MPRT_CPU_AMX_BF16 (1u << 8)

/* The MPRT_CPU_* bits this CPU and OS support (AVX-512 and AMX bits only
 * when the OS saves their registers). 0 on non-x86 hosts. The environment
 * variable MPRT_CPU_DISABLE (names as mprt_cpu_features_string writes
 * them, comma-separated) takes features away, with those that build on
 * them (no AVX2: no AVX-512; no AVX512F: no AVX-512 extensions nor AMX),
 * so that a run behaves as on a CPU without them (mp's kernels, oneDNN's
 * ISA, `--precision auto`); it cannot add any. */
uint32_t mprt_cpu_features(void);

/* The same as space-separated names ("avx2 f16c avx512f avx512_vnni ..."),
 * or "none". A static string. */
const char *mprt_cpu_features_string(void);

/* Data-parallel training over MPI (MPICH's ABI; docs/distributed.md).
 * Built only where CMake found MPI (MPRT_HAS_MPI); elsewhere every
 * function below fails with MPRT_ERROR_ARGUMENT and a message saying so. */

/* 1 when libmprt was built with MPI. */
int32_t mprt_dist_available(void);

/* Initializes MPI once per process (MPI_Init unless the program already
 * did) and gives this process's rank and the job's size. Fails when no MPI
 * launcher started the process (no PMI_RANK, PMIX_RANK or
 * OMPI_COMM_WORLD_SIZE in the environment: run it with mpirun -np N). */
mprt_status mprt_dist_init(int32_t *rank, int32_t *size);

/* Every rank passes its value; *same is 1 when all ranks passed the same
 * one (a collective: every rank must call it). */
mprt_status mprt_dist_same(uint64_t value, int32_t *same);

/* Rank 0's `count` floats replace every other rank's (a collective). */
mprt_status mprt_dist_broadcast_f32(float *data, int64_t count);

/* MPI_Allreduce with MPICH's integer handles: the symbol compiled steps
 * call for upstream's mpi.allreduce lowering (bound by the JIT and by
 * artifacts like any runtime function). Returns MPI's error code. */
int mprt_dist_mpi_allreduce(const void *send, void *receive, int count,
                            int datatype, int op, int comm);

/* MPI_Finalize, once, where mprt_dist_init initialized MPI (also run at
 * exit). */
void mprt_dist_finalize(void);

/* For a rank that fails: where mprt_dist_init initialized MPI, flushes
 * stdio and ends this process with `code` without MPI_Finalize, so that the
 * launcher ends the whole job instead of leaving the other ranks waiting
 * in a collective (MPI_Finalize would wait for them); returns (doing
 * nothing) otherwise. */
void mprt_dist_abort(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MPRT_MPRT_H */
