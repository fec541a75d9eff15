#!/usr/bin/env python3
"""Checks the host code of an --mp-lower-gpu{device-memory=true} module.

Reads the lowered module (LLVM dialect, kernels already serialized into
gpu.binary) and checks every host function:
  * each llvm.load / llvm.store addresses an llvm.alloca of the function (a
    staging buffer), never a memref argument, a gpu.alloc or a global;
  * each such load comes after an mgpuMemcpy into that alloca and an
    mgpuStreamSynchronize after the copy;
  * no host allocator or host copy of buffers is called (malloc, free,
    memrefCopy, llvm.intr.memcpy).
Prints a summary line and, per function, its staged loads and runtime
calls; exits 1 with the offending lines otherwise.
"""
import re
import sys

FORBIDDEN = ("@malloc", "@free", "@aligned_alloc", "@memrefCopy",
             "llvm.intr.memcpy", "@_mlir_memref_to_llvm_alloc")


def functions(text):
    """(name, body lines) of every llvm.func with a body."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^  llvm\.func @([\w$.]+)\(.*\{$", lines[i])
        if not m:
            i += 1
            continue
        body = []
        i += 1
        while i < len(lines) and lines[i] != "  }":
            body.append(lines[i])
            i += 1
        yield m.group(1), body


def main():
    text = open(sys.argv[1]).read()
    errors = []
    staged = 0
    count = 0
    calls = {}
    report = []
    for name, body in functions(text):
        count += 1
        own = {}
        own_staged = 0
        allocas = set()
        copied = {}  # alloca -> index of the last mgpuMemcpy into it
        synced = -1
        for n, line in enumerate(body):
            m = re.match(r"\s*(%\w+) = llvm\.alloca ", line)
            if m:
                allocas.add(m.group(1))
            for call in re.findall(r"llvm\.call @(\w+)\(", line):
                calls[call] = calls.get(call, 0) + 1
                own[call] = own.get(call, 0) + 1
            m = re.search(r"llvm\.call @mgpuMemcpy\((%\w+),", line)
            if m:
                copied[m.group(1)] = n
            if "llvm.call @mgpuStreamSynchronize" in line:
                synced = n
            if any(f in line for f in FORBIDDEN):
                errors.append("@%s: host copy or allocation: %s" % (name, line.strip()))
            m = re.search(r"llvm\.load (%\w+) ", line)
            if m:
                ptr = m.group(1)
                if ptr not in allocas:
                    errors.append("@%s: host load of a non-staged address: %s" % (name, line.strip()))
                elif ptr not in copied or synced < copied[ptr]:
                    errors.append("@%s: staged load without a device-to-host copy and a wait before it: %s"
                                  % (name, line.strip()))
                else:
                    staged += 1
                    own_staged += 1
            m = re.search(r"llvm\.store %\w+, (%\w+) ", line)
            if m and m.group(1) not in allocas:
                errors.append("@%s: host store to a non-staged address: %s" % (name, line.strip()))
        report.append("@%s: staged loads %d; %s" % (
            name, own_staged, ", ".join("%s %d" % (c, own[c]) for c in sorted(own))))
    if errors:
        print("\n".join(errors))
        return 1
    print("host functions: %d; staged host loads: %d; other host element accesses: 0" % (count, staged))
    for call in sorted(calls):
        print("calls %s: %d" % (call, calls[call]))
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
