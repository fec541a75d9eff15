"""Common layers a new user meets, one small module each, exported with
mp.export and run through mp's CPU pipeline (mp.run_mlir) in FP32 against
PyTorch: norm-wise relative error <= 1e-5 (measured 0 .. 2.3e-7).

Also: mp's autodiff through the lowerings that exist for training
(embedding, group norm, hardswish, chunk/split/cat) against PyTorch's
autograd, and what the exporter refuses.
"""

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import mp
from conftest import rel_err


class Fn(nn.Module):
    """forward(x) = fn(self, x), with `layers` as submodules."""

    def __init__(self, fn, **layers):
        super().__init__()
        for name, layer in layers.items():
            setattr(self, name, layer)
        self.fn = fn

    def forward(self, x):
        return self.fn(self, x)


def _embedding_with_padding():
    emb = nn.Embedding(10, 4, padding_idx=0)
    with torch.no_grad():
        emb.weight[0] = torch.tensor([0.5, -1.0, 2.0, 0.25])  # a non-zero padding row
    return Fn(lambda s, x: s.emb(x) * 2, emb=emb)


def _positions():
    """Token plus position embeddings: the positions are a constant
    (torch.arange), the position table stays a parameter."""
    return Fn(lambda s, x: s.tok(x) + s.pos(torch.arange(x.size(1))),
              tok=nn.Embedding(10, 4), pos=nn.Embedding(3, 4))


def _f_embedding():
    return Fn(lambda s, x: F.embedding(x, s.table.weight, padding_idx=-1), table=nn.Linear(4, 10))


def _items(pieces, n):
    """The pieces of a traced chunk/split as a Python tuple (fx sees the
    call's result as one value)."""
    return tuple(pieces[i] for i in range(n))


def _group_norms():
    affine = nn.GroupNorm(1, 4)
    nn.init.uniform_(affine.weight, 0.5, 1.5)
    return Fn(lambda s, x: (s.gn(x), F.group_norm(x, 1, s.affine.weight, None, 1e-3)),
              gn=nn.GroupNorm(2, 4, affine=False), affine=affine)


def _tokens(*shape):
    return torch.randint(0, 10, shape)


