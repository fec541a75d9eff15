"""mp.runtime.Session.open: an artifact mp-compile wrote trains exactly as
the JIT session of the same model and options (bitwise: both run the same
LLVM IR), and a damaged artifact is an MPError, not a crash."""

import subprocess

import numpy as np
import pytest

from mp import run_mlir, runtime
from test_runtime import BATCH, _digits, start  # noqa: F401 (fixture)


def test_artifact_trains_like_the_jit_session(start, tmp_path):  # noqa: F811
    _, model = start
    artifact = tmp_path / "digits.mpa"
    subprocess.run([run_mlir.tool("mp-compile"), str(model), "--precision", "bf16",
                    "--seed", "3", "-o", str(artifact), "--quiet"], check=True)
    data = _digits()
    loaded = runtime.Session.open(artifact)
    jit = runtime.Session(model, precision="bf16", seed=3)
    assert (loaded.batch_size, loaded.num_features, loaded.num_classes) == (BATCH, 64, 10)
    assert loaded.names() == jit.names()
    for first in range(0, 3 * BATCH, BATCH):
        x = data["x_train"][first:first + BATCH]
        y = data["y_train"][first:first + BATCH]
        assert loaded.train_step(x, y) == jit.train_step(x, y)
    for kind in (runtime.PARAMETERS, runtime.STATE):
        for name in jit.names(kind):
            assert np.array_equal(loaded.get(name, kind), jit.get(name, kind)), name
    assert loaded.step == jit.step == 3
    x = data["x_test"][:BATCH]
    assert np.array_equal(loaded.predict(x), jit.predict(x))
    # The checkpoint format is shared: the JIT session resumes from it.
    loaded.save(tmp_path / "run.npz")
    jit.load(tmp_path / "run.npz")
    assert jit.step == 3

    truncated = tmp_path / "truncated.mpa"
    truncated.write_bytes(artifact.read_bytes()[:5000])
    with pytest.raises(runtime.MPError, match="is not an mp artifact"):
        runtime.Session.open(truncated)
    with pytest.raises(runtime.MPError, match="cannot be read"):
        runtime.Session.open(tmp_path / "missing.mpa")
