#!/usr/bin/env python3
"""Data-parallel training speed: one process against `mpirun -np 2`
(docs/distributed.md).

Workloads: the 784-2048-2048-10 MLP (global batch 256) and the encoder block
of transformer_bench (d512, 8 heads, ff 2048; global batch 16 x 128 tokens),
f32 training. One rank trains the global batch on all the cores; with N
ranks each trains its share on its share of the cores (mprt_dist_init splits
them) and the gradients are averaged by one all-reduce a step.

Each configuration is a fresh job (compile-cache on, so compiling is paid
once) that trains for --seconds after two warm-up steps; the two run
alternately for --rounds rounds; the table gives medians with min-max.
The all-reduce's own cost is measured in the job too: MPI_Allreduce of the
step's buffer (every gradient plus the loss, f32), called through ctypes on
the job's libmpich. The check: the first steps' losses of both layouts agree
(they compute the same global batch).

usage: bench/dp_bench.py [--quick] [--seconds S] [--rounds R]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
LR, MOMENTUM = 0.01, 0.9
RANKS = 2

WORKER = textwrap.dedent("""
    import ctypes, json, sys, time
    import numpy as np
    from mp.runtime import Session
    model, params, data, seconds, distributed = (sys.argv[1], sys.argv[2], sys.argv[3],
                                                 float(sys.argv[4]), sys.argv[5] == "1")
    s = Session(model, lr=%(lr)r, momentum=%(momentum)r, distributed=distributed)
    with np.load(params) as arrays:
        for name in arrays.files:
            s.set(name, arrays[name])
    with np.load(data) as d:
        x, y = d["x"], d["y"]
    rows = x.shape[0] // s.process_count
    first = s.process_rank * rows
    x, y = x[first:first + rows], y[first:first + rows]
    losses = [s.train_step(x, y)[0] for _ in range(3)]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        s.train_step(x, y)
        steps += 1
    elapsed = time.perf_counter() - start
    allreduce = None
    if distributed:
        count = sum(v.size for v in s.parameters().values()) + 1
        mpi = ctypes.CDLL("libmpich.so.12")
        send = np.ones(count, np.float32)
        receive = np.empty_like(send)
        args = (send.ctypes.data_as(ctypes.c_void_p), receive.ctypes.data_as(ctypes.c_void_p),
                ctypes.c_int(count), ctypes.c_int(0x4c00040a), ctypes.c_int(0x58000003),
                ctypes.c_int(0x44000000))
        for _ in range(3):
            mpi.MPI_Allreduce(*args)
        reps, t0 = 20, time.perf_counter()
        for _ in range(reps):
            mpi.MPI_Allreduce(*args)
        allreduce = dict(seconds=(time.perf_counter() - t0) / reps, bytes=4 * count)
    if s.process_rank == 0:
        print("RESULT " + json.dumps(dict(steps_per_second=steps / elapsed, losses=losses,
                                          allreduce=allreduce)))
