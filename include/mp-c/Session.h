/*===- Session.h - C API: compile, train and run a model ------*- C -*-===*
 *
 * A session compiles a model's mp.loss function into a training step
 * (autodiff, loss scaling, optimizer, mixed precision) and its mp.predict
 * function, JIT-compiles both for this CPU (what mp-run does) and runs them
 * on caller buffers; or opens both from an artifact (mp-compile). Built as libmp_session.so for bindings (python/mp/
 * runtime.py uses it through ctypes).
 *
 * Conventions: functions returning int return 0 on success and non-zero on
 * failure, with the message in mp_last_error() (per thread). Tensors are
 * dense, row-major float32; the caller owns every buffer it passes.
 *
 * This is the one header an embedder includes: it also brings in libmprt's
 * C API (mprt/mprt.h: tensors, .npy/.npz files, atomic checkpoints, the
 * CPU gemm and feature detection, memory statistics).
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_CAPI_SESSION_H
#define MP_CAPI_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "mprt/mprt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mp_session mp_session;

typedef struct mp_session_options {
  const char *precision;  /* "f32" (default), "f16", "bf16" or "auto" (what
                             the hardware has: mp_session_precision_decision
                             says what was chosen and why) */
  const char *loss_scale; /* "" (default: dynamic for f16, none otherwise),
                             "dynamic", "none" or "static:N" */
  const char *optimizer;  /* "sgd" (default), "adam" or "adamw" */
  double lr;              /* 0.05 */
  double momentum;        /* 0.9 (sgd) */
  double weight_decay;    /* 0 */
  uint64_t seed;          /* parameter initialisation, 0 */
  const char *device;     /* "cpu" (default) or "cuda": the step runs on
                             the GPU (libmprt_cuda.so), parameters and
                             state stay in device memory (docs/gpu.md) */
  int tf32;               /* -1 (default: on for "auto" on GPUs of sm_80 and
                             newer, else off), 0 or 1: f32 products on TF32
                             tensor cores ("cuda" only) */
  int64_t accumulate;     /* 1 (default): micro-batches per optimizer step;
                             N > 1 sums the gradients of N train_step calls
                             in f32 and updates once, on the N-th */
  /* Source locations ("FILE:LINE:COL" or "LINE:COL", as --check-numerics
   * names them) of ops kept in f32 with their derivatives, as mp-run's
   * --keep-f32: `keep_f32_count` strings (NULL and 0: none). */
  const char *const *keep_f32;
  int64_t keep_f32_count;
  /* loss_scale "adaptive" only: keep the scaled gradients' amax
   * `scale_margin` times below f16's maximum (8), and lower the scale only
   * after `scale_hysteresis` clean steps in a row ask for it (2). */
  double scale_margin;
  int64_t scale_hysteresis;
  /* The compile cache (CPU sessions without probes; docs/user-guide.md):
   * `cache` 1 (default) loads a step compiled before for the same model,
   * options and CPU, and keeps a new one there; 0 compiles every time (as
   * does MP_CACHE=off). `cache_dir` NULL or "" (default): $MP_CACHE_DIR,
   * else $XDG_CACHE_HOME/mp or ~/.cache/mp. */
  int cache;
  const char *cache_dir;
  /* A model that only predicts (an ONNX file) trains with a loss around
   * its mp.predict: "cross-entropy" or "mse" (NULL or "", the default:
   * cross-entropy for such a model, the model's own @loss otherwise), as
   * mp-run's --loss. */
  const char *loss;
  /* An ONNX model's dynamic batch dimension becomes this (0, the default:
   * none; a dynamic batch is then an error), as mp-run's --batch-size. */
  int64_t batch_size;
  /* Quantization-aware training, as mp-run's --qat: 1 fake-quantizes the
   * int8-eligible contractions (weights per channel, activations through
   * moving-average observers kept as optimizer state and saved with it);
   * an mp_infer of precision "int8" on this session then needs no
   * calibration_path. `qat_freeze_after` N > 0 stops the observers after N
   * optimizer steps. 0 and 0 (defaults): off. */
  int qat;
  int64_t qat_freeze_after;
  /* Data-parallel training inside an MPI job (mpirun -np N), as mp-run's
   * --distributed: 1 initializes MPI, compiles the step with gradients
   * averaged over the job's ranks (every rank must create the same
   * session) and starts every rank from rank 0's parameters. Each rank then
   * calls mp_session_train_step with its own share of every global batch
   * (rows [rank * B, (rank + 1) * B) of N * B; B is mp_session_batch_size,
   * and a `batch_size` given above is the global batch). 0 (default): one
   * process. */
  int distributed;
  /* A CPU f16/bf16 step's 16-bit weights, as mp-run's --weight-copies:
   * "keep" (NULL or the default: kept between steps, written by the
   * optimizer update; faster) or "convert" (converted in every step; 2
   * bytes per weight less memory). The same results either way. */
  const char *weight_copies;
} mp_session_options;

