#!/usr/bin/env python3
"""The Python Session on the GPU against the same Session on the CPU.

Trains the digits MLP (examples/digits_mlp.mlir) for --steps steps through
mp.runtime.Session, once with device="cpu" in f32 and once with
device="cuda" in each --precisions, from the same initial parameters (the
session's seeded initialisation, done on the host) and batches, then
predicts a test batch. Prints a table of the losses and, unless
--no-numbers, checks: GPU f32 losses within 1e-4 (relative) of the CPU's,
f16/bf16 losses within 5%, every loss finite, logits of GPU f32 within
1e-3 of the CPU's. Exit 1 on a miss, 2 when the GPU cannot be used.

--no-numbers: only that every call succeeds (for the CUDA driver stand-in
of the tests, which runs no kernel).

Usage: gpu_session_check.py [--steps 20] [--precisions f32,f16,bf16]
       [--no-numbers]   (MP_BUILD_DIR: the build tree; default build/)
"""
import argparse
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from mp import run_mlir  # noqa: E402
from mp.runtime import MPError, Session  # noqa: E402


def train(model, data, device, precision, steps):
    session = Session(model, precision=precision, device=device, seed=0)
    batch = session.batch_size
    losses = []
    for i in range(steps):
        rows = slice((i * batch) % (len(data["x_train"]) - batch), None)
        x = data["x_train"][rows][:batch]
        y = data["y_train"][rows][:batch]
        loss, _ = session.train_step(x, y)
        losses.append(loss)
    logits = session.predict(data["x_test"][:batch])
    session.close()
    return losses, logits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--precisions", default="f32,f16,bf16")
    parser.add_argument("--no-numbers", action="store_true")
    args = parser.parse_args()
    model = os.path.join(ROOT, "examples", "digits_mlp.mlir")
    data = np.load(os.path.join(run_mlir.build_dir(), "data", "digits.npz"))

    cpu_losses, cpu_logits = train(model, data, "cpu", "f32", args.steps)
    misses = []
    print("| session | first loss | final loss | max rel. diff vs CPU f32 |")
    print("|---|---:|---:|---:|")
    print(f"| cpu f32 | {cpu_losses[0]:.6g} | {cpu_losses[-1]:.6g} | - |")
    for precision in args.precisions.split(","):
        try:
            losses, logits = train(model, data, "cuda", precision, args.steps)
        except MPError as e:
            if "no usable GPU" in str(e):
                print(f"gpu_session_check: {e}")
                return 2
            raise
        diff = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, cpu_losses))
        print(f"| cuda {precision} | {losses[0]:.6g} | {losses[-1]:.6g} | {diff:.2e} |")
        if args.no_numbers:
            continue
        tolerance = 1e-4 if precision == "f32" else 5e-2
        if not all(math.isfinite(v) for v in losses) or diff > tolerance:
            misses.append(f"cuda {precision}: losses differ by {diff:.2e} "
                          f"(> {tolerance:g})")
        if precision == "f32":
            err = float(np.abs(logits - cpu_logits).max() /
                        max(np.abs(cpu_logits).max(), 1e-12))
            print(f"cuda f32 logits vs CPU: max rel. error {err:.2e}")
            if err > 1e-3:
                misses.append(f"cuda f32 logits differ by {err:.2e} (> 1e-3)")
    for miss in misses:
        print("FAIL: " + miss)
    print("gpu_session_check: " + ("ok" if not misses else f"{len(misses)} failed"))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
