"""PyTorch nn.Module -> MLIR on tensors, through torch.fx.

The module is traced symbolically (torch.fx) with a tracer that keeps the
layers mp lowers as whole ops (Linear, Conv2d, LayerNorm, MultiheadAttention,
...) and traces through everything else. The graph is then interpreted node
by node on the example inputs: every node runs in PyTorch (for the concrete
shapes and for Python values such as sizes) and, where it computes on a
tensor that depends on the inputs or the parameters, it is lowered to
linalg on tensors by one of the functions registered below. The result is
checked against PyTorch's shape at every node.

Export has inference semantics: the module is traced in eval mode, so
Dropout is the identity and BatchNorm uses its running statistics (which,
like every other buffer, become dense constants). Parameters become
function arguments marked `mp.param = "<qualified name>"`.

Slices (torch.chunk / torch.split and the Tensor methods) are
linalg.generic copies that read their input at an offset (`d + start`, or
a constant index into a reshaped view), and torch.cat zero-pads each operand
(tensor.pad) and adds them; no tensor.extract_slice / insert_slice is
emitted, because --mp-autodiff has no derivative for those. Training
through them works: --mp-autodiff differentiates both forms (a scatter
into zeros for a slice, the interior of the gradient for a pad), and
--mp-train-pipeline and mp-run train accept them (tests:
test_export_layers.py). Indexing a tensor with `x[...]` is still refused.

nn.Embedding / F.embedding read int64 indices, an example input (or a
constant such as torch.arange positions): a one-hot of the indices, built
in the IR, times the weight. mp-run and mp.runtime.Session take f32 inputs
only, so such a model runs through mp-opt, --mp-autodiff and mp.run_mlir.
"""

import dis
import inspect
import math
import operator
from collections import OrderedDict

import numpy as np
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from . import _ir

__all__ = [
    "ExportError", "Program", "export", "export_program", "export_training",
    "param_arrays", "save_params", "load_params",
]


class ExportError(Exception):
    """An op or module the exporter cannot lower; names the op and the
    module path (the qualified name of the submodule it was called in)."""

    def __init__(self, message, op=None, module_path=None):
        super().__init__(message)
        self.op = op
        self.module_path = module_path


# -- parameters ---------------------------------------------------------------

# MultiheadAttention's packed in-projection becomes three parameters (sliced
# at export rather than in the IR): "<path>.in_proj_weight.q" / ".k" / ".v".
_QKV = ("q", "k", "v")


def _split_parts(module, name):
    """For a parameter name, the (suffix, row slice) parts it is exported as."""
    owner_path, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    if isinstance(owner, nn.MultiheadAttention) and leaf in ("in_proj_weight", "in_proj_bias"):
        e = owner.embed_dim
        return [(s, (i * e, (i + 1) * e)) for i, s in enumerate(_QKV)]
    return [(None, None)]


def _mp_name(torch_name, suffix):
    return torch_name if suffix is None else "%s.%s" % (torch_name, suffix)


def param_arrays(module):
    """The module's parameters as float32 arrays, named as export names its
    mp.param arguments (state_dict names; MultiheadAttention's in_proj_*
    split into .q/.k/.v rows). An OrderedDict in export's argument order."""
    out = OrderedDict()
    for name, p in module.named_parameters():
        value = p.detach().cpu().to(torch.float32).numpy()
        for suffix, rows in _split_parts(module, name):
            out[_mp_name(name, suffix)] = np.ascontiguousarray(
                value if rows is None else value[rows[0]:rows[1]])
    return out


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
            parts = _split_parts(module, name)
            if any(_mp_name(name, s) not in arrays for s, _ in parts):
                raise KeyError("no array for parameter '%s'" % name)
            pieces = [np.asarray(arrays[_mp_name(name, s)], dtype=np.float32) for s, _ in parts]
            value = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
            if tuple(value.shape) != tuple(p.shape):
                raise ValueError("parameter '%s': shape %s, array %s" % (
                    name, tuple(p.shape), value.shape))
            p.copy_(torch.from_numpy(value))


class _ParamSpec:
    def __init__(self, mp_name, torch_name, rows, shape, order, arg):
        self.mp_name = mp_name
        self.torch_name = torch_name
        self.rows = rows
        self.shape = tuple(shape)
        self.order = order
        self.arg = arg


# -- tracing ------------------------------------------------------------------

def _encoder_layer_forward(m, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
    """TransformerEncoderLayer's reference (non-fused) path: its own forward
    branches on tensor properties for the fused kernel, which fx cannot
    trace. (is_causal: PyTorch 2.x, a hint about src_mask.)"""
    if src_mask is not None or src_key_padding_mask is not None or is_causal:
        raise ExportError("TransformerEncoderLayer: attention masks are not supported",
                          op="torch.nn.TransformerEncoderLayer")
    x = src
    if m.norm_first:
        x = x + m._sa_block(m.norm1(x), None, None)
        x = x + m._ff_block(m.norm2(x))
    else:
        x = m.norm1(x + m._sa_block(x, None, None))
        x = m.norm2(x + m._ff_block(x))
    return x


def _encoder_forward(m, src, mask=None, src_key_padding_mask=None, is_causal=None):
    if mask is not None or src_key_padding_mask is not None or is_causal:
        raise ExportError("TransformerEncoder: attention masks are not supported",
                          op="torch.nn.TransformerEncoder")
    x = src
    for layer in m.layers:
        x = layer(x)
    if m.norm is not None:
        x = m.norm(x)
    return x


_REPLACED_FORWARDS = {
    nn.TransformerEncoderLayer: _encoder_layer_forward,
    nn.TransformerEncoder: _encoder_forward,
}

_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)


class _Tracer(torch.fx.Tracer):
    """Keeps the layers mp lowers as call_module nodes, traces through user
    modules and containers, and records for every node the path of the
    module it was created in (node.meta["mp_path"])."""

    def __init__(self):
        super().__init__()
        self.path_stack = []
        self.error_path = None  # innermost module a tracing error came from

    def is_leaf_module(self, m, qualified_name):
        if type(m) in _MODULES:
            return True
        if type(m) in _REPLACED_FORWARDS or isinstance(m, _CONTAINERS):
            return False
        # Any other torch.nn layer stays whole, so that exporting it fails
        # with its name instead of somewhere inside its implementation.
        return type(m).__module__.startswith("torch.nn")

    def call_module(self, m, forward, args, kwargs):
        path = self.path_of_module(m)
        replaced = _REPLACED_FORWARDS.get(type(m))
        if replaced is not None:
            forward = lambda *a, **k: replaced(m, *a, **k)
        self.path_stack.append(path)
        try:
            return super().call_module(m, forward, args, kwargs)
        except ExportError as e:
            if e.module_path is None:
                e.module_path = path
                e.args = ("%s (in module '%s')" % (e.args[0], path),)
            raise
        except Exception:
            if self.error_path is None:
                self.error_path = path
            raise
        finally:
            self.path_stack.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["mp_path"] = self.path_stack[-1] if self.path_stack else ""
        return node


