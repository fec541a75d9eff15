"""mp's Python package: export PyTorch modules to MLIR for mp's pipelines
(traced at the ATen level: python/mp/aten.py).

    import mp
    text = mp.export(model, (x,))                       # @predict, mp.param arguments
    text = mp.export_training(model, x, num_classes=10) # + @loss for mp-run train
    mp.save_params(model, "params.npz")                 # values named as mp.param

Install: `pip install ./python` (or `pip install -e ./python` in a clone);
mp's tools and libmp_session.so are found in $MP_BUILD_DIR, else in the
clone's build/. See docs/python.md.
"""

__version__ = "0.1.0"  # as python/pyproject.toml (tests/test_package.py checks)

__all__ = [
    "ExportError", "Program", "export", "export_program", "export_training",
    "load_params", "param_arrays", "save_params",
]

try:
    from .aten import (ExportError, Program, export, export_program, export_training,
                       load_params, param_arrays, save_params)
except ModuleNotFoundError as error:
    # PyTorch is an optional dependency (`pip install "./python[torch]"`):
    # without it mp.runtime still trains and runs model files; the
    # exporter's names say what they need when they are used.
    if error.name != "torch":
        raise
    _torch_missing = error

    def __getattr__(name):
        if name in __all__:
            raise ImportError("mp.%s needs PyTorch (pip install torch, or the package's "
                              "[torch] extra)" % name) from _torch_missing
        raise AttributeError("module 'mp' has no attribute %r" % name)
