"""Quantization-aware training through the Python API: the digits MLP
exported from PyTorch, trained in f32, fine-tuned with Session(qat=True)
from its parameters, then run as int8 by an InferSession that takes the
activation scales from the QAT session's observers (no calibration).
"""

import numpy as np
import pytest
import torch

import models
import mprun_order
from conftest import rel_err
import mp
from mp import runtime
from test_runtime import _export
from test_training import BATCH, _digits

F32 = np.float32


def _epochs(session, data, epochs):
    x, y = data["x_train"], data["y_train"]
    for epoch in range(1, epochs + 1):
        order = mprun_order.epoch_order(x.shape[0], epoch)
        for first in range(0, x.shape[0] - BATCH + 1, BATCH):
            idx = order[first:first + BATCH]
            session.train_step(x[idx], y[idx])


def _fake_quant(v, scale, axis=None):
    """mp.fake_quant in f32: clamp(roundeven(v / s), -127, 127) * s."""
    if axis is not None:
        scale = np.expand_dims(scale, 1 - axis)
    return (np.clip(np.rint(v / scale), -127, 127) * scale).astype(F32)


def _weight_scale(w):
    """mp.quant_scale per output channel (nn.Linear's rows)."""
    wmax = np.abs(w).max(axis=1)
    return np.where(wmax > 0, wmax / F32(127), F32(1)).astype(F32)


def _fake_quant_forward(params, layers, amax, x):
    """The fake-quantized MLP: each layer's input rounded with its
    observer's scale amax / 127, its weight per output channel."""
    h = x.astype(F32)
    for i, name in enumerate(layers):
        w, b = params[name + ".weight"], params[name + ".bias"]
        s_x = F32(amax[i] / F32(127)) if amax[i] > 0 else F32(1)
        h = _fake_quant(h, np.array(s_x, dtype=F32))
        h = (h @ _fake_quant(w, _weight_scale(w), axis=0).T + b).astype(F32)
        if i + 1 < len(layers):
            h = np.maximum(h, F32(0))
    return h


@pytest.fixture(scope="module")
def qat(tmp_path_factory):
    """(model path, f32 Session, QAT Session fine-tuned from it, data, the
    QAT checkpoint's tensors)."""
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("qat")
    path = _export(tmp, models.mlp())
    data = _digits()
    f32 = runtime.Session(path)
    _epochs(f32, data, 3)
    f32.save(tmp / "f32.npz")
    session = runtime.Session(path, qat=True, lr=0.01)
    session.load_parameters(tmp / "f32.npz")
    _epochs(session, data, 1)
    session.save(tmp / "qat.npz")
    return path, f32, session, data, dict(np.load(tmp / "qat.npz"))


def _layers(params):
    return sorted({name.rsplit(".", 1)[0] for name in params}, key=int)


def test_training_step_is_the_fake_quantized_forward(qat):
    """One more step's loss equals cross-entropy of the fake-quantized
    forward whose activation scales are the observers moved by this batch
    (amax + 0.01 (max |x| - amax)), computed in NumPy."""
    path, _, session, data, saved = qat
    params = session.parameters()
    layers = _layers(params)
    observers = [F32(saved[name + ".weight.input_amax"]) for name in layers]
    assert all(o > 0 for o in observers), observers
    x, y = data["x_train"][:BATCH], data["y_train"][:BATCH]
    h = x.astype(F32)
    for i, name in enumerate(layers):
        moved = F32(observers[i] + F32(0.01) * (np.abs(h).max() - observers[i]))
        h = _fake_quant_forward({k: params[k] for k in (name + ".weight", name + ".bias")},
                                [name], [moved], h)
        if i + 1 < len(layers):
            h = np.maximum(h, F32(0))
    logits = h.astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    want = -(logp * y).sum() / BATCH
    loss, stepped = session.train_step(x, y)
    assert stepped
    print("QAT step loss %.7f, NumPy fake-quantized forward %.7f" % (loss, want))
    assert abs(loss - want) <= 1e-5 * abs(want)


def test_int8_equals_the_fake_quantized_forward(qat):
    """InferSession(precision="int8") on the QAT session: no calibration,
    every product int8 with the observers' scales, logits equal to the
    fake-quantized forward up to the requantization rounding, accuracy
    within 0.5 point of the same weights in f32."""
    path, _, session, data, _ = qat
    session.save(session_path := path.parent / "qat-now.npz")
    saved = dict(np.load(session_path))
    params = session.parameters()
    layers = _layers(params)
    amax = [F32(saved[name + ".weight.input_amax"]) for name in layers]
    infer = runtime.InferSession(path, session, precision="int8")
    x = data["x_test"]
    logits = infer.predict(x)
    want = _fake_quant_forward(params, layers, amax, x)
    err = rel_err(logits, want)
    flips = int(np.sum(logits.argmax(1) != want.argmax(1)))
    print("int8 against the fake-quantized forward: rel err %.2e, %d of %d "
          "predictions differ" % (err, flips, x.shape[0]))
    assert err < 2e-3
    assert flips <= 1
    f32_logits = runtime.InferSession(path, session).predict(x)
    accuracy = lambda z: 100.0 * float(np.mean(z.argmax(1) == data["labels_test"]))
    assert abs(accuracy(logits) - accuracy(f32_logits)) <= 0.5
    assert infer.weight_bytes < sum(v.nbytes for v in params.values()) / 3


