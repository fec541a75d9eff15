"""The PyTorch models the tests export (seeded, eval mode)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize_batch_norm(module):
    """Non-trivial running statistics and affine parameters, so BatchNorm
    really scales and shifts (fresh ones are the identity)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)
    return module


def mlp(hidden=512):
    """The digits MLP of examples/digits_mlp.mlir: 64-512-512-10."""
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def cnn():
    """A small CNN on 1x8x8 images."""
    return _randomize_batch_norm(nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(16, 10)))


def encoder_layer():
    return nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)


class TransformerClassifier(nn.Module):
    """A TransformerEncoderLayer, mean over tokens, linear head."""

    def __init__(self, d_model=16, classes=10, dropout=0.1):
        super().__init__()
        self.encoder = nn.TransformerEncoderLayer(d_model=d_model, nhead=2, dim_feedforward=32,
                                                  dropout=dropout, batch_first=True)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


class TrainCNN(nn.Module):
    """A CNN for the gradient check: convolutions with and without padding,
    batch norm (running statistics), pooling, GELU."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1), nn.GELU(), nn.AvgPool2d(3))
        self.classifier = nn.Linear(8, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class Vision(nn.Module):
    """Convolution and pooling variants and activations (several outputs)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding="same")
        self.bn = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 2, dilation=2, bias=False)
        self.pool = nn.MaxPool2d(3, stride=1, padding=1)
        self.avg = nn.AvgPool2d(2)
        self.adapt = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(32, 12)
        self.bn1 = nn.BatchNorm1d(12)
        self.drop = nn.Dropout(0.3)
        self.gelu = nn.GELU()
        self.gelu_tanh = nn.GELU(approximate="tanh")
        self.act = nn.Sequential(nn.Tanh(), nn.Sigmoid(), nn.ReLU())

    def forward(self, x):
        a = torch.tanh(self.bn(self.conv1(x)))
        b = self.pool(torch.sigmoid(self.conv2(a)))
        c = self.gelu(self.conv3(b))
        d = self.adapt(F.relu(c))
        e = self.gelu_tanh(self.bn1(self.fc(self.drop(torch.flatten(d, 1)))))
        f = F.avg_pool2d(self.avg(a), 2, padding=1)
        g = F.max_pool2d(self.act(a), 2)
        return e, F.silu(f), g, F.adaptive_avg_pool2d(a, 1)


class Sequence(nn.Module):
    """Attention building blocks written out: view/reshape/permute/transpose,
    4-D matmul, bmm, scaled softmax, LayerNorm, residual add, arithmetic
    with Python scalars, a buffer, MultiheadAttention (sequence first, with
    its averaged weights), F.linear, mean and sum."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.ln2 = nn.LayerNorm([4, 8], elementwise_affine=False)
        self.softmax = nn.Softmax(dim=1)
        self.mha = nn.MultiheadAttention(8, 2)
        self.proj = nn.Linear(8, 8)
        self.register_buffer("pos", torch.randn(4, 8))

    def forward(self, x):                                   # [2, 4, 8]
        h = self.ln(x + self.pos)
        q = h.view(2, 4, 2, 4).permute(0, 2, 1, 3)          # [2, 2, 4, 4]
        k = h.reshape(2, 4, 2, 4).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(4)
        o = (F.softmax(scores, dim=-1) @ q).transpose(1, 2).contiguous().view(2, 4, 8)
        r = x + o
        t = torch.bmm(r, r.transpose(1, 2))                 # [2, 4, 4]
        s = r.transpose(0, 1)
        m, w = self.mha(s, s, s)
        z = 1.0 - self.softmax(t) * 2.0 + (-t) / 3.0
        return (self.ln2(r), z, m, w, F.linear(r, self.proj.weight), r.mean(dim=1),
                torch.sum(r, (0, 2)), r - r.mean(-1, keepdim=True))


def encoder_stack():
    """nn.TransformerEncoder: two pre-norm GELU layers, final LayerNorm,
    sequence-first."""
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
                                       activation="gelu", norm_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8),
                                 enable_nested_tensor=False)


class WithLoss(nn.Module):
    """A module whose forward returns losses: cross entropy (functional and
    module) against one-hot targets, and MSE."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)
        self.ce = nn.CrossEntropyLoss()

    def forward(self, x, target):
        logits = self.fc(x)
        return (F.cross_entropy(logits, target) + self.ce(logits, target) * 0.5
                + F.mse_loss(logits, target))


