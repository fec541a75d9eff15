#!/usr/bin/env python3
"""Run ONNX's backend test models through mp and compare with their outputs.

Usage:
  /usr/bin/python3 scripts/onnx_conformance.py (--all | --subset FILE) [options]

    --all                 every test of the selected folders
    --folders A,B         folders under the test data (default: node,
                          pytorch-converted,pytorch-operator,simple,real)
    --subset FILE         tests listed one a line as "<folder>/<test>", with
                          optional precisions ("node/test_relu bf16 f16"); # comments
    --filter REGEX        only tests whose "<folder>/<test>" matches (re.search)
    --precision LIST      precisions to run, of f32,bf16,f16 (default: f32)
    --jobs N              batches compiled and run at once (default: 2)
    --batch N             tests per module, one mlir-runner process (default: 16)
    --timeout S           limit for each tool process (default: 180)
    --require-subset      with --subset: exit 1 unless every listed test passes
                          in f32 (and in the precision its line names)
    --json OUT            write every result as JSON
    --verbose             list unsupported tests with their reasons too

The test data is ONNX's (Debian's libonnx-testdata,
/usr/share/libonnx-testdata/data/<folder>/<test>/model.onnx with
test_data_set_N/{input,output}_K.pb; MP_ONNX_TESTDATA overrides the root).

Each test:
  1. Import: `mp-translate --import-onnx model.onnx --params-as-arguments=false
     --onnx-function=tN --mlir-print-local-scope` (local scope: no #map
     aliases, so functions of several models concatenate into one module).
     If that exits non-zero and the model has integer graph inputs, it is
     retried once with those inputs turned into initializers holding
     test_data_set_0's values (mp compiles static shapes: shape, axes and
     pads inputs must be constants; so must Resize's float roi and scales
     and Upsample's scales, which are taken along); the test is then marked "needed
     constant inputs" and its other data sets are skipped. A second failure
     makes the test "unsupported", the reason being the importer's first
     error line; a crash or timeout of the importer makes it "failed".
     Sequence/optional graph inputs or outputs are "unsupported" without an
     import; a test without model.onnx (the "real" folder only names models
     to download) is "skipped".
  2. Run: for precision bf16/f16 the imported functions go through
     `mp-opt --mp-auto-mixed-precision=dtype=<p>` first. A driver @main passes
     every data set's inputs as dense constants (arguments matched to inputs
     by their mp.input name), calls the function and prints every
     result bit-exactly as i64 (printMemrefI64 of the element bits; the
     bits are read back with the ONNX type of the expected output). The
     module is lowered with `mp-opt --mp-lower-cpu=vectorize=0` and run by
     `mlir-runner -O0`. Up to --batch tests share one module and process;
     when a batch fails to lower, each test is lowered alone to find the
     culprits and the rest is rerun as a batch; when the runner crashes or
     times out, the batch's tests are rerun one by one.
  3. Compare: shapes must match (a zero-element result is compared by shape
     only); integer and bool outputs exactly; float outputs elementwise
     |got - expected| <= atol + rtol * |expected|, NaN matching NaN and an
     infinity only the same infinity, with

         f32   rtol 1e-3  atol 1e-7   (ONNX's default)
         f16   rtol 1e-2  atol 1e-3
         bf16  rtol 4e-2  atol 1e-2

     The table's "lowp-pass" column counts the passed tests of a mixed
     precision whose function --mp-auto-mixed-precision changed at all (some
     value in bf16/f16); the analysis keeps the others entirely in f32
     (integer and boolean ops, exp/log/softmax/norm chains without a
     product), so they pass trivially.

Tools: MP_BUILD_DIR (default <repo>/build) holds bin/mp-translate and
bin/mp-opt; MLIR_RUNNER and MLIR_LIB_DIR default to Debian's LLVM 22 (as in
python/mp/run_mlir.py, whose helpers this reuses). Tools run with
MP_CACHE=off.

Exit status: 0, or 1 with --require-subset when a listed test does not pass
(2 for usage errors).
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.environ.get("MP_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data")
FOLDERS = ["node", "pytorch-converted", "pytorch-operator", "simple", "real"]
PRECISIONS = ["f32", "bf16", "f16"]
TOLERANCES = {"f32": (1e-3, 1e-7), "f16": (1e-2, 1e-3), "bf16": (4e-2, 1e-2)}  # (rtol, atol)
STATUSES = ["passed", "failed", "unsupported", "skipped"]


def _load_mp_helpers():
    """mp.run_mlir and mp._ir without the package's __init__ (which imports
    torch): a bare package module stands in for `mp`."""
    if "mp" not in sys.modules:
        package = types.ModuleType("mp")
        package.__path__ = [os.path.join(ROOT, "python", "mp")]
        sys.modules["mp"] = package
    from mp import _ir, run_mlir  # noqa: E402
    return _ir, run_mlir


_ir, run_mlir = _load_mp_helpers()

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

# -- element types ------------------------------------------------------------------

TP = onnx.TensorProto
FLOAT_TYPES = {TP.FLOAT, TP.DOUBLE, TP.FLOAT16, TP.BFLOAT16}
INT_TYPES = {TP.INT8: 8, TP.UINT8: 8, TP.INT16: 16, TP.UINT16: 16, TP.INT32: 32,
             TP.UINT32: 32, TP.INT64: 64, TP.UINT64: 64, TP.BOOL: 1}
UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SIGNED = {8: "<i1", 16: "<i2", 32: "<i4", 64: "<i8"}
# MLIR float element types: (bit width, numpy dtype holding the raw bits' value; None: bf16).
MLIR_FLOATS = {"f32": (32, "<f4"), "f64": (64, "<f8"), "f16": (16, "<f2"), "bf16": (16, None)}
MLIR_INTS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
# _ir.ELEMENT_DTYPES has f32 and i64; the driver writes these too.
HEX_DTYPES = dict(_ir.ELEMENT_DTYPES, f64="<f8", f16="<f2", bf16="<u2", i8="<i1", i16="<i2",
                  i32="<i4")


def onnx_type_name(data_type):
    return TP.DataType.Name(data_type)


class TestError(Exception):
    """A test cannot go on; `status` is failed or unsupported."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def to_bf16_bits(values):
    """float values -> bf16 bit patterns (uint16), rounding to nearest even."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(values, dtype=np.float32)), np.uint16(0x7FC0), rounded)


def encode_argument(array, data_type, elem):
    """Raw little-endian values of a test input for an MLIR element type
    `elem`: float data is converted to the float type the function takes,
    integer and bool data must have the same width (bits are kept)."""
    if elem == "bf16" and data_type == TP.UINT16:  # bf16 test data is stored as its bits
        return np.asarray(array, dtype=np.uint16)
    if elem in MLIR_FLOATS:
        if data_type not in FLOAT_TYPES:
            raise TestError("failed", "argument type %s for ONNX %s data" % (elem, onnx_type_name(data_type)))
        if elem == "bf16":
            return to_bf16_bits(array)
        return np.asarray(array, dtype=MLIR_FLOATS[elem][1])
    if elem in MLIR_INTS:
        if INT_TYPES.get(data_type) != MLIR_INTS[elem]:
            raise TestError("failed", "argument type %s for ONNX %s data" % (elem, onnx_type_name(data_type)))
        if elem == "i1":
            return np.asarray(array, dtype=bool)
        return np.ascontiguousarray(array).view(SIGNED[MLIR_INTS[elem]])
    raise TestError("failed", "argument element type %s" % elem)


def _bool_list(array):
    if array.ndim == 0:
        return "true" if bool(array) else "false"
    return "[%s]" % ", ".join(_bool_list(a) for a in array)


def dense_literal(values, elem):
    """`dense<...>` for encoded values: hex bytes (as _ir.dense_hex), nested
    true/false lists for i1 (MLIR's i1 hex form is bit-packed), `dense<>`
    for zero elements."""
    if values.size == 0:
        return "dense<>"
    if elem == "i1":
        if values.all() or not values.any():
            return "dense<%s>" % ("true" if values.all() else "false")
        return "dense<%s>" % _bool_list(values)
    data = np.ascontiguousarray(values, dtype=HEX_DTYPES[elem])
    return 'dense<"0x%s">' % data.tobytes().hex().upper()


def decode_result(bits, elem, data_type):
    """Printed i64 bit patterns of a result -> numpy values: floats (as
    float64) read with the MLIR element type, integers and bools with the
    ONNX type of the expected output."""
    if elem in MLIR_FLOATS:
        if data_type not in FLOAT_TYPES:
            raise TestError("failed", "result type %s for ONNX %s output" % (elem, onnx_type_name(data_type)))
        width, dtype = MLIR_FLOATS[elem]
        raw = bits.astype(np.uint64)
        if elem == "bf16":
            return ((raw & 0xFFFF).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return (raw & np.uint64((1 << width) - 1) if width < 64 else raw).astype(
            UNSIGNED[width]).view(dtype).astype(np.float64)
    if elem in MLIR_INTS:
        width = INT_TYPES.get(data_type)
        if width != MLIR_INTS[elem]:
            raise TestError("failed", "result type %s for ONNX %s output" % (elem, onnx_type_name(data_type)))
        if width == 1:
            return (bits & 1).astype(bool)
        np_type = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[data_type]
        return bits.astype(np.uint64).astype(UNSIGNED[width]).view(np_type)
    raise TestError("failed", "result element type %s" % elem)


# -- tools --------------------------------------------------------------------------

def tool_env():
    env = dict(os.environ)
    env["MP_CACHE"] = "off"
    return env


class ToolFailure(Exception):
    """A tool exited non-zero, crashed or timed out; `reason` is one line."""

    def __init__(self, reason, stderr=""):
        super().__init__(reason)
        self.reason = reason
        self.stderr = stderr


def first_error(stderr):
    """The first "error:" line of a tool's stderr without its location
    prefix (or its last line)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in lines:
        m = re.search(r"\berror:\s*(.*)", line, re.I)
        if m:
            return m.group(1)
    return lines[-1][:300] if lines else ""


def describe_exit(code):
    if code < 0:
        try:
            return "crashed (%s)" % signal.Signals(-code).name
        except ValueError:
            return "crashed (signal %d)" % -code
    return "exit code %d" % code


def run_tool(cmd, timeout, stdin=None):
    """Runs a tool; returns stdout or raises ToolFailure."""
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                              env=tool_env(), errors="replace")
    except subprocess.TimeoutExpired:
        raise ToolFailure("timeout (%d s)" % timeout)
    if proc.returncode != 0:
        message = first_error(proc.stderr)
        reason = describe_exit(proc.returncode) if proc.returncode < 0 or not message else message
        if proc.returncode < 0 and message:
            reason += ": " + message
        raise ToolFailure(reason, proc.stderr)
    return proc.stdout


