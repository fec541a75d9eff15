"""Dropout in training exports: train-mode F.dropout / nn.Dropout /
nn.MultiheadAttention's attention dropout and torchvision's stochastic
depth become `mp.dropout` in @loss (eval-mode @predict has none), and a
session trains through them (--mp-lower-dropout's Philox mask).

Measured (2 cores): the share of elements a dropout of ratio 0.25 keeps,
read from the loss of a model whose loss is the mean square of the
dropout's output over 4096 ones, is within 0.02 of 0.75 in every step;
ratio 0 trains bitwise as the model without the dropout.
"""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import mp
from mp import runtime


def _ratios(text, func):
    """The ratio of every mp.dropout in @func of `text`, in order."""
    body = text.split("func.func @%s(" % func, 1)[1].split("\n}\n", 1)[0]
    return [float(line.split("ratio = ")[1].split(" : f64")[0])
            for line in body.splitlines() if "mp.dropout" in line]


class DropoutMLP(nn.Module):
    def __init__(self, p=0.2, q=0.1, features=16, classes=4):
        super().__init__()
        self.fc1 = nn.Linear(features, 32)
        self.drop = nn.Dropout(p)
        self.fc2 = nn.Linear(32, classes)
        self.q = q

    def forward(self, x):
        y = self.drop(torch.relu(self.fc1(x)))
        return self.fc2(F.dropout(y, self.q, self.training))


def test_dropout_in_loss_not_in_predict():
    """nn.Dropout and F.dropout keep their ratios; an encoder layer's four
    dropouts (attention weights, the two residual branches, the
    feed-forward) are there; stochastic depth and Dropout2d (PyTorch's
    bernoulli_) are masks from mp.dropout of ones (per row, per channel);
    @predict has none, and the module's mode is restored."""
    module = DropoutMLP(0.2, 0.1)
    module.eval()
    text = mp.export_training(module, torch.randn(8, 16), num_classes=4)
    assert _ratios(text, "loss") == [0.2, 0.1]
    assert _ratios(text, "predict") == []
    assert not module.training

    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, batch_first=True)
    program = mp.export_program(layer, (torch.randn(2, 3, 8),), loss="mse")
    assert _ratios(program.mlir, "loss") == [0.3] * 4
    assert _ratios(program.mlir, "predict") == []

    from torchvision.ops import StochasticDepth
    depth = nn.Sequential(nn.Linear(4, 4), StochasticDepth(0.25, "row"))
    text = mp.export_training(depth, torch.randn(3, 4), loss="mse")
    assert _ratios(text, "loss") == [pytest.approx(0.25)]
    assert "mp.dropout" in text and "tensor<3x1xf32>" in text

    channels = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Dropout2d(0.5))
    text = mp.export_training(channels, torch.randn(2, 1, 6, 6), loss="mse")
    assert _ratios(text, "loss") == [0.5] and "mp.dropout" in text
    assert "tensor<2x2x1x1xf32>" in text.split("mp.dropout", 1)[1].split("\n")[0]


def test_dropout_refused_where_it_cannot_be_exported(tools):
    """p = 1 (everything dropped) and a random op in an eval-mode trace
    (MC dropout: @predict draws no random numbers) are ExportErrors naming
    the op and the module; so is a random op without a lowering."""
    module = nn.Sequential(nn.Linear(8, 8), nn.Dropout(1.0), nn.Linear(8, 3))
    with pytest.raises(mp.ExportError, match=r"mp\.dropout in module '1'.*0 <= p < 1"):
        mp.export_training(module, torch.randn(4, 8), num_classes=3)

    class MonteCarlo(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            return F.dropout(self.fc(x), 0.5, training=True)
    with pytest.raises(mp.ExportError, match=r"mp\.dropout.*test_export_dropout\.py:\d+: "
                                             r"return F\.dropout.*eval-mode trace"):
        mp.export(MonteCarlo(), (torch.randn(4, 8),))

    class Noise(nn.Module):
        def forward(self, x):
            return x + torch.randn_like(x)
    with pytest.raises(mp.ExportError, match=r"aten\.randn_like in module '1'.*"
                                             r"no lowering") as info:
        mp.export_training(nn.Sequential(nn.Linear(4, 4), Noise()), torch.randn(2, 4),
                           loss="mse")
    assert info.value.op == "aten.randn_like" and info.value.module_path == "1"


def _session(tmp_path, name, module, x, **options):
    path = tmp_path / (name + ".mlir")
    path.write_text(mp.export_training(module, x))
    session = runtime.Session(path, lr=0.1, momentum=0.9, **options)
    for key, value in mp.param_arrays(module).items():
        session.set_parameter(key, value)
    return session


def _batches(steps, rows=16, features=16, classes=4):
    g = torch.Generator().manual_seed(1)
    centers = torch.randn(classes, features, generator=g) * 2
    out = []
    for _ in range(steps):
        y = torch.randint(0, classes, (rows,), generator=g)
        x = centers[y] + torch.randn(rows, features, generator=g)
        out.append((x.numpy(), F.one_hot(y, classes).float().numpy()))
    return out


def test_session_trains_with_dropout_and_ratio_zero_is_no_dropout(tmp_path):
    """A session trains the dropout MLP (loss falls over 30 steps, two
    seeds give different masks); with both ratios 0 every step's loss and
    the final parameters are bitwise those of the model without dropout."""
    torch.manual_seed(0)
    module = DropoutMLP(0.2, 0.1)
    batches = _batches(30)
    session = _session(tmp_path, "drop", module, torch.zeros(16, 16), dropout_seed=1)
    losses = [session.train_step(x, y)[0] for x, y in batches]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses
    other = _session(tmp_path, "drop", module, torch.zeros(16, 16), dropout_seed=2)
    assert other.train_step(*batches[0])[0] != losses[0]

    zero = copy.deepcopy(module)
    zero.drop.p, zero.q = 0.0, 0.0
    plain = copy.deepcopy(zero)
    plain.drop = nn.Identity()
    a = _session(tmp_path, "zero", zero, torch.zeros(16, 16))
    b = _session(tmp_path, "plain", plain, torch.zeros(16, 16))
    for x, y in batches[:5]:
        assert a.train_step(x, y)[0] == b.train_step(x, y)[0]
    for key, value in a.parameters().items():
        assert np.array_equal(value, b.get(key)), key


class ScaledDropout(nn.Module):
    def __init__(self, features, p):
        super().__init__()
        self.w = nn.Parameter(torch.ones(features))
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(x * self.w)


def test_share_of_dropped_elements_is_the_ratio(tmp_path):
    """Loss = mean((dropout(1 * w))^2) with w = 1 and target 0 is (kept
    share) / (1 - p)^2: over 4096 elements the kept share is within 0.02
    (6 standard deviations) of 1 - p in each of 5 steps, and the masks
    differ from step to step."""
    d, p = 4096, 0.25
    module = ScaledDropout(d, p)
    path = tmp_path / "share.mlir"
    path.write_text(mp.export_training(module, torch.ones(1, d), loss="mse"))
    session = runtime.Session(path, lr=1e-9, momentum=0.0)  # w stays 1
    session.set_parameter("w", np.ones(d, np.float32))
    x, target = np.ones((1, d), np.float32), np.zeros((1, d), np.float32)
    shares = [session.train_step(x, target)[0] * (1 - p) ** 2 for _ in range(5)]
    print("kept shares:", shares)
    for share in shares:
        assert abs(share - (1 - p)) < 0.02, shares
    assert len(set(shares)) > 1, shares