/* Fills `options` with the defaults above. */
void mp_session_options_init(mp_session_options *options);

/* The last error of this thread ("" after a success). */
const char *mp_last_error(void);

/* Parses and compiles `model_path`; parameters start He-uniform from the
 * seed (biases zero). */
int mp_session_create(const char *model_path,
                      const mp_session_options *options, mp_session **out);
/* As mp_session_create, with the options as one string, "name=value
 * name=value ..." (the names of mp-run's flags, docs/options.md: for
 * example "precision=bf16 optimizer=adamw lr=0.001 keep-f32=m.mlir:3:5";
 * a value with spaces in quotes; a flag alone, "qat", means true; NULL or
 * "": the defaults). Every training option is reachable this way, with the
 * same checks and messages as mp-run's; bindings need no mirror of
 * mp_session_options. */
int mp_session_create_with(const char *model_path, const char *options,
                           mp_session **out);
/* The options the session's step was compiled with, as such a string
 * ("auto" resolved). Owned by the session. */
const char *mp_session_options_text(const mp_session *session);
/* The pass pipelines that compiled the session's step, one per line: the
 * step on tensors (builtin.module(mp-session-train{...}), which mp-opt
 * runs too), then the lowering when this process lowered it; "" for an
 * artifact. Owned by the session. */
const char *mp_session_pipelines(const mp_session *session);
/* Opens an artifact mp-compile wrote (docs/artifacts.md): its compiled
 * training step and prediction, loaded with dlopen, without MLIR. The
 * options are those it was compiled with; parameters start He-uniform from
 * its --seed. A missing, truncated, corrupt or foreign file, another format
 * version or a CPU that lacks the features it was compiled for is an
 * error. The result works with every mp_session_* function below. */
int mp_session_open(const char *artifact_path, mp_session **out);
void mp_session_free(mp_session *session);

/* The precision the session trains in ("f32", "f16", "bf16"), and what
 * "auto" chose and why ("precision auto -> bf16: AVX512-BF16 present"; ""
 * when the precision was given). Owned by the session. */
const char *mp_session_precision(const mp_session *session);
const char *mp_session_precision_decision(const mp_session *session);
/* What the compile cache did: "loaded" (the step came from it), "stored"
 * (compiled and kept), "unusable" (compiled without it:
 * mp_session_cache_note says why) or "off". Owned by the session. */
const char *mp_session_cache_use(const mp_session *session);
const char *mp_session_cache_note(const mp_session *session);
/* The ops the session keeps in f32 beyond what the model pins: the
 * options' keep_f32 and what precision repairs added (mp_trainer_*), by
 * index; NULL past the end. Valid until the session is next recompiled (a
 * repair). */
int64_t mp_session_kept_f32_count(const mp_session *session);
const char *mp_session_kept_f32(const mp_session *session, int64_t index);