class IndexLoss(nn.Module):
    """Cross entropy against int64 class indices (PyTorch's usual form) on
    a model's logits: F.cross_entropy (functional=True) or
    nn.CrossEntropyLoss, with a reduction and an ignore_index."""

    def __init__(self, net, functional=True, reduction="mean", ignore_index=-100):
        super().__init__()
        self.net = net
        self.functional = functional
        self.reduction = reduction
        self.ignore_index = ignore_index
        self.ce = nn.CrossEntropyLoss(reduction=reduction, ignore_index=ignore_index)

    def forward(self, x, target):
        logits = self.net(x)
        if self.functional:
            return F.cross_entropy(logits, target, reduction=self.reduction,
                                   ignore_index=self.ignore_index)
        return self.ce(logits, target)


class DigitsCNN(nn.Module):
    """A CNN on the 8x8 digits with padded convolutions (mp-run feeds each
    64-pixel row as a 1x8x8 image). Average pooling: mp's gradient of a max
    with ties differs from PyTorch's (test_maxpool_tie_gradient)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.classifier = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))



class Functional(nn.Module):
    """The functional and torch.* spellings: F.conv2d, F.batch_norm and
    F.layer_norm on parameters and buffers, torch.exp/sqrt/rsqrt/neg,
    add/sub with alpha, div, mm, t, squeeze/unsqueeze,
    torch.reshape/permute/transpose, nn.Identity, F.dropout in eval."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 2, 3, 3) * 0.3)
        self.gamma = nn.Parameter(torch.rand(4) + 0.5)
        self.register_buffer("mean", torch.randn(4) * 0.1)
        self.register_buffer("var", torch.rand(4) + 0.5)
        self.ln_weight = nn.Parameter(torch.rand(8) + 0.5)
        self.mat = nn.Parameter(torch.randn(8, 3))
        self.identity = nn.Identity()

    def forward(self, x):                                          # [2, 2, 8, 8]
        y = F.conv2d(x, self.weight, None, 2, 1)                   # [2, 4, 4, 4]
        y = F.batch_norm(y, self.mean, self.var, self.gamma, None, False, 0.1, 1e-3)
        y = F.dropout(self.identity(y), 0.5, self.training)
        z = torch.reshape(torch.permute(y, (0, 2, 3, 1)), (32, 4))
        z = torch.transpose(torch.exp(z * 0.1), 0, 1).unsqueeze(0)  # [1, 4, 32]
        z = z.squeeze(0)
        u = torch.sqrt(z) + torch.rsqrt(z)
        v = torch.sub(torch.add(torch.neg(u), z * z, alpha=0.5), z, alpha=2.0) / torch.div(z, 3.0)
        w = F.layer_norm(v.t().reshape(16, 8), (8,), self.ln_weight)
        return w, torch.mm(w, self.mat)


# A GPT-2-style decoder as people write it (the ATen frontend's tests and
# scripts/model_zoo.py).
class GPTBlock(nn.Module):
    """A GPT-2 block as people write it: pre-norm, fused qkv split, the
    causal mask a buffer sliced to the sequence length, GELU MLP."""

    def __init__(self, d, heads, block_size, dropout=0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        self.n_head = heads
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.resid_dropout(self.c_proj(y))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """Token and position embeddings, pre-norm blocks, final LayerNorm, the
    head tied to the token embedding."""

    def __init__(self, vocab=64, d=32, block_size=16, layers=2, heads=2, dropout=0.1):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block_size, d)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([GPTBlock(d, heads, block_size, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))
