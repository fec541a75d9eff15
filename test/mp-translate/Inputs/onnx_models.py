"""Writes small ONNX models for the mp-translate tests.

usage: onnx_models.py NAME OUT.onnx   (NAME: one of MODELS below)
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def init(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def mlp():
    """Linear layers as torch.onnx writes them: Gemm(transB) + Relu, then
    MatMul + Add with a broadcast bias."""
    return model(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["m"], name="fc2"),
         helper.make_node("Add", ["m", "b2"], ["y"], name="bias2")],
        [helper.make_tensor_value_info("x", F, [4, 8])],
        [helper.make_tensor_value_info("y", F, [4, 3])],
        [init("w1", [16, 8]), init("b1", [16], 1), init("w2", [16, 3], 2),
         init("b2", [3], 3)])


def shape_chain():
    """Reshape to a shape computed from the input's (Shape, Gather,
    Unsqueeze, Concat), folded to a constant by the importer."""
    return model(
        [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Constant", [], ["zero"], name="c0",
                          value=numpy_helper.from_array(np.array(0, np.int64))),
         helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsq"),
         helper.make_node("Constant", [], ["minus1"], name="c1",
                          value=numpy_helper.from_array(np.array([-1], np.int64))),
         helper.make_node("Concat", ["n1", "minus1"], ["target"], name="cat", axis=0),
         helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten")],
        [helper.make_tensor_value_info("x", F, [2, 3, 4])],
        [helper.make_tensor_value_info("y", F, [2, 12])],
        [numpy_helper.from_array(np.array([0], np.int64), "axes")])


def cnn():
    """Conv (pads, bias) + BatchNormalization + MaxPool + GlobalAveragePool."""
    rng = np.random.default_rng(4)
    stats = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in [
        ("scale", rng.standard_normal(4)), ("shift", rng.standard_normal(4)),
        ("mean", rng.standard_normal(4)), ("var", rng.random(4) + 0.5)]]
    return model(
        [helper.make_node("Conv", ["x", "k", "kb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"],
                          name="bn", epsilon=1e-3),
         helper.make_node("MaxPool", ["n"], ["p"], name="pool", kernel_shape=[2, 2],
                          strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["y"], name="gap")],
        [helper.make_tensor_value_info("x", F, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", F, [1, 4, 1, 1])],
        [init("k", [4, 2, 3, 3]), init("kb", [4], 5)] + stats)


def settings():
    """A classifier as tf2onnx writes Keras' ReLU6 (Clip whose bounds are
    float initializers) behind an inference BatchNormalization: the bounds
    and the running statistics are settings, not weights."""
    rng = np.random.default_rng(6)
    arr = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)
    return model(
        [helper.make_node("Conv", ["x", "k"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"],
                          name="bn", epsilon=1e-3),
         helper.make_node("Clip", ["n", "lo", "hi"], ["r"], name="relu6"),
         helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
         helper.make_node("Flatten", ["p"], ["f"], name="flat"),
         helper.make_node("Gemm", ["f", "w", "b"], ["y"], name="fc")],
        [helper.make_tensor_value_info("x", F, [4, 2, 6, 6])],
        [helper.make_tensor_value_info("y", F, [4, 3])],
        [init("k", [4, 2, 3, 3]), arr("scale", rng.random(4) + 0.5),
         arr("shift", rng.standard_normal(4)), arr("mean", rng.standard_normal(4)),
         arr("var", rng.random(4) + 0.5), arr("lo", 0.0), arr("hi", 6.0),
         init("w", [4, 3], 7), init("b", [3], 8)], opset=13)


def dynamic():
    """A batch dimension named 'N'."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [helper.make_tensor_value_info("x", F, ["N", 5])],
                 [helper.make_tensor_value_info("y", F, ["N", 5])])


def unsupported():
    return model([helper.make_node("NonMaxSuppression", ["x", "s"], ["y"], name="nms")],
                 [helper.make_tensor_value_info("x", F, [1, 4, 4]),
                  helper.make_tensor_value_info("s", F, [1, 1, 4])],
                 [helper.make_tensor_value_info("y", I64, [4, 3])], opset=13)


def runtime_shape():
    """Reshape whose shape is a graph input: not known when compiling."""
    return model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
                 [helper.make_tensor_value_info("x", F, [2, 6]),
                  helper.make_tensor_value_info("shape", I64, [2])],
                 [helper.make_tensor_value_info("y", F, [3, 4])])


def bad_broadcast():
    return model([helper.make_node("Add", ["x", "z"], ["y"], name="add")],
                 [helper.make_tensor_value_info("x", F, [2, 3]),
                  helper.make_tensor_value_info("z", F, [4])],
                 [helper.make_tensor_value_info("y", F, [2, 3])])


def resize_runtime_scales():
    """Resize whose scales are a graph input: the output shape is not known
    when compiling."""
    return model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")],
                 [helper.make_tensor_value_info("x", F, [1, 1, 2, 2]),
                  helper.make_tensor_value_info("scales", F, [4])],
                 [helper.make_tensor_value_info("y", F, [1, 1, 4, 4])])


def resize_bad_mode():
    """Resize-11 with a nearest_mode ONNX does not define."""
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    roi = numpy_helper.from_array(np.zeros([0], np.float32), "roi")
    return model([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="resize",
                                   mode="nearest", nearest_mode="round_half_even")],
                 [helper.make_tensor_value_info("x", F, [1, 1, 2, 2])],
                 [helper.make_tensor_value_info("y", F, [1, 1, 4, 4])], [scales, roi], opset=11)


def scatter_max():
    """ScatterElements with reduction 'max' (opset 18's), in an opset 16 model."""
    return model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter",
                                   reduction="max")],
                 [helper.make_tensor_value_info("x", F, [3, 3]),
                  helper.make_tensor_value_info("i", I64, [1, 3]),
                  helper.make_tensor_value_info("u", F, [1, 3])],
                 [helper.make_tensor_value_info("y", F, [3, 3])], opset=16)


def opset18():
    m = dynamic()
    m.opset_import[0].version = 18
    return m


MODELS = {f.__name__: f for f in [mlp, shape_chain, cnn, settings, dynamic, unsupported,
                                   runtime_shape, bad_broadcast, resize_runtime_scales,
                                   resize_bad_mode, scatter_max, opset18]}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODELS:
        sys.exit("usage: onnx_models.py {%s} OUT.onnx" % ",".join(MODELS))
    onnx.save(MODELS[sys.argv[1]](), sys.argv[2])
