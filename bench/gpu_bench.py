#!/usr/bin/env python3
"""Training throughput and memory on the GPU: mp against PyTorch AMP.

Two models (--model mlp, transformer or all, the default), each run one
configuration after the other in its own process on the same machine:

MLP: mp-run train --device cuda on an MLP (64 features, two hidden layers
of --hidden units, 10 classes; examples/digits_mlp.mlir resized) in f32,
f16 (dynamic loss scaling) and bf16, on synthetic data (a random linear
teacher labels Gaussian inputs, so accuracy says the run learned); PyTorch
on the same MLP, data and schedule (SGD momentum 0.9, lr 0.05): FP32,
autocast f16 with GradScaler, autocast bf16. Speed: samples/s, the median
of epochs 2..N.

Transformer: one nn.TransformerEncoderLayer (--d-model, --heads, feed-
forward 4 x d_model, post-norm, ReLU, no dropout) on --sequences sequences
of --seq-len tokens, exported with mp.export_training(loss="mse")
and trained through mp.runtime.Session (device cuda or cpu) in f32, f16
and bf16; PyTorch trains the same module from the same initial parameters
(mp.load_params) in FP32, autocast f16 + GradScaler and autocast
bf16. x is [tokens, d_model] (viewed as [sequences, seq_len, d_model]
inside the module), the target the next token's x in its sequence, MSE
loss, SGD momentum 0.9, lr 0.05, the same batch every step. Both take the
batch from host memory at every step (the Session uploads x and labels;
PyTorch copies them with .to(device)). Speed: tokens/s, the median step
after the first two.

Prints the table of each model: quality (held-out accuracy; first and
final loss), speed, the ratio to the same framework's FP32, mp against
PyTorch AMP in the same precision, and peak device memory (mp: its
runtime's device pool, in use plus cached; PyTorch: max_memory_allocated;
"n/a" where there is none to read, e.g. the transformer on the CPU) and,
for mp, the device memory its GPU lowering plans to hold at the step's
peak, the session's buffers included (scripts/device_memory_plan.py on
the step mp dumped; computed on any machine, so a CPU dry run shows it
too, and on a GPU it can be set against the measured pool peak). With
--require, checks the GPU issue's targets (mixed >= 1.4x own FP32; mp
mixed >= PyTorch AMP; mp mixed memory <= 0.7x mp FP32; mixed quality
close to FP32's) and exits 1 when one is missed. Exit 3: a run failed (a
message or a traceback), so a missed target is never mistaken for an error.

--device cpu runs the same comparison on the CPU (PyTorch without f16
autocast), as a dry run of the script where there is no GPU.

Usage: bench/gpu_bench.py [--device cuda] [--model all] [--require]
         MLP:         [--hidden 4096] [--batch 1024] [--epochs 4] [--rows 32768]
         transformer: [--d-model 4096] [--heads 32] [--sequences 64]
                      [--seq-len 512] [--steps 10]
  e.g. bench/gpu_bench.py --device cpu --model transformer --d-model 64 \
         --heads 4 --sequences 4 --seq-len 16 --steps 4
"""
import argparse
import collections
import concurrent.futures
import ctypes
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCH = re.compile(r"^epoch (\d+)/\d+ .*test accuracy ([0-9.]+)%\s+(\d+) samples/s")
POOL = re.compile(r"the device pool held at most (\d+) bytes")
HEAP = re.compile(r"^memory: weights (\d+) bytes .* held at most (\d+) bytes", re.M)
FEATURES, CLASSES = 64, 10
sys.path.insert(0, os.path.join(ROOT, "python"))  # mp, for the transformer

# One configuration's outcome: quality (accuracy %, or the (first, final)
# loss), speed (samples/s or tokens/s) and peak device memory in bytes
# (None: not measured).
Result = collections.namedtuple("Result", "quality speed peak plan",
                                defaults=(None,))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import device_memory_plan  # noqa: E402
from mp import run_mlir  # noqa: E402  (build_dir: $MP_BUILD_DIR or build/)


def planned_bytes(step):
    """Device bytes the GPU lowering of a dumped step (MP_DUMP_STEP_IR)
    plans to hold at its peak, the session's buffers included (no GPU
    needed; scripts/device_memory_plan.py), or None."""
    mp_opt = os.path.join(run_mlir.build_dir(), "bin", "mp-opt")
    # The GPU machine's bundle (scripts/gpu_bundle.sh) has no mp-opt: the
    # column then says n/a.
    if not os.path.exists(step) or not os.path.exists(mp_opt):
        return None
    peak, arguments = device_memory_plan.entry_plan(mp_opt, step)
    return peak + arguments or None


