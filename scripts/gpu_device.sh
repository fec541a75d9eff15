#!/usr/bin/env bash
# Runs mp on a GPU machine that has CUDA, its driver and PyTorch but no
# LLVM/MLIR (the device tool's H100/H200), from the bundle that
# scripts/gpu_bundle.sh made: one call of at most 10 minutes.
#
#   scripts/gpu_device.sh STAGE [BUNDLE]     STAGE: 1, 2, 3 or 1-3 (a range)
#
# BUNDLE defaults to gpu-bundle/mp-gpu-bundle.tar.xz. Every step runs under
# its own timeout, all of them inside $MP_DEVICE_SECONDS (default 570 s);
# the first failing step ends the run (exit 1); a benchmark's missed
# --require target is reported in the summary and the run goes on.
# MP_DEVICE_SKIP=REGEX skips the steps whose names match. Logs go to $OUT
# (7 files at most, the stats file of the accumulation run included; $OUT
# defaults to gpu-device-out/), a summary table to
# stdout.
#   1  fail fast: mprt-cuda-unittests; one f16 epoch on the GPU; gradient
#      accumulation and precision repair on the GPU; the Python
#      Session on the GPU against the CPU (gpu_session_check.py); the commands
#      of test/mp-run/cuda-train.test (CPU f32 vs GPU f16/bf16 for 30
#      epochs, f16, int8 and int8-dynamic inference on the GPU); QAT on the
#      GPU and int8 from its checkpoint; gemm_bench on a few shapes
#   2  gemm_bench --require on the large shapes; gpu_bench.py on the MLP
#   3  the transformer block (d_model 4096, 64 x 512 tokens) against PyTorch
#      AMP (GradScaler f16, autocast bf16) and FP32, in one run
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stages="${1:-}"
bundle="${2:-$root/gpu-bundle/mp-gpu-bundle.tar.xz}"
case "$stages" in
  1 | 2 | 3) first=$stages last=$stages ;;
  [1-3]-[1-3]) first=${stages%-*} last=${stages#*-} ;;
  *) echo "usage: scripts/gpu_device.sh 1|2|3|FIRST-LAST [BUNDLE]" >&2; exit 2 ;;
esac
if [ ! -f "$bundle" ]; then
  echo "gpu_device: error: $bundle is missing (make it with scripts/gpu_bundle.sh" \
    "and carry it along)" >&2
  exit 2
fi
out="${OUT:-$root/gpu-device-out}"
mkdir -p "$out"
budget="${MP_DEVICE_SECONDS:-570}"
start=$(date +%s)
summary="$out/summary.txt"
: > "$summary"

# The bundle is a build tree: python/mp, bench/ and mp-run find it there.
work=$(mktemp -d)
tar -C "$work" -xJf "$bundle" || { echo "gpu_device: cannot unpack $bundle" >&2; exit 2; }
export MP_BUILD_DIR="$work/build"
export PATH="$MP_BUILD_DIR/bin:$PATH"
# The copied libraries (oneDNN and its OpenMP) find each other through this.
export LD_LIBRARY_PATH="$MP_BUILD_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
python=$(command -v python3)

# cuBLASLt: the toolkit's, else the one PyTorch ships (nvidia/cu13 or
# nvidia/cublas wheels); libmprt_cuda dlopens libcublasLt.so.13 by name.
cublas_dir=""
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$dir/libcublasLt.so.13" ] && { cublas_dir=$dir; break; }
done
if [ -z "$cublas_dir" ]; then
  cublas_dir=$("$python" - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
    for base in nvidia.__path__:
        for hit in glob.glob(os.path.join(base, "**", "libcublasLt.so.13"), recursive=True):
            print(os.path.dirname(hit)); raise SystemExit
except ImportError:
    pass
EOF
)
fi
[ -n "$cublas_dir" ] && export LD_LIBRARY_PATH="$cublas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# libdevice for the kernels' math functions: the toolkit's, else the bundle's.
if [ ! -e "${CUDA_HOME:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc" ]; then
  export CUDA_HOME="$MP_BUILD_DIR/cuda"
fi

{
  echo "== environment"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
    --format=csv 2>&1 | head -3
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "python: $python ($("$python" --version 2>&1))"
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")' 2>&1
  echo "cuBLASLt: ${cublas_dir:-not found}"
  echo "CUDA_HOME: ${CUDA_HOME:-/usr/local/cuda}"
  echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
} 2>&1 | tee "$out/environment.txt"

