#!/usr/bin/env python3
"""GEMM throughput of mp's runtime against the vendor library, side by side.

Times mp's GEMM entry points and PyTorch's matmul (the vendor library:
cuBLAS on the GPU; OpenBLAS / oneDNN on the CPU) on the same buffers, in
one process, interleaved so that clocks and noise hit both alike:

  --device cuda  mprt_cuda_gemm (libmprt_cuda.so, cuBLASLt) on PyTorch's
                 current stream, timed with CUDA events, and
                 mprt_cuda_gemm_sync (what compiled code calls: the
                 runtime's own stream, waited for), timed with the wall
                 clock; against torch.matmul in the same input type
                 (f16/bf16 give f16/bf16 out there, mp writes f32), against
                 torch.mm(..., out_dtype=torch.float32) where PyTorch has it
                 (the same output type as mp), and torch._int_mm for s8.
                 TF32 is off on both sides (mp's f32 is CUBLAS_COMPUTE_32F).
  --device cpu   mprt_gemm (oneDNN, from libmp_session.so, which links
                 libmprt) against torch.matmul on the CPU; a dry run of the
                 script where there is no GPU.

mp's GEMMs accumulate (C += op(A) op(B)): the timed calls add into a C that
is never reset, which costs the same as a fresh one; results are checked
from a zeroed C. Operands are A m x k and B k x n in row-major order, or
stored transposed for the flags (A^T B: a weight gradient, A B^T: an input
gradient, as the training step calls them).

Prints a markdown table: TFLOP/s (TOPS for s8; GFLOP/s on the CPU), mp /
PyTorch, the fraction of the device's dense peak where the device is known
(H100 SXM and H200: 989 TFLOP/s f16/bf16, 1979 TOPS int8, 67 FP32; H100
PCIe: 756, 1513, 51; "unknown" for other devices), and each side's error
against a float64 reference: max |C - ref| / max |ref|. A separate check
runs every flag combination with padded leading dimensions per type. Any
error above its tolerance (f32 1e-3, f16 and bf16 2e-2, s8 exact: 1e-12)
exits 3: a wrong GEMM is not a benchmark.

--require (for the GPU): exit 1 unless, on every shape with m*n*k >= --large
(default 4096^3 on the GPU), the slower of mp's two entry points reaches
--min-ratio (default 0.9) of PyTorch doing the same product: the f32-output
torch.mm for f16/bf16 where PyTorch has out_dtype (else torch.matmul in
f16/bf16, which writes 2-byte results while mp reads and writes f32: by
estimate up to ~20% of a k=4096 product's time), torch.matmul for f32,
torch._int_mm for s8. Shapes without a PyTorch baseline are listed and
skipped. 0.9 leaves room for the per-call work mp does that cuBLAS does not
(a plan-cache lookup, a context push/pop, f32 C read for the accumulation);
the small squares are launch-bound on both sides and not required.

Exit status: 0 ok; 1 --require missed; 2 no usable device or library (a
message, not a traceback); 3 a wrong result.

Library: $MP_BUILD_DIR (default build/) lib/libmprt_cuda.so for the GPU,
lib/libmp_session.so for the CPU (libmprt is a static library linked into
it); MPRT_CUDA_LIB / MPRT_LIB name others. Needs PyTorch (Debian's
python3-torch on the CPU: if this interpreter has no torch, the script
re-runs itself with /usr/bin/python3).

Usage: bench/gemm_bench.py [--device cuda|cpu] [--dtypes f32,f16,bf16,s8]
         [--shapes 1024,4096x4096x32768:ta,...] [--repeats N] [--warmup N]
         [--threads N] [--require] [--min-ratio 0.9] [--large M*N*K]
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRANS_A, TRANS_B = 1, 2
GEMM_TYPES = {"f32": 0, "f16": 1, "bf16": 2, "s8": 3}
# Normwise error against a float64 reference above which a result is wrong.
# s8 must be exact: one unit off in any element is >= 2^-31 of max |ref|;
# 1e-12 only leaves room for a float64 reference that is not bit-exact.
TOLERANCE = {"f32": 1e-3, "f16": 2e-2, "bf16": 2e-2, "s8": 1e-12}
OPS = {0: "A B", TRANS_A: "A^T B", TRANS_B: "A B^T", TRANS_A | TRANS_B: "A^T B^T"}

# Dense peaks (no sparsity), TFLOP/s (TOPS for int8). "f32" is FP32 on the
# CUDA cores: mp's f32 product is CUBLAS_COMPUTE_32F, not TF32 (the TF32
# figures are printed for reference only).
PEAKS = {
    "H100 SXM": {"f32": 67, "tf32": 494, "f16": 989, "bf16": 989, "s8": 1979},
    "H100 PCIe": {"f32": 51, "tf32": 378, "f16": 756, "bf16": 756, "s8": 1513},
}
PEAKS["H200"] = dict(PEAKS["H100 SXM"])

# Transformer shapes: 32768 tokens, hidden 4096, FFN 16384. The forward
# product, the input gradient dY W^T and the weight gradient X^T dY.
TOKENS, HIDDEN, FFN = 32768, 4096, 16384
CUDA_SHAPES = ([(s, s, s, 0, "square") for s in (1024, 2048, 4096, 8192)] + [
    (TOKENS, HIDDEN, HIDDEN, 0, "proj fwd"),
    (TOKENS, HIDDEN, HIDDEN, TRANS_B, "proj dX"),
    (HIDDEN, HIDDEN, TOKENS, TRANS_A, "proj dW"),
    (TOKENS, FFN, HIDDEN, 0, "ffn fwd"),
    (TOKENS, HIDDEN, FFN, TRANS_B, "ffn dX"),
    (HIDDEN, FFN, TOKENS, TRANS_A, "ffn dW"),
])
CPU_SHAPES = ([(s, s, s, 0, "square") for s in (256, 512, 1024)] + [
    (1024, 1024, 1024, TRANS_B, "dX form"),
    (1024, 1024, 1024, TRANS_A, "dW form"),
])


# mp failures that mean the device or cuBLASLt cannot be used (exit 2).
DEVICE_FAILURES = ("no usable GPU", "cannot load cuBLASLt", "lacks cublasLt",
                   "cublasLtCreate failed")


class Unusable(Exception):
    """No usable device or library: a message, exit 2."""


def build_dir():
    return os.environ.get("MP_BUILD_DIR", os.path.join(ROOT, "build"))


def parse_shapes(text):
    """'1024' (square), 'MxNxK', each optionally ':ta', ':tb' or ':tab'."""
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        dims, _, trans = item.partition(":")
        flags = {"": 0, "nn": 0, "ta": TRANS_A, "tb": TRANS_B,
                 "tab": TRANS_A | TRANS_B}.get(trans.lower())
        parts = dims.lower().split("x")
        if flags is None or len(parts) not in (1, 3) or \
                not all(p.isdigit() and int(p) > 0 for p in parts):
            raise SystemExit(f"gemm_bench: bad shape {item!r} (want N or MxNxK, "
                             "optionally :ta, :tb or :tab)")
        m, n, k = (int(parts[0]),) * 3 if len(parts) == 1 else map(int, parts)
        shapes.append((m, n, k, flags, "square" if len(parts) == 1 else "custom"))
    return shapes


def import_torch():
    try:
        import torch
        return torch
    except ImportError:
        pass
    debian = "/usr/bin/python3"
    if (os.path.exists(debian) and os.path.realpath(sys.executable) !=
            os.path.realpath(debian) and not os.environ.get("GEMM_BENCH_REEXEC")):
        print(f"  ({sys.executable} has no torch: running under {debian})",
              file=sys.stderr)
        os.environ["GEMM_BENCH_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(debian, [debian] + sys.argv)
    raise Unusable("PyTorch is not installed for this interpreter "
                   "(Debian: apt-get install python3-torch)")


def load(path, what):
    if not os.path.exists(path):
        raise Unusable(f"{path} is missing: build mp (scripts/setup.sh), or set "
                       f"MP_BUILD_DIR or {what}")
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise Unusable(f"cannot load {path}: {e}")


I64, I32 = ctypes.c_int64, ctypes.c_int32
GEMM_ARGS = [I64] * 9 + [I32, I32]  # a lda b ldb c ldc m n k flags type


def cpu_library():
    path = os.environ.get("MPRT_LIB")
    if not path:
        lib_dir = os.path.join(build_dir(), "lib")
        candidates = [os.path.join(lib_dir, name)
                      for name in ("libmprt.so", "libmp_session.so")]
        path = next((p for p in candidates if os.path.exists(p)), candidates[-1])
    lib = load(path, "MPRT_LIB")
    for name, restype, argtypes in (
            ("mprt_gemm", ctypes.c_int, GEMM_ARGS),
            ("mprt_last_error", ctypes.c_char_p, []),
            ("mprt_gemm_f16_mode", I32, []),
            ("mprt_cpu_features_string", ctypes.c_char_p, [])):
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise Unusable(f"{path} does not export {name}")
        fn.restype, fn.argtypes = restype, argtypes
    return path, lib


def cuda_library():
    path = os.environ.get("MPRT_CUDA_LIB") or \
        os.path.join(build_dir(), "lib", "libmprt_cuda.so")
    lib = load(path, "MPRT_CUDA_LIB")
    for name, restype, argtypes in (
            ("mprt_cuda_gemm", ctypes.c_int, GEMM_ARGS + [ctypes.c_void_p]),
            # + batch, stride_a, stride_b, stride_c; no stream.
            ("mprt_cuda_gemm_sync", ctypes.c_int, GEMM_ARGS + [I64] * 4),
            ("mprt_cuda_available", ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]),
            ("mprt_cuda_set_error_mode", None, [ctypes.c_int]),
            ("mprt_cuda_check", ctypes.c_int, []),
            ("mprt_last_error", ctypes.c_char_p, [])):
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise Unusable(f"{path} does not export {name}")
        fn.restype, fn.argtypes = restype, argtypes
    # A failing mprt_cuda_gemm_sync would otherwise print and exit(1).
    lib.mprt_cuda_set_error_mode(0)  # MPRT_CUDA_ERRORS_RECORD
    return path, lib


def device_peaks(name):
    upper = name.upper()
    if "H200" in upper and "NVL" not in upper:
        return "H200", PEAKS["H200"]
    if "H100" in upper and "PCIE" in upper:
        return "H100 PCIe", PEAKS["H100 PCIe"]
    if "H100" in upper and ("SXM" in upper or "HBM3" in upper):
        return "H100 SXM", PEAKS["H100 SXM"]
    return None, None


class Case:
    """Operands of one product, allocated by torch; mp gets their addresses."""

    def __init__(self, torch, device, dtype, m, n, k, flags, pad=0):
        self.torch, self.dtype = torch, dtype
        self.m, self.n, self.k, self.flags = m, n, k, flags
        tdtype = {"f32": torch.float32, "f16": torch.float16,
                  "bf16": torch.bfloat16, "s8": torch.int8}[dtype]
        a_rows, a_cols = (k, m) if flags & TRANS_A else (m, k)
        b_rows, b_cols = (n, k) if flags & TRANS_B else (k, n)

        def operand(rows, cols):
            if dtype == "s8":
                full = torch.randint(-128, 128, (rows, cols + pad),
                                     dtype=torch.int8, device=device)
            else:
                full = torch.randn(rows, cols + pad, device=device).to(tdtype)
            return full[:, :cols] if pad else full, cols + pad

        self.a, self.lda = operand(a_rows, a_cols)
        self.b, self.ldb = operand(b_rows, b_cols)
        self.a_op = self.a.t() if flags & TRANS_A else self.a
        self.b_op = self.b.t() if flags & TRANS_B else self.b
        cdtype = torch.int32 if dtype == "s8" else torch.float32
        self.c_full = torch.zeros(m, n + pad, dtype=cdtype, device=device)
        self.c = self.c_full[:, :n] if pad else self.c_full
        self.ldc = n + pad
        self.args = (self.a.data_ptr(), self.lda, self.b.data_ptr(), self.ldb,
                     self.c.data_ptr(), self.ldc, m, n, k, flags,
                     GEMM_TYPES[dtype])

    def reference(self):
        """op(A) op(B) in float64 (exact for s8), on the operands' device."""
        t = self.torch
        return t.matmul(self.a_op.to(t.float64), self.b_op.to(t.float64))

    def error(self, result, ref=None):
        """max |result - ref| / max |ref|."""
        t = self.torch
        ref = self.reference() if ref is None else ref
        diff = (result.to(t.float64) - ref).abs().max().item()
        scale = ref.abs().max().item()
        return diff / scale if scale else diff


