#!/usr/bin/env python3
"""Bounded, seeded mutation fuzzer for mp-opt (standard library only).

The corpus is every .mlir file under test/ and examples/, split at the
`// -----` markers lit uses, with comment lines dropped. Each run takes a
corpus entry, applies one to four random mutations (byte and token flips,
line deletion/duplication/swap, number and type changes, shape edits, mp
attribute removal and edits, indexing-map edits, splicing from another
entry) and runs mp-opt on it with one of mp's passes or pipelines, with
randomly chosen (sometimes bad) options.

A run FAILS when mp-opt
  - dies from a signal (segfault, abort, ...),
  - prints "PLEASE submit a bug report", "Stack dump", "LLVM ERROR",
    "Assertion", "UNREACHABLE executed" or a sanitizer report, or
  - does not finish within --timeout seconds (a hang).
Any other exit, zero or not, is fine: errors with diagnostics are the point.

Each failing input is shrunk by line-based delta debugging (keeping the same
failure signature) and saved under --out with the command and stderr;
failures are deduplicated by a signature made of the top stack frames.
Runs are reproducible: run i uses random.Random(f"{seed}:{i}") whatever
--jobs is. The exit status is 1 when anything failed, 0 otherwise.

  scripts/fuzz_mp_opt.py --runs 3000 --seed 1 --jobs 2 --out build/fuzz
"""

import argparse
import concurrent.futures
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What a crash looks like on stderr, besides death by a signal.
CRASH_MARKERS = [
    "PLEASE submit a bug report",
    "Stack dump",
    "LLVM ERROR",
    "Assertion",
    "UNREACHABLE executed",
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",  # UBSan
]

TYPES = ["f32", "f16", "bf16", "f64", "i8", "i32", "i64", "i1", "index"]
NUMBERS = ["0", "-1", "1", "2", "3", "7", "4096", "2147483648",
           "9223372036854775807", "-9223372036854775808", "0.0", "-0.0",
           "1.0e+38", "3.4e+39", "1.0e-45", "65504.0", "65536.0",
           "0x7FC00000", "0xFF800000", "0x7F800000", "nan", "inf"]
MP_ATTRS = ["mp.param", "mp.loss", "mp.predict", "mp.grad", "mp.seed",
            "mp.gradient_of", "mp.loss_scaling", "mp.state", "mp.precision",
            "mp.decision", "mp.step", "mp.loss_scale", "mp.found_inf",
            "mp.update_of", "mp.stepped"]
# The dialect verifies every mp.* attribute (MPDialect.td): typed values,
# well-formed and not (a negative scale, an unknown mode), next to the
# strings and scalars it must refuse with a diagnostic.
ATTR_VALUES = ['"f32"', '"f16"', '"bf16"', '"i8"', '"w1"', '""', '"x.m"',
               "unit", "0", "1.0", "@loss", "#mp.decision<allow, f16>",
               "#mp.decision<deny, f32>", "#mp.decision<infer, bf16>",
               "#mp.decision<clear, f16>", "[]", "{}", '"__dtypes__"',
               "#mp.precision<f16>", "#mp.precision<bf16>",
               "#mp.precision<f32>", "#mp.precision<i8>",
               "#mp.loss_scaling<mode = dynamic, init_scale = 6.553600e+04, "
               "growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, "
               "growth_interval = 2000, clip_norm = 0.000000e+00>",
               "#mp.loss_scaling<mode = static, init_scale = -1.000000e+00, "
               "growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, "
               "growth_interval = 0, clip_norm = 0.000000e+00>",
               "#mp.loss_scaling<mode = adaptive, init_scale = 6.553600e+04, "
               "growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, "
               "growth_interval = 2000, clip_norm = 0.000000e+00, "
               "margin = 8.000000e+00, hysteresis = 2>",
               "#mp.loss_scaling<mode = adaptive, init_scale = 6.553600e+04, "
               "growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, "
               "growth_interval = 2000, clip_norm = 0.000000e+00>",
               "#mp.loss_scaling<mode = sometimes>"]
OP_NAMES = ["linalg.generic", "linalg.matmul", "linalg.softmax", "math.exp",
            "arith.addf", "linalg.conv_2d_nhwc_hwcf", "tosa.matmul",
            "nosuch.op", "linalg.batch_matmul", "linalg.reduce", ""]
TOKEN_RE = re.compile(r"%[\w.$-]+|@[\w.$-]+|#[\w.$-]+|\^[\w.$-]+|"
                      r"[A-Za-z_][\w.$]*|-?\d+\.\d*(?:[eE][+-]?\d+)?|"
                      r"0x[0-9A-Fa-f]+|-?\d+|\"[^\"\n]*\"|\S")
NUMBER_RE = re.compile(r"(?<![\w%#@^.])-?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?"
                       r"(?:[eE][+-]?\d+)?)(?![\w.])")
TYPE_RE = re.compile(r"\b(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)\b")
SHAPE_RE = re.compile(r"(tensor|memref|vector)<([^<>]*)>")
DIM_RE = re.compile(r"\b(d\d)\b")


# ----------------------------------------------------------------------------
# Corpus
# ----------------------------------------------------------------------------

def load_corpus(dirs):
    """Every .mlir file under `dirs`, split at `// -----`, comments dropped."""
    entries, seen = [], set()
    for base in dirs:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".mlir"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for index, chunk in enumerate(re.split(r"(?m)^// -----\s*$",
                                                       text)):
                    lines = [line for line in chunk.splitlines()
                             if line.strip() and
                             not line.lstrip().startswith("//")]
                    body = "\n".join(lines) + "\n"
                    if len(lines) < 2 or body in seen:
                        continue
                    seen.add(body)
                    label = os.path.relpath(path, ROOT) + f"#{index}"
                    entries.append((label, body))
    return entries


# ----------------------------------------------------------------------------
# Mutations: each takes (rng, text, corpus) and returns new text
# ----------------------------------------------------------------------------

def _lines(text):
    return text.splitlines()


def _join(lines):
    return "\n".join(lines) + "\n"


