#!/usr/bin/env bash
# Builds mp's runtime and unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang-22, -fno-sanitize-recover=all, mp's own
# code with assertions on) into build-asan/, runs the GoogleTests, and runs
# each libFuzzer target of the runtime's readers (.npy, .npz, checkpoints)
# for a few seconds. Exits non-zero on any test failure or sanitizer report.
# Ends with "sanitize: N passed, N failed" (each test, and each fuzz target,
# counts once).
#
#   scripts/sanitize.sh                   runtime + unit tests + fuzz smoke
#   scripts/sanitize.sh --fuzz-seconds 60 longer fuzzing of the readers
#   scripts/sanitize.sh --runtime-only    libmprt only (what CI runs: ~1 min)
#   scripts/sanitize.sh --full            also mp-opt with ASan, UBSan and
#                                         assertions, fuzzed by
#                                         scripts/fuzz_mp_opt.py (--runs N)
#
# MP_ASAN_BUILD_DIR picks another build folder.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_ASAN_BUILD_DIR:-$root/build-asan}"
fuzz_seconds=5
full=0
runtime_only=0
runs=300
while (($#)); do
  case "$1" in
    --fuzz-seconds) fuzz_seconds="$2"; shift 2 ;;
    --full) full=1; shift ;;
    --runtime-only) runtime_only=1; shift ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "sanitize: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

for tool in clang-22 clang++-22; do
  if ! command -v "$tool" >/dev/null; then
    echo "sanitize: $tool not found (scripts/setup.sh installs it)" >&2
    exit 1
  fi
done

flags="-fsanitize=address,undefined -fno-sanitize-recover=all"
# vptr and function checks need RTTI, which LLVM-style code builds without.
flags+=" -fno-sanitize=vptr,function -fno-omit-frame-pointer -gline-tables-only"
ignorelist="$root/scripts/sanitize-ignorelist.txt"
flags+=" -fsanitize-ignorelist=$ignorelist"
# ccache does not hash the ignorelist's contents: a define with its checksum
# makes an edited list recompile what it affects.
flags+=" -DMP_SANITIZE_IGNORELIST=$(cksum <"$ignorelist" | cut -d' ' -f1)"
# Configured every time (cheap), so that changed flags reach an old folder.
echo "== sanitize: configuring $build"
# MPRT_ENABLE_MPI=OFF: the sanitized runtime tests do not need MPI, and
# mprt-unittests linked with MPICH crashed at start under ASan.
# CMAKE_*_FLAGS_RELEASE without -DNDEBUG: mp's own code keeps its asserts
# (Debian's MLIR libraries are built without them).
cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_C_FLAGS_RELEASE="-O1" -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DMP_ENABLE_FUZZERS=ON \
    -DMPRT_ENABLE_MPI=OFF \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null || exit 1

targets=(mprt-unittests mprt-fuzzers)
((runtime_only)) || targets+=(mp-unittests)
((full)) && targets+=(mp-opt)
echo "== sanitize: building ${targets[*]}"
start=$(date +%s)
cmake --build "$build" -j 2 --target "${targets[@]}" || exit 1
echo "== sanitize: build done in $(( $(date +%s) - start )) s"

# allocator_may_return_null: the runtime's tests check that a failed
# allocation becomes MPRT_ERROR_OUT_OF_MEMORY (the fuzz targets keep the
# default, so that any oversized allocation there is a finding).
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LLVM_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer

passed=0
failed=0
reports='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer'
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# GoogleTest binaries: count their tests; a sanitizer report fails the run.
tests=(runtime/mprt-unittests)
((runtime_only)) || tests+=(unittests/mp-unittests)
for test in "${tests[@]}"; do
  binary="$build/$(dirname "$test")/$(basename "$test")"
  [ -x "$binary" ] || binary="$build/bin/$(basename "$test")"
  echo "== sanitize: $(basename "$test")"
  "$binary" --gtest_brief=1 >"$log" 2>&1
  status=$?
  tail -n 5 "$log"
  ok=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$log" | tail -1)
  bad=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed.*/\1/p' "$log" | tail -1)
  passed=$((passed + ${ok:-0}))
  failed=$((failed + ${bad:-0}))
  if grep -qE "$reports" "$log"; then
    grep -E -A 20 "$reports" "$log" | head -60
    echo "sanitize: $(basename "$test"): sanitizer report" >&2
    failed=$((failed + 1))
  elif [ "$status" -ne 0 ] && [ "${bad:-0}" -eq 0 ]; then
    cat "$log"
    echo "sanitize: $(basename "$test") exited with $status" >&2
    failed=$((failed + 1))
  fi
done

# The readers' fuzz targets, from the seeds the runtime writes (and NumPy's,
# when /usr/bin/python3 has numpy) plus what earlier runs found.
fuzz="$build/fuzz"
ASAN_OPTIONS="${ASAN_OPTIONS/allocator_may_return_null=1/allocator_may_return_null=0}" \
  "$root/scripts/fuzz_runtime.sh" --build "$build" --seconds "$fuzz_seconds" \
  --out "$fuzz" >"$log" 2>&1
status=$?
cat "$log"
ok=$(grep -c '^fuzz_runtime: .* clean' "$log")
bad=$(grep -c '^fuzz_runtime: .* FAILED' "$log")
passed=$((passed + ok))
failed=$((failed + bad))
if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then failed=$((failed + 1)); fi

if ((full)); then
  echo "== sanitize: fuzzing mp-opt (ASan, UBSan, assertions), $runs runs"
  if python3 "$root/scripts/fuzz_mp_opt.py" --mp-opt "$build/bin/mp-opt" \
      --runs "$runs" --seed 1 --jobs 2 --timeout 60 --out "$build/fuzz-mp-opt" \
      --quiet; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

echo "sanitize: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
