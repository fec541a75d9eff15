#!/usr/bin/env python3
"""CPU speed of a transformer block and a wide MLP: mp against PyTorch.

Workloads (each configuration trains or infers on the same batch every
step, from the same initial parameters):
  block        one nn.TransformerEncoderLayer (d_model 512, 8 heads, feed-
               forward 2048, post-norm, ReLU, no dropout) on 16 sequences of
               128 tokens, MSE loss against the next token, SGD momentum 0.9
               (mp: exported with mp.export_training and run by
               mp.runtime.Session); samples are sequences
  mlp          784-2048-2048-10, batch 256, cross-entropy, training
  mlp-infer    the same MLP, inference (logits of a batch)
  block-infer  the encoder block, inference (its output for the 16 x 128
               tokens)
Competitors: mp f32, bf16 (and f16 with --f16), PyTorch f32 and bf16
autocast; for the inference workloads also bf16 with the weights converted
once (mp's InferSession, whose weight conversion runs once; PyTorch's
module.to(bfloat16)), mp int8-dynamic (InferSession) and PyTorch's
quantize_dynamic (qint8 nn.Linear: on the block, the
feed-forward layers; PyTorch leaves attention's projections in f32, mp
quantizes them too). Each runs in a warm process of its own (compiled or built once,
then timed): every round times one segment of --seconds per competitor,
the order rotated from round to round, over --rounds rounds; the table
gives the median throughput with its min-max, GFLOP/s from the workload's
matrix-product FLOPs, and that as a fraction of this CPU's peak measured
here (a large f32 and bf16 matmul on the same threads, through PyTorch
and through oneDNN, whichever is faster: Debian's PyTorch f32 matmul
reached only half of oneDNN's on an AVX-512 EPYC; not assumed; for bf16
and f16 the faster of the two types, since a CPU without bf16 units runs
bf16 products on its f32 ones), and for mp the share of each segment
spent outside its matrix products (libmprt's own count of the time in
mprt_gemm calls: the compiled loops, the session's copies and the
threads' gaps). Fairness check: mp f32 and PyTorch f32 losses over the first
--check-steps identical steps, largest relative difference (and the same
for bf16, informational).

Threads: --threads (default: every core), set as OMP_NUM_THREADS for both
(mp's oneDNN and compiled loops, PyTorch's intra-op pool).

Usage: bench/transformer_bench.py [--workloads block,mlp,mlp-infer,block-infer]
         [--seconds 8] [--rounds 5] [--threads N] [--f16] [--quick]
--quick: small shapes and short segments, to check the script (not a
measurement).
"""
import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
LR, MOMENTUM = 0.01, 0.9


# -- workloads ------------------------------------------------------------------

def block_cfg(quick):
    if quick:
        return dict(d_model=64, heads=4, sequences=4, seq_len=16, device="cpu")
    return dict(d_model=512, heads=8, sequences=16, seq_len=128, device="cpu")


def mlp_cfg(quick):
    return dict(widths=(784, 256, 256, 10) if quick else (784, 2048, 2048, 10),
                batch=32 if quick else 256)


def block_flops(cfg, train=True):
    """Matrix-product FLOPs of one training step (forward x 3) or
    forward pass."""
    t, d, length = cfg["sequences"] * cfg["seq_len"], cfg["d_model"], cfg["seq_len"]
    forward = 2 * t * d * 3 * d + 2 * 2 * t * length * d + 2 * t * d * d + 2 * 2 * t * d * 4 * d
    return 3 * forward if train else forward


def mlp_flops(cfg, train):
    widths = cfg["widths"]
    forward = sum(2 * cfg["batch"] * a * b for a, b in zip(widths, widths[1:]))
    return 3 * forward if train else forward


def mlp_module(cfg):
    import torch.nn as nn
    widths = cfg["widths"]
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(a, b))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def mlp_data(cfg, seed=1):
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cfg["batch"], cfg["widths"][0]), dtype=np.float32)
    labels = rng.integers(0, cfg["widths"][-1], cfg["batch"])
    return x, np.eye(cfg["widths"][-1], dtype=np.float32)[labels]


