"""Compares the tensors of two checkpoints (metadata aside): prints the
largest relative difference of any tensor (max |a - b| / max |a|) and
"within TOL" or "DIFFERENT".

usage: compare_checkpoints.py A.npz B.npz TOL
"""

import sys

import numpy as np


def main():
    a, b, tol = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
    names = [n for n in a.files if not n.startswith("__")]
    if sorted(names) != sorted(n for n in b.files if not n.startswith("__")):
        print("DIFFERENT tensors:", sorted(a.files), sorted(b.files))
        return
    worst = 0.0
    for name in names:
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        scale = max(float(np.abs(x).max()), 1e-30)
        worst = max(worst, float(np.abs(x - y).max()) / scale)
    print("largest relative difference %.3g over %d tensors: %s"
          % (worst, len(names), "within %g" % tol if worst <= tol else "DIFFERENT"))


if __name__ == "__main__":
    main()
