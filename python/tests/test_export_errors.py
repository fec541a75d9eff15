"""What the exporter refuses: every error names the ATen op, the module
path (the submodule the op ran in) and, where the op came from the
model's own code, its source line; what PyTorch itself cannot trace names
the module and PyTorch's message. (No tools needed: these fail before any
IR is run.)"""

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


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _error(module, *inputs):
    with pytest.raises(mp.ExportError) as info:
        mp.export(module, inputs)
    return info.value


def _line(cls, offset=1):
    return "test_export_errors.py:%d:" % (cls.forward.__code__.co_firstlineno + offset)


def test_unsupported_op_names_op_path_and_source_line():
    model = nn.Sequential(Block(nn.ReLU()), Block(CumsumAct()))
    err = _error(model, torch.randn(2, 4))
    assert err.op == "aten.cumsum"
    assert err.module_path == "1.act"
    message = str(err)
    assert "aten.cumsum in module '1.act'" in message and "no lowering" in message
    assert _line(CumsumAct) + " return torch.cumsum(x, dim=1)" in message
    assert err.source[1] == CumsumAct.forward.__code__.co_firstlineno + 1


def test_unsupported_layer_names_module_and_reason():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = nn.Sequential(nn.Conv2d(2, 2, 3), nn.ConvTranspose2d(2, 2, 3))

        def forward(self, x):
            return self.decoder(x)

    err = _error(Net(), torch.randn(1, 2, 6, 6))
    assert err.op == "aten.convolution" and err.module_path == "decoder.1"
    assert "transposed convolution is not supported" in str(err)


def test_refused_indexing_and_computed_masks():
    """Indexing with two index tensors; a mask computed from the inputs
    (its comparison has no lowering: masks must be constants)."""
    err = _error(Fn(lambda x: x[torch.tensor([0, 1]), torch.tensor([1, 2])]), torch.randn(2, 4))
    assert err.op == "aten.index" and "2 index tensors" in str(err)
    err = _error(nn.Sequential(nn.Linear(4, 4), Fn(lambda x: x.masked_fill(x > 0, 0.0))),
                 torch.randn(2, 4))
    assert err.op == "aten.gt" and err.module_path == "1"


def test_data_dependent_control_flow_names_path():
    class Branch(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    model = nn.Sequential(nn.Linear(4, 4), Branch())
    err = _error(model, torch.randn(2, 4))
    assert err.module_path == "1" and err.op is None
    assert "PyTorch cannot trace the module" in str(err) and "in module '1'" in str(err)
    assert _line(Branch) in str(err)


def test_unsupported_arguments_are_named():
    err = _error(nn.Sequential(nn.AdaptiveAvgPool2d(3)), torch.randn(1, 1, 8, 8))
    assert err.op == "aten._adaptive_avg_pool2d" and err.module_path == "0"
    assert "not a multiple" in str(err)
    err = _error(nn.Sequential(nn.MaxPool2d(2, ceil_mode=True)), torch.randn(1, 1, 5, 5))
    assert err.op == "aten.max_pool2d_with_indices" and "ceil_mode" in str(err)
    err = _error(Fn(lambda x: torch.div(x, 2, rounding_mode="floor")), torch.randn(2, 4))
    assert err.op == "aten.div" and "rounding_mode='floor'" in str(err)


def test_non_float_inputs_are_refused():
    with pytest.raises(mp.ExportError, match="float32"):
        mp.export(nn.Linear(2, 2), (torch.ones(3, 2, dtype=torch.int32),))
    with pytest.raises(mp.ExportError, match="float32"):
        mp.export(nn.Linear(2, 2), (torch.ones(3, 2, dtype=torch.float64),))
    err = _error(Fn(lambda x: x.double()), torch.randn(2, 4))
    assert err.op == "aten._to_copy" and "float64" in str(err)


def test_int64_tensors_only_as_indices_and_class_index_targets():
    """An int64 input is accepted as indices (embedding, index) and as
    cross entropy's target: anywhere else the error names the op (or, where
    PyTorch itself refuses the mix, the module and PyTorch's message)."""
    err = _error(nn.Sequential(Block(nn.ReLU())), torch.ones(3, 4, dtype=torch.int64))
    assert err.module_path == "0.fc" and "same dtype" in str(err)

    class FloatTarget(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 3)

        def forward(self, x, target):
            return F.mse_loss(self.head(x), target.float().unsqueeze(1).expand(-1, 3))

    err = _error(FloatTarget(), torch.randn(2, 4), torch.tensor([0, 2]))
    assert err.op == "aten._to_copy" and "int64" in str(err)
    assert _line(FloatTarget) + " return F.mse_loss" in str(err)

    class ReturnsTarget(nn.Module):
        def forward(self, target):
            return target

    with pytest.raises(mp.ExportError, match="int64"):
        mp.export(ReturnsTarget(), (torch.tensor([1, 2]),))


def test_unknown_loss():
    with pytest.raises(mp.ExportError, match="unknown loss"):
        mp.export_training(nn.Linear(2, 2), torch.randn(3, 2), loss="hinge")
