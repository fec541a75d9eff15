#!/usr/bin/env python3
"""Checks the ranking that `mp-run compare` prints (standard library only).

Reads the comparison table from stdin (or a file) and exits 1 unless

  - it has at least --min-rows rows (default 3), ranked 1, 2, 3, ...,
  - the relative-error column never increases from one row to the next,
    except that NaN rows come first (printComparison in
    lib/Session/Numerics.cpp sorts NaN first: the worst error there is),
  - and, without --allow-truncated, every op is listed (no "... N more ops"
    line: run compare with a --top at least the number of ops).

  mp-run compare MODEL --precision bf16 --top 1000 | check_sorted_errors.py
"""

import argparse
import math
import re
import sys

HEADER_RE = re.compile(r"^\s*rank\s+rel error\s")
# rank, relative error, max abs error, max |f32|, dtype, op (a probe id:
# "<function>#<n> <op> at <location>")
ROW_RE = re.compile(r"^\s*(\d+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\S*#\d")
MORE_RE = re.compile(r"^\s*\.\.\. (\d+) more ops")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", nargs="?", default="-",
                        help="compare's output (default: stdin)")
    parser.add_argument("--min-rows", type=int, default=3)
    parser.add_argument("--allow-truncated", action="store_true",
                        help="accept a table cut short by --top")
    args = parser.parse_args()
    text = (sys.stdin.read() if args.input == "-" else
            open(args.input, encoding="utf-8").read())

    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if HEADER_RE.match(line)),
                 None)
    if start is None:
        sys.exit("check_sorted_errors: no 'rank  rel error' header in the "
                 "input")
    errors, more = [], 0
    for line in lines[start + 1:]:
        match = ROW_RE.match(line)
        if not match:
            more_match = MORE_RE.match(line)
            more = int(more_match.group(1)) if more_match else 0
            break
        rank, value = int(match.group(1)), match.group(2)
        if rank != len(errors) + 1:
            sys.exit("check_sorted_errors: row %d has rank %d" %
                     (len(errors) + 1, rank))
        try:
            errors.append(float(value))  # also "nan", "-nan", "inf"
        except ValueError:
            sys.exit("check_sorted_errors: rank %d: relative error '%s' is "
                     "not a number" % (rank, value))

    failures = []
    if len(errors) < args.min_rows:
        failures.append("%d rows, fewer than %d" % (len(errors), args.min_rows))
    if more and not args.allow_truncated:
        failures.append("%d more ops not listed (raise --top)" % more)
    for i in range(1, len(errors)):
        before, now = errors[i - 1], errors[i]
        if math.isnan(now):
            if not math.isnan(before):
                failures.append("rank %d is NaN after a number at rank %d "
                                "(NaN sorts first)" % (i + 1, i))
        elif not math.isnan(before) and now > before:
            failures.append("rank %d: relative error %g > %g at rank %d" %
                            (i + 1, now, before, i))
    if failures:
        for failure in failures:
            print("check_sorted_errors: " + failure, file=sys.stderr)
        return 1
    nans = sum(1 for e in errors if math.isnan(e))
    finite = [e for e in errors if not math.isnan(e)]
    print("sorted: %d rows%s, relative error non-increasing%s%s" % (
        len(errors), ", %d NaN first" % nans if nans else "",
        " from %.3e to %.3e" % (finite[0], finite[-1]) if finite else "",
        "" if not more else " (%d more ops not listed)" % more))
    return 0


if __name__ == "__main__":
    sys.exit(main())