/* What `mp-run info` prints: the CPU's features and what each precision
 * runs on, the GPU's (or why there is none), and what "auto" picks on each.
 * Valid until this thread's next call. */
const char *mp_hardware_report(void);

/* The model's static batch size, elements per sample of x, classes. */
int64_t mp_session_batch_size(const mp_session *session);
/* 1 when this mp was built with MPI (data-parallel sessions possible). */
int mp_distributed_available(void);
/* A data-parallel session's rank in its job and the job's size (0 and 1
 * without `distributed`). */
int64_t mp_session_process_rank(const mp_session *session);
int64_t mp_session_process_count(const mp_session *session);
/* For a rank that fails in a data-parallel job: flushes stdio and ends the
 * process with `code` without MPI_Finalize, so that mpirun ends the whole
 * job instead of leaving the other ranks waiting in an all-reduce. Does
 * nothing (returns) where no session started MPI. */
void mp_distributed_abort(int code);
int64_t mp_session_num_features(const mp_session *session);
int64_t mp_session_num_classes(const mp_session *session);

/* Parameters (kind 0) and optimizer state (kind 1), by index: name, rank,
 * shape (owned by the session) and a copy of the values in or out. */
size_t mp_session_count(const mp_session *session, int kind);
const char *mp_session_name(const mp_session *session, int kind, size_t index);
size_t mp_session_rank(const mp_session *session, int kind, size_t index);
const int64_t *mp_session_shape(const mp_session *session, int kind,
                                size_t index);
int mp_session_get(const mp_session *session, int kind, size_t index,
                   float *out, size_t count);
int mp_session_set(mp_session *session, int kind, size_t index,
                   const float *values, size_t count);
/* The index of the tensor of `kind` named `name` (the model's mp.param
 * name; optimizer state names are mp-run's checkpoint names), or -1. */
int64_t mp_session_find(const mp_session *session, int kind, const char *name);

/* Initialisation schemes. Fans come from the shape: a rank-4 conv kernel
 * F x C x kh x kw has fan-in C*kh*kw and fan-out F*kh*kw; other weights
 * (output dimension last) fan-in = elements / last dimension, fan-out =
 * last dimension. He: variance 2/fan_in; Xavier (Glorot): 2/(fan_in +
 * fan_out). */
typedef enum mp_init_scheme {
  MP_INIT_ZEROS = 0,
  MP_INIT_HE_UNIFORM = 1, /* the default of a new session, for weights */
  MP_INIT_HE_NORMAL = 2,
  MP_INIT_XAVIER_UNIFORM = 3,
  MP_INIT_XAVIER_NORMAL = 4,
} mp_init_scheme;

/* Initialises the parameter named `name` by `scheme` from its own `seed`.
 * He and Xavier need a weight of rank 2 or more; an unknown name or scheme
 * is an error. */
int mp_session_init_parameter(mp_session *session, const char *name,
                              int scheme, uint64_t seed);
/* Initialises every parameter from one `seed`: weights (rank >= 2) by
 * `scheme`, the rest (biases) to zero. Optimizer state is unchanged. */
int mp_session_init_parameters(mp_session *session, int scheme,
                               uint64_t seed);

/* One training step on a batch: x and labels as mp_session_io_json
 * describes them (floats: batch x features and batch x classes one-hot;
 * a language model: i64 token ids [B, T] and target ids [B, T]). `loss`
 * and `stepped` (0 when the step was skipped for inf/nan gradients, and
 * for a micro-batch that only accumulated its gradients) may be NULL. */
int mp_session_train_step(mp_session *session, const void *x,
                          const void *labels, float *loss, int *stepped);
/* Logits (batch x classes; [B, T, V] for a language model) of a batch. */
int mp_session_predict(mp_session *session, const void *x, float *logits);
/* What the step takes and the prediction gives, as JSON:
 * {"x": {"shape": [...], "dtype": "f32"|"i32"|"i64"}, "labels": {...},
 * "logits": {...}}. Owned by the session. */
