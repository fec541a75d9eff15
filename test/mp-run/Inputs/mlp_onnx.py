"""Exports an untrained digits MLP (64-128-10, PyTorch's seeded default
initialisation) with a dynamic batch: a model whose starting weights travel
with it, so that runs of it with different batch layouts start equal.

usage: mlp_onnx.py OUT.onnx
"""

import sys

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    torch.onnx.export(model, torch.zeros(4, 64), sys.argv[1], input_names=["x"],
                      output_names=["logits"], opset_version=14,
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})


if __name__ == "__main__":
    main()