def mutate_byte(rng, text, corpus):
    if not text:
        return text
    pos = rng.randrange(len(text))
    choice = rng.randrange(3)
    if choice == 0:  # replace
        ch = rng.choice("(){}[]<>,:;=%@#^\"x0123456789-.? \n")
        return text[:pos] + ch + text[pos + 1:]
    if choice == 1:  # delete a short run
        return text[:pos] + text[pos + rng.randint(1, 8):]
    return text[:pos] + text[pos:pos + rng.randint(1, 8)] + text[pos:]


def mutate_token(rng, text, corpus):
    tokens = list(TOKEN_RE.finditer(text))
    if not tokens:
        return text
    target = rng.choice(tokens)
    if rng.random() < 0.5:
        # Another token of the same text: swaps SSA names, ops, types.
        replacement = rng.choice(tokens).group(0)
    else:
        replacement = rng.choice(["", "?", "0", "%0", "f16", "tensor<?xf32>",
                                  "linalg.yield", "return", "{", "}", ")"])
    return text[:target.start()] + replacement + text[target.end():]


def mutate_lines(rng, text, corpus):
    lines = _lines(text)
    if len(lines) < 2:
        return text
    i = rng.randrange(len(lines))
    choice = rng.randrange(4)
    if choice == 0:
        del lines[i]
    elif choice == 1:
        lines.insert(i, lines[i])
    elif choice == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:  # move a line elsewhere
        line = lines.pop(i)
        lines.insert(rng.randrange(len(lines) + 1), line)
    return _join(lines)


def mutate_number(rng, text, corpus):
    numbers = list(NUMBER_RE.finditer(text))
    if not numbers:
        return text
    target = rng.choice(numbers)
    return text[:target.start()] + rng.choice(NUMBERS) + text[target.end():]


def mutate_type(rng, text, corpus):
    types = list(TYPE_RE.finditer(text))
    if not types:
        return text
    if rng.random() < 0.3:
        # Every occurrence of one type at once keeps more inputs valid.
        old = rng.choice(types).group(0)
        new = rng.choice(TYPES)
        return re.sub(r"\b%s\b" % re.escape(old), new, text)
    target = rng.choice(types)
    return text[:target.start()] + rng.choice(TYPES) + text[target.end():]


def mutate_shape(rng, text, corpus):
    shapes = list(SHAPE_RE.finditer(text))
    if not shapes:
        return text
    target = rng.choice(shapes)
    parts = target.group(2).split("x")
    if len(parts) > 1:
        dims = parts[:-1]
        choice = rng.randrange(4)
        if choice == 0:
            dims[rng.randrange(len(dims))] = rng.choice(
                ["0", "1", "?", "2", "3", "4", "65536", "9223372036854775807"])
        elif choice == 1:
            del dims[rng.randrange(len(dims))]
        elif choice == 2:
            dims.insert(rng.randrange(len(dims) + 1), rng.choice(["1", "2", "?"]))
        else:
            rng.shuffle(dims)
        parts = dims + parts[-1:]
    else:
        parts = [rng.choice(["1", "4", "?"])] + parts
    new = "%s<%s>" % (target.group(1), "x".join(parts))
    if rng.random() < 0.4:  # the same change everywhere
        return text.replace(target.group(0), new)
    return text[:target.start()] + new + text[target.end():]


def mutate_attr(rng, text, corpus):
    present = [m for m in re.finditer(
        r"mp\.\w+(?:\s*=\s*(?:#mp\.decision<[^>]*>|\"[^\"]*\"|[\w.@]+))?",
        text)]
    choice = rng.randrange(4)
    if present and choice == 0:  # remove
        target = rng.choice(present)
        return text[:target.start()] + "mp.removed" + text[target.end():]
    if present and choice == 1:  # change the value
        target = rng.choice(present)
        name = target.group(0).split("=")[0].strip()
        return (text[:target.start()] + name + " = " +
                rng.choice(ATTR_VALUES) + text[target.end():])
    if present and choice == 2:  # rename
        target = rng.choice(present)
        rest = target.group(0)[len(target.group(0).split("=")[0].rstrip()):]
        return (text[:target.start()] + rng.choice(MP_ATTRS) + rest +
                text[target.end():])
    # Add one to an op's or a function's attribute dictionary.
    spots = [m for m in re.finditer(r"attributes \{|\{(?=[a-z_]+ =)|"
                                    r"= linalg\.\w+ |= arith\.\w+ |"
                                    r"= math\.\w+ ", text)]
    if not spots:
        return text
    spot = rng.choice(spots)
    attr = rng.choice(MP_ATTRS)
    value = rng.choice(ATTR_VALUES)
    item = attr if value == "unit" else "%s = %s" % (attr, value)
    if spot.group(0).endswith("{"):
        insert = item + ", "
    else:
        insert = "{" + item + "} "
    return text[:spot.end()] + insert + text[spot.end():]


def mutate_indexing(rng, text, corpus):
    choice = rng.randrange(4)
    if choice == 0:
        dims = list(DIM_RE.finditer(text))
        if dims:
            target = rng.choice(dims)
            return (text[:target.start()] + rng.choice(["d0", "d1", "d2", "d3",
                                                        "0", "d0 + d1"]) +
                    text[target.end():])
    if choice == 1:
        iters = list(re.finditer(r'"(?:parallel|reduction)"', text))
        if iters:
            target = rng.choice(iters)
            new = '"reduction"' if "parallel" in target.group(0) \
                else '"parallel"'
            return text[:target.start()] + new + text[target.end():]
    if choice == 2:
        maps = list(re.finditer(r"indexing_maps = \[([^\]]*)\]", text))
        if maps:
            target = rng.choice(maps)
            items = [s.strip() for s in target.group(1).split(",")]
            op = rng.randrange(3)
            if op == 0 and len(items) > 1:
                del items[rng.randrange(len(items))]
            elif op == 1:
                items.append(rng.choice(items))
            else:
                rng.shuffle(items)
            return (text[:target.start()] + "indexing_maps = [" +
                    ", ".join(items) + "]" + text[target.end():])
    maps = list(re.finditer(r"affine_map<\(([^)]*)\) -> \(([^)]*)\)>", text))
    if not maps:
        return text
    target = rng.choice(maps)
    results = [s.strip() for s in target.group(2).split(",") if s.strip()]
    if results and rng.random() < 0.5:
        del results[rng.randrange(len(results))]
    else:
        dims = [s.strip() for s in target.group(1).split(",") if s.strip()]
        if dims:
            results.append(rng.choice(dims))
    new = "affine_map<(%s) -> (%s)>" % (target.group(1), ", ".join(results))
    return text[:target.start()] + new + text[target.end():]