def export_models(quick, work):
    """The block's and the MLP's training MLIR and initial parameters."""
    import torch
    import gpu_bench
    import mp
    block = gpu_bench.export_block(block_cfg(quick), work)
    cfg = mlp_cfg(quick)
    torch.manual_seed(0)
    module = mlp_module(cfg)
    params = os.path.join(work, "mlp_params.npz")
    mp.save_params(module, params)
    model = os.path.join(work, "mlp.mlir")
    x = torch.empty(cfg["batch"], cfg["widths"][0])
    with open(model, "w") as f:
        f.write(mp.export_training(module, x, num_classes=cfg["widths"][-1]))
    return {"block": block, "block-infer": block, "mlp": (model, params),
            "mlp-infer": (model, params)}


# -- runners (built inside the worker process) -----------------------------------

def mp_runner(workload, quick, model, params, precision):
    """step() -> loss (training) or None (inference), for mp."""
    import numpy as np
    import gpu_bench
    from mp.runtime import Session
    # int8-dynamic and bf16-weights are an InferSession's, over f32
    # parameters: it converts (or quantizes) the weights once, where a
    # Session's predict converts them on every call.
    infer_session = precision in ("int8-dynamic", "bf16-weights")
    session = Session(model, precision="f32" if infer_session else precision,
                      lr=LR, momentum=MOMENTUM)
    with np.load(params) as arrays:
        for name in arrays.files:
            session.set(name, arrays[name])
    if workload.startswith("block"):
        x, y = gpu_bench.block_data(block_cfg(quick))
    else:
        x, y = mlp_data(mlp_cfg(quick))
    if workload.endswith("-infer"):
        if infer_session:
            from mp.runtime import InferSession
            predict = InferSession(model, session, precision=precision.replace(
                "-weights", "")).predict
        else:
            predict = session.predict
        return (lambda: (predict(x), None)[1],
                lambda: logits_error(predict(x), workload, params, quick))
    return lambda: session.train_step(x, y)[0]