# name: (module factory, example input factory)
CASES = {
    "nn.Unflatten": (lambda: nn.Sequential(nn.Linear(12, 12), nn.Unflatten(1, (3, 4)), nn.ReLU()),
                     lambda: torch.randn(2, 12)),
    "Tensor.unflatten": (lambda: Fn(lambda s, x: x.unflatten(-1, (2, 3)) * 2),
                         lambda: torch.randn(2, 4, 6)),
    "nn.Embedding": (lambda: nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 3)),
                     lambda: _tokens(2, 3)),
    "nn.Embedding(padding_idx)": (_embedding_with_padding,
                                  lambda: torch.tensor([[0, 3, 9], [1, 0, 0]])),
    "nn.Embedding(arange positions)": (_positions, lambda: _tokens(2, 3)),
    "F.embedding": (_f_embedding, lambda: torch.tensor([9, 2, 0, 9])),
    "nn.SiLU": (lambda: nn.Sequential(nn.Linear(6, 6), nn.SiLU()), lambda: torch.randn(3, 6)),
    "F.silu": (lambda: Fn(lambda s, x: F.silu(x * 3)), lambda: torch.randn(3, 6)),
    "nn.GELU (erf)": (lambda: nn.Sequential(nn.Linear(6, 6), nn.GELU()),
                      lambda: 3 * torch.randn(3, 6)),
    "nn.GELU(approximate='tanh')": (lambda: nn.Sequential(nn.Linear(6, 6), nn.GELU("tanh")),
                                    lambda: 3 * torch.randn(3, 6)),
    "nn.Hardswish": (lambda: nn.Sequential(nn.Hardswish()), lambda: 4 * torch.randn(4, 8)),
    "F.hardswish": (lambda: Fn(lambda s, x: F.hardswish(x)), lambda: 4 * torch.randn(4, 8)),
    "nn.Hardsigmoid, nn.ReLU6": (lambda: Fn(lambda s, x: (s.a(x), s.b(x * 2)),
                                            a=nn.Hardsigmoid(), b=nn.ReLU6()),
                                 lambda: 4 * torch.randn(4, 8)),
    "nn.GroupNorm": (lambda: nn.Sequential(nn.Conv2d(2, 6, 1), nn.GroupNorm(3, 6)),
                     lambda: torch.randn(2, 2, 3, 3)),
    "nn.GroupNorm(affine=False), F.group_norm": (_group_norms, lambda: torch.randn(2, 4, 5) + 1),
    "nn.Identity": (lambda: nn.Sequential(nn.Linear(4, 4), nn.Identity()),
                    lambda: torch.randn(2, 4)),
    "torch.cat": (lambda: Fn(lambda s, x: (torch.cat([x, s.fc(x), x * 2], dim=1),
                                           torch.cat((x, -x), -1), torch.cat([x, x], 0)),
                             fc=nn.Linear(3, 2)),
                  lambda: torch.randn(2, 3)),
    "torch.chunk, Tensor.chunk": (
        # Sizes 3, 3, 2 of 8 (offset 0 through a pad) and 4, 4 (a view).
        lambda: Fn(lambda s, x: _items(torch.chunk(x, 3, dim=1), 3) + _items(x.chunk(2, -1), 2)),
        lambda: torch.randn(2, 8)),
    "torch.split, Tensor.split": (
        lambda: Fn(lambda s, x: _items(torch.split(x, [1, 3, 2], dim=1), 3)
                   + _items(x.split(split_size=2, dim=0), 2) + _items(x.split(5, dim=-1), 2)),
        lambda: torch.randn(4, 6)),
    "chunk into a GLU": (lambda: Fn(lambda s, x: s.fc(x).chunk(2, -1)[0]
                                    * torch.sigmoid(s.fc(x).chunk(2, -1)[1]),
                                    fc=nn.Linear(4, 8)),
                         lambda: torch.randn(3, 4)),
    "Tensor.mean(dim), torch.mean(x, dim, keepdim)": (
        lambda: Fn(lambda s, x: (x.mean(1), torch.mean(x, 1, keepdim=True),
                                 torch.mean(x, (0, 2)), x.mean(-1, keepdim=True))),
        lambda: torch.randn(2, 4, 3)),
    "torch.flatten(x, start_dim), Tensor.flatten(start, end)": (
        lambda: Fn(lambda s, x: (torch.flatten(x, 1), x.flatten(1, 2), x.flatten(-2))),
        lambda: torch.randn(2, 4, 3, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_matches_pytorch(tools, name):
    torch.manual_seed(sum(map(ord, name)))
    make_module, make_input = CASES[name]
    module = make_module().eval()
    x = make_input()
    program = mp.export_program(module, (x,))
    with torch.no_grad():
        want = module(x)
    want = (want,) if isinstance(want, torch.Tensor) else tuple(want)
    got = tools.run_program(program, [x.numpy()], module)
    assert len(got) == len(want)
    errors = [rel_err(g, w.numpy()) for g, w in zip(got, want)]
    print("%s: rel err %s" % (name, ", ".join("%.2e" % e for e in errors)))
    for i, e in enumerate(errors):
        assert e <= 1e-5, "%s output %d: rel err %.3g" % (name, i, e)


class Mixed(nn.Module):
    """Token and position embeddings (a non-zero padding row), group norm,
    a hardswish-gated chunk, an uneven split and a cat, mean pooling."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(12, 8, padding_idx=0)
        self.pos = nn.Embedding(5, 8)
        self.norm = nn.GroupNorm(2, 8)
        self.fc = nn.Linear(8, 16)
        self.head = nn.Linear(8, 4)
        with torch.no_grad():
            self.tok.weight[0].uniform_(-1, 1)
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, idx):
        h = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        h = self.norm(h.transpose(1, 2)).transpose(1, 2)
        a, b = self.fc(h).chunk(2, -1)
        h = a * F.hardswish(b)
        p, q = torch.split(h, [3, 5], -1)
        h = torch.cat([q, p * 2], -1)
        return self.head(h.mean(1))


def test_autodiff_through_new_layers(tools):
    """The cross-entropy loss of Mixed, differentiated by --mp-autodiff:
    loss within 1e-6 and every parameter's gradient within 1e-5 norm-wise
    of PyTorch's autograd (the padding row's gradient exactly zero in
    both); --mp-train-pipeline builds a @train_step from it."""
    torch.manual_seed(21)
    module = Mixed().eval()
    idx = torch.tensor([[0, 3, 11, 5, 0], [7, 2, 0, 9, 1], [4, 4, 8, 6, 10]])
    labels = F.one_hot(torch.tensor([1, 3, 0]), 4).float()
    program = mp.export_program(module, (idx,), loss="cross_entropy")
    grad_ir = tools.mp_opt(program.mlir, "--mp-autodiff")
    got = tools.run(grad_ir, "loss_grad",
                    [idx.numpy(), labels.numpy()] + list(program.param_arrays().values()))
    module.zero_grad()
    loss = F.cross_entropy(module(idx), labels)
    loss.backward()
    assert abs(got[0][0] - loss.item()) <= 1e-6 * abs(loss.item()), (got[0][0], loss.item())
    named = dict(module.named_parameters())
    assert [s.torch_name for s in program.params] == list(named)
    errors = {}
    for spec, g in zip(program.params, got[1:]):
        errors[spec.mp_name] = rel_err(g, named[spec.torch_name].grad.numpy())
    print("gradient rel errors: %s" % ", ".join("%s %.1e" % kv for kv in errors.items()))
    assert max(errors.values()) <= 1e-5, errors
    assert np.all(got[1 + list(named).index("tok.weight")][0] == 0)
    out = tools.mp_opt(program.mlir, "--mp-train-pipeline=dtype=bf16")
    assert "func.func @train_step" in out


def _error(module, *inputs):
    with pytest.raises(mp.ExportError) as info:
        mp.export(module, inputs)
    return info.value


def test_refused_arguments():
    """Embedding arguments mp does not take: scale_grad_by_freq (the
    lowering's refusal), max_norm (PyTorch's functionalization refuses its
    in-place renormalization of the weight); indices that are not integers
    (PyTorch's refusal while tracing); arithmetic on int64 indices; an empty
    split piece where it is used."""
    err = _error(nn.Sequential(nn.Embedding(10, 4, scale_grad_by_freq=True)), _tokens(2, 3))
    assert err.op == "aten.embedding" and err.module_path == "0"
    assert "scale_grad_by_freq" in str(err)
    err = _error(nn.Sequential(nn.Embedding(10, 4, max_norm=1.0)), _tokens(2, 3))
    assert err.module_path == "0" and "PyTorch cannot trace" in str(err)
    err = _error(Fn(lambda s, x: s.emb(x * 1), emb=nn.Embedding(10, 4)), _tokens(2, 3))
    assert err.op == "aten.mul" and "int64" in str(err)
    err = _error(Fn(lambda s, x: F.embedding(x, s.emb.weight), emb=nn.Embedding(10, 4)),
                 torch.randn(2, 3))
    assert "indices" in str(err) and "Long" in str(err)
    err = _error(Fn(lambda s, x: torch.split(x, [0, 4], 1)[0] * 2), torch.randn(2, 4))
    assert err.op == "operator.getitem" and "aten.split_with_sizes" in str(err)
