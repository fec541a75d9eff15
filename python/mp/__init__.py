"""mp's Python package: export PyTorch modules to MLIR for mp's pipelines.

    import mp
    text = mp.export(model, (x,))                       # @predict, mp.param arguments
    text = mp.export_training(model, x, num_classes=10) # + @loss for mp-run train
    mp.save_params(model, "params.npz")                 # values named as mp.param

See docs/python.md.
"""

from .export import (ExportError, Program, export, export_program, export_training,
                     load_params, param_arrays, save_params)

__all__ = [
    "ExportError", "Program", "export", "export_program", "export_training",
    "load_params", "param_arrays", "save_params",
]
