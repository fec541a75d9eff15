#!/usr/bin/env bash
# Runs libmprt's libFuzzer targets (.npy, .npz, checkpoint readers; sources
# in runtime/fuzz) for a bounded time each, from a seed corpus of files the
# runtime writes (mprt-fuzz-seeds) and, when /usr/bin/python3 has numpy,
# files NumPy writes (compressed members, big-endian, Fortran order, ...).
# The corpus each run grows is kept in OUT/corpus for the next run; crashing
# inputs land in OUT/findings. Prints one line per target:
#   fuzz_runtime: <target> clean: N runs in S s (E exec/s), corpus C files ...
#   fuzz_runtime: <target> FAILED: ...
# and exits non-zero when a target failed.
#
#   scripts/fuzz_runtime.sh [--seconds 5] [--build build-asan] [--out DIR]
#
# The build folder is the one scripts/sanitize.sh configures (clang-22,
# ASan+UBSan, MP_ENABLE_FUZZERS=ON); run that first.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_ASAN_BUILD_DIR:-$root/build-asan}"
seconds=5
out=""
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "fuzz_runtime: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
out="${out:-$build/fuzz}"

if [ ! -f "$build/build.ninja" ]; then
  echo "fuzz_runtime: $build is not configured; run scripts/sanitize.sh" >&2
  exit 1
fi
cmake --build "$build" -j 2 --target mprt-fuzzers >/dev/null || exit 1
bin="$build/runtime/fuzz"

seeds="$out/seeds"
rm -rf "$seeds"
mkdir -p "$out"
"$bin/mprt-fuzz-seeds" "$seeds" || exit 1
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 - "$seeds" <<'PY' || exit 1
import sys
import numpy as np
d = sys.argv[1]
a = np.arange(6, dtype=np.float32).reshape(2, 3)
np.save(d + "/npy/numpy-f32.npy", a)
np.save(d + "/npy/numpy-big-endian.npy", a.astype(">f4"))
np.save(d + "/npy/numpy-fortran.npy", np.asfortranarray(a))
np.save(d + "/npy/numpy-bool.npy", a > 2)
np.save(d + "/npy/numpy-u2.npy", a.astype(np.uint16))
np.save(d + "/npy/numpy-complex.npy", a.astype(np.complex64))
np.save(d + "/npy/numpy-structured.npy",
        np.zeros(2, dtype=[("x", "<f4"), ("y", "<i8")]))
np.save(d + "/npy/numpy-unicode.npy", np.array(["ab", "c"]))
np.save(d + "/npy/numpy-object.npy", np.array([1, "x"], dtype=object),
        allow_pickle=True)
for name, save in [("numpy-compressed", np.savez_compressed),
                   ("numpy-stored", np.savez)]:
    save(d + "/npz/" + name + ".npz", w=a, b=np.arange(3, dtype=np.int64),
         s=np.float16(1.5))
    save(d + "/checkpoint/" + name + ".npz", w=a,
         __dtypes__=np.frombuffer(b"bf16 h\n", dtype=np.uint8),
         h=np.arange(4, dtype=np.uint16))
PY
fi

status=0
for target in npy npz checkpoint; do
  corpus="$out/corpus/$target"
  findings="$out/findings"
  mkdir -p "$corpus" "$findings"
  extra=()
  [ -d "$root/runtime/fuzz/regressions/$target" ] &&
    extra+=("$root/runtime/fuzz/regressions/$target")
  log="$out/$target.log"
  "$bin/mprt-fuzz-$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$root/runtime/fuzz/mprt.dict" \
    -artifact_prefix="$findings/$target-" \
    "$corpus" "$seeds/$target" "${extra[@]}" >"$log" 2>&1
  rc=$?
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  files=$(find "$corpus" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz_runtime: $target clean: ${runs:-0} runs in ${seconds} s" \
      "(${rate:-0} exec/s), corpus $files files, ${cov:-cov: ?}," \
      "seeds $(find "$seeds/$target" -type f | wc -l)"
  else
    echo "fuzz_runtime: $target FAILED (exit $rc) after ${runs:-?} runs;" \
      "input in $findings, log $log"
    grep -E -m1 -A 30 'ERROR: |runtime error:|mprt fuzz check failed|==[0-9]+==' \
      "$log" | head -40
    status=1
  fi
done
exit "$status"