def resized_mlp(hidden, batch):
    """examples/digits_mlp.mlir with `hidden` units and `batch` rows."""
    with open(os.path.join(ROOT, "examples", "digits_mlp.mlir")) as f:
        text = f.read()
    # w1 is 64 (features) x 512; every other leading 64 is the batch.
    text = text.replace("512", "HIDDEN")
    w1 = "tensor<64xHIDDENxf32>"
    text = text.replace(f"%w1: {w1}", "%w1: W1TYPE")
    text = text.replace(f"tensor<64x64xf32>, {w1})", "tensor<64x64xf32>, W1TYPE)")
    text = re.sub(r"tensor<64x", f"tensor<{batch}x", text)
    text = text.replace("tensor<64xf32>", f"tensor<{batch}xf32>")
    text = text.replace("0.015625 : f32", f"{1.0 / batch!r} : f32")
    return text.replace("W1TYPE", w1).replace("HIDDEN", str(hidden))


def synthetic_data(path, rows, test_rows, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)

    def split(n):
        x = rng.standard_normal((n, FEATURES)).astype(np.float32)
        labels = (x @ teacher).argmax(1)
        return x, np.eye(CLASSES, dtype=np.float32)[labels], labels

    xtr, ytr, ltr = split(rows)
    xte, yte, lte = split(test_rows)
    np.savez(path, x_train=xtr, y_train=ytr, x_test=xte, y_test=yte,
             labels_train=ltr, labels_test=lte)


def run_mp(model, data, device, precision, epochs):
    command = [os.path.join(run_mlir.build_dir(), "bin", "mp-run"), "train", model,
               "--device", device, "--precision", precision, "--epochs",
               str(epochs), "--lr", "0.05", "--momentum", "0.9", "--seed", "0",
               "--data", data]
    step = os.path.join(os.path.dirname(model), f"step_{precision}.mlir")
    out = subprocess.run(command, capture_output=True, text=True,
                         env=dict(os.environ, MP_DUMP_STEP_IR=step))
    if out.returncode != 0:
        print(f"{' '.join(command)} failed:\n{out.stdout}{out.stderr}", file=sys.stderr)
        sys.exit(3)
    rows = [m for m in map(EPOCH.match, out.stdout.splitlines()) if m]
    speeds = [float(m.group(3)) for m in rows if int(m.group(1)) > 1]
    speed = statistics.median(speeds or [float(rows[-1].group(3))])
    memory = POOL.search(out.stdout) or HEAP.search(out.stdout)
    peak = (int(memory.group(1)) if memory.re is POOL
            else int(memory.group(1)) + int(memory.group(2))) if memory else 0
    return Result(float(rows[-1].group(2)), speed, peak or None, planned_bytes(step))


TORCH = r'''
import contextlib, sys, time, statistics
import numpy as np, torch
data, device, mode, epochs, batch, hidden = sys.argv[1:7]
epochs, batch, hidden = int(epochs), int(batch), int(hidden)
torch.manual_seed(0)
d = np.load(data)
xtr = torch.from_numpy(d["x_train"]).to(device)
ytr = torch.from_numpy(d["labels_train"]).to(device)
xte = torch.from_numpy(d["x_test"]).to(device)
yte = torch.from_numpy(d["labels_test"]).to(device)
model = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                            torch.nn.Linear(hidden, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(mode)
scaler = torch.cuda.amp.GradScaler() if (mode == "f16" and device == "cuda") else None
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
if device == "cuda":
    torch.cuda.reset_peak_memory_stats()
speeds = []
for epoch in range(epochs):
    order = torch.randperm(xtr.shape[0], device=device)
    sync(); start = time.perf_counter(); n = 0
    for i in range(0, xtr.shape[0] - batch + 1, batch):
        idx = order[i:i + batch]
        amp = torch.autocast(device, dtype=dtype) if dtype else contextlib.nullcontext()
        with amp:
            loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
        opt.zero_grad()
        if scaler:
            scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        else:
            loss.backward(); opt.step()
        n += batch
    sync(); speeds.append(n / (time.perf_counter() - start))
with torch.no_grad():
    acc = (model(xte).argmax(1) == yte).float().mean().item() * 100
peak = torch.cuda.max_memory_allocated() if device == "cuda" else 0
print(acc, statistics.median(speeds[1:] or speeds), peak)
'''


