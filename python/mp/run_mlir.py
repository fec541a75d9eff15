"""Run any function of exported MLIR on numpy arrays with mp's tools.

It appends a driver `@main` to the module (every argument a dense
constant, every result printed bit-exactly as i32 with printMemrefI32),
optionally applies `--mp-auto-mixed-precision`, lowers with mp's CPU pipeline
(`mp-opt --mp-lower-cpu`, the one mp-run uses, without the runtime GEMM)
and executes with MLIR's `mlir-runner`, one process per call.

This is the test and inspection path, not the runtime: it runs any
function with any signature (several results, @loss_grad after
--mp-autodiff, i64 class-index arguments) and compiles on every call.
`mp.runtime` (ctypes over libmp_session.so) is the runtime: it compiles a
model file once and runs its mp.loss training step and mp.predict on
numpy batches, but only in the signatures the C API takes (x [B, ...],
one-hot labels [B, C], logits [B, C]).

Tools: MP_BUILD_DIR (default: <repo>/build when the package is imported
from the clone, or installed from it with `pip install -e`) holds
bin/mp-opt and bin/mp-run;
MLIR_RUNNER and MLIR_LIB_DIR default to Debian's LLVM 22.
"""

import os
import re
import subprocess
import tempfile

import numpy as np

from . import _ir

# The clone's root when this file is python/mp/run_mlir.py in it (source_tree()).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLVM_DIR = "/usr/lib/llvm-22"


class RunError(RuntimeError):
    """A tool failed; the message holds its command and stderr."""


class BuildNotFound(RuntimeError):
    """mp's build directory is unknown: MP_BUILD_DIR is unset and this
    package is not imported from mp's source tree."""


def source_tree():
    """The clone this package is imported from (python/mp, directly or
    through `pip install -e ./python`), or None for an installed copy."""
    if (os.path.isfile(os.path.join(ROOT, "CMakeLists.txt"))
            and os.path.isfile(os.path.join(ROOT, "python", "pyproject.toml"))):
        return ROOT
    return None


def build_dir():
    """mp's build directory (bin/mp-opt, lib/libmp_session.so): $MP_BUILD_DIR
    when set, else <clone>/build when the package is imported from mp's
    source tree. Raises BuildNotFound, naming MP_BUILD_DIR, otherwise."""
    path = os.environ.get("MP_BUILD_DIR")
    if path:
        return path
    root = source_tree()
    if root is not None:
        return os.path.join(root, "build")
    raise BuildNotFound(
        "mp's build directory is unknown: set MP_BUILD_DIR to the directory "
        "scripts/setup.sh (cmake) built or installed mp into (it holds bin/mp-opt "
        "and lib/libmp_session.so); this mp package (%s) is not inside mp's "
        "source tree" % os.path.dirname(os.path.abspath(__file__)))


def tool(name):
    """Path of an mp tool (mp-opt, mp-run) or of mlir-runner."""
    if name == "mlir-runner":
        return os.environ.get("MLIR_RUNNER", os.path.join(LLVM_DIR, "bin", "mlir-runner"))
    return os.path.join(build_dir(), "bin", name)


def _runner_libs():
    lib = os.environ.get("MLIR_LIB_DIR", os.path.join(LLVM_DIR, "lib"))
    return [os.path.join(lib, "libmlir_runner_utils.so"),
            os.path.join(lib, "libmlir_c_runner_utils.so")]


def _check_output(cmd, stdin=None, timeout=300):
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RunError("%s failed (exit %d):\n%s" % (
            " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd[:3])),
            proc.returncode, proc.stderr[-4000:]))
    return proc.stdout


def mp_opt(text, *options, timeout=300):
    """Runs build/bin/mp-opt with `options` on MLIR text; returns its output."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        return _check_output([tool("mp-opt"), path] + list(options), timeout=timeout)
    finally:
        os.unlink(path)


# -- signatures -------------------------------------------------------------------

def _split_top(text, sep=","):
    """Splits at `sep` outside <>, (), [] and {}."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return [p.strip() for p in parts]