def test_qat_errors(qat):
    path, f32, _, _, _ = qat
    with pytest.raises(runtime.MPError, match="a weights session trained with qat"):
        runtime.InferSession(path, f32, precision="int8")
    with pytest.raises(runtime.MPError, match="--qat-freeze-after needs --qat"):
        runtime.Session(path, qat_freeze_after=10)
    with pytest.raises(runtime.MPError, match="--qat-freeze-after -1 is negative"):
        runtime.Session(path, qat=True, qat_freeze_after=-1)


class PerHead(torch.nn.Module):
    """Eight 8-pixel rows, each through its own 8x16 weight (one
    torch.bmm with a batched weight, a linalg.batch_matmul), then a linear
    head."""

    def __init__(self):
        super().__init__()
        self.heads = torch.nn.Parameter(torch.randn(8, 8, 16) * 0.35)
        self.out = torch.nn.Linear(128, 10)

    def forward(self, x):
        rows = x.reshape(x.shape[0], 8, 8).transpose(0, 1)       # [8, B, 8]
        h = torch.relu(torch.bmm(rows, self.heads))               # [8, B, 16]
        return self.out(h.transpose(0, 1).reshape(x.shape[0], 128))


def _per_head_forward(params, amax, x, moving=False):
    """PerHead fake-quantized: each product's input rounded with its
    observer's scale (moved by this input first when `moving`, as a training
    step does), the batched weight per output column n (one scale across the
    heads), the linear head's weight per output row."""
    def act(v, a):
        if moving:
            a = F32(a + F32(0.01) * (np.abs(v).max() - a))
        return _fake_quant(v, np.array(a / F32(127) if a > 0 else F32(1), dtype=F32))
    heads, w, b = params["heads"], params["out.weight"], params["out.bias"]
    hmax = np.abs(heads).max(axis=(0, 1))
    hq = _fake_quant(heads, np.where(hmax > 0, hmax / F32(127), F32(1)).astype(F32))
    rows = act(x.astype(F32), amax[0]).reshape(-1, 8, 8).transpose(1, 0, 2)
    h = np.maximum(np.matmul(rows, hq), F32(0)).transpose(1, 0, 2).reshape(-1, 128)
    return (act(h.astype(F32), amax[1]) @ _fake_quant(w, _weight_scale(w), axis=0).T
            + b).astype(F32)


def test_batched_weight_qat_and_int8(tmp_path):
    """A batch_matmul whose B is a weight is fake-quantized in training (the
    step's loss is the NumPy fake-quantized forward) and runs as int8 from
    the QAT observers (its logits are that forward up to requantization
    rounding; its weight is stored as int8)."""
    torch.manual_seed(0)
    path = tmp_path / "per_head.mlir"
    path.write_text(mp.export_training(PerHead(), torch.zeros(BATCH, 64), num_classes=10))
    text = path.read_text()
    assert "linalg.batch_matmul" in text
    data = _digits()
    f32 = runtime.Session(path)
    _epochs(f32, data, 3)
    f32.save(tmp_path / "f32.npz")
    session = runtime.Session(path, qat=True, lr=0.01)
    session.load_parameters(tmp_path / "f32.npz")
    _epochs(session, data, 1)
    session.save(tmp_path / "qat.npz")
    saved = dict(np.load(tmp_path / "qat.npz"))
    names = ["heads.input_amax", "out.weight.input_amax"]
    assert all(name in saved for name in names), sorted(saved)

    # One more step: the observers move by this batch, then the forward.
    params = session.parameters()
    x, y = data["x_train"][:BATCH], data["y_train"][:BATCH]
    amax = [F32(saved[n]) for n in names]
    logits = _per_head_forward(params, amax, x, moving=True).astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    want = -(logp * y).sum() / BATCH
    loss, stepped = session.train_step(x, y)
    assert stepped
    print("per-head QAT step loss %.7f, NumPy fake-quantized forward %.7f" % (loss, want))
    assert abs(loss - want) <= 1e-5 * abs(want)

    session.save(tmp_path / "qat-now.npz")
    saved = dict(np.load(tmp_path / "qat-now.npz"))
    params = session.parameters()
    infer = runtime.InferSession(path, session, precision="int8")
    got = infer.predict(data["x_test"])
    want = _per_head_forward(params, [F32(saved[n]) for n in names], data["x_test"])
    err = rel_err(got, want)
    flips = int(np.sum(got.argmax(1) != want.argmax(1)))
    print("per-head int8 against the fake-quantized forward: rel err %.2e, "
          "%d of %d predictions differ" % (err, flips, got.shape[0]))
    assert err < 2e-3
    assert flips <= 1
    # Both products' weights are int8 (the batched one would otherwise stay
    # 4096 bytes of f32 on its own).
    assert infer.weight_bytes < sum(v.nbytes for v in params.values()) / 3
