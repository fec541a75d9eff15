#!/usr/bin/env python3
"""Compare two printMemrefF32 dumps element-wise.

Usage:
  compare_outputs.py REFERENCE.txt CANDIDATE.txt [--rtol R] [--atol A] [--label NAME]

Every float printed by printMemrefF32 is collected (the "Unranked Memref
base@ = ... data =" header lines are skipped; several printed memrefs are
concatenated in order).  An element passes when

    |cand - ref| <= atol + rtol * |ref|

(NaN matches only NaN, +-inf only the same inf).  One summary line is printed:

    mlp: 80 values, max abs err 1.2e-07, max rel err 3.1e-07, tol rtol=1e-05 atol=1e-06: ok

Exit status: 0 all elements within tolerance, 1 some element out of
tolerance (the worst one is reported with its index), 2 unreadable file, no
values, or differing element counts.  Standard library only (the python3 on
PATH may lack numpy).

How the dumps are produced (FP32 baseline; examples/*.mlir are bare function
lists, test/Numerics/Inputs/<model>-main.mlir holds the matching @main):

  # TOSA models only, first lower TOSA to linalg:
  cat examples/tosa/mlp.mlir test/Numerics/Inputs/tosa-mlp-main.mlir \\
    | mp-opt --pass-pipeline='builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)' \\
    > mlp.tosa.mlir

  # linalg-on-tensors module (e.g. cat examples/mlp.mlir test/Numerics/Inputs/mlp-main.mlir)
  mp-opt --one-shot-bufferize="bufferize-function-boundaries" \\
         --convert-linalg-to-loops --expand-strided-metadata --lower-affine \\
         --convert-scf-to-cf --finalize-memref-to-llvm \\
         --convert-math-to-llvm --convert-math-to-libm \\
         --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \\
         --reconcile-unrealized-casts \\
    | mlir-runner -e main -entry-point-result=void \\
        -shared-libs=/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so \\
    > mlp.txt

  (--expand-strided-metadata must run before --lower-affine: it emits
  affine.apply for the memref.collapse/expand_shape ops that reshapes
  bufferize to.)

printMemrefF32 prints 6 significant digits, so an rtol below ~1e-5 cannot be
met even by bit-identical computations that round differently when printed.
"""

import argparse
import math
import os
import re
import sys

_HEADER = re.compile(r"^\s*(Unranked|Memref)\b.*")
_SIZES = re.compile(r"sizes\s*=\s*\[([0-9,\s]*)\]")
_FLOAT = re.compile(
    r"[-+]?(?:nan|inf)|[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?",
    re.IGNORECASE)


def parse(path):
    """Return (values, shapes) from a printMemref dump."""
    values, shapes = [], []
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            if _HEADER.match(line):
                m = _SIZES.search(line)
                if m:
                    dims = [int(d) for d in m.group(1).replace(" ", "").split(",") if d]
                    shapes.append(dims)
                continue
            for tok in _FLOAT.findall(line):
                values.append(float(tok))
    return values, shapes


def unflatten(index, shapes):
    """Turn a flat index into (which printed memref, multi-index) when possible."""
    base = 0
    for n, dims in enumerate(shapes):
        count = 1
        for d in dims:
            count *= d
        if index < base + count:
            rem, idx = index - base, []
            for d in reversed(dims):
                idx.append(rem % d if d else 0)
                rem = rem // d if d else 0
            idx = list(reversed(idx))
            prefix = "result %d " % n if len(shapes) > 1 else ""
            return "%s[%s]" % (prefix, ", ".join(map(str, idx)))
        base += count
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference")
    ap.add_argument("candidate")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=0.0)
    ap.add_argument("--label", default=None)
    args = ap.parse_args(argv)
    label = args.label or os.path.basename(args.candidate)

    try:
        ref, ref_shapes = parse(args.reference)
        cand, cand_shapes = parse(args.candidate)
    except OSError as e:
        print("%s: error: %s" % (label, e))
        return 2
    if not ref:
        print("%s: error: no values parsed from reference %s" % (label, args.reference))
        return 2
    if len(ref) != len(cand):
        print("%s: error: value count mismatch: reference %s has %d, candidate %s has %d"
              % (label, args.reference, len(ref), args.candidate, len(cand)))
        return 2
    if ref_shapes and cand_shapes and ref_shapes != cand_shapes:
        print("%s: error: shape mismatch: reference %s, candidate %s"
              % (label, ref_shapes, cand_shapes))
        return 2

    tiny = sys.float_info.min
    max_abs = max_rel = 0.0
    worst, worst_excess, bad = None, -math.inf, 0
    for i, (r, c) in enumerate(zip(ref, cand)):
        if math.isnan(r) or math.isnan(c) or math.isinf(r) or math.isinf(c):
            same = (math.isnan(r) and math.isnan(c)) or r == c
            abs_err = 0.0 if same else math.inf
        else:
            abs_err = abs(c - r)
        rel_err = abs_err / max(abs(r), tiny) if abs_err else 0.0
        max_abs = max(max_abs, abs_err)
        max_rel = max(max_rel, rel_err)
        bound = args.atol + args.rtol * abs(r) if not math.isinf(r) else 0.0
        excess = abs_err - bound
        if excess > 0:
            bad += 1
        if excess > worst_excess:
            worst, worst_excess = i, excess

    status = "ok" if bad == 0 else "FAIL"
    print("%s: %d values, max abs err %.3g, max rel err %.3g, tol rtol=%g atol=%g: %s"
          % (label, len(ref), max_abs, max_rel, args.rtol, args.atol, status))
    if bad:
        r, c = ref[worst], cand[worst]
        where = unflatten(worst, ref_shapes)
        print("%s: error: %d of %d values out of tolerance; worst at flat index %d%s: "
              "reference %r, candidate %r, |diff| %.3g > allowed %.3g"
              % (label, bad, len(ref), worst, " " + where if where else "", r, c,
                 abs(c - r) if not (math.isnan(r) or math.isnan(c)) else math.nan,
                 args.atol + args.rtol * abs(r)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
