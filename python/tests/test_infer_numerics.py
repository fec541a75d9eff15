"""Numerics through the bindings: the small CNN and the
TransformerEncoderLayer of test_export_numerics, exported from PyTorch and
run by mp.runtime.InferSession (ctypes over libmp_session.so: the C API's
JIT-compiled mp.predict, f16/bf16 weights converted once) in f32, f16 and
bf16, against PyTorch FP32 on the same weights.

Norm-wise relative error ||mp - torch||_2 / ||torch||_2 (rel_err), with the
tolerances of test_export_numerics: f32 1e-5, f16 5e-3, bf16 3e-2.
Measured on this machine (10 rows each; the last CNN batch zero-padded):

  model                     f32      f16      bf16
  CNN                       8.1e-8   1.6e-4   1.3e-3
  TransformerEncoderLayer   1.1e-7   3.9e-4   3.1e-3

The C API takes a model file whose @predict returns [B, C] and whose
@loss takes one-hot labels [B, C] (an InferSession copies its weights from
a Session, which compiles @loss). The encoder layer returns [B, S, D], so
it is exported behind nn.Flatten (a tensor.collapse_shape, no arithmetic)
with an MSE @loss; its [B, S, D] form is refused with the C API's message
(test_encoder_layer_output_must_be_two_dimensional).
"""

import numpy as np
import pytest
import torch
import torch.nn as nn

import models
import mp
from conftest import rel_err
from mp import runtime

TOLERANCE = {"f32": 1e-5, "f16": 5e-3, "bf16": 3e-2}
ROWS = 10


def _cnn():
    torch.manual_seed(1)
    return models.cnn().eval(), torch.randn(4, 1, 8, 8), "cross_entropy"


def _encoder_layer():
    torch.manual_seed(2)
    module = nn.Sequential(models.encoder_layer(), nn.Flatten()).eval()
    return module, torch.randn(2, 5, 16), "mse"


MODELS = {"cnn": _cnn, "TransformerEncoderLayer": _encoder_layer}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Per model: (model path, f32 Session holding PyTorch's weights,
    module), made once."""
    directory = tmp_path_factory.mktemp("infer_numerics")
    cache = {}

    def get(name):
        if name not in cache:
            module, x, loss = MODELS[name]()
            path = directory / ("%s.mlir" % name)
            path.write_text(mp.export_training(module, x, loss=loss))
            session = runtime.Session(path)
            for param, value in mp.param_arrays(module).items():
                session.set_parameter(param, value)
            cache[name] = (path, session, module, x)
        return cache[name]
    yield get
    for _, session, _, _ in cache.values():
        session.close()


@pytest.mark.parametrize("precision", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_infer_session_matches_pytorch(exported, name, precision):
    path, session, module, x = exported(name)
    torch.manual_seed(3)
    rows = torch.randn((ROWS,) + tuple(x.shape[1:]))
    with torch.no_grad():
        want = module(rows).numpy()
    infer = runtime.InferSession(path, session, precision=precision)
    assert infer.batch_size == x.shape[0]
    got = infer.predict(rows.numpy())
    infer.close()
    assert got.shape == want.shape
    err = rel_err(got, want)
    print("InferSession %s %s: rel err %.2e" % (name, precision, err))
    assert err <= TOLERANCE[precision], "%s %s: rel err %.3g" % (name, precision, err)


def test_encoder_layer_output_must_be_two_dimensional(exported, tmp_path):
    """Without the Flatten the layer's @predict returns [B, S, D]: the C API
    refuses it (InferSession checks the signature before the weights)."""
    _, session, _, x = exported("TransformerEncoderLayer")
    torch.manual_seed(2)
    path = tmp_path / "encoder_layer.mlir"
    path.write_text(mp.export(models.encoder_layer(), (x,)))
    with pytest.raises(runtime.MPError, match=r"return tensor<BxC>"):
        runtime.InferSession(path, session)
