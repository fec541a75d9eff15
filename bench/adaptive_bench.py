#!/usr/bin/env python3
"""Adaptive against dynamic loss scaling in f16 (#20 §4), and plain
against self-healing f16 (#20 §3).

Trains the digits MLP (examples/digits_mlp.mlir), CNN
(examples/digits_cnn.mlir), a small transformer (one encoder layer over
the 8 rows of each image as tokens, exported from PyTorch into
build/bench/digits_transformer.mlir) and, as a stress case, the MLP with
its loss x1024 and lr / 1024 (mlp-x1024: the same steps, gradients that
overflow f16 at the default scale) with mp's Python session, in f32 and
in f16 with `--loss-scale dynamic` (PyTorch GradScaler semantics: 2^16,
x2 every 2000 clean steps, x0.5 and a skipped step on inf/nan) and
`--loss-scale adaptive` (the scale set each step from the measured
gradient amax, default margin and hysteresis), for several seeds, and
prints per model and mode:

  skipped   steps skipped for inf/nan over the run (sum over seeds)
  scale     the loss scale's median over the run's steps (range)
  flushed   the fraction of nonzero backward values (the gradient of every
            activation: the tensors the f16 backward pass stores) whose
            magnitude times the step's scale is below f16's smallest
            subnormal, 2^-24, so that f16 would hold them as zero; and, for
            comparison, the same at scale 1 (no loss scaling)
  accuracy  held-out accuracy (mean over seeds) and its difference from
            f32's (same model, data, seed and batch order)

How `flushed` is measured: every --flush-every-th step, before the step
runs, the session's parameters (the f32 masters the step is about to use)
are copied into a PyTorch replica of the model, which computes the
activation gradients of that batch's mean cross entropy in FP32; each
is multiplied by the scale the step uses. These are the FP32 values that
mp's f16 backward pass rounds (its own f16 values are not observable from
outside the compiled step); the replica's max-pool gives a tied window's
gradient to its first element where mp splits it, which moves no
magnitude across 2^-24 in practice.

The run follows mp-run's trainer: epoch order from mp_epoch_order(seed),
one step per whole batch of 64, accuracy over the padded test batches.
The MLP and CNN start from the session's initialisation for the seed
(as mp-run); the transformer from PyTorch's (seeded), since the session
zero-fills rank-1 parameters such as layer-norm scales.

The second table (--tables repair) trains the overflowing model
(examples/digits_overflow.mlir: a bilinear layer on raw pixels whose f16
activations pass 65504), the healthy MLP, CNN and transformer, and
mlp-x1024 (whose first steps skip while dynamic scaling finds its scale:
not a failure a repair should answer) with the
library's trainer (Session.fit, as mp-run train), in f32, in plain f16
with dynamic scaling, and in f16 with precision repair
(--auto-precision-repair on), and prints per model and mode:

  skipped   steps skipped over the run (sum over seeds)
  repairs   precision repairs made (sum over seeds)
  kept f32  ops kept in f32 at the end of each seed's run
  (mode "auto: P": --precision auto on this machine chose P)
  seconds   spent in repairs (probe rounds and recompiling; mean)
  accuracy  held-out accuracy (mean over seeds) and its difference from f32

Only the overflowing model may be repaired (no false positives).

Needs: scripts/setup.sh (build/bin, build/data/digits.npz) and Debian's
python3-torch. Usage:
  bench/adaptive_bench.py [--epochs 10] [--seeds 0,1,2]
                          [--models mlp,cnn,transformer,mlp-x1024]
                          [--repair-models overflow,mlp,cnn,transformer,mlp-x1024]
                          [--tables scaling,repair] [--flush-every 5]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("MP_BUILD_DIR", os.path.join(ROOT, "build"))

import mp  # noqa: E402
from mp import runtime  # noqa: E402

F16_SMALLEST_SUBNORMAL = 2.0 ** -24
BATCH = 64


class DigitsTransformer(nn.Module):
    """The 8 rows of a digit as 8 tokens of 8 pixels: a linear embedding
    (d 16) plus a learned position, one post-norm encoder layer (2 heads,
    feed-forward 32, no dropout), mean over tokens, a linear head."""

    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Linear(8, d)
        self.pos = nn.Parameter(torch.randn(8, d) * 0.1)
        self.encoder = nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=32,
                                                  dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x) + self.pos).mean(dim=1))


# -- PyTorch replicas: activation gradients at the session's parameters ------

def _retain(values):
    for v in values:
        v.retain_grad()
    return values


def mlp_activation_grads(p, x, y):
    """examples/digits_mlp.mlir: relu(x W1 + b1), relu(. W2 + b2), . W3 + b3."""
    w = {k: torch.from_numpy(v).requires_grad_() for k, v in p.items()}
    z1 = x @ w["w1"] + w["b1"]
    h1 = torch.relu(z1)
    z2 = h1 @ w["w2"] + w["b2"]
    h2 = torch.relu(z2)
    logits = h2 @ w["w3"] + w["b3"]
    acts = _retain([z1, h1, z2, h2, logits])
    F.cross_entropy(logits, y).backward()
    return [a.grad for a in acts]


def cnn_activation_grads(p, x, y):
    """examples/digits_cnn.mlir: relu(conv3x3(x, k) + c), 2x2 max pool,
    flatten, . W + b."""
    w = {k: torch.from_numpy(v).requires_grad_() for k, v in p.items()}
    y1 = F.conv2d(x.view(-1, 1, 8, 8), w["k"]) + w["c"].view(1, -1, 1, 1)
    h1 = torch.relu(y1)
    pooled = F.max_pool2d(h1, 2)
    logits = pooled.flatten(1) @ w["w"] + w["b"]
    acts = _retain([y1, h1, pooled, logits])
    F.cross_entropy(logits, y).backward()
    return [a.grad for a in acts]


class TransformerReplica:
    def __init__(self, module):
        self.module = module
        self.outputs = []
        for m in module.modules():
            if m is not module and not isinstance(m, nn.TransformerEncoderLayer):
                m.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        # A module that passes its input through (dropout 0) is counted once.
        if out.requires_grad and all(out is not o for o in self.outputs):
            out.retain_grad()
            self.outputs.append(out)

    def __call__(self, p, x, y):
        mp.load_params(self.module, p)
        self.module.zero_grad()
        self.outputs = []
        F.cross_entropy(self.module(x.view(-1, 8, 8)), y).backward()
        return [o.grad for o in self.outputs if o.grad is not None]


def flushed_counts(grads, scale):
    """(values that are nonzero but below 2^-24 once scaled, nonzero values)."""
    flushed = nonzero = 0
    for g in grads:
        a = g.detach().abs().double().flatten()
        nz = a > 0
        nonzero += int(nz.sum())
        flushed += int((nz & (a * scale < F16_SMALLEST_SUBNORMAL)).sum())
    return flushed, nonzero


# -- models -----------------------------------------------------------------

def export_transformer(path):
    torch.manual_seed(0)
    text = mp.export_training(DigitsTransformer(), torch.randn(BATCH, 8, 8), num_classes=10)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def export_mlp_x1024(path):
    """The digits MLP with its loss multiplied by 1024 (a summed rather than
    averaged batch loss, times 16) and trained with lr / 1024: the same
    SGD steps in exact arithmetic, gradients 1024 times larger, so that
    2^16 overflows and the scalers must find a lower scale."""
    with open(os.path.join(ROOT, "examples", "digits_mlp.mlir")) as f:
        text = f.read()
    old = "%inv_batch = arith.constant 0.015625 : f32"
    if old not in text:
        sys.exit("examples/digits_mlp.mlir no longer has '%s'" % old)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text.replace(old, "%inv_batch = arith.constant 16.0 : f32"))


BENCH_DIR = os.path.join(ROOT, "build", "bench")
MODELS = {
    # name: (model file, optimizer, learning rate, loss factor)
    "mlp": (os.path.join(ROOT, "examples", "digits_mlp.mlir"), "sgd", 0.05, 1.0),
    "cnn": (os.path.join(ROOT, "examples", "digits_cnn.mlir"), "sgd", 0.05, 1.0),
    "transformer": (os.path.join(BENCH_DIR, "digits_transformer.mlir"), "adam", 0.003, 1.0),
    "mlp-x1024": (os.path.join(BENCH_DIR, "digits_mlp_x1024.mlir"), "sgd", 0.05 / 1024,
                  1024.0),
    "overflow": (os.path.join(ROOT, "examples", "digits_overflow.mlir"), "sgd", 0.05, 1.0),
}


def run(name, precision, loss_scale, seed, epochs, data, flush_every):
    path, optimizer, lr, factor = MODELS[name]
    session = runtime.Session(path, precision=precision, loss_scale=loss_scale,
                              optimizer=optimizer, lr=lr, seed=seed)
    replica = None
    if name in ("mlp", "mlp-x1024"):
        replica = mlp_activation_grads
    elif name == "cnn":
        replica = cnn_activation_grads
    else:
        torch.manual_seed(seed)
        module = DigitsTransformer()
        for key, value in mp.param_arrays(module).items():
            session.set(key, value)
        replica = TransformerReplica(module)

    x, y = data["x_train"], data["y_train"]
    labels = torch.from_numpy(data["labels_train"])
    rows = x.shape[0]
    scales, flushed, flushed1, nonzero = [], 0, 0, 0
    step = 0
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = runtime.epoch_order(rows, epoch, seed)
        for b in range(rows // BATCH):
            idx = order[b * BATCH:(b + 1) * BATCH]
            scale = session.loss_scale
            if precision == "f16" and flush_every and step % flush_every == 0:
                grads = [g * factor for g in replica(session.parameters(),
                                                     torch.from_numpy(x[idx]), labels[idx])]
                f, n = flushed_counts(grads, scale)
                f1, _ = flushed_counts(grads, 1.0)
                flushed += f
                flushed1 += f1
                nonzero += n
            session.train_step(x[idx], y[idx])
            scales.append(scale)
            step += 1
    seconds = time.perf_counter() - start

    correct = 0
    xt, yt = data["x_test"], data["labels_test"]
    for s in range(0, xt.shape[0], BATCH):
        n = min(BATCH, xt.shape[0] - s)
        batch = np.zeros((BATCH, xt.shape[1]), dtype=np.float32)
        batch[:n] = xt[s:s + n]
        correct += int((session.predict(batch)[:n].argmax(1) == yt[s:s + n]).sum())
    result = {
        "accuracy": 100.0 * correct / xt.shape[0],
        "skipped": session.skipped_steps,
        "steps": step,
        "scales": scales,
        "flushed": flushed,
        "flushed1": flushed1,
        "nonzero": nonzero,
        "seconds": seconds,
    }
    session.close()
    return result


def run_repair(name, precision, repair, seed, epochs, data):
    """One run of the library's trainer; returns accuracy, skipped steps,
    the repairs and the ops kept in f32 at the end."""
    path, optimizer, lr, _ = MODELS[name]
    session = runtime.Session(path, precision=precision,
                              loss_scale="dynamic" if precision == "f16" else None,
                              optimizer=optimizer, lr=lr, seed=seed)
    if name == "transformer":
        torch.manual_seed(seed)
        for key, value in mp.param_arrays(DigitsTransformer()).items():
            session.set(key, value)
    epochs_run = session.fit(data["x_train"], data["y_train"], data["x_test"],
                             data["y_test"], epochs=epochs, seed=seed,
                             precision_repair=repair)
    repairs = [r for e in epochs_run for r in e["repairs"]]
    result = {
        "accuracy": epochs_run[-1]["accuracy"],
        "skipped": session.skipped_steps,
        "repairs": repairs,
        "kept": session.kept_f32,
        "precision": session.precision,
        "repair_seconds": sum(r["seconds"] for r in repairs),
    }
    session.close()
    return result


def repair_table(models, seeds, epochs, data):
    # auto: what this machine's hardware picks, with the repair's default
    # for it (on).
    configs = [("f32", "f32", False), ("f16", "f16", False),
               ("f16 repair", "f16", True), ("auto", "auto", None)]
    print()
    print("plain vs self-healing f16 (dynamic loss scaling): %d epochs, seeds %s, "
          "batch %d, the library's trainer" % (epochs, ",".join(map(str, seeds)), BATCH))
    header = "%-12s %-11s %8s %8s %-14s %8s  %-24s %8s" % (
        "model", "mode", "skipped", "repairs", "kept f32", "seconds",
        "accuracy per seed", "vs f32")
    print(header)
    print("-" * len(header))
    sys.stdout.flush()
    pinned = {}
    for name in models:
        f32_acc = {}
        for label, precision, repair in configs:
            results = [run_repair(name, precision, repair, seed, epochs, data)
                       for seed in seeds]
            accs = [r["accuracy"] for r in results]
            if precision == "f32":
                f32_acc = {s: a for s, a in zip(seeds, accs)}
            mean = statistics.mean(accs)
            diff = mean - statistics.mean(f32_acc[s] for s in seeds)
            kept = "/".join(str(len(r["kept"])) for r in results)
            if precision == "auto":
                label = "auto: " + "/".join(sorted({r["precision"] for r in results}))
            seconds = statistics.mean(r["repair_seconds"] for r in results)
            print("%-12s %-11s %8d %8d %-14s %8.1f  %-24s %+7.2f" % (
                name, label, sum(r["skipped"] for r in results),
                sum(len(r["repairs"]) for r in results), kept, seconds,
                " ".join("%.2f" % a for a in accs) + " = %.2f" % mean, diff))
            sys.stdout.flush()
            if repair:
                pinned[name] = sorted({os.path.relpath(k, ROOT) for r in results
                                       for k in r["kept"]})
    for name, kept in pinned.items():
        if kept:
            print("%s: kept in f32 by the repairs: %s" % (name, " ".join(kept)))
        else:
            print("%s: no op kept in f32 (no repair)" % name)


def fmt_scale(v):
    e = int(round(np.log2(v))) if v > 0 else 0
    return "2^%d" % e if v == 2.0 ** e else "%.3g" % v


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--models", default="mlp,cnn,transformer,mlp-x1024")
    parser.add_argument("--repair-models", default="overflow,mlp,cnn,transformer,mlp-x1024")
    parser.add_argument("--tables", default="scaling,repair",
                        help="which tables: scaling (adaptive vs dynamic), repair")
    parser.add_argument("--flush-every", type=int, default=5,
                        help="measure the flushed fraction every N-th step (0: never)")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",")]
    tables = args.tables.split(",")
    for t in tables:
        if t not in ("scaling", "repair"):
            parser.error("unknown table '%s' (expected scaling, repair)" % t)
    models = args.models.split(",") if "scaling" in tables else []
    repair_models = args.repair_models.split(",") if "repair" in tables else []
    for m in models + repair_models:
        if m not in MODELS:
            parser.error("unknown model '%s' (expected %s)" % (m, ", ".join(MODELS)))
    data_path = os.path.join(ROOT, "build", "data", "digits.npz")
    data = dict(np.load(data_path))
    if "transformer" in models + repair_models:
        export_transformer(MODELS["transformer"][0])
    if "mlp-x1024" in models + repair_models:
        export_mlp_x1024(MODELS["mlp-x1024"][0])

    if models:
        scaling_table(models, seeds, args.epochs, data, args.flush_every)
    if repair_models:
        repair_table(repair_models, seeds, args.epochs, data)


def scaling_table(models, seeds, epochs, data, flush_every):
    configs = [("f32", "f32", "none"), ("f16 dynamic", "f16", "dynamic"),
               ("f16 adaptive", "f16", "adaptive")]
    print("adaptive vs dynamic loss scaling: %d epochs, seeds %s, batch %d, "
          "flushed measured every %d-th step" % (epochs, ",".join(map(str, seeds)),
                                                  BATCH, flush_every))
    header = "%-12s %-13s %8s %7s  %-22s %10s %10s  %-24s %8s" % (
        "model", "mode", "skipped", "steps", "scale median (range)", "flushed",
        "at scale 1", "accuracy per seed", "vs f32")
    print(header)
    print("-" * len(header))
    sys.stdout.flush()
    for name in models:
        f32_acc = {}
        for label, precision, loss_scale in configs:
            results = []
            for seed in seeds:
                r = run(name, precision, loss_scale, seed, epochs, data, flush_every)
                results.append(r)
                if precision == "f32":
                    f32_acc[seed] = r["accuracy"]
            accs = [r["accuracy"] for r in results]
            mean = statistics.mean(accs)
            diff = mean - statistics.mean(f32_acc[s] for s in seeds)
            scales = [s for r in results for s in r["scales"]]
            if precision == "f32":
                scale_text, flushed, flushed1, skipped = "-", "-", "-", "-"
            else:
                scale_text = "%s (%s..%s)" % (fmt_scale(statistics.median(scales)),
                                              fmt_scale(min(scales)), fmt_scale(max(scales)))
                nonzero = sum(r["nonzero"] for r in results)
                flushed = "%.2e" % (sum(r["flushed"] for r in results) / max(nonzero, 1))
                flushed1 = "%.2e" % (sum(r["flushed1"] for r in results) / max(nonzero, 1))
                skipped = str(sum(r["skipped"] for r in results))
            print("%-12s %-13s %8s %7d  %-22s %10s %10s  %-24s %+7.2f" % (
                name, label, skipped, sum(r["steps"] for r in results), scale_text,
                flushed, flushed1, " ".join("%.2f" % a for a in accs) + " = %.2f" % mean,
                diff))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