def supported_ops():
    """`mp-translate --list-onnx-ops`, or None where the tool lacks it."""
    try:
        out = run_tool([run_mlir.tool("mp-translate"), "--list-onnx-ops"], timeout=60)
    except (ToolFailure, OSError):
        return None
    return {line.strip() for line in out.splitlines() if line.strip()}


# -- tests and their data -------------------------------------------------------------

class Test:
    """One backend test and its results per precision."""

    def __init__(self, folder, name, precisions):
        self.folder = folder
        self.name = name
        self.dir = os.path.join(TESTDATA, folder, name)
        self.precisions = list(precisions)
        self.required = set()  # precisions --require-subset checks
        self.status = {}
        self.reason = {}
        self.needed_constant_inputs = False
        self.skipped_data_sets = 0
        self.unsupported_ops = []
        # precision -> whether --mp-auto-mixed-precision put any op of the
        # test's function in that precision (else it ran all in f32)
        self.low_precision = {}

    @property
    def id(self):
        return "%s/%s" % (self.folder, self.name)

    def finish_all(self, status, reason):
        for p in self.precisions:
            self.finish(p, status, reason)

    def finish(self, precision, status, reason=""):
        self.status[precision] = status
        self.reason[precision] = reason

    def to_json(self):
        return {"folder": self.folder, "name": self.name, "status": self.status,
                "reason": self.reason, "needed_constant_inputs": self.needed_constant_inputs,
                "skipped_data_sets": self.skipped_data_sets,
                "unsupported_ops": self.unsupported_ops,
                "low_precision": self.low_precision}


