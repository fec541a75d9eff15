"""accumulate.test's reader of checkpoints: `meta FILE` prints the step,
the place in the accumulation window and the saved sums (how many hold
nonzeros); `same A B` how many tensors of A differ in B."""
import json
import sys

import numpy as np


def main():
    if sys.argv[1] == "meta":
        checkpoint = np.load(sys.argv[2])
        meta = json.loads(bytes(checkpoint["__metadata__"]).decode())
        sums = sorted(k for k in checkpoint.files if k.endswith(".accumulator"))
        nonzero = sum(1 for k in sums if np.any(checkpoint[k] != 0))
        print("step", meta["step"], "micro", meta["micro"], "sums", " ".join(sums),
              "nonzero", nonzero)
    else:
        a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
        names = [k for k in a.files if not k.startswith("__")]
        differ = [k for k in names if not np.array_equal(a[k], b[k])]
        print(len(names), "tensors,", len(differ), "differ", *differ)


main()
