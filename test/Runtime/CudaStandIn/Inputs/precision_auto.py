"""--precision auto and TF32 through the Python Session on the CUDA
stand-ins: the choice follows the device's compute capability, and the
session sets libmprt_cuda's TF32 switch before each of its steps."""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
from mp import runtime  # noqa: E402

model = sys.argv[1]
cuda = ctypes.CDLL(os.path.join(os.environ["MP_BUILD_DIR"], "lib", "libmprt_cuda.so"))
cuda.mprt_cuda_gemm_tf32.restype = ctypes.c_int32


def step(session):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((session.batch_size, session.num_features), dtype=np.float32)
    labels = np.eye(session.num_classes, dtype=np.float32)[
        rng.integers(0, session.num_classes, session.batch_size)]
    session.train_step(x, labels)
    return cuda.mprt_cuda_gemm_tf32()


auto = runtime.Session(model, precision="auto", device="cuda")
print("auto:", auto.precision, "|", auto.precision_decision)
plain = runtime.Session(model, precision="f32", device="cuda")
print("plain f32:", plain.precision, repr(plain.precision_decision))
# Each session's setting holds for its own steps, in either order.
print("tf32 in steps: auto", step(auto), "plain", step(plain), "auto", step(auto))
explicit = runtime.Session(model, precision="f32", device="cuda", tf32=True)
print("tf32 in steps: explicit", step(explicit))
try:
    runtime.Session(model, precision="f32", tf32=True)
except runtime.MPError as error:
    print("cpu tf32:", error)
