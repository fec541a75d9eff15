#!/usr/bin/env python3
"""Prints the PTX (the `assembly` string of the first gpu.object) of the
`mp-opt --mp-lower-gpu` output read from stdin, with MLIR's \\XX escapes
decoded."""
import re
import sys

text = sys.stdin.read()
match = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if not match:
    sys.exit("extract-ptx.py: no gpu.object with an assembly string in the input")
raw = match.group(1)
out = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), raw)
out = out.replace('\\"', '"').replace("\\\\", "\\")
sys.stdout.write(out)
