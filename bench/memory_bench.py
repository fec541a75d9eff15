#!/usr/bin/env python3
"""Memory of training and inference in f32 against f16/bf16 (digits MLP).

Runs, in one go, the digits MLP 64-512-512-10 (examples/digits_mlp.mlir,
re-batched to each --batches size) through mp-run:
  - train, 1 epoch, in f32, bf16 and f16: the f32 parameters (weights) and
    the most bytes the compiled training step held on libmprt's counted
    heap (activations, gradients, low-precision weight copies, the step's
    new parameters and optimizer state before they are copied out);
  - infer (InferSession, --time-batches) with the f32 run's checkpoint in
    f32, bf16 and f16: the weight bytes the session holds (f16/bf16 copies
    made once, plus the f32 weights prediction still reads) and the most
    bytes one prediction held.
Prints a table per batch size: weights, peak, weights + peak and its ratio
to f32 (the issue's target: mixed at most 0.70x f32). What is counted:
docs/memory.md.

Usage: bench/memory_bench.py [--batches 64,1024] [--mp-run build/bin/mp-run]
                             [--weight-copies keep|convert]
                             [--require KIND:PRECISION:BATCH:MAX ...]
--weight-copies is mp-run train's (keep, the default: the 16-bit step keeps
copies of its weights between steps, counted with the weights; convert:
every step converts them).
--require fails (exit 1) unless that row's weights + peak is at most MAX
times f32's (test/mp-run/memory.test).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = re.compile(r"^memory: weights (\d+) bytes \(f32 parameters[^)]*\); compiled code "
                   r"held at most (\d+) bytes in a training step")
INFER = re.compile(r"^memory: weights (\d+) bytes held by the session; compiled "
                   r"code held at most (\d+) bytes in a prediction")


def rebatch(text, batch):
    """examples/digits_mlp.mlir with `batch` rows a batch instead of 64."""
    # w1 is 64 (features) x 512: protect it; every other leading 64 is the batch.
    w1 = "tensor<64x512xf32>"
    text = text.replace(f"%w1: {w1}", "%w1: W1TYPE")
    text = text.replace(f"tensor<64x64xf32>, {w1})", "tensor<64x64xf32>, W1TYPE)")
    text = re.sub(r"tensor<64x", f"tensor<{batch}x", text)
    text = text.replace("tensor<64xf32>", f"tensor<{batch}xf32>")
    text = text.replace("0.015625 : f32", f"{1.0 / batch!r} : f32")
    return text.replace("W1TYPE", w1)


def run(mp_run, args, pattern):
    out = subprocess.run([mp_run] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"mp-run {' '.join(args)} failed:\n{out.stdout}{out.stderr}")
    for line in out.stdout.splitlines():
        m = pattern.match(line)
        if m:
            return int(m.group(1)), int(m.group(2))
    sys.exit(f"mp-run {' '.join(args)}: no memory line in\n{out.stdout}")


def measure(mp_run, batch, work, weight_copies):
    model = os.path.join(work, f"digits_mlp_b{batch}.mlir")
    with open(os.path.join(ROOT, "examples", "digits_mlp.mlir")) as f:
        text = rebatch(f.read(), batch)
    with open(model, "w") as f:
        f.write(text)
    rows = {}
    checkpoint = os.path.join(work, f"ckpt_b{batch}")
    for precision in ("f32", "bf16", "f16"):
        extra = ["--checkpoint", checkpoint] if precision == "f32" else []
        rows[("train", precision)] = run(
            mp_run, ["train", model, "--precision", precision, "--epochs", "1",
                     "--seed", "0", "--weight-copies", weight_copies] + extra,
            TRAIN)
    for precision in ("f32", "bf16", "f16"):
        rows[("infer", precision)] = run(
            mp_run, ["infer", model, "--checkpoint", checkpoint, "--precision",
                     precision, "--time-batches", "2"], INFER)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="64,1024")
    parser.add_argument("--mp-run", default=os.path.join(ROOT, "build", "bin", "mp-run"))
    parser.add_argument("--weight-copies", choices=("keep", "convert"), default="keep")
    parser.add_argument("--require", action="append", default=[],
                        metavar="KIND:PRECISION:BATCH:MAX")
    args = parser.parse_args()
    requirements = []
    for text in args.require:
        parts = text.split(":")
        if (len(parts) != 4 or parts[0] not in ("train", "infer")
                or parts[1] not in ("bf16", "f16")):
            sys.exit(f"bad --require '{text}': expected (train|infer):(bf16|f16):BATCH:MAX")
        requirements.append((parts[0], parts[1], int(parts[2]), float(parts[3])))
    ratios = {}
    mib = 1024.0 * 1024.0
    with tempfile.TemporaryDirectory() as work:
        for batch in [int(b) for b in args.batches.split(",")]:
            print(f"  batch {batch} ...", file=sys.stderr)
            rows = measure(args.mp_run, batch, work, args.weight_copies)
            print(f"## Digits MLP 64-512-512-10, batch {batch} "
                  f"(training with --weight-copies {args.weight_copies})")
            print()
            print("| run | precision | weights MiB | peak MiB (activations, "
                  "gradients, copies) | weights + peak MiB | vs f32 |")
            print("|---|---|---:|---:|---:|---:|")
            for kind in ("train", "infer"):
                w32, p32 = rows[(kind, "f32")]
                for precision in ("f32", "bf16", "f16"):
                    w, p = rows[(kind, precision)]
                    ratios[(kind, precision, batch)] = (w + p) / (w32 + p32)
                    print(f"| {kind} | {precision} | {w / mib:.3f} | {p / mib:.3f} "
                          f"| {(w + p) / mib:.3f} | {(w + p) / (w32 + p32):.2f}x |")
            print()
    failed = False
    for kind, precision, batch, most in requirements:
        ratio = ratios.get((kind, precision, batch))
        if ratio is None:
            print(f"FAIL: no {kind} {precision} row at batch {batch}")
            failed = True
        elif ratio > most:
            print(f"FAIL: {kind} {precision} batch {batch}: weights + peak is "
                  f"{ratio:.4f}x f32's, more than {most}x")
            failed = True
        else:
            print(f"ok: {kind} {precision} batch {batch}: {ratio:.4f}x f32 "
                  f"(at most {most}x)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
