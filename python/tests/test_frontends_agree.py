"""mp-run, mp-compile's artifacts, the C API (examples/capi/train.c) and
Python (mp.runtime over libmp_session.so) run the same library code
(lib/Session: mp::Trainer, calibration, the INT8 planner), so from the same
options they give the same results bit for bit: training, resuming from
inside an epoch, calibration statistics and int8 inference.
"""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch

from mp import runtime

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "digits_mlp.mlir")
# Three epochs of f16 (dynamic loss scaling) and a save every 7 steps: the
# digits split has 22 batches an epoch, so saves land inside epochs.
EPOCHS, EVERY = 3, 7


def _run(tool, *args):
    # The tools run on as many threads as this process (conftest: one).
    # Bitwise agreement holds for one thread count: on an AVX2-only CPU
    # oneDNN's sgemm splits some products' sums by thread, so 1 and 2
    # threads differ in the last bits from the second epoch on (measured).
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()))
    out = subprocess.run([tool] + [str(a) for a in args], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _epoch_lines(text):
    """The epoch lines without their samples/s (a timing)."""
    return [re.sub(r"  [0-9]+ samples/s", "", line) for line in text.splitlines()
            if line.startswith("epoch ")]


def _checkpoint(path):
    with np.load(path) as members:
        return {name: members[name].copy() for name in members.files}


def _assert_same_checkpoint(a, b):
    a, b = _checkpoint(a), _checkpoint(b)
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


@pytest.fixture(scope="module")
def data(tools):
    return os.path.join(tools.build_dir(), "data", "digits.npz")


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tools, data):
    """The same run from mp-run, the C program and Python: their
    checkpoints (and the .prev each last save kept) and epoch lines; their
    stats files under "stats"."""
    root = tmp_path_factory.mktemp("agree")
    runs = {"stats": {}}
    options = ["--precision", "f16", "--epochs", EPOCHS, "--checkpoint-every", EVERY]
    out = _run(tools.tool("mp-run"), "train", MODEL, "--checkpoint", root / "mprun.npz",
               "--stats", root / "mprun.json", *options)
    runs["mp-run"] = (root / "mprun.npz", _epoch_lines(out))
    runs["stats"]["mp-run"] = root / "mprun.json"
    out = _run(tools.tool("mp-capi-train"), MODEL, data, "--checkpoint", root / "capi.npz",
               "--stats", root / "capi.json", *options)
    runs["C API"] = (root / "capi.npz", _epoch_lines(out))
    runs["stats"]["C API"] = root / "capi.json"
    splits = np.load(data)
    session = runtime.Session(MODEL, precision="f16")
    epochs = session.fit(splits["x_train"], splits["y_train"], splits["x_test"],
                         splits["y_test"], epochs=EPOCHS, checkpoint=root / "python.npz",
                         checkpoint_every=EVERY, stats=root / "python.json")
    runs["Python"] = (root / "python.npz",
                      _epoch_lines("\n".join(e["line"] for e in epochs)))
    runs["stats"]["Python"] = root / "python.json"
    runs["python epochs"] = epochs
    return runs


def test_training_is_identical(trained):
    reference, lines = trained["mp-run"]
    assert len(lines) == EPOCHS and "skipped 0  scale 65536" in lines[0], lines
    for name in ("C API", "Python"):
        path, their_lines = trained[name]
        assert their_lines == lines, name
        _assert_same_checkpoint(path, reference)
        # The last save inside the last epoch (after step 63 = batch 19 of
        # epoch 3), kept as FILE.prev by the epoch's final save.
        _assert_same_checkpoint(str(path) + ".prev", str(reference) + ".prev")


