"""A small builder for MLIR text on tensors (linalg, tensor, arith, math).

The exporter lowers every PyTorch op through these helpers, so the IR it
writes has one shape: named linalg ops where they exist (matmul,
batch_matmul, conv_2d_nchw_fchw, pooling_nchw_max/sum, transpose),
`linalg.generic` with projected-permutation maps for everything
elementwise or reducing (the exporter's slices read at an offset, `d1 + 2`,
or a constant index), `tensor.collapse_shape`/`expand_shape` for
reshapes. That is the form mp's analysis, autodiff and CPU lowering
recognise (see examples/*.mlir). Values are f32, except integer (i64)
class-index targets and embedding indices, which only the cross-entropy and
embedding lowerings read (they turn them into an f32 one-hot tensor inside
the IR).
"""

import struct

import numpy as np

F32_NEG_INF = "0xFF800000"


def f32_literal(value):
    """An exact f32 literal (hex bit pattern) for a Python number."""
    bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    return "0x%08X" % bits


# Element types the builder emits, with their little-endian numpy dtype.
ELEMENT_DTYPES = {"f32": "<f4", "i64": "<i8"}


def tensor_type(shape, elem="f32"):
    dims = "".join("%dx" % d for d in shape)
    return "tensor<%s%s>" % (dims, elem)


def dense_hex(array, elem="f32"):
    """`dense<"0x...">` holding an array's raw little-endian bytes (float32,
    or int64 for elem "i64")."""
    data = np.ascontiguousarray(array, dtype=ELEMENT_DTYPES[elem])
    return 'dense<"0x%s">' % data.tobytes().hex().upper()


def affine_map(num_dims, results):
    dims = ", ".join("d%d" % i for i in range(num_dims))
    res = ", ".join(r if isinstance(r, str) else "d%d" % r for r in results)
    return "affine_map<(%s) -> (%s)>" % (dims, res)


class Value:
    """An SSA value: a ranked tensor, or (shape None) a scalar, of element
    type `elem` ("f32"; "i64" only for class-index targets and embedding
    indices)."""

    def __init__(self, name, shape, elem="f32"):
        self.name = name
        self.shape = None if shape is None else tuple(int(d) for d in shape)
        self.elem = elem

    @property
    def is_scalar(self):
        return self.shape is None

    @property
    def rank(self):
        return len(self.shape)

    @property
    def type(self):
        return self.elem if self.shape is None else tensor_type(self.shape, self.elem)

    def __repr__(self):
        return "Value(%s : %s)" % (self.name, self.type)


class Body:
    """Scalar code inside a linalg.generic region (or at function level)."""

    def __init__(self, builder, indent):
        self.builder = builder
        self.indent = indent
        self.lines = []

    def _op(self, text):
        name = self.builder.fresh()
        self.lines.append("%s%s = %s" % (self.indent, name, text))
        return name

    def const(self, value):
        return self._op("arith.constant %s : f32" % f32_literal(value))

    def operand(self, x):
        """A Python number becomes a constant; an SSA name stays."""
        return x if isinstance(x, str) else self.const(x)

    def binary(self, op, a, b):
        return self._op("arith.%s %s, %s : f32" % (op, self.operand(a), self.operand(b)))

    def add(self, a, b):
        return self.binary("addf", a, b)

    def sub(self, a, b):
        return self.binary("subf", a, b)

    def mul(self, a, b):
        return self.binary("mulf", a, b)

    def div(self, a, b):
        return self.binary("divf", a, b)

    def max(self, a, b):
        return self.binary("maximumf", a, b)

    def min(self, a, b):
        return self.binary("minimumf", a, b)

    def unary(self, op, a):
        return self._op("%s %s : f32" % (op, self.operand(a)))

    def neg(self, a):
        return self.unary("arith.negf", a)

    def exp(self, a):
        return self.unary("math.exp", a)

    def log(self, a):
        return self.unary("math.log", a)

    def tanh(self, a):
        return self.unary("math.tanh", a)

    def erf(self, a):
        return self.unary("math.erf", a)

    def sqrt(self, a):
        return self.unary("math.sqrt", a)

    def rsqrt(self, a):
        return self.unary("math.rsqrt", a)

    def index(self, dim):
        """linalg.index of loop `dim`, cast to i64."""
        i = self._op("linalg.index %d : index" % dim)
        return self._op("arith.index_cast %s : index to i64" % i)

    def const_i64(self, value):
        return self._op("arith.constant %d : i64" % int(value))

    def cmpi(self, predicate, a, b):
        """arith.cmpi on i64 operands (an i1 result)."""
        return self._op("arith.cmpi %s, %s, %s : i64" % (predicate, a, b))

    def andi(self, a, b):
        return self._op("arith.andi %s, %s : i1" % (a, b))

    def select(self, cond, a, b):
        """f32 select on an i1 condition (Python numbers become constants)."""
        return self._op("arith.select %s, %s, %s : f32" % (cond, self.operand(a),
                                                            self.operand(b)))

    def sigmoid(self, a):
        # 1 / (1 + exp(-a)): ops autodiff and the AMP analysis know.
        return self.div(1.0, self.add(self.exp(self.neg(a)), 1.0))