def discover(folders, precisions, name_filter):
    """Every test directory of `folders`, sorted."""
    tests = []
    for folder in folders:
        if not os.path.isdir(os.path.join(TESTDATA, folder)):
            raise SystemExit("no test folder %s" % os.path.join(TESTDATA, folder))
        for path in sorted(glob.glob(os.path.join(TESTDATA, folder, "test_*"))):
            test = Test(folder, os.path.basename(path), precisions)
            if not name_filter or re.search(name_filter, test.id):
                tests.append(test)
    return tests


def read_subset(path, precisions, name_filter):
    """Tests listed in a subset file; a line's optional precision is added to
    the test's precisions and to the ones --require-subset checks."""
    tests, missing = [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if "/" not in line[0] or any(p not in PRECISIONS for p in line[1:]):
                raise SystemExit("%s:%d: expected '<folder>/<test> [bf16] [f16]'" % (path, number))
            folder, name = line[0].split("/", 1)
            extra = line[1:]
            test = Test(folder, name, list(dict.fromkeys(precisions + ["f32"] + extra)))
            test.required = {"f32"} | set(extra)
            if name_filter and not re.search(name_filter, test.id):
                continue
            (tests if os.path.isdir(test.dir) else missing).append(test)
    return tests, missing


def _read_proto(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor


def load_data_sets(test_dir, input_names):
    """[(inputs {name: TensorProto}, outputs [TensorProto])] per data set;
    unnamed input tensors take the graph input names in order."""
    sets = []
    for set_dir in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")),
                          key=lambda d: int(d.rsplit("_", 1)[1])):
        inputs = {}
        for k, path in enumerate(_pb_files(set_dir, "input")):
            tensor = _read_proto(path)
            name = tensor.name or (input_names[k] if k < len(input_names) else "input_%d" % k)
            inputs[name] = tensor
        sets.append((inputs, [_read_proto(p) for p in _pb_files(set_dir, "output")]))
    return sets


def _pb_files(set_dir, kind):
    """input_K.pb or output_K.pb files of a data set, by K."""
    return sorted(glob.glob(os.path.join(set_dir, kind + "_*.pb")),
                  key=lambda p: int(p.rsplit("_", 1)[1][:-3]))


def graph_inputs(model):
    """Graph inputs that are not initializers (older models list those too)."""
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def non_tensor_io(model):
    return [v.name for v in list(graph_inputs(model)) + list(model.graph.output)
            if v.type.WhichOneof("value") != "tensor_type"]


def model_op_types(graph):
    """Op types of a graph's nodes and of their subgraphs ("domain:Op" outside
    the default domain)."""
    ops = set()
    for node in graph.node:
        ops.add(node.op_type if node.domain in ("", "ai.onnx") else "%s:%s" % (node.domain, node.op_type))
        for attr in node.attribute:
            subgraphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
            for sub in subgraphs:
                ops |= model_op_types(sub)
    return ops


# Float inputs that set an output shape: (op type, input positions).
SHAPE_FLOAT_INPUTS = {"Resize": (1, 2), "Upsample": (1,)}


def with_constant_inputs(model, inputs):
    """A copy of the model whose integer graph inputs, and float graph inputs
    that are Resize's roi/scales or Upsample's scales, are initializers
    holding `inputs`' values (None when it has no such inputs)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    shape_floats = {n.input[k] for n in model.graph.node
                    for k in SHAPE_FLOAT_INPUTS.get(n.op_type, ()) if k < len(n.input)}
    names = [i.name for i in graph_inputs(model)
             if i.type.WhichOneof("value") == "tensor_type"
             and ((i.type.tensor_type.elem_type in INT_TYPES
                   and i.type.tensor_type.elem_type != TP.BOOL)
                  or (i.type.tensor_type.elem_type in FLOAT_TYPES and i.name in shape_floats))
             and i.name in inputs]
    if not names:
        return None
    for name in names:
        tensor = TP()
        tensor.CopyFrom(inputs[name])
        tensor.name = name
        model.graph.initializer.append(tensor)
    if model.ir_version >= 4:  # older IR versions list initializers among the inputs
        kept = [i for i in model.graph.input if i.name not in names]
        del model.graph.input[:]
        model.graph.input.extend(kept)
    return model


# -- importing --------------------------------------------------------------------------

class Imported:
    """A test's imported function, ready for the driver."""

    def __init__(self, test, func, text, args, results, data_sets):
        self.test = test
        self.func = func
        # body: the function(s) without the module wrapper, or the whole
        # module where it holds more (such a test runs alone)
        self.args = args          # [(type, onnx input name)]
        self.results = results    # [type]
        self.data_sets = data_sets
        self.mergeable = module_body(text) is not None
        self.body = module_body(text) if self.mergeable else text
        self.symbols = set(re.findall(
            r"^\s*(?:func\.func|memref\.global|llvm\.func|llvm\.mlir\.global|ml_program\.global)"
            r"\s+(?:(?:private|public|nested)\s+)?@([\w$.-]+)", self.body, re.M))


def import_model(path, func, timeout):
    return run_tool([run_mlir.tool("mp-translate"), "--import-onnx", path,
                     "--params-as-arguments=false", "--onnx-function=" + func,
                     "--mlir-print-local-scope", "--mlir-print-op-on-diagnostic=false"],
                    timeout=timeout)


def try_import(path, func, timeout):
    """(module text, None) or (None, ToolFailure)."""
    try:
        return import_model(path, func, timeout), None
    except ToolFailure as failure:
        return None, failure


def module_body(text):
    """The ops inside `module { ... }`, or None where the text has more than
    a bare module (attributes, resources, aliases) and cannot be merged."""
    text = text.strip()
    m = re.match(r"module\s*\{\n(.*)\}$", text, re.S)
    if not m or "{-#" in text:
        return None
    return m.group(1)


def function_signature(text, func):
    """([(arg type, mp.input name or None)], [result types]) of @func."""
    m = re.search(r"func\.func\s+(?:\w+\s+)?@%s\(" % re.escape(func), text)
    if not m:
        raise TestError("failed", "no function @%s in the imported module" % func)
    i, depth = m.end(), 1
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    args = []
    for item in run_mlir._split_top(text[m.end():i - 1]):
        name = re.search(r'mp\.input\s*=\s*"([^"]*)"', item)
        args.append((run_mlir._strip_attrs(item.split(":", 1)[1]), name and name.group(1)))
    _, results = run_mlir.signature(text, func)
    return args, results


def tensor_type(type_text):
    """(shape, element type) of a static `tensor<...>` type."""
    m = re.fullmatch(r"tensor<((?:\d+x)*)(\w+)>", type_text)
    if not m:
        raise TestError("failed", "type %s (only static tensors)" % type_text)
    return tuple(int(d) for d in m.group(1).split("x")[:-1]), m.group(2)


def prepare(test, func, timeout):
    """Imports a test (retrying with constant integer inputs); returns an
    Imported, or finishes the test and returns None."""
    model_path = os.path.join(test.dir, "model.onnx")
    if not os.path.exists(model_path):
        test.finish_all("skipped", "no model.onnx (a model to download)")
        return None
    try:
        model = onnx.load(model_path)
    except Exception as e:  # noqa: BLE001 - a broken file is a failed test
        test.finish_all("failed", "cannot read model.onnx: %s" % e)
        return None
    odd = non_tensor_io(model)
    if odd:
        test.finish_all("unsupported", "sequence input/output (%s)" % ", ".join(odd))
        return None
    data_sets = load_data_sets(test.dir, [i.name for i in graph_inputs(model)])
    if not data_sets:
        test.finish_all("skipped", "no test data sets")
        return None
    text, failure = try_import(model_path, func, timeout)
    if failure is not None:
        constant = with_constant_inputs(model, data_sets[0][0])
        if constant is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "model.onnx")
                onnx.save(constant, path)
                text, failure = try_import(path, func, timeout)
            if failure is None:
                test.needed_constant_inputs = True
                test.skipped_data_sets = len(data_sets) - 1
                data_sets = data_sets[:1]
    if failure is not None:
        # A crash or timeout is the importer's bug; an error names what it lacks.
        crashed = failure.reason.startswith(("crashed", "timeout")) or not failure.stderr.strip()
        test.finish_all("failed" if crashed else "unsupported",
                        ("import " + failure.reason) if crashed else failure.reason)
        return None
    args, results = function_signature(text, func)
    return Imported(test, func, text, args, results, data_sets)