def test_resume_inside_an_epoch_is_identical(trained, tools, data, tmp_path):
    """Each front end resumes the save taken inside epoch 3 and ends where
    the uninterrupted runs ended."""
    reference, lines = trained["mp-run"]
    start = str(reference) + ".prev"
    meta = _metadata(start)
    assert (meta["epoch"], meta["batch"]) == (2, 19), meta

    def copy(name):
        path = tmp_path / name
        shutil.copy(start, path)
        return path

    options = ["--precision", "f16", "--epochs", EPOCHS, "--resume"]
    path = copy("mprun.npz")
    out = _run(tools.tool("mp-run"), "train", MODEL, "--checkpoint", path, *options)
    assert "resuming at epoch 3, batch 19" in out
    _assert_same_checkpoint(path, reference)
    path = copy("capi.npz")
    out = _run(tools.tool("mp-capi-train"), MODEL, data, "--checkpoint", path, *options)
    assert "resuming at epoch 3, batch 19" in out
    _assert_same_checkpoint(path, reference)

    splits = np.load(data)
    path = copy("python.npz")
    session = runtime.Session(MODEL, precision="f16")
    epochs = session.fit(splits["x_train"], splits["y_train"], splits["x_test"],
                         splits["y_test"], epochs=EPOCHS, checkpoint=path, resume=True)
    assert [e["steps"] for e in epochs] == [3]  # batches 19, 20, 21
    _assert_same_checkpoint(path, reference)
    # The accuracy after the resumed epoch is the uninterrupted run's (the
    # loss is the mean of the resumed steps only).
    want = re.search(r"accuracy ([0-9.]+)%", lines[-1]).group(1)
    assert "%.2f" % epochs[-1]["accuracy"] == want


def test_stats_files_are_identical(trained):
    """The three front ends write the same stats file: every step's loss,
    gradient norm and scale, the epochs, no reports on this healthy run
    (nor in Python's epochs)."""
    files = {name: json.loads(path.read_text()) for name, path in trained["stats"].items()}
    reference = files["mp-run"]
    assert len(reference["steps"]) == EPOCHS * 22
    assert [e["epoch"] for e in reference["epochs"]] == list(range(1, EPOCHS + 1))
    assert reference["reports"] == []
    assert all(isinstance(s["grad_norm"], float) and s["grad_norm"] > 0
               for s in reference["steps"])
    assert os.path.basename(reference["model"]) == "digits_mlp.mlir"
    for name, stats in files.items():
        assert stats == reference, name
    assert all(e["reports"] == [] for e in trained["python epochs"])


def test_fit_reports_and_bad_monitor_options(data, tmp_path):
    """Python's fit returns the monitor's reports per epoch (the loss x1024
    in f16 overflows on its first 5 steps) and refuses bad options and an
    unwritable stats path with the library's errors."""
    with open(MODEL) as f:
        model = f.read()
    old = "%inv_batch = arith.constant 0.015625 : f32"
    path = tmp_path / "x1024.mlir"
    path.write_text(model.replace(old, "%inv_batch = arith.constant 16.0 : f32"))
    splits = np.load(data)
    x, y = splits["x_train"], splits["y_train"]
    session = runtime.Session(str(path), precision="f16", lr=4.8828125e-05)
    epochs = session.fit(x, y, epochs=1, stats=tmp_path / "run.json")
    assert [(r["step"], r["issue"]) for r in epochs[0]["reports"]] == \
        [(5, "repeated-overflow")], epochs[0]["reports"]
    assert epochs[0]["reports"][0]["op"] is None  # no probes
    assert "--check-numerics" in epochs[0]["reports"][0]["message"]
    stats = json.loads((tmp_path / "run.json").read_text())
    assert [s["step"] for s in stats["steps"] if s["skipped"]] == [1, 2, 3, 4, 5]
    # The monitor off: no reports, the history still written.
    session = runtime.Session(str(path), precision="f16", lr=4.8828125e-05)
    epochs = session.fit(x, y, epochs=1, monitor=False, stats=tmp_path / "off.json")
    assert epochs[0]["reports"] == []
    assert len(json.loads((tmp_path / "off.json").read_text())["steps"]) == 22
    with pytest.raises(runtime.MPError, match="overflow-limit must be between 1 and "
                                              "overflow-window"):
        session.fit(x, y, epochs=1, overflow_limit=0)
    with pytest.raises(runtime.MPError, match="spike-factor must be"):
        session.fit(x, y, epochs=1, spike_factor=0.5)
    with pytest.raises(runtime.MPError, match="cannot write stats file"):
        session.fit(x, y, epochs=1, stats=tmp_path / "no" / "dir" / "s.json")


