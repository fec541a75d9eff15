"""The compile cache through mp.runtime.Session: the first session of a
model and its options stores the compiled step, the next one loads it and
trains bitwise as a session compiled without the cache; cache=False and
MP_CACHE=off compile every time. (conftest.py sets MP_CACHE=off for the
other tests.)"""

import json
import struct
import zlib

import numpy as np
import pytest

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
    converting = runtime.Session(model, precision="bf16", seed=5, cache_dir=cache,
                                 weight_copies="convert")
    assert converting.compile_cache == "stored"
    assert runtime.Session(model, precision="bf16", seed=5, cache_dir=cache,
                           weight_copies="convert").compile_cache == "loaded"
    assert len(list(cache.iterdir())) == 3

    monkeypatch.setenv("MP_CACHE", "off")
    assert runtime.Session(model, precision="bf16", cache_dir=cache).compile_cache == "off"


def test_inference_sessions_load_their_cached_predict(start, tmp_path, monkeypatch):  # noqa: F811
    """An InferSession's compiled mp.predict goes into the cache and the next
    one of the same model and options loads it: f32, bf16 (weights converted
    once), int8-dynamic and int8 from a calibration file, each predicting
    bitwise as the session compiled without the cache. Another calibration
    file (the scales are constants in the code) is another entry; a damaged
    entry is compiled again; a training session refuses an inference entry."""
    _, model = start
    monkeypatch.setenv("MP_CACHE", "on")
    cache = tmp_path / "cache"
    data = _digits()
    weights = runtime.Session(model, seed=5, cache=False)
    _train(weights, data)
    x = data["x_test"]
    stats = tmp_path / "stats.json"
    runtime.calibrate(model, weights, data["x_train"], stats, batches=4)

    variants = [dict(precision="f32"), dict(precision="bf16"),
                dict(precision="int8-dynamic"),
                dict(precision="int8", calibration=stats)]
    for options in variants:
        uncached = runtime.InferSession(model, weights, cache=False, **options)
        assert uncached.compile_cache == "off"
        want = uncached.predict(x)
        first = runtime.InferSession(model, weights, cache_dir=cache, **options)
        assert first.compile_cache == "stored", (options, first.compile_cache_note)
        second = runtime.InferSession(model, weights, cache_dir=cache, **options)
        assert second.compile_cache == "loaded", options
        for infer in (first, second):
            assert (infer.batch_size, infer.num_features, infer.num_classes,
                    infer.weight_bytes, infer.precision) == (
                uncached.batch_size, uncached.num_features, uncached.num_classes,
                uncached.weight_bytes, uncached.precision)
            assert np.array_equal(infer.predict(x), want), options
    entries = sorted(cache.iterdir())
    assert len(entries) == len(variants)

    # Other ranges in the calibration file: other scales, another entry.
    values = json.loads(stats.read_text())
    for stat in values["values"].values():
        for key in ("min", "max", "abs_max"):
            if key in stat:
                stat[key] *= 2
    wider = tmp_path / "wider.json"
    wider.write_text(json.dumps(values))
    other = runtime.InferSession(model, weights, precision="int8",
                                 calibration=wider, cache_dir=cache)
    assert other.compile_cache == "stored"
    assert np.array_equal(other.predict(x), runtime.InferSession(
        model, weights, precision="int8", calibration=wider, cache=False).predict(x))
    assert len(list(cache.iterdir())) == len(variants) + 1

    # Damaged entries (written anew: the sessions above still map the old
    # files): compiled again and replaced.
    for entry in list(cache.iterdir()):
        cut = entry.with_suffix(".cut")
        cut.write_bytes(entry.read_bytes()[:1000])
        cut.replace(entry)
    again = runtime.InferSession(model, weights, precision="bf16", cache_dir=cache)
    assert again.compile_cache == "stored"
    assert runtime.InferSession(model, weights, precision="bf16",
                                cache_dir=cache).compile_cache == "loaded"

    # Metadata that checks out (a valid checksum) but describes no session:
    # compiled again and replaced, never trusted.
    for field, value in (("batch", 0), ("predict_arguments", [])):
        for entry in list(cache.iterdir()):
            if entry.read_bytes().endswith(b"MPARTIFx"):  # not the ones cut above
                _rewrite_metadata(entry, field, value)
        again = runtime.InferSession(model, weights, precision="bf16", cache_dir=cache)
        assert again.compile_cache == "stored", field
        assert np.array_equal(again.predict(x), runtime.InferSession(
            model, weights, precision="bf16", cache=False).predict(x))

    # An inference entry is not a training session's artifact.
    entry = next(p for p in cache.iterdir() if p.stat().st_size > 1000)
    with pytest.raises(runtime.MPError, match="holds a model's mp.predict alone"):
        runtime.Session.open(entry)

    monkeypatch.setenv("MP_CACHE", "off")
    assert runtime.InferSession(model, weights, cache_dir=cache).compile_cache == "off"


