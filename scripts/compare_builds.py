#!/usr/bin/env python3
"""Do two mp-run binaries train bit for bit alike?

Trains the same workloads with an OLD and a NEW mp-run (for instance the
build of a commit before a refactor and the current one) from the same
data, seed and initial parameters, and compares, run by run, every step's
loss, gradient norm, loss scale and skip (mp-run's --stats: the shortest
text that reads back as the same f32, so equal text is equal bits) and
every tensor of the final checkpoint (parameters, optimizer state; the
metadata member, which records the options, is left out) bit for bit. For
each run it prints the per-step losses and "bitwise equal", or the first
step and the first tensor element that differ. Exit status 1 on any
difference, 2 when a run fails.

Also (information, not a verdict; --no-step-ir skips it) each run's step
on tensors as the session is about to lower it (MP_DUMP_STEP_IR, from a
separate one-epoch run) is compared as text: identical, identical but for
the attributes of the entry functions' signatures (which a refactor may
add), or the first line whose body differs. And where mp-compile lies
next to both mp-run binaries, each run's model is compiled by both
(mp-compile with the run's training options) and the artifacts' shared
objects (the machine code of the step and the prediction; the metadata
trailer after them records the options and may change format) are
compared byte for byte: identical machine code leaves only the host code
(the session, mp-run) to differ in speed.

Workloads (the default set; --runs picks some):
  mlp-f32 mlp-bf16 mlp-f16   examples/digits_mlp.mlir on the digits
                             (scripts/export_digits.py), mp-run's defaults
                             (SGD momentum 0.9, lr 0.05; f16 with dynamic
                             loss scaling)
  mlp-bf16-adamw             the same in bf16 with AdamW, lr 0.00123456789
                             and weight decay 0.0123 (options whose text
                             needs all its digits)
  cnn-bf16                   examples/digits_cnn.mlir
  block-f32 block-bf16 block-f16
                             bench/transformer_bench.py's training block (a
                             TransformerEncoderLayer, d_model 512, 8 heads,
                             16 x 128 tokens, MSE against the next token,
                             SGD momentum 0.9, lr 0.01), exported once by
                             bench/gpu_bench.export_block (PyTorch), from
                             its PyTorch initial parameters (--init-from)
                             on --block-batches batches of
                             gpu_bench.block_data (seeds 1, 2, ...)
(examples/transformer_block.mlir is a forward function without mp.loss,
which mp-run cannot train: the block here is the benchmark's.)

Both binaries get the same flags (only flags that both have) and the same
environment: MP_CACHE=off (nothing from the compile cache) and
OMP_NUM_THREADS (--threads, default every core; oneDNN's sums may split by
thread count). Their own defaults apply otherwise, so a changed default
shows as a difference.

Usage (python with numpy; PyTorch for the block's export):
  /usr/bin/python3 scripts/compare_builds.py OLD/bin/mp-run NEW/bin/mp-run
      [--runs mlp-f32,block-bf16,...] [--digits-epochs 2] [--block-epochs 2]
      [--block-batches 3] [--block-size full|small] [--threads N]
      [--work DIR] [--show-steps N] [--no-step-ir]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METADATA = "__metadata__.npy"

# name -> (model, precision, extra flags); "BLOCK" is the exported block.
RUNS = {
    "mlp-f32": ("examples/digits_mlp.mlir", "f32", []),
    "mlp-bf16": ("examples/digits_mlp.mlir", "bf16", []),
    "mlp-f16": ("examples/digits_mlp.mlir", "f16", []),
    "mlp-bf16-adamw": ("examples/digits_mlp.mlir", "bf16",
                       ["--optimizer", "adamw", "--lr", "0.00123456789",
                        "--weight-decay", "0.0123"]),
    "cnn-bf16": ("examples/digits_cnn.mlir", "bf16", []),
    "block-f32": ("BLOCK", "f32", []),
    "block-bf16": ("BLOCK", "bf16", []),
    "block-f16": ("BLOCK", "f16", []),
}
BLOCK_LR = "0.01"  # bench/transformer_bench.py's LR


def block_cfg(size):
    """bench/transformer_bench.py's block: full, or its --quick shapes."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import transformer_bench
    return transformer_bench.block_cfg(size == "small")