class _Root(nn.Module):
    """Traces a module whose own forward must be replaced (the root of a
    trace is not called through call_module)."""

    def __init__(self, inner, fn):
        super().__init__()
        self._modules = inner._modules
        self._parameters = inner._parameters
        self._buffers = inner._buffers
        object.__setattr__(self, "_mp_inner", inner)
        object.__setattr__(self, "_mp_fn", fn)

    def forward(self, x):
        return self._mp_fn(self._mp_inner, x)


def _proxy_iter(self):
    """torch.fx.Proxy.__iter__ for Python 3.11: torch 1.13 finds the
    UNPACK_SEQUENCE of `a, b = proxy` by instruction index, which 3.11's
    inline caches break; this looks the instruction up by its offset."""
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


# Tensor factories that forwards call on traced sizes (torch.arange(x.size(1))
# for position embeddings): torch.fx cannot pass a Proxy to them, so while
# tracing `torch.<name>` records a node instead; its result depends on no
# input and is folded into a constant.
_TRACED_FACTORIES = ("arange",)


def _factory_recorder(tracer, fn):
    def record(*args, **kwargs):
        if any(isinstance(a, torch.fx.Proxy) for a in _flatten((args, kwargs))):
            return tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    return record


def _trace(module, num_inputs):
    tracer = _Tracer()
    root = module
    concrete = {}
    if type(module) in _REPLACED_FORWARDS:
        if num_inputs != 1:
            raise ExportError("%s takes one input (the sequence)" % type(module).__name__)
        root = _Root(module, _REPLACED_FORWARDS[type(module)])
    else:
        # Optional forward arguments beyond the example inputs keep their
        # defaults (for example mask=None), so no placeholder stands for them.
        params = list(inspect.signature(module.forward).parameters.values())
        for p in params[num_inputs:]:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is not p.empty:
                concrete[p.name] = p.default
    original_iter = torch.fx.Proxy.__iter__
    factories = {name: getattr(torch, name) for name in _TRACED_FACTORIES}
    torch.fx.Proxy.__iter__ = _proxy_iter
    for name, fn in factories.items():
        setattr(torch, name, _factory_recorder(tracer, fn))
    try:
        graph = tracer.trace(root, concrete_args=concrete or None)
    except ExportError:
        raise
    except Exception as e:  # fx's TraceError, or anything the forward raises
        path = tracer.error_path or ""
        raise ExportError("torch.fx cannot trace the module%s: %s" % (
            " (in module '%s')" % path if path else "", e), module_path=path) from e
    finally:
        torch.fx.Proxy.__iter__ = original_iter
        for name, fn in factories.items():
            setattr(torch, name, fn)
    return graph


# -- lowering context ---------------------------------------------------------

def _op_name(node, root):
    if node.op == "call_module":
        t = type(root.get_submodule(node.target))
        mod = t.__module__
        if mod.startswith("torch.nn.modules"):
            mod = "torch.nn"
        return "%s.%s" % (mod, t.__qualname__)
    if node.op == "call_method":
        return "Tensor.%s" % node.target
    target = node.target
    if isinstance(target, str):
        return target
    mod = getattr(target, "__module__", None) or "torch"
    if mod in ("torch._C._VariableFunctions", "torch._C._nn"):
        mod = "torch" if mod.endswith("Functions") else "torch.nn.functional"
    if mod == "_operator":
        mod = "operator"
    return "%s.%s" % (mod, getattr(target, "__name__", repr(target)))


class _Const:
    """A tensor that depends on neither inputs nor parameters (a buffer, or
    computed from buffers and Python values): folded in PyTorch, emitted as a
    dense constant where a lowered op uses it."""

    def __init__(self, tensor):
        self.tensor = tensor


class _Ctx:
    """What a lowering function sees: the builder, the node's module path,
    PyTorch's result for the node (out), and parameter access."""

    def __init__(self, lowering, node, out, op, args_c=(), kwargs_c=None):
        self.lowering = lowering
        self.b = lowering.builder
        self.node = node
        self.path = node.meta.get("mp_path", "")
        self.out = out
        self.op = op
        # The node's arguments as PyTorch values (tensors where the lowering
        # sees Values), for lowerings that read a parameter's current value.
        self.args_c = args_c
        self.kwargs_c = kwargs_c or {}

    @classmethod
    def for_builder(cls, builder, op):
        """A context outside any graph node (the loss export appends)."""
        ctx = cls.__new__(cls)
        ctx.lowering, ctx.node, ctx.out, ctx.path, ctx.op, ctx.b = None, None, None, "", op, builder
        ctx.args_c, ctx.kwargs_c = (), {}
        return ctx

    def fail(self, reason):
        raise ExportError("cannot export %s%s: %s" % (
            self.op, " in module '%s'" % self.path if self.path else "", reason),
            op=self.op, module_path=self.path)

    def param(self, module_path, name, part=None):
        """The function argument of parameter <module_path>.<name>."""
        full = "%s.%s" % (module_path, name) if module_path else name
        return self.lowering.program._param(full, part)

    def buffer(self, tensor):
        return self.b.constant(tensor.detach().cpu().numpy())

    def value(self, x, what="input"):
        """x as an f32 tensor Value (a folded constant is materialized)."""
        if isinstance(x, _Const):
            if x.tensor.dtype != torch.float32:
                self.fail("%s is a %s constant; only float32 is supported" % (what, x.tensor.dtype))
            return self.buffer(x.tensor)
        if isinstance(x, _ir.Value):
            if x.elem != "f32":
                self.fail("%s is an int64 tensor; integer tensors are supported only as the "
                          "indices of nn.Embedding / F.embedding and the class-index target "
                          "of F.cross_entropy / nn.CrossEntropyLoss" % what)
            return x
        self.fail("%s is not a tensor (%r)" % (what, type(x).__name__))

    def index_or_value(self, x, what="target"):
        """x as an f32 Value, or an int64 one (an input or constant) for
        lowerings that read class indices."""
        if isinstance(x, _Const) and x.tensor.dtype == torch.int64:
            return self.b.constant(x.tensor.detach().cpu().numpy(), "i64")
        if isinstance(x, _ir.Value) and x.elem == "i64":
            return x
        return self.value(x, what)


# -- the registry -------------------------------------------------------------

_FUNCTIONS = {}
_METHODS = {}
_MODULES = {}
# Ops whose result is a Python value about a tensor's shape, never its data.
_SHAPE_QUERIES = {getattr, len}
_SHAPE_METHODS = {"size", "dim", "numel"}


def _register(*targets):
    def wrap(fn):
        for t in targets:
            if isinstance(t, str):
                _METHODS[t] = fn
            elif isinstance(t, type):
                _MODULES[t] = fn
            else:
                _FUNCTIONS[t] = fn
        return fn
    return wrap


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


