#!/usr/bin/env python3
"""Insert a driver (an @main and its helpers) into a module printed by
mp-opt, so the driver can call functions that passes created.

Lines of the driver written as `// <TAG>: code` become `code` for every
--enable TAG; other tagged lines are dropped. Standard library only.

Usage: splice.py MODULE.mlir DRIVER.mlir [--enable TAG ...] > out.mlir
"""
import argparse
import re
import sys

TAGGED = re.compile(r"^(\s*)// ([A-Z][A-Z0-9_-]*): (.*)$")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module")
    parser.add_argument("driver")
    parser.add_argument("--enable", action="append", default=[])
    args = parser.parse_args()
    module = open(args.module).read().rstrip()
    if not module.endswith("}"):
        sys.exit(f"error: {args.module} does not end with a module's closing brace")
    lines = []
    for line in open(args.driver).read().splitlines():
        tagged = TAGGED.match(line)
        if tagged:
            if tagged.group(2) in args.enable:
                lines.append(tagged.group(1) + tagged.group(3))
            continue
        lines.append(line)
    print(module[:-1] + "\n".join(lines) + "\n}")


if __name__ == "__main__":
    main()
