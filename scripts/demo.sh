#!/usr/bin/env bash
# The main job: installs and builds if needed, shows what
# --mp-auto-mixed-precision decides on the example MLP, then trains the digits
# MLP (examples/digits_mlp.mlir, 64-512-512-10) in FP32 and in mixed
# precision (f16 with dynamic loss scaling) side by side and prints both
# held-out accuracies and the speed ratio.
#   MP_DEMO_EPOCHS=30 scripts/demo.sh    (default 10 epochs per run)
#   scripts/demo.sh --ir                 (also print the rewritten IR)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_BUILD_DIR:-$root/build}"
epochs="${MP_DEMO_EPOCHS:-10}"
report=$(mktemp --suffix=.json)
logs=$(mktemp -d)
trap 'rm -rf "$report" "$logs"' EXIT

"$root/scripts/setup.sh"

echo
echo "== 1. mp-opt --mp-auto-mixed-precision examples/mlp.mlir"
ir=/dev/null
if [ "${1:-}" = "--ir" ]; then ir=/dev/stdout; fi
"$build/bin/mp-opt" "$root/examples/mlp.mlir" \
  --mp-auto-mixed-precision="summary report=$report" \
  --mlir-print-op-on-diagnostic=false > "$ir"
python3 - "$report" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for op in report["ops"]:
    if op["op"] == "linalg.fill":
        continue
    loc = op["loc"].rsplit("/", 1)[-1]
    print(f"  {loc:<18} {op['op']:<16} {op['class']:<6} {op['decision']:<5} {op['reason']}")
PY

echo
echo "== 2. mp-run train examples/digits_mlp.mlir: FP32 and FP16 mixed precision, $epochs epochs each"
for precision in f32 f16; do
  "$build/bin/mp-run" train "$root/examples/digits_mlp.mlir" \
    --precision "$precision" --epochs "$epochs" --lr 0.05 --seed 0 |
    tee "$logs/$precision.log"
done

python3 - "$logs/f32.log" "$logs/f16.log" <<'PY'
import re, sys
rows = []
for path in sys.argv[1:]:
    line = [l for l in open(path) if l.startswith("held-out accuracy")][-1]
    acc, precision, speed = re.search(r"accuracy ([0-9.]+)% \((\w+)\), ([0-9.]+) samples/s", line).groups()
    rows.append((precision, float(acc), float(speed)))
print()
print("| precision | held-out accuracy | samples/s | speed vs f32 |")
print("|---|---:|---:|---:|")
for precision, acc, speed in rows:
    print(f"| {precision} | {acc:.2f}% | {speed:.0f} | {speed / rows[0][2]:.2f}x |")
PY
