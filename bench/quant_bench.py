#!/usr/bin/env python3
"""INT8 accuracy: post-training quantization against quantization-aware
training, mp against PyTorch, on a model whose activations have outlier
channels.

The model: the digits MLP (examples/digits_mlp.mlir, 64-512-512-10) trained
in f32 by `mp-run train` (--epochs, seed 0), then given outlier channels
without changing its function: for --outliers hidden units of each hidden
layer, the unit's incoming weights and bias are multiplied by --gain and
its outgoing weights divided by it (ReLU commutes with a positive scale).
The f32 model predicts as before, but each hidden layer's per-tensor
activation range is --gain times wider, so post-training quantization
rounds the other units coarsely: the case quantization-aware training is
for.

Then, on the same weights, data and batches:
  - f32: held-out accuracy of the outlier model;
  - PTQ: calibrated on the first --calibrate batches of the training split,
    int8 with per-channel weights (mp: mp-run infer --calibrate /
    --precision int8, minmax; PyTorch: prepare / convert with the onednn
    qconfig, its HistogramObserver);
  - QAT: --qat-epochs of SGD (--lr, momentum 0.9) from the outlier model in
    mp-run's batch order, then int8 (mp: mp-run train --qat --init-from,
    mp-run infer --precision int8 from the checkpoint's observers;
    PyTorch 1.13: prepare_qat with the onednn QAT qconfig, the same
    batches, convert);
  - f32 fine-tuning with the same schedule (what QAT's int8 is compared
    with besides the starting model).
Prints a markdown table of held-out accuracies (360 rows: one row is 0.28
point) and each one's difference to its framework's f32 model; the
check that both frameworks start from the same function is that their f32
accuracies agree and their f32 logits match to 1e-4.

With --speed it then measures int8 speed in the same run: dynamic INT8
against PyTorch's quantize_dynamic (and f32, bf16) on the wide MLP
(784-2048-2048-10, batch 256) and the transformer block's inference,
through bench/transformer_bench.py's warm processes, rotated rounds and
medians (--seconds, --rounds).

Needs: scripts/setup.sh done (build/bin/mp-run, build/data/digits.npz);
Debian's python3-torch for the PyTorch columns (/usr/bin/python3).
Usage: bench/quant_bench.py [--epochs 10] [--gain 64] [--outliers 4]
           [--qat-epochs 2] [--lr 0.001] [--calibrate 10]
           [--speed [--seconds 8] [--rounds 5]]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MP_BUILD_DIR", os.path.join(ROOT, "build"))
MP_RUN = os.path.join(BUILD, "bin", "mp-run")
MODEL = os.path.join(ROOT, "examples", "digits_mlp.mlir")
DATA = os.path.join(BUILD, "data", "digits.npz")
ACCURACY = re.compile(r"held-out accuracy ([0-9.]+)% \(([\w-]+)(?: reference| inference)?\)")
BATCH = 64
LAYERS = (("w1", "b1", "w2"), ("w2", "b2", "w3"))


def mp_run(*args):
    result = subprocess.run([MP_RUN, *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("mp-run %s failed:\n%s%s" % (" ".join(args), result.stdout, result.stderr))
    return result.stdout


def accuracy(output, kind):
    found = [float(m.group(1)) for m in ACCURACY.finditer(output) if m.group(2) == kind]
    if not found:
        sys.exit("no '%s' accuracy in:\n%s" % (kind, output))
    return found[-1]


def add_outliers(source, target, gain, count):
    """The function-preserving rescaling of `count` units per hidden layer;
    the optimizer state is dropped (a fine-tuning starts afresh)."""
    params = dict(np.load(source))
    rng = np.random.default_rng(0)
    for w, b, following in LAYERS:
        for unit in rng.choice(params[w].shape[1], count, replace=False):
            params[w][:, unit] *= gain
            params[b][unit] *= gain
            params[following][unit, :] /= gain
    np.savez(target, **{k: v for k, v in params.items() if not k.endswith(".momentum")})


def run_mp(args, work):
    f32 = os.path.join(work, "f32.npz")
    outliers = os.path.join(work, "outliers.npz")
    mp_run("train", MODEL, "--epochs", str(args.epochs), "--checkpoint", f32)
    add_outliers(f32, outliers, args.gain, args.outliers)
    stats = os.path.join(work, "stats.json")
    mp_run("infer", MODEL, "--checkpoint", outliers, "--calibrate", str(args.calibrate),
           "--calibration-out", stats)
    ptq = mp_run("infer", MODEL, "--checkpoint", outliers, "--precision", "int8",
                 "--calibration", stats, "--quant-per-channel", "--quant-measure", "0",
                 "--quant-max-error", "1")
    rows = {"f32 (outlier model)": accuracy(ptq, "f32"), "PTQ int8": accuracy(ptq, "int8")}
    schedule = ["--init-from", outliers, "--epochs", str(args.qat_epochs),
                "--lr", str(args.lr)]
    qat = os.path.join(work, "qat.npz")
    mp_run("train", MODEL, "--qat", *schedule, "--checkpoint", qat)
    out = mp_run("infer", MODEL, "--checkpoint", qat, "--precision", "int8")
    rows["QAT int8"] = accuracy(out, "int8")
    rows["QAT, same weights in f32"] = accuracy(out, "f32")
    tuned = os.path.join(work, "tuned.npz")
    mp_run("train", MODEL, *schedule, "--checkpoint", tuned)
    rows["f32 fine-tuned, same schedule"] = accuracy(
        mp_run("infer", MODEL, "--checkpoint", tuned), "f32")
    return rows, outliers


TORCH = r'''
import json, sys
import numpy as np, torch
import torch.ao.quantization as tq
sys.path.insert(0, sys.argv[5])
from mp import runtime
checkpoint, data_path, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out_logits = sys.argv[4]
torch.manual_seed(0)
torch.backends.quantized.engine = "onednn"
params = np.load(checkpoint)
data = np.load(data_path)
xtr, ytr = torch.from_numpy(data["x_train"]), torch.from_numpy(data["labels_train"]).long()
xte, labels = torch.from_numpy(data["x_test"]), data["labels_test"]

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.fc1, self.relu1 = torch.nn.Linear(64, 512), torch.nn.ReLU()
        self.fc2, self.relu2 = torch.nn.Linear(512, 512), torch.nn.ReLU()
        self.fc3 = torch.nn.Linear(512, 10)
    def forward(self, x):
        x = self.quant(x)
        x = self.relu2(self.fc2(self.relu1(self.fc1(x))))
        return self.dequant(self.fc3(x))

def fresh():
    m = MLP()
    with torch.no_grad():
        for i, fc in enumerate((m.fc1, m.fc2, m.fc3), 1):
            fc.weight.copy_(torch.from_numpy(params["w%d" % i].T.copy()))
            fc.bias.copy_(torch.from_numpy(params["b%d" % i]))
    return m

def acc(m):
    m.eval()
    with torch.no_grad():
        return 100.0 * float(np.mean(m(xte).argmax(1).numpy() == labels))

def fit(m):
    opt = torch.optim.SGD(m.parameters(), lr=args["lr"], momentum=0.9)
    m.train()
    for epoch in range(1, args["qat_epochs"] + 1):
        order = torch.from_numpy(runtime.epoch_order(xtr.shape[0], epoch))
        for first in range(0, xtr.shape[0] - 64 + 1, 64):
            idx = order[first:first + 64]
            loss = torch.nn.functional.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return m

def fused(m):
    return tq.fuse_modules(m, [["fc1", "relu1"], ["fc2", "relu2"]], inplace=False)

rows = {}
f32 = fresh().eval()
rows["f32 (outlier model)"] = acc(f32)
with torch.no_grad():
    np.save(out_logits, f32(xte).numpy())

ptq = fused(fresh().eval())
ptq.qconfig = tq.get_default_qconfig("onednn")
tq.prepare(ptq, inplace=True)
with torch.no_grad():
    ptq(xtr[:64 * args["calibrate"]])
rows["PTQ int8"] = acc(tq.convert(ptq))

qat = fused(fresh().train())
qat.qconfig = tq.get_default_qat_qconfig("onednn")
tq.prepare_qat(qat, inplace=True)
fit(qat)
rows["QAT, same weights in f32"] = None
rows["QAT int8"] = acc(tq.convert(qat.eval()))
rows["f32 fine-tuned, same schedule"] = acc(fit(fresh()))
print(json.dumps(rows))
'''


def run_torch(args, outliers, work):
    logits = os.path.join(work, "torch_logits.npy")
    settings = {"lr": args.lr, "qat_epochs": args.qat_epochs, "calibrate": args.calibrate}
    import json
    env = dict(os.environ, MP_BUILD_DIR=BUILD)
    result = subprocess.run(["/usr/bin/python3", "-c", TORCH, outliers, DATA,
                             json.dumps(settings), logits, os.path.join(ROOT, "python")],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        print("PyTorch rows skipped: %s" % result.stderr.strip().splitlines()[-1:],
              file=sys.stderr)
        return None, None
    return json.loads(result.stdout.strip().splitlines()[-1]), np.load(logits)


def mp_logits(outliers):
    """The outlier model's f32 logits, computed in NumPy from its weights
    (the function mp-run's f32 session computes)."""
    params = np.load(outliers)
    h = np.load(DATA)["x_test"]
    for i in (1, 2, 3):
        h = h @ params["w%d" % i] + params["b%d" % i]
        if i < 3:
            h = np.maximum(h, 0)
    return h


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--gain", type=float, default=64.0)
    parser.add_argument("--outliers", type=int, default=4)
    parser.add_argument("--qat-epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--calibrate", type=int, default=10)
    parser.add_argument("--speed", action="store_true",
                        help="also time dynamic int8 against quantize_dynamic")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for path in (MP_RUN, DATA):
        if not os.path.exists(path):
            sys.exit("%s is missing: run scripts/setup.sh" % path)
    with tempfile.TemporaryDirectory() as work:
        print("mp: training the f32 model, outliers x%g on %d units a layer, PTQ, "
              "QAT ..." % (args.gain, args.outliers), file=sys.stderr, flush=True)
        mp_rows, outliers = run_mp(args, work)
        print("PyTorch: the same ...", file=sys.stderr, flush=True)
        torch_rows, torch_logits = run_torch(args, outliers, work)
        same = None
        if torch_logits is not None:
            want = mp_logits(outliers)
            same = float(np.abs(torch_logits - want).max() / np.abs(want).max())
    print("## INT8 accuracy on digits (MLP 64-512-512-10 with outlier channels: "
          "x%g on %d units a hidden layer)\n" % (args.gain, args.outliers))
    print("QAT and fine-tuning: %d epochs, SGD lr %g momentum 0.9, mp-run's batch "
          "order; PTQ calibrated on %d batches.\n" % (args.qat_epochs, args.lr,
                                                       args.calibrate))
    print("| model | mp | vs mp f32 | PyTorch 1.13 (onednn) | vs PyTorch f32 |")
    print("|---|---:|---:|---:|---:|")
    base = mp_rows["f32 (outlier model)"]
    torch_base = torch_rows["f32 (outlier model)"] if torch_rows else None
    for name, value in mp_rows.items():
        other = torch_rows.get(name) if torch_rows else None
        print("| %s | %.2f%% | %+.2f | %s | %s |" % (
            name, value, value - base,
            "%.2f%%" % other if other is not None else "-",
            "%+.2f" % (other - torch_base) if other is not None else "-"))
    if same is not None:
        print("\nSame model in both: f32 logits agree to %.1e (max relative); "
              "f32 accuracies %.2f%% and %.2f%%." % (same, base, torch_base))
        if same > 1e-4:
            sys.exit("the PyTorch model does not compute mp's function")
    if args.speed:
        sys.stdout.flush()
        result = subprocess.run(
            ["/usr/bin/python3", os.path.join(ROOT, "bench", "transformer_bench.py"),
             "--workloads", "mlp-infer,block-infer", "--seconds", str(args.seconds),
             "--rounds", str(args.rounds)])
        if result.returncode != 0:
            sys.exit("the speed measurement failed")


if __name__ == "__main__":
    main()