# -- the driver -------------------------------------------------------------------------

def driver(items_sigs):
    """@main for (Imported, args, results) triples: every data set's call,
    each result printed as i64 bits. Returns (text, [(item, set index,
    [result index printed])]) in print order."""
    lines = ["func.func private @printMemrefI64(tensor<*xi64>)", "func.func @main() {"]
    order = []
    for n, (item, args, results) in enumerate(items_sigs):
        for s, (inputs, outputs) in enumerate(item.data_sets):
            p = "%%t%d_%d_" % (n, s)
            names = []
            for i, (type_text, onnx_name) in enumerate(args):
                shape, elem = tensor_type(type_text)
                if onnx_name is None or onnx_name not in inputs:
                    raise TestError("failed", "argument %d (%s) has no test input" % (i, onnx_name))
                tensor = inputs[onnx_name]
                array = numpy_helper.to_array(tensor)
                if tuple(array.shape) != shape:
                    raise TestError("failed", "argument %s is %s, its test input has shape %s" % (
                        onnx_name, type_text, list(array.shape)))
                values = encode_argument(array, tensor.data_type, elem)
                lines.append("  %sa%d = arith.constant %s : %s" % (p, i, dense_literal(values, elem),
                                                                type_text))
                names.append("%sa%d" % (p, i))
            if len(outputs) != len(results):
                raise TestError("failed", "%d results for %d expected outputs" % (len(results),
                                                                                 len(outputs)))
            res = ["%sr%d" % (p, i) for i in range(len(results))]
            call = "func.call @%s(%s) : (%s) -> (%s)" % (item.func, ", ".join(names), ", ".join(
                t for t, _ in args), ", ".join(results))
            lines.append("  " + (", ".join(res) + " = " if res else "") + call)
            printed = []
            for i, t in enumerate(results):
                shape, elem = tensor_type(t)
                if 0 in shape:
                    continue  # compared by shape only
                lines += _print_result(res[i], "%sp%d" % (p, i), shape, elem, t)
                printed.append(i)
            order.append((item, s, printed))
    lines += ["  return", "}"]
    return "\n".join(lines), order