failed=0
# step NAME LOG SECONDS COMMAND...: runs COMMAND, appending to $out/LOG,
# within SECONDS and what is left of the budget; records a summary row.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  ((failed)) && return 1
  if [[ -n "${MP_DEVICE_SKIP:-}" && "$name" =~ $MP_DEVICE_SKIP ]]; then
    echo "| $name | skipped (MP_DEVICE_SKIP) |" | tee -a "$summary"
    return 0
  fi
  local left=$((budget - ($(date +%s) - start)))
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    echo "| $name | skipped: out of time |" | tee -a "$summary"
    failed=1
    return 1
  fi
  echo "== $name (limit ${limit} s)" | tee -a "$out/$log"
  local t0=$(date +%s) first_line=$(wc -l < "$out/$log")
  timeout --kill-after=5 "$limit" "$@" >> "$out/$log" 2>&1
  local status=$? seconds=$(($(date +%s) - t0))
  if ((status == 0)); then
    echo "| $name | ok | ${seconds} s |" | tee -a "$summary"
    return 0
  fi
  # A benchmark's --require exits 1 for a missed target: a number to
  # report, not a broken run, so the next steps still run.
  if ((status == 1)) && [[ "$name" == *--require* ]]; then
    echo "| $name | ran; targets missed (see $log) | ${seconds} s |" | tee -a "$summary"
    tail -n "+$((first_line + 1))" "$out/$log" | grep -E "^(FAIL|ok): " |
      sed 's/^/    /' >> "$summary"
    return 0
  fi
  ((status == 124)) && status="timed out"
  echo "| $name | FAILED ($status) | ${seconds} s |" | tee -a "$summary"
  echo "-- last lines of $log:"
  tail -25 "$out/$log"
  failed=1
  return 1
}

ex="$root/examples/digits_mlp.mlir"
tmp="$work/run"
mkdir -p "$tmp"

