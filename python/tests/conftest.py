"""pytest setup: the package is imported from python/ (no install step) and
every test that executes IR needs mp's tools, built by scripts/setup.sh."""

import os
import sys
import warnings

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import mp  # noqa: E402
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


def train_mode_gradients(tools, module, x, classes):
    """(mp's loss and gradients, PyTorch's) for cross entropy on x, both in
    train mode (BatchNorm on the batch's statistics; the models' dropouts
    are 0, and mp.dropout is the identity outside a training step)."""
    module.train()
    labels = F.one_hot(torch.arange(x.shape[0]) % classes, classes).float()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BatchNorm's running statistics are not updated
        program = mp.export_program(module, (x,), loss="cross_entropy")
    grad_ir = tools.mp_opt(program.mlir, "--mp-autodiff")
    got = tools.run(grad_ir, "loss_grad",
                    [x.numpy(), labels.numpy()] + list(program.param_arrays().values()))
    module.zero_grad()
    state = {k: v.clone() for k, v in module.state_dict().items()}
    loss = F.cross_entropy(module(x), labels)
    loss.backward()
    module.load_state_dict(state)  # PyTorch's forward updated the running statistics
    named = dict(module.named_parameters())
    want = [named[spec.torch_name].grad.numpy() for spec in program.params]
    return got[0][0], got[1:], loss.item(), want, program
