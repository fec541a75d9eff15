#!/usr/bin/env python3
"""Exit 0 when two mp checkpoints (.npz) hold the same tensors, bit for bit.

The metadata member (__metadata__.npy: the run's options and position) is
left out: runs compared with different options record them. Standard
library only (an .npz is a zip of .npy files), so lit runs it anywhere.
"""

import sys
import zipfile

METADATA = "__metadata__.npy"


def tensors(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist() if name != METADATA}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: same_tensors.py A.npz B.npz")
    a, b = (tensors(p) for p in sys.argv[1:])
    if sorted(a) != sorted(b):
        sys.exit("different tensors: %s vs %s" % (sorted(a), sorted(b)))
    differ = [name for name in sorted(a) if a[name] != b[name]]
    if differ:
        sys.exit("tensors that differ: %s" % ", ".join(differ))


if __name__ == "__main__":
    main()
