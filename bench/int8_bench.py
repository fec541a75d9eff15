#!/usr/bin/env python3
"""Inference throughput of mp's INT8 model against f32, bf16/f16 and PyTorch.

One run, on one machine, the same trained digits MLP (64-512-512-10, batch
64):
  - mp-run train examples/digits_mlp.mlir (f32, --epochs) writes a
    checkpoint; mp-run infer --calibrate writes calibration statistics;
  - mp-run infer --time-batches N in f32, bf16, f16, int8 (minmax, per
    channel) and int8-dynamic (activation scales from each batch's own
    max |x|, no calibration; the mode of quantize_dynamic): samples/s of the compiled predict function alone, held-out
    accuracy, and the bytes of weights each prediction reads;
  - Debian's PyTorch 1.13 on the same weights: FP32 nn.Sequential, and
    torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=qint8),
    timed the same way (N batches of 64 after a warm-up).
Prints a markdown table with ratios to mp's f32 and to PyTorch's int8.

mp's oneDNN kernels and PyTorch get the same thread count (--threads; both
through OMP_NUM_THREADS / torch.set_num_threads).
Needs: scripts/setup.sh done; python3-torch for the PyTorch rows.
Usage: bench/int8_bench.py [--epochs 5] [--batches 2000] [--threads 1]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MP_RUN = os.path.join(ROOT, "build", "bin", "mp-run")
MODEL = os.path.join(ROOT, "examples", "digits_mlp.mlir")
ACCURACY = re.compile(r"held-out accuracy ([0-9.]+)% \(([\w-]+) inference\)")
TIMED = re.compile(r"timed \d+ batches of \d+: (\d+) samples/s")
WEIGHTS = re.compile(r"weights read per prediction: (\d+) bytes")


def mp(args, env):
    return subprocess.run([MP_RUN] + args, capture_output=True, text=True,
                          check=True, env=env).stdout


def run_mp(precision, checkpoint, stats, batches, env):
    args = ["infer", MODEL, "--checkpoint", checkpoint, "--precision",
            precision, "--time-batches", str(batches)]
    if precision == "int8":
        args += ["--calibration", stats]
    out = mp(args, env)
    return (float(ACCURACY.search(out).group(1)),
            float(TIMED.search(out).group(1)),
            int(WEIGHTS.search(out).group(1)))


TORCH = r'''
import sys, time, io
import numpy as np, torch
checkpoint, data_path, threads, batches = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
params = np.load(checkpoint)
data = np.load(data_path)
model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10))
with torch.no_grad():
    for i, layer in enumerate([model[0], model[2], model[4]]):
        # mp stores w as in x out; nn.Linear's weight is out x in.
        layer.weight.copy_(torch.from_numpy(params["w%d" % (i + 1)]).t())
        layer.bias.copy_(torch.from_numpy(params["b%d" % (i + 1)]))
model.eval()
quantized = torch.quantization.quantize_dynamic(model, {torch.nn.Linear},
                                                dtype=torch.qint8)
xte = torch.from_numpy(data["x_test"])
yte = np.argmax(data["y_test"], axis=1)
def size(m):
    buffer = io.BytesIO()
    torch.save(m.state_dict(), buffer)
    return buffer.tell()
for name, m in (("f32", model), ("int8", quantized)):
    with torch.no_grad():
        acc = (m(xte).argmax(1).numpy() == yte).mean() * 100
        x = xte[:64].contiguous()
        for _ in range(20):
            m(x)
        start = time.perf_counter()
        for _ in range(batches):
            m(x)
        speed = batches * 64 / (time.perf_counter() - start)
    print(name, acc, speed, size(m))
'''


def run_torch(checkpoint, batches, threads):
    data = os.path.join(ROOT, "build", "data", "digits.npz")
    out = subprocess.run(["/usr/bin/python3", "-c", TORCH, checkpoint, data,
                          str(threads), str(batches)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return {}
    rows = {}
    for line in out.stdout.splitlines():
        name, acc, speed, size = line.split()
        rows[name] = (float(acc), float(speed), int(size))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--require", action="store_true",
                        help="exit 1 unless the targets hold: int8 >= 1.5x mp "
                             "f32, faster than PyTorch's int8, weights >= 3.9x "
                             "smaller than f32")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = os.path.join(tmp, "mlp.npz")
        stats = os.path.join(tmp, "stats.json")
        print("  training (f32) ...", file=sys.stderr)
        mp(["train", MODEL, "--epochs", str(args.epochs), "--checkpoint",
            checkpoint], env)
        print("  calibrating ...", file=sys.stderr)
        mp(["infer", MODEL, "--checkpoint", checkpoint, "--calibrate", "10",
            "--calibration-out", stats], env)
        rows = []
        for precision in ("f32", "bf16", "f16", "int8", "int8-dynamic"):
            print(f"  mp {precision} ...", file=sys.stderr)
            rows.append((f"mp {precision}",) +
                        run_mp(precision, checkpoint, stats, args.batches, env))
        print("  pytorch ...", file=sys.stderr)
        torch_rows = run_torch(checkpoint, args.batches, args.threads)
    for name in ("f32", "int8"):
        if name in torch_rows:
            label = "pytorch f32" if name == "f32" else \
                "pytorch quantize_dynamic qint8"
            rows.append((label,) + torch_rows[name])
    base = rows[0][2]
    torch_int8 = torch_rows.get("int8", (0, 0, 0))[1]
    print(f"## Digits MLP 64-512-512-10 inference, batch 64, {args.batches} "
          f"timed batches, {args.threads} thread(s)")
    print()
    print("| run | held-out accuracy | samples/s | vs mp f32 | vs pytorch int8 "
          "| weight bytes |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, acc, speed, size in rows:
        vs_torch = f"{speed / torch_int8:.2f}x" if torch_int8 else "-"
        print(f"| {name} | {acc:.2f}% | {speed:.0f} | {speed / base:.2f}x | "
              f"{vs_torch} | {size} |")
    print()
    print("mp weight bytes: what a prediction reads (int8: i8 weights, f32 "
          "scales and biases); pytorch: its serialized state_dict.")
    f32_bytes = rows[0][3]
    int8_bytes = rows[3][3]
    print(f"mp int8 weights are {f32_bytes / int8_bytes:.2f}x smaller than "
          f"f32 ({int8_bytes} vs {f32_bytes} bytes).")
    if args.require:
        int8_speed = rows[3][2]
        # The i8 matrices are exactly 4x smaller; f32 biases and per-channel
        # scales stay, hence 3.9x for the whole.
        checks = [
            (int8_speed >= 1.5 * base, f"mp int8 {int8_speed / base:.2f}x mp f32 "
             "(target >= 1.50x)"),
            (bool(torch_int8) and int8_speed > torch_int8,
             f"mp int8 {int8_speed / torch_int8:.2f}x PyTorch int8 (target > 1.00x)"
             if torch_int8 else "mp int8 faster than PyTorch int8 (PyTorch did not run)"),
            (f32_bytes >= 3.9 * int8_bytes, f"weights {f32_bytes / int8_bytes:.2f}x "
             "smaller (target >= 3.90x: 4x for the i8 matrices)"),
        ]
        print()
        for ok, text in checks:
            print(("ok: " if ok else "FAIL: ") + text)
        sys.exit(0 if all(ok for ok, _ in checks) else 1)


if __name__ == "__main__":
    main()
