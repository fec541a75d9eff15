"""Train an exported model with the `mp-run train` command from Python.

`initial_checkpoint` writes a checkpoint that makes mp-run start from
given parameter values (for example PyTorch's initialization) instead of
its own seeded He-uniform initialization, and `train` runs mp-run on it
as a subprocess and parses its epoch lines. It exercises the command-line
tool (its data loading, batch order, checkpoints and output); to train
in-process from numpy use `mp.runtime.Session` (ctypes over
libmp_session.so: `train_step` step by step, or `fit`, mp-run's loop),
which can also take initial weights directly (`set_parameter`).
The checkpoint is written by the session library itself (Session.save:
the one checkpoint schema, docs/runtime-io.md), so `mp-run train
--checkpoint FILE --resume` continues "after epoch 0" from it.
"""

import re
import subprocess

from .aten import param_arrays
from .run_mlir import RunError, tool

_EPOCH = re.compile(r"^epoch (\d+)/\d+\s+loss ([-+0-9.eE naif]+)\s+test accuracy ([0-9.]+)%"
                    r".*skipped (\d+)\s+scale (\S+)")
_FINAL = re.compile(r"^held-out accuracy ([0-9.]+)%")


def initial_checkpoint(path, model_path, params, optimizer="sgd", precision="f32"):
    """Writes an mp-run checkpoint of `model_path` holding `params` (an
    nn.Module, or a dict of arrays named as mp.param) with zero optimizer
    state and the initial loss-scale scalars, as if saved after epoch 0:
    a Session of the model (compiled for `optimizer` and `precision`) with
    those parameters, saved."""
    from .runtime import Session
    if hasattr(params, "named_parameters"):
        params = param_arrays(params)
    session = Session(model_path, precision=precision, optimizer=optimizer)
    try:
        for name, value in params.items():
            session.set_parameter(name, value)
        session.save(path)
    finally:
        session.close()


def train(model_path, checkpoint, epochs, precision="f32", optimizer="sgd", lr=0.05,
          momentum=0.9, data=None, extra_args=(), timeout=600):
    """Runs `mp-run train MODEL --checkpoint CHECKPOINT --resume` (so the
    checkpoint from initial_checkpoint is the starting point, and it holds
    the trained parameters afterwards). Returns a dict: epochs (list of
    (epoch, mean loss, test accuracy %, skipped steps, scale)), accuracy
    (the final held-out accuracy %) and the raw output."""
    cmd = [tool("mp-run"), "train", model_path, "--checkpoint", checkpoint, "--resume",
           "--epochs", str(epochs), "--precision", precision, "--optimizer", optimizer,
           "--lr", repr(float(lr)), "--momentum", repr(float(momentum))]
    if data is not None:
        cmd += ["--data", data]
    cmd += list(extra_args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RunError("mp-run train failed (exit %d):\n%s%s" % (
            proc.returncode, proc.stdout[-2000:], proc.stderr[-4000:]))
    rows, final = [], None
    for line in proc.stdout.splitlines():
        m = _EPOCH.match(line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), float(m.group(3)),
                         int(m.group(4)), float(m.group(5))))
        m = _FINAL.match(line)
        if m:
            final = float(m.group(1))
    if final is None or len(rows) != epochs:
        raise RunError("unexpected mp-run output:\n%s" % proc.stdout)
    return {"epochs": rows, "accuracy": final, "output": proc.stdout}
