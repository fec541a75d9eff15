#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks (Debian packages only, once),
# then configures and builds mp into build/ (tools in build/bin).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_BUILD_DIR:-$root/build}"

packages=(
  cmake ninja-build ccache g++ python3 libgtest-dev zlib1g-dev libdnnl-dev
  python3-sklearn python3-numpy python3-torch python3-pytest
  python3-venv # the README's `pip install -e python` into a virtual environment
  python3-matplotlib # scripts/plot_training.py (stats files of mp-run train)
  python3-torchvision # the model zoo (scripts/model_zoo.py, tests/test_aten_frontend.py)
  libopenblas0-pthread # PyTorch's FP32 BLAS in bench/ (else the reference BLAS)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22
  libclang-rt-22-dev # ASan, UBSan and libFuzzer for scripts/sanitize.sh
  libonnx-dev libprotobuf-dev # the ONNX importer (mp-translate --import-onnx)
  libonnx-testdata python3-onnx # ONNX's backend tests (scripts/onnx_conformance.py)
  mpich libmpich-dev # data-parallel training (mp-run train --distributed)
  iproute2 # the two-host data-parallel test (network namespaces, veth)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "== setup: installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "== setup: Debian packages present"
fi

if [ ! -f "$build/build.ninja" ]; then
  echo "== setup: configuring $build"
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
fi

echo "== setup: building (ninja, $(nproc) cores)"
start=$(date +%s)
cmake --build "$build"
echo "== setup: build done in $(( $(date +%s) - start )) s; tools in $build/bin"

# The embedded default data set: the digits that python3-sklearn ships.
if [ ! -f "$build/data/digits.npz" ]; then
  mkdir -p "$build/data"
  python3 "$root/scripts/export_digits.py" "$build/data/digits.npz"
fi
