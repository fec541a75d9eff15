"""What the exporter refuses: every error names the op and the module path.
(No tools needed: these fail before any IR is run.)"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import mp


class CumsumAct(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


class Block(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = act

    def forward(self, x):
        return self.act(self.fc(x))


def _error(module, *inputs):
    with pytest.raises(mp.ExportError) as info:
        mp.export(module, inputs)
    return info.value


def test_unsupported_function_names_op_and_path():
    model = nn.Sequential(Block(nn.ReLU()), Block(CumsumAct()))
    err = _error(model, torch.randn(2, 4))
    assert err.op == "torch.cumsum"
    assert err.module_path == "1.act"
    assert "torch.cumsum" in str(err) and "'1.act'" in str(err)


def test_unsupported_layer_names_module_and_path():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(4, 4), nn.LSTM(4, 4, batch_first=True))

        def forward(self, x):
            return self.encoder(x)

    err = _error(Net(), torch.randn(2, 3, 4))
    assert err.op == "torch.nn.LSTM"
    assert err.module_path == "encoder.1"
    assert "torch.nn.LSTM" in str(err) and "'encoder.1'" in str(err)


def test_attention_mask_inside_encoder_names_self_attn():
    class Masked(nn.Module):
        """Calls the layers' attention with a mask (TransformerEncoder's own
        forward is traced by mp without masks)."""

        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.register_buffer("mask", torch.zeros(3, 3))

        def forward(self, x):
            for layer in self.encoder.layers:
                x = x + layer.self_attn(x, x, x, attn_mask=self.mask)[0]
            return x

    err = _error(Masked(), torch.randn(2, 3, 8))
    assert err.op == "torch.nn.MultiheadAttention"
    assert err.module_path == "encoder.layers.0.self_attn"
    assert "attention masks" in str(err)


def test_tensor_slicing_is_refused():
    class Slice(nn.Module):
        def forward(self, x):
            return x[:, :2] * 2

    err = _error(Slice(), torch.randn(2, 4))
    assert err.op == "operator.getitem"
    assert "slicing" in str(err)


def test_data_dependent_control_flow_names_path():
    class Branch(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    model = nn.Sequential(nn.Linear(4, 4), Branch())
    err = _error(model, torch.randn(2, 4))
    assert err.module_path == "1"
    assert "control flow" in str(err)


def test_unsupported_arguments_are_named():
    err = _error(nn.Sequential(nn.Conv2d(4, 4, 3, groups=2)), torch.randn(1, 4, 6, 6))
    assert err.op == "torch.nn.Conv2d" and err.module_path == "0"
    assert "groups=2" in str(err)
    err = _error(nn.Sequential(nn.AdaptiveAvgPool2d(3)), torch.randn(1, 1, 8, 8))
    assert "not a multiple" in str(err) and err.module_path == "0"


def test_non_float_inputs_are_refused():
    with pytest.raises(mp.ExportError, match="float32"):
        mp.export(nn.Linear(2, 2), (torch.ones(3, 2, dtype=torch.int32),))
    with pytest.raises(mp.ExportError, match="float32"):
        mp.export(nn.Linear(2, 2), (torch.ones(3, 2, dtype=torch.float64),))


def test_int64_tensors_only_as_class_index_targets():
    """An int64 input is accepted for cross entropy's target only: anywhere
    else the error names the op and the module path."""
    err = _error(nn.Sequential(Block(nn.ReLU())), torch.ones(3, 4, dtype=torch.int64))
    assert err.op == "torch.nn.Linear" and err.module_path == "0.fc"
    assert "int64" in str(err) and "class-index target" in str(err)

    class FloatTarget(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 3)

        def forward(self, x, target):
            return F.mse_loss(self.head(x), target.float().unsqueeze(1).expand(-1, 3))

    err = _error(FloatTarget(), torch.randn(2, 4), torch.tensor([0, 2]))
    assert err.op == "Tensor.float" and "int64" in str(err)

    class BadShape(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 3)

        def forward(self, x, target):
            return F.cross_entropy(self.head(x).unsqueeze(2), target)

    err = _error(BadShape(), torch.randn(2, 4), torch.tensor([[0], [2]]))
    assert err.op == "torch.nn.functional.cross_entropy"
    assert "int64 target [B]" in str(err)

    class ReturnsTarget(nn.Module):
        def forward(self, target):
            return target

    with pytest.raises(mp.ExportError, match="int64"):
        mp.export(ReturnsTarget(), (torch.tensor([1, 2]),))


def test_unknown_loss():
    with pytest.raises(mp.ExportError, match="unknown loss"):
        mp.export_training(nn.Linear(2, 2), torch.randn(3, 2), loss="hinge")