""") % dict(lr=LR, momentum=MOMENTUM)


def export(workload, quick, work):
    """Per layout (1 and RANKS ranks): the model whose batch is that layout's
    share; plus the shared parameters, the global batch and its size."""
    import numpy as np
    import torch
    import gpu_bench
    import mp
    import transformer_bench as tb
    out = {}
    if workload == "mlp":
        cfg = tb.mlp_cfg(quick)
        torch.manual_seed(0)
        module = tb.mlp_module(cfg)
        mp.save_params(module, os.path.join(work, "mlp_params.npz"))
        x, y = tb.mlp_data(cfg)
        for ranks in (1, RANKS):
            path = os.path.join(work, "mlp_%d.mlir" % ranks)
            with open(path, "w") as f:
                f.write(mp.export_training(module, torch.empty(cfg["batch"] // ranks,
                                                               cfg["widths"][0]),
                                           num_classes=cfg["widths"][-1]))
            out[ranks] = path
        params, samples = os.path.join(work, "mlp_params.npz"), cfg["batch"]
    else:
        cfg = tb.block_cfg(quick)
        x, y = gpu_bench.block_data(cfg)
        for ranks in (1, RANKS):
            share = dict(cfg, sequences=cfg["sequences"] // ranks)
            sub = os.path.join(work, "block_%d" % ranks)
            os.makedirs(sub, exist_ok=True)
            out[ranks], params = gpu_bench.export_block(share, sub)
        samples = cfg["sequences"]
    data = os.path.join(work, workload + "_data.npz")
    np.savez(data, x=x, y=y)
    return out, params, data, samples


def run(ranks, model, params, data, seconds, work):
    script = os.path.join(work, "worker.py")
    with open(script, "w") as f:
        f.write(WORKER)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    command = [sys.executable, script, model, params, data, str(seconds), "1" if ranks > 1 else "0"]
    if ranks > 1:
        command = ["mpirun", "-np", str(ranks)] + command
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit("dp_bench: %s failed:\n%s%s" % (" ".join(command), done.stdout, done.stderr))
    return json.loads(lines[0][len("RESULT "):])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small models, short runs (a smoke test)")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="mlp,block")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 1.0, 1
    if not shutil.which("mpirun"):
        sys.exit("dp_bench: no mpirun on PATH (install mpich)")
    from mp import runtime
    if not runtime.library().mp_distributed_available():
        sys.exit("dp_bench: this mp was built without MPI")
    print("dp_bench: %d cores, %d s segments, %d rounds, f32 training%s"
          % (os.cpu_count(), args.seconds, args.rounds, " (quick: not a measurement)"
             if args.quick else ""))
    failed = False
    with tempfile.TemporaryDirectory() as work:
        rows = []
        for workload in args.workloads.split(","):
            models, params, data, samples = export(workload, args.quick, work)
            results = {1: [], RANKS: []}
            for _ in range(args.rounds):
                for ranks in (1, RANKS):
                    results[ranks].append(run(ranks, models[ranks], params, data,
                                              args.seconds, work))
            one = [r["steps_per_second"] * samples for r in results[1]]
            many = [r["steps_per_second"] * samples for r in results[RANKS]]
            ref, got = results[1][0]["losses"], results[RANKS][0]["losses"]
            agree = max(abs(a - b) / max(abs(a), 1e-30) for a, b in zip(ref, got))
            reduce = results[RANKS][0]["allreduce"]
            step = 1.0 / statistics.median(r["steps_per_second"] for r in results[RANKS])
            rows.append((workload, one, many, reduce, step, agree))
            failed |= agree > 1e-5
        unit = {"mlp": "samples/s", "block": "sequences/s"}
        print("\n| workload | 1 process | %d ranks | ratio | bytes all-reduced a step "
              "| all-reduce | share of the step | losses agree |" % RANKS)
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for workload, one, many, reduce, step, agree in rows:
            print("| %s (%s) | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.2fx | %.1f MB | %.2f ms "
                  "| %.0f%% | %.1e |"
                  % (workload, unit[workload], statistics.median(one), min(one), max(one),
                     statistics.median(many), min(many), max(many),
                     statistics.median(many) / statistics.median(one), reduce["bytes"] / 1e6,
                     1e3 * reduce["seconds"], 100 * reduce["seconds"] / step, agree))
        print("\nOn a cluster a ring all-reduce moves 2 (N-1)/N x the bytes above per rank and "
              "step: at 25 Gb/s (3.1 GB/s) that is about %s; compare with the step times."
              % ", ".join("%.1f ms for %s" % (2 * (RANKS - 1) / RANKS * r[3]["bytes"] / 3.1e9 * 1e3,
                                              r[0]) for r in rows))
    if failed:
        print("dp_bench: FAIL: the layouts' losses differ by more than 1e-5")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
