#!/usr/bin/env python3
"""Export the handwritten digits data set that Debian's python3-sklearn
ships (1797 images of 8x8 pixels, 10 classes) to an .npz file.

Reads sklearn's digits.csv.gz directly (standard library only: no numpy or
sklearn import), scales pixels to [0, 1], shuffles with a fixed seed and
splits 80/20 into
  x_train f32 [1437, 64], y_train f32 [1437, 10] (one-hot), labels_train i64,
  x_test  f32 [360, 64],  y_test  f32 [360, 10],            labels_test  i64.

Usage: export_digits.py OUT.npz [--csv PATH] [--seed 0]
"""
import argparse
import gzip
import io
import random
import struct
import sys
import zipfile

DEFAULT_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def npy_bytes(descr, shape, payload):
    """An .npy (format 1.0) file holding `payload` (little-endian bytes)."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    # Pad so that the data starts on a 64-byte boundary, header ends in \n.
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--csv", default=DEFAULT_CSV)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        text = gzip.open(args.csv, "rt").read()
    except OSError as error:
        sys.exit(f"error: cannot read the digits data '{args.csv}': {error} "
                 "(install Debian's python3-sklearn)")
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    samples = [([float(v) / 16.0 for v in r[:64]], int(r[64])) for r in rows]
    if len(samples) != 1797 or any(not 0 <= y <= 9 for _, y in samples):
        sys.exit(f"error: '{args.csv}' does not hold the 1797 digits samples")
    random.Random(args.seed).shuffle(samples)
    split = 1437
    members = {}
    for name, part in (("train", samples[:split]), ("test", samples[split:])):
        n = len(part)
        members[f"x_{name}"] = npy_bytes("<f4", (n, 64), struct.pack(f"<{n * 64}f", *[v for x, _ in part for v in x]))
        onehot = [1.0 if c == y else 0.0 for _, y in part for c in range(10)]
        members[f"y_{name}"] = npy_bytes("<f4", (n, 10), struct.pack(f"<{n * 10}f", *onehot))
        members[f"labels_{name}"] = npy_bytes("<i8", (n,), struct.pack(f"<{n}q", *[y for _, y in part]))
    with zipfile.ZipFile(args.out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name + ".npy", data)
    print(f"wrote {args.out}: {split} training and {len(samples) - split} test images")


if __name__ == "__main__":
    main()
