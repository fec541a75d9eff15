"""Bindings (ctypes) to libmp_session.so, the C API of include/mp-c/Session.h:
compile a model, train it step by step, predict and checkpoint, from numpy.

    from mp.runtime import Session
    s = Session("model.mlir", precision="bf16", lr=0.05)
    s.set_parameter("0.weight", w)              # optional: your own initial values
    loss, stepped = s.train_step(x, labels)     # x: batch x ..., labels one-hot
    logits = s.predict(x)
    s.save("run.npz")                           # mp-run reads it (--resume, infer)
    epochs = s.fit(x_train, y_train, x_test, y_test, epochs=10,
                   checkpoint="run.npz",        # mp-run train's loop
                   stats="run.json")            # its history, for plots
    s = Session.open("model.mpa")               # an artifact from mp-compile

    calibrate("model.mlir", s, x_train, "stats.json", batches=10)
    q = InferSession("model.mlir", s, precision="int8", calibration="stats.json")
    logits = q.predict(x_test)                  # any number of rows

The library is <MP_BUILD_DIR>/lib/libmp_session.so (default: the clone's
build/ when the package is imported from it or installed from it with
`pip install -e`); set MP_SESSION_LIB to use another file.
"""

import ctypes
import json
import os
import sys

import numpy as np

from . import run_mlir

PARAMETERS, STATE = 0, 1


class MPError(RuntimeError):
    """An error the C API reported (its message names the cause)."""


class _TrainerOptions(ctypes.Structure):
    _fields_ = [("epochs", ctypes.c_int64), ("seed", ctypes.c_uint64),
                ("checkpoint", ctypes.c_char_p), ("checkpoint_every", ctypes.c_int64),
                ("resume", ctypes.c_int), ("monitor", ctypes.c_int),
                ("stats_path", ctypes.c_char_p), ("spike_factor", ctypes.c_double),
                ("overflow_window", ctypes.c_int64), ("overflow_limit", ctypes.c_int64),
                ("precision_repair", ctypes.c_int)]


class _PrecisionRepair(ctypes.Structure):
    _fields_ = [("step", ctypes.c_int64), ("repaired", ctypes.c_int),
                ("line", ctypes.c_char_p), ("kept_count", ctypes.c_int64),
                ("kept", ctypes.POINTER(ctypes.c_char_p)), ("seconds", ctypes.c_double)]


class _StabilityReport(ctypes.Structure):
    _fields_ = [("step", ctypes.c_int64), ("issue", ctypes.c_char_p),
                ("message", ctypes.c_char_p), ("op", ctypes.c_char_p)]


class _EpochReport(ctypes.Structure):
    _fields_ = [("epoch", ctypes.c_int64), ("epochs", ctypes.c_int64),
                ("steps", ctypes.c_int64), ("samples", ctypes.c_int64),
                ("loss", ctypes.c_double), ("seconds", ctypes.c_double),
                ("accuracy", ctypes.c_double), ("skipped", ctypes.c_int64),
                ("scale", ctypes.c_float)]


_lib = None


def library_path():
    """Where libmp_session.so is: $MP_SESSION_LIB, else
    <build>/lib/libmp_session.so with the build directory of
    run_mlir.build_dir() ($MP_BUILD_DIR, else the clone's build/). Raises
    MPError naming MP_BUILD_DIR when there is no such file."""
    path = os.environ.get("MP_SESSION_LIB")
    if path:
        if not os.path.isfile(path):
            raise MPError("MP_SESSION_LIB=%s: no such file" % path)
        return path
    try:
        build = run_mlir.build_dir()
    except run_mlir.BuildNotFound as error:
        raise MPError(str(error)) from None
    path = os.path.join(build, "lib", "libmp_session.so")
    if not os.path.isfile(path):
        raise MPError("%s is missing: build mp (scripts/setup.sh), or set MP_BUILD_DIR to "
                      "the build directory that holds lib/libmp_session.so (MP_BUILD_DIR=%s)"
                      % (path, os.environ.get("MP_BUILD_DIR", "unset")))
    return path


