#!/usr/bin/env bash
# The main job: installs and builds if needed, then runs the whole
# mixed-precision rewrite on the example MLP and prints the rewritten IR and
# a summary of what was decided. Arguments replace the defaults:
#   scripts/demo.sh [MODEL.mlir] [auto-mixed-precision options]
#   scripts/demo.sh examples/tosa/transformer_block.mlir "dtype=bf16"
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_BUILD_DIR:-$root/build}"
model="${1:-$root/examples/mlp.mlir}"
options="${2:-dtype=f16}"
report=$(mktemp --suffix=.json)
trap 'rm -f "$report"' EXIT

"$root/scripts/setup.sh"

echo "== mp-opt --auto-mixed-precision=\"$options\" $model"
"$build/bin/mp-opt" "$model" \
  --auto-mixed-precision="$options summary report=$report" \
  --mlir-print-op-on-diagnostic=false

echo "== decisions (full JSON report: --auto-mixed-precision=\"report=FILE\")"
python3 - "$report" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for op in report["ops"]:
    if op["op"] in ("linalg.fill",):
        continue
    loc = op['loc'].rsplit('/', 1)[-1]
    print(f"  {loc:<18} {op['op']:<26} {op['class']:<6} {op['decision']:<5} {op['reason']}")
t = report["totals"]["class"]
r = report["rewrite"]
print(f"  classes: {t['allow']} allow, {t['infer']} infer, {t['clear']} clear, {t['deny']} deny")
print(f"  rewrite: {r['ops_demoted']} ops demoted, {r['casts_inserted']} casts "
      f"({r['bytes_converted']} bytes converted), "
      f"{r['conversions_folded']} conversions folded into neighbours")
PY
