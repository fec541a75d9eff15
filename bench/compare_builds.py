#!/usr/bin/env python3
"""CPU speed of two mp-run builds on the transformer block's training step.

Times an OLD and a NEW mp-run binary (for instance the build of a commit
before a refactor and the current one) on bench/transformer_bench.py's
block workload: one nn.TransformerEncoderLayer (d_model 512, 8 heads,
feed-forward 2048, 16 sequences of 128 tokens, MSE against the next token,
SGD momentum 0.9, lr 0.01), exported once (bench/gpu_bench.export_block)
and trained by `mp-run train` from PyTorch's initial parameters
(scripts/compare_builds.py prepares the model, the --init-from checkpoint
and --batches batches of data; both binaries get the same files and
flags).

Each round runs one segment per binary, the order alternating from round
to round (transformer_bench.timed_rounds), over --rounds rounds. A segment
is one `mp-run train` process (MP_CACHE=off: it compiles, nothing comes
from the cache) whose epoch count is chosen from a first calibration run
so that its timed epochs last about --seconds; its rate is mp-run's own
per-epoch figure (the training loop's wall time: the steps and the batch
copies, not the compile or the test predictions) over every epoch but the
first (the warm-up: oneDNN's primitives, the first touch of buffers). The
table gives the median sequences/s with its min-max, the step time, GFLOP/s
from the block's matrix-product FLOPs and NEW/OLD (of the medians; also the
median of each round's NEW/OLD, its two segments back to back under the
same load); the compile time ("compiled in") is reported too. Same-work check: every segment writes
--stats, and each binary's per-step losses must be the same in every
segment and bitwise equal between the two (the first difference is named
and the exit status is 1 otherwise).

Threads: --threads (default: every core) as OMP_NUM_THREADS for both.

Usage: /usr/bin/python3 bench/compare_builds.py OLD/bin/mp-run NEW/bin/mp-run
         [--precision bf16] [--seconds 8] [--rounds 5] [--batches 4]
         [--threads N] [--work DIR] [--quick]
--quick: the --quick block shapes and short segments, to check the script
(not a measurement).
"""
import argparse
import importlib.util
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import transformer_bench  # noqa: E402  (block_cfg, block_flops, timed_rounds)