def library():
    """The loaded libmp_session.so (loaded once, from library_path())."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    # RTLD_GLOBAL, so that the JIT's process-symbol lookup sees what the
    # library links, as it does in mp-run (both sessions also bind the
    # runtime functions their compiled code calls, memrefCopy included,
    # explicitly).
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    P, S = ctypes.c_void_p, ctypes.c_size_t
    f32p = ctypes.POINTER(ctypes.c_float)
    signatures = {
        "mp_last_error": (ctypes.c_char_p, []),
        "mp_session_create_with": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                                  ctypes.POINTER(P)]),
        "mp_session_options_text": (ctypes.c_char_p, [P]),
        "mp_session_io_json": (ctypes.c_char_p, [P]),
        "mp_session_pipelines": (ctypes.c_char_p, [P]),
        "mp_session_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(P)]),
        "mp_session_free": (None, [P]),
        "mp_session_batch_size": (ctypes.c_int64, [P]),
        "mp_distributed_available": (ctypes.c_int, []),
        "mp_distributed_abort": (None, [ctypes.c_int]),
        "mp_session_process_rank": (ctypes.c_int64, [P]),
        "mp_session_process_count": (ctypes.c_int64, [P]),
        "mp_session_num_features": (ctypes.c_int64, [P]),
        "mp_session_num_classes": (ctypes.c_int64, [P]),
        "mp_session_count": (S, [P, ctypes.c_int]),
        "mp_session_name": (ctypes.c_char_p, [P, ctypes.c_int, S]),
        "mp_session_precision": (ctypes.c_char_p, [P]),
        "mp_session_precision_decision": (ctypes.c_char_p, [P]),
        "mp_session_cache_use": (ctypes.c_char_p, [P]),
        "mp_session_cache_note": (ctypes.c_char_p, [P]),
        "mp_hardware_report": (ctypes.c_char_p, []),
        "mp_session_rank": (S, [P, ctypes.c_int, S]),
        "mp_session_shape": (ctypes.POINTER(ctypes.c_int64), [P, ctypes.c_int, S]),
        "mp_session_get": (ctypes.c_int, [P, ctypes.c_int, S, f32p, S]),
        "mp_session_set": (ctypes.c_int, [P, ctypes.c_int, S, f32p, S]),
        "mp_session_train_step": (ctypes.c_int, [P, f32p, f32p, f32p,
                                                 ctypes.POINTER(ctypes.c_int)]),
        "mp_session_predict": (ctypes.c_int, [P, f32p, f32p]),
        "mp_session_step": (ctypes.c_int32, [P]),
        "mp_session_loss_scale": (ctypes.c_float, [P]),
        "mp_session_growth_tracker": (ctypes.c_int32, [P]),
        "mp_session_grad_norm": (ctypes.c_float, [P]),
        "mp_session_accumulation": (ctypes.c_int64, [P]),
        "mp_session_window_position": (ctypes.c_int64, [P]),
        "mp_session_skipped_steps": (ctypes.c_int64, [P]),
        "mp_session_kept_f32_count": (ctypes.c_int64, [P]),
        "mp_session_kept_f32": (ctypes.c_char_p, [P, ctypes.c_int64]),
        "mp_session_init_parameter": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int,
                                                     ctypes.c_uint64]),
        "mp_session_init_parameters": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_uint64]),
        "mp_session_save": (ctypes.c_int, [P, ctypes.c_char_p]),
        "mp_session_load": (ctypes.c_int, [P, ctypes.c_char_p]),
        "mp_session_load_parameters": (ctypes.c_int, [P, ctypes.c_char_p]),
        "mp_infer_create_with": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, P,
                                                f32p, ctypes.c_int64, ctypes.c_int64,
                                                ctypes.POINTER(P)]),
        "mp_infer_pipelines": (ctypes.c_char_p, [P]),
        "mp_infer_free": (None, [P]),
        "mp_infer_precision": (ctypes.c_char_p, [P]),
        "mp_infer_precision_decision": (ctypes.c_char_p, [P]),
        "mp_infer_batch_size": (ctypes.c_int64, [P]),
        "mp_infer_num_features": (ctypes.c_int64, [P]),
        "mp_infer_num_classes": (ctypes.c_int64, [P]),
        "mp_infer_weight_bytes": (ctypes.c_int64, [P]),
        "mp_infer_predict": (ctypes.c_int, [P, f32p, f32p]),
        "mp_infer_cache_use": (ctypes.c_char_p, [P]),
        "mp_infer_cache_note": (ctypes.c_char_p, [P]),
        "mp_calibrate": (ctypes.c_int, [ctypes.c_char_p, P, f32p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_char_p]),
        "mp_trainer_options_init": (None, [ctypes.POINTER(_TrainerOptions)]),
        "mp_epoch_order": (ctypes.c_int, [ctypes.c_int64, ctypes.c_uint64, ctypes.c_int64,
                                          ctypes.POINTER(ctypes.c_int64)]),
        "mp_trainer_create": (ctypes.c_int, [P, f32p, f32p, ctypes.c_int64, f32p, f32p,
                                             ctypes.c_int64, ctypes.POINTER(_TrainerOptions),
                                             ctypes.POINTER(P)]),
        "mp_trainer_free": (None, [P]),
        "mp_trainer_epoch": (ctypes.c_int64, [P]),
        "mp_trainer_batch": (ctypes.c_int64, [P]),
        "mp_trainer_finished": (ctypes.c_int, [P]),
        "mp_trainer_run_epoch": (ctypes.c_int, [P, ctypes.POINTER(_EpochReport)]),
        "mp_trainer_line": (ctypes.c_char_p, [P]),
        "mp_trainer_reports": (ctypes.c_int64,
                               [P, ctypes.POINTER(ctypes.POINTER(_StabilityReport))]),
        "mp_trainer_repairs": (ctypes.c_int64,
                               [P, ctypes.POINTER(ctypes.POINTER(_PrecisionRepair))]),
        # libmprt's, through the session library's dependency.
        "mprt_gemm_totals": (None, [ctypes.POINTER(ctypes.c_int64),
                                    ctypes.POINTER(ctypes.c_double)]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    _lib = lib
    return lib


def _end_job_on_uncaught_exception():
    """In a data-parallel job, a rank that dies of an exception would leave
    the others waiting for it in an all-reduce (and Python's exit would
    wait in MPI_Finalize): after the traceback, end the whole job."""
    hook = sys.excepthook
    if getattr(hook, "_mp_ends_job", False):
        return

    def end_job(kind, value, traceback):
        hook(kind, value, traceback)
        library().mp_distributed_abort(1)

    end_job._mp_ends_job = True
    sys.excepthook = end_job


def _check(status):
    if status != 0:
        raise MPError(library().mp_last_error().decode())


def _floats(array, shape, what):
    """A C-contiguous float32 copy of `array` with `shape` elements."""
    array = np.ascontiguousarray(array, dtype=np.float32)
    if array.size != int(np.prod(shape)):
        raise ValueError("%s has %d elements, the model expects shape %s" %
                         (what, array.size, tuple(shape)))
    return array


def _pointer(array):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


_DTYPES = {"f32": np.float32, "i32": np.int32, "i64": np.int64}


def _batch(array, io, what):
    """A C-contiguous copy of `array` in the dtype and element count the
    step takes for `what` (io: one entry of mp_session_io_json)."""
    dtype = _DTYPES[io["dtype"]]
    if dtype is not np.float32 and np.issubdtype(np.asarray(array).dtype, np.floating):
        raise ValueError("%s must hold integer ids (%s), got floats" % (what, io["dtype"]))
    array = np.ascontiguousarray(array, dtype=dtype)
    if array.size != int(np.prod(io["shape"])):
        raise ValueError("%s has %d elements, the model expects shape %s" %
                         (what, array.size, tuple(io["shape"])))
    return array


def hardware_report():
    """What `mp-run info` prints: the CPU's (and GPU's) features, what each
    precision runs on, and what precision="auto" picks."""
    return library().mp_hardware_report().decode()


def gemm_totals():
    """(calls, seconds): the matrix products (libmprt's mprt_gemm,
    mprt_gemm_batched(_2d), mprt_gemm_bias and mprt_gemm_s8_dequantize
    (_absmax)) this
    process has run so far, and the wall-clock time inside them. The change over some steps, against the steps' time, is
    the share those steps spend in products."""
    calls, seconds = ctypes.c_int64(), ctypes.c_double()
    library().mprt_gemm_totals(ctypes.byref(calls), ctypes.byref(seconds))
    return calls.value, seconds.value


def epoch_order(rows, epoch, seed=0):
    """The row order of epoch `epoch` (1, 2, ...) of a run seeded `seed`
    (mp-run train --seed, Session.fit): the library's Fisher-Yates shuffle
    over SplitMix64 (docs/training.md)."""
    order = np.empty(rows, dtype=np.int64)
    _check(library().mp_epoch_order(rows, seed, epoch,
                                    order.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))))
    return order


# mp_init_scheme of include/mp-c/Session.h.
INIT_SCHEMES = {"zeros": 0, "he-uniform": 1, "he-normal": 2, "xavier-uniform": 3,
                "xavier-normal": 4}


def _init_scheme(name):
    try:
        return INIT_SCHEMES[name]
    except KeyError:
        raise ValueError("unknown init scheme '%s': expected %s" % (
            name, ", ".join(INIT_SCHEMES))) from None


def _option_value(name, value):
    if name == "keep-f32":
        if isinstance(value, (str, bytes)):
            raise TypeError("keep_f32 is a list of locations, not one string")
        return ",".join(os.fspath(p) for p in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # reads back as the same double
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def options_text(options):
    """The C API's options string ("name=value ...") for keyword options:
    '_' becomes '-', None is left out, lists are comma-separated."""
    parts = []
    for key, value in options.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        text = _option_value(name, value)
        if not text or any(c.isspace() or c in "\"'" for c in text):
            quote = "'" if '"' in text else '"'
            text = quote + text + quote
        parts.append(name + "=" + text)
    return " ".join(parts)


class Session:
    """A compiled model: its training step (autodiff, loss scaling,
    optimizer, mixed precision) and prediction, JIT-compiled for this CPU."""

    def __init__(self, model_path, **options):
        """Compiles `model_path` (.mlir or .onnx) with the training options
        given as keywords: every option of docs/options.md (mp-run's flags,
        declared once in include/mp/Session/TrainOptions.def), its name
        with '_' for '-'. Those left out or None take the library's
        defaults (f32, loss scale by precision, SGD, lr 0.05, momentum
        0.9, seed 0, the CPU, the compile cache on). For example
        precision="bf16" (or "auto": `precision` and `precision_decision`
        say what and why), loss_scale="adaptive", optimizer="adamw",
        accumulate=4, keep_f32=["model.mlir:12:5"] (a list of source
        locations; `kept_f32` says which the session keeps), cache=False,
        loss="mse" and batch_size=64 (an ONNX model), qat=True,
        qat_freeze_after=100, weight_copies="convert", and
        distributed=True (in a job started by mpirun -np N: every rank
        creates the same session and passes its share of each global
        batch to train_step). A bad value or combination raises MPError
        with mp-run's message; `options` is what the step was compiled
        with."""
        lib = library()
        if options.get("distributed"):
            _end_job_on_uncaught_exception()
        handle = ctypes.c_void_p()
        _check(lib.mp_session_create_with(os.fspath(model_path).encode(),
                                          options_text(options).encode(),
                                          ctypes.byref(handle)))
        self._attach(handle)

    @classmethod
    def open(cls, artifact_path):
        """A session from an artifact mp-compile wrote (docs/artifacts.md):
        no MLIR compilation; options and seed are the artifact's."""
        lib = library()
        handle = ctypes.c_void_p()
        _check(lib.mp_session_open(os.fspath(artifact_path).encode(), ctypes.byref(handle)))
        session = cls.__new__(cls)
        session._attach(handle)
        return session

    def _attach(self, handle):
        lib = library()
        self._handle = handle
        self.batch_size = lib.mp_session_batch_size(handle)
        self.process_rank = lib.mp_session_process_rank(handle)
        self.process_count = lib.mp_session_process_count(handle)
        self.num_features = lib.mp_session_num_features(handle)
        self.num_classes = lib.mp_session_num_classes(handle)
        self.precision = lib.mp_session_precision(handle).decode()
        self.precision_decision = lib.mp_session_precision_decision(handle).decode()
        self.compile_cache = lib.mp_session_cache_use(handle).decode()
        self.compile_cache_note = lib.mp_session_cache_note(handle).decode()
        # The options string the step was compiled with (docs/options.md).
        self.options = lib.mp_session_options_text(handle).decode()
        # Shapes and dtypes of x, the labels and the logits: floats, or a
        # language model's token ids and [B, T, V] logits.
        self.io = json.loads(lib.mp_session_io_json(handle).decode())
        # The pass pipelines that compiled the step, one per line: the step
        # on tensors (mp-session-train{...}, which mp-opt runs as well),
        # then the lowering ("" for an artifact).
        self.pipelines = lib.mp_session_pipelines(handle).decode()
        self._index = {}
        for kind in (PARAMETERS, STATE):
            for i in range(lib.mp_session_count(handle, kind)):
                name = lib.mp_session_name(handle, kind, i).decode()
                rank = lib.mp_session_rank(handle, kind, i)
                dims = lib.mp_session_shape(handle, kind, i)
                self._index[(kind, name)] = (i, tuple(dims[d] for d in range(rank)))

    def close(self):
        if getattr(self, "_handle", None):
            library().mp_session_free(self._handle)
            self._handle = None

    __del__ = close

    def names(self, kind=PARAMETERS):
        return [name for (k, name) in self._index if k == kind]

    def get(self, name, kind=PARAMETERS):
        index, shape = self._lookup(name, kind)
        out = np.empty(shape, dtype=np.float32)
        _check(library().mp_session_get(self._handle, kind, index, _pointer(out), out.size))
        return out

    def set(self, name, values, kind=PARAMETERS):
        index, shape = self._lookup(name, kind)
        values = _floats(values, shape, "'%s'" % name)
        _check(library().mp_session_set(self._handle, kind, index, _pointer(values),
                                        values.size))

    def parameters(self):
        """Every parameter by name (copies)."""
        return {name: self.get(name) for name in self.names(PARAMETERS)}

    set_parameter = set

    def train_step(self, x, labels):
        """One step on a batch; returns (loss, stepped). `stepped` is False
        when the step was skipped for inf/nan gradients (loss scaling), and
        for a micro-batch that only accumulated its gradients."""
        x = _batch(x, self.io["x"], "x")
        labels = _batch(labels, self.io["labels"], "labels")
        loss, stepped = ctypes.c_float(), ctypes.c_int()
        _check(library().mp_session_train_step(self._handle, _pointer(x), _pointer(labels),
                                               ctypes.byref(loss), ctypes.byref(stepped)))
        return float(loss.value), bool(stepped.value)

    def predict(self, x):
        """Logits (batch x classes; [B, T, V] for a language model) of one
        batch."""
        x = _batch(x, self.io["x"], "x")
        logits = np.empty(self.io["logits"]["shape"], dtype=np.float32)
        _check(library().mp_session_predict(self._handle, _pointer(x), _pointer(logits)))
        return logits

    @property
    def step(self):
        return library().mp_session_step(self._handle)

    @property
    def loss_scale(self):
        return library().mp_session_loss_scale(self._handle)

    @property
    def grad_norm(self):
        """The gradient norm of the last update (unscaled, before clipping;
        NaN before the first)."""
        return library().mp_session_grad_norm(self._handle)

    @property
    def accumulation(self):
        """Micro-batches per optimizer step."""
        return library().mp_session_accumulation(self._handle)

    @property
    def window_position(self):
        """Micro-batches already accumulated in the current window."""
        return library().mp_session_window_position(self._handle)

    @property
    def kept_f32(self):
        """Locations of the ops kept in f32 beyond the model's own pins:
        keep_f32 and what precision repairs added."""
        lib = library()
        return [lib.mp_session_kept_f32(self._handle, i).decode()
                for i in range(lib.mp_session_kept_f32_count(self._handle))]

    @property
    def skipped_steps(self):
        """Steps skipped for inf/nan gradients since training began."""
        return library().mp_session_skipped_steps(self._handle)

    def init_parameter(self, name, scheme="he-uniform", seed=0):
        """Re-initialises parameter `name` by `scheme` (INIT_SCHEMES) from
        its own `seed`. He and Xavier need a weight of rank 2 or more."""
        self._lookup(name, PARAMETERS)
        _check(library().mp_session_init_parameter(self._handle, name.encode(),
                                                   _init_scheme(scheme), seed))

    def init_parameters(self, scheme="he-uniform", seed=0):
        """Re-initialises every parameter from one `seed`: weights by
        `scheme`, biases (rank 0 and 1) to zero."""
        _check(library().mp_session_init_parameters(self._handle, _init_scheme(scheme),
                                                    seed))

    def save(self, path):
        _check(library().mp_session_save(self._handle, os.fspath(path).encode()))

    def fit(self, x_train, y_train, x_test=None, y_test=None, epochs=None, seed=None,
            checkpoint=None, checkpoint_every=None, resume=False, verbose=False,
            stats=None, monitor=True, spike_factor=None, overflow_window=None,
            overflow_limit=None, precision_repair=None):
        """Trains as `mp-run train` does, with the same library code
        (mp_trainer_*): each epoch visits the training rows in the
        library's order for `seed`, one step per whole batch; after each
        epoch the held-out accuracy on the test rows (when given) and a
        checkpoint (when `checkpoint` names one; `checkpoint_every` N also
        saves every N steps); `resume` continues from the checkpoint, from
        inside an epoch if it was saved there. `epochs` counts the whole
        run (a resumed run's earlier epochs too). Options left None take
        the library's defaults (mp_trainer_options_init: 10 epochs, seed 0).
        Returns a dict per epoch trained (epoch, loss, accuracy (None
        without test rows), steps, samples, seconds, skipped, scale, line,
        reports); `verbose` prints mp-run's progress line for each and the
        stability monitor's reports (to stderr, as mp-run does).

        The stability monitor (`monitor`, on by default; `spike_factor`,
        `overflow_window`, `overflow_limit` as mp-run's flags) checks each
        step; an epoch's `reports` are dicts (step, issue, message, op).
        `stats` names the JSON file the run's history is written to after
        every epoch (docs/training.md; scripts/plot_training.py plots it).

        `precision_repair` (mp-run's --auto-precision-repair; None: on for
        precision="auto") keeps the f16/bf16 ops of steps that keep failing
        in f32, recompiles and continues; an epoch's `repairs` are dicts
        (step, repaired, line, kept, seconds) of the repairs made in it."""
        lib = library()
        x_train = _rows(x_train, self.num_features, "x_train")
        y_train = _rows(y_train, self.num_classes, "y_train")
        if x_train.shape[0] != y_train.shape[0]:
            raise ValueError("x_train has %d rows but y_train has %d" % (
                x_train.shape[0], y_train.shape[0]))
        if (x_test is None) != (y_test is None):
            raise ValueError("give both x_test and y_test, or neither")
        if x_test is not None:
            x_test = _rows(x_test, self.num_features, "x_test")
            y_test = _rows(y_test, self.num_classes, "y_test")
            if x_test.shape[0] != y_test.shape[0]:
                raise ValueError("x_test has %d rows but y_test has %d" % (
                    x_test.shape[0], y_test.shape[0]))
        options = _TrainerOptions()
        lib.mp_trainer_options_init(ctypes.byref(options))
        if epochs is not None:
            options.epochs = epochs
        if seed is not None:
            options.seed = seed
        if checkpoint is not None:
            options.checkpoint = os.fspath(checkpoint).encode()
        if checkpoint_every is not None:
            options.checkpoint_every = checkpoint_every
        options.resume = 1 if resume else 0
        options.monitor = 1 if monitor else 0
        if stats is not None:
            options.stats_path = os.fspath(stats).encode()
        if spike_factor is not None:
            options.spike_factor = spike_factor
        if overflow_window is not None:
            options.overflow_window = overflow_window
        if overflow_limit is not None:
            options.overflow_limit = overflow_limit
        if precision_repair is not None:
            options.precision_repair = 1 if precision_repair else 0
        none = ctypes.POINTER(ctypes.c_float)()
        handle = ctypes.c_void_p()
        # The trainer keeps pointers to the rows: they stay referenced here
        # until it is freed.
        _check(lib.mp_trainer_create(
            self._handle, _pointer(x_train), _pointer(y_train), x_train.shape[0],
            _pointer(x_test) if x_test is not None else none,
            _pointer(y_test) if y_test is not None else none,
            x_test.shape[0] if x_test is not None else 0, ctypes.byref(options),
            ctypes.byref(handle)))
        epochs_run = []
        try:
            while not lib.mp_trainer_finished(handle):
                report = _EpochReport()
                _check(lib.mp_trainer_run_epoch(handle, ctypes.byref(report)))
                line = lib.mp_trainer_line(handle).decode()
                views = ctypes.POINTER(_StabilityReport)()
                count = lib.mp_trainer_reports(handle, ctypes.byref(views))
                reports = [{"step": views[i].step, "issue": views[i].issue.decode(),
                            "message": views[i].message.decode(),
                            "op": views[i].op.decode() or None} for i in range(count)]
                views = ctypes.POINTER(_PrecisionRepair)()
                count = lib.mp_trainer_repairs(handle, ctypes.byref(views))
                repairs = [{"step": views[i].step, "repaired": bool(views[i].repaired),
                            "line": views[i].line.decode(),
                            "kept": [views[i].kept[k].decode()
                                     for k in range(views[i].kept_count)],
                            "seconds": views[i].seconds}
                           for i in range(count)]
                repairs = repairs[sum(len(e["repairs"]) for e in epochs_run):]
                if verbose:
                    for r in repairs:
                        print(r["line"], flush=True)
                    for r in reports:
                        print("warning: step %d: %s: %s" % (r["step"], r["issue"],
                                                           r["message"]),
                              file=sys.stderr, flush=True)
                    print(line, flush=True)
                epochs_run.append({
                    "epoch": report.epoch, "loss": report.loss,
                    "accuracy": report.accuracy if report.accuracy >= 0 else None,
                    "steps": report.steps, "samples": report.samples,
                    "seconds": report.seconds, "skipped": report.skipped,
                    "scale": report.scale, "line": line, "reports": reports,
                    "repairs": repairs})
        finally:
            lib.mp_trainer_free(handle)
        return epochs_run

    def load(self, path):
        _check(library().mp_session_load(self._handle, os.fspath(path).encode()))

    def load_parameters(self, path):
        """Only the parameters of a checkpoint (fine-tuning, e.g. QAT from an
        f32 run); optimizer state and step stay as they are."""
        _check(library().mp_session_load_parameters(self._handle,
                                                    os.fspath(path).encode()))

    def _lookup(self, name, kind):
        try:
            return self._index[(kind, name)]
        except KeyError:
            raise KeyError("the model has no %s named '%s' (it has %s)" % (
                "parameter" if kind == PARAMETERS else "optimizer state", name,
                ", ".join(self.names(kind)))) from None