def _print_result(value, p, shape, elem, type_text):
    """Lines converting a result to i64 element bits and printing them."""
    out = []
    if not shape:
        out.append("  %sx = tensor.expand_shape %s [] output_shape [1] : %s into tensor<1x%s>" % (
            p, value, type_text, elem))
        value, shape, type_text = p + "x", (1,), "tensor<1x%s>" % elem
    to_i64 = {"f32": ["arith.bitcast %s : f32 to i32", "arith.extui %s : i32 to i64"],
              "f64": ["arith.bitcast %s : f64 to i64"],
              "f16": ["arith.bitcast %s : f16 to i16", "arith.extui %s : i16 to i64"],
              "bf16": ["arith.bitcast %s : bf16 to i16", "arith.extui %s : i16 to i64"],
              "i1": ["arith.extui %s : i1 to i64"], "i8": ["arith.extui %s : i8 to i64"],
              "i16": ["arith.extui %s : i16 to i64"], "i32": ["arith.extui %s : i32 to i64"],
              "i64": []}
    if elem not in to_i64:
        raise TestError("failed", "result element type %s" % elem)
    it = "tensor<%sxi64>" % "x".join(map(str, shape))
    ident = _ir.affine_map(len(shape), range(len(shape)))
    out += ["  %se = tensor.empty() : %s" % (p, it),
            "  %sb = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]} "
            "ins(%s : %s) outs(%se : %s) {" % (p, ident, ident, ", ".join(['"parallel"'] * len(shape)),
                                               value, type_text, p, it),
            "  ^bb0(%sin: %s, %sout: i64):" % (p, elem, p)]
    current = p + "in"
    for k, op in enumerate(to_i64[elem]):
        out.append("    %sc%d = %s" % (p, k, op % current))
        current = "%sc%d" % (p, k)
    out += ["    linalg.yield %s : i64" % current,
            "  } -> %s" % it,
            "  %su = tensor.cast %sb : %s to tensor<*xi64>" % (p, p, it),
            "  func.call @printMemrefI64(%su) : (tensor<*xi64>) -> ()" % p]
    return out


_HEADER = run_mlir._HEADER  # "Unranked Memref ... sizes = [..]"


def parse_printed(text):
    """[int64 array] per printed memref, in order."""
    blocks = [b for b in re.split(r"^(?=Unranked Memref)", text, flags=re.M)
              if b.startswith("Unranked Memref")]
    out = []
    for block in blocks:
        header, _, data = block.partition("\n")
        sizes = [int(s) for s in _HEADER.match(header).group(1).replace(" ", "").split(",") if s]
        values = np.array([int(v) for v in re.findall(r"-?\d+", data)], dtype=np.int64)
        if values.size != int(np.prod(sizes)):
            raise ToolFailure("printed result has %d values for sizes %s" % (values.size, sizes))
        out.append(values.reshape(sizes))
    return out


# -- comparing -----------------------------------------------------------------------------

