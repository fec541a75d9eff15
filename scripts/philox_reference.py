#!/usr/bin/env python3
"""Check dropout masks against a reference Philox4x32-10.

mp.dropout keeps element i when the first word of Philox4x32-10 with
counter (i, stream, step, 0) and key (seed low, seed high) is at least
round(ratio * 2^32) (--mp-lower-dropout). This script recomputes the mask
in plain Python, with the constants of Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3" (SC 2011), and compares it with the values
that one printMemrefF32 block of OUTPUT printed for a dropout of ones:
1 / (1 - ratio) where kept, 0 where dropped. Prints the kept share and
"mask: ok", or the first mismatch and exits 1. Standard library only.

Usage: philox_reference.py OUTPUT --elements N --ratio R --stream S
       --step T [--seed K]
"""
import argparse
import re
import sys

MASK = 0xFFFFFFFF
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")


def philox4x32_10(counter, key):
    """The four output words of Philox4x32 with 10 rounds."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(10):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK,
                          (p0 >> 32) ^ c3 ^ k1, p0 & MASK)
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return c0, c1, c2, c3


def kept(index, ratio, stream, step, seed):
    threshold = min(round(ratio * 2 ** 32), MASK)
    word = philox4x32_10((index, stream, step, 0), (seed & MASK, seed >> 32))[0]
    return word >= threshold


def printed_values(text):
    values, inside = [], False
    for line in text.splitlines():
        if line.startswith("Unranked Memref"):
            if inside:
                break
            inside = True
            continue
        if inside:
            values.extend(float(v) for v in NUMBER.findall(line))
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--elements", type=int, required=True)
    parser.add_argument("--ratio", type=float, required=True)
    parser.add_argument("--stream", type=int, required=True)
    parser.add_argument("--step", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # Known-answer test of the generator itself (Random123's kat_vectors).
    assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (
        0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    with open(args.output) as f:
        values = printed_values(f.read())
    if len(values) != args.elements:
        print("expected %d values, got %d" % (args.elements, len(values)))
        return 1
    scale = 1.0 / (1.0 - args.ratio)
    for i, value in enumerate(values):
        expected = scale if kept(i, args.ratio, args.stream, args.step,
                                 args.seed) else 0.0
        if abs(value - expected) > 1e-5 * scale:
            print("element %d: %g, expected %g" % (i, value, expected))
            return 1
    share = sum(v != 0 for v in values) / len(values)
    print("kept %.3f of %d; mask: ok" % (share, len(values)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