def torch_runner(workload, quick, params, mode):
    """step() -> loss (training) or None (inference), for PyTorch."""
    import contextlib
    import torch
    import gpu_bench
    import mp
    if workload.startswith("block"):
        cfg = block_cfg(quick)
        module = gpu_bench.encoder_block(cfg)
        x, y = (torch.from_numpy(a) for a in gpu_bench.block_data(cfg))
        loss_fn = torch.nn.functional.mse_loss
    else:
        module = mlp_module(mlp_cfg(quick))
        x, onehot = mlp_data(mlp_cfg(quick))
        x, y = torch.from_numpy(x), torch.from_numpy(onehot.argmax(1))
        loss_fn = torch.nn.functional.cross_entropy
    mp.load_params(module, params)

    def amp():
        if mode == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    if workload.endswith("-infer"):
        module.eval()
        if mode == "int8-dynamic":
            module = torch.ao.quantization.quantize_dynamic(
                module, {torch.nn.Linear}, dtype=torch.qint8)
        if mode == "bf16-weights":
            # Weights converted once, as mp's InferSession does.
            module = module.to(torch.bfloat16)
            x = x.to(torch.bfloat16)
        if workload.startswith("block") and mode != "f32":
            # PyTorch 1.13's fused encoder-layer kernel (eval without grad)
            # takes neither bf16 autocast nor dynamically quantized
            # linears: the layer's own modules then (dropout is 0, so train
            # mode is the same function). f32 keeps the fused kernel.
            module.train()

        def infer():
            with torch.no_grad(), amp():
                return module(x).float().numpy()
        return (lambda: (infer(), None)[1],
                lambda: logits_error(infer(), workload, params, quick))
    opt = torch.optim.SGD(module.parameters(), lr=LR, momentum=MOMENTUM)

    def step():
        with amp():
            loss = loss_fn(module(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def logits_error(logits, workload, params, quick):
    """Inference's fairness check: the relative error of a batch's outputs
    against the f32 model's (PyTorch, the same parameters)."""
    import numpy as np
    import torch
    import gpu_bench
    import mp
    if workload.startswith("block"):
        module = gpu_bench.encoder_block(block_cfg(quick))
        x = gpu_bench.block_data(block_cfg(quick))[0]
    else:
        module = mlp_module(mlp_cfg(quick))
        x = mlp_data(mlp_cfg(quick))[0]
    mp.load_params(module, params)
    with torch.no_grad():
        want = module.eval()(torch.from_numpy(x)).numpy()
    return float(np.linalg.norm(logits - want) / np.linalg.norm(want))


def peak_runner(dtype, library="torch"):
    """A large matmul: this CPU's attainable product rate on these threads,
    through PyTorch's matmul or oneDNN's (libmprt's mprt_gemm, what mp's
    products call; bf16 with B declared constant, so packed once); the
    table takes the faster of the two."""
    import torch
    n = 2048
    if library == "torch":
        a = torch.randn(n, n).to(getattr(torch, dtype))
        b = torch.randn(n, n).to(getattr(torch, dtype))
        return lambda: (torch.mm(a, b), None)[1]
    import ctypes
    import numpy as np
    from mp import runtime
    lib = runtime.library()
    gemm = lib.mprt_gemm
    gemm.argtypes = [ctypes.c_int64] * 9 + [ctypes.c_int32] * 2
    gemm.restype = ctypes.c_int
    lib.mprt_last_error.restype = ctypes.c_char_p
    rng = np.random.default_rng(0)

    def operand():
        values = rng.standard_normal((n, n), dtype=np.float32)
        if dtype == "float32":
            return values
        return (values.view(np.uint32) >> 16).astype(np.uint16)  # bf16 bits
    a, b = operand(), operand()
    kind = 0 if dtype == "float32" else 2  # MPRT_GEMM_F32, MPRT_GEMM_BF16
    c = np.zeros((n, n), np.float32)
    if kind == 2:
        # B packed once, as an inference session's weights are: the
        # kernel's rate without oneDNN repacking B on every call (which
        # put the bf16-weights rows above 100% of a per-call peak).
        declare = lib.mprt_gemm_declare_constant
        declare.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        declare.restype = ctypes.c_int
        if declare(b.ctypes.data, b.nbytes) != 0:
            raise RuntimeError(lib.mprt_last_error().decode())

    def step():
        if gemm(a.ctypes.data, n, b.ctypes.data, n, c.ctypes.data, n, n, n, n, 0, kind) != 0:
            raise RuntimeError(lib.mprt_last_error().decode())
    return step


def worker(conn, spec, threads):
    """Builds the runner of `spec`, reports its first losses, then times
    segments on request until told to stop."""
    try:
        import torch
        torch.set_num_threads(threads)
        kind = spec[0]
        if kind == "mp":
            step = mp_runner(*spec[1:])
        elif kind == "torch":
            step = torch_runner(*spec[1:])
        else:
            step = peak_runner(*spec[1:])
        # Training steps return the loss; inference gives (step, check).
        step, check = step if isinstance(step, tuple) else (step, step)
        losses = [check() for _ in range(conn.recv())]
        conn.send(("losses", losses))
        # mp's time inside its products (libmprt's own count).
        gemm_seconds = None
        if kind == "mp":
            from mp.runtime import gemm_totals
            gemm_seconds = lambda: gemm_totals()[1]  # noqa: E731
        while True:
            seconds = conn.recv()
            if seconds is None:
                break
            count, start = 0, time.perf_counter()
            in_gemm = gemm_seconds() if gemm_seconds else None
            while True:
                step()
                count += 1
                elapsed = time.perf_counter() - start
                if elapsed >= seconds:
                    break
            if gemm_seconds:
                in_gemm = gemm_seconds() - in_gemm
            conn.send(("segment", count, elapsed, in_gemm))
    except Exception as e:  # noqa: BLE001 - the parent reports it
        import traceback
        conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


class Competitor:
    def __init__(self, name, spec, threads, check_steps):
        context = multiprocessing.get_context("spawn")
        self.name, self.conn = name, None
        parent, child = context.Pipe()
        self.process = context.Process(target=worker, args=(child, spec, threads))
        self.process.start()
        self.conn = parent
        parent.send(check_steps)
        self.losses = self._receive("losses")[0]
        self.rates = []
        self.outside_gemm = []  # mp: the share of each segment outside products

    def _receive(self, kind):
        message = self.conn.recv()
        if message[0] == "error":
            raise RuntimeError(f"{self.name}: {message[1]}")
        assert message[0] == kind, message
        return message[1:]

    def segment(self, seconds, units_per_step):
        self.conn.send(seconds)
        count, elapsed, in_gemm = self._receive("segment")
        self.rates.append(count * units_per_step / elapsed)
        if in_gemm is not None:
            self.outside_gemm.append(1 - in_gemm / elapsed)

    def close(self):
        if self.conn:
            self.conn.send(None)
        self.process.join(timeout=30)


def timed_rounds(competitors, rounds, seconds, units_per_step):
    for r in range(rounds):
        order = competitors[r % len(competitors):] + competitors[:r % len(competitors)]
        print(f"  round {r + 1}/{rounds}: " + ", ".join(c.name for c in order),
              file=sys.stderr)
        for c in order:
            c.segment(seconds, units_per_step)


def relative_difference(a, b):
    return max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b))


