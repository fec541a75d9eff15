"""PyTorch nn.Module -> MLIR on tensors, traced at the ATen level.

The module runs once on the example inputs under
`torch.fx.experimental.proxy_tensor.make_fx` (torch 1.13; functionalized,
so in-place ops and views arrive as pure ATen ops), which records every
ATen op the forward executes with concrete shapes, whatever Python code
(module classes, slicing, `Tensor.expand`, computed masks) produced it.
Forward hooks on every submodule record which module each op ran in (its
module path, kept as the op's MLIR location) and the first stack frame
outside torch gives the user's source line for errors.

Each node of the ATen graph is then lowered to linalg/tensor/arith/math
by one function of `_ATEN` (keyed by the op's name, e.g. `aten.addmm`):
named linalg ops where they exist (matmul, batch_matmul,
conv_2d_nchw_fchw, pooling), `linalg.generic` otherwise; grouped
convolution as the generic the ONNX importer writes; embedding and index
as a generic whose body reads the table with `tensor.extract` (as ONNX's
Gather). Tensors that depend on no input or parameter (buffers, masks,
positions) are computed in PyTorch and become dense constants.

The module form is the one `mp.export` writes: `@predict(inputs...,
params...)` with `mp.param` arguments (`@loss` for a module returning a
scalar, and `@loss(x, labels, params...)` for training exports).
Parameters keep their `named_parameters` names and order; a parameter
read twice (tied weights) is one argument.

Training exports (`export_training(..., frontend="aten")`) trace the
module in train mode for `@loss`: BatchNorm normalizes with the batch's
statistics, as PyTorch trains. Its running statistics are not updated by
mp (the session state for them is not there yet); `@predict` (traced in
eval mode) uses the running statistics the module had at export, and a
warning says so. Train-mode dropout (nn.Dropout, F.dropout,
nn.MultiheadAttention's attention dropout) is one `mp.dropout` op of its
ratio in @loss (inverted dropout with a counter-based mask in the training
step; see _DropoutAsOp); other bernoulli masks (stochastic depth,
Dropout2d) are 0/1 masks made from `mp.dropout` of ones. Eval-mode
exports (@predict) have no dropout; other random ops are refused.
"""

import linecache
import os
import sys
import warnings
from collections import OrderedDict

import numpy as np
import torch
import torch.fx
import torch.nn as nn

from . import _ir, _ops
from ._ops import ExportError

__all__ = [
    "ExportError", "Program", "export", "export_program", "export_training", "load_params",
    "param_arrays", "save_params", "trace",
]

# Locations name this file; pass the file the text is written to
# (`filename=`) so that `--keep-f32 FILE:LINE:COL` finds the op.
DEFAULT_FILENAME = "model.mlir"


# -- tracing --------------------------------------------------------------------

_TORCH_DIR = os.path.dirname(torch.__file__)
_SKIPPED_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, os)
                      if getattr(m, "__file__", None)) + (os.path.dirname(__file__) + os.sep,)
try:
    import functorch as _functorch
    _SKIPPED_DIRS += (os.path.dirname(_functorch.__file__) + os.sep,)
except ImportError:  # torch 2.x: torch.func
    _functorch = None


def _user_frame():
    """(file, line, text) of the innermost frame outside torch, functorch,
    the standard library and mp: the model's own source line."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_SKIPPED_DIRS) and not name.startswith("<"):
            text = linecache.getline(name, frame.f_lineno).strip()
            return (name, frame.f_lineno, text)
        frame = frame.f_back
    return None


class _PathRecorder:
    """Forward pre/post hooks on every submodule keep a stack of module
    paths; every fx node created while tracing gets the innermost one
    (node.meta["mp_path"]) and the user's source line (node.meta["mp_source"])."""

    def __init__(self, module):
        self.stack = [""]
        self.handles = []
        seen = set()
        for name, sub in module.named_modules():
            if id(sub) in seen or not name:
                continue
            seen.add(id(sub))
            self.handles.append(sub.register_forward_pre_hook(self._enter(name)))
            self.handles.append(sub.register_forward_hook(self._leave))
        self.failed_path = None

    def _enter(self, name):
        def hook(module, args):
            self.stack.append(name)
        return hook

    def _leave(self, module, args, out):
        self.stack.pop()

    def __enter__(self):
        recorder = self
        self.original = original = torch.fx.Graph.create_node

        def create_node(graph, *args, **kwargs):
            node = original(graph, *args, **kwargs)
            node.meta["mp_path"] = recorder.stack[-1]
            node.meta["mp_source"] = _user_frame()
            return node
        torch.fx.Graph.create_node = create_node
        return self

    def __exit__(self, *exc):
        torch.fx.Graph.create_node = self.original
        if exc[0] is not None and self.failed_path is None:
            self.failed_path = self.stack[-1]
        for h in self.handles:
            h.remove()


class _ModeAndState:
    """Sets train/eval mode for the trace and restores the modes and every
    buffer afterwards (a train-mode trace runs BatchNorm, which updates
    its running statistics)."""

    def __init__(self, module, training):
        self.module = module
        self.training = training

    def __enter__(self):
        self.modes = [(m, m.training) for m in self.module.modules()]
        self.buffers = [(b, b.detach().clone()) for b in self.module.buffers()]
        self.module.train(self.training)

    def __exit__(self, *exc):
        for m, mode in self.modes:
            m.training = mode
        with torch.no_grad():
            for b, saved in self.buffers:
                b.copy_(saved)


def _make_fx():
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx


# -- dropout ---------------------------------------------------------------------
#
# F.dropout in training mode is recorded as one op, `mp::dropout(x, p)`
# (a torch.library op defined here), rather than as PyTorch's CPU
# decomposition (empty_like, bernoulli_, div_, mul): it becomes one
# `mp.dropout` in @loss, which --mp-autodiff differentiates and
# --mp-lower-dropout expands with a counter-based mask. While a module is
# traced, torch.nn.functional.dropout (which nn.Dropout, F.dropout and
# nn.MultiheadAttention's attention dropout call) and torch.dropout are
# replaced by _traced_dropout. Random ops that reach the graph another way
# (stochastic depth's bernoulli_, torch.dropout bound before the trace)
# are lowered as masks (see _bernoulli).

_LIBRARY = None
_ORIGINAL_DROPOUT = torch.nn.functional.dropout
_ORIGINAL_TORCH_DROPOUT = torch.dropout


def _dropout_library():
    global _LIBRARY
    if _LIBRARY is None:
        lib = torch.library.Library("mp", "DEF")
        lib.define("dropout(Tensor x, float p) -> Tensor")

        def dropout(x, p):  # what PyTorch computes (the trace runs it once)
            return _ORIGINAL_TORCH_DROPOUT(x, p, True)
        lib.impl("dropout", dropout, "CPU")
        lib.impl("dropout", lambda x, p: torch.empty_like(x), "Meta")

        def below_autograd(x, p):  # meta tensors have no autograd fallthrough
            guard = torch._C._AutoDispatchBelowAutograd()  # noqa: F841 (held until deleted)
            try:
                return torch.ops.mp.dropout(x, p)
            finally:
                del guard
        lib.impl("dropout", below_autograd, "AutogradMeta")
        _LIBRARY = lib
    return torch.ops.mp.dropout


def _traced_dropout(input, p=0.5, training=True, inplace=False):
    if not training:
        return _ORIGINAL_DROPOUT(input, p, False, inplace)
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
    return _dropout_library()(input, float(p))


def _traced_torch_dropout(input, p, train):
    return _traced_dropout(input, p, train)


class _DropoutAsOp:
    """Within it, train-mode F.dropout / torch.dropout record mp::dropout."""

    def __enter__(self):
        _dropout_library()
        self.saved = (torch.nn.functional.dropout, torch.dropout)
        torch.nn.functional.dropout = _traced_dropout
        torch.dropout = _traced_torch_dropout

    def __exit__(self, *exc):
        torch.nn.functional.dropout, torch.dropout = self.saved