def compare(got, expected, is_float, rtol, atol):
    """None where `got` matches `expected`, else a one-line reason."""
    if got.shape != expected.shape:
        return "shape %s, expected %s" % (list(got.shape), list(expected.shape))
    if got.size == 0:
        return None
    if not is_float:
        bad = got != expected
        if not bad.any():
            return None
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        return "%d of %d values differ, first at %s: got %s, expected %s" % (
            int(bad.sum()), got.size, list(first), got[first], expected[first])
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - e)
        finite = np.isfinite(e) & np.isfinite(g)
        ok = np.where(np.isnan(e), np.isnan(g),
                      np.where(np.isinf(e), g == e, np.isfinite(g) & (err <= atol + rtol * np.abs(e))))
    if ok.all():
        return None
    bad = ~ok
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    max_abs = float(err[finite].max()) if finite.any() else float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = err[finite & (e != 0)] / np.abs(e[finite & (e != 0)])
    max_rel = float(rel.max()) if rel.size else float("nan")
    return "%d of %d values differ, first at %s: got %.9g, expected %.9g; max abs err %.3g, " \
           "max rel err %.3g" % (int(bad.sum()), got.size, list(first), g[first], e[first],
                                 max_abs, max_rel)


def check_outputs(item, set_index, printed_results, results, precision):
    """None where a data set's results match its expected outputs, else a reason."""
    rtol, atol = TOLERANCES[precision]
    outputs = item.data_sets[set_index][1]
    for i, (type_text, tensor) in enumerate(zip(results, outputs)):
        shape, elem = tensor_type(type_text)
        if tensor.data_type == TP.STRING:
            return "output %d: string output" % i
        expected = numpy_helper.to_array(tensor)
        data_type = tensor.data_type
        if elem == "bf16" and data_type == TP.UINT16:  # bf16 test data is stored as its bits
            expected = (expected.astype(np.uint32) << 16).view(np.float32)
            data_type = TP.BFLOAT16
        if i not in printed_results:
            got = np.zeros(shape)
        else:
            got = decode_result(printed_results[i], elem, data_type).reshape(shape)
        reason = compare(got, expected, data_type in FLOAT_TYPES, rtol, atol)
        if reason:
            where = " (data set %d)" % set_index if len(item.data_sets) > 1 else ""
            return "output %d%s: %s" % (i, where, reason)
    return None


# -- running batches ------------------------------------------------------------------------

def function_text(text, func):
    """The text of func.func @func in a module (up to the next function)."""
    m = re.search(r"func\.func\s+(?:\w+\s+)?@%s\(" % re.escape(func), text)
    if not m:
        return ""
    end = text.find("func.func", m.end())
    return text[m.start():end if end >= 0 else len(text)]


def uses_type(text, elem):
    """Whether MLIR text has a value of element type `elem` (bf16, f16)."""
    return re.search(r"(?<![\w.])%s(?![\w])" % re.escape(elem), text) is not None


def insert_into_module(text, ops):
    """Module text with `ops` added at the end of its body (before its
    closing brace and any trailing `{-# ... #-}` resource section)."""
    resources = text.find("{-#")
    head, tail = (text, "") if resources < 0 else (text[:resources], text[resources:])
    head = head.rstrip()
    if not head.endswith("}"):
        raise ToolFailure("lowering failed: unexpected module text")
    return head[:-1] + ops + "\n}\n" + tail


class Runner:
    """Compiles and runs groups of imported tests in one precision."""

    def __init__(self, precision, timeout, tmp):
        self.precision = precision
        self.timeout = timeout
        self.tmp = tmp

    def _mp_opt(self, text, *options):
        fd, path = tempfile.mkstemp(suffix=".mlir", dir=self.tmp)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            return run_tool([run_mlir.tool("mp-opt"), path, "--mlir-print-op-on-diagnostic=false"]
                            + list(options), timeout=self.timeout)
        finally:
            os.unlink(path)

    def compile(self, items):
        """Lowered module (LLVM dialect) for `items` and the print order.
        Raises ToolFailure (reason prefixed with the stage) or TestError."""
        if len(items) == 1 and not items[0].mergeable:
            text = items[0].body
        else:
            text = "module {\n%s\n}\n" % "\n".join(item.body for item in items)
        if self.precision != "f32":
            try:
                text = self._mp_opt(text, "--mp-auto-mixed-precision=dtype=%s" % self.precision)
            except ToolFailure as e:
                raise ToolFailure("mp-auto-mixed-precision failed: " + e.reason)
        if self.precision != "f32":
            for item in items:
                item.test.low_precision[self.precision] = uses_type(
                    function_text(text, item.func), self.precision)
        sigs = []
        for item in items:
            args, results = function_signature(text, item.func)
            if len(args) != len(item.args):
                raise TestError("failed", "@%s has %d arguments after %s, %d imported" % (
                    item.func, len(args), "mp-auto-mixed-precision", len(item.args)))
            sigs.append((item, [(t, name) for (t, _), (_, name) in zip(args, item.args)], results))
        main, order = driver(sigs)
        module = insert_into_module(text, main)
        try:
            lowered = self._mp_opt(module, "--mp-lower-cpu=vectorize=0")
        except ToolFailure as e:
            raise ToolFailure("lowering failed: " + e.reason)
        return lowered, order, {id(s[0]): s[2] for s in sigs}

    def execute(self, lowered):
        libs = run_mlir._runner_libs()
        out = run_tool([run_mlir.tool("mlir-runner"), "-e", "main", "-entry-point-result=void",
                        "-O0", "-shared-libs=" + ",".join(libs)], timeout=self.timeout, stdin=lowered)
        return parse_printed(out)

    def run_group(self, items):
        """Compiles, runs and checks `items`, finishing their tests."""
        items = [item for item in items if self._driver_ok(item)]
        if not items:
            return
        try:
            lowered, order, results = self.compile(items)
        except (ToolFailure, TestError) as e:
            if len(items) == 1:
                self._fail(items[0], e)
            else:
                self._isolate_compile_failures(items)
            return
        try:
            printed = self.execute(lowered)
            count = sum(len(indices) for _, _, indices in order)
            if len(printed) != count:
                raise ToolFailure("printed %d results, expected %d" % (len(printed), count))
        except ToolFailure as e:
            if len(items) == 1:
                reason = e.reason if e.reason.startswith(("timeout", "printed")) else "run " + e.reason
                self._fail(items[0], ToolFailure(reason))
            else:  # a crash or timeout: find whose, one by one
                for item in items:
                    self.run_group([item])
            return
        self._check(items, order, printed, results)

    def _driver_ok(self, item):
        """Whether the driver can be built for the imported signature (a
        cheap check that keeps a test with unusable data out of a batch)."""
        try:
            driver([(item, item.args, item.results)])
            return True
        except TestError as e:
            self._fail(item, e)
            return False

    def _isolate_compile_failures(self, items):
        """After a batch failed to compile: compiles each test alone,
        failing those that do not compile, and reruns the rest as a batch
        (one by one where they compile alone but not together)."""
        good = []
        for item in items:
            try:
                self.compile([item])
                good.append(item)
            except (ToolFailure, TestError) as e:
                self._fail(item, e)
        if len(good) < len(items):
            if good:
                self.run_group(good)
        else:
            for item in good:
                self.run_group([item])

    def _check(self, items, order, printed, results):
        """Compares the printed results with the expected outputs."""
        reasons = {}
        k = 0
        for item, s, indices in order:
            values = dict(zip(indices, printed[k:k + len(indices)]))
            k += len(indices)
            if reasons.get(id(item)):
                continue  # an earlier data set failed already
            try:
                reasons[id(item)] = check_outputs(item, s, values, results[id(item)], self.precision)
            except TestError as e:
                reasons[id(item)] = e.reason
        for item in items:
            reason = reasons.get(id(item))
            item.test.finish(self.precision, "failed" if reason else "passed", reason or "")

    def _fail(self, item, error):
        status = getattr(error, "status", "failed")
        item.test.finish(self.precision, status, error.reason)


