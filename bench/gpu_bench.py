#!/usr/bin/env python3
"""Training throughput and memory on the GPU: mp against PyTorch AMP.

Runs, one after the other in one process tree on the same machine:
  - mp-run train --device cuda on an MLP (64 features, two hidden layers of
    --hidden units, 10 classes; examples/digits_mlp.mlir resized) in f32,
    f16 (dynamic loss scaling) and bf16, on synthetic data (a random linear
    teacher labels Gaussian inputs, so accuracy says the run learned);
  - PyTorch on the same MLP, data and schedule (SGD momentum 0.9, lr 0.05):
    FP32, autocast f16 with GradScaler, autocast bf16.
Prints held-out accuracy, steady-state samples/s (median of epochs 2..N),
the ratio to the same framework's FP32 and mp against PyTorch AMP in the
same precision, and peak device memory (mp: the runtime pool; PyTorch:
max_memory_allocated). With --require, checks the GPU issue's targets
(mixed >= 1.4x own FP32; mp mixed >= PyTorch AMP; mp mixed memory <= 0.7x
mp FP32) and exits 1 when one is missed.

--device cpu runs the same comparison on the CPU (PyTorch without f16
autocast), as a dry run of the script where there is no GPU.

Usage: bench/gpu_bench.py [--device cuda] [--hidden 4096] [--batch 1024]
                          [--epochs 4] [--rows 32768] [--require]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCH = re.compile(r"^epoch (\d+)/\d+ .*test accuracy ([0-9.]+)%\s+(\d+) samples/s")
POOL = re.compile(r"the device pool held at most (\d+) bytes")
HEAP = re.compile(r"^memory: weights (\d+) bytes .* held at most (\d+) bytes", re.M)
FEATURES, CLASSES = 64, 10


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
    command = [os.path.join(ROOT, "build", "bin", "mp-run"), "train", model,
               "--device", device, "--precision", precision, "--epochs",
               str(epochs), "--lr", "0.05", "--momentum", "0.9", "--seed", "0",
               "--data", data]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{out.stdout}{out.stderr}")
    rows = [m for m in map(EPOCH.match, out.stdout.splitlines()) if m]
    speeds = [float(m.group(3)) for m in rows if int(m.group(1)) > 1]
    speed = statistics.median(speeds or [float(rows[-1].group(3))])
    memory = POOL.search(out.stdout) or HEAP.search(out.stdout)
    peak = (int(memory.group(1)) if memory.re is POOL
            else int(memory.group(1)) + int(memory.group(2))) if memory else 0
    return float(rows[-1].group(2)), speed, peak


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
    return float(acc), float(speed), int(peak)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--require", action="store_true",
                        help="exit 1 unless the GPU targets are met")
    args = parser.parse_args()
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
        torch_modes = ("f32", "f16", "bf16") if args.device == "cuda" else ("f32", "bf16")
        for mode in torch_modes:
            print(f"  pytorch {mode} ...", file=sys.stderr)
            result = run_torch(data, args.device, mode, args.epochs, args.batch, args.hidden)
            if result:
                torch[mode] = result

    print(f"## MLP 64-{args.hidden}-{args.hidden}-10 training on {args.device}, "
          f"batch {args.batch}, {args.rows} rows, {args.epochs} epochs")
    print()
    print("| run | held-out accuracy | samples/s | vs own f32 | mp vs PyTorch (same "
          "precision) | peak memory MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, results in (("mp", mp), ("pytorch", torch)):
        for precision, (acc, speed, peak) in results.items():
            base = results.get("f32", (0, speed, 0))[1]
            other = torch.get(precision) if name == "mp" else None
            versus = f"{speed / other[1]:.2f}x" if other else "-"
            label = f"{name} {precision}" + (" autocast" if name == "pytorch" and
                                             precision != "f32" else "")
            print(f"| {label} | {acc:.2f}% | {speed:.0f} | {speed / base:.2f}x | "
                  f"{versus} | {peak / 2**20:.1f} |")

    if not args.require:
        return
    missed = 0

    def check(ok, text):
        nonlocal missed
        print(("ok: " if ok else "FAIL: ") + text)
        missed += not ok

    print()
    f32_speed, f32_peak = mp["f32"][1], mp["f32"][2]
    for precision in ("f16", "bf16"):
        acc, speed, peak = mp[precision]
        check(speed >= 1.4 * f32_speed,
              f"mp {precision} {speed / f32_speed:.2f}x mp f32 (target >= 1.40x)")
        if precision in torch:
            check(speed >= torch[precision][1],
                  f"mp {precision} {speed / torch[precision][1]:.2f}x PyTorch AMP "
                  "(target >= 1.00x)")
        else:
            check(False, f"mp {precision} against PyTorch AMP (PyTorch did not run)")
        if f32_peak:
            check(peak <= 0.7 * f32_peak,
                  f"mp {precision} memory {peak / f32_peak:.2f}x mp f32 (target <= 0.70x)")
        check(abs(acc - mp["f32"][0]) <= 0.5,
              f"mp {precision} accuracy {acc:.2f}% vs f32 {mp['f32'][0]:.2f}%")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