def trace(module, example_inputs, training=False):
    """The ATen graph (an fx GraphModule) of `module` on `example_inputs`,
    functionalized, with node.meta["mp_path"] / ["mp_source"]. The module's
    modes and buffers are left as they were."""
    inputs = tuple(example_inputs)
    make_fx = _make_fx()

    def forward(*xs):
        return module(*xs)
    if _functorch is not None:
        from functorch.experimental import functionalize
        fn = functionalize(forward)
    else:  # pragma: no cover (torch 2.x)
        fn = torch.func.functionalize(forward)
    recorder = _PathRecorder(module)
    with _ModeAndState(module, training), _DropoutAsOp():
        try:
            with recorder:
                graph = make_fx(fn)(*inputs)
        except ExportError:
            raise
        except Exception as e:
            path = recorder.failed_path or ""
            frame = _frame_of_exception(e)
            raise ExportError("PyTorch cannot trace the module at the ATen level%s%s: %s: %s" % (
                " (in module '%s')" % path if path else "",
                " at %s" % _source_text(frame) if frame else "",
                type(e).__name__, e), op=None, module_path=path) from e
    graph.graph.eliminate_dead_code()
    return graph


def _frame_of_exception(e):
    tb = e.__traceback__
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not name.startswith(_SKIPPED_DIRS) and not name.startswith("<"):
            found = (name, tb.tb_lineno, linecache.getline(name, tb.tb_lineno).strip())
        tb = tb.tb_next
    return found


def _source_text(frame):
    name, line, text = frame
    return "%s:%d: %s" % (name, line, text)


# -- values ---------------------------------------------------------------------

class _Const:
    """A tensor that depends on no input or parameter, computed in PyTorch."""

    def __init__(self, tensor):
        self.tensor = tensor


class _Transposed:
    """aten.t of a 2-D value, kept lazy: a matmul reads the original with
    transposed indexing maps (as mp.export's nn.Linear), anything else
    materializes a linalg.transpose."""

    def __init__(self, value):
        self.value = value


def _live(x):
    return isinstance(x, (_ir.Value, _Transposed))