# -- elementwise ---------------------------------------------------------------

def _broadcast_operand(b, v, out_shape):
    """(value, loop dims) of v broadcast into out_shape: dims of size 1 that
    broadcast are collapsed away (mp's passes expect projected maps)."""
    offset = len(out_shape) - v.rank
    keep = [i for i in range(v.rank) if not (v.shape[i] == 1 and out_shape[offset + i] != 1)]
    if len(keep) != v.rank:
        v = b.reshape(v, [v.shape[i] for i in keep])
    return (v, [offset + i for i in keep])


def _elementwise(ctx, fn, *xs):
    """fn(body, *scalars) over numpy-broadcast operands (Values, constants,
    Python numbers)."""
    vals = []
    for x in xs:
        if _num(x):
            vals.append(float(x))
        else:
            vals.append(ctx.value(x))
    tensors = [v for v in vals if isinstance(v, _ir.Value)]
    if any(v.is_scalar for v in tensors):
        if len(tensors) == len([v for v in vals if not _num(v)]) and all(v.is_scalar for v in tensors):
            body = _ir.Body(ctx.b, "  ")
            result = body.operand(fn(body, *[v.name if isinstance(v, _ir.Value) else v for v in vals]))
            ctx.b.lines.extend(body.lines)
            return _ir.Value(result, None)
        ctx.fail("mixing the scalar loss with tensors is not supported")
    if not tensors:
        ctx.fail("no tensor operand")
    out_shape = tuple(np.broadcast_shapes(*[v.shape for v in tensors]))
    inputs = [v if _num(v) else _broadcast_operand(ctx.b, v, out_shape) for v in vals]
    return ctx.b.elementwise(out_shape, inputs, fn)


def _binary(op):
    return lambda b, x, y: getattr(b, op)(x, y)


@_register(operator.add, "add", "__add__", "__radd__", "__iadd__")
def _add(ctx, x, y, alpha=1):
    if alpha != 1:
        return _elementwise(ctx, lambda b, p, q: b.add(p, b.mul(q, float(alpha))), x, y)
    return _elementwise(ctx, _binary("add"), x, y)


@_register(torch.add)
def _torch_add(ctx, x, y, *, alpha=1, out=None):
    if out is not None:
        ctx.fail("out= is not supported")
    return _add(ctx, x, y, alpha)


@_register(operator.sub, torch.sub, "sub", "__sub__", "__rsub__", "__isub__")
def _sub(ctx, x, y, *, alpha=1):
    if alpha != 1:
        return _elementwise(ctx, lambda b, p, q: b.sub(p, b.mul(q, float(alpha))), x, y)
    if ctx.op.endswith("__rsub__"):
        x, y = y, x
    return _elementwise(ctx, _binary("sub"), x, y)


@_register(operator.mul, torch.mul, "mul", "__mul__", "__rmul__", "__imul__")
def _mul(ctx, x, y):
    return _elementwise(ctx, _binary("mul"), x, y)


@_register(operator.truediv, torch.div, "div", "__truediv__", "__itruediv__")
def _div(ctx, x, y, *, rounding_mode=None):
    if rounding_mode is not None:
        ctx.fail("rounding_mode=%r is not supported" % rounding_mode)
    return _elementwise(ctx, _binary("div"), x, y)


@_register(operator.neg, torch.neg, "neg", "__neg__")
def _neg(ctx, x):
    return _elementwise(ctx, lambda b, p: b.neg(p), x)


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


def _unary_lowering(kind):
    def lower(ctx, x, inplace=False):
        return _elementwise(ctx, _UNARY[kind], x)
    return lower


for _kind, _targets in {
    "relu": (torch.relu, F.relu, "relu"),
    "tanh": (torch.tanh, F.tanh, "tanh"),
    "sigmoid": (torch.sigmoid, F.sigmoid, "sigmoid"),
    "exp": (torch.exp, "exp"),
    "sqrt": (torch.sqrt, "sqrt"),
    "rsqrt": (torch.rsqrt, "rsqrt"),
    "silu": (F.silu,),
    "hardswish": (F.hardswish,),
    "hardsigmoid": (F.hardsigmoid,),
    "relu6": (F.relu6,),
}.items():
    _register(*_targets)(_unary_lowering(_kind))


@_register(F.gelu)
def _gelu(ctx, x, approximate="none"):
    if approximate not in ("none", "tanh"):
        ctx.fail("approximate=%r" % approximate)
    return _elementwise(ctx, _gelu_body(approximate), x)


_ACTIVATION_MODULES = {
    nn.ReLU: "relu", nn.Tanh: "tanh", nn.Sigmoid: "sigmoid", nn.SiLU: "silu",
    nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid", nn.ReLU6: "relu6",
}


@_register(*_ACTIVATION_MODULES)
def _activation_module(ctx, m, x):
    return _elementwise(ctx, _UNARY[_ACTIVATION_MODULES[type(m)]], x)


@_register(nn.GELU)
def _gelu_module(ctx, m, x):
    return _gelu(ctx, x, m.approximate)


@_register(nn.Dropout, nn.Identity)
def _identity_module(ctx, m, x, *args, **kwargs):
    return ctx.value(x)


@_register(F.dropout)
def _dropout(ctx, x, p=0.5, training=True, inplace=False):
    if training:
        ctx.fail("dropout in training mode (export traces in eval mode; "
                 "pass training=self.training)")
    return ctx.value(x)


@_register("contiguous", "float")
def _identity_method(ctx, x, *args, **kwargs):
    return ctx.value(x)


# -- shapes ---------------------------------------------------------------------

def _to_shape_of_out(ctx, x, *args, **kwargs):
    """view/reshape/flatten/squeeze/unsqueeze: PyTorch's result shape is the
    target of a row-major reshape."""
    return ctx.b.reshape(ctx.value(x), tuple(ctx.out.shape))


for _t in (torch.reshape, torch.flatten, torch.squeeze, torch.unsqueeze, torch.unflatten,
           "view", "reshape", "flatten", "squeeze", "unsqueeze", "unflatten"):
    _register(_t)(_to_shape_of_out)


@_register(nn.Flatten, nn.Unflatten)
def _flatten_module(ctx, m, x):
    return ctx.b.reshape(ctx.value(x), tuple(ctx.out.shape))


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


def _pieces(ctx, x, dim):
    """chunk/split: consecutive slices along `dim` with PyTorch's sizes."""
    x = ctx.value(x)
    if x.rank == 0:
        ctx.fail("a 0-d tensor")
    dim %= x.rank
    pieces, start = [], 0
    for t in ctx.out:
        size = t.shape[dim]
        if size == 0:
            ctx.fail("an empty piece (size 0 along dim %d)" % dim)
        pieces.append(_slice(ctx, x, dim, start, size))
        start += size
    return tuple(pieces)


