#!/usr/bin/env bash
# Line coverage of mp's libraries: builds mp with g++ --coverage into
# build-coverage/ (-O1, assertions off as in Release), runs the README's test
# suites against that build (lit via check-mp, ctest, pytest under
# python3-coverage, child Pythons included) and prints line coverage of lib/
# (and each lib/ subdirectory), runtime/ (the CPU runtime libmprt),
# runtime/cuda (libmprt_cuda, run here only through the stand-in driver) and
# python/mp, with totals. A developer command, not part of .ci/run: the
# coverage build of everything takes 15-40 minutes on 2 cores (14 on an
# otherwise idle 2-core machine, 2026-11-25), the suites about 4 more.
#
#   scripts/coverage.sh                 build, run every suite, report
#   scripts/coverage.sh --report-only   report the counters of the last run
#   scripts/coverage.sh --files         also list each file under 80%
#   scripts/coverage.sh --suites lit,ctest   run only some suites
#                                       (lit, ctest, pytest; default all)
#
# MP_COVERAGE_BUILD_DIR picks another build folder; MP_COVERAGE_JOBS the
# build's parallelism (default: nproc). The counters of earlier runs are
# reset before the suites run, so the figures are those of this run.
# Exits non-zero when a tool is missing, the build fails or a test fails
# (the table is printed in the last case too).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_COVERAGE_BUILD_DIR:-$root/build-coverage}"
jobs="${MP_COVERAGE_JOBS:-$(nproc)}"
python=/usr/bin/python3
report_only=0
files=0
suites="lit,ctest,pytest"
while (($#)); do
  case "$1" in
    --report-only) report_only=1; shift ;;
    --files) files=1; shift ;;
    --suites) suites="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "coverage: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for suite in ${suites//,/ }; do
  case "$suite" in
    lit|ctest|pytest) ;;
    *) echo "coverage: unknown suite '$suite' (lit, ctest, pytest)" >&2; exit 2 ;;
  esac
done
runs() { [[ ",$suites," == *",$1,"* ]]; }

fail() { echo "coverage: $*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - $1 )) s"; }

# What the report needs beyond scripts/setup.sh's packages: gcovr (reads
# g++'s counters through gcov) and python3-coverage.
missing=()
for package in gcovr python3-coverage; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "== coverage: installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null ||
    fail "could not install ${missing[*]} (apt-get failed)"
fi

# gcov must be the one of the compiler that wrote the counters.
for tool in g++ gcc gcov gcovr cmake ninja "$python"; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/setup.sh installs the toolchain)"
done
gxx_major=$(g++ -dumpversion | cut -d. -f1)
gcov_major=$(gcov --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | tail -1 | cut -d. -f1)
[ "$gxx_major" = "$gcov_major" ] ||
  fail "gcov $gcov_major does not match g++ $gxx_major: counters would be misread"
"$python" -c "import coverage" 2>/dev/null ||
  fail "$python cannot import coverage (apt-get install python3-coverage)"
if runs pytest; then
  "$python" -c "import pytest, numpy, torch" 2>/dev/null ||
    fail "$python lacks pytest, numpy or torch (scripts/setup.sh installs them)"
fi
[ -d /usr/lib/llvm-22/lib/cmake/mlir ] ||
  fail "MLIR 22 not found in /usr/lib/llvm-22 (scripts/setup.sh installs it)"