def call_checked(lib, fn_name, args):
    fn = getattr(lib, fn_name)

    def run():
        if fn(*args):
            raise RuntimeError(f"{fn_name}: {lib.mprt_last_error().decode()}")
    return run


class Timer:
    """Interleaved timing of several callables: median seconds per call."""

    def __init__(self, torch, cuda, warmup, repeats, target_s):
        self.torch, self.cuda = torch, cuda
        self.warmup, self.repeats, self.target_s = warmup, repeats, target_s

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def _batch(self, fn, kind, inner):
        if kind == "events":
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / inner
        self.sync()
        begin = time.perf_counter()
        for _ in range(inner):
            fn()
        self.sync()
        return (time.perf_counter() - begin) / inner

    def measure(self, candidates):
        """candidates: {name: (fn, kind)}; kind 'events' or 'wall'. A
        candidate that raises in its warm-up is reported as {name: error}."""
        errors, live = {}, {}
        for name, (fn, kind) in candidates.items():
            # mprt_cuda_gemm_sync runs on a stream of its own: the operands
            # written on torch's stream must be ready.
            self.sync()
            try:
                for _ in range(max(1, self.warmup)):
                    fn()
                self.sync()
                estimate = self._batch(fn, kind, 1)
            except Exception as e:  # noqa: BLE001 - reported in the table
                lines = str(e).strip().splitlines() or [""]
                errors[name] = f"{type(e).__name__}: {lines[0][:160]}"
                try:
                    self.sync()
                except Exception:  # noqa: BLE001 - the device is gone: mp's row says
                    pass
                continue
            inner = max(1, min(200, int(self.target_s / max(estimate, 1e-7))))
            live[name] = (fn, kind, inner)
        samples = {name: [] for name in live}
        order = list(live)
        for r in range(self.repeats):
            for name in (order if r % 2 == 0 else reversed(order)):
                fn, kind, inner = live[name]
                samples[name].append(self._batch(fn, kind, inner))
        return {name: statistics.median(s) for name, s in samples.items()}, errors