def mutate_splice(rng, text, corpus):
    _, other = rng.choice(corpus)
    mine, theirs = _lines(text), _lines(other)
    if not theirs:
        return text
    start = rng.randrange(len(theirs))
    block = theirs[start:start + rng.randint(1, 12)]
    if rng.random() < 0.3:
        # Whole functions from the other entry, after this entry's.
        funcs = re.findall(r"(?ms)^\s*func\.func .*?^\s*}\s*$", other)
        if funcs:
            return text + rng.choice(funcs) + "\n"
    at = rng.randrange(len(mine) + 1)
    if rng.random() < 0.5 and mine:
        # Replace as many lines as are inserted.
        return _join(mine[:at] + block + mine[at + len(block):])
    return _join(mine[:at] + block + mine[at:])


MUTATIONS = [
    (mutate_byte, 1), (mutate_token, 2), (mutate_lines, 3),
    (mutate_number, 3), (mutate_type, 4), (mutate_shape, 4),
    (mutate_attr, 4), (mutate_indexing, 3), (mutate_splice, 2),
]


def mutate(rng, text, corpus):
    funcs = [f for f, _ in MUTATIONS]
    weights = [w for _, w in MUTATIONS]
    names = []
    for _ in range(rng.choice([1, 1, 1, 1, 2, 2, 3])):
        func = rng.choices(funcs, weights)[0]
        text = func(rng, text, corpus)
        names.append(func.__name__[len("mutate_"):])
    return text, names


# ----------------------------------------------------------------------------
# Pass configurations
# ----------------------------------------------------------------------------

def _double(rng, default):
    return rng.choice([default, default, "0", "-1", "1e300", "nan", "inf",
                       "-inf", "1e-300", "0.5", "2"])


def _calibration(rng, tmpdir, source=os.path.join(
        ROOT, "test", "Transforms", "AnalyzePrecision", "Inputs",
        "calibration.json")):
    """A calibration file: a real one, a mutated one, or a missing path."""
    if rng.random() < 0.2:
        return os.path.join(tmpdir, "no-such-calibration.json")
    with open(source) as f:
        text = f.read()
    for _ in range(rng.randint(0, 3)):
        func = rng.choice([mutate_byte, mutate_number, mutate_token,
                           mutate_lines])
        text = func(rng, text, [])
    path = os.path.join(tmpdir, "calibration.json")
    with open(path, "w") as f:
        f.write(text)
    return path


def _analysis_options(rng, tmpdir):
    options = []
    if rng.random() < 0.5:
        options.append("dtype=" + rng.choice(["f16", "bf16", "bf16", "f32",
                                              "i8", ""]))
    if rng.random() < 0.2:
        options.append("allow-ops=" + rng.choice(OP_NAMES))
    if rng.random() < 0.2:
        options.append("deny-ops=" + rng.choice(OP_NAMES))
    if rng.random() < 0.2:
        options.append("f16-safe-max=" + _double(rng, "32752.0"))
    if rng.random() < 0.2:
        options.append("calibration=" + _calibration(rng, tmpdir))
    if rng.random() < 0.1:
        options.append("report=" + os.path.join(tmpdir, "report.json"))
    if rng.random() < 0.2:
        options.append("keep-signature=" + rng.choice(["true", "false"]))
    return options


KINDS = [
    "parse", "canonicalize", "import", "analyze", "amp", "amp",
    "autodiff", "loss-scaling", "optimizer", "train", "to-upstream",
    "lower-cpu", "contractions", "chain", "calibrate", "quantize",
    "check-numerics", "probes", "convolutions", "device-memory",
    "split-reductions", "autodiff-gpu", "drop-zero-accumulators",
    "in-place-updates", "fuse-siblings", "fuse-rows"]


# Bufferization as the lowerings run it, as pipeline elements.
_BUFFERIZE = ["eliminate-empty-tensors",
              "one-shot-bufferize{bufferize-function-boundaries "
              "function-boundary-type-conversion=identity-layout-map}",
              "buffer-deallocation-pipeline",
              "convert-bufferization-to-memref"]


def _pipeline(passes):
    """One --pass-pipeline argument: mp-opt refuses it beside individual
    pass flags, so a kind that needs a nested pass gives every pass here."""
    return "--pass-pipeline=builtin.module(" + ",".join(passes) + ")"


def _train_prefix(rng):
    """Half the time the training pipeline first (a step's IR), else
    nothing (the input as it is)."""
    if rng.random() < 0.5:
        return []
    return ["mp-train-pipeline{dtype=%s}" % rng.choice(["f16", "bf16", "f32"])]