def run_torch(data, device, mode, epochs, batch, hidden):
    out = subprocess.run([sys.executable, "-c", TORCH, data, device, mode,
                          str(epochs), str(batch), str(hidden)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"  (pytorch {mode} failed: {out.stderr.strip().splitlines()[-1:]})",
              file=sys.stderr)
        return None
    acc, speed, peak = out.stdout.split()
    return Result(float(acc), float(speed), int(peak) or None)


def mlp_bench(args):
    """Both frameworks on the MLP: ({precision: Result} for mp, for PyTorch)."""
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, f"mlp_h{args.hidden}_b{args.batch}.mlir")
        with open(model, "w") as f:
            f.write(resized_mlp(args.hidden, args.batch))
        data = os.path.join(work, "data.npz")
        synthetic_data(data, args.rows, max(args.batch, 4096))
        mp, torch = {}, {}
        for precision in ("f32", "f16", "bf16"):
            print(f"  mp {precision} ...", file=sys.stderr)
            mp[precision] = run_mp(model, data, args.device, precision, args.epochs)
        for mode in torch_modes(args.device):
            print(f"  pytorch {mode} ...", file=sys.stderr)
            result = run_torch(data, args.device, mode, args.epochs, args.batch, args.hidden)
            if result:
                torch[mode] = result
    return mp, torch


# -- the transformer encoder block --------------------------------------------

LR, MOMENTUM, WARMUP_STEPS = 0.05, 0.9, 2


def encoder_block(cfg):
    """The benchmark's module: x [tokens, d_model] -> a TransformerEncoderLayer
    over [sequences, seq_len, d_model] -> [tokens, d_model]."""
    import torch.nn as nn

    class EncoderBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(
                cfg["d_model"], cfg["heads"], 4 * cfg["d_model"], dropout=0.0,
                batch_first=True)

        def forward(self, x):
            shape = (cfg["sequences"], cfg["seq_len"], cfg["d_model"])
            return self.layer(x.view(shape)).view(x.shape)

    return EncoderBlock()


def block_data(cfg, seed=1):
    """x ~ N(0, 1) [tokens, d_model] and the target: the next token's x in
    the same sequence (for the last token, the first's)."""
    import numpy as np
    shape = (cfg["sequences"], cfg["seq_len"], cfg["d_model"])
    x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    target = np.ascontiguousarray(np.roll(x, -1, axis=1))
    return x.reshape(-1, shape[2]), target.reshape(-1, shape[2])


def export_block(cfg, work):
    """Writes the block's training MLIR and its initial parameters (mp.param
    names) to `work`; returns their paths."""
    import torch
    import mp
    torch.manual_seed(0)
    module = encoder_block(cfg)
    params = os.path.join(work, "params.npz")
    mp.save_params(module, params)
    # Export needs shapes only: on the meta device it skips a forward pass
    # on the CPU (minutes at the default size).
    tokens = cfg["sequences"] * cfg["seq_len"]
    x = torch.empty(tokens, cfg["d_model"], device="meta")
    model = os.path.join(work, "block.mlir")
    with open(model, "w") as f:
        f.write(mp.export_training(module.to("meta"), x, loss="mse"))
    return model, params


def timed_steps(step, steps, sync):
    """Runs `step` (returns the loss) `steps` times: (losses, median seconds
    per step after the warm-up)."""
    losses, seconds = [], []
    for _ in range(steps):
        start = time.perf_counter()
        losses.append(step())
        sync()
        seconds.append(time.perf_counter() - start)
    return losses, statistics.median(seconds[min(WARMUP_STEPS, steps - 1):])


def mp_pool_peak():
    """Peak bytes of the device pool of the libmprt_cuda.so the Session
    loaded in this process (mprt_cuda_pool_get_stats), or None."""

    class Stats(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in (
            "bytes_in_use", "bytes_cached", "peak_bytes", "device_allocs", "pool_hits")]

    path = os.environ.get("MPRT_CUDA_LIBRARY",
                          os.path.join(run_mlir.build_dir(), "lib", "libmprt_cuda.so"))
    try:  # RTLD_NOLOAD: the Session's copy, never a fresh (empty) one
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        return None
    stats = Stats()
    lib.mprt_cuda_pool_get_stats(ctypes.byref(stats))
    return stats.peak_bytes or None