def _rewrite_metadata(path, field, value):
    """Sets `field` of an artifact's metadata and writes the file anew (a new
    inode: open sessions map the old one) with a matching trailer (see
    test/mp-compile/Inputs/damage.py)."""
    data = path.read_bytes()
    obj, meta, _, version, _ = struct.unpack_from("<QQQII", data, len(data) - 40)
    record = json.loads(data[obj:obj + meta])
    record[field] = value
    payload = data[:obj] + json.dumps(record).encode()
    data = payload + struct.pack("<QQQII", obj, len(payload) - obj, zlib.crc32(payload),
                                 version, 0) + data[-8:]
    cut = path.with_suffix(".new")
    cut.write_bytes(data)
    cut.replace(path)


def test_low_precision_predictions_follow_the_parameters(start, tmp_path, monkeypatch):  # noqa: F811
    """A bf16 CPU session predicts from bf16 copies of its weights, made once
    and again only after the parameters change: after a training step, set(),
    init_parameter() and load(), its logits stay bitwise those of an
    InferSession made from the same parameters then (which converts the
    weights the same way); a cached session does the same."""
    _, model = start
    data = _digits()
    x, y = data["x_test"][:BATCH], data["y_train"][:BATCH]
    session = runtime.Session(model, precision="bf16", seed=5, cache=False)

    def expected():
        return runtime.InferSession(model, session, precision="bf16",
                                    cache=False).predict(x)

    first = session.predict(x)
    assert np.array_equal(first, expected())
    assert np.array_equal(session.predict(x), first)  # copies reused
    session.train_step(data["x_train"][:BATCH], y)
    stepped = session.predict(x)
    assert not np.array_equal(stepped, first)
    assert np.array_equal(stepped, expected())
    name = session.names()[0]
    session.set(name, session.get(name) * 0.5)
    assert np.array_equal(session.predict(x), expected())
    session.init_parameter(name, seed=3)
    assert np.array_equal(session.predict(x), expected())
    checkpoint = tmp_path / "run.npz"
    session.save(checkpoint)
    saved = session.predict(x)
    session.train_step(data["x_train"][BATCH:2 * BATCH], y)
    assert not np.array_equal(session.predict(x), saved)
    session.load(checkpoint)
    assert np.array_equal(session.predict(x), saved)

    monkeypatch.setenv("MP_CACHE", "on")
    cache = tmp_path / "cache"
    stored = runtime.Session(model, precision="bf16", seed=5, cache_dir=cache)
    loaded = runtime.Session(model, precision="bf16", seed=5, cache_dir=cache)
    assert (stored.compile_cache, loaded.compile_cache) == ("stored", "loaded")
    fresh = runtime.Session(model, precision="bf16", seed=5, cache=False)
    for cached in (stored, loaded):
        assert np.array_equal(cached.predict(x), fresh.predict(x))
        cached.train_step(data["x_train"][:BATCH], y)
    fresh.train_step(data["x_train"][:BATCH], y)
    for cached in (stored, loaded):
        assert np.array_equal(cached.predict(x), fresh.predict(x))


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_low_precision_steps_keep_their_weight_copies(start, precision):  # noqa: F811
    """A bf16/f16 step reads 16-bit copies of its weights that the previous
    step's update wrote: training equals, bit for bit, a session whose copies
    are made again from the parameters before every step (an outside access
    in between) and a session that converts its weights in every step
    (weight_copies="convert"), predictions between the steps included, and
    a parameter changed between steps reaches the next step."""
    _, model = start
    data = _digits()
    batches = [(data["x_train"][i * BATCH:(i + 1) * BATCH],
                data["y_train"][i * BATCH:(i + 1) * BATCH]) for i in range(4)]
    x = data["x_test"][:BATCH]
    kept = runtime.Session(model, precision=precision, seed=5, cache=False)
    remade = runtime.Session(model, precision=precision, seed=5, cache=False)
    converted = runtime.Session(model, precision=precision, seed=5, cache=False,
                                weight_copies="convert")
    losses, converted_losses, remade_losses = [], [], []
    for batch in batches:
        losses.append(kept.train_step(*batch))
        converted_losses.append(converted.train_step(*batch))
        assert np.array_equal(kept.predict(x), converted.predict(x))
        remade.get(remade.names()[0])  # the copies are made again
        remade_losses.append(remade.train_step(*batch))
    assert losses == remade_losses
    assert losses == converted_losses
    for kind in (runtime.PARAMETERS, runtime.STATE):
        for name in kept.names(kind):
            assert np.array_equal(kept.get(name, kind), remade.get(name, kind)), name
            assert np.array_equal(kept.get(name, kind),
                                  converted.get(name, kind)), name
    with pytest.raises(runtime.MPError,
                       match="bad --weight-copies 'never': expected keep or convert"):
        runtime.Session(model, precision=precision, weight_copies="never")

    name = kept.names()[0]
    kept.set(name, kept.get(name) * 0.5)
    fresh = runtime.Session(model, precision=precision, seed=5, cache=False)
    for kind in (runtime.PARAMETERS, runtime.STATE):
        for other in kept.names(kind):
            fresh.set(other, kept.get(other, kind), kind)
    assert kept.train_step(*batches[0]) == fresh.train_step(*batches[0])