# -- main -------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="block,mlp,mlp-infer,block-infer")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--check-steps", type=int, default=5)
    parser.add_argument("--f16", action="store_true", help="also mp f16")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = min(args.seconds, 0.5), min(args.rounds, 2)
    workloads = args.workloads.split(",")
    for w in workloads:
        if w not in ("block", "mlp", "mlp-infer", "block-infer"):
            parser.error(f"unknown workload '{w}'")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    print("  measuring this CPU's peak (f32 and bf16 matmul) ...", file=sys.stderr)
    peaks = {}
    flops_2048 = 2 * 2048 ** 3
    peak_sources = {}
    for dtype in ("float32", "bfloat16"):
        for library in ("torch", "onednn"):
            c = Competitor(f"peak {dtype} {library}", ("peak", dtype, library), args.threads, 1)
            timed_rounds([c], 2, max(args.seconds / 2, 0.5), flops_2048)
            if max(c.rates) > peaks.get(dtype, 0):
                peaks[dtype], peak_sources[dtype] = max(c.rates), library
            c.close()

    failures = []
    with tempfile.TemporaryDirectory() as work:
        print("  exporting the models ...", file=sys.stderr)
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            models = pool.apply(export_models, (args.quick, work))
        for workload in workloads:
            model, params = models[workload]
            train = not workload.endswith("-infer")
            if workload.startswith("block"):
                cfg = block_cfg(args.quick)
                units, unit = cfg["sequences"], "sequences/s"
                flops = block_flops(cfg, train)
                title = (f"TransformerEncoderLayer d_model {cfg['d_model']}, {cfg['heads']} "
                         f"heads, feed-forward {4 * cfg['d_model']}, {cfg['sequences']} x "
                         f"{cfg['seq_len']} tokens, " + ("training" if train else "inference"))
            else:
                cfg = mlp_cfg(args.quick)
                units, unit = cfg["batch"], "samples/s"
                flops = mlp_flops(cfg, train)
                title = (f"MLP {'-'.join(map(str, cfg['widths']))}, batch {cfg['batch']}, "
                         + ("training" if train else "inference"))
            precisions = ["f32", "bf16"] + (["f16"] if args.f16 else [])
            specs = [(f"mp {p}", ("mp", workload, args.quick, model, params, p), p)
                     for p in precisions]
            specs += [(f"pytorch {m}" + (" autocast" if m != "f32" else ""),
                       ("torch", workload, args.quick, params, m), m) for m in ("f32", "bf16")]
            if not train:
                # bf16 weights converted once (mp's InferSession; PyTorch's
                # module.to(bfloat16)), against autocast's per-call casts.
                specs += [("mp bf16-weights (InferSession)",
                           ("mp", workload, args.quick, model, params, "bf16-weights"),
                           "bf16-weights"),
                          ("pytorch bf16-weights (module.to(bfloat16))",
                           ("torch", workload, args.quick, params, "bf16-weights"),
                           "bf16-weights")]
                # Dynamic INT8: each batch's activations scaled by their own
                # range; PyTorch's quantize_dynamic on nn.Linear.
                specs += [("mp int8-dynamic", ("mp", workload, args.quick, model, params,
                                               "int8-dynamic"), "int8-dynamic"),
                          ("pytorch int8-dynamic (quantize_dynamic qint8)",
                           ("torch", workload, args.quick, params, "int8-dynamic"),
                           "int8-dynamic")]
            print(f"  {workload}: starting {len(specs)} warm processes ...", file=sys.stderr)
            competitors = []
            try:
                for name, spec, _ in specs:
                    competitors.append(Competitor(name, spec, args.threads, args.check_steps))
                timed_rounds(competitors, args.rounds, args.seconds, units)
            finally:
                for c in competitors:
                    c.close()
            by_name = {c.name: c for c in competitors}
            print(f"## {title}, {args.threads} threads")
            print()
            print(f"| run | {unit} (median) | min-max | vs mp f32 | mp / PyTorch same "
                  "precision | GFLOP/s | of measured peak | time outside GEMM calls |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            base = statistics.median(by_name["mp f32"].rates)
            for (name, _, precision), c in zip(specs, competitors):
                rate = statistics.median(c.rates)
                versus = "-"
                if name.startswith("mp "):
                    other = [o for o in competitors if o.name.startswith(f"pytorch {precision}")]
                    if other:
                        versus = f"{rate / statistics.median(other[0].rates):.2f}x"
                gflops = rate / units * flops / 1e9
                # Without bf16 units a bf16 product runs on the f32 ones
                # (PyTorch's bf16 matmul is then far below them).
                # (int8: against the float peak, for scale only.)
                peak = peaks["float32"] if precision == "f32" else max(peaks.values())
                outside = (f"{100 * statistics.median(c.outside_gemm):.1f}%"
                           if c.outside_gemm else "-")
                print(f"| {name} | {rate:.1f} | {min(c.rates):.1f}-{max(c.rates):.1f} | "
                      f"{rate / base:.2f}x | {versus} | {gflops:.1f} | "
                      f"{100 * gflops * 1e9 / peak:.0f}% | {outside} |")
            print()
            if train:
                for precision in ("f32", "bf16"):
                    mine = by_name[f"mp {precision}"].losses
                    theirs = by_name["pytorch f32" if precision == "f32"
                                     else "pytorch bf16 autocast"].losses
                    diff = relative_difference(mine, theirs)
                    line = (f"losses over {args.check_steps} identical steps, mp {precision} "
                            f"vs PyTorch {precision}: largest relative difference {diff:.2e}")
                    if precision == "f32" and diff > 1e-4:
                        failures.append(line)
                        line += " (FAIL: the competitors do not compute the same thing)"
                    print(line)
                print()
            else:
                for c in competitors:
                    print(f"logits of {c.name} against the f32 model's: relative error "
                          f"{max(c.losses):.2e}")
                print()
    names = {"torch": "PyTorch", "onednn": "oneDNN through mprt_gemm"}
    print(f"measured peak on {args.threads} threads (the faster 2048^3 matmul of PyTorch "
          f"and oneDNN): f32 {peaks['float32'] / 1e9:.1f} GFLOP/s "
          f"({names[peak_sources['float32']]}), bf16 {peaks['bfloat16'] / 1e9:.1f} GFLOP/s "
          f"({names[peak_sources['bfloat16']]})")
    if args.quick:
        print("(--quick: small shapes and short segments: not a measurement)")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