def run_case(torch, lib, device, timer, dtype, m, n, k, flags, has_out_dtype):
    cuda = device == "cuda"
    case = Case(torch, device, dtype, m, n, k, flags)
    candidates = {}
    if cuda:
        stream = torch.cuda.current_stream().cuda_stream
        candidates["mp"] = (call_checked(lib, "mprt_cuda_gemm",
                                         case.args + (stream,)), "events")
        candidates["mp sync"] = (call_checked(lib, "mprt_cuda_gemm_sync",
                                              case.args + (1, 0, 0, 0)), "wall")
    else:
        candidates["mp"] = (call_checked(lib, "mprt_gemm", case.args), "wall")
    a, b = case.a_op, case.b_op
    if dtype == "s8":
        if hasattr(torch, "_int_mm"):
            candidates["torch"] = (lambda: torch._int_mm(a, b), "events" if cuda else "wall")
    else:
        candidates["torch"] = (lambda: torch.matmul(a, b), "events" if cuda else "wall")
        if cuda and dtype in ("f16", "bf16") and has_out_dtype:
            candidates["torch f32-out"] = (
                lambda: torch.mm(a, b, out_dtype=torch.float32), "events")
    seconds, errors = timer.measure(candidates)
    if dtype == "s8" and "torch" not in candidates:
        errors["torch"] = "no torch._int_mm in this PyTorch"

    # Correctness: mp from a zeroed C, PyTorch's result, both against f64.
    timer.sync()
    case.c.zero_()
    timer.sync()  # mprt_cuda_gemm_sync runs on a stream of its own
    call_checked(lib, "mprt_cuda_gemm_sync" if cuda else "mprt_gemm",
                 case.args + ((1, 0, 0, 0) if cuda else ()))()
    timer.sync()
    ref = case.reference()
    err = {"mp": case.error(case.c, ref)}
    for name in ("torch f32-out", "torch"):
        if name in seconds:
            fn = candidates[name][0]
            err[name] = case.error(fn(), ref)
    del ref, case
    if cuda:
        torch.cuda.empty_cache()
    return seconds, errors, err


