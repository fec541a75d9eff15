"""A language model trains through a session from token ids (issue #51).

A small decoder-shaped model (token and position embeddings, a layer norm,
a GELU MLP, a head tied to the token embedding) written as PyTorch users
write it goes to mp through torch.onnx and through the ATen frontend; the
session wraps its [B, T, V] logits in --mp-add-loss's token cross-entropy
(integer targets, ignore_index) and takes i64 token ids as x. One SGD step
with lr 1 must move every parameter by PyTorch's gradient of
F.cross_entropy(..., ignore_index=-100), and the loss must agree.
"""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import rel_err

VOCAB, DIM, BATCH, LENGTH = 32, 16, 2, 8


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(LENGTH, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.fc = nn.Linear(DIM, DIM)

    def forward(self, ids):
        h = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        h = h + F.gelu(self.fc(self.norm(h)))
        return h @ self.tok.weight.t()  # the head tied to the embedding


def _model():
    torch.manual_seed(0)
    model = TinyLM()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def _batch():
    rng = np.random.default_rng(1)
    ids = rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int64)
    # A repeated token (the embedding's scatter-add must add both rows).
    ids[1, 3] = ids[0, 2]
    targets = rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int64)
    targets[0, :3] = -100  # ignored positions, as a padded prompt
    return ids, targets


def _write(route, model, tmp_path):
    ids = torch.zeros(BATCH, LENGTH, dtype=torch.int64)
    if route == "onnx":
        path = str(tmp_path / "lm.onnx")
        torch.onnx.export(model, ids, path, opset_version=14, input_names=["ids"],
                          do_constant_folding=False,  # keep the tied head tied
                          output_names=["logits"])
        return path
    import mp
    path = str(tmp_path / "lm.mlir")
    with open(path, "w") as f:
        f.write(mp.export(model, (ids,)))
    return path


@pytest.mark.parametrize("route", ["onnx", "aten"])
def test_token_cross_entropy_step_matches_pytorch(tools, tmp_path, route):
    from mp import runtime
    model = _model()
    path = _write(route, model, tmp_path)
    session = runtime.Session(path, loss="cross-entropy", lr=1.0, momentum=0.0, cache=False)
    if route == "aten":  # an .mlir model carries no weights: PyTorch's
        for name, p in model.named_parameters():
            session.set(name, p.detach().numpy())
    assert session.io["x"] == {"shape": [BATCH, LENGTH], "dtype": "i64"}
    assert session.io["labels"] == {"shape": [BATCH, LENGTH], "dtype": "i64"}
    assert session.io["logits"]["shape"] == [BATCH, LENGTH, VOCAB]
    ids, targets = _batch()
    logits = session.predict(ids)
    want_logits = model(torch.from_numpy(ids))
    assert rel_err(logits, want_logits.detach().numpy()) <= 1e-5

    before = {name: session.get(name).copy() for name in session.names()}
    loss, stepped = session.train_step(ids, targets)
    want = F.cross_entropy(want_logits.reshape(-1, VOCAB), torch.from_numpy(targets).reshape(-1),
                           ignore_index=-100)
    want.backward()
    assert stepped and abs(loss - want.item()) <= 1e-5 * abs(want.item())
    # One parameter per PyTorch parameter (the tied head is the embedding),
    # matched by starting value (ONNX names its initializers itself).
    params = list(model.parameters())
    assert len(before) == len(params)
    for name, start in before.items():
        match = [p for p in params if tuple(p.shape) == start.shape
                 and np.array_equal(p.detach().numpy(), start)]
        assert len(match) == 1, name
        err = rel_err(start - session.get(name), match[0].grad.numpy())
        print("%s: gradient rel err %.2e" % (name, err))
        assert err <= 2e-5, name


def test_float_labels_refused_for_token_ids(tools, tmp_path):
    from mp import runtime
    session = runtime.Session(_write("onnx", _model(), tmp_path), loss="cross-entropy",
                              cache=False)
    ids, targets = _batch()
    with pytest.raises(ValueError, match="labels must hold integer ids"):
        session.train_step(ids, targets.astype(np.float32))


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_low_precision_step_tracks_f32(tools, tmp_path, precision):
    """The same step in bf16/f16 (AMP over the whole step; the loss's
    log-softmax stays f32): its loss within 2% of the f32 step's."""
    from mp import runtime
    path = _write("onnx", _model(), tmp_path)
    ids, targets = _batch()
    losses = {}
    for p in ("f32", precision):
        session = runtime.Session(path, loss="cross-entropy", precision=p, lr=0.5,
                                  momentum=0.0, cache=False)
        losses[p] = [session.train_step(ids, targets)[0] for _ in range(3)]
    print(losses)
    for low, full in zip(losses[precision], losses["f32"]):
        assert abs(low - full) <= 0.02 * abs(full)
    assert losses[precision][-1] < losses[precision][0]  # it learns
