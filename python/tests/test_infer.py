"""Inference through the Python API (mp.runtime.InferSession, calibrate):
the digits MLP exported from PyTorch, trained from Python, then compiled for
inference alone in f32, f16, bf16 and int8 (calibrated from numpy rows).
"""

import json

import numpy as np
import pytest
import torch

import models
from conftest import rel_err
from mp import runtime
from test_runtime import _export, _train
from test_training import _digits


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(model path, trained f32 Session, PyTorch module with its weights, data)."""
    torch.manual_seed(0)
    module = models.mlp()
    path = _export(tmp_path_factory.mktemp("infer"), module)
    data = _digits()
    session = runtime.Session(path)
    _train(session, data)
    module.load_state_dict({name: torch.from_numpy(value)
                            for name, value in session.parameters().items()})
    module.eval()
    return path, session, module, data


def _accuracy(logits, data):
    return 100.0 * float(np.mean(logits.argmax(1) == data["labels_test"]))


@pytest.fixture(scope="module")
def f32(trained):
    path, session, _, data = trained
    infer = runtime.InferSession(path, session)
    return infer, infer.predict(data["x_test"])


def test_f32_matches_the_training_session_and_pytorch(trained, f32):
    """All 360 test rows (5 full batches and a padded one): the same logits
    as the session's own prediction and as PyTorch with the same weights."""
    path, session, module, data = trained
    infer, logits = f32
    x = data["x_test"]
    assert logits.shape == (x.shape[0], 10)
    batch = np.zeros((session.batch_size, x.shape[1]), dtype=np.float32)
    batch[:] = x[:session.batch_size]
    assert rel_err(logits[:session.batch_size], session.predict(batch)) < 1e-6
    with torch.no_grad():
        reference = module(torch.from_numpy(x)).numpy()
    assert rel_err(logits, reference) < 1e-5
    assert infer.weight_bytes == sum(v.nbytes for v in session.parameters().values())


@pytest.mark.parametrize("precision,tolerance", [("f16", 2e-3), ("bf16", 1.5e-2)])
def test_low_precision_inference(trained, f32, precision, tolerance):
    """f16/bf16 weights converted once: logits within the stated relative
    error of f32, accuracy within 0.5 point, weights about half the bytes."""
    path, session, _, data = trained
    reference, reference_logits = f32
    infer = runtime.InferSession(path, session, precision=precision)
    logits = infer.predict(data["x_test"])
    assert rel_err(logits, reference_logits) < tolerance
    assert abs(_accuracy(logits, data) - _accuracy(reference_logits, data)) <= 0.5
    assert infer.weight_bytes < 0.55 * reference.weight_bytes


def test_auto_precision_inference(trained, f32):
    """precision="auto" picks what a training session's auto picks on this
    machine, says why, and predicts as that precision does."""
    path, session, _, data = trained
    infer = runtime.InferSession(path, session, precision="auto")
    chosen = runtime.Session(path, precision="auto")
    assert infer.precision == chosen.precision
    assert infer.precision_decision == chosen.precision_decision
    assert infer.precision_decision.startswith("precision auto -> " + infer.precision)
    same = runtime.InferSession(path, session, precision=infer.precision)
    assert same.precision_decision == ""
    np.testing.assert_array_equal(infer.predict(data["x_test"]),
                                  same.predict(data["x_test"]))
    chosen.close()


def test_int8_from_numpy_calibration(trained, f32, tmp_path):
    """calibrate() on 10 batches of training rows writes the statistics;
    the int8 model (nn.Linear's transposed weights quantized per output
    channel) stays within 0.5 point of f32 with under a third of the bytes."""
    path, session, _, data = trained
    reference, reference_logits = f32
    stats = tmp_path / "stats.json"
    runtime.calibrate(path, session, data["x_train"], stats, batches=10)
    values = json.loads(stats.read_text())["values"]
    assert len(values) >= 3  # the inputs of the three matmuls at least
    infer = runtime.InferSession(path, session, precision="int8", calibration=stats)
    logits = infer.predict(data["x_test"])
    assert abs(_accuracy(logits, data) - _accuracy(reference_logits, data)) <= 0.5
    assert infer.weight_bytes < reference.weight_bytes / 3
    assert rel_err(logits, reference_logits) < 0.05