const char *mp_session_io_json(const mp_session *session);

/* The training step counter, current loss scale and consecutive clean
 * steps of the dynamic scaler. */
int32_t mp_session_step(const mp_session *session);
float mp_session_loss_scale(const mp_session *session);
int32_t mp_session_growth_tracker(const mp_session *session);
/* The global L2 norm of the unscaled gradients the last update used,
 * before clipping (inf/nan when they overflowed; NaN before the first
 * update). */
float mp_session_grad_norm(const mp_session *session);
/* Micro-batches per optimizer step (options.accumulate), and how many of
 * the current window's have been accumulated. */
int64_t mp_session_accumulation(const mp_session *session);
int64_t mp_session_window_position(const mp_session *session);
/* Steps skipped for inf/nan gradients since training began (restored by
 * mp_session_load). */
int64_t mp_session_skipped_steps(const mp_session *session);

/* Saves parameters, optimizer state and the scalars above atomically (an
 * .npz mp-run reads); loads them back (shapes must match). */
int mp_session_save(const mp_session *session, const char *path);
int mp_session_load(mp_session *session, const char *path);
/* Loads only the parameters of a checkpoint (fine-tuning, e.g. QAT from an
 * f32 run): optimizer state and scalars stay as they are. */
int mp_session_load_parameters(mp_session *session, const char *path);

/*===----------------------------------------------------------------------===*
 * Training runs: the epoch loop mp-run train runs (mp::Trainer): the rows
 * in the library's epoch order, a checkpoint after every epoch (and every
 * N steps), resuming from inside an epoch, held-out accuracy per epoch.
 *===----------------------------------------------------------------------===*/

typedef struct mp_trainer mp_trainer;

typedef struct mp_trainer_options {
  int64_t epochs;           /* epochs of the whole run: 10 */
  uint64_t seed;            /* the epoch order's seed: 0 */
  const char *checkpoint;   /* saved after every epoch (NULL or "": not
                               saved); a directory means DIR/checkpoint.npz */
  int64_t checkpoint_every; /* also every N steps (0: epoch ends only) */
  int resume;               /* continue from `checkpoint` (0) */
  /* The stability monitor (docs/training.md): its checks (1; 0: off), and
   * the run's history as JSON after every epoch (NULL or "": none). */
  int monitor;
  const char *stats_path;
  double spike_factor;     /* a loss above this x the recent median: 10 */
  int64_t overflow_window; /* overflow_limit skipped steps within */
  int64_t overflow_limit;  /*   overflow_window steps: 5 within 50 */
  /* Self-healing precision (mp-run --auto-precision-repair): -1 (default:
   * on for sessions created with precision "auto"), 0 off, 1 on (an error
   * where it cannot work: a run without loss scaling, an artifact). */
  int precision_repair;
} mp_trainer_options;

void mp_trainer_options_init(mp_trainer_options *options);

/* The row order of epoch `epoch` (1, 2, ...) of a run seeded `seed`:
 * `rows` indices into `order` (docs/training.md specifies the shuffle). */
int mp_epoch_order(int64_t rows, uint64_t seed, int64_t epoch,
                   int64_t *order);

/* A run of `session` over the training rows (x: rows x features, y: rows x
 * classes) and, for the accuracy after each epoch, the test rows (test_rows
 * may be 0). The trainer keeps the pointers: the session and the rows must
 * outlive it. With options->resume it restores the checkpoint first. */
int mp_trainer_create(mp_session *session, const float *x_train,
                      const float *y_train, int64_t train_rows,
                      const float *x_test, const float *y_test,
                      int64_t test_rows, const mp_trainer_options *options,
                      mp_trainer **out);
void mp_trainer_free(mp_trainer *trainer);