def merge_groups(items):
    """Splits items into groups whose symbols do not collide; items whose
    module could not be reduced to a body run alone."""
    groups = []
    for item in items:
        if not item.mergeable:
            groups.append(([item], None))
            continue
        for group, symbols in groups:
            if symbols is not None and not (symbols & item.symbols):
                group.append(item)
                symbols |= item.symbols
                break
        else:
            groups.append(([item], set(item.symbols)))
    return [g for g, _ in groups]


def run_batch(tests, timeout):
    """Imports, runs and checks a batch of tests in each of their precisions."""
    with tempfile.TemporaryDirectory(prefix="onnx-conformance-") as tmp:
        items = []
        for n, test in enumerate(tests):
            try:
                item = prepare(test, "t%d" % n, timeout)
            except TestError as e:
                test.finish_all(e.status, e.reason)
                continue
            except Exception as e:  # noqa: BLE001 - a broken test must not stop the run
                test.finish_all("failed", "error reading the test: %s: %s" % (type(e).__name__, e))
                continue
            if item is not None:
                items.append(item)
        for precision in PRECISIONS:
            chosen = [item for item in items if precision in item.test.precisions]
            runner = Runner(precision, timeout, tmp)
            for group in merge_groups(chosen):
                runner.run_group(group)


# -- reporting ------------------------------------------------------------------------------

def summary_table(tests, precisions):
    """Lines of the per folder and precision table."""
    lines = ["%-20s %-5s %7s %7s %12s %8s %6s %10s" % (
        "folder", "prec", "passed", "failed", "unsupported", "skipped", "total",
        "lowp-pass")]
    totals = collections.defaultdict(collections.Counter)
    folders = list(dict.fromkeys(t.folder for t in tests))
    for folder in folders + ["all"]:
        for p in precisions:
            if folder == "all":
                count = totals[p]
            else:
                count = collections.Counter(t.status.get(p) for t in tests
                                            if t.folder == folder and p in t.precisions)
                count["lowp"] = sum(1 for t in tests if t.folder == folder and
                                    t.status.get(p) == "passed" and t.low_precision.get(p))
                totals[p].update(count)
            total = sum(count[s] for s in STATUSES)
            if not total:
                continue
            lines.append("%-20s %-5s %7d %7d %12d %8d %6d %10s" % (
                folder, p, count["passed"], count["failed"], count["unsupported"], count["skipped"],
                total, "-" if p == "f32" else count["lowp"]))
    return lines


def operator_line(tests, known):
    """"operators behind unsupported tests: Op (count), ...", by count."""
    counts = collections.Counter()
    none = 0
    for t in tests:
        if "unsupported" in t.status.values():
            counts.update(t.unsupported_ops)
            none += not t.unsupported_ops
    if known is None:
        return ["operators behind unsupported tests: unknown (mp-translate has no --list-onnx-ops)"]
    text = ", ".join("%s (%d)" % (op, n) for op, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))
    return ["operators behind unsupported tests: " + (text or "none"),
            "unsupported tests whose operators are all supported: %d" % none]