stage1() {
  step "mprt-cuda-unittests" train.log 120 \
    "$MP_BUILD_DIR/bin/mprt-cuda-unittests" --gtest_color=no || return
  step "train f16, 1 epoch, --device cuda" train.log 120 \
    mp-run train "$ex" --device cuda --precision f16 --epochs 1 || return
  # What the GPU is, and --precision auto's choice (bf16 + TF32 on sm_80+).
  step "mp-run info" train.log 60 mp-run info || return
  step "train auto, 3 epochs, --device cuda" train.log 180 \
    mp-run train "$ex" --device cuda --precision auto --epochs 3 || return
  step "train f32 with --tf32, 3 epochs, --device cuda" train.log 180 \
    mp-run train "$ex" --device cuda --precision f32 --tf32 --epochs 3 || return
  # Gradient accumulation's sums in device memory, and the monitor's stats
  # (the step's gradient norm read back from the GPU) for plotting.
  step "train f16, --accumulate 4, --stats, --device cuda" train.log 180 \
    mp-run train "$ex" --device cuda --precision f16 --accumulate 4 --epochs 3 \
      --stats "$out/stats-f16-accumulate4.json" || return
  # Self-healing precision with the step on the GPU: the probes run on the
  # CPU, the step is compiled again for the GPU with the ops kept in f32.
  step "train f16 --auto-precision-repair on, --device cuda" train.log 180 \
    sh -c "mp-run train '$root/examples/digits_overflow.mlir' --device cuda \
      --precision f16 --auto-precision-repair on --epochs 3 | tee '$tmp/repair.log' &&
      grep -q '^precision repair at step [0-9]*: kept in f32' '$tmp/repair.log'" || return
  step "Python Session on the GPU vs the CPU" train.log 180 \
    "$python" "$root/scripts/gpu_session_check.py" || return
  # test/mp-run/cuda-train.test's commands.
  step "train f32 on the CPU, 30 epochs" train.log 180 \
    sh -c "mp-run train '$ex' --precision f32 --epochs 30 --seed 0 > '$tmp/cpu.log'" || return
  step "train f16 on the GPU, 30 epochs" train.log 120 \
    sh -c "mp-run train '$ex' --device cuda --precision f16 --epochs 30 --seed 0 \
      --checkpoint '$tmp/f16.npz' > '$tmp/f16.log'" || return
  step "train bf16 on the GPU, 30 epochs" train.log 120 \
    sh -c "mp-run train '$ex' --device cuda --precision bf16 --epochs 30 --seed 0 \
      > '$tmp/bf16.log'" || return
  cat "$tmp/cpu.log" "$tmp/f16.log" "$tmp/bf16.log" >> "$out/train.log"
  step "f16/bf16 GPU accuracy within 0.1 point of CPU f32" train.log 10 \
    "$python" "$root/scripts/compare_accuracy.py" "$tmp/cpu.log" "$tmp/f16.log" \
      "$tmp/bf16.log" --max-diff 0.1 || return
  step "infer f16 on the GPU vs the CPU" infer.log 120 sh -c "
    mp-run infer '$ex' --device cuda --precision f16 --checkpoint '$tmp/f16.npz' \
      | tee -a '$out/infer.log' | sed 's/ inference.*/)/' > '$tmp/gpu.infer' &&
    mp-run infer '$ex' --precision f16 --checkpoint '$tmp/f16.npz' \
      | tee -a '$out/infer.log' | sed 's/ inference.*/)/' > '$tmp/cpu.infer' &&
    '$python' '$root/scripts/compare_accuracy.py' '$tmp/cpu.infer' '$tmp/gpu.infer' \
      --max-diff 0.3" || return
  step "infer int8 on the GPU within 0.5 point of f32" infer.log 180 sh -c "
    mp-run train '$ex' --epochs 5 --checkpoint '$tmp/f32.npz' > /dev/null &&
    mp-run infer '$ex' --checkpoint '$tmp/f32.npz' --calibrate 10 \
      --calibration-out '$tmp/stats.json' > /dev/null &&
    mp-run infer '$ex' --device cuda --checkpoint '$tmp/f32.npz' --precision int8 \
      --calibration '$tmp/stats.json' | tee -a '$out/infer.log' > '$tmp/int8.log' &&
    grep 'f32 reference' '$tmp/int8.log' | sed 's/ reference//' > '$tmp/int8.ref' &&
    grep 'int8 inference' '$tmp/int8.log' | sed 's/ inference.*/)/' > '$tmp/int8.gpu' &&
    '$python' '$root/scripts/compare_accuracy.py' '$tmp/int8.ref' '$tmp/int8.gpu' \
      --max-diff 0.5" || return
  # Dynamic int8: activation scales computed on the GPU per batch, s8
  # cuBLASLt products, no calibration file (the f32 checkpoint above).
  step "infer int8-dynamic on the GPU within 0.5 point of f32" infer.log 120 sh -c "
    mp-run infer '$ex' --device cuda --checkpoint '$tmp/f32.npz' \
      --precision int8-dynamic | tee -a '$out/infer.log' > '$tmp/dyn.log' &&
    grep 'f32 reference' '$tmp/dyn.log' | sed 's/ reference//' > '$tmp/dyn.ref' &&
    grep 'int8-dynamic inference' '$tmp/dyn.log' | sed 's/ inference.*/)/' > '$tmp/dyn.gpu' &&
    '$python' '$root/scripts/compare_accuracy.py' '$tmp/dyn.ref' '$tmp/dyn.gpu' \
      --max-diff 0.5" || return
  # Quantization-aware training on the GPU from the f32 checkpoint, then
  # int8 on the GPU from its observers (no calibration file).
  step "QAT on the GPU, int8 within 0.5 point of its f32" infer.log 180 sh -c "
    mp-run train '$ex' --device cuda --qat --init-from '$tmp/f32.npz' --lr 0.01 \
      --epochs 2 --checkpoint '$tmp/qat.npz' | tee -a '$out/infer.log' > /dev/null &&
    mp-run infer '$ex' --device cuda --checkpoint '$tmp/qat.npz' --precision int8 \
      | tee -a '$out/infer.log' > '$tmp/qat.log' &&
    grep 'f32 reference' '$tmp/qat.log' | sed 's/ reference//' > '$tmp/qat.ref' &&
    grep 'int8 inference' '$tmp/qat.log' | sed 's/ inference.*/)/' > '$tmp/qat.gpu' &&
    '$python' '$root/scripts/compare_accuracy.py' '$tmp/qat.ref' '$tmp/qat.gpu' \
      --max-diff 0.5" || return
  step "gemm_bench, a few shapes" bench.log 150 \
    "$python" "$root/bench/gemm_bench.py" --device cuda --dtypes f32,f16,bf16,s8 \
      --shapes 1024,4096,4096x4096x16384:tb --repeats 10 || return
}

stage2() {
  step "gemm_bench --require" bench.log 240 \
    "$python" "$root/bench/gemm_bench.py" --device cuda --require || return
  step "gpu_bench MLP --require" gpu_bench.log 300 \
    "$python" "$root/bench/gpu_bench.py" --device cuda --model mlp --require || return
}

stage3() {
  step "gpu_bench transformer block --require" gpu_bench.log 540 \
    "$python" "$root/bench/gpu_bench.py" --device cuda --model transformer --require \
    || return
}

for ((s = first; s <= last; ++s)); do
  "stage$s" || break
done

echo
echo "== summary ($(($(date +%s) - start)) s; logs in $out)"
cat "$summary"
rm -rf "$work"
exit "$failed"