status=0
pydata="$build/coverage/python"
if ((!report_only)); then
  # Configured every time (cheap): changed flags reach an old folder.
  # -O1 keeps the suites fast while the line counts stay close to the source
  # (at -O2 inlining folds lines away); -DNDEBUG as in the Release build the
  # tests are written for.
  echo "== coverage: configuring $build (g++ --coverage, -O1)"
  configure_log=$(mktemp)
  cmake -S "$root" -B "$build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
      -DCMAKE_C_FLAGS=--coverage -DCMAKE_CXX_FLAGS=--coverage \
      -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DCMAKE_EXE_LINKER_FLAGS=--coverage \
      -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
      -DCMAKE_MODULE_LINKER_FLAGS=--coverage \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >"$configure_log" 2>&1 ||
    { tail -20 "$configure_log" >&2; fail "configuring $build failed (log: $configure_log)"; }
  rm -f "$configure_log"

  echo "== coverage: building everything (ninja -j $jobs; 15-40 min from scratch on 2 cores)"
  start=$(date +%s)
  cmake --build "$build" -j "$jobs" || fail "build failed"
  echo "== coverage: build done in $(elapsed "$start")"
  if [ ! -f "$build/data/digits.npz" ]; then
    mkdir -p "$build/data"
    "$python" "$root/scripts/export_digits.py" "$build/data/digits.npz" ||
      fail "exporting the digits data set failed"
  fi

  echo "== coverage: resetting the counters of earlier runs"
  find "$build" -name '*.gcda' -delete
  rm -rf "$pydata"
  mkdir -p "$pydata"

  if runs lit; then
    echo "== coverage: lit suite (check-mp)"
    start=$(date +%s)
    cmake --build "$build" --target check-mp 2>&1 | tail -15
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "coverage: lit suite failed" >&2; status=1; }
    echo "== coverage: lit done in $(elapsed "$start")"
  fi

  if runs ctest; then
    echo "== coverage: GoogleTest unit tests (ctest)"
    start=$(date +%s)
    ctest_log=$(mktemp)
    ctest --test-dir "$build" --output-on-failure >"$ctest_log" 2>&1
    ctest_status=$?
    # The summary ("100% tests passed, 0 tests failed out of N"), how many
    # were skipped (the CUDA tests that need a GPU), and any failure.
    grep -E "tests passed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)" "$ctest_log"
    echo "   ($(grep -c "(Skipped)" "$ctest_log") skipped: they need a GPU)"
    rm -f "$ctest_log"
    [ "$ctest_status" -eq 0 ] || { echo "coverage: ctest failed" >&2; status=1; }
    echo "== coverage: ctest done in $(elapsed "$start")"
  fi

  if runs pytest; then
    # Every Python process the tests start (children of test_cuda_errors
    # too) records through sitecustomize + COVERAGE_PROCESS_START.
    echo "== coverage: Python package (pytest python/tests under coverage)"
    start=$(date +%s)
    cat >"$pydata/coveragerc" <<EOF
[run]
source = $root/python/mp
parallel = True
data_file = $pydata/.coverage
EOF
    echo "import coverage; coverage.process_startup()" >"$pydata/sitecustomize.py"
    (cd "$root" && MP_BUILD_DIR="$build" COVERAGE_PROCESS_START="$pydata/coveragerc" \
      PYTHONPATH="$pydata${PYTHONPATH:+:$PYTHONPATH}" \
      "$python" -m pytest "$root/python/tests" -q -p no:cacheprovider 2>&1 | tail -8
      exit "${PIPESTATUS[0]}")
    [ $? -eq 0 ] || { echo "coverage: pytest failed" >&2; status=1; }
    echo "== coverage: pytest done in $(elapsed "$start")"
  fi
fi

# The report: gcovr reads the counters (gcov) into per-file line counts of
# the sources under lib/, runtime/ and tools/ (generated .inc files and
# tests excluded); coverage.py the Python ones.
echo "== coverage: collecting line counts (gcovr, python3-coverage)"
start=$(date +%s)
find "$build" -name '*.gcda' -print -quit 2>/dev/null | grep -q . ||
  fail "no counters (*.gcda) in $build: run without --report-only first"
mkdir -p "$build/coverage"
gcovr --root "$root" --object-directory "$build" -j "$jobs" \
    --filter "$root/lib/" --filter "$root/runtime/" --filter "$root/tools/" \
    --filter "$root/include/" \
    --exclude "$root/runtime/unittests/" --exclude "$root/runtime/cuda/unittests/" \
    --exclude "$root/runtime/fuzz/" \
    --gcov-ignore-parse-errors \
    --json-summary "$build/coverage/cxx.json" >/dev/null 2>"$build/coverage/gcovr.log" ||
  { tail -20 "$build/coverage/gcovr.log" >&2; fail "gcovr failed (log: $build/coverage/gcovr.log)"; }
