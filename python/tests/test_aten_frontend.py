"""The PyTorch frontend (python/mp/aten.py, `mp.export`), traced at the
ATen level: models traced with make_fx at their example shapes,
lowered op by op, run through mp's CPU pipeline against PyTorch.

Errors are norm-wise relative, ||mp - torch||_2 / ||torch||_2:
  f32 forward (the tests' models, a GPT-style decoder, three torchvision
  models at 32x32):                                   <= 1e-5
  bf16 forward after --mp-auto-mixed-precision:       <= 3e-2
  gradients (--mp-autodiff of the train-mode @loss) against autograd in
  train mode: loss within 1e-6, each gradient within 1e-5 (relative to at
  least 1% of the norm of all gradients (a convolution bias before a train-mode BatchNorm has a
  zero gradient in exact arithmetic)).
The whole zoo (ten torchvision models at 64x64) is scripts/model_zoo.py.
"""

import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import models
import mp
from conftest import rel_err, train_mode_gradients
from mp import aten

torchvision = pytest.importorskip("torchvision")


def GPT(dropout=0.1):
    """The decoder of models.GPT at test size."""
    return models.GPT(vocab=40, d=16, block_size=8, dropout=dropout)


def _forward(tools, module, xs, precision="f32"):
    module.eval()
    program = aten.export_program(module, xs)
    with torch.no_grad():
        want = module(*xs)
    want = want if isinstance(want, tuple) else (want,)
    got = tools.run_program(program, [x.numpy() for x in xs], module, precision=precision)
    assert len(got) == len(want)
    return [rel_err(g, w.numpy()) for g, w in zip(got, want)], program


class MaskedEncoder(nn.Module):
    """A TransformerEncoderLayer with a causal additive mask (a buffer)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.full((5, 5), float("-inf")), 1))

    def forward(self, x):
        return self.layer(x, src_mask=self.mask)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


MODELS = {
    "mlp": lambda: (models.mlp(64), (torch.rand(8, 64),)),
    "cnn": lambda: (models.cnn(), (torch.randn(4, 1, 8, 8),)),
    "vision": lambda: (models._randomize_batch_norm(models.Vision()), (torch.randn(2, 3, 8, 8),)),
    "sequence": lambda: (models.Sequence(), (torch.randn(2, 4, 8),)),
    "functional": lambda: (models.Functional(), (torch.randn(2, 2, 8, 8),)),
    "encoder_layer": lambda: (models.encoder_layer(), (torch.randn(2, 5, 16),)),
    "encoder_stack": lambda: (models.encoder_stack(), (torch.randn(5, 2, 8),)),
    "gpt": lambda: (GPT(), (torch.randint(0, 40, (2, 6)),)),
    "masked_encoder": lambda: (MaskedEncoder(), (torch.randn(2, 5, 8),)),
    "lstm": lambda: (Recurrent(), (torch.randn(2, 3, 4),)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_match_pytorch_f32(tools, name):
    """Measured 4e-8 .. 5e-7 (functional: 1.3e-6, see test_export_numerics)."""
    torch.manual_seed(20)
    module, xs = MODELS[name]()
    errors, _ = _forward(tools, module, xs)
    print("%s f32: %s" % (name, " ".join("%.1e" % e for e in errors)))
    assert max(errors) <= 1e-5


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "swin_t"])
def test_torchvision_match_pytorch_f32(tools, name):
    """Plain and depthwise/grouped convolution (mobilenet), windowed
    attention with roll, padding, a relative-position-bias gather and a
    shifted-window mask (swin), at 32x32. Measured 2e-7 .. 1.5e-6."""
    torch.manual_seed(21)
    module = getattr(torchvision.models, name)(num_classes=10)
    errors, program = _forward(tools, module, (torch.randn(1, 3, 32, 32),))
    print("%s f32: %.1e" % (name, errors[0]))
    assert errors[0] <= 1e-5
    if name == "mobilenet_v3_small":  # grouped: the ONNX importer's generic
        assert "linalg.conv_2d_nchw_fchw" in program.mlir
        assert re.search(r'iterator_types = \["parallel", "parallel", "parallel", "parallel", '
                         r'"parallel", "reduction", "reduction", "reduction"\]', program.mlir)


def test_gpt_bf16(tools):
    """After --mp-auto-mixed-precision=dtype=bf16. Measured 4e-3."""
    torch.manual_seed(22)
    module, xs = MODELS["gpt"]()
    errors, _ = _forward(tools, module, xs, precision="bf16")
    print("gpt bf16: %.1e" % errors[0])
    assert errors[0] <= 3e-2


class _Flat(nn.Module):
    """A decoder's logits of the last position: [B, vocab]."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, idx):
        return self.inner(idx)[:, -1, :]


