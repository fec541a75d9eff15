"""Data-parallel training through the Python API: `mpirun -np 2` runs a
script whose Session(distributed=True) trains on its share of each global
batch; its parameters after a few steps equal one process training the
same global batches (docs/distributed.md)."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import mp
import models
from mp import runtime
from test_training import _digits

STEPS = 6
PER_RANK = 32

WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    from mp import runtime
    model, data, out, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = runtime.Session(model, distributed=True, seed=3, lr=0.1)
    d = np.load(data)
    x, y = d["x_train"], d["y_train"]
    b, r, n = s.batch_size, s.process_rank, s.process_count
    losses = []
    for step in range(steps):
        first = (step * n + r) * b
        loss, _ = s.train_step(x[first:first + b], y[first:first + b])
        losses.append(loss)
    if r == 0:
        np.savez(out, losses=np.array(losses), **s.parameters())
    print("rank %d of %d done" % (r, n))
""")


def _mpi_ready():
    if not shutil.which("mpirun"):
        return "no mpirun on PATH"
    if not runtime.library().mp_distributed_available():
        return "mp was built without MPI"
    return None


@pytest.mark.skipif(_mpi_ready() is not None, reason=str(_mpi_ready()))
def test_two_ranks_equal_one_process(tmp_path):
    torch.manual_seed(0)
    model = models.mlp(hidden=64)
    per_rank = tmp_path / "rank.mlir"
    per_rank.write_text(mp.export_training(model, torch.zeros(PER_RANK, 64), num_classes=10))
    whole = tmp_path / "whole.mlir"
    whole.write_text(mp.export_training(model, torch.zeros(2 * PER_RANK, 64), num_classes=10))
    data = _digits()
    np.savez(tmp_path / "data.npz", x_train=data["x_train"], y_train=data["y_train"])
    (tmp_path / "worker.py").write_text(WORKER)

    package_root = os.path.dirname(os.path.dirname(os.path.abspath(mp.__file__)))
    env = dict(os.environ, MP_CACHE="off", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(
                   p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run(
        ["mpirun", "-np", "2", sys.executable, str(tmp_path / "worker.py"), str(per_rank),
         str(tmp_path / "data.npz"), str(tmp_path / "two.npz"), str(STEPS)],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "rank 0 of 2 done" in run.stdout and "rank 1 of 2 done" in run.stdout
    two = dict(np.load(tmp_path / "two.npz"))

    one = runtime.Session(whole, seed=3, lr=0.1, cache=False)
    x, y = data["x_train"], data["y_train"]
    losses = []
    for step in range(STEPS):
        first = step * 2 * PER_RANK
        loss, _ = one.train_step(x[first:first + 2 * PER_RANK], y[first:first + 2 * PER_RANK])
        losses.append(loss)
    # Each rank reports the global batch's mean loss.
    np.testing.assert_allclose(two["losses"], losses, rtol=1e-6)
    worst = 0.0
    for name, value in one.parameters().items():
        worst = max(worst, float(np.abs(value - two[name]).max() / np.abs(value).max()))
    print("largest relative parameter difference after %d steps: %.2e" % (STEPS, worst))
    assert worst <= 1e-6


FAILING_WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    from mp import runtime
    s = runtime.Session(sys.argv[1], distributed=True)
    if s.process_rank == 1:
        raise RuntimeError("rank 1 gives up")
    x = np.zeros((s.batch_size, s.num_features), np.float32)
    y = np.zeros((s.batch_size, s.num_classes), np.float32)
    s.train_step(x, y)  # waits for rank 1 in the all-reduce
""")


@pytest.mark.skipif(_mpi_ready() is not None, reason=str(_mpi_ready()))
def test_a_failing_rank_ends_the_job(tmp_path):
    """Rank 1's uncaught exception ends the job with its traceback, where
    rank 0 would otherwise wait for it in the step's all-reduce forever."""
    model = tmp_path / "m.mlir"
    model.write_text(mp.export_training(models.mlp(hidden=16), torch.zeros(8, 64),
                                        num_classes=10))
    (tmp_path / "worker.py").write_text(FAILING_WORKER)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(mp.__file__)))
    env = dict(os.environ, MP_CACHE="off", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(
                   p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run(["mpirun", "-np", "2", sys.executable, str(tmp_path / "worker.py"),
                          str(model)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "RuntimeError: rank 1 gives up" in run.stderr, run.stdout + run.stderr


def test_distributed_needs_a_launcher(tmp_path):
    reason = _mpi_ready()
    path = tmp_path / "m.mlir"
    path.write_text(mp.export_training(models.mlp(hidden=16), torch.zeros(8, 64), num_classes=10))
    env_has_launcher = any(v in os.environ for v in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"))
    if env_has_launcher:
        pytest.skip("running under an MPI launcher")
    message = "built without MPI" if reason == "mp was built without MPI" else "needs an MPI launcher"
    with pytest.raises(runtime.MPError, match=message):
        runtime.Session(path, distributed=True, cache=False)
