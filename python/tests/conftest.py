"""pytest setup: the package is imported from python/ (no install step) and
every test that executes IR needs mp's tools, built by scripts/setup.sh."""

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from mp import run_mlir  # noqa: E402

# Sessions compile their steps: no test reads or fills a user's compile
# cache; test_compile_cache.py turns it on in a temporary directory.
os.environ["MP_CACHE"] = "off"

# One thread: the machines that run the suite are small and shared, and
# PyTorch's results then do not depend on their thread count.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tools():
    """Fails (not skips) when mp's tools are missing: the README's test
    command builds them first."""
    missing = [t for t in (run_mlir.tool("mp-opt"), run_mlir.tool("mp-run"),
                           run_mlir.tool("mp-translate"), run_mlir.tool("mlir-runner"))
               if not os.access(t, os.X_OK)]
    if missing:
        pytest.fail("missing tools %s: run scripts/setup.sh (or set MP_BUILD_DIR)" % missing)
    return run_mlir


def rel_err(got, want):
    """Norm-wise relative error ||got - want||_2 / ||want||_2 (the measure
    every tolerance in these tests is stated in)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.all(np.isfinite(got)), "non-finite values in mp's result"
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
