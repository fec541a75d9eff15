#!/usr/bin/env python3
"""Benchmarks for --mp-auto-mixed-precision (standard library only).

1. Pass time on generated MLP-like graphs of about 1k, 10k and 100k ops
   (analysis plus rewrite, from mp-opt's --mlir-timing; MLIR's verifier,
   which runs after every pass, is switched off so only the pass is timed),
   with the growth ratio against the smallest graph: it must grow linearly;
   target < 2 s for 100k ops. Best of 3 runs below 50k ops.
2. Casts and bytes converted on the example models, mp against a naive
   insertion that casts every input and the output of every allow op.

Usage: bench/amp_bench.py [--mp-opt build/bin/mp-opt] [--sizes 1000,10000,100000]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate(num_ops, width=32, batch=16):
    """A chain of blocks: fill, matmul (allow), bias add and relu (infer),
    and every fourth block an exp (deny). Returns (text, op count)."""
    lines = [
        "#id = affine_map<(d0, d1) -> (d0, d1)>",
        "#col = affine_map<(d0, d1) -> (d1)>",
        f"func.func @chain(%x: tensor<{batch}x{width}xf32>, %w: tensor<{width}x{width}xf32>,"
        f" %b: tensor<{width}xf32>) -> tensor<{batch}x{width}xf32> {{",
        "  %zero = arith.constant 0.0 : f32",
        f"  %e = tensor.empty() : tensor<{batch}x{width}xf32>",
    ]
    t = f"tensor<{batch}x{width}xf32>"
    ops, h, i = 2, "%x", 0
    while ops < num_ops:
        lines += [
            f"  %acc{i} = linalg.fill ins(%zero : f32) outs(%e : {t}) -> {t}",
            f"  %m{i} = linalg.matmul ins({h}, %w : {t}, tensor<{width}x{width}xf32>)"
            f" outs(%acc{i} : {t}) -> {t}",
            f"  %a{i} = linalg.generic {{indexing_maps = [#id, #col, #id],"
            f" iterator_types = [\"parallel\", \"parallel\"]}}"
            f" ins(%m{i}, %b : {t}, tensor<{width}xf32>) outs(%e : {t}) {{",
            "  ^bb0(%p: f32, %q: f32, %o: f32):",
            "    %s = arith.addf %p, %q : f32",
            "    linalg.yield %s : f32",
            f"  }} -> {t}",
            f"  %r{i} = linalg.generic {{indexing_maps = [#id, #id],"
            f" iterator_types = [\"parallel\", \"parallel\"]}}"
            f" ins(%a{i} : {t}) outs(%e : {t}) {{",
            "  ^bb0(%p: f32, %o: f32):",
            "    %s = arith.maximumf %p, %zero : f32",
            "    linalg.yield %s : f32",
            f"  }} -> {t}",
        ]
        ops += 4
        h = f"%r{i}"
        if i % 4 == 3:
            lines += [
                f"  %x{i} = linalg.generic {{indexing_maps = [#id, #id],"
                f" iterator_types = [\"parallel\", \"parallel\"]}}"
                f" ins({h} : {t}) outs(%e : {t}) {{",
                "  ^bb0(%p: f32, %o: f32):",
                "    %s = math.exp %p : f32",
                "    linalg.yield %s : f32",
                f"  }} -> {t}",
            ]
            ops += 1
            h = f"%x{i}"
        i += 1
    lines += [f"  return {h} : {t}", "}"]
    return "\n".join(lines) + "\n", ops


def pass_seconds(mp_opt, path):
    """Wall time of the mp-auto-mixed-precision pass from --mlir-timing."""
    result = subprocess.run(
        [mp_opt, path, "--mp-auto-mixed-precision", "--mlir-timing",
         "--mlir-timing-display=list", "--verify-each=false", "-o", os.devnull],
        capture_output=True, text=True, check=True)
    for line in result.stderr.splitlines():
        if "AutoMixedPrecision" in line or "mp-auto-mixed-precision" in line:
            return float(line.split()[0])
    raise RuntimeError("no timing line for the pass:\n" + result.stderr)


def scaling_table(mp_opt, sizes):
    print("## --mp-auto-mixed-precision time on generated graphs (analysis + rewrite)")
    print()
    print("| ops | pass time (s) | us per op | time ratio | size ratio |")
    print("|---:|---:|---:|---:|---:|")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            text, ops = generate(size)
            path = os.path.join(tmp, f"chain{size}.mlir")
            with open(path, "w") as f:
                f.write(text)
            print(f"  generating and timing {ops} ops ...", file=sys.stderr)
            seconds = min(pass_seconds(mp_opt, path) for _ in range(3 if ops < 50000 else 1))
            if base is None:
                base = (seconds, ops)
            print(f"| {ops} | {seconds:.3f} | {seconds / ops * 1e6:.2f} |"
                  f" {seconds / base[0]:.1f}x | {ops / base[1]:.0f}x |")
    print()


TYPE = re.compile(r"tensor<([0-9x]+)x(f32|f16|bf16)>")


def elements(shape):
    n = 1
    for d in shape.split("x"):
        n *= int(d)
    return n


def naive_casts(mp_opt, model):
    """Casts at every allow op's float inputs and its output, with bytes
    read + written (4 + 2 per element)."""
    text = subprocess.run([mp_opt, model, "--mp-import", "--mp-analyze-precision"],
                          capture_output=True, text=True, check=True).stdout
    casts = converted = 0
    for line in text.splitlines():
        if "#mp.decision<allow" not in line:
            continue
        operands = re.search(r"ins\([^:]*:([^)]*)\)\s*outs\([^:]*:([^)]*)\)", line)
        for group in operands.groups():
            for shape, _ in TYPE.findall(group):
                casts += 1
                converted += elements(shape) * 6
    return casts, converted


def cast_table(mp_opt):
    print("## Casts and bytes converted: mp against naive insertion")
    print()
    print("| model | naive casts | naive bytes | mp casts | mp bytes | mp folded | bytes ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in ["mlp", "cnn", "transformer_block", "tosa/mlp", "tosa/cnn",
                 "tosa/transformer_block"]:
        model = os.path.join(ROOT, "examples", name + ".mlir")
        naive, naive_bytes = naive_casts(mp_opt, model)
        with tempfile.NamedTemporaryFile(suffix=".json") as report:
            subprocess.run([mp_opt, model, f"--mp-auto-mixed-precision=report={report.name}",
                            "-o", os.devnull], capture_output=True, check=True)
            rewrite = json.load(open(report.name))["rewrite"]
        ratio = rewrite["bytes_converted"] / naive_bytes if naive_bytes else 0
        print(f"| {name} | {naive} | {naive_bytes} | {rewrite['casts_inserted']} |"
              f" {rewrite['bytes_converted']} | {rewrite['conversions_folded']} | {ratio:.2f} |")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mp-opt", default=os.path.join(ROOT, "build", "bin", "mp-opt"))
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    if not os.access(args.mp_opt, os.X_OK):
        sys.exit(f"error: {args.mp_opt} not found; run scripts/setup.sh first")
    scaling_table(args.mp_opt, [int(s) for s in args.sizes.split(",")])
    cast_table(args.mp_opt)


if __name__ == "__main__":
    main()
