"""The package as pip installs it: its metadata (python/pyproject.toml) and
how it finds mp's build (MP_BUILD_DIR, the clone's build/, or a clear
error). None of these needs mp's tools: the build directories are made up."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import mp
from mp import run_mlir, runtime

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYPROJECT = os.path.join(PYTHON_DIR, "pyproject.toml")


def _pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        pytest.skip("tomllib needs Python 3.11")
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)


def test_pyproject_declares_the_package():
    project = _pyproject()
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    assert project["project"]["version"] == mp.__version__
    assert project["tool"]["setuptools"]["packages"] == ["mp"]
    # numpy is the one dependency; PyTorch (the exporter) is an extra.
    assert project["project"]["dependencies"] == ["numpy"]
    assert "torch" in project["project"]["optional-dependencies"]["torch"]


def test_every_module_of_the_package_is_shipped():
    # packages = ["mp"] ships mp/*.py; a subpackage would need listing.
    package = os.path.join(PYTHON_DIR, "mp")
    assert not [d for d in os.listdir(package)
                if os.path.isfile(os.path.join(package, d, "__init__.py"))]


def test_build_dir_defaults_to_the_clones_build(monkeypatch):
    monkeypatch.delenv("MP_BUILD_DIR", raising=False)
    root = os.path.dirname(PYTHON_DIR)
    assert run_mlir.source_tree() == root
    assert run_mlir.build_dir() == os.path.join(root, "build")
    assert run_mlir.tool("mp-opt") == os.path.join(root, "build", "bin", "mp-opt")


def test_library_path_honours_mp_build_dir(monkeypatch, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libmp_session.so").write_bytes(b"")
    monkeypatch.delenv("MP_SESSION_LIB", raising=False)
    monkeypatch.setenv("MP_BUILD_DIR", str(tmp_path))
    assert runtime.library_path() == str(lib / "libmp_session.so")
    assert run_mlir.tool("mp-run") == str(tmp_path / "bin" / "mp-run")


def test_library_path_names_mp_build_dir_when_the_library_is_missing(monkeypatch, tmp_path):
    monkeypatch.delenv("MP_SESSION_LIB", raising=False)
    monkeypatch.setenv("MP_BUILD_DIR", str(tmp_path))
    with pytest.raises(runtime.MPError, match="MP_BUILD_DIR") as error:
        runtime.library_path()
    assert str(tmp_path / "lib" / "libmp_session.so") in str(error.value)


def test_mp_session_lib_wins_and_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("MP_BUILD_DIR", str(tmp_path))
    monkeypatch.setenv("MP_SESSION_LIB", str(tmp_path / "other.so"))
    with pytest.raises(runtime.MPError, match="MP_SESSION_LIB"):
        runtime.library_path()
    (tmp_path / "other.so").write_bytes(b"")
    assert runtime.library_path() == str(tmp_path / "other.so")


CHILD = r"""
import os, sys
sys.modules["torch"] = None        # as if PyTorch were not installed
import mp, mp.runtime
assert os.path.dirname(mp.__file__) == sys.argv[1], mp.__file__
try:
    mp.export
except ImportError as error:
    print("export:", error)
try:
    print("library:", mp.runtime.library_path())
except mp.runtime.MPError as error:
    print("error:", error)
"""


def _installed_copy(tmp_path):
    """The package copied out of the clone, as `pip install ./python`
    puts it into site-packages."""
    site = tmp_path / "site-packages"
    shutil.copytree(os.path.join(PYTHON_DIR, "mp"), site / "mp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _run_installed(site, env_build_dir):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MP_BUILD_DIR", "MP_SESSION_LIB", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    if env_build_dir is not None:
        env["MP_BUILD_DIR"] = str(env_build_dir)
    out = subprocess.run([sys.executable, "-c", CHILD, str(site / "mp")], env=env,
                         cwd=str(site.parent), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_an_installed_copy_without_mp_build_dir_says_to_set_it(tmp_path):
    stdout = _run_installed(_installed_copy(tmp_path), None)
    assert re.search(r"^error: mp's build directory is unknown: set MP_BUILD_DIR", stdout,
                     re.M), stdout
    # Without PyTorch the package imports; the exporter says what it needs.
    assert re.search(r"^export: mp.export needs PyTorch", stdout, re.M), stdout


def test_an_installed_copy_finds_the_library_through_mp_build_dir(tmp_path):
    build = tmp_path / "build"
    (build / "lib").mkdir(parents=True)
    (build / "lib" / "libmp_session.so").write_bytes(b"")
    stdout = _run_installed(_installed_copy(tmp_path), build)
    assert "library: %s\n" % (build / "lib" / "libmp_session.so") in stdout, stdout
