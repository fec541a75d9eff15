"""Keras models through tf2onnx into mp (docs/onnx.md, "TensorFlow/Keras
through ONNX").

- test_keras_small_*: a small Keras model exported by tf2onnx 1.17 from
  TensorFlow 2.21 (committed under data/keras_small: the .onnx, an input
  batch and TensorFlow's logits; `scripts/keras_zoo.py --fixture DIR`
  rewrites them) is imported, predicts what TensorFlow predicts and
  fine-tunes. It needs no TensorFlow, so CI runs it.
- test_keras_application: one tf.keras.applications model (MobileNetV2 at
  32x32) end to end through scripts/keras_zoo.py, when the virtual
  environment scripts/tf_venv.sh makes exists (.venv-tensorflow, or
  $MP_TF_PYTHON); skipped otherwise.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import rel_err

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data", "keras_small")
MODEL = os.path.join(DATA, "keras_small.onnx")


def _fixture():
    x = np.load(os.path.join(DATA, "keras_small_x.npy"))
    logits = np.load(os.path.join(DATA, "keras_small_logits.npy"))
    return x, logits


def _cross_entropy(logits, labels):
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(labels)), labels].mean())


def test_keras_small_imports(tools):
    """tf2onnx's graph (NHWC input, a Transpose, Conv with the batch norms
    folded in, ReLU6 as a Clip whose bounds are initializers) imports; the
    Clip bounds are constants, not parameters."""
    x, _ = _fixture()
    proc = subprocess.run([tools.tool("mp-translate"), "--import-onnx", MODEL,
                           "--input-shape", "x=%dx16x16x3" % len(x),
                           "--initial-values=false"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'mp.input = "x"' in proc.stdout
    assert "Relu6_min" not in proc.stdout and "Relu6_max" not in proc.stdout
    assert proc.stdout.count("mp.param") > 0


@pytest.mark.parametrize("precision,tol", [("f32", 1e-5), ("bf16", 2e-2), ("f16", 2e-2)])
def test_keras_small_predicts(tools, precision, tol):
    from mp import runtime
    x, want = _fixture()
    session = runtime.Session(MODEL, batch_size=len(x), loss="cross-entropy", cache=False)
    infer = runtime.InferSession(MODEL, session, precision=precision, cache=False)
    err = rel_err(infer.predict(x.reshape(len(x), -1)), want)
    print("keras_small %s: rel err %.2e" % (precision, err))
    assert err <= tol


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_keras_small_fine_tunes(tools, precision):
    """--mp-add-loss's cross-entropy around the imported prediction: the
    first loss is TensorFlow's cross-entropy of its own logits (f32), and
    SGD on one batch brings it down."""
    from mp import runtime
    x, want = _fixture()
    labels = np.arange(len(x)) % want.shape[1]
    onehot = np.eye(want.shape[1], dtype=np.float32)[labels]
    session = runtime.Session(MODEL, batch_size=len(x), loss="cross-entropy", lr=0.05,
                              momentum=0.9, precision=precision, cache=False)
    losses = [session.train_step(x.reshape(len(x), -1), onehot)[0] for _ in range(6)]
    print("keras_small %s losses: %s" % (precision, losses))
    assert all(np.isfinite(losses))
    want_loss = _cross_entropy(want, labels)
    tol = 1e-5 if precision == "f32" else 2e-2
    assert abs(losses[0] - want_loss) <= tol * want_loss
    assert losses[-1] < 0.8 * losses[0]


def _tf_python():
    python = os.environ.get("MP_TF_PYTHON") or os.path.join(ROOT, ".venv-tensorflow", "bin",
                                                            "python")
    return python if os.path.isfile(python) else None


@pytest.mark.skipif(_tf_python() is None,
                    reason="no TensorFlow environment: scripts/tf_venv.sh makes "
                           ".venv-tensorflow (or set MP_TF_PYTHON)")
def test_keras_application(tools, tmp_path):
    """MobileNetV2 (random weights, 32x32, batch 4) from TensorFlow through
    tf2onnx: imported, f32 within 1e-5 of TensorFlow, bf16/f16 within 5e-2,
    three fine-tuning steps in f32 whose loss goes down."""
    out = tmp_path / "zoo.json"
    env = dict(os.environ, MP_BUILD_DIR=tools.build_dir())
    proc = subprocess.run([_tf_python(), os.path.join(ROOT, "scripts", "keras_zoo.py"),
                           "--models", "MobileNetV2", "--size", "32", "--batch", "4",
                           "--steps", "3", "--train-precisions", "f32", "--no-cache",
                           "--workdir", str(tmp_path), "--json", str(out)],
                          capture_output=True, text=True, env=env, timeout=900)
    sys.stdout.write(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    row = json.loads(out.read_text())["rows"][0]
    assert row["import"] == "ok" and row["err_f32"] <= 1e-5