def _flatten(x):
    if isinstance(x, (tuple, list)):
        for item in x:
            yield from _flatten(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from _flatten(item)
    else:
        yield x


def _map(x, fn):
    if isinstance(x, (tuple, list)):
        return type(x)(_map(i, fn) for i in x)
    if isinstance(x, dict):
        return {k: _map(v, fn) for k, v in x.items()}
    return fn(x)


def _op_name(target):
    """'aten.addmm' for torch.ops.aten.addmm.default; other callables by name."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return str(packet)
    mod = getattr(target, "__module__", "") or ""
    name = getattr(target, "__name__", repr(target))
    if mod in ("_operator", "operator"):
        return "operator.%s" % name
    return "%s.%s" % (mod, name) if mod else name


# Random ops without a lowering (those with one, dropout and bernoulli, are
# lowered to mp.dropout and never folded).
_RANDOM_OPS = {
    "aten.bernoulli", "aten.bernoulli_", "aten.native_dropout", "aten.dropout", "aten.rand",
    "aten.rand_like", "aten.randn", "aten.randn_like", "aten.randint", "aten.randint_like",
    "aten.randperm", "aten.normal", "aten.normal_", "aten.uniform", "aten.uniform_",
    "aten.exponential_", "aten.multinomial", "aten.feature_dropout", "aten.alpha_dropout",
    "mp.dropout",
}


# Ops whose result depends on an operand's shape and dtype only: folded.
_SHAPE_ONLY_OPS = {
    "aten.new_zeros", "aten.new_ones", "aten.new_full", "aten.new_empty", "aten.zeros_like",
    "aten.ones_like", "aten.full_like", "aten.empty_like", "aten.sym_size",
}


class _Ctx:
    """What an ATen lowering sees: the builder, the node (its module path
    and source line), PyTorch's result metadata (`out`: a meta tensor, or
    a tuple of them) and the lowering (parameters, training flag)."""

    def __init__(self, lowering, node, op):
        self.lowering = lowering
        self.b = lowering.builder
        self.node = node
        self.op = op
        self.path = node.meta.get("mp_path", "") if node is not None else ""
        self.source = node.meta.get("mp_source") if node is not None else None
        self.out = _meta_of(node) if node is not None else None
        self.training = lowering.training

    @classmethod
    def for_builder(cls, lowering, op):
        ctx = cls.__new__(cls)
        ctx.lowering, ctx.b, ctx.node, ctx.op = lowering, lowering.builder, None, op
        ctx.path, ctx.source, ctx.out, ctx.training = "", None, None, lowering.training
        return ctx

    def fail(self, reason):
        where = ""
        if self.path:
            where += " in module '%s'" % self.path
        if self.source:
            where += " (%s)" % _source_text(self.source)
        error = ExportError("cannot export %s%s: %s" % (self.op, where, reason),
                            op=self.op, module_path=self.path)
        error.source = self.source
        raise error

    def value(self, x, what="input"):
        """x as an f32 tensor Value (a constant is materialized)."""
        if isinstance(x, _Transposed):
            return self.b.transpose(x.value, [1, 0])
        if isinstance(x, _Const):
            t = x.tensor
            if not t.is_floating_point() and t.dtype != torch.bool:
                self.fail("%s is a %s constant where a float tensor is needed" % (what, t.dtype))
            return self.b.constant(t.detach().to(torch.float32).cpu().numpy())
        if isinstance(x, _ir.Value):
            if x.elem != "f32":
                self.fail("%s is an int64 tensor; integer tensors are supported only as "
                          "indices (embedding, index, gather) and class-index targets" % what)
            return x
        if isinstance(x, torch.Tensor):
            return self.value(_Const(x), what)
        self.fail("%s is not a tensor (%r)" % (what, type(x).__name__))

    def index_or_value(self, x, what="target"):
        if isinstance(x, _Const) and not x.tensor.is_floating_point():
            return self.b.constant(x.tensor.detach().to(torch.int64).cpu().numpy(), "i64")
        if isinstance(x, _ir.Value) and x.elem == "i64":
            return x
        return self.value(x, what)

    def indices(self, x, what="indices"):
        v = self.index_or_value(x, what)
        if v.elem != "i64":
            self.fail("%s must be an integer tensor" % what)
        return v


def _meta_of(node):
    meta = node.meta.get("tensor_meta")
    if meta is None:
        val = node.meta.get("val")
        if val is not None:
            return _map(val, lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta")
                        if isinstance(t, torch.Tensor) else t)
        return None
    return _map_meta(meta)


def _map_meta(meta):
    if hasattr(meta, "shape") and hasattr(meta, "dtype"):  # TensorMetadata (a NamedTuple)
        return torch.empty(tuple(meta.shape), dtype=meta.dtype, device="meta")
    if isinstance(meta, (tuple, list)):
        return tuple(_map_meta(m) for m in meta)
    return meta


# -- the registry ---------------------------------------------------------------

_ATEN = {}


def _register(*names):
    def wrap(fn):
        for n in names:
            _ATEN[n] = fn
        return fn
    return wrap


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shape(ctx):
    return tuple(ctx.out.shape)


# -- elementwise ----------------------------------------------------------------

def _elementwise(ctx, fn, *xs):
    """fn(body, *scalars) over broadcast operands (Values, constants, numbers)."""
    vals = [float(x) if _num(x) else ctx.value(x) for x in xs]
    tensors = [v for v in vals if isinstance(v, _ir.Value)]
    if not tensors:
        ctx.fail("no tensor operand")
    out_shape = tuple(np.broadcast_shapes(*[v.shape for v in tensors]))
    inputs = [v if _num(v) else _ops._broadcast_operand(ctx.b, v, out_shape) for v in vals]
    return ctx.b.elementwise(out_shape, inputs, fn)


def _scalar_arg(ctx, x):
    """A 0-d constant operand as a Python number (PyTorch's wrapped scalars)."""
    if isinstance(x, _Const) and x.tensor.dim() == 0 and x.tensor.is_floating_point():
        return float(x.tensor)
    return x


def _binary(kind):
    def lower(ctx, x, y, alpha=1, rounding_mode=None):
        if rounding_mode is not None:
            ctx.fail("rounding_mode=%r is not supported" % rounding_mode)
        x, y = _scalar_arg(ctx, x), _scalar_arg(ctx, y)
        if kind == "rsub":
            x, y = y, x
        if alpha != 1:
            a = float(alpha)
            op = "add" if kind == "add" else "sub"
            return _elementwise(ctx, lambda s, p, q: getattr(s, op)(p, s.mul(q, a)), x, y)
        op = "sub" if kind == "rsub" else kind
        return _elementwise(ctx, lambda s, p, q: getattr(s, op)(p, q), x, y)
    return lower


for _kind in ("add", "sub", "mul", "div", "rsub"):
    _register("aten.%s" % _kind)(_binary(_kind))
_register("aten.true_divide")(_binary("div"))


def _cmpf(s, predicate, a, b):
    return s._op("arith.cmpf %s, %s, %s : f32" % (predicate, s.operand(a), s.operand(b)))


def _pow_body(e):
    if e == 2:
        return lambda s, p: s.mul(p, p)
    if e == 3:
        return lambda s, p: s.mul(s.mul(p, p), p)
    if e == 0.5:
        return lambda s, p: s.sqrt(p)
    if e == -0.5:
        return lambda s, p: s.rsqrt(p)
    if e == 1:
        return lambda s, p: p
    if e == -1:
        return lambda s, p: s.div(1.0, p)
    return lambda s, p: s._op("math.powf %s, %s : f32" % (p, s.const(e)))


_UNARY = dict(_ops._UNARY)
_UNARY.update({
    "neg": lambda s, p: s.neg(p),
    "log": lambda s, p: s.log(p),
    "erf": lambda s, p: s.erf(p),
    "abs": lambda s, p: s.unary("math.absf", p),
    "reciprocal": lambda s, p: s.div(1.0, p),
})


def _unary(kind):
    def lower(ctx, x, *args, **kwargs):
        return _elementwise(ctx, _UNARY[kind], x)
    return lower


for _kind in _UNARY:
    _register("aten.%s" % _kind)(_unary(_kind))


@_register("aten.gelu")
def _gelu(ctx, x, approximate="none"):
    if approximate not in ("none", "tanh"):
        ctx.fail("approximate=%r" % approximate)
    return _elementwise(ctx, _ops._gelu_body(approximate), x)


@_register("aten.hardtanh")
def _hardtanh(ctx, x, lo=-1.0, hi=1.0):
    return _elementwise(ctx, lambda s, p: s.min(s.max(p, float(lo)), float(hi)), x)


@_register("aten.clamp")
def _clamp(ctx, x, lo=None, hi=None):
    def body(s, p):
        if lo is not None:
            p = s.max(p, float(lo))
        if hi is not None:
            p = s.min(p, float(hi))
        return p
    if not all(v is None or _num(v) for v in (lo, hi)):
        ctx.fail("tensor bounds are not supported")
    return _elementwise(ctx, body, x)


@_register("aten.pow")
def _pow(ctx, x, e):
    if not _num(e):
        ctx.fail("only a number exponent is supported")
    return _elementwise(ctx, _pow_body(e), x)


@_register("aten.maximum", "aten.minimum")
def _max_min(ctx, x, y):
    op = "max" if ctx.op == "aten.maximum" else "min"
    return _elementwise(ctx, lambda s, p, q: getattr(s, op)(p, q), x, y)


def _constant_mask(ctx, mask, what="mask"):
    if not isinstance(mask, _Const):
        ctx.fail("the %s depends on the inputs (a computed boolean tensor); only "
                 "constant masks (buffers, shapes) are supported" % what)
    return ctx.b.constant(mask.tensor.to(torch.float32).cpu().numpy())


@_register("aten.masked_fill")
def _masked_fill(ctx, x, mask, value):
    if isinstance(value, _Const):
        value = float(value.tensor)
    if not _num(value):
        ctx.fail("the fill value must be a number")
    m = _constant_mask(ctx, mask)
    return _elementwise(ctx, lambda s, p, k: s.select(_cmpf(s, "one", k, 0.0), float(value), p),
                        x, m)


@_register("aten.where")
def _where(ctx, cond, x, y):
    m = _constant_mask(ctx, cond, "condition")
    return _elementwise(ctx, lambda s, k, p, q: s.select(_cmpf(s, "one", k, 0.0), p, q),
                        m, _scalar_arg(ctx, x), _scalar_arg(ctx, y))


def _identity(ctx, x, *args, **kwargs):
    if isinstance(x, _Transposed):
        return x
    return ctx.value(x)


for _name in ("aten.clone", "aten.detach", "aten.alias", "aten.lift_fresh_copy",
              "aten.contiguous", "aten.lift_fresh"):
    _register(_name)(_identity)


@_register("aten._to_copy", "aten.to")
def _to_copy(ctx, x, *args, dtype=None, **kwargs):
    if dtype is not None and dtype != torch.float32:
        ctx.fail("conversion to %s (only float32 tensors are supported)" % dtype)
    return ctx.value(x)


# -- shapes ---------------------------------------------------------------------

def _reshape(ctx, x, *args, **kwargs):
    return ctx.b.reshape(ctx.value(x), _shape(ctx))


for _name in ("aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.reshape",
              "aten.unsqueeze", "aten.squeeze", "aten.flatten", "aten.unflatten",
              "aten.view_copy", "aten._reshape_alias_copy", "aten.unsqueeze_copy",
              "aten.squeeze_copy"):
    _register(_name)(_reshape)


@_register("aten.t", "aten.t_copy")
def _t(ctx, x):
    v = ctx.value(x)
    if v.rank < 2:
        return v
    return _Transposed(v)


@_register("aten.permute", "aten.permute_copy")
def _permute(ctx, x, dims):
    return ctx.b.transpose(ctx.value(x), list(dims))


@_register("aten.transpose", "aten.transpose_copy")
def _transpose(ctx, x, d0, d1):
    x = ctx.value(x)
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.b.transpose(x, perm)


@_register("aten.expand", "aten.expand_copy")
def _expand(ctx, x, sizes, implicit=False):
    x = ctx.value(x)
    out = _shape(ctx)
    if tuple(x.shape) == out:
        return x
    operand = _ops._broadcast_operand(ctx.b, x, out)
    return ctx.b.elementwise(out, [operand], lambda s, p: p)


def _slice_step(ctx, x, dim, start, size, step):
    """x[..., start:start + size * step:step, ...]: a copy reading x at
    `d * step + start` (step 1: export's slice, which autodiff takes)."""
    if step == 1:
        return _ops._slice(ctx, x, dim, start, size)
    shape = list(x.shape)
    shape[dim] = size
    loops = list(range(x.rank))
    read = list(loops)
    read[dim] = "d%d * %d + %d" % (dim, step, start) if start else "d%d * %d" % (dim, step)
    return ctx.b.generic(x.rank, [(x, read)], shape, loops, _ops._copy_body)


@_register("aten.slice", "aten.slice_copy")
def _slice(ctx, x, dim=0, start=None, end=None, step=1):
    x = ctx.value(x)
    dim %= x.rank
    n = x.shape[dim]
    start, end, step = slice(start, end, step).indices(n)
    size = len(range(start, end, step))
    if size == 0:
        ctx.fail("an empty slice")
    return _slice_step(ctx, x, dim, start, size, step)


@_register("aten.select", "aten.select_copy")
def _select(ctx, x, dim, index):
    x = ctx.value(x)
    dim %= x.rank
    index %= x.shape[dim]
    y = _ops._slice(ctx, x, dim, index, 1)
    return ctx.b.reshape(y, _shape(ctx))


@_register("aten.split", "aten.split_with_sizes", "aten.split_copy",
           "aten.split_with_sizes_copy", "aten.unbind", "aten.chunk", "aten.unsafe_split",
           "aten.unsafe_split_with_sizes", "aten.unsafe_chunk")
def _split(ctx, x, sizes=None, dim=0):
    x = ctx.value(x)
    if ctx.op == "aten.unbind":
        dim, sizes = (sizes or 0), None
    dim %= x.rank
    n = x.shape[dim]
    if ctx.op == "aten.unbind":
        sizes = [1] * n
    elif ctx.op in ("aten.chunk", "aten.unsafe_chunk"):
        step = -(-n // sizes)
        sizes = [min(step, n - i) for i in range(0, n, step)]
    elif isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    pieces, start = [], 0
    for size in sizes:
        if size == 0:  # an empty piece: refused where it is used
            pieces.append(None)
            continue
        piece = _ops._slice(ctx, x, dim, start, size)
        if ctx.op == "aten.unbind":
            piece = ctx.b.reshape(piece, x.shape[:dim] + x.shape[dim + 1:])
        pieces.append(piece)
        start += size
    return tuple(pieces)


def _concat(b, values, dim):
    """mp.export's cat: each operand zero-padded to the result's extent and
    the padded operands added (reads at `d + 1`; see export._cat)."""
    values = [v for v in values if int(np.prod(v.shape)) != 0]
    if len(values) == 1:
        return values[0]
    rank = values[0].rank
    total = sum(v.shape[dim] for v in values)
    padded, offset = [], 0
    for v in values:
        low, high = [0] * rank, [0] * rank
        low[dim] = offset + 1
        high[dim] = total - offset - v.shape[dim]
        padded.append(b.pad(v, low, high, 0.0))
        offset += v.shape[dim]
    loops = list(range(rank))
    read = list(loops)
    read[dim] = "d%d + 1" % dim
    shape = list(values[0].shape)
    shape[dim] = total

    def body(s, args, acc):
        y = args[0]
        for a in args[1:]:
            y = s.add(y, a)
        return y
    return b.generic(rank, [(p, read) for p in padded], tuple(shape), loops, body)


@_register("aten.cat", "aten.concat")
def _cat(ctx, tensors, dim=0):
    values = [ctx.value(t, "operand") for t in tensors]
    values = [v for v in values if int(np.prod(v.shape)) != 0]
    if not values:
        ctx.fail("no non-empty operand")
    return _concat(ctx.b, values, dim % values[0].rank)


@_register("aten.stack")
def _stack(ctx, tensors, dim=0):
    out = _shape(ctx)
    dim %= len(out)
    values = []
    for t in tensors:
        v = ctx.value(t, "operand")
        values.append(ctx.b.reshape(v, v.shape[:dim] + (1,) + v.shape[dim:]))
    return _concat(ctx.b, values, dim)


@_register("aten.constant_pad_nd")
def _constant_pad(ctx, x, pad, value=0.0):
    x = ctx.value(x)
    low, high = [0] * x.rank, [0] * x.rank
    for i in range(len(pad) // 2):
        d = x.rank - 1 - i
        low[d], high[d] = pad[2 * i], pad[2 * i + 1]
    y = x
    # Negative pads crop: slices first.
    for d in range(x.rank):
        if low[d] < 0 or high[d] < 0:
            start = max(-low[d], 0)
            size = y.shape[d] - start - max(-high[d], 0)
            y = _ops._slice(ctx, y, d, start, size)
    return ctx.b.pad(y, [max(v, 0) for v in low], [max(v, 0) for v in high], float(value))


@_register("aten.roll")
def _roll(ctx, x, shifts, dims=()):
    x = ctx.value(x)
    if not dims:
        ctx.fail("roll without dims (over the flattened tensor)")
    for shift, dim in zip(shifts, dims):
        dim %= x.rank
        n = x.shape[dim]
        s = shift % n
        if s:
            x = _concat(ctx.b, [_ops._slice(ctx, x, dim, n - s, s),
                                _ops._slice(ctx, x, dim, 0, n - s)], dim)
    return x


@_register("aten.as_strided", "aten.as_strided_copy")
def _as_strided(ctx, x, size, stride, offset=None):
    """Reads elements by storage position. The input's strides (from the
    trace) give the logical element each position holds: a reshape when
    they line up in order, else a gather."""
    arg = ctx.node.args[0]
    meta = arg.meta.get("tensor_meta") if hasattr(arg, "meta") else None
    x = ctx.value(x)
    in_stride = tuple(meta.stride) if meta is not None else None
    if in_stride is None:
        ctx.fail("the input's strides are unknown")
    numel = int(np.prod(x.shape))
    storage = torch.empty_strided(x.shape, in_stride, dtype=torch.int64)
    storage.copy_(torch.arange(numel).view(x.shape))
    table = torch.as_strided(storage, size, stride, offset or 0)
    if torch.equal(table.reshape(-1), torch.arange(table.numel())):
        return ctx.b.reshape(x, tuple(size))
    flat = ctx.b.reshape(x, (numel,))
    return _gather(ctx, flat, 0, ctx.b.constant(table.numpy(), "i64"))


# -- gathers --------------------------------------------------------------------

def _gather(ctx, table, axis, indices):
    """table's slices along `axis` at integer `indices` (any shape): the
    result is table.shape[:axis] + indices.shape + table.shape[axis+1:], a
    linalg.generic over it that reads the index from `indices` and yields
    the element tensor.extract reads (the ONNX importer's Gather, the form
    --mp-autodiff differentiates). Indices are wrapped when negative and
    clamped into range."""
    b = ctx.b
    q = indices.rank
    out_shape = tuple(table.shape[:axis]) + tuple(indices.shape) + tuple(table.shape[axis + 1:])
    rank = len(out_shape)
    dim = table.shape[axis]

    def body(s, args, acc):
        idx = s._op("arith.index_cast %s : i64 to index" % args[0])
        zero = s._op("arith.constant 0 : index")
        n = s._op("arith.constant %d : index" % dim)
        neg = s._op("arith.cmpi slt, %s, %s : index" % (idx, zero))
        wrapped = s._op("arith.addi %s, %s : index" % (idx, n))
        idx = s._op("arith.select %s, %s, %s : index" % (neg, wrapped, idx))
        idx = s._op("arith.maxsi %s, %s : index" % (idx, zero))
        last = s._op("arith.constant %d : index" % max(dim - 1, 0))
        idx = s._op("arith.minsi %s, %s : index" % (idx, last))
        coords = [s._op("linalg.index %d : index" % d) for d in range(axis)]
        coords.append(idx)
        coords += [s._op("linalg.index %d : index" % d) for d in range(axis + q, rank)]
        return s._op("tensor.extract %s[%s] : %s" % (table.name, ", ".join(coords), table.type))
    return b.generic(rank, [(indices, list(range(axis, axis + q)))], out_shape,
                     list(range(rank)), body)


@_register("aten.embedding")
def _embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """weight[indices] as a gather. PyTorch gives the padding row no
    gradient: it is read as a constant (its current value) there."""
    if scale_grad_by_freq:
        ctx.fail("scale_grad_by_freq=True (changes the weight's gradient) is not supported")
    w = ctx.value(weight, "weight")
    idx = ctx.indices(indices)
    y = _gather(ctx, w, 0, idx)
    if padding_idx is None or padding_idx < 0:
        return y
    # The padding row's current value where the index is padding_idx.
    table = ctx.lowering.concrete(ctx.node.args[0])
    row = ctx.b.constant(table.detach().float()[padding_idx].cpu().numpy())
    k = idx.rank
    full = list(range(k + 1))

    def body(s, p, index, r):
        return s.select(s.cmpi("eq", index, s.const_i64(padding_idx)), r, p)
    return ctx.b.elementwise(y.shape, [(y, full), (idx, full[:k]), (row, [k])], body)


@_register("aten.index_select")
def _index_select(ctx, x, dim, index):
    x = ctx.value(x)
    return _gather(ctx, x, dim % x.rank, ctx.indices(index))


@_register("aten.index", "aten._unsafe_index")
def _index(ctx, x, indices):
    x = ctx.value(x)
    used = [i for i, t in enumerate(indices) if t is not None]
    if len(used) != 1:
        ctx.fail("indexing with %d index tensors (one is supported)" % len(used))
    axis = used[0]
    t = indices[axis]
    if isinstance(t, _Const) and t.tensor.dtype == torch.bool:
        ctx.fail("a boolean mask index")
    return _gather(ctx, x, axis, ctx.indices(t))


# -- contractions ---------------------------------------------------------------

def _matmul2d(ctx, a, b):
    if isinstance(a, _Transposed):
        a = ctx.value(a)
    if isinstance(b, _Transposed):
        return ctx.b.matmul(ctx.value(a), b.value, transpose_b=True)
    return ctx.b.matmul(ctx.value(a), ctx.value(b))


@_register("aten.mm")
def _mm(ctx, a, b):
    return _matmul2d(ctx, a, b)


@_register("aten.addmm")
def _addmm(ctx, bias, a, b, beta=1, alpha=1):
    y = _matmul2d(ctx, a, b)
    bias = _scalar_arg(ctx, bias)
    if alpha != 1:
        y = _elementwise(ctx, lambda s, p: s.mul(p, float(alpha)), y)
    if _num(bias):
        return _elementwise(ctx, lambda s, p: s.add(p, bias * float(beta)), y)
    if beta != 1:
        return _elementwise(ctx, lambda s, p, q: s.add(p, s.mul(q, float(beta))), y, bias)
    return _elementwise(ctx, lambda s, p, q: s.add(p, q), y, bias)


@_register("aten.bmm")
def _bmm(ctx, a, b):
    return ctx.b.batch_matmul(ctx.value(a), ctx.value(b))


@_register("aten.baddbmm")
def _baddbmm(ctx, bias, a, b, beta=1, alpha=1):
    """beta * bias + alpha * (a @ b) (attention with an additive mask)."""
    y = ctx.b.batch_matmul(ctx.value(a), ctx.value(b))
    bias = _scalar_arg(ctx, bias)
    if beta == 0:
        return _elementwise(ctx, lambda s, p: s.mul(p, float(alpha)), y)
    return _elementwise(ctx, lambda s, p, q: s.add(s.mul(q, float(beta)) if beta != 1 else q,
                                                   s.mul(p, float(alpha)) if alpha != 1 else p),
                        y, bias)


@_register("aten.matmul")
def _matmul(ctx, a, b):
    return _ops._matmul_values(ctx, ctx.value(a), ctx.value(b))


@_register("aten.linear")
def _linear(ctx, x, w, bias=None):
    return _ops._linear_values(ctx, ctx.value(x), ctx.value(w, "weight"),
                              None if bias is None else ctx.value(bias, "bias"))


# -- convolution and pooling ----------------------------------------------------

def _grouped_conv(ctx, x, w, groups, stride, dilation):
    """The ONNX importer's grouped convolution: x [N, G, C/G, H, W] and w
    [G, M/G, C/G, KH, KW] in a generic over (n, g, m, oh, ow, c, kh, kw)."""
    b = ctx.b
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    mg = m // groups
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    xg = b.reshape(x, (n, groups, cg, h, wd))
    wg = b.reshape(w, (groups, mg, cg, kh, kw))

    def spatial(o, k, i):
        return "d%d * %d + d%d * %d" % (o, stride[i], k, dilation[i])
    x_dims = [0, 1, 5, spatial(3, 6, 0), spatial(4, 7, 1)]
    w_dims = [1, 2, 5, 6, 7]
    init = b.filled((n, groups, mg, oh, ow), 0.0)
    y = b.generic(8, [(xg, x_dims), (wg, w_dims)], (n, groups, mg, oh, ow), [0, 1, 2, 3, 4],
                  lambda s, a, acc: s.add(acc, s.mul(a[0], a[1])), reduce_dims=[5, 6, 7],
                  init=init)
    return b.reshape(y, (n, m, oh, ow))


@_register("aten.convolution", "aten._convolution")
def _convolution(ctx, x, w, bias, stride, padding, dilation, transposed, output_padding,
                 groups, *rest):
    if transposed:
        ctx.fail("transposed convolution is not supported")
    x, w = ctx.value(x), ctx.value(w, "weight")
    if x.rank != 4:
        ctx.fail("input of rank %d (2-D convolution on NCHW batches only)" % x.rank)
    stride, padding, dilation = (tuple(_ops._pair(v)) for v in (stride, padding, dilation))
    x = ctx.b.pad(x, [0, 0, padding[0], padding[1]], [0, 0, padding[0], padding[1]], 0.0)
    if groups == 1:
        y = ctx.b.conv2d(x, w, stride, dilation)
    else:
        y = _grouped_conv(ctx, x, w, groups, stride, dilation)
    if bias is not None:
        bias = ctx.value(bias, "bias")
        y = ctx.b.elementwise(y.shape, [(y, [0, 1, 2, 3]), (bias, [1])],
                              lambda s, p, q: s.add(p, q))
    return y


@_register("aten.max_pool2d_with_indices", "aten.max_pool2d")
def _max_pool(ctx, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    y = _ops._pool2d(ctx, "max", x, kernel, stride, padding, dilation, ceil_mode)
    return (y, None) if ctx.op == "aten.max_pool2d_with_indices" else y


@_register("aten.avg_pool2d")
def _avg_pool(ctx, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    y = _ops._pool2d(ctx, "sum", x, kernel, stride, padding, 1, ceil_mode)
    return _ops._avg_scale(ctx, y, kernel, padding, count_include_pad, divisor_override)


@_register("aten._adaptive_avg_pool2d", "aten.adaptive_avg_pool2d")
def _adaptive_avg(ctx, x, output_size):
    return _ops._adaptive_avg(ctx, x, output_size)


# -- normalization and softmax --------------------------------------------------

def _batch_statistics(ctx, x, eps):
    """Mean and rsqrt(biased variance + eps) over every dim but 1."""
    b = ctx.b
    dims = [d for d in range(x.rank) if d != 1]
    count = float(np.prod([x.shape[d] for d in dims]))
    full = list(range(x.rank))
    mean = b.elementwise((x.shape[1],), [(b.reduce(x, dims, "sum"), [0])],
                         lambda s, p: s.div(p, count))
    sq = b.generic(x.rank, [(x, full), (mean, [1])], (x.shape[1],), [1],
                   lambda s, a, acc: s.add(s.mul(s.sub(a[0], a[1]), s.sub(a[0], a[1])), acc),
                   reduce_dims=dims, init=b.filled((x.shape[1],), 0.0))
    var = b.elementwise(sq.shape, [(sq, [0])], lambda s, p: s.div(p, count))
    return mean, var


@_register("aten.native_batch_norm", "aten._native_batch_norm_legit",
           "aten._native_batch_norm_legit_no_training", "aten.batch_norm",
           "aten._native_batch_norm_legit_functional")
def _batch_norm(ctx, x, weight, bias, running_mean, running_var, *rest):
    """Eval: the running statistics (constants). Train: the batch's
    statistics, as PyTorch normalizes in train mode (the running
    statistics are not updated: see the module docstring)."""
    args = list(rest)
    if ctx.op == "aten._native_batch_norm_legit_no_training":
        training, eps = False, args[1]
    elif ctx.op == "aten.batch_norm":
        training, eps = args[0], args[2]
    else:
        training, eps = args[0], args[2]
    x = ctx.value(x)
    w = None if weight is None else ctx.value(weight, "weight")
    bi = None if bias is None else ctx.value(bias, "bias")
    if training or running_mean is None:
        mean, var = _batch_statistics(ctx, x, eps)
    else:
        mean, var = ctx.value(running_mean), ctx.value(running_var)
    y = _ops._batch_norm_values(ctx, x, mean, var, w, bi, eps)
    return y if ctx.op == "aten.batch_norm" else (y, None, None)


@_register("aten.native_layer_norm", "aten.layer_norm")
def _layer_norm(ctx, x, shape, weight=None, bias=None, eps=1e-5, *rest):
    y = _ops._layer_norm_values(ctx, ctx.value(x), tuple(shape),
                               None if weight is None else ctx.value(weight, "weight"),
                               None if bias is None else ctx.value(bias, "bias"), eps)
    return y if ctx.op == "aten.layer_norm" else (y, None, None)


@_register("aten.native_group_norm")
def _group_norm(ctx, x, weight, bias, n, c, hw, groups, eps):
    y = _ops._group_norm_values(ctx, ctx.value(x), groups,
                               None if weight is None else ctx.value(weight, "weight"),
                               None if bias is None else ctx.value(bias, "bias"), eps)
    return (y, None, None)


@_register("aten._softmax", "aten.softmax")
def _softmax(ctx, x, dim, *rest):
    return _ops._softmax_values(ctx.b, ctx.value(x), dim)


@_register("aten._log_softmax", "aten.log_softmax")
def _log_softmax(ctx, x, dim, *rest):
    b = ctx.b
    x = ctx.value(x)
    dim %= x.rank
    full = list(range(x.rank))
    kept = [d for d in full if d != dim]
    rowmax = b.reduce(x, [dim], "max")
    kept_shape = [x.shape[d] for d in kept]
    rowsum = b.generic(x.rank, [(x, full), (rowmax, kept)], kept_shape, kept,
                       lambda s, a, acc: s.add(s.exp(s.sub(a[0], a[1])), acc),
                       reduce_dims=[dim], init=b.filled(kept_shape, 0.0))
    return b.elementwise(x.shape, [(x, full), (rowmax, kept), (rowsum, kept)],
                         lambda s, p, m, t: s.sub(s.sub(p, m), s.log(t)))


# -- reductions -----------------------------------------------------------------

def _reduce(ctx, x, dims, mean):
    x = ctx.value(x)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        dims = list(range(x.rank))
    elif not isinstance(dims, (list, tuple)):
        dims = [dims]
    dims = sorted({d % x.rank for d in dims})
    y = ctx.b.reduce(x, dims, "sum")
    if mean:
        count = float(np.prod([x.shape[d] for d in dims]))
        y = ctx.b.elementwise(y.shape, [(y, list(range(y.rank)))],
                              lambda s, p: s.div(p, count))
    return ctx.b.reshape(y, _shape(ctx))


@_register("aten.mean")
def _mean(ctx, x, dims=None, keepdim=False, dtype=None):
    return _reduce(ctx, x, dims, True)


@_register("aten.sum")
def _sum(ctx, x, dims=None, keepdim=False, dtype=None):
    return _reduce(ctx, x, dims, False)


@_register("aten.amax")
def _amax(ctx, x, dims=(), keepdim=False):
    x = ctx.value(x)
    dims = list(dims) or list(range(x.rank))
    return ctx.b.reshape(ctx.b.reduce(x, dims, "max"), _shape(ctx))


# -- dropout --------------------------------------------------------------------

def _dropout_value(ctx, x, ratio):
    """`mp.dropout` of x: inverted dropout in a training step, the identity
    elsewhere. Only train-mode traces (@loss) emit it: an eval-mode trace
    that draws random numbers (F.dropout(training=True) in eval mode) is
    refused, since @predict has no random numbers; with ratio 0 it is the
    identity (torchvision's swin calls F.dropout(attn, p=0.0) in eval)."""
    ratio = float(ratio)
    if not ctx.training and ratio == 0.0:
        return x
    if not ctx.training:
        ctx.fail("a random op in an eval-mode trace (e.g. F.dropout(x, training=True) with "
                 "the module in eval mode): mp's predictions draw no random numbers")
    if not 0.0 <= ratio < 1.0:
        ctx.fail("a drop probability of %r (mp.dropout takes 0 <= p < 1)" % ratio)
    name = ctx.b.fresh()
    ctx.b.emit("%s = mp.dropout %s {ratio = %.17e : f64} : %s" % (name, x.name, ratio, x.type))
    return _ir.Value(name, x.shape)


@_register("mp.dropout")
def _mp_dropout(ctx, x, p):
    return _dropout_value(ctx, ctx.value(x), p)


@_register("aten.dropout", "aten.native_dropout")
def _aten_dropout(ctx, x, p, train):
    x = ctx.value(x)
    y = _dropout_value(ctx, x, p) if train else x
    return (y, None) if ctx.op == "aten.native_dropout" else y


@_register("aten.bernoulli", "aten.bernoulli_")
def _bernoulli(ctx, x, p=None, generator=None):
    """A 0/1 mask of x's shape, 1 with probability p (stochastic depth,
    PyTorch's CPU dropout): `mp.dropout` of ones with ratio 1 - p, made
    exactly 0 or 1 by a select."""
    if p is None and ctx.op == "aten.bernoulli_":
        p = 0.5  # bernoulli_.float's default (Dropout2d's 1 - p when p = 0.5)
    if isinstance(p, _Const) and p.tensor.dim() == 0:
        p = float(p.tensor)
    if p is None or not _num(p):
        ctx.fail("probabilities from a tensor (only a number probability is supported)")
    if generator is not None:
        ctx.fail("an explicit generator")
    shape = _shape(ctx)
    dropped = _dropout_value(ctx, ctx.b.filled(shape, 1.0), 1.0 - float(p))
    return ctx.b.elementwise(shape, [(dropped, list(range(len(shape))))],
                             lambda s, k: s.select(_cmpf(s, "one", k, 0.0), 1.0, 0.0))


# -- losses ---------------------------------------------------------------------

@_register("aten.nll_loss_forward", "aten.nll_loss")
def _nll_loss(ctx, logp, target, weight=None, reduction=1, ignore_index=-100):
    if weight is not None:
        ctx.fail("class weights are not supported")
    b = ctx.b
    logp = ctx.value(logp, "input")
    target = ctx.indices(target, "target")
    if logp.rank != 2 or target.shape != logp.shape[:1]:
        ctx.fail("nll_loss needs input [B, C] and target [B]")
    hot = _ops._one_hot(ctx, target, logp.shape[1], ignore_index)
    total = b.generic(2, [(logp, [0, 1]), (hot, [0, 1])], (), [],
                      lambda s, a, acc: s.sub(acc, s.mul(a[0], a[1])), reduce_dims=[0, 1],
                      init=b.filled((), 0.0))
    if reduction == 1:
        count = b.reduce(hot, [0, 1], "sum")
        total = b.elementwise((), [(total, []), (count, [])], lambda s, p, q: s.div(p, q))
    elif reduction != 2:
        ctx.fail("reduction='none' is not supported")
    return (total, None) if ctx.op == "aten.nll_loss_forward" else total


@_register("aten.mse_loss")
def _mse_loss(ctx, pred, target, reduction=1):
    b = ctx.b
    pred, target = ctx.value(pred), ctx.value(target, "target")
    full = list(range(pred.rank))
    total = b.generic(pred.rank, [(pred, full), (target, full)], (), [],
                      lambda s, a, acc: s.add(s.mul(s.sub(a[0], a[1]), s.sub(a[0], a[1])), acc),
                      reduce_dims=full, init=b.filled((), 0.0))
    if reduction == 1:
        n = float(np.prod(pred.shape))
        total = b.elementwise((), [(total, [])], lambda s, p: s.div(p, n))
    elif reduction != 2:
        ctx.fail("reduction='none' is not supported")
    return total


# -- graph lowering -------------------------------------------------------------

class _Lowering:
    """Interprets an ATen graph: constants in PyTorch, the rest as MLIR."""

    def __init__(self, program, graph_module, builder, training):
        self.program = program
        self.gm = graph_module
        self.builder = builder
        self.training = training
        self.tags = []  # (first line, end line, module path) per lowered node
        self.env = {}

    def concrete(self, node):
        """The PyTorch value of a constant node (a parameter's current value)."""
        v = self.env[node]
        if isinstance(v, _Const):
            return v.tensor
        if isinstance(v, _ir.Value) and node.op == "get_attr":
            return self._attr(node)
        raise ExportError("internal: no concrete value for %s" % node)

    def _attr(self, node):
        obj = self.gm
        for part in node.target.split("."):
            obj = getattr(obj, part)
        return obj

    def run(self, inputs):
        env = self.env
        result = None
        placeholders = iter(inputs)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(placeholders)
            elif node.op == "get_attr":
                obj = self._attr(node)
                name = self.program._param_name(obj)
                if name is not None:
                    env[node] = self.program._param(name)
                elif isinstance(obj, torch.Tensor):
                    env[node] = _Const(obj.detach().clone())
                else:
                    env[node] = obj
            elif node.op == "output":
                result = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
            else:
                start = len(self.builder.lines)
                env[node] = self._call(node)
                self.tags.append((start, len(self.builder.lines), node.meta.get("mp_path", "")))
        return result

    def _call(self, node):
        env = self.env
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        target = node.target
        op = _op_name(target)
        ctx = _Ctx(self, node, op)
        if op == "operator.getitem":
            container, index = args
            item = container[index]
            if item is None:
                ctx.fail("this output of %s is not supported" % _op_name(node.args[0].target))
            return item
        if op in _RANDOM_OPS:
            if op not in _ATEN:
                ctx.fail("a random op mp has no lowering for (mp lowers dropout and "
                         "bernoulli with a number probability)")
            return self._lower_op(ctx, op, args, kwargs)  # never folded
        live = [x for x in _flatten((args, kwargs)) if _live(x)]
        if live and op in _SHAPE_ONLY_OPS:
            # Depends on the shape of a live tensor, not on its values.
            args = _map(args, lambda x: _Const(torch.zeros(x.shape)) if isinstance(
                x, _ir.Value) else x)
            live = []
        if not live:
            return self._fold(ctx, target, args, kwargs)
        return self._lower_op(ctx, op, args, kwargs)

    def _lower_op(self, ctx, op, args, kwargs):
        lower = _ATEN.get(op)
        if lower is None:
            ctx.fail("no lowering for this ATen op (supported: see docs/python.md)")
        try:
            ir = lower(ctx, *args, **kwargs)
        except (ExportError, AssertionError):
            raise
        except TypeError as e:
            ctx.fail("unsupported arguments: %s" % e)
        _check(ctx, ir)
        return ir

    def _fold(self, ctx, target, args, kwargs):
        """Runs an op on constants in PyTorch (a clone for in-place ops)."""
        def concrete(x):
            return x.tensor if isinstance(x, _Const) else x
        cargs = _map(args, concrete)
        ckwargs = _map(kwargs, concrete)
        try:
            out = target(*cargs, **ckwargs)
        except Exception as e:
            ctx.fail("failed in PyTorch on constants: %s" % e)
        return _map(out, lambda t: _Const(t) if isinstance(t, torch.Tensor) else t)


def _check(ctx, ir):
    out = ctx.out
    if isinstance(ir, _Transposed):
        ir_shape = tuple(reversed(ir.value.shape))
        if out is not None and tuple(out.shape) != ir_shape:
            raise AssertionError("mp aten: %s lowered to %s, PyTorch gives %s" % (
                ctx.op, ir_shape, tuple(out.shape)))
        return
    if isinstance(ir, _ir.Value) and isinstance(out, torch.Tensor):
        if out.dtype not in (torch.float32, torch.int64) or (ir.elem == "f32") != (
                out.dtype == torch.float32):
            ctx.fail("result of type %s (only float32 tensors are supported)" % out.dtype)
        if tuple(ir.shape) != tuple(out.shape):
            raise AssertionError("mp aten: %s lowered to shape %s, PyTorch gives %s" % (
                ctx.op, ir.shape, tuple(out.shape)))
    elif isinstance(ir, (tuple, list)) and isinstance(out, (tuple, list)):
        for i, o in zip(ir, out):
            if i is not None:
                sub = _Ctx.for_builder(ctx.lowering, ctx.op)
                sub.out, sub.path, sub.source, sub.node = o, ctx.path, ctx.source, ctx.node
                _check(sub, i)


# -- programs -------------------------------------------------------------------

# -- parameters -----------------------------------------------------------------

def param_arrays(module):
    """The module's parameters as float32 arrays named by their PyTorch
    (`named_parameters`) names, as export names its mp.param arguments: an
    OrderedDict in that order."""
    return OrderedDict((name, np.ascontiguousarray(p.detach().cpu().to(torch.float32).numpy()))
                       for name, p in module.named_parameters())


def save_params(module, path):
    """Writes param_arrays(module) to an .npz file (names = mp.param names)."""
    np.savez(path, **param_arrays(module))


def load_params(module, arrays):
    """Copies parameters named as mp.param (a dict or an .npz path, e.g. an
    mp-run checkpoint) back into the module; extra entries are ignored."""
    if isinstance(arrays, str):
        with np.load(arrays) as data:
            arrays = {k: data[k] for k in data.files}
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name not in arrays:
                raise KeyError("no array for parameter '%s'" % name)
            value = np.asarray(arrays[name], dtype=np.float32)
            if tuple(value.shape) != tuple(p.shape):
                raise ValueError("parameter '%s': shape %s, array %s" % (
                    name, tuple(p.shape), value.shape))
            p.copy_(torch.from_numpy(value))


class _ParamSpec:
    """An mp.param argument: its name (the PyTorch name), shape, position
    in `named_parameters()` and SSA name."""

    def __init__(self, name, shape, order, arg):
        self.mp_name = self.torch_name = name
        self.shape = tuple(shape)
        self.order = order
        self.arg = arg


# -- programs -------------------------------------------------------------------

class Program:
    """An exported module: `mlir` (the text), `params` (the mp.param
    arguments in order: `mp_name` = `torch_name`, `shape`), the functions
    and `example_outputs` (PyTorch's eval-mode outputs on the example
    inputs). Parameters are named and ordered as `module.named_parameters()`,
    one argument each (MultiheadAttention's in_proj_weight too: the IR
    slices it); only those the functions read are arguments."""

    def __init__(self, module, filename=DEFAULT_FILENAME):
        self.module = module
        self.mlir = None
        self.functions = []
        self._params = OrderedDict()
        self._counter = [0]
        self._order = OrderedDict()
        self._by_id = {}
        for position, (name, p) in enumerate(module.named_parameters()):
            self._order[name] = position
            self._by_id[id(p)] = name
        self.filename = filename
        self._tags = {}

    @property
    def params(self):
        return sorted(self._params.values(), key=lambda s: s.order)

    def param_arrays(self, module=None):
        """The arguments' values (the module's current parameters, or
        another module's of the same structure), in argument order."""
        arrays = param_arrays(module if module is not None else self.module)
        return OrderedDict((s.mp_name, arrays[s.mp_name]) for s in self.params)

    def save_params(self, path, module=None):
        np.savez(path, **self.param_arrays(module))

    def _param_name(self, tensor):
        return self._by_id.get(id(tensor))

    def _param(self, name):
        spec = self._params.get(name)
        if spec is None:
            tensor = self.module.get_parameter(name)
            order = self._order[name]
            spec = _ParamSpec(name, tuple(tensor.shape), order, "%%p%d" % order)
            self._params[name] = spec
        return _ir.Value(spec.arg, spec.shape)

    def _add_function(self, name, builder, inputs, results, attribute):
        self.functions.append((name, builder, inputs, results, attribute))

    def _finish(self):
        text = ["// Exported from PyTorch (ATen graph, torch %s) by mp.export." % torch.__version__]
        params = self.params
        for name, builder, inputs, results, attribute in self.functions:
            args = ["%s: %s" % (v.name, v.type) for v in inputs]
            args += ['%s: %s {mp.param = "%s"}' % (s.arg, _ir.tensor_type(s.shape), s.mp_name)
                     for s in params]
            types = [r.type for r in results]
            ret = types[0] if len(types) == 1 else "(%s)" % ", ".join(types)
            text.append("func.func @%s(%s) -> %s attributes {%s} {" % (
                name, ", ".join(args), ret, attribute))
            text.extend(_located(builder.lines, self._tags.get(id(builder), []),
                                 len(text), self.filename))
            text.append("  return %s : %s" % (", ".join(r.name for r in results),
                                              ", ".join(types)))
            text.append("}")
            text.append("")
        self.mlir = "\n".join(text)
        return self


def _located(lines, tags, first_line, filename):
    """`lines` with `loc("<module path>"("<file>":LINE:COL))` after every
    function-level op a module's node produced: the module path names the
    op in reports, and LINE:COL is where the op starts in this text (what
    the parser would give it), so `--keep-f32 LINE:COL` and precision
    repair find it."""
    lines = list(lines)
    path_of = {}
    for start, end, path in tags:
        for i in range(start, end):
            path_of[i] = path
    i = 0
    while i < len(lines):
        line = lines[i]
        path = path_of.get(i)
        if line.startswith("  %") and path:
            end = i
            if line.rstrip().endswith("{"):
                end = i + 1
                while not lines[end].startswith("  }"):
                    end += 1
            loc = ' loc("%s"("%s":%d:3))' % (path, filename, first_line + i + 1)
            lines[end] = lines[end] + loc
            i = end + 1
            continue
        i += 1
    return lines


_INPUT_ELEMENTS = {torch.float32: "f32", torch.int64: "i64"}


def _as_inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    inputs = tuple(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or x.dtype not in _INPUT_ELEMENTS:
            raise ExportError("example input %d must be a float32 or int64 tensor, got %s" % (
                i, getattr(x, "dtype", type(x).__name__)))
    return inputs


def _outputs(result):
    values = list(_flatten(result))
    if not values or not all(isinstance(v, (_ir.Value, _Transposed)) for v in values):
        raise ExportError("the module must return a tensor or a tuple of tensors that depend "
                          "on its inputs")
    if any(isinstance(v, _ir.Value) and v.elem != "f32" for v in values):
        raise ExportError("the module returns an int64 tensor; only float32 results are "
                          "supported")
    return values


def _lower(program, gm, inputs, training, loss=None):
    builder = _ir.FuncBuilder(program._counter)
    lowering = _Lowering(program, gm, builder, training)
    args = [_ir.Value("%%x%d" % i, x.shape, _INPUT_ELEMENTS[x.dtype])
            for i, x in enumerate(inputs)]
    results = _outputs(lowering.run(args))
    ctx = _Ctx.for_builder(lowering, "output")
    results = [ctx.value(r) if isinstance(r, _Transposed) else r for r in results]
    program._tags[id(builder)] = lowering.tags
    return builder, lowering, args, results


def _scalar_result(builder, value):
    return builder.extract_scalar(value) if value.shape == () else value


def export_program(module, example_inputs, loss=None, filename=DEFAULT_FILENAME):
    """Exports `module` called on `example_inputs` (float32 tensors, and
    int64 tensors read as indices (embedding, index) or as the class-index
    target of a cross-entropy loss; their shapes, batch included, are fixed
    in the IR). Returns a Program whose `mlir` holds `@predict(inputs...,
    params...)` marked `mp.predict`, traced in eval mode (or, when the
    module returns a scalar loss, `@loss(inputs..., params...) -> f32`
    marked `mp.loss`). With `loss` ("cross_entropy" or "mse") it also holds
    `@loss(x, target, params...) -> f32` marked `mp.loss`, traced in train
    mode (BatchNorm on the batch's statistics, dropout as mp.dropout),
    where the target has the output's shape (one-hot labels for cross
    entropy). `filename` is the file the ops' locations name."""
    inputs = _as_inputs(example_inputs)
    program = Program(module, filename)
    # Traced with autograd on: PyTorch's fused inference kernels (the
    # TransformerEncoderLayer fast path) are then not taken.
    gm = trace(module, inputs, training=False)
    builder, _, args, results = _lower(program, gm, inputs, False)
    if len(results) == 1 and results[0].shape == ():
        name, attribute = "loss", "mp.loss"
        results = [_scalar_result(builder, results[0])]
    else:
        name, attribute = "predict", "mp.predict"
        if any(r.shape == () for r in results):
            raise ExportError("a scalar result next to tensors is not supported")
    if loss is not None:
        if loss not in _ops._LOSSES:
            raise ExportError("unknown loss %r (expected one of %s)" % (
                loss, sorted(_ops._LOSSES)))
        if len(inputs) != 1 or len(results) != 1 or results[0].shape == ():
            raise ExportError("a training export needs a module with one input and one "
                              "tensor output")
        tgm = trace(module, inputs, training=True)
        lbuilder, lowering, largs, lresults = _lower(program, tgm, inputs, True)
        target = _ir.Value("%labels", lresults[0].shape)
        value = _ops._LOSSES[loss](_Ctx.for_builder(lowering, "loss %r" % loss),
                                  lresults[0], target)
        program._add_function("loss", lbuilder, [largs[0], target], [value], "mp.loss")
        if _has_running_stats(module):
            warnings.warn(
                "mp.export_training: BatchNorm trains on batch statistics, but mp does not "
                "update its running statistics yet; @predict uses the values at export",
                stacklevel=3)
    program._add_function(name, builder, args, results, attribute)
    with torch.no_grad(), _ModeAndState(module, False):
        out = module(*inputs)
    program.example_outputs = out
    return program._finish()


def _has_running_stats(module):
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats
               for m in module.modules())


def export(module, example_inputs, filename=DEFAULT_FILENAME):
    """MLIR text of `module` applied to `example_inputs`: `@predict(inputs...,
    params...)` marked mp.predict (`@loss` marked mp.loss when the module
    returns a scalar loss), the parameters arguments marked
    `mp.param = "<qualified name>"`. See export_program."""
    return export_program(module, example_inputs, filename=filename).mlir


def export_training(module, example_x, num_classes=None, loss="cross_entropy",
                    filename=DEFAULT_FILENAME):
    """MLIR text for `mp-run train` and sessions: `@loss(x, labels,
    params...) -> f32` (mp.loss, train mode; labels one-hot [B,
    num_classes] for cross entropy) and `@predict(x, params...)`
    (mp.predict, eval mode) over the same parameters."""
    program = export_program(module, example_x, loss=loss, filename=filename)
    out = program.example_outputs
    if num_classes is not None and (out.dim() != 2 or out.shape[1] != num_classes):
        raise ExportError("the module's output %s is not [batch, %d]" % (
            tuple(out.shape), num_classes))
    return program.mlir