class FuncBuilder:
    """Builds one func.func on tensors; `lines` is its body."""

    def __init__(self, counter):
        self._counter = counter  # shared per module: names unique in a module
        self.lines = []

    def fresh(self):
        self._counter[0] += 1
        return "%%v%d" % self._counter[0]

    def emit(self, text):
        self.lines.append("  " + text)

    # -- basic tensors ---------------------------------------------------

    def empty(self, shape):
        name = self.fresh()
        self.emit("%s = tensor.empty() : %s" % (name, tensor_type(shape)))
        return Value(name, shape)

    def scalar_const(self, value):
        name = self.fresh()
        self.emit("%s = arith.constant %s : f32" % (name, f32_literal(value)))
        return Value(name, None)

    def filled(self, shape, value):
        empty = self.empty(shape)
        scalar = self.scalar_const(value)
        name = self.fresh()
        self.emit("%s = linalg.fill ins(%s : f32) outs(%s : %s) -> %s" % (
            name, scalar.name, empty.name, empty.type, empty.type))
        return Value(name, shape)

    def constant(self, array, elem="f32"):
        """A dense constant (buffers, running statistics, data): f32, or
        i64 for an integer class-index target."""
        array = np.asarray(array, dtype=ELEMENT_DTYPES[elem])
        name = self.fresh()
        self.emit("%s = arith.constant %s : %s" % (name, dense_hex(array, elem),
                                                   tensor_type(array.shape, elem)))
        return Value(name, array.shape, elem)

    # -- linalg.generic --------------------------------------------------

    def generic(self, num_dims, inputs, out_shape, out_dims, body_fn,
                reduce_dims=(), init=None):
        """A linalg.generic over `num_dims` loops.

        inputs: list of (Value, dims) with dims the loop index of each of
        the Value's dimensions (or an affine expression as a string, such
        as "d1 + 2" or "0"), or Python numbers (constants in the body).
        out_dims: the loops indexing the output; loops in reduce_dims are
        reductions, all others parallel. init: the output's initial value
        (a Value) for reductions; otherwise a tensor.empty.
        body_fn(body, args, acc) returns the yielded scalar name; args are
        the scalar names of the inputs in order (Python numbers pass
        through), acc the output's block argument.
        """
        tensors = [(v, dims) for item in inputs if not isinstance(item, (int, float))
                   for v, dims in [item]]
        for value, dims in tensors:
            if len(dims) != value.rank:
                raise AssertionError("generic: dims %r for %r" % (dims, value))
        if init is None:
            init = self.empty(out_shape)
        body = Body(self, "    ")
        block_args = []
        scalar_args = []
        for item in inputs:
            if isinstance(item, (int, float)):
                scalar_args.append(float(item))
            else:
                arg = self.fresh()
                block_args.append((arg, item[0].elem))
                scalar_args.append(arg)
        acc = self.fresh()
        block_args.append((acc, init.elem))
        result = body.operand(body_fn(body, scalar_args, acc))
        maps = [affine_map(num_dims, dims) for _, dims in tensors]
        maps.append(affine_map(num_dims, out_dims))
        iters = ", ".join('"reduction"' if d in reduce_dims else '"parallel"'
                          for d in range(num_dims))
        name = self.fresh()
        ins = ""
        if tensors:
            ins = " ins(%s : %s)" % (", ".join(v.name for v, _ in tensors),
                                      ", ".join(v.type for v, _ in tensors))
        self.emit("%s = linalg.generic {indexing_maps = [%s], iterator_types = [%s]}%s outs(%s : %s) {" % (
            name, ", ".join(maps), iters, ins, init.name, init.type))
        self.emit("^bb0(%s):" % ", ".join("%s: %s" % a for a in block_args))
        self.lines.extend(body.lines)
        self.emit("  linalg.yield %s : %s" % (result, init.elem))
        self.emit("} -> %s" % init.type)
        return Value(name, out_shape, init.elem)

    def elementwise(self, out_shape, inputs, fn):
        """All-parallel generic; inputs as in generic()."""
        n = len(out_shape)
        return self.generic(n, inputs, out_shape, list(range(n)),
                            lambda b, args, acc: fn(b, *args))

    def reduce(self, x, dims, kind):
        """Sum or max of x over `dims` (the reduced dims are dropped)."""
        dims = sorted(d % x.rank for d in dims)
        kept = [d for d in range(x.rank) if d not in dims]
        out_shape = [x.shape[d] for d in kept]
        init = self.filled(out_shape, 0.0 if kind == "sum" else float("-inf"))
        if kind == "sum":
            fn = lambda b, args, acc: b.add(args[0], acc)
        else:
            fn = lambda b, args, acc: b.max(args[0], acc)
        return self.generic(x.rank, [(x, list(range(x.rank)))], out_shape, kept,
                            fn, reduce_dims=dims, init=init)

    # -- named ops ---------------------------------------------------------

    def matmul(self, a, b, transpose_b=False):
        """a [M, K] x b [K, N] (or b [N, K] with transpose_b) -> [M, N]."""
        m, k = a.shape
        n = b.shape[0] if transpose_b else b.shape[1]
        acc = self.filled((m, n), 0.0)
        name = self.fresh()
        maps = ""
        if transpose_b:
            maps = (" indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
                    "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]")
        self.emit("%s = linalg.matmul%s ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
            name, maps, a.name, b.name, a.type, b.type, acc.name, acc.type, acc.type))
        return Value(name, (m, n))

    def batch_matmul(self, a, b):
        """a [B, M, K] x b [B, K, N] -> [B, M, N]."""
        bsz, m, _ = a.shape
        n = b.shape[2]
        acc = self.filled((bsz, m, n), 0.0)
        name = self.fresh()
        self.emit("%s = linalg.batch_matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
            name, a.name, b.name, a.type, b.type, acc.name, acc.type, acc.type))
        return Value(name, (bsz, m, n))

    def transpose(self, x, perm):
        perm = [p % x.rank for p in perm]
        if perm == list(range(x.rank)):
            return x
        out_shape = [x.shape[p] for p in perm]
        out = self.empty(out_shape)
        name = self.fresh()
        self.emit("%s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [%s]" % (
            name, x.name, x.type, out.name, out.type, ", ".join(map(str, perm))))
        return Value(name, out_shape)

    def conv2d(self, x, w, stride, dilation):
        n, _, h, wd = x.shape
        f, _, kh, kw = w.shape
        oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        acc = self.filled((n, f, oh, ow), 0.0)
        name = self.fresh()
        self.emit("%s = linalg.conv_2d_nchw_fchw {dilations = dense<[%d, %d]> : tensor<2xi64>, "
                  "strides = dense<[%d, %d]> : tensor<2xi64>} ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
                      name, dilation[0], dilation[1], stride[0], stride[1], x.name, w.name,
                      x.type, w.type, acc.name, acc.type, acc.type))
        return Value(name, (n, f, oh, ow))

    def pool2d(self, x, kind, kernel, stride, dilation):
        """linalg.pooling_nchw_max (init -inf) or pooling_nchw_sum (init 0)."""
        n, c, h, wd = x.shape
        oh = (h - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = (wd - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        acc = self.filled((n, c, oh, ow), float("-inf") if kind == "max" else 0.0)
        window = self.empty(kernel)
        name = self.fresh()
        self.emit("%s = linalg.pooling_nchw_%s {dilations = dense<[%d, %d]> : tensor<2xi64>, "
                  "strides = dense<[%d, %d]> : tensor<2xi64>} ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
                      name, kind, dilation[0], dilation[1], stride[0], stride[1], x.name,
                      window.name, x.type, window.type, acc.name, acc.type, acc.type))
        return Value(name, (n, c, oh, ow))

    def pad(self, x, low, high, value):
        if not any(low) and not any(high):
            return x
        out_shape = [d + lo + hi for d, lo, hi in zip(x.shape, low, high)]
        cst = self.scalar_const(value)
        name = self.fresh()
        idx = ", ".join("%%%s_i%d: index" % (name[1:], i) for i in range(x.rank))
        self.emit("%s = tensor.pad %s low[%s] high[%s] {" % (
            name, x.name, ", ".join(map(str, low)), ", ".join(map(str, high))))
        self.emit("^bb0(%s):" % idx)
        self.emit("  tensor.yield %s : f32" % cst.name)
        self.emit("} : %s to %s" % (x.type, tensor_type(out_shape)))
        return Value(name, out_shape)

    # -- shapes --------------------------------------------------------------

    def _collapse(self, x, groups, out_shape):
        name = self.fresh()
        self.emit("%s = tensor.collapse_shape %s [%s] : %s into %s" % (
            name, x.name, ", ".join("[%s]" % ", ".join(map(str, g)) for g in groups),
            x.type, tensor_type(out_shape)))
        return Value(name, out_shape)

    def _expand(self, x, groups, out_shape):
        name = self.fresh()
        self.emit("%s = tensor.expand_shape %s [%s] output_shape [%s] : %s into %s" % (
            name, x.name, ", ".join("[%s]" % ", ".join(map(str, g)) for g in groups),
            ", ".join(map(str, out_shape)), x.type, tensor_type(out_shape)))
        return Value(name, out_shape)

    def reshape(self, x, shape):
        """Row-major reshape (PyTorch's view/reshape on a contiguous tensor)
        as collapse_shape and/or expand_shape."""
        shape = tuple(int(d) for d in shape)
        if int(np.prod(shape)) != int(np.prod(x.shape)):
            raise AssertionError("reshape %r to %r" % (x.shape, shape))
        if shape == x.shape:
            return x
        if x.rank == 0:
            return self._expand(x, [], shape)
        if len(shape) == 0:
            return self._collapse(x, [], shape)
        # Segments of equal product: old[i0:i1] <-> new[j0:j1].
        old, new = list(x.shape), list(shape)
        segments = []
        i = j = 0
        while i < len(old) and j < len(new):
            i0, j0 = i, j
            po, pn = old[i], new[j]
            i += 1
            j += 1
            while po != pn:
                if po < pn:
                    po *= old[i]
                    i += 1
                else:
                    pn *= new[j]
                    j += 1
            segments.append([i0, i, j0, j])
        # Leftover unit dims join the last segment.
        segments[-1][1] = len(old)
        segments[-1][3] = len(new)
        mid = [int(np.prod(old[s[0]:s[1]])) for s in segments]
        y = x
        if len(mid) != len(old):
            y = self._collapse(y, [list(range(s[0], s[1])) for s in segments], mid)
        if len(mid) != len(new):
            y = self._expand(y, [list(range(s[2], s[3])) for s in segments], shape)
        return y

    def extract_scalar(self, x):
        """The element of a 0-d tensor as an f32 scalar."""
        name = self.fresh()
        self.emit("%s = tensor.extract %s[] : %s" % (name, x.name, x.type))
        return Value(name, None)

    def scalar_binary(self, op, a, b):
        """Scalar arithmetic at function level (a, b Values or numbers)."""
        body = Body(self, "  ")
        an = a.name if isinstance(a, Value) else a
        bn = b.name if isinstance(b, Value) else b
        result = body.binary(op, an, bn)
        self.lines.extend(body.lines)
        return Value(result, None)
