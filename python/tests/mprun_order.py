"""The order in which `mp-run train` visits the training rows, in Python.

The library's trainer (mp::epochOrder, lib/Session/Trainer.cpp; mp-run,
the C API and Session.fit share it) shuffles every epoch with a
Fisher-Yates shuffle driven by SplitMix64, seeded with seed * 1000003 +
epoch, as docs/training.md specifies. Replaying that order lets the tests
train the same model in PyTorch on exactly the same batches, so the two
loss curves can be compared number for number. test_training.py checks
this replay against the library (mp.runtime.epoch_order).
"""

MASK64 = (1 << 64) - 1


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64: one 64-bit output per call."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def __call__(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def uniform_below(n, g):
    """Uniform in [0, n): draws below 2^64 mod n are rejected (no modulo
    bias)."""
    threshold = (1 << 64) % n
    while True:
        draw = g()
        if draw >= threshold:
            return draw % n


def epoch_order(rows, epoch, seed=0):
    """Row order of `epoch` (1-based) in `mp-run train --seed seed`."""
    g = SplitMix64(seed * 1000003 + epoch)
    order = list(range(rows))
    for i in range(rows - 1, 0, -1):
        j = uniform_below(i + 1, g)
        order[i], order[j] = order[j], order[i]
    return order
