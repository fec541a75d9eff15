"""ONNX models written by torch.onnx.export import with mp-translate and
compute what PyTorch computes.

The digits-sized MLP and CNN and a TransformerEncoderLayer are exported by
Debian's PyTorch (offline, opsets 14 and 17: LayerNormalization exists from
17, before it the layer norm is written as ReduceMean/Sub/Pow/Sqrt/Div),
imported with their initializers as mp.param arguments, lowered with mp's
CPU pipeline and run on the same input. FP32 outputs must agree within 1e-5
(norm-wise relative error, conftest.rel_err).
"""

import subprocess

import numpy as np
import onnx
import pytest
import torch
import torch.nn as nn
from onnx import numpy_helper

from conftest import rel_err


class DigitsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x):
        return self.net(x)


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.bn(self.conv(x)))), 1))


def _models():
    torch.manual_seed(0)
    cnn = DigitsCNN()
    # Running statistics that are not the identity, so the folded batch
    # norm is checked.
    cnn.bn.running_mean.uniform_(-0.5, 0.5)
    cnn.bn.running_var.uniform_(0.5, 1.5)
    enc = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                     dropout=0.0, batch_first=True)
    return {
        "mlp": (DigitsMLP(), (4, 64)),
        "cnn": (cnn, (2, 1, 8, 8)),
        "encoder": (enc, (2, 5, 32)),
    }


def _import(tools, path):
    proc = subprocess.run([tools.tool("mp-translate"), "--import-onnx", path],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("opset", [14, 17])
@pytest.mark.parametrize("name", ["mlp", "cnn", "encoder"])
def test_torch_export_round_trip(tools, tmp_path, name, opset):
    module, shape = _models()[name]
    module.eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    path = str(tmp_path / ("%s.onnx" % name))
    torch.onnx.export(module, x, path, opset_version=opset, input_names=["x"],
                      output_names=["y"])
    text = _import(tools, path)
    assert 'mp.input = "x"' in text and 'mp.output = "y"' in text
    # Parameters: the float initializers, in the graph's order.
    graph = onnx.load(path).graph
    params = [numpy_helper.to_array(t).astype(np.float32) for t in graph.initializer
              if t.data_type == onnx.TensorProto.FLOAT]
    assert text.count("mp.param") == len(params) > 0
    got = tools.run(text, "predict", [x.numpy()] + params)
    with torch.no_grad():
        want = module(x).numpy()
    err = rel_err(got[0].reshape(want.shape), want)
    print("%s opset %d: rel err %.2e" % (name, opset, err))
    assert err <= 1e-5
