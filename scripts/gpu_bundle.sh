#!/usr/bin/env bash
# Builds the GPU device bundle: what a GPU machine without LLVM or MLIR (the
# device tool's H100/H200) needs to run mp, as one archive under 60 MiB.
#
#   scripts/gpu_bundle.sh        -> gpu-bundle/mp-gpu-bundle.tar.xz (git-ignored)
#
# The archive unpacks into build/ (a build tree's layout, so the tools,
# python/mp and bench/ find it with MP_BUILD_DIR):
#   bin/mp-run                  a launcher of lib/libmp_session.so's mp_run_main
#   bin/mprt-cuda-unittests     libmprt_cuda's tests (inputs in share/)
#   lib/libmp_session.so        the C API + mp-run + static MLIR/LLVM (ninja mp-bundle)
#   lib/libmprt_cuda.so, lib/libdnnl.so.2, ...  what those need beyond glibc/libstdc++
#   data/digits.npz, share/mp/cuda-test-inputs/, cuda/nvvm/libdevice/
# Then it checks the bundle here: unpacked into an empty directory, every
# library beyond glibc/libstdc++ resolves inside it, mp-run trains the
# digits on the CPU and the unit tests pass. scripts/gpu_device.sh runs
# it on the GPU machine (docs/gpu.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${MP_BUILD_DIR:-$root/build}"
out="$root/gpu-bundle"
limit_mib=60

"$root/scripts/setup.sh"
echo "== bundle: linking the static session library (ninja mp-bundle)"
cmake --build "$build" --target mp-bundle mprt_cuda mprt-cuda-unittests

stage=$(mktemp -d)
check=$(mktemp -d)
trap 'rm -rf "$stage" "$check"' EXIT
tree="$stage/build"
mkdir -p "$tree/bin" "$tree/lib" "$tree/data" "$tree/share/mp" \
  "$tree/cuda/nvvm/libdevice"

cp "$build/bundle/bin/mp-run" "$tree/bin/"
cp "$build/bin/mprt-cuda-unittests" "$tree/bin/"
cp "$build/bundle/lib/libmp_session.so" "$build/lib/libmprt_cuda.so" "$tree/lib/"
cp -r "$root/runtime/cuda/unittests/Inputs" "$tree/share/mp/cuda-test-inputs"
cp "$build/data/digits.npz" "$tree/data/"
cp /usr/local/cuda/nvvm/libdevice/libdevice.10.bc "$tree/cuda/nvvm/libdevice/"

# Shared libraries beyond what every Linux has (glibc, libstdc++, libgcc):
# oneDNN, its OpenMP, compression. Copied by the names the loader asks for.
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.'
for binary in "$tree"/bin/* "$tree"/lib/*.so; do
  ldd "$binary" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ ! "$name" =~ $system ]] && [ ! -e "$tree/lib/$name" ]; then
    cp -L "$path" "$tree/lib/$name"
  fi
done
strip --strip-unneeded "$tree"/bin/* "$tree"/lib/*.so*

mkdir -p "$out"
archive="$out/mp-gpu-bundle.tar.xz"
echo "== bundle: compressing $(du -sm "$tree" | cut -f1) MiB (xz -9)"
tar -C "$stage" -cf - build | xz -9 -T2 --block-size=64MiB > "$archive.tmp"
mv "$archive.tmp" "$archive"
mib=$(( ($(stat -c %s "$archive") + 1048575) / 1048576 ))
echo "== bundle: $archive: $mib MiB"
if ((mib > limit_mib)); then
  echo "gpu_bundle: error: the bundle is $mib MiB, over the $limit_mib MiB a" \
    "device call can carry beside the source tree" >&2
  exit 1
fi

echo "== bundle: checking a clean unpack in $check"
tar -C "$check" -xJf "$archive"
unpacked="$check/build"
# Every library beyond glibc/libstdc++/libgcc must resolve inside the
# unpacked bundle (this machine has them in /usr/lib too, the GPU machine
# does not), with the LD_LIBRARY_PATH that scripts/gpu_device.sh sets.
outside=$(for binary in "$unpacked"/bin/* "$unpacked"/lib/*.so*; do
  LD_LIBRARY_PATH="$unpacked/lib" ldd "$binary" |
    awk -v who="${binary##*/}" '$2 == "=>" { print who, $1, $3 }'
done | while read -r who name path; do
  [[ "$name" =~ $system || "$path" == "$unpacked"/* ]] ||
    echo "$who needs $name from $path"
done)
if [ -n "$outside" ]; then
  echo "$outside" >&2
  echo "gpu_bundle: error: the bundle resolves these libraries outside itself" >&2
  exit 1
fi
env -u LD_LIBRARY_PATH "$unpacked/bin/mp-run" train \
  "$root/examples/digits_mlp.mlir" --device cpu --precision bf16 --epochs 2 |
  tee "$check/train.log"
grep -q "held-out accuracy" "$check/train.log"
env -u LD_LIBRARY_PATH \
  "$unpacked/bin/mprt-cuda-unittests" --gtest_brief=1
echo "gpu_bundle: ok: $archive ($mib MiB); run scripts/gpu_device.sh 1 on the GPU machine"