def test_inference_errors(trained, tmp_path):
    path, session, _, data = trained
    with pytest.raises(runtime.MPError, match="bad --precision .*: expected f32, f16, bf16, auto, int8 or int8-dynamic"):
        runtime.InferSession(path, session, precision="fp8")
    with pytest.raises(runtime.MPError, match="precision int8 needs calibration "):
        runtime.InferSession(path, session, precision="int8")
    with pytest.raises(runtime.MPError, match="cannot load model"):
        runtime.InferSession(tmp_path / "missing.mlir", session)
    with pytest.raises(TypeError, match="open mp.runtime.Session"):
        runtime.InferSession(path, object())
    infer = runtime.InferSession(path, session)
    with pytest.raises(ValueError, match="not a whole number of rows of 64"):
        infer.predict(np.zeros((3, 63), dtype=np.float32))
    with pytest.raises(runtime.MPError, match="rows and batches must be positive"):
        runtime.calibrate(path, session, data["x_train"], tmp_path / "s.json", batches=0)
    with pytest.raises(runtime.MPError):
        runtime.calibrate(path, session, data["x_train"], tmp_path / "no" / "dir" / "s.json")


def test_int8_measured_fallback_matches_mp_run(tmp_path, tools):
    """The INT8 measured-error fallback is the session library's, so mp-run
    (--quant-measure 4) and Python (measure=(x_train, 4)) plan the same
    model alike: from one checkpoint and one calibration, with entropy
    thresholds and a 0.43 bound (test/mp-run/int8.test: the third layer
    falls back by measurement only), the held-out accuracy is the same, and
    the measured plan is not the estimate's."""
    import os
    import re
    import subprocess
    model = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "digits_mlp.mlir")
    mp_run = tools.tool("mp-run")
    checkpoint, stats = str(tmp_path / "f32.npz"), str(tmp_path / "stats.json")

    def run(*args):
        out = subprocess.run([mp_run] + list(args), capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    run("train", model, "--epochs", "5", "--checkpoint", checkpoint)
    run("infer", model, "--checkpoint", checkpoint, "--calibrate", "10",
        "--calibration-out", stats)
    quantize = dict(method="entropy", max_error=0.43)
    out = run("infer", model, "--checkpoint", checkpoint, "--precision", "int8",
              "--calibration", stats, "--quant-method", "entropy",
              "--quant-max-error", "0.43", "--quant-measure", "4")
    assert re.findall(r"measured error of '([^']+)'.*\(falls back\)", out), out
    want = re.search(r"held-out accuracy ([0-9.]+)% \(int8 inference\)", out).group(1)

    data = np.load(os.path.join(tools.build_dir(), "data", "digits.npz"))
    session = runtime.Session(model)
    session.load(checkpoint)
    measured = runtime.InferSession(model, session, "int8", calibration=stats,
                                    measure=(data["x_train"], 4), **quantize)
    logits = measured.predict(data["x_test"])
    accuracy = 100.0 * float(np.mean(logits.argmax(1) == data["labels_test"]))
    assert "%.2f" % accuracy == want
    estimated = runtime.InferSession(model, session, "int8", calibration=stats, **quantize)
    assert not np.array_equal(estimated.predict(data["x_test"]), logits)
    with pytest.raises(runtime.MPError, match="measure_batches needs measure_x"):
        runtime.InferSession(model, session, "int8", calibration=stats,
                             measure=(data["x_train"], -1), **quantize)


def _dynamic_int8_reference(module, x, batch):
    """NumPy emulation of --mp-quantize mode=int8-dynamic on the MLP, in
    the compiled code's f32 operations: per batch, each layer's input scaled
    by its own max |x| / 127, weights per output channel, the bias in the
    i32 accumulator, dequantized by s_x * s_w[c]."""
    f32 = np.float32
    layers = [m for m in module if isinstance(m, torch.nn.Linear)]
    out = []
    for start in range(0, x.shape[0], batch):
        h = np.zeros((batch, x.shape[1]), dtype=f32)
        rows = x[start:start + batch]
        h[:rows.shape[0]] = rows
        for i, layer in enumerate(layers):
            w = layer.weight.detach().numpy().astype(f32)  # out x in
            b = layer.bias.detach().numpy().astype(f32)
            amax = np.abs(h).max()
            s_x = f32(amax / f32(127)) if amax > 0 else f32(1)
            q = np.clip(np.rint(h * (f32(1) / s_x)), -127, 127).astype(np.int64)
            wmax = np.abs(w).max(axis=1)
            s_w = np.where(wmax > 0, wmax / f32(127), f32(1)).astype(f32)
            qw = np.clip(np.rint(w / s_w[:, None]), -127, 127).astype(np.int64)
            scale = (s_w * s_x).astype(f32)
            bq = np.clip(np.rint(b / scale), -2147483520.0, 2147483520.0).astype(np.int64)
            acc = q @ qw.T + bq
            h = (acc.astype(f32) * scale).astype(f32)
            if i + 1 < len(layers):
                h = np.maximum(h, f32(0))
        out.append(h[:rows.shape[0]])
    return np.concatenate(out)


def test_int8_dynamic_matches_its_emulation(trained, f32):
    """precision="int8-dynamic" needs no calibration; its logits equal a
    NumPy emulation of the dynamic quantization (the same roundings) and
    its accuracy is within 0.5 point of f32, with int8 weights."""
    path, session, module, data = trained
    reference, reference_logits = f32
    infer = runtime.InferSession(path, session, precision="int8-dynamic")
    assert infer.precision == "int8-dynamic"
    x = data["x_test"]
    logits = infer.predict(x)
    want = _dynamic_int8_reference(module, x, session.batch_size)
    err = rel_err(logits, want)
    print("int8-dynamic against its emulation: rel err %.2e, %d of %d logits differ"
          % (err, int(np.sum(logits != want)), want.size))
    assert err < 1e-5
    assert abs(_accuracy(logits, data) - _accuracy(reference_logits, data)) <= 0.5
    assert infer.weight_bytes < reference.weight_bytes / 3
    with pytest.raises(runtime.MPError, match="int8-dynamic takes no --calibration"):
        runtime.InferSession(path, session, precision="int8-dynamic",
                             calibration=path)


def test_sessions_one_after_another_read_their_own_weights(trained):
    """An InferSession declares its converted weights constant, so that the
    runtime packs them once for its product kernels; closing it releases
    them. Sessions alive together, and a session made after one was closed
    (whose weight buffers may reuse the freed addresses), each compute with
    their own weights: int8-dynamic equal to the emulation, bf16 within its
    tolerance of f32."""
    path, session, module, data = trained
    x = data["x_test"]
    variants = []
    for sign in (1.0, -1.0, 0.5):
        other = runtime.Session(path)
        copy = models.mlp()
        state = {}
        for name, value in session.parameters().items():
            other.set(name, sign * value)
            state[name] = torch.from_numpy(np.ascontiguousarray(sign * value))
        copy.load_state_dict(state)
        copy.eval()
        variants.append((other, copy))
    for precision in ("int8-dynamic", "bf16"):
        def check(infer, variant):
            other, copy = variant
            logits = infer.predict(x)
            if precision == "int8-dynamic":
                want = _dynamic_int8_reference(copy, x, other.batch_size)
                assert rel_err(logits, want) < 1e-5
            else:
                want = runtime.InferSession(path, other).predict(x)
                assert rel_err(logits, want) < 3e-2
        first = runtime.InferSession(path, variants[0][0], precision=precision)
        second = runtime.InferSession(path, variants[1][0], precision=precision)
        check(first, variants[0])
        check(second, variants[1])
        first.close()
        second.close()
        third = runtime.InferSession(path, variants[2][0], precision=precision)
        check(third, variants[2])
        third.close()