def mp_block_run(cfg, model, params, precision):
    """mp.runtime.Session on the block (in a process of its own)."""
    import numpy as np
    from mp.runtime import Session
    x, target = block_data(cfg)
    step = os.path.join(os.path.dirname(model), f"step_{precision}.mlir")
    os.environ["MP_DUMP_STEP_IR"] = step  # this process is the run's own
    session = Session(model, precision=precision, lr=LR, momentum=MOMENTUM,
                      device=cfg["device"])
    with np.load(params) as arrays:
        for name in arrays.files:
            session.set(name, arrays[name])
    losses, seconds = timed_steps(lambda: session.train_step(x, target)[0],
                                  cfg["steps"], lambda: None)
    peak = mp_pool_peak() if cfg["device"] == "cuda" else None
    return Result((losses[0], losses[-1]), x.shape[0] / seconds, peak,
                  planned_bytes(step))


def torch_block_run(cfg, params, mode):
    """PyTorch on the block (in a process of its own): FP32, or autocast
    f16 (GradScaler) / bf16."""
    import contextlib
    import torch
    import mp
    device = cfg["device"]
    module = encoder_block(cfg)
    mp.load_params(module, params)
    module.to(device)
    x, target = (torch.from_numpy(a) for a in block_data(cfg))
    opt = torch.optim.SGD(module.parameters(), lr=LR, momentum=MOMENTUM)
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(mode)
    scaler = torch.cuda.amp.GradScaler() if mode == "f16" else None

    def step():
        xd, td = x.to(device), target.to(device)
        amp = torch.autocast(device, dtype=dtype) if dtype else contextlib.nullcontext()
        with amp:
            loss = torch.nn.functional.mse_loss(module(xd), td)
        opt.zero_grad(set_to_none=True)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss.item()

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    losses, seconds = timed_steps(step, cfg["steps"], sync)
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    return Result((losses[0], losses[-1]), x.shape[0] / seconds, peak)