def load_compare_script():
    """scripts/compare_builds.py (its block preparation and --stats
    reader), loaded by path: this file has the same module name."""
    path = os.path.join(ROOT, "scripts", "compare_builds.py")
    spec = importlib.util.spec_from_file_location("compare_builds_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EPOCH_LINE = re.compile(r"^epoch (\d+)/(\d+)\s+loss .*?\s([0-9.]+) samples/s")
COMPILED = re.compile(r"compiled in ([0-9.]+) s")


class MpRun:
    """One binary as a competitor of transformer_bench.timed_rounds: each
    segment() is one mp-run train process."""

    def __init__(self, name, binary, common, env, work, cfg, batches):
        self.name, self.binary, self.common, self.env = name, binary, common, env
        self.work, self.cfg, self.batches = work, cfg, batches
        self.rates, self.compile_seconds, self.losses = [], [], []
        self.epochs, self.runs = 2, 0

    def run(self, epochs):
        """(sequences/s over epochs 2.., compile seconds, per-step losses)."""
        self.runs += 1
        prefix = os.path.join(self.work, f"{self.name}.{self.runs}")
        stats = prefix + ".stats.json"
        command = [self.binary, "train", self.common["model"], "--precision",
                   self.common["precision"], "--epochs", str(epochs), "--data",
                   self.common["data"], "--init-from", self.common["init"], "--lr",
                   self.common["lr"], "--seed", "0", "--stats", stats]
        proc = subprocess.run(command, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        with open(prefix + ".log", "w") as f:
            f.write(" ".join(command) + "\n" + proc.stdout)
        if proc.returncode != 0:
            raise RuntimeError(f"{self.name}: mp-run failed ({proc.returncode}):\n"
                               + "\n".join(proc.stdout.splitlines()[-10:]))
        rows = self.batches * self.cfg["sequences"] * self.cfg["seq_len"]
        samples = seconds = 0.0
        for line in proc.stdout.splitlines():
            m = EPOCH_LINE.match(line)
            if m and int(m.group(1)) > 1:
                samples += rows
                seconds += rows / float(m.group(3))
        if not seconds:
            raise RuntimeError(f"{self.name}: no timed epoch in mp-run's output")
        compiled = COMPILED.search(proc.stdout)
        losses = [step["loss"] for step in COMPARE.raw_steps(stats)]
        os.remove(stats)
        compile_seconds = float(compiled.group(1)) if compiled else float("nan")
        return samples / seconds / self.cfg["seq_len"], compile_seconds, losses

    def calibrate(self, seconds):
        """A first run of 2 epochs: its losses, and the epoch count of a
        segment whose timed epochs last about `seconds`."""
        rate, compile_seconds, self.losses = self.run(2)
        step = self.cfg["sequences"] / rate
        self.epochs = 1 + max(1, math.ceil(seconds / (step * self.batches)))
        return step

    def segment(self, seconds, units_per_step):
        rate, compile_seconds, losses = self.run(self.epochs)
        self.rates.append(rate)
        self.compile_seconds.append(compile_seconds)
        # Every segment trains the same steps from the same start.
        n = len(self.losses)
        if losses[:n] != self.losses:
            raise RuntimeError(f"{self.name}: a segment's losses differ from its first run's "
                               f"({losses[:n]} vs {self.losses}): not deterministic")


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"step {i + 1}: old {x} new {y}"
    if len(a) != len(b):
        return f"step counts differ: {len(a)} vs {len(b)}"
    return None


COMPARE = load_compare_script()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the OLD mp-run")
    parser.add_argument("new", help="the NEW mp-run")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--seconds", type=float, default=8.0,
                        help="timed training per segment (epochs 2..)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=4, help="steps per epoch")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--work", help="keep the inputs and logs here")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = min(args.seconds, 0.5), min(args.rounds, 2)
    binaries = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    for which, path in binaries.items():
        if not os.access(path, os.X_OK):
            parser.error(f"{which}: {path} is not an executable")

    work = args.work or tempfile.mkdtemp(prefix="mp-bench-builds-")
    os.makedirs(work, exist_ok=True)
    print("  exporting the block ...", file=sys.stderr)
    model, init, data, cfg = COMPARE.prepare_block(work, "small" if args.quick else "full",
                                                   args.batches)
    common = dict(model=model, init=init, data=data, precision=args.precision,
                  lr=str(transformer_bench.LR))
    env = COMPARE.run_env(args.threads)
    competitors = [MpRun(w, binaries[w], common, env, work, cfg, args.batches)
                   for w in ("old", "new")]
    for c in competitors:
        step = c.calibrate(args.seconds)
        print(f"  {c.name}: {1000 * step:.1f} ms/step in calibration; segments of "
              f"{c.epochs} epochs x {args.batches} steps", file=sys.stderr)
    # The same work in every segment for both: the larger epoch count.
    epochs = max(c.epochs for c in competitors)
    for c in competitors:
        c.epochs = epochs
    start = time.perf_counter()
    transformer_bench.timed_rounds(competitors, args.rounds, args.seconds, cfg["sequences"])
    wall = time.perf_counter() - start

    old, new = competitors
    flops = transformer_bench.block_flops(cfg, True)
    print(f"## mp-run train, TransformerEncoderLayer d_model {cfg['d_model']}, {cfg['heads']} "
          f"heads, feed-forward {4 * cfg['d_model']}, {cfg['sequences']} x {cfg['seq_len']} "
          f"tokens, {args.precision} training, {args.threads} threads")
    print()
    print(f"{args.rounds} rounds (order alternating), segments of {epochs - 1} timed epochs x "
          f"{args.batches} steps (after 1 warm-up epoch), MP_CACHE=off; {wall:.0f} s in all")
    print()
    print("| binary | sequences/s (median) | min-max | ms/step | GFLOP/s | NEW/OLD | "
          "compile s (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = statistics.median(old.rates)
    for c in competitors:
        rate = statistics.median(c.rates)
        step_ms = 1000 * cfg["sequences"] / rate
        gflops = rate / cfg["sequences"] * flops / 1e9
        ratio = "-" if c is old else f"{rate / base:.3f}"
        print(f"| {c.name.upper()} {c.binary} | {rate:.1f} | {min(c.rates):.1f}-"
              f"{max(c.rates):.1f} | {step_ms:.1f} | {gflops:.1f} | {ratio} | "
              f"{statistics.median(c.compile_seconds):.2f} |")
    print()
    spread = max((max(c.rates) - min(c.rates)) / statistics.median(c.rates) for c in competitors)
    # Each round's two segments ran back to back: their ratio sees the
    # same load on a shared machine.
    paired = [n / o for o, n in zip(old.rates, new.rates)]
    print(f"NEW/OLD {statistics.median(new.rates) / base:.3f} (medians); per round "
          f"{statistics.median(paired):.3f} (median, {min(paired):.3f}-{max(paired):.3f}); "
          f"largest min-max spread {100 * spread:.1f}% of a median")
    difference = first_difference(old.losses, new.losses)
    print(f"losses over the first {len(old.losses)} steps: "
          + ("bitwise equal (old and new; every segment the same as its binary's first run)"
             if difference is None else f"DIFFERENT at {difference}"))
    if args.quick:
        print("(--quick: small shapes and short segments: not a measurement)")
    if difference is not None:
        sys.exit(1)


if __name__ == "__main__":
    main()
