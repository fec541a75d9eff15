"""Self-healing precision from Python (#20 §3): `fit(precision_repair=True)`
repairs the overflowing digits model (examples/digits_overflow.mlir) as
mp-run does, reports the repair per epoch and leaves the ops it kept in
f32 on the session (`kept_f32`); `Session(keep_f32=...)` compiles that
plan directly.
"""

import os

import numpy as np
import pytest

from mp import runtime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "examples", "digits_overflow.mlir")


@pytest.fixture(scope="module")
def digits(tools):
    return dict(np.load(os.path.join(tools.build_dir(), "data", "digits.npz")))


def fit(session, digits, **options):
    return session.fit(digits["x_train"], digits["y_train"], digits["x_test"],
                       digits["y_test"], epochs=1, **options)


def test_repair_keeps_the_overflowing_ops_in_f32(digits):
    session = runtime.Session(MODEL, precision="f16")
    assert session.kept_f32 == []
    epochs = fit(session, digits, precision_repair=True)
    repairs = epochs[0]["repairs"]
    assert len(repairs) == 1
    repair = repairs[0]
    # Three steps with a NaN loss trigger it; the bilinear product (line
    # 62) is the first f16 value to overflow, in the step and in @predict.
    assert repair["step"] == 3 and repair["repaired"]
    assert repair["seconds"] > 0
    assert repair["line"].startswith("precision repair at step 3: kept in f32: ")
    kept = [k.rsplit("/", 1)[-1] for k in repair["kept"]]
    assert kept[0] == "digits_overflow.mlir:62:8"
    assert "digits_overflow.mlir:174:8" in kept
    assert session.kept_f32 == repair["kept"]
    # Only the failed steps were skipped; the rest of the epoch learned.
    assert session.skipped_steps == 3
    assert epochs[0]["accuracy"] > 85.0
    assert session.loss_scale == 65536.0


def test_kept_ops_compile_into_a_clean_run(digits):
    repaired = runtime.Session(MODEL, precision="f16")
    fit(repaired, digits, precision_repair=True)
    planned = runtime.Session(MODEL, precision="f16", keep_f32=repaired.kept_f32)
    assert planned.kept_f32 == repaired.kept_f32
    epochs = fit(planned, digits)
    assert planned.skipped_steps == 0
    assert epochs[0]["repairs"] == []
    assert epochs[0]["accuracy"] > 85.0


def test_off_unless_asked_for_a_given_precision(digits):
    session = runtime.Session(MODEL, precision="f16")
    epochs = fit(session, digits)
    assert epochs[0]["repairs"] == []
    assert session.kept_f32 == []
    assert session.skipped_steps == epochs[0]["steps"]  # every step failed


def test_bad_options_are_errors():
    with pytest.raises(runtime.MPError, match="no op of the model is at that location"):
        runtime.Session(MODEL, precision="f16", keep_f32=["1:1"])
    with pytest.raises(TypeError, match="list of locations"):
        runtime.Session(MODEL, precision="f16", keep_f32="62:8")
    session = runtime.Session(MODEL, precision="bf16")
    x = np.zeros((64, 64), np.float32)
    y = np.zeros((64, 10), np.float32)
    with pytest.raises(runtime.MPError, match="add --loss-scale dynamic"):
        session.fit(x, y, epochs=1, precision_repair=True)
