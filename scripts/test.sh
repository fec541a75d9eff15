#!/usr/bin/env bash
# Installs, builds and runs every test: the lit suite (check-mp) and, where
# they exist, GoogleTest (ctest) and pytest. Ends with one line
# "tests: N passed, N failed".
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_BUILD_DIR:-$root/build}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

"$root/scripts/setup.sh" || exit 1
# Every test compiles its steps: none reads or fills the user's compile
# cache (lit and pytest also set this; the cache's own tests use %t).
export MP_CACHE=off

echo "== test: lit suite (check-mp)"
cmake --build "$build" --target check-mp 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

count() { # lit's summary lines: "  Passed: 8 (100.00%)" or "  Passed     : 8 (...)"
  awk -v name="$1" '{ line = $0; sub(/^ +/, "", line); sub(/ +:/, ":", line) }
    index(line, name ": ") == 1 { split(substr(line, length(name) + 3), f, " "); s += f[1] }
    END { print s + 0 }' "$log"
}
passed=$(count Passed)
failed=$(( $(count Failed) + $(count "Unresolved") + $(count "Timed Out") ))
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi

if [ -f "$build/CTestTestfile.cmake" ]; then
  echo "== test: GoogleTest unit tests (ctest)"
  ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$log"
  ctest_status=${PIPESTATUS[0]}
  # "100% tests passed, 0 tests failed out of 11"
  summary=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
  if [ -n "$summary" ]; then
    total=$(echo "$summary" | sed -E 's/.* out of ([0-9]+).*/\1/')
    bad=$(echo "$summary" | sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/')
    passed=$((passed + total - bad))
    failed=$((failed + bad))
  elif [ "$ctest_status" -ne 0 ]; then
    failed=$((failed + 1))
  fi
  [ "$ctest_status" -ne 0 ] && status=$ctest_status
fi

# The GPU device bundle's library (scripts/gpu_bundle.sh; docs/gpu.md) is
# linked only on request; linking it here, with --no-undefined, and training
# one epoch through it keeps a GPU session's first call from failing on a
# library the bundle forgot.
echo "== test: the GPU device bundle links and trains (ninja mp-bundle)"
if cmake --build "$build" --target mp-bundle > "$log" 2>&1 &&
  "$build/bundle/bin/mp-run" train "$root/examples/digits_mlp.mlir" --epochs 1 \
    --data "$build/data/digits.npz" >> "$log" 2>&1; then
  echo "bundle: ok"
  passed=$((passed + 1))
else
  tail -20 "$log"
  echo "bundle: FAILED"
  failed=$((failed + 1))
  status=1
fi

# The Python package's tests (python/tests), with Debian's python3 (numpy,
# torch): "== N failed, M passed, K xfailed in 50.1s ==".
echo "== test: Python package (pytest python/tests)"
MP_BUILD_DIR="$build" /usr/bin/python3 -m pytest "$root/python/tests" -q 2>&1 | tee "$log"
pytest_status=${PIPESTATUS[0]}
summary=$(grep -E "^=* ?[0-9]+ (passed|failed|error)" "$log" | tail -1)
py_count() { echo "$summary" | grep -oE "[0-9]+ $1" | awk '{ s += $1 } END { print s + 0 }'; }
py_passed=$(py_count passed)
py_failed=$(( $(py_count failed) + $(py_count "errors?") ))
if [ "$pytest_status" -ne 0 ] && [ "$py_failed" -eq 0 ]; then py_failed=1; fi
passed=$((passed + py_passed))
failed=$((failed + py_failed))
[ "$pytest_status" -ne 0 ] && status=$pytest_status

# The runtime and unit tests again under ASan and UBSan, with a few seconds
# of fuzzing of the runtime's readers (MP_SKIP_SANITIZE=1 skips this).
if [ "${MP_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== test: ASan/UBSan build and reader fuzzing (scripts/sanitize.sh)"
  "$root/scripts/sanitize.sh" --runtime-only --fuzz-seconds 3 2>&1 | tee "$log"
  sanitize_status=${PIPESTATUS[0]}
  summary=$(grep -E "^sanitize: [0-9]+ passed, [0-9]+ failed" "$log" | tail -1)
  if [ -n "$summary" ]; then
    passed=$((passed + $(echo "$summary" | sed -E 's/^sanitize: ([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$summary" | sed -E 's/.*passed, ([0-9]+) failed.*/\1/')))
  elif [ "$sanitize_status" -ne 0 ]; then
    failed=$((failed + 1))
  fi
  [ "$sanitize_status" -ne 0 ] && status=$sanitize_status
fi

echo "tests: $passed passed, $failed failed"
exit "$status"