/* Completed epochs, and the batch inside the next epoch where training
 * continues (nonzero after resuming from a save inside an epoch). */
int64_t mp_trainer_epoch(const mp_trainer *trainer);
int64_t mp_trainer_batch(const mp_trainer *trainer);
/* 1 when all the run's epochs are trained. */
int mp_trainer_finished(const mp_trainer *trainer);

typedef struct mp_epoch_report {
  int64_t epoch, epochs;
  int64_t steps, samples;
  double loss;     /* mean training loss of the epoch's steps */
  double seconds;  /* in training steps */
  double accuracy; /* held-out accuracy in percent (-1: no test rows) */
  int64_t skipped; /* skipped steps of the run so far */
  float scale;     /* loss scale after the epoch */
} mp_epoch_report;

/* Trains the rest of the current epoch, measures accuracy, saves the
 * checkpoint; `report` (may be NULL) gets the epoch's figures and
 * mp_trainer_line the progress line mp-run prints for it. */
int mp_trainer_run_epoch(mp_trainer *trainer, mp_epoch_report *report);
const char *mp_trainer_line(const mp_trainer *trainer);

/* What the stability monitor found in a step: `issue` is one of
 * "nonfinite-loss", "loss-spike", "repeated-overflow", "scale-pinned",
 * "gradient-underflow"; `op` the first op with inf/nan when probes ran,
 * else "". */
typedef struct mp_stability_report {
  int64_t step;
  const char *issue;
  const char *message;
  const char *op;
} mp_stability_report;

/* The reports of the last mp_trainer_run_epoch: their number, and in
 * `*reports` (may be NULL) an array valid until the next run_epoch or
 * mp_trainer_free. */
int64_t mp_trainer_reports(const mp_trainer *trainer,
                           const mp_stability_report **reports);

/* A precision repair of the run: the step after which it ran, whether it
 * changed the precision (0: it found nothing to fix, and repairs stop),
 * the line mp-run prints for it, the ops it kept in f32, and the seconds
 * it took (probing and recompiling; not counted as training time). */
typedef struct mp_precision_repair {
  int64_t step;
  int repaired;
  const char *line;
  int64_t kept_count;
  const char *const *kept;
  double seconds;
} mp_precision_repair;

/* The run's repairs so far, in order: their number, and in `*repairs` (may
 * be NULL) an array valid until the next run_epoch or mp_trainer_free. */
int64_t mp_trainer_repairs(const mp_trainer *trainer,
                           const mp_precision_repair **repairs);

/*===----------------------------------------------------------------------===*
 * Inference: a model's mp.predict compiled alone, in f32, f16, bf16 or INT8,
 * with the parameters of a session (trained, or loaded from a checkpoint).
 *===----------------------------------------------------------------------===*/

typedef struct mp_infer mp_infer;

typedef struct mp_infer_options {
  const char *precision;        /* "f32" (default), "f16", "bf16", "int8",
                                   or "auto" (what the hardware has, as
                                   mp_session_options.precision) */
  const char *calibration_path; /* int8: statistics from mp_calibrate;
                                   NULL or "" with a weights session
                                   trained with qat: its observers */
  const char *method;           /* int8: "minmax" (default), "percentile",
                                   "entropy" */
  double percentile;            /* int8, method percentile: 99.99 */
  int per_channel;              /* int8: per-output-channel weights (1) */
  double max_error;             /* int8: ops whose estimated relative error
                                   is above this fall back to f32 (0.05) */
  const char *device;           /* "cpu" (default) or "cuda": weights on
                                   the GPU, predictions there */
  /* int8, the measured-error fallback (mp-run --quant-measure N): with
   * measure_batches > 0, every eligible op runs in int8 and in f32 over that
   * many batches of the measure_rows rows of measure_x (rows x features,
   * in order, wrapping around; on the CPU), and each op whose relative RMS
   * error exceeds max_error stays f32. 0 (default): the estimate alone. */
  const float *measure_x;
  int64_t measure_rows;
  int64_t measure_batches;
  /* An ONNX model's dynamic batch dimension becomes this (0: the weights
   * session's batch size). */
  int64_t batch_size;
  /* The compile cache, as mp_session_options' (CPU inference without
   * probes): `cache` 1 (default) loads @predict compiled before for the
   * same model, options (a calibration file's contents included) and CPU,
   * and keeps a new one there; 0 compiles every time. `cache_dir` NULL or
   * "" (default): $MP_CACHE_DIR, else $XDG_CACHE_HOME/mp or ~/.cache/mp. */
  int cache;
  const char *cache_dir;
} mp_infer_options;