def pass_args(rng, tmpdir, kinds=None):
    """A (name, argument list) pair: one of mp's passes or pipelines (of
    `kinds` when given)."""
    kind = rng.choice(kinds or KINDS)

    def opts(flag, options):
        return flag + ("{" + " ".join(options) + "}" if options else "")

    if kind == "parse":
        return kind, []
    if kind == "canonicalize":
        return kind, ["--canonicalize"]
    if kind == "import":
        return kind, ["--mp-import"]
    if kind == "analyze":
        return kind, [opts("--mp-analyze-precision",
                           _analysis_options(rng, tmpdir))]
    if kind == "amp":
        options = _analysis_options(rng, tmpdir)
        if not any(o.startswith("dtype=") for o in options):
            options.append("dtype=" + rng.choice(["f16", "bf16"]))
        if rng.random() < 0.2:
            options.append("warn-reduction-size=" +
                           rng.choice(["0", "-1", "1", "2048"]))
        if rng.random() < 0.3:
            options.append("summary=true")
        return kind, [opts("--mp-auto-mixed-precision", options)]
    if kind == "autodiff":
        return kind, ["--mp-autodiff"]
    if kind == "loss-scaling":
        options = []
        if rng.random() < 0.5:
            options.append("mode=" + rng.choice(["dynamic", "static", "none",
                                                 "adaptive", "bogus"]))
        if rng.random() < 0.5:
            options.append("dtype=" + rng.choice(["f16", "bf16", "f8"]))
        for name, default in [("init-scale", "65536.0"),
                              ("growth-factor", "2.0"),
                              ("backoff-factor", "0.5"),
                              ("clip-norm", "0.0"), ("margin", "8.0")]:
            if rng.random() < 0.2:
                options.append(name + "=" + _double(rng, default))
        if rng.random() < 0.2:
            options.append("growth-interval=" +
                           rng.choice(["0", "-1", "1", "2000"]))
        if rng.random() < 0.2:
            options.append("hysteresis=" + rng.choice(["0", "-1", "1", "2"]))
        # Loss scaling works on what autodiff built; the inputs of its own
        # tests already hold gradient functions.
        prefix = ["--mp-autodiff"] if rng.random() < 0.5 else []
        return kind, prefix + [opts("--mp-loss-scaling", options)]
    if kind == "optimizer":
        options = []
        if rng.random() < 0.6:
            options.append("algorithm=" + rng.choice(["sgd", "adam", "adamw",
                                                      "lbfgs"]))
        for name, default in [("lr", "0.01"), ("momentum", "0.9"),
                              ("weight-decay", "0.0"), ("beta1", "0.9"),
                              ("beta2", "0.999"), ("epsilon", "1e-8")]:
            if rng.random() < 0.15:
                options.append(name + "=" + _double(rng, default))
        if rng.random() < 0.2:
            options.append("name=" + rng.choice(["step", "loss", "", "main"]))
        prefix = ["--mp-autodiff"] if rng.random() < 0.5 else []
        if rng.random() < 0.5:
            prefix.append("--mp-loss-scaling")
        return kind, prefix + [opts("--mp-optimizer", options)]
    if kind == "train":
        options = []
        if rng.random() < 0.5:
            options.append("dtype=" + rng.choice(["f16", "bf16", "f32"]))
        if rng.random() < 0.4:
            options.append("optimizer=" + rng.choice(["sgd", "adam",
                                                      "adamw", "x"]))
        if rng.random() < 0.3:
            options.append("loss-scale=" + rng.choice(["dynamic", "static",
                                                       "none", "x"]))
        if rng.random() < 0.2:
            options.append("lr=" + _double(rng, "0.01"))
        return kind, [opts("--mp-train-pipeline", options)]
    if kind == "to-upstream":
        return kind, ["--mp-convert-to-upstream"]
    if kind == "lower-cpu":
        options = []
        if rng.random() < 0.5:
            options.append("runtime-contractions=" +
                           rng.choice(["true", "false"]))
        if rng.random() < 0.3:
            options.append("vectorize=" + rng.choice(["true", "false"]))
        if rng.random() < 0.3:
            options.append("probes=" + rng.choice(["true", "false"]))
        return kind, [opts("--mp-lower-cpu", options)]
    if kind == "calibrate":
        return kind, ["--mp-calibrate"]
    if kind == "quantize":
        options = []
        if rng.random() < 0.9:
            options.append("calibration=" + _calibration(
                rng, tmpdir, os.path.join(ROOT, "test", "Transforms",
                                          "Quantize", "Inputs",
                                          "stats.json")))
        if rng.random() < 0.4:
            options.append("method=" + rng.choice(["minmax", "percentile",
                                                   "entropy", "mse"]))
        if rng.random() < 0.2:
            options.append("percentile=" + _double(rng, "99.99"))
        if rng.random() < 0.2:
            options.append("max-error=" + _double(rng, "0.05"))
        for name in ["per-channel", "hoist-weights", "probe-outputs"]:
            if rng.random() < 0.2:
                options.append(name + "=" + rng.choice(["true", "false"]))
        if rng.random() < 0.2:
            options.append("fallback=" + rng.choice(["f32", "f16", "bf16"]))
        if rng.random() < 0.2:
            options.append("mode=" + rng.choice(["int8", "int4",
                                                 "int8-dynamic"]))
        prefix = ["--mp-import"] if rng.random() < 0.3 else []
        # Sometimes lowered too: the runtime calls of quantized products
        # (mprt_gemm_s8_dequantize) are matched on what the pass leaves.
        suffix = ["--mp-lower-cpu=runtime-contractions=1"] \
            if rng.random() < 0.3 else []
        return kind, prefix + [opts("--mp-quantize", options)] + suffix
    if kind == "check-numerics":
        options = []
        if rng.random() < 0.3:
            options.append("skip-conversions=" +
                           rng.choice(["true", "false"]))
        if rng.random() < 0.2:
            options.append("functions=" + rng.choice(["forward", "loss",
                                                      "nosuch", "main"]))
        prefix = ["--mp-auto-mixed-precision"] if rng.random() < 0.4 else []
        return kind, prefix + [opts("--mp-check-numerics", options)]
    if kind == "probes":
        prefix = [rng.choice(["--mp-calibrate", "--mp-check-numerics"])] \
            if rng.random() < 0.6 else []
        return kind, prefix + ["--mp-probes-to-runtime"]
    if kind == "contractions":
        # Contractions on buffers: bufferize first, as --mp-lower-cpu does
        # (on tensors the pass must leave everything alone).
        runtime = rng.choice(["", "{runtime=cuda}", "{runtime=cpu}",
                              "{runtime=rocm}"])
        if rng.random() < 0.25:
            return kind, ["--mp-contractions-to-runtime" + runtime]
        # One pipeline: mp-opt refuses --pass-pipeline beside pass flags
        # (the convolution prefix used to end every such run in that
        # usage error).
        prefix = ["func.func(mp-convolutions-to-gemm)"] \
            if rng.random() < 0.3 else []
        return kind, [_pipeline(prefix + [
            "mp-convert-to-upstream",
            "one-shot-bufferize{bufferize-function-boundaries}",
            "mp-contractions-to-runtime" + runtime])]
    if kind == "convolutions":
        return kind, ["--pass-pipeline=builtin.module(func.func("
                      "mp-convolutions-to-gemm))"]
    if kind == "split-reductions":
        per_thread = rng.choice(["", "=per-thread=2", "=per-thread=1",
                                 "=per-thread=4096", "=per-thread=-3",
                                 "=per-thread=4096 lanes=16",
                                 "=per-thread=64 lanes=4", "=lanes=-1"])
        return kind, ["--mp-convert-to-upstream",
                      "--mp-split-reductions" + per_thread]
    if kind == "fuse-siblings":
        # After the CPU's split (the partial sums it fuses), on a training
        # step or on the input as it is, sometimes through bufferization
        # and the in-place check (the reshaped views it makes).
        minimum = rng.choice(["", "{min-parallel=1}", "{min-parallel=0}"])
        passes = _train_prefix(rng) + [
            "mp-convert-to-upstream",
            "func.func(mp-split-reductions{per-thread=4096 lanes=16},"
            "mp-fuse-sibling-reductions" + minimum + ")"]
        if rng.random() < 0.5:
            passes += _BUFFERIZE + ["func.func(mp-in-place-updates)"]
        return kind, [_pipeline(passes)]
    if kind == "fuse-rows":
        # On affine loops as they are (the pass's own tests, the
        # accumulator and parallel-loop tests), or on a step's loops after
        # the CPU lowering's first half; then on to parallel bodies and
        # vectors, which must take what the fusion leaves.
        passes = ["func.func(mp-promote-accumulators,mp-fuse-row-loops)"]
        if rng.random() < 0.5:
            passes = _train_prefix(rng) + [
                "mp-convert-to-upstream", "func.func(mp-fuse-elementwise)"
            ] + _BUFFERIZE + ["convert-linalg-to-affine-loops"] + passes
        if rng.random() < 0.5:
            passes += ["mp-parallelize-loops{vector-size=16}",
                       "func.func(mp-vectorize-loops{vector-size=16})"]
        return kind, [_pipeline(passes)]
    if kind == "autodiff-gpu":
        # The training step (autodiff: softmax shift, results read back;
        # unscale's chained checks) lowered for the GPU with device memory.
        dtype = rng.choice(["f16", "bf16", "f32"])
        return kind, ["--mp-train-pipeline=dtype=" + dtype,
                      "--mp-lower-gpu=device-memory=true format=isa"]
    if kind == "drop-zero-accumulators":
        # On a training step (AMP's bodies) or on the input as it is.
        return kind, [_pipeline(_train_prefix(rng) + [
            "mp-convert-to-upstream",
            "func.func(mp-drop-zero-accumulators)"])]
    if kind == "in-place-updates":
        # On buffers, as the lowerings run it (the corpus's mp.update_of
        # arguments come from its lit test).
        return kind, [_pipeline(["mp-convert-to-upstream"] + _BUFFERIZE +
                                ["func.func(mp-in-place-updates)"])]
    if kind == "device-memory":
        # The GPU pipeline up to the device-memory rewrite: bufferized host
        # functions (PTX generation is left to the lit tests: it is slow).
        return kind, ["--mp-convert-to-upstream",
                      "--one-shot-bufferize=bufferize-function-boundaries "
                      "function-boundary-type-conversion=identity-layout-map",
                      "--buffer-deallocation-pipeline",
                      "--convert-bufferization-to-memref",
                      "--mp-gpu-device-memory"]
    # A whole user pipeline.
    dtype = rng.choice(["f16", "bf16"])
    return kind, ["--mp-import", "--mp-analyze-precision",
                  "--mp-auto-mixed-precision=dtype=" + dtype, "--mp-lower-cpu"]


