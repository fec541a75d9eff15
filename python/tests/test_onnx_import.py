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


class DigitsTransformer(nn.Module):
    """A digits classifier around a TransformerEncoderLayer: each 8x8 image
    is 8 tokens of 8 pixels."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 32)
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.layer(self.embed(x.reshape(x.shape[0], 8, 8))).mean(1))


class PaddedCNN(nn.Module):
    """Two convolutions, the second behind F.pad's padding at the end only
    (what padding='same' does for an even kernel)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 2)
        self.fc = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        h = torch.relu(self.c1(x.reshape(x.shape[0], 1, 8, 8)))
        h = torch.relu(self.c2(nn.functional.pad(h, (0, 1, 0, 1))))
        return self.fc(torch.flatten(h, 1))


def _export_classifier(tmp_path, opset=14, cls=DigitsTransformer):
    torch.manual_seed(0)
    model = cls()
    # torch.onnx.export shares initializers of equal value (the layer
    # norms' ones and zeros); perturbed, each parameter stays its own.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.eval()
    path = str(tmp_path / "classifier.onnx")
    torch.onnx.export(model, torch.zeros(16, 64), path, opset_version=opset,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    return model, path


@pytest.mark.parametrize("name,opset", [("transformer", 14), ("transformer", 17),
                                        ("padded-cnn", 13)])
def test_session_gradients_match_pytorch(tools, tmp_path, name, opset):
    """A Session on the .onnx file (loss and batch_size from Python) starts
    from the model's weights, and one SGD step with lr 1 and no momentum
    moves every parameter by PyTorch's gradient of the mean cross-entropy.
    Opset 14 writes the layer norm with Pow(x - mean, 2), whose derivative
    must stay finite where x equals the mean. The padded CNN's pads are a
    shape computation torch.onnx writes for F.pad (reversed 2-D Slice,
    Transpose) and its gradient goes through a pad at the end only."""
    from mp import runtime
    model, path = _export_classifier(
        tmp_path, opset, DigitsTransformer if name == "transformer" else PaddedCNN)
    session = runtime.Session(path, batch_size=16, loss="cross-entropy", lr=1.0,
                              momentum=0.0, cache=False)
    assert session.batch_size == 16 and session.num_classes == 10
    torch_params = {name: p for name, p in model.named_parameters()}
    before = {name: session.get(name).copy() for name in session.names()}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    labels = rng.integers(0, 10, 16)
    loss, stepped = session.train_step(x, np.eye(10, dtype=np.float32)[labels])
    want_loss = nn.functional.cross_entropy(model(torch.from_numpy(x)),
                                            torch.from_numpy(labels))
    want_loss.backward()
    assert stepped and abs(loss - want_loss.item()) <= 1e-5 * abs(want_loss.item())
    matched = 0
    for name, start in before.items():
        grad = start - session.get(name)
        # Linear weights are exported transposed, under generated names:
        # match them by their starting values.
        for p in torch_params.values():
            w = p.detach().numpy()
            for value, g in ((w, p.grad.numpy()), (w.T, p.grad.numpy().T)):
                if value.shape == start.shape and np.array_equal(value, start):
                    err = rel_err(grad, g)
                    print("%s: rel err %.2e" % (name, err))
                    assert err <= 2e-5, name
                    matched += 1
                    break
    assert matched == len(torch_params) == len(before)
    # Inference on the trained weights takes the session's batch size.
    infer = runtime.InferSession(path, session)
    assert infer.batch_size == 16
    assert rel_err(infer.predict(x), session.predict(x)) <= 1e-6


def test_session_onnx_options_refused(tools, tmp_path):
    from mp import runtime
    _, path = _export_classifier(tmp_path)
    with pytest.raises(runtime.MPError, match="bad --loss 'hinge': expected cross-entropy or mse"):
        runtime.Session(path, batch_size=16, loss="hinge")
    with pytest.raises(runtime.MPError, match="dynamic dimension 0"):
        runtime.Session(path)
    with pytest.raises(runtime.MPError, match="--batch-size -2 is negative"):
        runtime.Session(path, batch_size=-2)