@_register(torch.chunk, "chunk")
def _chunk(ctx, x, chunks, dim=0):
    return _pieces(ctx, x, dim)


@_register(torch.split, "split")
def _split(ctx, x, split_size_or_sections=None, dim=0, *, split_size=None):
    return _pieces(ctx, x, dim)


@_register(torch.cat, torch.concat)
def _cat(ctx, tensors, dim=0, *, out=None):
    """Each operand zero-padded to the result's extent at its offset and the
    padded operands added (x + 0 is exact): tensor.pad and an elementwise
    generic, both of which --mp-autodiff differentiates. The pads start one
    element early and the sum reads at `d + 1`, so that no pad has a zero
    low padding next to a non-zero high one along `dim` (mp's autodiff
    writes that pad's gradient as an invalid generic)."""
    if out is not None:
        ctx.fail("out= is not supported")
    # PyTorch skips 1-D empty operands (legacy behaviour).
    values = [ctx.value(t, "operand") for t in tensors]
    values = [v for v in values if int(np.prod(v.shape)) != 0]
    if not values:
        ctx.fail("no non-empty operand")
    if len(values) == 1:
        return values[0]
    rank = values[0].rank
    dim %= rank
    total = sum(v.shape[dim] for v in values)
    padded, offset = [], 0
    for v in values:
        low, high = [0] * rank, [0] * rank
        low[dim] = offset + 1
        high[dim] = total - offset - v.shape[dim]
        padded.append(ctx.b.pad(v, low, high, 0.0))
        offset += v.shape[dim]
    loops = list(range(rank))
    read = list(loops)
    read[dim] = "d%d + 1" % dim

    def body(s, args, acc):
        y = args[0]
        for a in args[1:]:
            y = s.add(y, a)
        return y
    return ctx.b.generic(rank, [(p, read) for p in padded], tuple(ctx.out.shape), loops, body)