if compgen -G "$pydata/.coverage*" >/dev/null; then
  (cd "$pydata" && COVERAGE_RCFILE="$pydata/coveragerc" "$python" -m coverage combine -q \
      >/dev/null 2>&1; COVERAGE_RCFILE="$pydata/coveragerc" "$python" -m coverage json -q \
      -o "$build/coverage/python.json") || fail "python3-coverage could not report"
else
  echo "coverage: no Python counters (pytest not run)" >&2
  rm -f "$build/coverage/python.json"
fi
echo "== coverage: collected in $(elapsed "$start")"

"$python" - "$root" "$build/coverage" "$files" <<'EOF'
import json, os, sys

root, out, list_files = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
files = {}  # path relative to root -> (covered, total)
with open(os.path.join(out, "cxx.json")) as f:
    for entry in json.load(f)["files"]:
        files[entry["filename"]] = (entry["line_covered"], entry["line_total"])
python_json = os.path.join(out, "python.json")
if os.path.exists(python_json):
    with open(python_json) as f:
        for path, entry in json.load(f)["files"].items():
            rel = os.path.relpath(os.path.abspath(path), root)
            s = entry["summary"]
            files[rel] = (s["covered_lines"], s["num_statements"])

def group(path):
    """The table row a file counts in (None: not reported)."""
    parts = path.split("/")
    if parts[0] == "lib" and len(parts) > 2:
        return "lib/" + parts[1]
    if parts[0] == "runtime":
        if parts[1] == "cuda":
            return "runtime/cuda/standin" if parts[2] == "standin" else "runtime/cuda"
        return "runtime"
    if path.startswith("python/mp/"):
        return "python/mp"
    if parts[0] == "tools":
        return "tools"
    if parts[0] == "include":
        return "include"
    return None

rows = {}
for path, (c, t) in files.items():
    g = group(path)
    if g is None:
        continue
    rc, rt = rows.get(g, (0, 0))
    rows[g] = (rc + c, rt + t)

def pct(c, t):
    return "%6.1f%%" % (100.0 * c / t) if t else "    n/a"

def line(name, c, t, note=""):
    print("%-28s %7d / %-7d %s%s" % (name, c, t, pct(c, t), note))

def total(names):
    c = sum(rows.get(n, (0, 0))[0] for n in names)
    t = sum(rows.get(n, (0, 0))[1] for n in names)
    return c, t

libs = sorted(n for n in rows if n.startswith("lib/"))
print()
print("%-28s %17s %7s" % ("line coverage", "covered / lines", ""))
print("-" * 54)
for n in libs:
    line("  " + n + "/", *rows[n])
line("lib/", *total(libs))
line("runtime/ (CPU, libmprt)", *rows.get("runtime", (0, 0)))
line("runtime/cuda/", *rows.get("runtime/cuda", (0, 0)), note="  (GPU code: stand-in driver only)")
line("python/mp/", *rows.get("python/mp", (0, 0)))
print("-" * 54)
line("total C++ (lib, runtime)", *total(libs + ["runtime", "runtime/cuda"]))
line("total", *total(libs + ["runtime", "runtime/cuda", "python/mp"]))
print("-" * 54)
print("not in the totals:")
line("  include/ (headers)", *rows.get("include", (0, 0)))
line("  tools/", *rows.get("tools", (0, 0)))
line("  runtime/cuda/standin/", *rows.get("runtime/cuda/standin", (0, 0)), note="  (test stand-in)")

if list_files:
    print()
    print("files under 80%:")
    for path in sorted(files):
        c, t = files[path]
        if group(path) and t and c < 0.8 * t:
            line("  " + path, c, t)
EOF
[ $? -eq 0 ] || fail "could not print the table"
[ "$status" -eq 0 ] || echo "coverage: some tests failed (the figures above count what ran)" >&2
exit "$status"
