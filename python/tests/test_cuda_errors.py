"""A CUDA failure's message reaches Python (MPError), through the CUDA driver
stand-in (runtime/cuda/standin) so that no GPU is needed: libmprt_cuda
records the error in its own copy of libmprt's error slot, which the session
reads back; when libmp_session.so (loaded RTLD_GLOBAL) interposed its copy,
the message was written to one slot and read from the other ('CUDA: ')."""

import os
import subprocess
import sys

import pytest

from mp import run_mlir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(run_mlir.build_dir(), "lib", "cuda-standin")

# Runs in a child: the stand-in must be on LD_LIBRARY_PATH before the
# process opens libmprt_cuda, and the parent's tests must not see a "GPU".
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from mp.runtime import MPError, Session
try:
    Session(sys.argv[2], precision="f16", device="cuda")
except MPError as e:
    print("MPError:", e)
else:
    print("no error")
"""


@pytest.mark.skipif(not os.path.exists(os.path.join(STANDIN, "libcuda.so.1")),
                    reason="the CUDA stand-in is built only with the CUDA headers")
def test_device_out_of_memory_message_reaches_python():
    env = dict(os.environ, LD_LIBRARY_PATH=STANDIN, MPRT_CUDA_STANDIN_MEMORY_MB="1")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, os.path.join(ROOT, "python"),
         os.path.join(ROOT, "examples", "digits_mlp.mlir")],
        env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    # The driver's own words, through mgpuMemAlloc and the session.
    assert line.startswith("MPError: "), out.stdout
    assert "CUDA_ERROR_OUT_OF_MEMORY" in line, line
    assert "mgpuMemAlloc" in line, line
