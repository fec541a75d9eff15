#!/usr/bin/env python3
"""Compare reverse-mode gradients with finite differences.

Reads the output of a gen_gradcheck_main.py driver: for every parameter,
one printMemrefF32 block with the reverse-mode gradient followed by one with
the finite difference. Prints, per parameter, the norm-wise relative error
||ad - fd|| / max(||ad||, ||fd||) and exits 1 when any exceeds --tol or
has a norm below --min-norm (an all-zero gradient checks nothing),
2 when the output cannot be parsed. Standard library only.

Usage: gradcheck.py OUTPUT.txt --names w1,b1,w2,b2 [--tol 1e-3]
"""
import argparse
import math
import re
import sys

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")


def blocks(text):
    """Values of each printMemrefF32 block, in order."""
    result, current = [], None
    for line in text.splitlines():
        if line.startswith("Unranked Memref"):
            current = []
            result.append(current)
            continue
        if current is not None:
            current.extend(float(v) for v in NUMBER.findall(line))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--names", required=True)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--min-norm", type=float, default=1e-6,
                        help="smaller gradients fail: the check would be empty")
    args = parser.parse_args()
    names = args.names.split(",")
    found = blocks(open(args.output).read())
    if len(found) != 2 * len(names):
        print(f"error: expected {2 * len(names)} printed tensors, found {len(found)}")
        return 2
    worst = 0.0
    for i, name in enumerate(names):
        ad, fd = found[2 * i], found[2 * i + 1]
        if len(ad) != len(fd) or not ad:
            print(f"error: {name}: {len(ad)} gradient values but {len(fd)} finite differences")
            return 2
        diff = math.sqrt(sum((a - f) ** 2 for a, f in zip(ad, fd)))
        scale = max(math.sqrt(sum(a * a for a in ad)), math.sqrt(sum(f * f for f in fd)), 1e-30)
        rel = diff / scale
        worst = max(worst, rel)
        # An all-zero gradient would pass any relative test: it must fail.
        if scale < args.min_norm:
            rel = float("inf")
        verdict = "ok" if rel <= args.tol else "FAIL"
        print(f"{name}: {len(ad)} values, |grad| {scale:.3e}, relative error {rel:.2e} (tol {args.tol:g}): {verdict}")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