@pytest.mark.parametrize("name", ["cnn", "gpt"])
def test_train_mode_gradients_match_autograd(tools, name):
    """cnn: BatchNorm in train mode (batch statistics), max and average
    pooling, GELU; gpt (dropout 0): embedding gathers, a tied head (one
    argument, the sum of both gradients), split, the sliced causal mask,
    select. Measured: loss 1e-7, gradients <= 7e-7."""
    torch.manual_seed(23)
    if name == "cnn":
        module, x = models._randomize_batch_norm(models.TrainCNN()), torch.randn(4, 1, 8, 8)
        classes = 10
    else:
        module, x = _Flat(GPT(dropout=0.0)), torch.randint(0, 40, (3, 6))
        classes = 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BatchNorm's running statistics (tested below)
        loss, grads, want_loss, want, program = train_mode_gradients(tools, module, x, classes)
    assert abs(loss - want_loss) <= 1e-6 * abs(want_loss)
    assert len(grads) == len(want) == len(list(module.parameters()))
    total = np.sqrt(sum(np.sum(w.astype(np.float64) ** 2) for w in want))
    for spec, g, w in zip(program.params, grads, want):
        err = np.linalg.norm(g.astype(np.float64) - w) / max(np.linalg.norm(w), 1e-2 * total)
        assert err <= 1e-5, "%s: gradient rel err %.3g" % (spec.mp_name, err)


def test_training_export_trains_in_train_mode(tools):
    """export_training: @loss traced in train mode (batch statistics; the
    running statistics differ from them), @predict in eval mode; a warning
    says the running statistics are not updated; the module's modes and
    buffers are left as they were; --mp-train-pipeline builds the step."""
    torch.manual_seed(24)
    module = models._randomize_batch_norm(models.TrainCNN()).eval()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    x = torch.randn(4, 1, 8, 8)
    with pytest.warns(UserWarning, match="running statistics"):
        text = mp.export_training(module, x, num_classes=10)
    assert not module.training
    for k, v in module.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert "func.func @loss(%x0: tensor<4x1x8x8xf32>, %labels: tensor<4x10xf32>" in text
    assert "attributes {mp.predict}" in text
    out = tools.mp_opt(text, "--mp-train-pipeline=dtype=bf16")
    assert "func.func @train_step" in out and "xbf16>" in out


def test_locations_name_module_paths_and_pin_ops(tools):
    """Every op a module produced carries loc("<module path>"(FILE:LINE:COL))
    with LINE:COL its own place in the text: --keep-f32 LINE:COL pins it."""
    module = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.ReLU(), nn.Linear(8, 2)))
    text = mp.export(module, (torch.randn(3, 4),), filename="m.mlir")
    lines = text.splitlines()
    matmuls = [(i + 1, line) for i, line in enumerate(lines) if "linalg.matmul" in line]
    assert len(matmuls) == 2
    line_no, line = matmuls[1]
    assert line.endswith('loc("1.1"("m.mlir":%d:3))' % line_no)
    assert 'loc("1.0"(' in text
    pinned = tools.mp_opt(text, "--mp-keep-f32=locations=%d:3" % line_no)
    ops = [l for l in pinned.splitlines() if "linalg.matmul" in l]
    assert "mp.precision<f32>" not in ops[0] and "mp.precision<f32>" in ops[1]


class _Cumsum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


class _ToFloat(nn.Module):
    def forward(self, x):
        return x.float()


class _DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def test_errors_name_op_module_and_source_line():
    """An ATen op without a lowering: the op, the module path and the
    model's source line; data-dependent control flow: the module path."""
    module = nn.Sequential(nn.Linear(4, 4), nn.Sequential(_Cumsum()))
    with pytest.raises(mp.ExportError) as info:
        mp.export(module, (torch.randn(2, 4),))
    message = str(info.value)
    assert "aten.cumsum" in message and "in module '1.0'" in message
    assert "test_aten_frontend.py:%d: return torch.cumsum(x, 1)" % (
        _Cumsum.forward.__code__.co_firstlineno + 1) in message
    assert info.value.op == "aten.cumsum" and info.value.module_path == "1.0"

    with pytest.raises(mp.ExportError, match="in module '1'") as info:
        mp.export(nn.Sequential(nn.Linear(4, 4), _DataDependent()), (torch.randn(2, 4),))
    assert info.value.module_path == "1"

    with pytest.raises(mp.ExportError, match=r"aten._to_copy in module '0'.*int64"):
        mp.export(nn.Sequential(_ToFloat(), nn.Linear(4, 4)),
                  (torch.ones(2, 4, dtype=torch.int64),))