# ----------------------------------------------------------------------------
# Running and judging
# ----------------------------------------------------------------------------

FRAME_RE = re.compile(r"^\s*#\d+\s+0x[0-9a-f]+\s+(.*?)(?:\s+\(?/.*)?$")
IGNORED_FRAMES = ("llvm::sys::", "SignalHandler", "__restore_rt", "raise",
                  "abort", "__pthread_kill", "pthread_kill", "gsignal",
                  "llvm::report_fatal_error", "__assert", "__libc_start",
                  "_start", "__sanitizer", "__asan", "__ubsan", "__interceptor",
                  "___interceptor")


def signature(kind, stderr):
    """A short key naming the failure: its kind, message and top frames."""
    frames = []
    for line in stderr.splitlines():
        match = FRAME_RE.match(line)
        if not match:
            continue
        frame = match.group(1)
        frame = re.sub(r"\s*\(.*?\+0x[0-9a-f]+\)$", "", frame)  # lib+offset
        frame = re.sub(r"\s+/\S+:\d+(:\d+)?$", "", frame)       # file:line
        if not frame or any(s in frame for s in IGNORED_FRAMES):
            continue
        frames.append(frame[:120])
        if len(frames) == 4:
            break
    message = ""
    for marker in ("LLVM ERROR", "Assertion", "UNREACHABLE", "runtime error:",
                   "ERROR: AddressSanitizer"):
        for line in stderr.splitlines():
            if marker in line:
                message = re.sub(r"0x[0-9a-f]+|\d+", "N", line.strip())[:160]
                break
        if message:
            break
    return kind + " | " + message + " | " + " <- ".join(frames)


def mp_opt_env():
    env = dict(os.environ)
    env.setdefault("LLVM_SYMBOLIZER_PATH",
                   "/usr/lib/llvm-22/bin/llvm-symbolizer")
    # For an mp-opt built with ASan (scripts/sanitize.sh --full): LLVM's
    # inline allocators poison memory in mp's instrumented code that MLIR's
    # uninstrumented code then uses (false reports), and leaks at exit are
    # not crashes. Later ASAN_OPTIONS entries override earlier ones.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                           ":allow_user_poisoning=0:detect_leaks=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


# A verifier's message ("'tensor.expand_shape' op expected ..."); mp's passes
# report their own errors without the op-name prefix.
VERIFIER_ERROR_RE = re.compile(r"error: '[\w.]+' op [^\n]*")


def run_mp_opt(mp_opt, args, text, timeout, tmpdir):
    """Runs mp-opt; returns (status, kind, stderr) with status ok|crash|hang."""
    path = os.path.join(tmpdir, "input.mlir")
    with open(path, "w") as f:
        f.write(text)
    try:
        proc = subprocess.run([mp_opt, path, "-o", os.devnull] + args,
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=timeout,
                              cwd=tmpdir, env=mp_opt_env())
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode("utf-8", "replace") if e.stderr else ""
        return "hang", "hang", err
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0:
        return crash_status(stderr), "signal %d" % -proc.returncode, stderr
    for marker in CRASH_MARKERS:
        if marker in stderr:
            return crash_status(stderr), marker, stderr
    invalid = VERIFIER_ERROR_RE.search(stderr) if proc.returncode and args else None
    if invalid and subprocess.run([mp_opt, path, "-o", os.devnull],
                                  stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=timeout,
                                  cwd=tmpdir).returncode == 0:
        # The input verifies, the output of the passes does not: a pass made
        # invalid IR (a verifier's "'op' op ..." message, not a pass's own).
        message = re.sub(r"\d+", "N", invalid.group(0))[:160]
        return "invalid", "invalid IR after a pass: " + message, stderr
    return "ok", "exit %d" % proc.returncode, stderr