def _metadata(path):
    with np.load(path) as members:
        return json.loads(bytes(members["__metadata__"]))


def test_artifact_trains_like_the_model(trained, tools, tmp_path):
    """mp-compile's artifact runs the same trainer on the same compiled
    step."""
    artifact = tmp_path / "digits.mpa"
    _run(tools.tool("mp-compile"), MODEL, "--precision", "f16", "-o", artifact)
    path = tmp_path / "artifact.npz"
    out = _run(tools.tool("mp-run"), "train", artifact, "--epochs", EPOCHS,
               "--checkpoint-every", EVERY, "--checkpoint", path)
    reference, lines = trained["mp-run"]
    assert _epoch_lines(out) == lines
    _assert_same_checkpoint(path, reference)


def test_calibration_and_int8_are_identical(trained, tools, data, tmp_path):
    """Calibration statistics from mp-run and Python are the same file's
    content, and int8 inference with the measured-error fallback gives the
    same held-out accuracy and plan from both."""
    reference, _ = trained["mp-run"]
    # An f32 session reads the f16 run's parameters (the f16 run's
    # checkpoint holds f32 master weights).
    stats_cli, stats_py = tmp_path / "cli.json", tmp_path / "py.json"
    _run(tools.tool("mp-run"), "infer", MODEL, "--checkpoint", reference, "--calibrate", 6,
         "--calibration-out", stats_cli)
    splits = np.load(data)
    session = runtime.Session(MODEL)
    session.load(reference)
    runtime.calibrate(MODEL, session, splits["x_train"], stats_py, batches=6)
    assert stats_cli.read_text() == stats_py.read_text()

    out = _run(tools.tool("mp-run"), "infer", MODEL, "--checkpoint", reference,
               "--precision", "int8", "--calibration", stats_cli, "--quant-method", "entropy",
               "--quant-max-error", 0.3, "--quant-measure", 4)
    fallen = set(re.findall(r"measured error of '([^']+)'.*\(falls back\)", out))
    want = float(re.search(r"held-out accuracy ([0-9.]+)% \(int8 inference\)", out).group(1))
    infer = runtime.InferSession(MODEL, session, "int8", calibration=stats_py,
                                 method="entropy", max_error=0.3,
                                 measure=(splits["x_train"], 4))
    logits = infer.predict(splits["x_test"])
    got = 100.0 * float(np.mean(logits.argmax(1) == splits["y_test"].argmax(1)))
    assert "%.2f" % got == "%.2f" % want
    assert fallen, out  # the plan measured something above the bound


def test_fit_without_test_rows_and_bad_input(data, tmp_path):
    """Session.fit trains without test rows (no accuracy in its report or
    line) and refuses bad input with clear errors."""
    splits = np.load(data)
    x, y = splits["x_train"], splits["y_train"]
    session = runtime.Session(MODEL)
    epochs = session.fit(x, y, epochs=1)
    assert len(epochs) == 1 and epochs[0]["accuracy"] is None
    assert epochs[0]["steps"] == x.shape[0] // session.batch_size
    assert "test accuracy" not in epochs[0]["line"], epochs[0]["line"]
    assert epochs[0]["line"].startswith("epoch 1/1  loss ")
    with pytest.raises(ValueError, match="x_train has 10 rows but y_train has 9"):
        session.fit(x[:10], y[:9])
    with pytest.raises(ValueError, match="give both x_test and y_test"):
        session.fit(x, y, x_test=x)
    with pytest.raises(runtime.MPError, match="fewer rows than one batch"):
        session.fit(x[:10], y[:10])
    with pytest.raises(runtime.MPError, match="resuming needs a checkpoint path"):
        session.fit(x, y, resume=True)
    with pytest.raises(runtime.MPError, match="No such file"):
        session.fit(x, y, checkpoint=tmp_path / "missing.npz", resume=True)
    # A run that has trained all its epochs trains none when resumed.
    path = tmp_path / "done.npz"
    session.fit(x, y, epochs=1, checkpoint=path)
    assert session.fit(x, y, epochs=1, checkpoint=path, resume=True) == []