def init_checkpoint(params, out):
    """params (mp.save_params: parameter tensors only) as a checkpoint
    that --init-from takes: it also asks for the training position."""
    import numpy as np
    arrays = dict(np.load(params))
    meta = {"step": 0, "scale": 1, "growth_tracker": 0, "epoch": 0, "batch": 0,
            "micro": 0, "ranks": 1, "skipped": 0}
    arrays["__metadata__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(out, **arrays)


def prepare_block(work, size="full", batches=3):
    """The block's training MLIR, an --init-from checkpoint with PyTorch's
    initial parameters and an .npz of `batches` batches (test split: the
    first). Returns (model, init, data, cfg). bench/compare_builds.py
    uses it too."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gpu_bench
    cfg = block_cfg(size)
    model, params = gpu_bench.export_block(cfg, work)
    init = os.path.join(work, "block_init.npz")
    init_checkpoint(params, init)
    xs, ys = zip(*[gpu_bench.block_data(cfg, seed=s) for s in range(1, batches + 1)])
    data = os.path.join(work, "block_data.npz")
    np.savez(data, x_train=np.concatenate(xs), y_train=np.concatenate(ys),
             x_test=xs[0], y_test=ys[0])
    return model, init, data, cfg


def prepare_digits(work):
    out = os.path.join(work, "digits.npz")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_digits.py"), out],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def run_env(threads):
    env = dict(os.environ)
    env["MP_CACHE"] = "off"
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def train(binary, model, precision, flags, out_prefix, env):
    """One mp-run train: (returncode, stdout+stderr, stats path, checkpoint
    path)."""
    stats, checkpoint = out_prefix + ".stats.json", out_prefix + ".ckpt.npz"
    for path in (stats, checkpoint):
        if os.path.exists(path):
            os.remove(path)
    command = [binary, "train", model, "--precision", precision, *flags,
               "--stats", stats, "--checkpoint", checkpoint]
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    with open(out_prefix + ".log", "w") as f:
        f.write(" ".join(command) + "\n" + proc.stdout)
    return proc.returncode, proc.stdout, stats, checkpoint


def raw_steps(stats):
    """Each step of a --stats file with its numbers as written (text)."""
    with open(stats) as f:
        text = f.read()
    # Numbers as text: json's parse_float/parse_int keep them verbatim.
    data = json.loads(text, parse_float=str, parse_int=str)
    return data["steps"]


def f32_bits(text):
    import numpy as np
    if text in ("nan", "inf", "-inf"):
        return text
    return int(np.array([float(text)], np.float32).view(np.uint32)[0])


def compare_steps(old, new):
    """None when equal, else a sentence on the first difference."""
    if len(old) != len(new):
        first = min(len(old), len(new))
        return f"step counts differ: old {len(old)}, new {len(new)} (first {first} compared below)"
    for a, b in zip(old, new):
        for key in ("loss", "grad_norm", "scale", "skipped", "optimizer_step"):
            x, y = a.get(key), b.get(key)
            same = x == y
            if same and key in ("loss", "grad_norm", "scale") and x is not None:
                same = f32_bits(x) == f32_bits(y)
            if not same:
                return f"first difference at step {a['step']}: {key} old {x} new {y}"
    return None


def checkpoint_tensors(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist() if name != METADATA}


def compare_checkpoints(old_path, new_path):
    """None when every tensor is bitwise equal, else what differs first
    (tensor, element, values)."""
    import io
    import numpy as np
    a, b = checkpoint_tensors(old_path), checkpoint_tensors(new_path)
    if sorted(a) != sorted(b):
        return f"different tensors: old {sorted(set(a) - set(b))} new {sorted(set(b) - set(a))}"
    differ = [name for name in sorted(a) if a[name] != b[name]]
    if not differ:
        return None
    name = differ[0]
    x, y = (np.load(io.BytesIO(t[name])) for t in (a, b))
    detail = ""
    if x.shape == y.shape and x.dtype == y.dtype:
        bits = f"u{x.dtype.itemsize}"
        unequal = np.flatnonzero(x.reshape(-1).view(bits) != y.reshape(-1).view(bits))
        if unequal.size:
            i = int(unequal[0])
            detail = (f": {unequal.size} of {x.size} elements, first flat index {i} "
                      f"old {x.reshape(-1)[i]!r} new {y.reshape(-1)[i]!r}")
        else:
            detail = ": same values, different file bytes (header)"
    else:
        detail = f": shape/dtype old {x.shape} {x.dtype} new {y.shape} {y.dtype}"
    return f"{len(differ)} tensor(s) differ ({', '.join(differ)}); first {name}{detail}"


def dump_step_ir(binary, model, precision, flags, out, env):
    """The step on tensors (MP_DUMP_STEP_IR) of a one-epoch run, or None."""
    flags = list(flags)
    flags[flags.index("--epochs") + 1] = "1"
    env = dict(env, MP_DUMP_STEP_IR=out)
    subprocess.run([binary, "train", model, "--precision", precision, *flags], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(out):
        return None
    with open(out) as f:
        return f.read().splitlines()


SIGNATURE_ATTRS = (re.compile(r" attributes \{[^{}]*\}"), re.compile(r" \{mp\.[^{}]*\}"))


def compare_step_ir(old, new):
    if old is None or new is None:
        return "not dumped"
    if old == new:
        return "identical"

    def bare(lines):
        out = []
        for line in lines:
            if line.lstrip().startswith("func.func"):
                for pattern in SIGNATURE_ATTRS:
                    line = pattern.sub("", line)
            out.append(line)
        return out
    a, b = bare(old), bare(new)
    if a == b:
        changed = sum(x != y for x, y in zip(old, new))
        return (f"identical but for the entry signatures' attributes ({changed} "
                f"func.func line(s) of {len(old)})")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"DIFFERENT from line {i + 1}: old '{x.strip()[:120]}' new '{y.strip()[:120]}'"
    return f"DIFFERENT lengths: old {len(a)} lines, new {len(b)}"


def compile_artifact(binary, model, flags, out, env):
    """mp-compile's artifact's shared object (the ELF image before the
    metadata trailer), or None when there is no mp-compile next to
    `binary` or it failed."""
    import struct
    tool = os.path.join(os.path.dirname(binary), "mp-compile")
    if not os.access(tool, os.X_OK):
        return None
    proc = subprocess.run([tool, model, *flags, "-o", out], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if proc.returncode != 0 or not os.path.exists(out):
        return None
    with open(out, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        return None
    # The section headers end the image (e_shoff + e_shnum * e_shentsize).
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return data[:shoff + shentsize * shnum]


def compare_artifacts(old, new):
    if old is None or new is None:
        return None
    if old == new:
        return f"identical ({len(old)} bytes)"
    first = next((i for i, (x, y) in enumerate(zip(old, new)) if x != y), min(len(old), len(new)))
    return f"DIFFERENT ({len(old)} vs {len(new)} bytes, first at offset {first:#x})"


def summary_lines(output):
    """mp-run's lines without timings (per epoch loss, accuracy, skips,
    scale; the held-out line), to show alongside."""
    import re
    keep = []
    for line in output.splitlines():
        if line.startswith("epoch ") or line.startswith("held-out"):
            keep.append(re.sub(r"\s+[0-9.]+ samples/s,?", "", line))
    return keep


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the OLD mp-run")
    parser.add_argument("new", help="the NEW mp-run")
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--digits-epochs", type=int, default=2,
                        help="epochs of the digits runs (22 steps each)")
    parser.add_argument("--block-epochs", type=int, default=2)
    parser.add_argument("--block-batches", type=int, default=3,
                        help="batches of the block's data (steps per epoch)")
    parser.add_argument("--block-size", choices=("full", "small"), default="full")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--work", help="keep inputs, logs, stats and checkpoints here")
    parser.add_argument("--show-steps", type=int, default=8,
                        help="losses printed per run (all are compared)")
    parser.add_argument("--no-step-ir", action="store_true",
                        help="do not compare the step IR (MP_DUMP_STEP_IR)")
    args = parser.parse_args()
    runs = args.runs.split(",")
    for r in runs:
        if r not in RUNS:
            parser.error(f"unknown run '{r}' (known: {', '.join(RUNS)})")
    binaries = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    for which, path in binaries.items():
        if not os.access(path, os.X_OK):
            parser.error(f"{which}: {path} is not an executable")

    work = args.work or tempfile.mkdtemp(prefix="mp-compare-")
    os.makedirs(work, exist_ok=True)
    env = run_env(args.threads)
    print(f"compare_builds: old {binaries['old']}")
    print(f"compare_builds: new {binaries['new']}")
    print(f"compare_builds: work {work}, MP_CACHE=off, OMP_NUM_THREADS={args.threads}")
    digits = prepare_digits(work)
    block = None
    if any(RUNS[r][0] == "BLOCK" for r in runs):
        block = prepare_block(work, args.block_size, args.block_batches)
        cfg = block[3]
        print(f"compare_builds: block d_model {cfg['d_model']}, {cfg['heads']} heads, "
              f"{cfg['sequences']} x {cfg['seq_len']} tokens, {args.block_batches} batches "
              f"x {args.block_epochs} epochs")

    differences, failures = [], []
    for name in runs:
        model, precision, extra = RUNS[name]
        if model == "BLOCK":
            model_path, init, data, _ = block
            flags = ["--epochs", str(args.block_epochs), "--data", data, "--init-from", init,
                     "--lr", BLOCK_LR, "--seed", "0"]
        else:
            model_path = os.path.join(ROOT, model)
            flags = ["--epochs", str(args.digits_epochs), "--data", digits, "--seed", "0"]
        flags += extra
        results = {}
        for which in ("old", "new"):
            results[which] = train(binaries[which], model_path, precision, flags,
                                   os.path.join(work, f"{name}.{which}"), env)
        print(f"\n== {name}: {os.path.relpath(model_path, ROOT) if model != 'BLOCK' else 'block'}"
              f" --precision {precision} {' '.join(extra)}".rstrip())
        failed = [w for w in ("old", "new") if results[w][0] != 0]
        if failed:
            for w in failed:
                print(f"  {w} failed (exit {results[w][0]}):")
                print("    " + "\n    ".join(results[w][1].splitlines()[-10:]))
            failures.append(name)
            continue
        steps = {w: raw_steps(results[w][2]) for w in ("old", "new")}
        for w in ("old", "new"):
            losses = [s["loss"] for s in steps[w]]
            shown = losses[:args.show_steps]
            print(f"  {w} losses ({len(losses)} steps): {' '.join(shown)}"
                  + (" ..." if len(losses) > len(shown) else ""))
        for w in ("old", "new"):
            for line in summary_lines(results[w][1]):
                print(f"  {w}: {line}")
        if not args.no_step_ir:
            ir = {w: dump_step_ir(binaries[w], model_path, precision, flags,
                                  os.path.join(work, f"{name}.{w}.step.mlir"), env)
                  for w in ("old", "new")}
            print(f"  step IR (information): {compare_step_ir(ir['old'], ir['new'])}")
            compile_flags = ["--precision", precision, *extra]
            if model == "BLOCK":
                compile_flags += ["--lr", BLOCK_LR]
            so = {w: compile_artifact(binaries[w], model_path, compile_flags,
                                      os.path.join(work, f"{name}.{w}.mpa"), env)
                  for w in ("old", "new")}
            verdict = compare_artifacts(so["old"], so["new"])
            if verdict:
                print(f"  compiled step (information, mp-compile's shared object): {verdict}")
        step_diff = compare_steps(steps["old"], steps["new"])
        tensor_diff = compare_checkpoints(results["old"][3], results["new"][3])
        if step_diff is None and tensor_diff is None:
            print(f"  {name}: bitwise equal ({len(steps['old'])} steps: loss, grad norm, "
                  f"scale, skips; every checkpoint tensor)")
        else:
            differences.append(name)
            if step_diff:
                print(f"  {name}: DIFFERENT: {step_diff}")
            if tensor_diff:
                print(f"  {name}: DIFFERENT checkpoint: {tensor_diff}")

    print()
    equal = [r for r in runs if r not in differences and r not in failures]
    print(f"compare_builds: {len(equal)} of {len(runs)} runs bitwise equal"
          + (f"; different: {', '.join(differences)}" if differences else "")
          + (f"; failed: {', '.join(failures)}" if failures else ""))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit(2)
    if differences:
        sys.exit(1)


if __name__ == "__main__":
    main()
