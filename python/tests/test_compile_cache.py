"""The compile cache through mp.runtime.Session: the first session of a
model and its options stores the compiled step, the next one loads it and
trains bitwise as a session compiled without the cache; cache=False and
MP_CACHE=off compile every time. (conftest.py sets MP_CACHE=off for the
other tests.)"""

import numpy as np

from mp import runtime
from test_runtime import BATCH, _digits, start  # noqa: F401 (fixture)


def _train(session, data, steps=3):
    losses = []
    for first in range(0, steps * BATCH, BATCH):
        losses.append(session.train_step(data["x_train"][first:first + BATCH],
                                         data["y_train"][first:first + BATCH]))
    return losses


def test_second_session_loads_the_cached_step(start, tmp_path, monkeypatch):  # noqa: F811
    _, model = start
    monkeypatch.setenv("MP_CACHE", "on")
    cache = tmp_path / "cache"
    data = _digits()

    first = runtime.Session(model, precision="bf16", seed=5, cache_dir=cache)
    assert first.compile_cache == "stored", first.compile_cache_note
    assert [p.suffix for p in cache.iterdir()] == [".mpa"]
    second = runtime.Session(model, precision="bf16", seed=5, cache_dir=cache)
    assert second.compile_cache == "loaded"
    uncached = runtime.Session(model, precision="bf16", seed=5, cache=False)
    assert uncached.compile_cache == "off"

    losses = _train(uncached, data)
    assert _train(first, data) == losses
    assert _train(second, data) == losses
    for kind in (runtime.PARAMETERS, runtime.STATE):
        for name in uncached.names(kind):
            want = uncached.get(name, kind)
            assert np.array_equal(second.get(name, kind), want), name
            assert np.array_equal(first.get(name, kind), want), name
    x = data["x_test"][:BATCH]
    assert np.array_equal(second.predict(x), uncached.predict(x))

    # Other options are another entry.
    other = runtime.Session(model, precision="bf16", lr=0.01, cache_dir=cache)
    assert other.compile_cache == "stored"
    assert len(list(cache.iterdir())) == 2

    monkeypatch.setenv("MP_CACHE", "off")
    assert runtime.Session(model, precision="bf16", cache_dir=cache).compile_cache == "off"