# mp's own code on a stack: its namespace (mlir::mp, also as a template
# argument: an inlined verifier shows up as mlir::Op<mlir::mp::XOp, ...>),
# with debug info a source or generated file of mp's libraries (lib/,
# include/, also under a build directory; not tools/, whose main() is on
# every stack), without it a source file of mp's libraries by name (the
# symbolizer names the file of a static or anonymous-namespace function:
# "MPOps.cpp:0:0" for mp's, built by GCC, "Parser.cpp.o:0:0" for Debian's
# MLIR, so the names cannot collide).
MP_PATH_RE = re.compile(re.escape(ROOT) + r"/(?:[^/\s]+/)?(?:lib|include)/"
                        r"\S+:\d+")
MP_SOURCES = frozenset(
    name for _, _, names in os.walk(os.path.join(ROOT, "lib"))
    for name in names if name.endswith(".cpp"))
SOURCE_NAME_RE = re.compile(r"(?<!\S)([\w.+-]+\.cpp):\d+")
STACK_FRAME_RE = re.compile(r"^\s*#\d+\s+0x[0-9a-fA-F]+\s")


def mp_frames(stderr):
    """The stack frames (and UBSan/assertion locations) in mp's own code."""
    found = []
    for line in stderr.splitlines():
        if STACK_FRAME_RE.match(line):
            if ("mlir::mp::" in line or MP_PATH_RE.search(line) or
                    any(name in MP_SOURCES
                        for name in SOURCE_NAME_RE.findall(line))):
                found.append(line.strip())
        elif "runtime error:" in line or "Assertion" in line:
            # "<file>:<line>:<col>: runtime error: ...", "mp-opt: <file>:
            # <line>: <function>: Assertion ... failed." (only the file
            # counts here: a failed cast<> names mp's ops in LLVM's header).
            if MP_PATH_RE.search(line):
                found.append(line.strip())
    return found


def crash_status(stderr):
    """'parser' for a crash in MLIR's parser or in its printer of an upstream
    op, before or without any pass and with no mp code on the stack (nothing
    mp can prevent; counted apart), else 'crash'.

    mp's code comes first: MLIR verifies while parsing, so a crash in an mp
    op's or attribute's verifier, parser or printer has parseSourceFile (or
    an upstream print) on its stack too, and is still mp's to fix."""
    if "PassManager::run" in stderr or mp_frames(stderr):
        return "crash"
    if "parseSourceFile" in stderr or "parseAsmSourceFile" in stderr:
        return "parser"
    # Parse, verify, print: IR the parser and verifier accepted that the
    # upstream printer cannot print (U4 in docs/reliability.md).
    if "::print(mlir::OpAsmPrinter&)" in stderr:
        return "parser"
    return "crash"


# Pipelines whose outputs join the corpus (see main).
DERIVE_PIPELINES = [
    ("autodiff", ["--mp-autodiff"]),
    ("scaled", ["--mp-autodiff", "--mp-loss-scaling"]),
    ("step", ["--mp-autodiff", "--mp-loss-scaling", "--mp-optimizer"]),
    ("analyzed", ["--mp-import", "--mp-analyze-precision"]),
    ("amp", ["--mp-import", "--mp-auto-mixed-precision=dtype=bf16"]),
    ("calibrated", ["--mp-import", "--mp-calibrate"]),
    ("checked", ["--mp-check-numerics"]),
]


def produce(mp_opt, args, text, timeout, tmpdir):
    """mp-opt's output for `text`, or None when it fails."""
    path = os.path.join(tmpdir, "input.mlir")
    with open(path, "w") as f:
        f.write(text)
    try:
        proc = subprocess.run([mp_opt, path] + args,
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=timeout,
                              cwd=tmpdir, env=mp_opt_env())
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    output = proc.stdout.decode("utf-8", "replace")
    return None if output.strip() == text.strip() else output