def _strip_attrs(item):
    """'tensor<4xf32> {mp.grad = "w"}' -> 'tensor<4xf32>'."""
    depth = 0
    for i, c in enumerate(item):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == "{" and depth == 0:
            return item[:i].strip()
    return item.strip()


def signature(text, func):
    """(argument types, result types) of func.func @func in MLIR text."""
    m = re.search(r"func\.func\s+@%s\(" % re.escape(func), text)
    if not m:
        raise RunError("no function @%s in the module" % func)
    i, depth = m.end(), 1
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    args = [_strip_attrs(a.split(":", 1)[1]) for a in _split_top(text[m.end():i - 1])]
    rest = text[i:].lstrip()
    results = []
    if rest.startswith("->"):
        rest = rest[2:].lstrip()
        if rest.startswith("("):
            j, depth = 1, 1
            while depth:
                depth += {"(": 1, ")": -1}.get(rest[j], 0)
                j += 1
            results = [_strip_attrs(r) for r in _split_top(rest[1:j - 1])]
        else:
            results = [re.match(r"(tensor<[^>]*>|f32|f16|bf16|i1|i32|i64|index)", rest).group(1)]
    return args, results


def _shape_of(type_text):
    m = re.fullmatch(r"tensor<(.*)>", type_text)
    if not m:
        return None
    dims = m.group(1).split("x")[:-1]
    return tuple(int(d) for d in dims)


# -- the driver ---------------------------------------------------------------------

def _driver(func, arg_types, result_types, arrays):
    lines = ["func.func private @printMemrefI32(tensor<*xi32>)",
             "func.func @main() {"]
    names = []
    for i, (t, a) in enumerate(zip(arg_types, arrays)):
        shape = _shape_of(t)
        elem = re.search(r"(f32|i64)>$", t)
        if shape is None or not elem:
            raise RunError("argument %d of @%s has type %s (only f32 and i64 tensors)" % (
                i, func, t))
        elem = elem.group(1)
        a = np.asarray(a, dtype=_ir.ELEMENT_DTYPES[elem])
        if tuple(a.shape) != shape:
            raise RunError("argument %d of @%s: array of shape %s for %s" % (i, func, a.shape, t))
        lines.append("  %%a%d = arith.constant %s : %s" % (i, _ir.dense_hex(a, elem), t))
        names.append("%%a%d" % i)
    res = ", ".join("%%r%d" % i for i in range(len(result_types)))
    lines.append("  %s = func.call @%s(%s) : (%s) -> (%s)" % (
        res, func, ", ".join(names), ", ".join(arg_types), ", ".join(result_types)))
    for i, t in enumerate(result_types):
        value = "%%r%d" % i
        if t == "f32":
            lines.append("  %%s%d = tensor.from_elements %s : tensor<1xf32>" % (i, value))
            value, t = "%%s%d" % i, "tensor<1xf32>"
        shape = _shape_of(t)
        if shape is None or not t.endswith("f32>"):
            raise RunError("result %d of @%s has type %s (only f32)" % (i, func, t))
        if len(shape) == 0:
            lines.append("  %%x%d = tensor.expand_shape %s [] output_shape [1] : %s into tensor<1xf32>"
                         % (i, value, t))
            value, t, shape = "%%x%d" % i, "tensor<1xf32>", (1,)
        it = "tensor<%sxi32>" % "x".join(map(str, shape))
        ident = _ir.affine_map(len(shape), range(len(shape)))
        lines += [
            "  %%e%d = tensor.empty() : %s" % (i, it),
            "  %%b%d = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]} "
            "ins(%s : %s) outs(%%e%d : %s) {" % (i, ident, ident, ", ".join(['"parallel"'] * len(shape)),
                                                  value, t, i, it),
            "  ^bb0(%%f%d: f32, %%o%d: i32):" % (i, i),
            "    %%c%d = arith.bitcast %%f%d : f32 to i32" % (i, i),
            "    linalg.yield %%c%d : i32" % i,
            "  } -> %s" % it,
            "  %%u%d = tensor.cast %%b%d : %s to tensor<*xi32>" % (i, i, it),
            "  func.call @printMemrefI32(%%u%d) : (tensor<*xi32>) -> ()" % i,
        ]
    lines += ["  return", "}"]
    return "\n".join(lines)