def check_layouts(torch, lib, device, dtype, cuda):
    """Every flag combination on a non-square shape with padded leading
    dimensions: the worst error of mp against float64, and the flags."""
    worst = (0.0, 0)
    for flags in (0, TRANS_A, TRANS_B, TRANS_A | TRANS_B):
        case = Case(torch, device, dtype, 320, 192, 256, flags, pad=32)
        if cuda:
            torch.cuda.synchronize()
            call_checked(lib, "mprt_cuda_gemm_sync", case.args + (1, 0, 0, 0))()
        else:
            call_checked(lib, "mprt_gemm", case.args)()
        # The padding columns of C must stay untouched (zero).
        pad_err = case.c_full[:, case.n:].abs().max().item()
        err = case.error(case.c) + pad_err
        worst = max(worst, (err, flags))
    return worst


def fmt_rate(seconds, flops, unit):
    return f"{flops / seconds / unit:.1f}" if seconds else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--dtypes", default="f32,f16,bf16,s8")
    parser.add_argument("--shapes", help="comma-separated N or MxNxK[:ta|:tb|:tab] "
                        "(default: the device's list, see the source)")
    parser.add_argument("--repeats", type=int, help="timed samples per candidate "
                        "(median; default 15 on cuda, 9 on cpu)")
    parser.add_argument("--warmup", type=int, help="untimed calls first "
                        "(default 5 on cuda, 2 on cpu)")
    parser.add_argument("--target-ms", type=float, help="calls per sample are "
                        "batched to about this long (default 5 on cuda, 50 on cpu)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for both sides (OMP_NUM_THREADS, "
                        "OPENBLAS_NUM_THREADS, torch.set_num_threads); default 1")
    parser.add_argument("--require", action="store_true",
                        help="exit 1 unless mp >= --min-ratio x PyTorch on "
                        "shapes with m*n*k >= --large")
    parser.add_argument("--min-ratio", type=float, default=0.9)
    parser.add_argument("--large", type=int, help="m*n*k from which --require "
                        "applies (default 4096^3 on cuda, 1024^3 on cpu)")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in GEMM_TYPES:
            parser.error(f"unknown dtype {d!r} (f32, f16, bf16, s8)")
    shapes = parse_shapes(args.shapes) if args.shapes else \
        (CUDA_SHAPES if cuda else CPU_SHAPES)
    repeats = args.repeats or (15 if cuda else 9)
    warmup = args.warmup if args.warmup is not None else (5 if cuda else 2)
    target_s = (args.target_ms or (5.0 if cuda else 50.0)) / 1e3
    large = args.large or (4096 ** 3 if cuda else 1024 ** 3)
    # Before torch and oneDNN load their thread pools.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    try:
        torch = import_torch()
        if cuda:
            if not torch.cuda.is_available():
                why = ctypes.create_string_buffer(512)
                reason = ""
                try:
                    _, probe = cuda_library()
                    if not probe.mprt_cuda_available(why, len(why)):
                        reason = f"; libmprt_cuda: {why.value.decode()}"
                except Unusable as e:
                    reason = f"; {e}"
                raise Unusable("--device cuda: no usable GPU (torch.cuda.is_available() "
                               f"is False{reason}). --device cpu runs the CPU "
                               "comparison.")
            path, lib = cuda_library()
            why = ctypes.create_string_buffer(512)
            if not lib.mprt_cuda_available(why, len(why)):
                raise Unusable(f"--device cuda: libmprt_cuda cannot use the GPU: "
                               f"{why.value.decode()}")
            torch.cuda.set_device(0)  # libmprt_cuda uses device 0's context
            # f32 as f32 on torch's side too (mp's is CUBLAS_COMPUTE_32F).
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
            device_name = torch.cuda.get_device_name(0)
        else:
            path, lib = cpu_library()
            torch.set_num_threads(args.threads)
            device_name = f"CPU ({lib.mprt_cpu_features_string().decode()}), " \
                          f"{args.threads} thread(s)"
    except Unusable as e:
        print(f"gemm_bench: {e}", file=sys.stderr)
        sys.exit(2)

    device = args.device
    has_out_dtype = False
    if cuda:
        try:
            x = torch.ones(32, 32, device="cuda", dtype=torch.float16)
            has_out_dtype = torch.mm(x, x, out_dtype=torch.float32).dtype == torch.float32
        except (TypeError, RuntimeError):
            has_out_dtype = False
    peak_name, peaks = device_peaks(device_name) if cuda else (None, None)
    unit, unit_name = (1e12, "TFLOP/s") if cuda else (1e9, "GFLOP/s")
    timer = Timer(torch, cuda, warmup, repeats, target_s)

    print(f"## GEMM: mp runtime vs PyTorch {torch.__version__} on {device_name}")
    print()
    print(f"library: {path}")
    if cuda:
        if peaks:
            print(f"dense peak ({peak_name}): f16/bf16 {peaks['f16']} TFLOP/s, int8 "
                  f"{peaks['s8']} TOPS, FP32 {peaks['f32']} TFLOP/s (TF32 "
                  f"{peaks['tf32']}, unused: both sides run f32 as f32)")
        else:
            print("dense peak: unknown (not an H100/H200 this script knows)")
        print("torch f32-out: torch.mm(out_dtype=torch.float32) "
              + ("available" if has_out_dtype else "not in this PyTorch"))
    else:
        modes = {1: "NATIVE (AVX512-FP16)", 2: "BF16 (operands rounded to bf16)",
                 3: "F32 (operands widened to f32)"}
        print(f"mp f16 products: {modes.get(lib.mprt_gemm_f16_mode(), '?')}; "
              "dense peak: unknown (CPU)")
    print(f"median of {repeats} samples after {warmup} warm-up calls; unit "
          f"{unit_name} ({'TOPS' if cuda else 'GOPS'} for s8); err = max|C - ref| / max|ref| against "
          "float64")
    print()

    rows, wrong, notes = [], [], {}
    for m, n, k, flags, label in shapes:
        for dtype in dtypes:
            print(f"  {dtype} {m}x{n}x{k} {OPS[flags]} ...", file=sys.stderr)
            name = f"{dtype} {m}x{n}x{k} {OPS[flags]}"
            try:
                seconds, errors, err = run_case(torch, lib, device, timer, dtype,
                                                m, n, k, flags, has_out_dtype)
            except RuntimeError as e:  # mp's status after the timing, or memory
                if "out of memory" in str(e).lower():
                    notes.setdefault(f"skipped {name}", "out of memory")
                    if cuda:
                        torch.cuda.empty_cache()
                    continue
                wrong.append(f"{name}: {e}")
                continue
            if "mp" in errors:
                if any(s in errors["mp"] for s in DEVICE_FAILURES):
                    print(f"gemm_bench: {name}: {errors['mp']}", file=sys.stderr)
                    sys.exit(2)
                wrong.append(f"{name}: mp failed: {errors['mp']}")
                continue
            for who, text in errors.items():
                notes.setdefault(f"{who} {dtype}", text)
            if err["mp"] > TOLERANCE[dtype]:
                wrong.append(f"{name}: mp error {err['mp']:.2e} > "
                             f"{TOLERANCE[dtype]:.0e}")
            rows.append((m, n, k, flags, label, dtype, seconds, errors, err))

    flops = lambda r: 2.0 * r[0] * r[1] * r[2]  # noqa: E731
    show_sync = cuda
    show_f32out = any("torch f32-out" in r[6] for r in rows)
    header = ["shape m x n x k", "op", "dtype", f"mp {unit_name}"]
    header += ["mp sync"] if show_sync else []
    header += ["torch (out)", "mp / torch"]
    header += ["torch f32-out", "mp / f32-out"] if show_f32out else []
    header += ["mp % peak", "torch % peak"] if cuda else []
    header += ["mp err", "torch err"]
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|" + "---:|" * (len(header) - 3))
    for r in rows:
        m, n, k, flags, label, dtype, seconds, errors, err = r
        f = flops(r)
        out = {"s8": "s32", "f32": "f32"}.get(dtype, dtype)
        mp_s = seconds.get("mp")
        cells = [f"{m}x{n}x{k} ({label})", OPS[flags], dtype, fmt_rate(mp_s, f, unit)]
        if show_sync:
            cells.append(fmt_rate(seconds.get("mp sync"), f, unit))
        t = seconds.get("torch")
        cells.append(f"{fmt_rate(t, f, unit)} ({out})" if t else "n/a")
        cells.append(f"{t / mp_s:.2f}x" if t and mp_s else "-")
        if show_f32out:
            t32 = seconds.get("torch f32-out")
            cells.append(fmt_rate(t32, f, unit) if t32 else "-")
            cells.append(f"{t32 / mp_s:.2f}x" if t32 and mp_s else "-")
        if cuda:
            peak = peaks[dtype] * 1e12 if peaks else None
            for s in (mp_s, t):
                cells.append(f"{100 * f / s / peak:.0f}%" if peak and s else
                             ("unknown" if not peak else "-"))
        cells.append(f"{err['mp']:.1e}")
        terr = err.get("torch f32-out", err.get("torch"))
        cells.append(f"{terr:.1e}" if terr is not None else "-")
        print("| " + " | ".join(cells) + " |")
    print()
    print("mp / torch > 1: mp is faster. torch (out): the type torch.matmul "
          "writes; mp writes f32 (s32 for s8) and reads it too (C +=). "
          + ("mp: mprt_cuda_gemm on torch's stream (CUDA events); mp sync: "
             "mprt_cuda_gemm_sync, wall clock per call. torch err: the "
             "f32-out result where timed. Small sizes are bound by the "
             "per-call host work on both sides." if cuda else "mp: mprt_gemm "
             "(oneDNN); torch: its own CPU kernels (OpenBLAS for f32 in "
             "Debian's build)."))
    for name, text in notes.items():
        print(f"note: {name}: {text}")

    # Every flag combination, padded leading dimensions, per dtype.
    print()
    for dtype in dtypes:
        try:
            err, flags = check_layouts(torch, lib, device, dtype, cuda)
        except RuntimeError as e:
            wrong.append(f"{dtype} layout check: {e}")
            continue
        ok = err <= TOLERANCE[dtype]
        print(f"layout check {dtype} 320x192x256, all four flag combinations, "
              f"ld padded by 32: worst err {err:.1e} ({OPS[flags]})"
              + ("" if ok else f" > {TOLERANCE[dtype]:.0e}: WRONG"))
        if not ok:
            wrong.append(f"{dtype} layout check {OPS[flags]}: error {err:.2e}")
    if cuda:
        status = lib.mprt_cuda_check()
        if status:
            wrong.append(f"mprt_cuda_check: {lib.mprt_last_error().decode()}")

    if wrong:
        print()
        for text in wrong:
            print(f"WRONG: {text}")
        sys.exit(3)

    if not args.require:
        return
    print()
    missed = checked = 0
    for r in rows:
        m, n, k, flags, label, dtype, seconds, errors, err = r
        if m * n * k < large:
            continue
        name = f"{dtype} {m}x{n}x{k} {OPS[flags]}"
        base_name = "torch f32-out" if "torch f32-out" in seconds else "torch"
        base = seconds.get(base_name)
        if not base:
            print(f"skip: {name}: no PyTorch baseline")
            continue
        mp_s = max(seconds[c] for c in ("mp", "mp sync") if c in seconds)
        ratio = base / mp_s
        ok = ratio >= args.min_ratio
        checked += 1
        missed += not ok
        print(("ok: " if ok else "FAIL: ") + f"{name}: mp {ratio:.2f}x {base_name} "
              f"(target >= {args.min_ratio:.2f}x)")
    if not checked:
        print(f"FAIL: no shape with m*n*k >= {large} and a PyTorch baseline")
        sys.exit(1)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