void mp_infer_options_init(mp_infer_options *options);

/* Compiles @predict of `model_path` for `options` and binds the parameters
 * of `weights` (copied: the session may change or go away afterwards).
 * INT8 weights are quantized here, once; f16/bf16 copies made once. */
int mp_infer_create(const char *model_path, const mp_infer_options *options,
                    const mp_session *weights, mp_infer **out);
/* As mp_infer_create, with the options as one string, "name=value ..."
 * (docs/options.md, "Inference options": precision, calibration,
 * quant-method, quant-percentile, quant-per-channel, quant-max-error,
 * quant-fallback, quant-report, batch-size, device, cache, cache-dir,
 * parallel-loops, ...; NULL or "": the defaults), and int8's measured
 * fallback on `measure_batches` batches of the `measure_rows` rows of
 * `measure_x` (NULL, 0, 0: none), as mp_infer_options' measure_* fields.
 * Every inference option is reachable this way, with the library's checks
 * and messages; bindings need no mirror of mp_infer_options. */
int mp_infer_create_with(const char *model_path, const char *options,
                         const mp_session *weights, const float *measure_x,
                         int64_t measure_rows, int64_t measure_batches,
                         mp_infer **out);
void mp_infer_free(mp_infer *infer);
/* The pass pipelines that compiled @predict, one per line: on tensors
 * (builtin.module(mp-session-infer{...}), which mp-opt runs too), then the
 * lowering; "" when it came from the compile cache. Owned by the session. */
const char *mp_infer_pipelines(const mp_infer *infer);

/* The precision predictions compute in ("f32", "f16", "bf16"; "f32" for
 * int8), and what "auto" chose and why ("" when the precision was given).
 * Owned by the session. */
const char *mp_infer_precision(const mp_infer *infer);
const char *mp_infer_precision_decision(const mp_infer *infer);
int64_t mp_infer_batch_size(const mp_infer *infer);
int64_t mp_infer_num_features(const mp_infer *infer);
int64_t mp_infer_num_classes(const mp_infer *infer);
/* Bytes of the weights one prediction reads (int8 weights and scales, the
 * f16/bf16 copies, the f32 parameters still used). */
int64_t mp_infer_weight_bytes(const mp_infer *infer);

/* What the compile cache did, as mp_session_cache_use ("loaded", "stored",
 * "unusable" with mp_infer_cache_note saying why, or "off"). Owned by the
 * session. */
const char *mp_infer_cache_use(const mp_infer *infer);
const char *mp_infer_cache_note(const mp_infer *infer);

/* Logits (batch x classes) for one batch (batch x features). */
int mp_infer_predict(mp_infer *infer, const float *x, float *logits);

/* Runs `batches` batches of the `rows` rows of `x` (rows x features, taken
 * in order and wrapping around) through @predict of `model_path` with
 * probes on every matmul and convolution (--mp-calibrate) and the
 * parameters of `weights`, and writes the statistics JSON that
 * mp_infer_options.calibration_path takes to `out_path`. */
int mp_calibrate(const char *model_path, const mp_session *weights,
                 const float *x, int64_t rows, int64_t batches,
                 const char *out_path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MP_CAPI_SESSION_H */
