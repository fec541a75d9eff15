"""Lowerings of composite ops shared by mp's PyTorch frontend (aten.py):
builders that write one op's MLIR (matmul and linear, pooling, batch,
layer and group norm, softmax, slices, cross entropy and MSE) on _ir
values, given a lowering context `ctx` (its builder `ctx.b`, `ctx.fail`
for an ExportError naming the op, `ctx.value` for an operand), and the
exporter's error class.

Slices are linalg.generic copies that read their input at an offset
(`d + start`, or a constant index into a reshaped view): no
tensor.extract_slice / insert_slice, which --mp-autodiff has no
derivative for. Softmax is written out (max, exp of the difference, sum,
divide), layer norm as mean, centred variance, rsqrt, so the AMP analysis
keeps exp/rsqrt and the reductions in f32.
"""

import math

import numpy as np


class ExportError(Exception):
    """An op or module the exporter cannot lower; names the op and the
    module path (the qualified name of the submodule it was called in)."""

    def __init__(self, message, op=None, module_path=None):
        super().__init__(message)
        self.op = op
        self.module_path = module_path


ExportError.__module__ = "mp"


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _broadcast_operand(b, v, out_shape):
    """(value, loop dims) of v broadcast into out_shape: dims of size 1 that
    broadcast are collapsed away (mp's passes expect projected maps)."""
    offset = len(out_shape) - v.rank
    keep = [i for i in range(v.rank) if not (v.shape[i] == 1 and out_shape[offset + i] != 1)]
    if len(keep) != v.rank:
        v = b.reshape(v, [v.shape[i] for i in keep])
    return (v, [offset + i for i in keep])


def _relu_body(b, p):
    return b.max(p, 0.0)


def _gelu_body(approximate):
    if approximate == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        def body(b, p):
            inner = b.mul(b.add(p, b.mul(b.mul(b.mul(p, p), p), 0.044715)), math.sqrt(2.0 / math.pi))
            return b.mul(b.mul(p, 0.5), b.add(b.tanh(inner), 1.0))
        return body
    # 0.5 x (1 + erf(x / sqrt(2)))
    return lambda b, p: b.mul(b.mul(p, 0.5), b.add(b.erf(b.mul(p, 1.0 / math.sqrt(2.0))), 1.0))


_UNARY = {
    "relu": _relu_body,
    "tanh": lambda b, p: b.tanh(p),
    "sigmoid": lambda b, p: b.sigmoid(p),
    "exp": lambda b, p: b.exp(p),
    "sqrt": lambda b, p: b.sqrt(p),
    "rsqrt": lambda b, p: b.rsqrt(p),
    "silu": lambda b, p: b.mul(p, b.sigmoid(p)),
    # PyTorch's kernels: x * min(max(x + 3, 0), 6) / 6 and the clamp / 6.
    "hardswish": lambda b, p: b.div(b.mul(p, b.min(b.max(b.add(p, 3.0), 0.0), 6.0)), 6.0),
    "hardsigmoid": lambda b, p: b.div(b.min(b.max(b.add(p, 3.0), 0.0), 6.0), 6.0),
    "relu6": lambda b, p: b.min(b.max(p, 0.0), 6.0),
}


def _copy_body(s, args, acc):
    return args[0]


