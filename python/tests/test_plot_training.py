"""scripts/plot_training.py turns a stats file (mp-run train --stats) into
a PNG: from a real run with skipped steps and a report, from a file with
non-finite numbers, and it refuses bad input with a clear error."""

import json
import os
import subprocess

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "plot_training.py")
MODEL = os.path.join(ROOT, "examples", "digits_mlp.mlir")
# Debian's matplotlib is /usr/bin/python3's (docs/training.md).
PYTHON = "/usr/bin/python3"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _has_matplotlib():
    found = subprocess.run([PYTHON, "-c", "import matplotlib"], capture_output=True)
    return found.returncode == 0


needs_matplotlib = pytest.mark.skipif(
    not _has_matplotlib(),
    reason="matplotlib is missing (apt-get install python3-matplotlib)")


def _plot(stats, output):
    return subprocess.run([PYTHON, SCRIPT, str(stats), "--output", str(output)],
                          capture_output=True, text=True, timeout=300)


def _assert_png(path):
    with open(path, "rb") as f:
        head = f.read(len(PNG_SIGNATURE))
    assert head == PNG_SIGNATURE
    assert os.path.getsize(path) > 10000  # three panels, not an empty figure


@needs_matplotlib
def test_plots_a_run_with_skipped_steps(tools, tmp_path):
    """The loss x1024 in f16: the first steps overflow and are skipped, the
    monitor reports it; the plot is written."""
    with open(MODEL) as f:
        model = f.read()
    old = "%inv_batch = arith.constant 0.015625 : f32"
    assert old in model
    path = tmp_path / "x1024.mlir"
    path.write_text(model.replace(old, "%inv_batch = arith.constant 16.0 : f32"))
    stats = tmp_path / "run.json"
    run = subprocess.run([tools.tool("mp-run"), "train", str(path), "--epochs", "1",
                          "--precision", "f16", "--lr", "4.8828125e-05", "--stats",
                          str(stats)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "repeated-overflow" in run.stderr
    data = json.loads(stats.read_text())
    assert sum(s["skipped"] for s in data["steps"]) == 5
    assert [r["issue"] for r in data["reports"]] == ["repeated-overflow"]
    png = tmp_path / "run.png"
    out = _plot(stats, png)
    assert out.returncode == 0, out.stderr
    assert "wrote %s (22 steps)" % png in out.stdout
    _assert_png(png)


@needs_matplotlib
def test_plots_nonfinite_values_and_precision_changes(tmp_path):
    steps = [{"step": i, "epoch": 1, "loss": 1.0 / i, "grad_norm": 0.5, "scale": 65536,
              "skipped": False} for i in range(1, 30)]
    steps[4].update(loss="nan", grad_norm="inf", skipped=True)
    steps[5].update(grad_norm="nan", skipped=True)
    steps[6].update(loss="-inf", grad_norm=0)  # zero: left out of the log axis
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({
        "version": 1, "model": "m.mlir", "precision": "f16", "loss_scale": "dynamic",
        "steps": steps,
        "reports": [{"step": 5, "issue": "nonfinite-loss", "message": "the loss is nan"}],
        "precision_changes": [{"step": 20, "change": "softmax -> f32"}],
        "epochs": []}))
    png = tmp_path / "stats.png"
    out = _plot(stats, png)
    assert out.returncode == 0, out.stderr
    _assert_png(png)


@pytest.mark.parametrize("text, message", [
    ("{", "is not JSON"),
    ('{"version": 2, "steps": []}', "is not a version 1 stats file"),
    ('{"version": 1}', "has no list of steps"),
    ('{"version": 1, "steps": []}', "has no steps to plot"),
    ('{"version": 1, "steps": [{"step": 1}]}', "lacks step, loss, grad_norm"),
    ('{"version": 1, "steps": [{"step": 1, "loss": "x", "grad_norm": 1, "scale": 1, '
     '"skipped": false}]}', "'x' is not a number"),
])
def test_bad_input_is_an_error(tmp_path, text, message):
    stats = tmp_path / "bad.json"
    stats.write_text(text)
    png = tmp_path / "bad.png"
    out = _plot(stats, png)
    assert out.returncode != 0
    assert "plot_training.py: error:" in out.stderr and message in out.stderr, out.stderr
    assert not png.exists()


def test_missing_file_is_an_error(tmp_path):
    out = _plot(tmp_path / "missing.json", tmp_path / "x.png")
    assert out.returncode != 0
    assert "cannot read" in out.stderr and "No such file" in out.stderr, out.stderr
