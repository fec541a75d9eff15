# -*- Python -*-
# lit configuration for mp's regression tests.

import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mp_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%mp_src_root", config.mp_src_root))
config.substitutions.append(("%mp_obj_root", config.mp_obj_root))

# Shared libraries mlir-runner loads for printing.
for lib in ["mlir_runner_utils", "mlir_c_runner_utils"]:
    path = os.path.join(config.mlir_runner_lib_dir, "lib" + lib + ".so")
    config.substitutions.append(("%" + lib, path))

# Every run compiles its step: no test reads or fills a user's compile
# cache (~/.cache/mp); test/mp-run/compile-cache.test turns it on in %t.
config.environment["MP_CACHE"] = "off"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.mp_tools_dir, config.llvm_tools_dir]
tools = [
    "mp-opt",
    "mp-run",
    "mp-compile",
    "mp-translate",
    "mp-capi-passes",
    "mlir-opt",
    "mlir-runner",
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# libMPPlugin.so, for upstream mlir-opt (test/Plugin).
config.substitutions.append(
    ("%mp_plugin", os.path.join(config.mp_obj_root, "lib", "libMPPlugin.so"))
)

# ptxas (CUDA toolkit) assembles PTX for the --mp-lower-gpu fatbin tests;
# MLIR finds it on PATH or in /usr/local/cuda/bin. No GPU is needed.
import shutil
import subprocess

ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))


# libdevice (math functions in kernels): --mp-lower-gpu looks in $CUDA_HOME,
# /usr/local/cuda and the toolkit of ptxas (a wrapper on PATH, such as
# /usr/local/bin/ptxas, is resolved), so the tests need no environment.
def has_libdevice(root):
    return os.path.exists(os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc"))


cuda_roots = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
cuda_roots += ["/usr/local/cuda", os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))]
if any(has_libdevice(r) for r in cuda_roots if r):
    config.available_features.add("libdevice")


# libmprt_cuda (runtime/cuda) runs --mp-lower-gpu output under mlir-runner.
# `cuda-device`: a CUDA driver and a device are usable, found by a probe in a
# child process (a broken driver cannot hang or crash lit; no driver at all
# is the normal case here). `cuda-pageable-memory`: the device reads plain
# host memory (HMM/ATS), which kernels of --mp-lower-gpu still need since
# their buffers are host malloc memory (docs/gpu.md, "Memory").
mprt_cuda = os.path.join(config.mp_obj_root, "lib", "libmprt_cuda.so")
if os.path.exists(mprt_cuda):
    config.available_features.add("mprt-cuda")
    config.substitutions.append(("%mprt_cuda", mprt_cuda))

# `mpi`: libmprt was built with MPICH and mpirun is on PATH, so
# data-parallel tests can start jobs (docs/distributed.md).
if getattr(config, "mp_has_mpi", False) and shutil.which("mpirun"):
    config.available_features.add("mpi")
    # `two-hosts`: the job can also run across two network namespaces
    # joined by a veth pair (test/mp-run/Inputs/two_hosts.sh), which needs
    # root; where it cannot, say why the two-host test is skipped.
    _two_hosts = subprocess.run(
        [os.path.join(config.test_source_root, "mp-run", "Inputs", "two_hosts.sh"),
         "--probe"], capture_output=True, text=True)
    if _two_hosts.returncode == 0:
        config.available_features.add("two-hosts")
    else:
        lit_config.note("test/mp-run/two-hosts.test is skipped: "
                        + (_two_hosts.stdout + _two_hosts.stderr).strip())

# The CUDA driver and cuBLASLt stand-ins (runtime/cuda/standin): with
# LD_LIBRARY_PATH=%cuda_standin, libmprt_cuda finds them instead of a
# driver. Tests set it per command, so the probe below still sees no GPU.
cuda_standin = os.path.join(config.mp_obj_root, "lib", "cuda-standin")
if os.path.exists(os.path.join(cuda_standin, "libcuda.so.1")):
    config.available_features.add("cuda-standin")
    config.substitutions.append(("%cuda_standin", cuda_standin))

_cuda_probe = r"""
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    sys.exit(0)
count, value = ctypes.c_int(0), ctypes.c_int(0)
if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
    sys.exit(0)
if count.value < 1:
    sys.exit(0)
print("cuda-device")
# CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88
if cuda.cuDeviceGetAttribute(ctypes.byref(value), 88, 0) == 0 and value.value:
    print("cuda-pageable-memory")
"""
try:
    import subprocess

    _probe = subprocess.run(
        [sys.executable, "-c", _cuda_probe],
        capture_output=True,
        text=True,
        timeout=60,
    )
    for _feature in _probe.stdout.split():
        if _feature in ("cuda-device", "cuda-pageable-memory"):
            config.available_features.add(_feature)
except (OSError, subprocess.SubprocessError):
    pass

# CPUs whose code generator may convert f32 to bf16 in hardware
# (--mp-lower-cpu native-bf16; AVX512-BF16's vcvtneps2bf16).
try:
    with open("/proc/cpuinfo") as _cpuinfo:
        if "avx512_bf16" in _cpuinfo.read().split():
            config.available_features.add("avx512bf16")
except OSError:
    pass