def _slice(ctx, x, dim, start, size):
    """x[..., start:start + size, ...] along `dim`: a linalg.generic copy
    reading x at `d + start`, a map --mp-autodiff differentiates (the
    gradient is a scatter into zeros). A slice at offset 0 cannot read
    through a plain `d` (linalg requires such a dim to match the loop
    size): when `size` divides the dim, x is viewed as [n / size, size]
    there and read at the constant 0; otherwise x is padded by one zero
    in front and read at `d + 1`."""
    b = ctx.b
    n = x.shape[dim]
    if start == 0 and size == n:
        return x
    shape = list(x.shape)
    shape[dim] = size
    loops = list(range(x.rank))
    read = list(loops)
    if start > 0:
        read[dim] = "d%d + %d" % (dim, start)
    elif n % size == 0:
        x = b.reshape(x, x.shape[:dim] + (n // size, size) + x.shape[dim + 1:])
        read = loops[:dim] + ["0"] + loops[dim:]
    else:
        low = [0] * x.rank
        low[dim] = 1
        x = b.pad(x, low, [0] * x.rank, 0.0)
        read[dim] = "d%d + 1" % dim
    return b.generic(len(loops), [(x, read)], shape, loops, _copy_body)


def _matmul_values(ctx, x, y):
    b = ctx.b
    if x.rank < 2 or y.rank < 2:
        ctx.fail("matmul of 1-D tensors is not supported (reshape to 2-D)")
    if x.rank == 2 and y.rank == 2:
        return b.matmul(x, y)
    if y.rank == 2:
        rows = b.reshape(x, (int(np.prod(x.shape[:-1])), x.shape[-1]))
        return b.reshape(b.matmul(rows, y), x.shape[:-1] + (y.shape[1],))
    if x.rank == y.rank and x.shape[:-2] == y.shape[:-2]:
        batch = int(np.prod(x.shape[:-2]))
        xb = b.reshape(x, (batch,) + x.shape[-2:])
        yb = b.reshape(y, (batch,) + y.shape[-2:])
        return b.reshape(b.batch_matmul(xb, yb), x.shape[:-1] + (y.shape[-1],))
    ctx.fail("matmul of shapes %s and %s (broadcast batch dimensions) is not supported"
             % (x.shape, y.shape))


def _linear_values(ctx, x, w, bias):
    """x [..., in] W[out, in]^T + bias: a matmul with transposed weight maps."""
    b = ctx.b
    rows = b.reshape(x, (int(np.prod(x.shape[:-1])), x.shape[-1]))
    y = b.matmul(rows, w, transpose_b=True)
    if bias is not None:
        y = b.elementwise(y.shape, [(y, [0, 1]), (bias, [1])], lambda s, p, q: s.add(p, q))
    return b.reshape(y, x.shape[:-1] + (w.shape[0],))


def _pool_out(size, k, s, p, d, ceil):
    num = size + 2 * p - d * (k - 1) - 1
    return (-(-num // s) if ceil else num // s) + 1


def _pool2d(ctx, kind, x, kernel, stride, padding, dilation, ceil_mode):
    x = ctx.value(x)
    if x.rank != 4:
        ctx.fail("input of rank %d (NCHW batches only)" % x.rank)
    kernel = _pair(kernel)
    stride = _pair(stride) if stride not in (None, []) and stride != () else kernel
    padding, dilation = _pair(padding), _pair(dilation)
    if ceil_mode:
        for i in range(2):
            args = (x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i])
            if _pool_out(*args, True) != _pool_out(*args, False):
                ctx.fail("ceil_mode=True changes the output size here")
    fill = float("-inf") if kind == "max" else 0.0
    x = ctx.b.pad(x, [0, 0, padding[0], padding[1]], [0, 0, padding[0], padding[1]], fill)
    return ctx.b.pool2d(x, kind, kernel, stride, dilation)


def _avg_scale(ctx, y, kernel, padding, count_include_pad, divisor_override):
    kernel = _pair(kernel)
    if divisor_override:
        divisor = float(divisor_override)
    else:
        if any(_pair(padding)) and not count_include_pad:
            ctx.fail("count_include_pad=False with padding is not supported")
        divisor = float(kernel[0] * kernel[1])
    return ctx.b.elementwise(y.shape, [(y, [0, 1, 2, 3])], lambda s, p: s.div(p, divisor))


def _adaptive_avg(ctx, x, output_size):
    x = ctx.value(x)
    if x.rank != 4:
        ctx.fail("input of rank %d (NCHW batches only)" % x.rank)
    out = _pair(output_size)
    out = tuple(x.shape[2 + i] if o is None else o for i, o in enumerate(out))
    if any(x.shape[2 + i] % out[i] for i in range(2)):
        ctx.fail("input size %s is not a multiple of the output size %s" % (x.shape[2:], out))
    kernel = tuple(x.shape[2 + i] // out[i] for i in range(2))
    y = ctx.b.pool2d(x, "sum", kernel, kernel, (1, 1))
    return _avg_scale(ctx, y, kernel, 0, True, None)


def _batch_norm_values(ctx, x, mean, var, weight, bias, eps):
    """Inference batch norm over dim 1: (x - mean) * rsqrt(var + eps) * w + b."""
    if x.rank < 2:
        ctx.fail("input of rank %d" % x.rank)
    inputs = [(x, list(range(x.rank))), (mean, [1]), (var, [1])]
    if weight is not None:
        inputs.append((weight, [1]))
    if bias is not None:
        inputs.append((bias, [1]))

    def body(s, p, m, v, *affine):
        y = s.mul(s.sub(p, m), s.rsqrt(s.add(v, float(eps))))
        if weight is not None:
            y = s.mul(y, affine[0])
        if bias is not None:
            y = s.add(y, affine[-1])
        return y
    return ctx.b.elementwise(x.shape, inputs, body)


def _layer_norm_values(ctx, x, normalized_shape, weight, bias, eps):
    b = ctx.b
    k = len(normalized_shape)
    if tuple(x.shape[-k:]) != tuple(normalized_shape):
        ctx.fail("normalized_shape %s does not match the input %s" % (normalized_shape, x.shape))
    n = x.rank
    norm_dims = list(range(n - k, n))
    rows = list(range(n - k))
    count = float(np.prod(normalized_shape))
    full = list(range(n))
    total = b.reduce(x, norm_dims, "sum")
    mean = b.elementwise(total.shape, [(total, list(range(len(rows))))], lambda s, p: s.div(p, count))
    centered = b.elementwise(x.shape, [(x, full), (mean, rows)], lambda s, p, m: s.sub(p, m))
    sq = b.generic(n, [(centered, full)], [x.shape[d] for d in rows], rows,
                   lambda s, a, acc: s.add(s.mul(a[0], a[0]), acc), reduce_dims=norm_dims,
                   init=b.filled([x.shape[d] for d in rows], 0.0))
    rstd = b.elementwise(sq.shape, [(sq, list(range(len(rows))))],
                         lambda s, p: s.rsqrt(s.add(s.div(p, count), float(eps))))
    inputs = [(centered, full), (rstd, rows)]
    if weight is not None:
        inputs.append((weight, norm_dims))
    if bias is not None:
        inputs.append((bias, norm_dims))

    def body(s, c, r, *affine):
        y = s.mul(c, r)
        if weight is not None:
            y = s.mul(y, affine[0])
        if bias is not None:
            y = s.add(y, affine[-1])
        return y
    return b.elementwise(x.shape, inputs, body)


def _group_norm_values(ctx, x, groups, weight, bias, eps):
    """x [N, C, *] viewed as [N, groups, C / groups * prod(*)], normalized
    over its last dim as layer norm does (mean, centred variance, rsqrt),
    viewed back, then the per-channel affine over dim 1."""
    if x.rank < 2:
        ctx.fail("input of rank %d (needs [N, C, ...])" % x.rank)
    n, c = x.shape[:2]
    if c % groups:
        ctx.fail("%d channels are not divisible into %d groups" % (c, groups))
    rows = (n, groups, int(np.prod(x.shape[1:])) // groups)
    y = _layer_norm_values(ctx, ctx.b.reshape(x, rows), rows[2:], None, None, eps)
    y = ctx.b.reshape(y, x.shape)
    if weight is None and bias is None:
        return y
    full = list(range(x.rank))
    inputs = [(y, full)] + [(v, [1]) for v in (weight, bias) if v is not None]

    def body(s, p, *affine):
        if weight is not None:
            p = s.mul(p, affine[0])
        if bias is not None:
            p = s.add(p, affine[-1])
        return p
    return ctx.b.elementwise(x.shape, inputs, body)


def _softmax_values(b, x, dim):
    dim = dim % x.rank
    full = list(range(x.rank))
    kept = [d for d in full if d != dim]
    rowmax = b.reduce(x, [dim], "max")
    exps = b.elementwise(x.shape, [(x, full), (rowmax, kept)], lambda s, p, m: s.exp(s.sub(p, m)))
    rowsum = b.reduce(exps, [dim], "sum")
    return b.elementwise(x.shape, [(exps, full), (rowsum, kept)], lambda s, e, t: s.div(e, t))


def _one_hot(ctx, target, classes, ignore_index):
    """f32 [B, classes] one-hot of int64 class indices [B], built in the IR
    (a generic comparing each index with linalg.index of the class loop):
    1 where c == target[b], 0 elsewhere, and a zero row where target[b]
    equals ignore_index (or lies outside [0, classes))."""
    b = ctx.b

    def body(s, args, acc):
        hit = s.cmpi("eq", args[0], s.index(1))
        if 0 <= ignore_index < classes:
            hit = s.andi(hit, s.cmpi("ne", args[0], s.const_i64(ignore_index)))
        return s.select(hit, 1.0, 0.0)
    return b.generic(2, [(target, [0])], (target.shape[0], classes), [0, 1], body)


def _cross_entropy_values(ctx, logits, target, reduction="mean", ignore_index=-100):
    """Mean (or sum) over the batch of -sum_c target * log_softmax(logits):
    PyTorch's cross_entropy with class-probability (one-hot) targets [B, C],
    or with int64 class indices [B] (made one-hot in the IR; the mean then
    divides by the number of targets not equal to ignore_index, as
    PyTorch does)."""
    b = ctx.b
    count = None
    if target.elem == "i64":
        if logits.rank != 2 or target.shape != logits.shape[:1]:
            ctx.fail("cross entropy with class indices needs logits [B, C] and an int64 "
                     "target [B] (got %s and %s)" % (logits.shape, target.shape))
        target = _one_hot(ctx, target, logits.shape[1], ignore_index)
        if reduction == "mean":
            count = b.extract_scalar(b.reduce(target, [0, 1], "sum"))
    elif logits.rank != 2 or target.shape != logits.shape:
        ctx.fail("cross entropy needs logits [B, C] and either one-hot/probability targets of "
                 "the same shape or int64 class indices [B] (got %s and %s)" % (
                     logits.shape, target.shape))
    rowmax = b.reduce(logits, [1], "max")
    rows = logits.shape[0]
    rowsum = b.generic(2, [(logits, [0, 1]), (rowmax, [0])], (rows,), [0],
                       lambda s, a, acc: s.add(s.exp(s.sub(a[0], a[1])), acc),
                       reduce_dims=[1], init=b.filled((rows,), 0.0))

    def nll(s, a, acc):
        logp = s.sub(s.sub(a[0], a[1]), s.log(a[2]))
        return s.sub(acc, s.mul(logp, a[3]))
    total = b.generic(2, [(logits, [0, 1]), (rowmax, [0]), (rowsum, [0]), (target, [0, 1])],
                      (), [], nll, reduce_dims=[0, 1], init=b.filled((), 0.0))
    loss = b.extract_scalar(total)
    if reduction == "mean" and count is not None:
        loss = b.scalar_binary("divf", loss, count)
    elif reduction == "mean":
        loss = b.scalar_binary("mulf", loss, 1.0 / rows)
    elif reduction != "sum":
        ctx.fail("reduction=%r" % reduction)
    return loss


def _mse_values(ctx, pred, target, reduction="mean"):
    b = ctx.b
    if pred.shape != target.shape:
        ctx.fail("mse_loss of shapes %s and %s" % (pred.shape, target.shape))
    full = list(range(pred.rank))
    total = b.generic(pred.rank, [(pred, full), (target, full)], (), [],
                      lambda s, a, acc: s.add(s.mul(s.sub(a[0], a[1]), s.sub(a[0], a[1])), acc),
                      reduce_dims=full, init=b.filled((), 0.0))
    loss = b.extract_scalar(total)
    if reduction == "mean":
        loss = b.scalar_binary("mulf", loss, 1.0 / float(np.prod(pred.shape)))
    elif reduction != "sum":
        ctx.fail("reduction=%r" % reduction)
    return loss


_LOSSES = {"cross_entropy": _cross_entropy_values, "mse": _mse_values}