def isolated(function, *args):
    """function(*args) in a fresh process (spawned: its own CUDA context and
    device pool, so each peak is that configuration's alone)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


def transformer_bench(args):
    """Both frameworks on the encoder block: ({precision: Result}, ...)."""
    cfg = dict(d_model=args.d_model, heads=args.heads, sequences=args.sequences,
               seq_len=args.seq_len, steps=args.steps, device=args.device)
    mp, torch = {}, {}
    with tempfile.TemporaryDirectory() as work:
        print("  exporting the encoder block ...", file=sys.stderr)
        model, params = isolated(export_block, cfg, work)
        for precision in ("f32", "f16", "bf16"):
            print(f"  mp {precision} ...", file=sys.stderr)
            mp[precision] = isolated(mp_block_run, cfg, model, params, precision)
        for mode in torch_modes(args.device):
            print(f"  pytorch {mode} ...", file=sys.stderr)
            try:
                torch[mode] = isolated(torch_block_run, cfg, params, mode)
            except Exception as e:  # noqa: BLE001 - reported, the rest still runs
                print(f"  (pytorch {mode} failed: {type(e).__name__}: {e})", file=sys.stderr)
    return mp, torch


# -- report -------------------------------------------------------------------

def torch_modes(device):
    return ("f32", "f16", "bf16") if device == "cuda" else ("f32", "bf16")


def print_table(heading, quality_header, quality, unit, mp, torch):
    """One markdown table: a row per framework and precision."""
    print(heading)
    print()
    print(f"| run | {quality_header} | {unit} | vs own f32 | mp vs PyTorch (same "
          "precision) | peak memory MiB | planned GPU MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, results in (("mp", mp), ("pytorch", torch)):
        for precision, result in results.items():
            base = results["f32"].speed if "f32" in results else result.speed
            other = torch.get(precision) if name == "mp" else None
            versus = f"{result.speed / other.speed:.2f}x" if other else "-"
            label = f"{name} {precision}" + (" autocast" if name == "pytorch" and
                                             precision != "f32" else "")
            peak = f"{result.peak / 2**20:.1f}" if result.peak else "n/a"
            plan = f"{result.plan / 2**20:.1f}" if result.plan else "-"
            print(f"| {label} | {quality(result.quality)} | {result.speed:.0f} | "
                  f"{result.speed / base:.2f}x | {versus} | {peak} | {plan} |")
    print()


def check_targets(model, mp, torch, close, check):
    """The issue's targets for mp's f16 and bf16 runs of `model`; `close`
    (mixed quality, f32 quality) -> (ok, text) compares quality."""
    f32 = mp["f32"]
    for precision in ("f16", "bf16"):
        result = mp[precision]
        check(result.speed >= 1.4 * f32.speed,
              f"{model}: mp {precision} {result.speed / f32.speed:.2f}x mp f32 "
              "(target >= 1.40x)")
        if precision in torch:
            check(result.speed >= torch[precision].speed,
                  f"{model}: mp {precision} {result.speed / torch[precision].speed:.2f}x "
                  "PyTorch AMP (target >= 1.00x)")
        else:
            check(False, f"{model}: mp {precision} against PyTorch AMP (PyTorch did not run)")
        if f32.peak and result.peak:
            check(result.peak <= 0.7 * f32.peak,
                  f"{model}: mp {precision} memory {result.peak / f32.peak:.2f}x mp f32 "
                  "(target <= 0.70x)")
        else:
            print(f"n/a: {model}: mp {precision} memory (no device pool to read)")
        if f32.plan and result.plan:
            print(f"plan: {model}: mp {precision} planned GPU memory "
                  f"{result.plan / f32.plan:.2f}x mp f32 (target <= 0.70x; the "
                  "plan of the GPU lowering, informational)")
        check(*close(precision, result.quality, f32.quality))


def accuracy_close(precision, acc, f32):
    return (abs(acc - f32) <= 0.5,
            f"mlp: mp {precision} accuracy {acc:.2f}% vs f32 {f32:.2f}% (within 0.5 point)")


def loss_close(precision, loss, f32):
    return (abs(loss[1] - f32[1]) <= 0.01 * abs(f32[1]) and loss[1] < loss[0],
            f"transformer: mp {precision} loss {loss[0]:.5g} -> {loss[1]:.5g} vs f32 "
            f"-> {f32[1]:.5g} (down, and within 1%)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--model", choices=["mlp", "transformer", "all"], default="all")
    parser.add_argument("--hidden", type=int, default=4096, help="MLP hidden units")
    parser.add_argument("--batch", type=int, default=1024, help="MLP batch")
    parser.add_argument("--epochs", type=int, default=4, help="MLP epochs")
    parser.add_argument("--rows", type=int, default=32768, help="MLP training rows")
    parser.add_argument("--d-model", type=int, default=4096, help="transformer width")
    parser.add_argument("--heads", type=int, default=32, help="transformer heads")
    parser.add_argument("--sequences", type=int, default=64, help="transformer batch")
    parser.add_argument("--seq-len", type=int, default=512, help="tokens per sequence")
    parser.add_argument("--steps", type=int, default=10, help="transformer steps")
    parser.add_argument("--require", action="store_true",
                        help="exit 1 unless the GPU targets are met")
    args = parser.parse_args()
    if args.d_model % args.heads:
        parser.error("--d-model must be a multiple of --heads")
    tables = []
    if args.model in ("mlp", "all"):
        mp, torch = mlp_bench(args)
        print_table(f"## MLP 64-{args.hidden}-{args.hidden}-10 training on {args.device}, "
                    f"batch {args.batch}, {args.rows} rows, {args.epochs} epochs",
                    "held-out accuracy", lambda acc: f"{acc:.2f}%", "samples/s", mp, torch)
        tables.append(("mlp", mp, torch, accuracy_close))
    if args.model in ("transformer", "all"):
        mp, torch = transformer_bench(args)
        tokens = args.sequences * args.seq_len
        print_table(f"## Transformer encoder block training on {args.device}: d_model "
                    f"{args.d_model}, {args.heads} heads, feed-forward {4 * args.d_model}, "
                    f"{args.sequences} x {args.seq_len} = {tokens} tokens a step, "
                    f"{args.steps} steps", "loss first -> final",
                    lambda loss: f"{loss[0]:.5g} -> {loss[1]:.5g}", "tokens/s", mp, torch)
        tables.append(("transformer", mp, torch, loss_close))

    if not args.require:
        return
    missed = 0

    def check(ok, text):
        nonlocal missed
        print(("ok: " if ok else "FAIL: ") + text)
        missed += not ok

    for model, mp, torch, close in tables:
        check_targets(model, mp, torch, close, check)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    try:
        main()
    except Exception:  # a failed run, not a missed target: exit 3
        import traceback
        traceback.print_exc()
        sys.exit(3)
