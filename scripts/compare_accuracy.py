#!/usr/bin/env python3
"""Compare the held-out accuracy of mp-run logs against a reference log.

Usage: compare_accuracy.py REFERENCE.log CANDIDATE.log... --max-diff 0.1
Prints one line per candidate; exits 1 when a candidate's accuracy differs
from the reference by more than --max-diff points, 2 when a log has no
'held-out accuracy' line. An argument may name several logs joined by
commas (runs with different seeds): their mean accuracy is compared, since
one seed's test split decides by whole rows. Standard library only.
"""
import argparse
import re
import sys

LINE = re.compile(r"held-out accuracy ([0-9.]+)% \(([\w-]+)\)")


def accuracy(paths):
    """Mean accuracy of the comma-separated logs, and their precision."""
    results = [accuracy_of(path) for path in paths.split(",")]
    names = {name for _, name in results}
    if len(names) != 1:
        print(f"error: {paths} mixes precisions {sorted(names)}")
        sys.exit(2)
    return sum(acc for acc, _ in results) / len(results), names.pop()


def accuracy_of(path):
    found = [LINE.search(line) for line in open(path)]
    found = [m for m in found if m]
    if not found:
        print(f"error: {path} has no 'held-out accuracy' line")
        sys.exit(2)
    return float(found[-1].group(1)), found[-1].group(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--max-diff", type=float, required=True)
    args = parser.parse_args()
    ref, ref_name = accuracy(args.reference)
    worst = 0.0
    for path in args.candidates:
        acc, name = accuracy(path)
        diff = abs(acc - ref)
        worst = max(worst, diff)
        verdict = "ok" if diff <= args.max_diff else "FAIL"
        print(f"{name}: {acc:.2f}% vs {ref_name} {ref:.2f}%, "
              f"difference {diff:.2f} points (max {args.max_diff}): {verdict}")
    return 0 if worst <= args.max_diff else 1


if __name__ == "__main__":
    sys.exit(main())
