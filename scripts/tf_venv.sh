#!/usr/bin/env bash
# Makes .venv-tensorflow (git-ignored) with TensorFlow (CPU wheel), tf2onnx,
# onnx and numpy from PyPI, pinned by python/requirements-tensorflow.txt, for
# scripts/keras_zoo.py and python/tests/test_keras_onnx.py. mp's build and CI
# do not need it. Uses the first python3 on PATH (3.10-3.12 for these
# wheels); VENV=DIR puts it elsewhere. Prints how long the install took.
#
#   scripts/tf_venv.sh && .venv-tensorflow/bin/python scripts/keras_zoo.py
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="${VENV:-$root/.venv-tensorflow}"
requirements="$root/python/requirements-tensorflow.txt"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 12)))'; then
  echo "tf_venv: $($python --version 2>&1) at $(command -v "$python"): TensorFlow 2.21's" \
       "wheels need Python 3.10 to 3.12 (set PYTHON=...)" >&2
  exit 1
fi
start=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
  echo "== tf_venv: creating $venv with $($python --version 2>&1)"
  "$python" -m venv "$venv"
fi
echo "== tf_venv: pip install -r ${requirements#$root/}"
if ! "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"; then
  echo "tf_venv: pip could not install python/requirements-tensorflow.txt (see pip's" \
       "error above: a version missing on the index, or no wheel for this Python)" >&2
  exit 1
fi
"$venv/bin/python" - <<'PY'
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy, onnx, tensorflow as tf, tf2onnx
print("== tf_venv: tensorflow %s (keras %s), tf2onnx %s, onnx %s, numpy %s" % (
    tf.__version__, tf.keras.__version__, tf2onnx.__version__, onnx.__version__,
    numpy.__version__))
PY
echo "== tf_venv: ready in $(( $(date +%s) - start )) s: $venv"