def _rows(x, num_features, what):
    """`x` as a C-contiguous float32 (rows x num_features) array."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim == 0 or x.size % num_features or x.size == 0:
        raise ValueError("%s has %d elements, not a whole number of rows of %d "
                         "features" % (what, x.size, num_features))
    return x.reshape(-1, num_features)


class InferSession:
    """A model's mp.predict compiled alone for inference, in f32, f16,
    bf16 (weights converted once), int8 (weights quantized once, activation
    scales from the statistics `calibrate` writes, or with no calibration
    from the observers of a Session trained with qat=True) or int8-dynamic (each
    activation scaled by its own max |x| at run time; no calibration), with the parameters of a Session (copied
    when the InferSession is made). `measure=(x, batches)` (int8): every
    eligible op is measured in int8 against f32 on `batches` batches of the
    rows of `x`, and those above `max_error` stay f32, as `mp-run infer
    --quant-measure N` does on the training split. batch_size fixes an ONNX
    model's dynamic batch (default: the session's). cache and cache_dir are
    Session's: the compiled mp.predict comes from the compile cache when a
    CPU InferSession of the same model and options made it before;
    `compile_cache` says "loaded", "stored", "unusable"
    (`compile_cache_note` says why) or "off"."""

    def __init__(self, model_path, session, precision=None, calibration="",
                 method=None, percentile=None, per_channel=None, max_error=None,
                 device=None, measure=None, batch_size=None, cache=None,
                 cache_dir=None, **options):
        if not isinstance(session, Session) or not getattr(session, "_handle", None):
            raise TypeError("InferSession takes its parameters from an open mp.runtime.Session")
        lib = library()
        # The inference options string (docs/options.md, "Inference
        # options"); None and "" leave the library's default (cache: on,
        # unless MP_CACHE=off). Other keywords
        # are its options too (quant_fallback="f16", parallel_loops=False).
        named = {"precision": precision, "calibration": calibration or None,
                 "quant_method": method, "quant_percentile": percentile,
                 "quant_per_channel": per_channel, "quant_max_error": max_error,
                 "device": device, "batch_size": batch_size, "cache": cache,
                 "cache_dir": cache_dir}
        text = options_text(dict(named, **options))
        x, rows, batches = None, 0, 0
        if measure is not None:
            measured, batches = measure
            measured = _rows(measured, session.num_features, "measure rows")
            x, rows, batches = _pointer(measured), measured.shape[0], int(batches)
        handle = ctypes.c_void_p()
        _check(lib.mp_infer_create_with(os.fspath(model_path).encode(), text.encode(),
                                        session._handle, x, rows, batches,
                                        ctypes.byref(handle)))
        self._handle = handle
        # "int8"/"int8-dynamic", or the float precision predictions run in
        # ("auto" resolved).
        self.precision = (precision if precision in ("int8", "int8-dynamic")
                          else lib.mp_infer_precision(handle).decode())
        self.precision_decision = lib.mp_infer_precision_decision(handle).decode()
        self.batch_size = lib.mp_infer_batch_size(handle)
        self.num_features = lib.mp_infer_num_features(handle)
        self.num_classes = lib.mp_infer_num_classes(handle)
        self.weight_bytes = lib.mp_infer_weight_bytes(handle)
        self.compile_cache = lib.mp_infer_cache_use(handle).decode()
        self.compile_cache_note = lib.mp_infer_cache_note(handle).decode()
        # The pass pipelines that compiled mp.predict, one per line:
        # mp-session-infer{...} (which mp-opt runs too), then the lowering;
        # "" when it came from the compile cache.
        self.pipelines = lib.mp_infer_pipelines(handle).decode()

    def close(self):
        if getattr(self, "_handle", None):
            library().mp_infer_free(self._handle)
            self._handle = None

    __del__ = close

    def predict(self, x):
        """Logits (rows x classes) for any number of rows of `x` (run in
        batches of the model's batch size; the last one zero-padded)."""
        x = _rows(x, self.num_features, "x")
        b = self.batch_size
        out = np.empty((x.shape[0], self.num_classes), dtype=np.float32)
        batch = np.zeros((b, self.num_features), dtype=np.float32)
        logits = np.empty((b, self.num_classes), dtype=np.float32)
        for start in range(0, x.shape[0], b):
            n = min(b, x.shape[0] - start)
            batch[:n] = x[start:start + n]
            batch[n:] = 0
            _check(library().mp_infer_predict(self._handle, _pointer(batch),
                                              _pointer(logits)))
            out[start:start + n] = logits[:n]
        return out


def calibrate(model_path, session, x, out_path, batches=10):
    """Runs `batches` batches of the rows of `x` (in order, wrapping
    around) through the model's mp.predict with probes on every matmul and
    convolution, with the parameters of `session`, and writes the
    calibration statistics (docs/calibration-stats.md) to `out_path`."""
    if not isinstance(session, Session) or not getattr(session, "_handle", None):
        raise TypeError("calibrate takes its parameters from an open mp.runtime.Session")
    x = _rows(x, session.num_features, "x")
    _check(library().mp_calibrate(os.fspath(model_path).encode(), session._handle,
                                  _pointer(x), x.shape[0], int(batches),
                                  os.fspath(out_path).encode()))