def report(tests, precisions, known, verbose):
    """The text report: tables, failed (and with verbose unsupported) tests,
    operators."""
    lines = ["tolerances: " + ", ".join("%s rtol %g atol %g" % (p, *TOLERANCES[p]) for p in precisions),
             ""] + summary_table(tests, precisions)
    for title, status in [("failed", "failed")] + ([("unsupported", "unsupported")] if verbose else []):
        rows = ["  %s [%s]: %s%s" % (t.id, p, t.reason[p],
                                     " (needed constant inputs)" if t.needed_constant_inputs else "")
                for t in tests for p in t.precisions if t.status.get(p) == status]
        lines += ["", "%s (%d):" % (title, len(rows))] + rows
    constant = [t for t in tests if t.needed_constant_inputs]
    lines += ["", "needed constant inputs: %d tests (%d other data sets skipped)" % (
        len(constant), sum(t.skipped_data_sets for t in constant))]
    lines += [""] + operator_line(tests, known)
    return "\n".join(lines)


def check_required(tests, missing):
    """Lines naming listed tests that do not pass where --require-subset
    asks (empty when all pass)."""
    bad = ["  %s: not found" % t.id for t in missing]
    for t in tests:
        for p in sorted(t.required):
            if t.status.get(p) != "passed":
                bad.append("  %s [%s]: %s %s" % (t.id, p, t.status.get(p), t.reason.get(p, "")))
    return bad


# -- main ------------------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every test of the folders")
    parser.add_argument("--folders", default=",".join(FOLDERS))
    parser.add_argument("--subset", help='file of "<folder>/<test> [bf16|f16]" lines')
    parser.add_argument("--filter", help="regex on <folder>/<test>")
    parser.add_argument("--precision", default="f32", help="of f32,bf16,f16")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--timeout", type=int, default=180, help="seconds per tool process")
    parser.add_argument("--require-subset", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if not args.all and not args.subset:
        parser.error("give --all or --subset FILE")
    if args.require_subset and not args.subset:
        parser.error("--require-subset needs --subset")
    args.precisions = [p for p in args.precision.split(",") if p]
    args.folder_list = [f for f in args.folders.split(",") if f]
    if any(p not in PRECISIONS for p in args.precisions):
        parser.error("--precision takes f32, bf16, f16")
    if args.jobs < 1 or args.batch < 1:
        parser.error("--jobs and --batch must be positive")
    return args


def select_tests(args):
    if args.subset:
        return read_subset(args.subset, args.precisions, args.filter)
    return discover(args.folder_list, args.precisions, args.filter), []


def run_all(tests, jobs, batch_size, timeout):
    """Runs the tests in batches on a thread pool, progress on stderr."""
    batches = [tests[i:i + batch_size] for i in range(0, len(tests), batch_size)]
    done = [0]
    lock = threading.Lock()
    start = time.time()

    def work(batch):
        began = time.time()
        run_batch(batch, timeout)
        counts = collections.Counter(s for t in batch for s in t.status.values())
        with lock:
            done[0] += 1
            print("[%d/%d] %s .. %s: %s (%.1f s, %.0f s total)" % (
                done[0], len(batches), batch[0].id, batch[-1].id,
                ", ".join("%d %s" % (counts[s], s) for s in STATUSES if counts[s]),
                time.time() - began, time.time() - start), file=sys.stderr, flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(work, b) for b in batches]:
            future.result()


def main(argv=None):
    args = parse_args(argv)
    tests, missing = select_tests(args)
    if missing and not args.require_subset:
        print("not found: " + ", ".join(t.id for t in missing), file=sys.stderr)
    for name in ("mp-translate", "mp-opt"):
        if not os.path.exists(run_mlir.tool(name)):
            raise SystemExit("no %s (set MP_BUILD_DIR)" % run_mlir.tool(name))
    known = supported_ops()
    start = time.time()
    run_all(tests, args.jobs, args.batch, args.timeout)
    wall = time.time() - start
    if known is not None:
        for t in tests:
            if "unsupported" in t.status.values() and os.path.exists(os.path.join(t.dir, "model.onnx")):
                try:
                    ops = model_op_types(onnx.load(os.path.join(t.dir, "model.onnx")).graph)
                except Exception:  # noqa: BLE001
                    ops = set()
                t.unsupported_ops = sorted(ops - known)
    precisions = [p for p in PRECISIONS if any(p in t.precisions for t in tests)]
    print(report(tests, precisions, known, args.verbose))
    print("\n%d tests in %.1f s (--jobs %d --batch %d)" % (len(tests), wall, args.jobs, args.batch))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv[1:], "wall_s": round(wall, 1),
                       "tolerances": {p: {"rtol": TOLERANCES[p][0], "atol": TOLERANCES[p][1]}
                                      for p in precisions},
                       "supported_ops": sorted(known) if known is not None else None,
                       "missing": [t.id for t in missing],
                       "tests": [t.to_json() for t in tests]}, f, indent=1)
    if args.require_subset:
        bad = check_required(tests, missing)
        if bad:
            print("\n--require-subset: %d listed tests do not pass:\n%s" % (len(bad), "\n".join(bad)))
            return 1
        print("\n--require-subset: all %d listed tests pass" % len(tests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
