"""The order in which `mp-run train` visits the training rows, in Python.

mp-run shuffles every epoch with std::shuffle(order, std::mt19937_64(seed *
1000003 + epoch)) (tools/mp-run/mp-run.cpp). Replaying that order lets the
tests train the same model in PyTorch on exactly the same batches, so the
two loss curves can be compared number for number. This follows
libstdc++ 12 (Debian 12's g++): std::shuffle draws two swap positions per
uniform_int_distribution call, and the distribution downscales 64-bit
draws with Lemire's multiply-shift. test_training.py checks it against a
compiled C++ program.
"""

MASK64 = (1 << 64) - 1


class MT19937_64:
    N, M = 312, 156
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed):
        mt = [seed & MASK64]
        for i in range(1, self.N):
            mt.append((6364136223846793005 * (mt[-1] ^ (mt[-1] >> 62)) + i) & MASK64)
        self.mt, self.index = mt, self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        for i in range(n):
            x = (mt[i] & self.UPPER) | (mt[(i + 1) % n] & self.LOWER)
            xa = x >> 1
            if x & 1:
                xa ^= 0xB5026F5AA96619E9
            mt[i] = mt[(i + m) % n] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= self.N:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64


def _uniform(g, count):
    """uniform_int_distribution<uint64>{0, count - 1}(g) in libstdc++ 12."""
    product = g() * count
    low = product & MASK64
    if low < count:
        threshold = (-count % (1 << 64)) % count
        while low < threshold:
            product = g() * count
            low = product & MASK64
    return product >> 64


def shuffle(items, g):
    """std::shuffle in libstdc++ 12 (the two-positions-per-draw branch, taken
    whenever len(items)^2 fits in 64 bits)."""
    n = len(items)
    assert n * n < (1 << 64)
    i = 1
    if n % 2 == 0:
        j = _uniform(g, 2)
        items[i], items[j] = items[j], items[i]
        i += 1
    while i != n:
        swap_range = i + 1
        x = _uniform(g, swap_range * (swap_range + 1))
        first, second = x // (swap_range + 1), x % (swap_range + 1)
        items[i], items[first] = items[first], items[i]
        i += 1
        items[i], items[second] = items[second], items[i]
        i += 1
    return items


def epoch_order(rows, epoch, seed=0):
    """Row order of `epoch` (1-based) in `mp-run train --seed seed`."""
    g = MT19937_64((seed * 1000003 + epoch) & MASK64)
    return shuffle(list(range(rows)), g)
