#!/usr/bin/env python3
"""The model zoo through mp's ATen-level PyTorch frontend (issue #50, part 1).

For each model: export (`mp.aten.export_program`: ok, or the exact
ExportError), the f32 forward through mp's CPU pipeline against PyTorch,
and the forward after `--mp-auto-mixed-precision=dtype=bf16`, norm-wise
relative errors ||mp - torch||_2 / ||torch||_2. Random initialisation (no
downloads); parameters PyTorch initialises to zero (ViT's head, some
biases) get small random values so that the logits are not all zero.

    /usr/bin/python3 scripts/model_zoo.py                  # the zoo
    /usr/bin/python3 scripts/model_zoo.py resnet18 gpt     # some of it
    /usr/bin/python3 scripts/model_zoo.py --size 32 --no-bf16

Needs torchvision (Debian's python3-torchvision 0.14; scripts/setup.sh
installs it) and mp's build (MP_BUILD_DIR or the clone's build/).
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python", "tests"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from mp import aten, run_mlir  # noqa: E402
from models import GPT  # noqa: E402

TORCHVISION = ["resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "vit_b_16",
               "convnext_tiny", "swin_t", "regnet_y_400mf", "shufflenet_v2_x1_0", "densenet121"]


def _nonzero_parameters(model):
    with torch.no_grad():
        for p in model.parameters():
            if not torch.any(p != 0):
                p.normal_(0.0, 0.02)
    return model


def build(name, size):
    """(model in eval mode, example input) for a zoo name."""
    torch.manual_seed(0)
    if name == "gpt":
        return GPT().eval(), torch.randint(0, 64, (2, 12))
    import torchvision
    kwargs = {"num_classes": 10}
    side = size
    if name == "vit_b_16":
        kwargs["image_size"] = side = 32 if size < 32 else (size // 16) * 16
    model = getattr(torchvision.models, name)(**kwargs)
    return _nonzero_parameters(model).eval(), torch.randn(2, 3, side, side)


def rel_err(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def measure(name, size, bf16=True):
    model, x = build(name, size)
    row = {"model": name, "input": "x".join(map(str, x.shape))}
    t0 = time.time()
    try:
        program = aten.export_program(model, (x,))
    except aten.ExportError as e:
        row["import"] = "refused: %s" % e
        return row
    row["import"] = "ok"
    row["export_s"] = time.time() - t0
    with torch.no_grad():
        want = model(x).numpy()
    t0 = time.time()
    got = run_mlir.run_program(program, [x.numpy()], model)[0]
    row["f32"] = rel_err(got, want)
    row["f32_s"] = time.time() - t0
    if bf16:
        t0 = time.time()
        got = run_mlir.run_program(program, [x.numpy()], model, precision="bf16")[0]
        row["bf16"] = rel_err(got, want)
        row["bf16_s"] = time.time() - t0
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=TORCHVISION + ["gpt"])
    parser.add_argument("--size", type=int, default=64, help="image side (default 64)")
    parser.add_argument("--no-bf16", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("torch %s; images %dx%d (vit_b_16: image_size a multiple of 16)" % (
        torch.__version__, args.size, args.size))
    print("| model | input | import | f32 error | bf16 error (AMP) | export s | f32 run s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name in args.models:
        try:
            r = measure(name, args.size, not args.no_bf16)
        except Exception as e:  # a crash is a finding too: print it in the table
            r = {"model": name, "input": "", "import": "CRASH %s: %s" % (
                type(e).__name__, str(e).splitlines()[0][:300])}
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r.get("input", ""), r["import"],
            "%.1e" % r["f32"] if "f32" in r else "",
            "%.1e" % r["bf16"] if "bf16" in r else "",
            "%.1f" % r["export_s"] if "export_s" in r else "",
            "%.1f" % r["f32_s"] if "f32_s" in r else ""), flush=True)


if __name__ == "__main__":
    main()