@_register(torch.permute, "permute")
def _permute(ctx, x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return ctx.b.transpose(ctx.value(x), list(dims))


@_register(torch.transpose, "transpose")
def _transpose(ctx, x, d0, d1):
    x = ctx.value(x)
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.b.transpose(x, perm)


@_register(torch.t, "t")
def _t(ctx, x):
    x = ctx.value(x)
    return ctx.b.transpose(x, [1, 0]) if x.rank == 2 else x


# -- contractions ---------------------------------------------------------------

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


@_register(torch.matmul, operator.matmul, torch.mm, torch.bmm, "matmul", "mm", "bmm", "__matmul__")
def _matmul(ctx, x, y):
    x, y = ctx.value(x), ctx.value(y)
    if ctx.op in ("torch.bmm", "Tensor.bmm") and (x.rank != 3 or y.rank != 3):
        ctx.fail("bmm needs 3-D tensors")
    return _matmul_values(ctx, x, y)


def _linear_values(ctx, x, w, bias):
    """x [..., in] W[out, in]^T + bias: a matmul with transposed weight maps."""
    b = ctx.b
    rows = b.reshape(x, (int(np.prod(x.shape[:-1])), x.shape[-1]))
    y = b.matmul(rows, w, transpose_b=True)
    if bias is not None:
        y = b.elementwise(y.shape, [(y, [0, 1]), (bias, [1])], lambda s, p, q: s.add(p, q))
    return b.reshape(y, x.shape[:-1] + (w.shape[0],))


@_register(nn.Linear)
def _linear_module(ctx, m, x):
    bias = ctx.param(ctx.path, "bias") if m.bias is not None else None
    return _linear_values(ctx, ctx.value(x), ctx.param(ctx.path, "weight"), bias)


@_register(F.linear)
def _linear(ctx, x, weight, bias=None):
    return _linear_values(ctx, ctx.value(x), ctx.value(weight, "weight"),
                          None if bias is None else ctx.value(bias, "bias"))


# -- convolution and pooling -----------------------------------------------------

def _conv_padding(ctx, padding, kernel, dilation, stride):
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding == "same":
            if any(s != 1 for s in stride):
                ctx.fail("padding='same' needs stride 1")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            low = tuple(t // 2 for t in total)
            return low, tuple(t - lo for t, lo in zip(total, low))
        ctx.fail("padding=%r" % padding)
    p = _pair(padding)
    return p, p


def _conv2d_values(ctx, x, w, bias, stride, padding, dilation, groups):
    if groups != 1:
        ctx.fail("groups=%d (only groups=1 is supported)" % groups)
    if x.rank != 4:
        ctx.fail("input of rank %d (NCHW batches only)" % x.rank)
    stride, dilation = _pair(stride), _pair(dilation)
    low, high = _conv_padding(ctx, padding, w.shape[2:], dilation, stride)
    x = ctx.b.pad(x, [0, 0, low[0], low[1]], [0, 0, high[0], high[1]], 0.0)
    y = ctx.b.conv2d(x, w, stride, dilation)
    if bias is not None:
        y = ctx.b.elementwise(y.shape, [(y, [0, 1, 2, 3]), (bias, [1])], lambda s, p, q: s.add(p, q))
    return y


@_register(nn.Conv2d)
def _conv2d_module(ctx, m, x):
    if m.padding_mode != "zeros":
        ctx.fail("padding_mode=%r" % m.padding_mode)
    bias = ctx.param(ctx.path, "bias") if m.bias is not None else None
    return _conv2d_values(ctx, ctx.value(x), ctx.param(ctx.path, "weight"), bias,
                          m.stride, m.padding, m.dilation, m.groups)


@_register(F.conv2d)
def _conv2d(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv2d_values(ctx, ctx.value(x), ctx.value(weight, "weight"),
                          None if bias is None else ctx.value(bias, "bias"),
                          stride, padding, dilation, groups)


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


@_register(nn.MaxPool2d)
def _max_pool_module(ctx, m, x):
    if m.return_indices:
        ctx.fail("return_indices=True")
    return _pool2d(ctx, "max", x, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)


@_register(F.max_pool2d)
def _max_pool(ctx, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
              return_indices=False):
    if return_indices:
        ctx.fail("return_indices=True")
    return _pool2d(ctx, "max", x, kernel_size, stride, padding, dilation, ceil_mode)


@_register(nn.AvgPool2d)
def _avg_pool_module(ctx, m, x):
    y = _pool2d(ctx, "sum", x, m.kernel_size, m.stride, m.padding, 1, m.ceil_mode)
    return _avg_scale(ctx, y, m.kernel_size, m.padding, m.count_include_pad, m.divisor_override)


@_register(F.avg_pool2d)
def _avg_pool(ctx, x, kernel_size, stride=None, padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    y = _pool2d(ctx, "sum", x, kernel_size, stride, padding, 1, ceil_mode)
    return _avg_scale(ctx, y, kernel_size, padding, count_include_pad, divisor_override)


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


@_register(nn.AdaptiveAvgPool2d)
def _adaptive_avg_module(ctx, m, x):
    return _adaptive_avg(ctx, x, m.output_size)


@_register(F.adaptive_avg_pool2d)
def _adaptive_avg_fn(ctx, x, output_size):
    return _adaptive_avg(ctx, x, output_size)


# -- normalization -----------------------------------------------------------------

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


@_register(nn.BatchNorm1d, nn.BatchNorm2d)
def _batch_norm_module(ctx, m, x):
    if m.running_mean is None:
        ctx.fail("track_running_stats=False (batch statistics) is not supported")
    weight = ctx.param(ctx.path, "weight") if m.weight is not None else None
    bias = ctx.param(ctx.path, "bias") if m.bias is not None else None
    return _batch_norm_values(ctx, ctx.value(x), ctx.buffer(m.running_mean),
                              ctx.buffer(m.running_var), weight, bias, m.eps)


@_register(F.batch_norm)
def _batch_norm(ctx, x, running_mean, running_var, weight=None, bias=None, training=False,
                momentum=0.1, eps=1e-5):
    if training or running_mean is None:
        ctx.fail("batch statistics (training=True) are not supported")
    return _batch_norm_values(ctx, ctx.value(x), ctx.value(running_mean), ctx.value(running_var),
                              None if weight is None else ctx.value(weight),
                              None if bias is None else ctx.value(bias), eps)


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


@_register(nn.LayerNorm)
def _layer_norm_module(ctx, m, x):
    weight = ctx.param(ctx.path, "weight") if m.elementwise_affine else None
    bias = ctx.param(ctx.path, "bias") if m.elementwise_affine else None
    return _layer_norm_values(ctx, ctx.value(x), tuple(m.normalized_shape), weight, bias, m.eps)


@_register(F.layer_norm)
def _layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _layer_norm_values(ctx, ctx.value(x), tuple(normalized_shape),
                              None if weight is None else ctx.value(weight),
                              None if bias is None else ctx.value(bias), eps)


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


@_register(nn.GroupNorm)
def _group_norm_module(ctx, m, x):
    weight = ctx.param(ctx.path, "weight") if m.affine else None
    bias = ctx.param(ctx.path, "bias") if m.affine else None
    return _group_norm_values(ctx, ctx.value(x), m.num_groups, weight, bias, m.eps)


@_register(F.group_norm)
def _group_norm(ctx, x, num_groups, weight=None, bias=None, eps=1e-5):
    return _group_norm_values(ctx, ctx.value(x), num_groups,
                              None if weight is None else ctx.value(weight),
                              None if bias is None else ctx.value(bias), eps)


# -- embeddings ----------------------------------------------------------------------------

def _embedding_values(ctx, indices, weight, table, padding_idx, max_norm, scale_grad_by_freq):
    """weight[indices] as one_hot(indices) @ weight: a generic comparing
    each int64 index with linalg.index of the vocabulary loop (as the
    cross-entropy target does), then a matmul [N, V] x [V, D], so that
    --mp-autodiff gives the weight its gradient (a gather reading the
    weight inside a generic's body would get none). It costs N * V * D
    multiply-adds, and --mp-auto-mixed-precision treats it as any other
    contraction (the rows are rounded to the low precision). An index
    outside [0, V) gives a zero row (PyTorch raises an error).

    padding_idx: the rows with that index take no part in the matmul (so
    the padding row gets no gradient, as in PyTorch) and get the padding
    row's current value (from `table`, the weight's PyTorch tensor) as a
    constant, when it is not zero."""
    if max_norm is not None:
        ctx.fail("max_norm (renormalizes the weight in place) is not supported")
    if scale_grad_by_freq:
        ctx.fail("scale_grad_by_freq=True (changes the weight's gradient) is not supported")
    if indices.elem != "i64":
        ctx.fail("the indices must be an int64 tensor (got %s)" % indices.elem)
    if weight.rank != 2:
        ctx.fail("weight of rank %d (needs [num_embeddings, embedding_dim])" % weight.rank)
    b = ctx.b
    vocab, width = weight.shape
    if padding_idx is not None and padding_idx < 0:
        padding_idx += vocab
    k = indices.rank
    lead = tuple(indices.shape)

    def one_hot(s, args, acc):
        hit = s.cmpi("eq", args[0], s.index(k))
        if padding_idx is not None:
            hit = s.andi(hit, s.cmpi("ne", args[0], s.const_i64(padding_idx)))
        return s.select(hit, 1.0, 0.0)
    hot = b.generic(k + 1, [(indices, list(range(k)))], lead + (vocab,), list(range(k + 1)),
                    one_hot)
    rows = int(np.prod(lead))
    y = b.reshape(b.matmul(b.reshape(hot, (rows, vocab)), weight), lead + (width,))
    pad_row = None if padding_idx is None else table.detach().cpu().float()[padding_idx]
    if pad_row is not None and bool(torch.any(pad_row != 0)):
        row = b.constant(pad_row.numpy())
        full = list(range(k + 1))

        def body(s, p, index, r):
            return s.add(p, s.select(s.cmpi("eq", index, s.const_i64(padding_idx)), r, 0.0))
        y = b.elementwise(y.shape, [(y, full), (indices, full[:k]), (row, [k])], body)
    return y


@_register(nn.Embedding)
def _embedding_module(ctx, m, indices):
    return _embedding_values(ctx, ctx.index_or_value(indices, "indices"),
                             ctx.param(ctx.path, "weight"), m.weight, m.padding_idx,
                             m.max_norm, m.scale_grad_by_freq)


@_register(F.embedding)
def _embedding(ctx, indices, weight, padding_idx=None, max_norm=None, norm_type=2.0,
               scale_grad_by_freq=False, sparse=False):
    table = ctx.args_c[1] if len(ctx.args_c) > 1 else ctx.kwargs_c["weight"]
    return _embedding_values(ctx, ctx.index_or_value(indices, "indices"),
                             ctx.value(weight, "weight"), table, padding_idx, max_norm,
                             scale_grad_by_freq)


# -- softmax and reductions -------------------------------------------------------------

def _softmax_values(b, x, dim):
    dim = dim % x.rank
    full = list(range(x.rank))
    kept = [d for d in full if d != dim]
    rowmax = b.reduce(x, [dim], "max")
    exps = b.elementwise(x.shape, [(x, full), (rowmax, kept)], lambda s, p, m: s.exp(s.sub(p, m)))
    rowsum = b.reduce(exps, [dim], "sum")
    return b.elementwise(x.shape, [(exps, full), (rowsum, kept)], lambda s, e, t: s.div(e, t))


@_register(F.softmax, torch.softmax, "softmax")
def _softmax(ctx, x, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        ctx.fail("softmax without dim")
    if dtype is not None and dtype != torch.float32:
        ctx.fail("dtype=%s" % dtype)
    return _softmax_values(ctx.b, ctx.value(x), dim)


@_register(nn.Softmax)
def _softmax_module(ctx, m, x):
    if m.dim is None:
        ctx.fail("Softmax without dim")
    return _softmax_values(ctx.b, ctx.value(x), m.dim)


def _reduction(ctx, x, dim, keepdim, mean):
    x = ctx.value(x)
    if dim is None:
        dims = list(range(x.rank))
    else:
        dims = [d % x.rank for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
    y = ctx.b.reduce(x, dims, "sum")
    if mean:
        count = float(np.prod([x.shape[d] for d in dims]))
        if y.rank == 0:
            y = ctx.b.elementwise((), [(y, [])], lambda s, p: s.div(p, count))
        else:
            y = ctx.b.elementwise(y.shape, [(y, list(range(y.rank)))], lambda s, p: s.div(p, count))
    return ctx.b.reshape(y, tuple(ctx.out.shape))


@_register(torch.sum, "sum")
def _sum(ctx, x, dim=None, keepdim=False, *, dtype=None):
    return _reduction(ctx, x, dim, keepdim, False)


@_register(torch.mean, "mean")
def _mean(ctx, x, dim=None, keepdim=False, *, dtype=None):
    return _reduction(ctx, x, dim, keepdim, True)


# -- attention ----------------------------------------------------------------------------

@_register(nn.MultiheadAttention)
def _multihead_attention(ctx, m, query, key, value, key_padding_mask=None, need_weights=True,
                         attn_mask=None, average_attn_weights=True, is_causal=False):
    """PyTorch's multi_head_attention_forward (no masks, no bias_k/v):
    per-head q/k/v projections, q / sqrt(head_dim), softmax(q k^T) v,
    output projection. (is_causal, PyTorch 2.x: a hint that attn_mask is
    causal; PyTorch's own layers pass False.)"""
    if key_padding_mask is not None or attn_mask is not None or is_causal:
        ctx.fail("attention masks are not supported")
    if m.bias_k is not None or m.add_zero_attn:
        ctx.fail("add_bias_kv / add_zero_attn are not supported")
    b = ctx.b
    q_in, k_in, v_in = ctx.value(query), ctx.value(key), ctx.value(value)
    if q_in.rank != 3:
        ctx.fail("unbatched input (rank %d)" % q_in.rank)
    if not m.batch_first:
        q_in, k_in, v_in = (b.transpose(t, [1, 0, 2]) for t in (q_in, k_in, v_in))
    heads, embed = m.num_heads, m.embed_dim
    head_dim = embed // heads
    path = ctx.path
    projected = []
    for i, (t, part) in enumerate(zip((q_in, k_in, v_in), _QKV)):
        if m._qkv_same_embed_dim:
            w = ctx.param(path, "in_proj_weight", part)
        else:
            w = ctx.param(path, "%s_proj_weight" % part)
        bias = ctx.param(path, "in_proj_bias", part) if m.in_proj_bias is not None else None
        y = _linear_values(ctx, t, w, bias)                      # [B, L, E]
        bsz, length = y.shape[0], y.shape[1]
        y = b.reshape(y, (bsz, length, heads, head_dim))
        y = b.transpose(y, [0, 2, 1, 3])                           # [B, H, L, D]
        projected.append(b.reshape(y, (bsz * heads, length, head_dim)))
    q, k, v = projected
    q = b.elementwise(q.shape, [(q, [0, 1, 2])], lambda s, p: s.div(p, math.sqrt(head_dim)))
    scores = b.batch_matmul(q, b.transpose(k, [0, 2, 1]))         # [B*H, L, S]
    probs = _softmax_values(b, scores, -1)
    attn = b.batch_matmul(probs, v)                                # [B*H, L, D]
    bsz, length = q_in.shape[0], q_in.shape[1]
    attn = b.reshape(attn, (bsz, heads, length, head_dim))
    attn = b.transpose(attn, [0, 2, 1, 3])
    attn = b.reshape(attn, (bsz, length, embed))
    out_bias = ctx.param(path, "out_proj.bias") if m.out_proj.bias is not None else None
    out = _linear_values(ctx, attn, ctx.param(path, "out_proj.weight"), out_bias)
    if not m.batch_first:
        out = b.transpose(out, [1, 0, 2])
    weights = None
    if need_weights:
        w4 = b.reshape(probs, (bsz, heads, length, probs.shape[2]))
        if average_attn_weights:
            weights = b.reduce(w4, [1], "sum")
            weights = b.elementwise(weights.shape, [(weights, [0, 1, 2])],
                                    lambda s, p: s.div(p, float(heads)))
        else:
            weights = w4
    return (out, weights)


# -- losses --------------------------------------------------------------------------

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


@_register(F.cross_entropy)
def _cross_entropy(ctx, logits, target, weight=None, size_average=None, ignore_index=-100,
                   reduce=None, reduction="mean", label_smoothing=0.0):
    if weight is not None or size_average is not None or reduce is not None or label_smoothing:
        ctx.fail("only weight=None, label_smoothing=0 and reduction='mean'/'sum' are supported")
    return _cross_entropy_values(ctx, ctx.value(logits, "logits"), ctx.index_or_value(target),
                                 reduction, ignore_index)


@_register(nn.CrossEntropyLoss)
def _cross_entropy_module(ctx, m, logits, target):
    if m.weight is not None or m.label_smoothing:
        ctx.fail("only weight=None and label_smoothing=0 are supported")
    return _cross_entropy_values(ctx, ctx.value(logits, "logits"), ctx.index_or_value(target),
                                 m.reduction, m.ignore_index)


@_register(F.mse_loss)
def _mse(ctx, pred, target, size_average=None, reduce=None, reduction="mean"):
    return _mse_values(ctx, ctx.value(pred), ctx.value(target, "target"), reduction)


@_register(nn.MSELoss)
def _mse_module(ctx, m, pred, target):
    return _mse_values(ctx, ctx.value(pred), ctx.value(target, "target"), m.reduction)


@_register(operator.getitem)
def _getitem(ctx, x, index):
    if isinstance(x, (tuple, list)):
        return x[index]
    ctx.fail("indexing or slicing a tensor is not supported (torch.chunk / torch.split are)")


_LOSSES = {"cross_entropy": _cross_entropy_values, "mse": _mse_values}
# Lowerings that accept int64 operands (class-index targets, embedding indices).
_INDEX_OPERANDS = {_cross_entropy, _cross_entropy_module, _embedding, _embedding_module}


# -- graph lowering -----------------------------------------------------------------

def _flatten(x):
    if isinstance(x, (tuple, list)):
        for item in x:
            yield from _flatten(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from _flatten(item)
    elif isinstance(x, slice):
        yield from _flatten((x.start, x.stop, x.step))
    else:
        yield x


def _check_shape(ctx, ir, concrete):
    if isinstance(ir, _ir.Value) and isinstance(concrete, torch.Tensor):
        if concrete.dtype != torch.float32 or ir.elem != "f32":
            ctx.fail("result of type %s (only float32 tensors are supported)" % concrete.dtype)
        want = tuple(concrete.shape)
        have = () if ir.is_scalar else ir.shape
        if have != want:
            raise AssertionError("mp.export: %s lowered to shape %s, PyTorch gives %s" % (
                ctx.op, have, want))
    elif isinstance(ir, (tuple, list)) and isinstance(concrete, (tuple, list)):
        for i, c in zip(ir, concrete):
            _check_shape(ctx, i, c)


class _GraphLowering:
    """Interprets one fx graph on the example inputs, emitting MLIR."""

    def __init__(self, program, module, graph, builder):
        self.program = program
        self.module = module
        self.graph = graph
        self.builder = builder

    def run(self, inputs):
        """inputs: list of (Value, example tensor) for the placeholders."""
        env_c, env_ir = {}, {}
        placeholders = iter(inputs)
        result = None
        for node in self.graph.nodes:
            if node.op == "placeholder":
                try:
                    value, example = next(placeholders)
                except StopIteration:
                    raise ExportError("the module's forward takes more inputs than were given "
                                      "(placeholder '%s')" % node.target)
                env_c[node], env_ir[node] = example, value
            elif node.op == "get_attr":
                env_c[node], env_ir[node] = self._get_attr(node)
            elif node.op == "output":
                result = (node.args[0], env_c, env_ir)
            else:
                env_c[node], env_ir[node] = self._call(node, env_c, env_ir)
        out_args, env_c, env_ir = result
        return (torch.fx.node.map_arg(out_args, lambda n: env_ir[n]),
                torch.fx.node.map_arg(out_args, lambda n: env_c[n]))

    def _get_attr(self, node):
        obj = self.module
        for part in node.target.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, nn.Parameter):
            name = self.program._canonical_name(obj, node.target)
            return obj, self.program._param(name, None)
        if isinstance(obj, torch.Tensor):
            return obj, _Const(obj)
        return obj, obj

    def _call(self, node, env_c, env_ir):
        op = _op_name(node, self.module)
        args_c = torch.fx.node.map_arg(node.args, lambda n: env_c[n])
        kwargs_c = torch.fx.node.map_arg(node.kwargs, lambda n: env_c[n])
        path = node.meta.get("mp_path", "")
        args_ir = torch.fx.node.map_arg(node.args, lambda n: env_ir[n])
        kwargs_ir = torch.fx.node.map_arg(node.kwargs, lambda n: env_ir[n])
        live = [x for x in _flatten((args_ir, kwargs_ir)) if isinstance(x, _ir.Value)]
        shape_query = ((node.op == "call_function" and node.target in _SHAPE_QUERIES) or
                       (node.op == "call_method" and node.target in _SHAPE_METHODS))
        if node.op == "call_module":
            lower = _MODULES.get(type(self.module.get_submodule(node.target)))
        elif node.op == "call_method":
            lower = _METHODS.get(node.target)
        else:
            lower = _FUNCTIONS.get(node.target)
        if (any(v.elem != "f32" for v in live) and not shape_query
                and lower not in _INDEX_OPERANDS):
            # Before PyTorch runs it, so that the error is this one.
            _Ctx(self, node, None, op).fail(
                "an operand is an int64 tensor; integer tensors are supported only as the "
                "indices of nn.Embedding / F.embedding and the class-index target of "
                "F.cross_entropy / nn.CrossEntropyLoss")
        try:
            if node.op == "call_module":
                sub = self.module.get_submodule(node.target)
                out = sub(*args_c, **kwargs_c)
            elif node.op == "call_method":
                out = getattr(args_c[0], node.target)(*args_c[1:], **kwargs_c)
            else:
                out = node.target(*args_c, **kwargs_c)
        except Exception as e:
            raise ExportError("%s%s failed in PyTorch on the example inputs: %s" % (
                op, " in module '%s'" % path if path else "", e), op=op, module_path=path) from e
        is_tensor_result = any(isinstance(x, torch.Tensor) for x in _flatten(out))
        ctx = _Ctx(self, node, out, op, args_c, kwargs_c)
        # A layer with parameters stays a lowered op on constant inputs (an
        # nn.Embedding of torch.arange positions), so that its parameters
        # stay arguments instead of being folded into a constant result.
        if not live and not (node.op == "call_module" and list(
                self.module.get_submodule(node.target).parameters())):
            # Depends on no input or parameter: fold (sizes, constants).
            if isinstance(out, torch.Tensor):
                return out, _Const(out)
            if is_tensor_result:
                ctx.fail("a constant tuple of tensors is not supported")
            return out, out
        if shape_query and not is_tensor_result:
            return out, out
        if node.op == "call_module":
            args_ir = (self.module.get_submodule(node.target),) + tuple(args_ir)
        if lower is None:
            ctx.fail("no lowering for this op (supported ops: see docs/python.md)")
        try:
            ir = lower(ctx, *args_ir, **kwargs_ir)
        except (ExportError, AssertionError):
            raise
        except TypeError as e:
            ctx.fail("unsupported arguments: %s" % e)
        _check_shape(ctx, ir, out)
        return out, ir


# -- programs ---------------------------------------------------------------------------

class Program:
    """An exported module: `mlir` (the text), `params` (the mp.param
    arguments, in order: mp name, PyTorch name, rows of the PyTorch tensor,
    shape) and the example shapes."""

    def __init__(self, module):
        self.module = module
        self.mlir = None
        self.functions = []
        self._params = OrderedDict()
        self._order = {}
        self._names = {}
        position = 0
        for name, p in module.named_parameters():
            self._names[id(p)] = name
            for suffix, _ in _split_parts(module, name):
                self._order[_mp_name(name, suffix)] = position
                position += 1
        self._counter = [0]

    @property
    def params(self):
        return sorted(self._params.values(), key=lambda s: s.order)

    def param_arrays(self, module=None):
        arrays = param_arrays(module if module is not None else self.module)
        return OrderedDict((s.mp_name, arrays[s.mp_name]) for s in self.params)

    def save_params(self, path, module=None):
        np.savez(path, **self.param_arrays(module))

    def _canonical_name(self, tensor, fallback):
        return self._names.get(id(tensor), fallback)

    def _param(self, torch_name, part):
        mp_name = _mp_name(torch_name, part)
        if mp_name not in self._order:
            raise ExportError("'%s' is not a parameter of the module" % mp_name)
        spec = self._params.get(mp_name)
        if spec is None:
            tensor = self.module.get_parameter(torch_name)
            rows = None
            shape = tuple(tensor.shape)
            if part is not None:
                parts = dict(_split_parts(self.module, torch_name))
                rows = parts[part]
                shape = (rows[1] - rows[0],) + shape[1:]
            spec = _ParamSpec(mp_name, torch_name, rows, shape, self._order[mp_name],
                              "%%p%d" % self._order[mp_name])
            self._params[mp_name] = spec
        return _ir.Value(spec.arg, spec.shape)

    def _lower(self, graph, inputs):
        builder = _ir.FuncBuilder(self._counter)
        lowering = _GraphLowering(self, self.module, graph, builder)
        ir, concrete = lowering.run(inputs)
        return builder, ir, concrete

    def _add_function(self, name, builder, inputs, results, attribute):
        self.functions.append((name, builder, inputs, results, attribute))

    def _finish(self):
        text = ["// Exported from PyTorch by mp.export (torch %s)." % torch.__version__]
        params = self.params
        for name, builder, inputs, results, attribute in self.functions:
            args = ["%s: %s" % (v.name, v.type) for v in inputs]
            args += ['%s: %s {mp.param = "%s"}' % (s.arg, _ir.tensor_type(s.shape), s.mp_name)
                     for s in params]
            types = [r.type for r in results]
            ret = types[0] if len(types) == 1 else "(%s)" % ", ".join(types)
            text.append("func.func @%s(%s) -> %s attributes {%s} {" % (
                name, ", ".join(args), ret, attribute))
            text.extend(builder.lines)
            text.append("  return %s : %s" % (", ".join(r.name for r in results), ", ".join(types)))
            text.append("}")
            text.append("")
        self.mlir = "\n".join(text)
        return self


def _as_inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    inputs = tuple(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or x.dtype not in _INPUT_ELEMENTS:
            raise ExportError("example input %d must be a float32 tensor (or an int64 tensor "
                              "of embedding indices or of class indices for cross entropy), "
                              "got %s" % (
                                  i, getattr(x, "dtype", type(x).__name__)))
    return inputs


_INPUT_ELEMENTS = {torch.float32: "f32", torch.int64: "i64"}


def _outputs(ir):
    values = [v for v in _flatten(ir)]
    if not values or not all(isinstance(v, _ir.Value) for v in values):
        raise ExportError("the module must return a tensor or a tuple of tensors that depend "
                          "on its inputs")
    if any(v.elem != "f32" for v in values):
        raise ExportError("the module returns an int64 tensor; only float32 results are "
                          "supported")
    return values


class _EvalMode:
    def __init__(self, module):
        self.module = module

    def __enter__(self):
        self.modes = [(m, m.training) for m in self.module.modules()]
        self.module.eval()

    def __exit__(self, *exc):
        for m, mode in self.modes:
            m.training = mode


def _aten_frontend():
    from . import aten
    return aten


def _check_frontend(frontend):
    if frontend not in ("fx", "aten"):
        raise ValueError("frontend=%r: expected 'fx' (module matching through torch.fx) or "
                         "'aten' (the ATen-level trace, python/mp/aten.py)" % (frontend,))
    return frontend == "aten"


def export_program(module, example_inputs, loss=None, frontend="fx", **aten_options):
    """frontend="aten": the ATen-level frontend (mp.aten.export_program;
    `filename=` names the file in the ops' locations).

    Exports `module` called on `example_inputs` (float32 tensors; their
    shapes, batch included, are fixed in the IR). An int64 tensor is
    accepted as the class-index target of F.cross_entropy /
    nn.CrossEntropyLoss: it becomes a `tensor<Bxi64>` argument that the
    loss turns into a one-hot f32 tensor inside the IR (such a loss runs
    through mp-opt, --mp-autodiff and run_mlir; mp-run and
    mp.runtime.Session take one-hot f32 labels, see export_training), and
    as the indices of nn.Embedding / F.embedding (made one-hot in the IR
    too; mp-run and Session take f32 inputs only).

    Returns a Program whose `mlir` holds `@predict(inputs..., params...)`
    marked `mp.predict` (or, when the module returns a scalar loss,
    `@loss(inputs..., params...) -> f32` marked `mp.loss`); with `loss`
    ("cross_entropy" or "mse") also
    `@loss(x, target, params...) -> f32` marked `mp.loss`, where the target
    has the output's shape (one-hot labels for cross entropy).
    """
    if _check_frontend(frontend):
        return _aten_frontend().export_program(module, example_inputs, loss=loss,
                                               **aten_options)
    if aten_options:
        raise TypeError("%s: options of frontend='aten' only" % ", ".join(sorted(aten_options)))
    inputs = _as_inputs(example_inputs)
    program = Program(module)
    with _EvalMode(module), torch.no_grad():
        graph = _trace(module, len(inputs))
        args = [(_ir.Value("%%x%d" % i, x.shape, _INPUT_ELEMENTS[x.dtype]), x)
                for i, x in enumerate(inputs)]
        builder, ir, concrete = program._lower(graph, args)
        results = _outputs(ir)
        if len(results) == 1 and results[0].is_scalar:
            name, attribute = "loss", "mp.loss"
        else:
            name, attribute = "predict", "mp.predict"
            if any(r.is_scalar for r in results):
                raise ExportError("a scalar result next to tensors is not supported")
        if loss is not None:
            if loss not in _LOSSES:
                raise ExportError("unknown loss %r (expected one of %s)" % (loss, sorted(_LOSSES)))
            if len(inputs) != 1 or len(results) != 1 or results[0].is_scalar:
                raise ExportError("a training export needs a module with one input and one "
                                  "tensor output")
            target = _ir.Value("%labels", results[0].shape)
            lbuilder, lir, _ = program._lower(graph, args)
            logits = _outputs(lir)[0]
            value = _LOSSES[loss](_Ctx.for_builder(lbuilder, "loss %r" % loss), logits, target)
            program._add_function("loss", lbuilder, [args[0][0], target], [value], "mp.loss")
        program._add_function(name, builder, [v for v, _ in args], results, attribute)
    program.example_outputs = concrete
    return program._finish()


def export(module, example_inputs, frontend="fx", **aten_options):
    """MLIR text of `module` applied to `example_inputs`: a function
    `@predict(inputs..., params...)` marked mp.predict (`@loss` marked
    mp.loss when the module returns a scalar loss) whose parameters are
    arguments marked `mp.param = "<qualified name>"`. See export_program."""
    return export_program(module, example_inputs, frontend=frontend, **aten_options).mlir


def export_training(module, example_x, num_classes=None, loss="cross_entropy", frontend="fx",
                    **aten_options):
    """MLIR text for `mp-run train`: `@loss(x, labels, params...) -> f32`
    (mp.loss; labels one-hot [B, num_classes] for cross entropy) and
    `@predict(x, params...)` (mp.predict) over the same parameters.
    frontend="aten" traces @loss in train mode (mp.aten)."""
    program = export_program(module, example_x, loss=loss, frontend=frontend, **aten_options)
    out = program.example_outputs
    if num_classes is not None and (out.dim() != 2 or out.shape[1] != num_classes):
        raise ExportError("the module's output %s is not [batch, %d]" % (tuple(out.shape), num_classes))
    return program.mlir