def minimize(mp_opt, args, text, key, timeout, tmpdir, budget):
    """Line-based delta debugging: the fewest lines with the same failure."""
    lines = _lines(text)
    tries = 0

    def fails(candidate):
        nonlocal tries
        tries += 1
        status, kind, stderr = run_mp_opt(mp_opt, args, _join(candidate),
                                          timeout, tmpdir)
        return status != "ok" and signature(kind, stderr) == key

    chunks = 2
    while len(lines) >= 2 and tries < budget:
        size = max(1, len(lines) // chunks)
        reduced = False
        for start in range(0, len(lines), size):
            if tries >= budget:
                break
            candidate = lines[:start] + lines[start + size:]
            if candidate and fails(candidate):
                lines = candidate
                chunks = max(chunks - 1, 2)
                reduced = True
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(len(lines), chunks * 2)
    return _join(lines), tries


def self_test():
    """Checks crash_status on made-up stacks of each kind; 0 when all pass."""
    def stack(*frames):
        return ("PLEASE submit a bug report to https://github.com/llvm/"
                "llvm-project/issues/\nStack dump:\n0.\tProgram arguments: "
                "/work/main/build/bin/mp-opt input.mlir\n" +
                "".join(" #%d 0x00005599c02e11e2 %s\n" % (i, frame)
                        for i, frame in enumerate(frames)))
    binary = "(/work/main/build/bin/mp-opt+0x2e1e438)"
    parse = ["mlir::parseAsmSourceFile(llvm::SourceMgr const&, mlir::Block*, "
             "mlir::ParserConfig const&, mlir::AsmParserState*, "
             "mlir::AsmParserCodeCompleteContext*) " + binary,
             "mlir::parseSourceFile(std::shared_ptr<llvm::SourceMgr> const&, "
             "mlir::Block*, mlir::ParserConfig const&, mlir::LocationAttr*) " +
             binary, "main " + binary]
    tool_main = "main %s/tools/mp-opt/mp-opt.cpp:40:10" % ROOT
    cases = [
        # U1: upstream's parser alone.
        ("parser", stack("mlir::FloatType::getWidth() " + binary,
                         "mlir::detail::Parser::parseDenseArrayAttr(mlir::Type)"
                         " " + binary, "llvm::function_ref<...>::callback_fn<"
                         "...>(long) AttributeParser.cpp.o:0:0", *parse)),
        # The same with debug info: mp-opt's main() in tools/ is no mp frame.
        ("parser", stack("mlir::FloatType::getWidth() /usr/lib/llvm-22/"
                         "include/mlir/IR/BuiltinTypes.h:10:3",
                         *parse[:2], tool_main)),
        # U4: an upstream op's printer on parsed IR.
        ("parser", stack("mlir::detail::printDynamicIndexList() " + binary,
                         "mlir::tensor::PadOp::print(mlir::OpAsmPrinter&) " +
                         binary, "main " + binary)),
        # mp's verifiers run inside the parser: mp's crash.
        ("crash", stack("mlir::mp::ObserveOp::verify() " + binary,
                        "mlir::detail::verify(mlir::Operation*, bool) " +
                        binary, *parse)),
        ("crash", stack("mlir::Op<mlir::mp::UnscaleOp, mlir::OpTrait::"
                        "ZeroRegions>::verifyInvariants(mlir::Operation*) " +
                        binary, *parse)),
        ("crash", stack("mlir::mp::PrecisionDecisionAttr::verify(llvm::"
                        "function_ref<mlir::InFlightDiagnostic ()>) " + binary,
                        *parse)),
        # A static helper, known only by its file's name.
        ("crash", stack("checkScale(mlir::Value) MPOps.cpp:0:0", *parse)),
        # With debug info: a file of mp's libraries, or one generated for them.
        ("crash", stack("helper() %s/lib/Dialect/MP/IR/MPOps.cpp:60:7" % ROOT,
                        *parse[:2], tool_main)),
        ("crash", stack("verifyImpl() %s/build-asan/include/mp/Dialect/MP/IR/"
                        "MPOps.cpp.inc:900:3" % ROOT, *parse[:2], tool_main)),
        # An mp op's printer.
        ("crash", stack("mlir::mp::ObserveOp::print(mlir::OpAsmPrinter&) " +
                        binary, "main " + binary)),
        # UBSan in mp's code.
        ("crash", "%s/lib/Dialect/MP/IR/MPOps.cpp:60:7: runtime error: "
                  "shift exponent 64\n" % ROOT + stack(*parse)),
        # Any crash under a pass, and one with no known place.
        ("crash", stack("mlir::detail::OpToOpPassAdaptor::run() " + binary,
                        "mlir::PassManager::run(mlir::Operation*) " + binary)),
        ("crash", stack("main " + binary)),
    ]
    failed = 0
    for i, (expected, stderr) in enumerate(cases):
        got = crash_status(stderr)
        if got != expected:
            failed += 1
            print("self-test case %d: expected %s, got %s\n%s" %
                  (i, expected, got, stderr))
    print("fuzz_mp_opt self-test: %d of %d classifications right" %
          (len(cases) - failed, len(cases)))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--mp-opt", default=os.path.join(ROOT, "build", "bin",
                                                         "mp-opt"))
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2,
                        help="parallel mp-opt processes (1 or 2)")
    parser.add_argument("--time-budget", type=float, default=0,
                        help="stop starting runs after this many seconds "
                             "(0: no limit)")
    parser.add_argument("--timeout", type=float, default=20,
                        help="seconds after which a run counts as a hang")
    parser.add_argument("--minimize-budget", type=int, default=200,
                        help="mp-opt runs allowed to shrink one finding")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz"),
                        help="folder for findings (created)")
    parser.add_argument("--corpus", action="append",
                        help="corpus folder (default: test/ and examples/)")
    parser.add_argument("--no-derive", action="store_true",
                        help="do not add what mp's passes make from the "
                             "corpus to it")
    parser.add_argument("--derive-max", type=int, default=0,
                        help="derive from at most this many (entry, "
                             "pipeline) pairs, chosen by the seed (0: all)")
    parser.add_argument("--strict", action="store_true",
                        help="also fail on crashes inside MLIR's parser or "
                             "an upstream op's printer with no pass and no "
                             "mp code on the stack")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--kind", dest="kinds", action="append",
                        choices=sorted(set(KINDS)),
                        help="only these passes or pipelines (repeatable)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the crash classification on made-up "
                        "stacks and exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()

    if os.sep not in args.mp_opt:  # a name on PATH
        args.mp_opt = shutil.which(args.mp_opt) or args.mp_opt
    args.mp_opt = os.path.abspath(args.mp_opt)  # runs happen in temp dirs
    if not os.access(args.mp_opt, os.X_OK):
        sys.exit("fuzz_mp_opt: no mp-opt at %s (build it, or --mp-opt)" %
                 args.mp_opt)
    jobs = max(1, min(args.jobs, 2))  # the machines have two cores
    corpus = load_corpus(args.corpus or [os.path.join(ROOT, "test"),
                                         os.path.join(ROOT, "examples")])
    if not corpus:
        sys.exit("fuzz_mp_opt: empty corpus")
    prepare_start = time.time()
    # Most runs start from an entry that parses, so that mutations reach the
    # passes rather than the parser; the rest start anywhere.
    with tempfile.TemporaryDirectory(prefix="mp-fuzz-") as tmpdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            parses = list(pool.map(
                lambda entry: run_mp_opt(args.mp_opt, [], entry[1],
                                         args.timeout, tempfile.mkdtemp(
                                             dir=tmpdir))[1] == "exit 0",
                corpus))
    valid = [entry for entry, ok in zip(corpus, parses) if ok]
    # What mp's passes make from the valid entries (gradient functions, train
    # steps, recorded decisions) joins the corpus, so that mutations reach
    # the later passes with inputs of the shape they expect.
    derived = []
    if not args.no_derive:
        jobs_list = [(entry, name, flags) for entry in valid
                     for name, flags in DERIVE_PIPELINES]
        if args.derive_max and len(jobs_list) > args.derive_max:
            chosen = random.Random(args.seed).sample(range(len(jobs_list)),
                                                     args.derive_max)
            jobs_list = [jobs_list[i] for i in sorted(chosen)]
        with tempfile.TemporaryDirectory(prefix="mp-fuzz-") as tmpdir:
            with concurrent.futures.ThreadPoolExecutor(
                    max_workers=jobs) as pool:
                outputs = list(pool.map(
                    lambda job: produce(args.mp_opt, job[2], job[0][1],
                                        args.timeout,
                                        tempfile.mkdtemp(dir=tmpdir)),
                    jobs_list))
        seen = set(text for _, text in corpus)
        for (entry, name, _), output in zip(jobs_list, outputs):
            if output and output not in seen and len(output) < 100000:
                seen.add(output)
                derived.append((entry[0] + " | " + name, output))
    corpus = corpus + derived
    valid = valid + derived
    findings_dir = os.path.join(args.out, "findings")
    os.makedirs(findings_dir, exist_ok=True)

    lock = threading.Lock()
    stats = {"runs": 0, "ok": 0, "crash": 0, "hang": 0, "parser": 0,
             "invalid": 0, "exit0": 0}
    per_pass = {}
    unique = {}  # signature -> (finding name, count)
    start = time.time()

    def one_run(index):
        rng = random.Random("%d:%d" % (args.seed, index))
        label, text = rng.choice(valid if valid and rng.random() < 0.85
                                 else corpus)
        with tempfile.TemporaryDirectory(prefix="mp-fuzz-") as tmpdir:
            mutated, mutations = mutate(rng, text, corpus)
            kind_name, flags = pass_args(rng, tmpdir, args.kinds)
            status, kind, stderr = run_mp_opt(args.mp_opt, flags, mutated,
                                              args.timeout, tmpdir)
            with lock:
                stats["runs"] += 1
                stats[status] += 1
                if not args.quiet and stats["runs"] % 500 == 0:
                    print("... %d runs, %d failed, %.0f s" % (
                        stats["runs"],
                        stats["crash"] + stats["hang"] + stats["parser"] +
                        stats["invalid"],
                        time.time() - start), file=sys.stderr, flush=True)
                if kind == "exit 0":
                    stats["exit0"] += 1
                counts = per_pass.setdefault(kind_name, [0, 0])
                counts[0] += 1
                counts[1] += status != "ok"
            if status == "ok":
                return
            key = signature(kind, stderr)
            with lock:
                if key in unique:
                    unique[key][1] += 1
                    return
                name = "%s-%s" % (status, hashlib.sha1(
                    key.encode()).hexdigest()[:10])
                unique[key] = [name, 1]
            budget = args.minimize_budget if status != "hang" else \
                min(args.minimize_budget, 20)
            small, tries = minimize(args.mp_opt, flags, mutated, key,
                                    args.timeout, tmpdir, budget)
            # Re-run the shrunk input for the stderr saved with it.
            _, _, small_err = run_mp_opt(args.mp_opt, flags, small,
                                         args.timeout, tmpdir)
            base = os.path.join(findings_dir, name)
            with open(base + ".mlir", "w") as f:
                f.write(small)
            with open(base + ".orig.mlir", "w") as f:
                f.write(mutated)
            calibration = os.path.join(tmpdir, "calibration.json")
            if os.path.exists(calibration):
                with open(calibration) as src, \
                        open(base + ".calibration.json", "w") as dst:
                    dst.write(src.read())
            with open(base + ".txt", "w") as f:
                f.write("signature: %s\nrun: %d (seed %d)\nfrom: %s\n"
                        "mutations: %s\ncommand: mp-opt %s.mlir %s\n"
                        "minimised in %d runs: %d -> %d lines\n\n%s" %
                        (key, index, args.seed, label, ", ".join(mutations),
                         name, " ".join("'%s'" % a for a in flags), tries,
                         len(_lines(mutated)), len(_lines(small)),
                         small_err or stderr))
            if not args.quiet:
                print("FOUND %s (run %d, %s): %s" % (name, index, kind_name,
                                                     key), flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = set()
        index = 0
        while index < args.runs or futures:
            while (index < args.runs and len(futures) < 2 * jobs and
                   not (args.time_budget and
                        time.time() - start > args.time_budget)):
                futures.add(pool.submit(one_run, index))
                index += 1
            if not futures:
                break
            done, futures = concurrent.futures.wait(
                futures, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                future.result()  # re-raise a bug in the fuzzer itself
            if args.time_budget and time.time() - start > args.time_budget:
                index = max(index, args.runs)  # drain, then stop

    elapsed = time.time() - start
    crashes = sum(1 for k in unique if unique[k][0].startswith("crash"))
    hangs = sum(1 for k in unique if unique[k][0].startswith("hang"))
    invalids = sum(1 for k in unique if unique[k][0].startswith("invalid"))
    parser_unique = len(unique) - crashes - hangs - invalids
    print("fuzz_mp_opt: seed %d, corpus %d entries (%d parse, %d derived; "
          "prepared in %.0f s), %d runs in %.0f s (%.1f runs/s, %d jobs)" % (
              args.seed, len(corpus), len(valid), len(derived),
              start - prepare_start, stats["runs"], elapsed,
              stats["runs"] / max(elapsed, 1e-9), jobs))
    print("%-14s %6s %6s" % ("pass", "runs", "failed"))
    for name in sorted(per_pass):
        print("%-14s %6d %6d" % (name, per_pass[name][0], per_pass[name][1]))
    print("%-14s %6d" % ("exit 0", stats["exit0"]))
    print("runs: %d  crashes: %d  hangs: %d  invalid IR after a pass: %d  "
          "unique: %d (crash %d, hang %d, invalid %d)"
          "  upstream parser/printer crashes: %d (unique %d)" %
          (stats["runs"], stats["crash"], stats["hang"], stats["invalid"],
           crashes + hangs + invalids, crashes, hangs, invalids,
           stats["parser"], parser_unique))
    for key, (name, count) in sorted(unique.items(), key=lambda kv: kv[1][0]):
        print("  %s x%d  %s" % (name, count, key))
    if unique:
        print("findings in %s" % findings_dir)
    return 1 if crashes + hangs + invalids or (args.strict and parser_unique) else 0


if __name__ == "__main__":
    sys.exit(main())
