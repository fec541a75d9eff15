"""Trains a small MLP on mp-run's digits split with PyTorch, exports it
with torch.onnx.export (dynamic batch) and prints PyTorch's held-out
accuracy on the test split, as mp-run measures it.

usage: digits_onnx.py DIGITS.npz OUT.onnx BATCH
"""

import sys

import numpy as np
import torch
import torch.nn as nn


def main():
    data = np.load(sys.argv[1])
    out, batch = sys.argv[2], int(sys.argv[3])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    x = torch.from_numpy(data["x_train"])
    y = torch.from_numpy(data["labels_train"]).long()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(20):
        for i in range(0, len(x) - batch + 1, batch):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[i:i + batch]), y[i:i + batch]).backward()
            opt.step()
    model.eval()
    torch.onnx.export(model, x[:batch], out, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}}, opset_version=13)
    xt = data["x_test"]
    rows = len(xt)
    with torch.no_grad():
        pred = model(torch.from_numpy(xt[:rows])).argmax(1).numpy()
    acc = 100.0 * (pred == data["labels_test"][:rows]).mean()
    print("pytorch held-out accuracy %.2f%% over %d rows" % (acc, rows))


if __name__ == "__main__":
    main()
