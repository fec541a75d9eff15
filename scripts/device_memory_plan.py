#!/usr/bin/env python3
"""The device memory a GPU step will use, read from the compiled IR.

Lowers each module given (a step as `MP_DUMP_STEP_IR` / `MP_DUMP_PREDICT_IR`
dump it, or any `mp-opt` input) with `mp-opt --mp-lower-gpu=device-memory=true`
and reads the IR right after `--mp-gpu-device-memory`, where every buffer
is a `gpu.alloc` of a static type and every free a `gpu.dealloc`. Walking
each function in program order gives, per function, the peak of the bytes
held at once and the bytes allocated in all, and the largest buffers alive
at the peak; the bytes of its memref arguments (buffers the caller owns)
are listed apart (for mp-run's entries: the session's parameters and
optimizer state, both copies unless the step updates them in place, the
batch and the scalars). This is the plan
the host code follows: the runtime's pool rounds sizes up to its classes
(at most 2 MiB per buffer above 1 MiB). Allocations inside loops count
once.

Usage: scripts/device_memory_plan.py STEP.mlir [STEP.mlir ...]
           [--function NAME] [--top N] [--mp-opt PATH]
           [--max-ratio R]   (exit 1 unless every later file's peak is at
                              most R times the first file's; the peak of
                              --function, else of @mp_train_entry where
                              there is one, else the largest)
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
                 "i16": 2, "i8": 1, "i1": 1, "index": 8}
FUNC = re.compile(r"^\s*func\.func (?:private )?@([\w$.]+)\(")
ALLOC = re.compile(r"(%[\w$.]+) = gpu\.alloc\s.*: memref<([0-9x]*)([a-z0-9]+)")
DEALLOC = re.compile(r"gpu\.dealloc\s+(%[\w$.]+)")


def buffer_bytes(dims, element):
    count = 1
    for d in filter(None, dims.split("x")):
        count *= int(d)
    if element not in ELEMENT_BYTES:
        sys.exit(f"device_memory_plan: unknown element type '{element}'")
    return count * ELEMENT_BYTES[element]


ARGUMENT = re.compile(r"%[\w$.]+: memref<([0-9x]*)([a-z0-9]+)>(\s*\{[^}]*\})?")


def argument_bytes(line):
    """Bytes of the memref arguments in a func.func line (the caller's
    buffers: a session's parameters, optimizer state, batch and scalars).
    In a function marked mp.in_place_updates, an argument that receives
    another's new value (mp.update_of) is that argument's buffer: not
    counted twice."""
    header = line.split(")", 1)[0]
    in_place = "mp.in_place_updates" in line
    return sum(buffer_bytes(dims, element)
               for dims, element, attrs in ARGUMENT.findall(header)
               if not (in_place and "mp.update_of" in attrs))


def plan(ir_lines):
    """{function: (peak, allocated, allocations, [(bytes, type)] at peak,
    argument bytes)}"""
    functions = {}
    name = None
    for line in ir_lines:
        match = FUNC.match(line)
        if match:
            name = match.group(1)
            state = functions[name] = {"live": {}, "held": 0, "peak": 0,
                                       "total": 0, "count": 0, "at_peak": [],
                                       "arguments": argument_bytes(line)}
            continue
        if name is None:
            continue
        match = ALLOC.search(line)
        if match:
            size = buffer_bytes(match.group(2), match.group(3))
            state["live"][match.group(1)] = (size, f"{match.group(2)}{match.group(3)}")
            state["held"] += size
            state["total"] += size
            state["count"] += 1
            if state["held"] > state["peak"]:
                state["peak"] = state["held"]
                state["at_peak"] = list(state["live"].values())
            continue
        match = DEALLOC.search(line)
        if match and match.group(1) in state["live"]:
            state["held"] -= state["live"].pop(match.group(1))[0]
    return {f: (s["peak"], s["total"], s["count"], s["at_peak"], s["arguments"])
            for f, s in functions.items() if s["count"]}


def entry_plan(mp_opt, path):
    """(peak of the step's own buffers, bytes of its memref arguments) of
    @mp_train_entry in a dumped step, else of its largest function."""
    functions = plan(lowered_ir(mp_opt, path))
    if not functions:
        return 0, 0
    name = ("mp_train_entry" if "mp_train_entry" in functions
            else max(functions, key=lambda f: functions[f][0]))
    return functions[name][0], functions[name][4]


def lowered_ir(mp_opt, path):
    command = [mp_opt, path, "--mp-lower-gpu=device-memory=true",
               "--mlir-print-ir-after=mp-gpu-device-memory", "-o", os.devnull]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"device_memory_plan: {' '.join(command)} failed:\n{out.stderr}")
    return out.stderr.splitlines()


def mib(n):
    return f"{n / 2**20:.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="+")
    parser.add_argument("--function", help="only this function")
    parser.add_argument("--top", type=int, default=5,
                        help="largest buffers listed at each peak")
    parser.add_argument("--mp-opt", default=os.path.join(
        os.environ.get("MP_BUILD_DIR", os.path.join(ROOT, "build")), "bin", "mp-opt"))
    parser.add_argument("--max-ratio", type=float)
    args = parser.parse_args()

    peaks = []
    for path in args.modules:
        if not os.path.exists(path):
            sys.exit(f"device_memory_plan: no such file: {path}")
        functions = plan(lowered_ir(args.mp_opt, path))
        if args.function:
            if args.function not in functions:
                sys.exit(f"device_memory_plan: {path} has no function "
                         f"@{args.function} that allocates device memory")
            functions = {args.function: functions[args.function]}
        print(f"## {path}")
        print("| function | peak MiB | allocated MiB | allocations | "
              "arguments MiB |")
        print("|---|---:|---:|---:|---:|")
        for name, (peak, total, count, _, arguments) in functions.items():
            print(f"| @{name} | {mib(peak)} | {mib(total)} | {count} | "
                  f"{mib(arguments)} |")
        for name, (peak, _, _, at_peak, _) in functions.items():
            largest = sorted(at_peak, reverse=True)[:args.top]
            if largest:
                print(f"@{name} at its peak holds: " +
                      ", ".join(f"{t} ({mib(b)} MiB)" for b, t in largest))
        print()
        compared = args.function or ("mp_train_entry" if "mp_train_entry" in functions
                                     else None)
        peaks.append(functions[compared][0] if compared else
                     max((f[0] for f in functions.values()), default=0))

    if args.max_ratio is not None and len(peaks) > 1:
        failed = False
        for path, peak in zip(args.modules[1:], peaks[1:]):
            ratio = peak / peaks[0] if peaks[0] else float("inf")
            ok = ratio <= args.max_ratio
            failed |= not ok
            print(f"{'ok' if ok else 'FAIL'}: {path} peak {ratio:.2f}x "
                  f"{args.modules[0]} (at most {args.max_ratio:.2f}x)")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
