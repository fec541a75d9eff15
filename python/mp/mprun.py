"""Train an exported model with the `mp-run train` command from Python.

`initial_checkpoint` writes a checkpoint that makes mp-run start from
given parameter values (for example PyTorch's initialization) instead of
its own seeded He-uniform initialization, and `train` runs mp-run on it
as a subprocess and parses its epoch lines. It exercises the command-line
tool (its data loading, batch order, checkpoints and output); to train
step by step in-process from numpy use `mp.runtime.Session` (ctypes over
libmp_session.so), which can also take initial weights directly
(`set_parameter`).
The checkpoint is the one mp-run writes itself (docs/runtime-io.md): the
parameters under their mp.param names, the optimizer state
(`<name>.momentum` for SGD, `<name>.m`/`<name>.v` for Adam and AdamW) and
a JSON `__metadata__` member (epoch, batch, skipped, step, scale,
growth_tracker, precision), so `mp-run train --checkpoint FILE --resume`
continues "after epoch 0" from it.
"""

import json
import re
import subprocess

import numpy as np

from .export import param_arrays
from .run_mlir import RunError, tool

_STATE = {"sgd": ("momentum",), "adam": ("m", "v"), "adamw": ("m", "v")}

_EPOCH = re.compile(r"^epoch (\d+)/\d+\s+loss ([-+0-9.eE naif]+)\s+test accuracy ([0-9.]+)%"
                    r".*skipped (\d+)\s+scale (\S+)")
_FINAL = re.compile(r"^held-out accuracy ([0-9.]+)%")


def initial_checkpoint(path, params, optimizer="sgd", precision="f32", init_scale=65536.0):
    """Writes an mp-run checkpoint holding `params` (an nn.Module, or a dict
    of arrays named as mp.param) with zero optimizer state, as if saved
    after epoch 0."""
    if optimizer not in _STATE:
        raise ValueError("optimizer must be one of %s" % sorted(_STATE))
    if hasattr(params, "named_parameters"):
        params = param_arrays(params)
    members = {}
    for name, value in params.items():
        value = np.ascontiguousarray(value, dtype=np.float32)
        members[name] = value
        for slot in _STATE[optimizer]:
            members["%s.%s" % (name, slot)] = np.zeros_like(value)
    # f32 and bf16 run without loss scaling (the scale is then unused).
    meta = {"epoch": 0, "batch": 0, "skipped": 0, "step": 0,
            "scale": float(init_scale) if precision == "f16" else 1.0,
            "growth_tracker": 0, "precision": precision}
    members["__metadata__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **members)


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
