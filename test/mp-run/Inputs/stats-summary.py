"""Prints what a stats file (mp-run train --stats) says, one fact a line,
for FileCheck. Refuses what is not strict JSON (NaN, Infinity) and steps
that are not numbered 1, 2, ... in order."""

import json
import math
import sys


def refuse(constant):
    raise ValueError("not strict JSON: " + constant)


def number(value):
    """A number as the file writes it: a number or "nan", "inf", "-inf"."""
    if isinstance(value, str):
        assert value in ("nan", "inf", "-inf"), value
        return float(value)
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    return float(value)


with open(sys.argv[1]) as f:
    stats = json.load(f, parse_constant=refuse)
print("version %d precision %s loss_scale %s checks %s" % (
    stats["version"], stats["precision"], stats["loss_scale"],
    json.dumps(stats["monitor"]["checks"])))
steps = stats["steps"]
assert [s["step"] for s in steps] == list(range(1, len(steps) + 1)), "step numbers"
print("steps %d epochs %s" % (len(steps), sorted({s["epoch"] for s in steps})))
print("skipped: %s" % " ".join(str(s["step"]) for s in steps if s["skipped"]))
runs = []  # the scales, run-length encoded
for s in steps:
    scale = number(s["scale"])
    if runs and runs[-1][0] == scale:
        runs[-1][1] += 1
    else:
        runs.append([scale, 1])
print("scales: %s" % " ".join("%gx%d" % (v, n) for v, n in runs))
print("nonfinite loss at: %s" % " ".join(
    str(s["step"]) for s in steps if not math.isfinite(number(s["loss"]))))
# Micro-batches that only accumulated (--accumulate N) have no norm and
# are never skipped.
micro = [s for s in steps if not s["optimizer_step"]]
assert all(s["grad_norm"] is None and not s["skipped"] for s in micro), "micro"
steps = [s for s in steps if s["optimizer_step"]]
print("optimizer steps %d" % len(steps))
# A step is skipped exactly when its gradients were not finite; a clean
# step's norm is a positive number.
norms = [number(s["grad_norm"]) for s in steps]
print("grad_norm nonfinite exactly on skipped steps: %s" % all(
    math.isfinite(n) != s["skipped"] for n, s in zip(norms, steps)))
clean = [n for n, s in zip(norms, steps) if not s["skipped"]]
print("grad_norm of clean steps positive: %s" % all(n > 0 for n in clean))
for r in stats["reports"]:
    print("report: step %d %s%s: %s" % (r["step"], r["issue"],
                                        " op=" + r["op"] if "op" in r else "",
                                        r["message"]))
print("reports: %d" % len(stats["reports"]))
print("precision changes: %d" % len(stats["precision_changes"]))
print("epoch records: %s" % " ".join(str(e["epoch"]) for e in stats["epochs"]))