_HEADER = re.compile(r"Unranked Memref .*sizes = \[([0-9, ]*)\]")


def _parse_printed(text, count):
    blocks = re.split(r"^(?=Unranked Memref)", text, flags=re.M)
    blocks = [b for b in blocks if b.startswith("Unranked Memref")]
    if len(blocks) != count:
        raise RunError("expected %d printed results, got %d:\n%s" % (count, len(blocks), text[-2000:]))
    out = []
    for block in blocks:
        header, _, data = block.partition("\n")
        sizes = [int(s) for s in _HEADER.match(header).group(1).replace(" ", "").split(",") if s]
        bits = np.array([int(v) for v in re.findall(r"-?\d+", data)], dtype=np.int64)
        if bits.size != int(np.prod(sizes)):
            raise RunError("printed result has %d values for sizes %s" % (bits.size, sizes))
        out.append(bits.astype(np.int32).view(np.float32).reshape(sizes))
    return out


def run(text, func, args, precision="f32", amp_options="", vectorize=False, opt_level=0,
        timeout=300):
    """Executes @func of `text` (MLIR on tensors) on `args` (numpy arrays in
    argument order: f32 tensors, or i64 ones such as class-index targets)
    and returns its results as float32 arrays (a scalar result as shape
    (1,)). mp.dropout is the identity here (no training step).

    precision "f16"/"bf16" applies `--mp-auto-mixed-precision=dtype=...` (plus
    `amp_options`) to the module first. The defaults, scalar loops
    (`--mp-lower-cpu=vectorize=0`) and an unoptimized JIT (`-O0`), compile
    fastest; vectorized loops need opt_level >= 1 (at -O0 the vector
    lowering's per-iteration stack buffers are not promoted to registers,
    and a big matmul overflows the stack).
    """
    arg_types, result_types = signature(text, func)
    if len(args) != len(arg_types):
        raise RunError("@%s takes %d arguments, %d given" % (func, len(arg_types), len(args)))
    if precision != "f32":
        options = "dtype=%s %s" % (precision, amp_options)
        text = mp_opt(text, "--mlir-print-op-on-diagnostic=false",
                      "--mp-auto-mixed-precision=%s" % options.strip())
    text = text.rstrip()
    driver = _driver(func, arg_types, result_types, args)
    if re.search(r"^module\b", text, re.M) and text.endswith("}"):
        # Printed by mp-opt: the driver goes inside the module.
        module = text[:-1] + driver + "\n}\n"
    else:
        module = text + "\n" + driver + "\n"
    # --mp-lower-cpu expands mp.dropout (the identity outside a training step).
    try:
        lowered = mp_opt(module, "--mp-lower-cpu=vectorize=%d" % int(vectorize),
                         timeout=timeout)
    except RunError:
        if not vectorize:
            raise
        # As mp-run does: the affine vectorizer rejects some loop nests.
        lowered = mp_opt(module, "--mp-lower-cpu=vectorize=0", timeout=timeout)
    printed = _check_output([tool("mlir-runner"), "-e", "main", "-entry-point-result=void", "-O%d" % opt_level,
                             "-shared-libs=" + ",".join(_runner_libs())],
                            stdin=lowered, timeout=timeout)
    return _parse_printed(printed, len(result_types))


def run_program(program, inputs, module=None, func="predict", precision="f32", **kwargs):
    """Runs an exported Program's function on input arrays, with the module's
    current parameter values (param_arrays) as the parameter arguments."""
    params = list(program.param_arrays(module).values())
    inputs = [np.asarray(x, dtype=np.int64 if np.issubdtype(np.asarray(x).dtype, np.integer)
                         else np.float32) for x in inputs]
    return run(program.mlir, func, inputs + params, precision=precision, **kwargs)
