"""Adaptive loss scaling (`loss_scale="adaptive"`, #20 §4) run end to end:
the compiled f16 step of the digits MLP moves its scale by the rule of
mp.adapt_scale from the amax of its own scaled gradients, which PyTorch
recomputes here from the same parameters and batch; an inf skips the step,
halves the scale and starts the cool-down.
"""

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mprun_order
from mp import runtime
from test_training import BATCH, _digits

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "digits_mlp.mlir")

# --mp-loss-scaling's defaults (Passes.td) and mp.adapt_scale's constants.
MARGIN, HYSTERESIS, COOL_DOWN = 8.0, 2, 2000
LIMIT, MIN_SCALE, MAX_SCALE = 65504.0, 1.0, 2.0 ** 24


def _bound(scale, amax, margin=MARGIN):
    """scale / amax * limit / margin: the target is the largest power of two
    at most this, clamped."""
    return scale / amax * (LIMIT / margin)


def _target(scale, amax, margin=MARGIN):
    if not amax > 0:
        return scale
    return min(max(2.0 ** np.floor(np.log2(_bound(scale, amax, margin))), MIN_SCALE),
               MAX_SCALE)


def _update(scale, tracker, found_inf, amax, margin=MARGIN, hysteresis=HYSTERESIS):
    """updateAdaptiveLossScale (lib/Dialect/MP/IR/MPOps.cpp), independently."""
    if found_inf:
        return max(scale * 0.5, MIN_SCALE), -COOL_DOWN
    target = _target(scale, amax, margin)
    if tracker < 0:
        return min(target, scale), tracker + 1
    if target >= scale:  # up by one power of two a step at most
        return min(target, 2.0 ** np.floor(np.log2(2 * scale))), 0
    if tracker + 1 >= hysteresis:
        return target, 0
    return scale, tracker + 1


def _tracker(session):
    return runtime.library().mp_session_growth_tracker(session._handle)


def _gradient_amax(params, x, labels):
    """max |g| over the FP32 parameter gradients of the digits MLP's mean
    cross entropy (examples/digits_mlp.mlir), unscaled."""
    w = {k: torch.from_numpy(v).requires_grad_() for k, v in params.items()}
    h1 = torch.relu(torch.from_numpy(x) @ w["w1"] + w["b1"])
    h2 = torch.relu(h1 @ w["w2"] + w["b2"])
    F.cross_entropy(h2 @ w["w3"] + w["b3"], torch.from_numpy(labels)).backward()
    return max(float(v.grad.abs().max()) for v in w.values())


@pytest.mark.parametrize("margin,hysteresis", [(None, None), (64.0, 4)])
def test_adaptive_scale_follows_measured_amax(margin, hysteresis):
    """60 steps: no step is skipped, every scale is a power of two in
    [1, 2^24], and each new scale and tracker are the rule's from the
    gradients' amax that PyTorch measures on the step's parameters and
    batch (mp's own gradients pass through f16; a step whose bound lies
    within 1% of a power of two may round either way and is not compared).
    The scale moves during the run, so the comparison is not vacuous. With
    the defaults, and with the session's scale_margin/scale_hysteresis."""
    data = _digits()
    session = runtime.Session(EXAMPLE, precision="f16", loss_scale="adaptive", seed=0,
                              scale_margin=margin, scale_hysteresis=hysteresis)
    rule = {"margin": margin or MARGIN, "hysteresis": hysteresis or HYSTERESIS}
    x, y, labels = data["x_train"], data["y_train"], data["labels_train"]
    compared, scales = 0, {session.loss_scale}
    # mp-run's batches: whole batches of each epoch's order.
    batches = [order[b * BATCH:(b + 1) * BATCH]
               for order in (mprun_order.epoch_order(x.shape[0], e) for e in (1, 2, 3))
               for b in range(x.shape[0] // BATCH)]
    for step, idx in enumerate(batches[:60]):
        scale, tracker = session.loss_scale, _tracker(session)
        amax = _gradient_amax(session.parameters(), x[idx], labels[idx]) * scale
        _, stepped = session.train_step(x[idx], y[idx])
        assert stepped, "step %d was skipped" % step
        new_scale, new_tracker = session.loss_scale, _tracker(session)
        assert new_scale in [2.0 ** e for e in range(25)], new_scale
        scales.add(new_scale)
        bound = np.log2(_bound(scale, amax, rule["margin"]))
        if abs(bound - np.round(bound)) < np.log2(1.01):
            continue
        assert (new_scale, new_tracker) == _update(scale, tracker, False, amax, **rule), (
            "step %d: scale %g tracker %d amax %g -> %g, %d" % (
                step, scale, tracker, amax, new_scale, new_tracker))
        compared += 1
    assert compared >= 50
    assert len(scales) >= 2, "the scale never moved: %s" % scales
    assert session.skipped_steps == 0


def test_adaptive_overflow_skips_halves_and_cools_down():
    """An inf in the input: the step is skipped, the scale halves and the
    tracker starts the cool-down at -2000; the clean steps after it count
    it down and never raise the scale."""
    data = _digits()
    session = runtime.Session(EXAMPLE, precision="f16", loss_scale="adaptive", seed=0)
    x, y = data["x_train"][:BATCH].copy(), data["y_train"][:BATCH]
    assert session.train_step(x, y)[1]
    before = session.loss_scale
    x[0, 0] = np.inf
    assert not session.train_step(x, y)[1]
    assert session.skipped_steps == 1
    assert session.loss_scale == before / 2 and _tracker(session) == -COOL_DOWN
    x[0, 0] = 0.0
    for k in range(1, 6):
        assert session.train_step(x, y)[1]
        assert session.loss_scale <= before / 2
        assert _tracker(session) == -COOL_DOWN + k


def test_margin_and_hysteresis_are_checked():
    with pytest.raises(runtime.MPError, match="settings of --loss-scale adaptive"):
        runtime.Session(EXAMPLE, precision="f16", scale_margin=64.0)
    with pytest.raises(runtime.MPError, match="--scale-margin >= 1"):
        runtime.Session(EXAMPLE, precision="f16", loss_scale="adaptive", scale_margin=0.5)
    with pytest.raises(runtime.MPError, match="--scale-hysteresis >= 1"):
        runtime.Session(EXAMPLE, precision="f16", loss_scale="adaptive", scale_hysteresis=0)
