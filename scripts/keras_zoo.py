#!/usr/bin/env python3
"""Keras models from tf.keras.applications through tf2onnx into mp.

Run it with the TensorFlow virtual environment's python (scripts/tf_venv.sh
makes .venv-tensorflow from python/requirements-tensorflow.txt):

    .venv-tensorflow/bin/python scripts/keras_zoo.py                 # the default models
    .venv-tensorflow/bin/python scripts/keras_zoo.py --models MobileNetV2 --size 32
    .venv-tensorflow/bin/python scripts/keras_zoo.py --json out.json --steps 5

For each model:
1. build it with random weights (weights=None, a `--size`x`--size` RGB
   input, `--classes` classes, logits: classifier_activation=None), as
   Keras initialises it (BatchNormalization's statistics 0 and 1; see
   build_keras for --calibrate-bn); also run it in Keras under the
   float64, mixed_bfloat16 and mixed_float16 policies (TensorFlow's own
   errors, for scale), and fine-tune it in Keras (frozen BatchNormalization)
   as the reference trajectory;
2. export it with tf2onnx (tf2onnx.convert.from_function on the model's
   inference call, NHWC input `x` as Keras has it, a dynamic batch
   dimension, opset `--opset`, 17 by default: the newest that Debian's
   libonnx 1.12, which mp's importer uses, reads);
3. import it with `mp-translate --import-onnx --input-shape x=Bx..`
   (the exact refusal is reported when it fails);
4. predict with mp.runtime.InferSession in f32, bf16 and f16 (the
   session's mixed-precision pipeline) and compare with TensorFlow's
   logits: norm-wise relative error ||mp - tf|| / ||tf||;
5. fine-tune `--steps` SGD steps on one batch of random images and labels
   with mp.runtime.Session (the ONNX model's @predict and --mp-add-loss's
   softmax cross-entropy) in each of `--train-precisions`; the first loss is
   checked against TensorFlow's cross-entropy of its own logits, and the
   losses must be finite and go down.

Each model runs in its own process (a crash is reported as that model's
failure); the table is printed at the end and, with --json, written.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ["ResNet50", "MobileNetV2", "EfficientNetB0"]
# Models this script knows how to build (tf.keras.applications names).
KNOWN_MODELS = DEFAULT_MODELS + ["MobileNetV3Small", "DenseNet121", "ResNet50V2",
                                 "EfficientNetV2B0", "NASNetMobile", "Xception"]


def rel_err(got, want):
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise ValueError("shapes differ: mp %s, TensorFlow %s" % (got.shape, want.shape))
    if not np.all(np.isfinite(got)):
        return float("nan")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def keras_application(name, size, classes):
    """tf.keras.applications.NAME with random weights and logits."""
    import tensorflow as tf
    kwargs = dict(weights=None, input_shape=(size, size, 3), classes=classes,
                  classifier_activation=None)
    if name.startswith("MobileNetV3"):
        kwargs["include_preprocessing"] = True
    return getattr(tf.keras.applications, name)(**kwargs)


def build_keras(name, size, classes, seed, calibrate=False):
    """The Keras application `name` with random weights, and the scale of
    its input images. BatchNormalization keeps Keras' initial statistics
    (mean 0, variance 1) unless `calibrate`: then they are those of one
    batch of random images (momentum 0, one call in training mode). That
    makes a badly conditioned model: a deep random network maps different
    images to nearly the same features, and normalizing by their tiny
    spread amplifies it (TensorFlow's own f32 is then 1e-5 from its
    float64, its mixed_bfloat16 0.3 from its f32, and SGD diverges)."""
    import numpy as np
    import tensorflow as tf
    tf.keras.utils.set_random_seed(seed)
    model = keras_application(name, size, classes)
    rng = np.random.default_rng(seed)
    # Images as the applications take them: 0..255 (ResNet50 and
    # MobileNetV2 expect their own preprocessing outside the model; the
    # EfficientNets and MobileNetV3 rescale inside it).
    scale = 255.0 if name.startswith(("EfficientNet", "MobileNetV3")) else 1.0
    calib = (scale * rng.random((16, size, size, 3))).astype(np.float32)
    # Keras initialises biases and BatchNormalization's beta to zero, and
    # tf2onnx drops an Add of zeros: the model would lose its dense bias
    # (and the biases folded from batch norms), so they are perturbed.
    for v in model.trainable_variables:
        if v.name in ("bias", "beta"):
            v.assign(0.05 * rng.standard_normal(v.shape).astype(np.float32))
    if calibrate:
        bns = [l for l in model.layers if isinstance(l, tf.keras.layers.BatchNormalization)]
        for layer in bns:
            layer.momentum = 0.0
        model(calib, training=True)
        for layer in bns:
            layer.momentum = 0.99
    return model, scale


def under_policy(name, model, args, x, policy):
    """The same model's logits (float64) computed by Keras under a dtype
    policy: "float64" (the reference), "mixed_bfloat16" or "mixed_float16"
    (Keras' own mixed precision: products and activations in the low type,
    variables and BatchNormalization in float32)."""
    import numpy as np
    import tensorflow as tf
    tf.keras.mixed_precision.set_global_policy(policy)
    try:
        twin = keras_application(name, args.size, args.classes)
        twin.set_weights(model.get_weights())
        cast = np.float64 if policy == "float64" else np.float32
        return np.asarray(twin(x.astype(cast), training=False), dtype=np.float64)
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")


def tf_fine_tune(model, x, labels, args):
    """Keras' own fine-tuning as Keras' guide does it, BatchNormalization
    frozen (trainable=False: inference mode, gamma and beta fixed), SGD with
    momentum 0.9: the losses. tf2onnx folds a batch norm into the
    convolution before it (a bias more where the convolution had none) or
    writes it as Mul and Add, whose scale and shift are initializers: mp
    trains them all, so the trajectories agree only for the first step."""
    import tensorflow as tf
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            layer.trainable = False
    optimizer = tf.keras.optimizers.SGD(args.lr, momentum=0.9)
    losses = []
    for _ in range(args.steps):
        with tf.GradientTape() as tape:
            logits = model(x, training=False)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    return losses


def export_onnx(model, size, path, opset):
    """tf2onnx.convert.from_keras. (from_function on the model's call, and
    Keras 3's own model.export(format="onnx"), leave the unadapted
    Normalization layer of the EfficientNets as two extra graph inputs,
    its mean and variance, which are EagerTensors the function captures.)"""
    import tensorflow as tf
    import tf2onnx
    spec = (tf.TensorSpec((None, size, size, 3), tf.float32, name="x"),)
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=opset,
                                         output_path=path)
    return proto


def import_onnx(path, batch, size):
    """mp-translate --import-onnx: (ok, message)."""
    tool = os.path.join(os.environ.get("MP_BUILD_DIR", os.path.join(ROOT, "build")),
                        "bin", "mp-translate")
    proc = subprocess.run([tool, "--import-onnx", path, "--input-shape",
                           "x=%dx%dx%dx3" % (batch, size, size), "-o", os.devnull],
                          capture_output=True, text=True)
    if proc.returncode:
        lines = [l for l in proc.stderr.splitlines() if "error" in l] or proc.stderr.splitlines()
        return False, (lines[0] if lines else "exit %d" % proc.returncode).strip()
    return True, "ok"


def op_counts(proto):
    counts = {}
    for node in proto.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def cross_entropy(logits, labels):
    import numpy as np
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-(logp[np.arange(len(labels)), labels]).mean())


def export_stage(args, name, workdir):
    """TensorFlow's half: build, export, and save the batch and TensorFlow's
    logits (NAME.npz) beside NAME.onnx; returns the row so far."""
    import numpy as np
    row = {"model": name, "size": args.size, "batch": args.batch, "opset": args.opset}
    t = time.time()
    model, scale = build_keras(name, args.size, args.classes, args.seed, args.calibrate_bn)
    row["params"] = int(model.count_params())
    rng = np.random.default_rng(args.seed + 1)
    x = (scale * rng.random((args.batch, args.size, args.size, 3))).astype(np.float32)
    labels = rng.integers(0, args.classes, args.batch)
    want = model(x, training=False).numpy()
    path = os.path.join(workdir, name + ".onnx")
    proto = export_onnx(model, args.size, path, args.opset)
    row["ops"] = op_counts(proto)
    row["onnx_bytes"] = os.path.getsize(path)
    row["export_s"] = round(time.time() - t, 1)
    row["tf_loss"] = cross_entropy(want, labels)
    # TensorFlow against itself: its f32 and its mixed precision against
    # its float64 run of the same weights.
    exact = under_policy(name, model, args, x, "float64")
    row["tf_f32_vs_f64"] = rel_err(want, exact)
    for policy, key in (("mixed_bfloat16", "tf_bf16"), ("mixed_float16", "tf_f16")):
        row[key] = rel_err(under_policy(name, model, args, x, policy), want)
    row["tf_losses_f32"] = tf_fine_tune(model, x, labels, args)
    np.savez(os.path.join(workdir, name + ".npz"), x=x, labels=labels, want=want,
             exact=exact)
    return row


def mp_stage(args, name, workdir, row):
    """mp's half, in a process without TensorFlow: TensorFlow's
    libtensorflow_framework exports its own protobuf, which the importer's
    libprotobuf calls then resolve to (a crash in ParseFromArray) when
    libmp_session.so is loaded into a process that imported tensorflow."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from mp import runtime
    path = os.path.join(workdir, name + ".onnx")
    data = np.load(os.path.join(workdir, name + ".npz"))
    x, labels, want = data["x"].reshape(args.batch, -1), data["labels"], data["want"]
    exact = data["exact"]
    t = time.time()
    ok, message = import_onnx(path, args.batch, args.size)
    row["import"] = message
    row["import_s"] = round(time.time() - t, 1)
    if not ok:
        return row
    cache = False if args.no_cache else None
    onehot = np.eye(args.classes, dtype=np.float32)[labels]
    for precision in args.train_precisions:
        t = time.time()
        session = runtime.Session(path, batch_size=args.batch, loss="cross-entropy",
                                  lr=args.lr, momentum=0.9, precision=precision,
                                  cache=cache)
        row["compile_train_%s_s" % precision] = round(time.time() - t, 1)
        if precision == args.train_precisions[0]:
            for infer_precision in ("f32", "bf16", "f16"):
                t = time.time()
                infer = runtime.InferSession(path, session, precision=infer_precision,
                                             cache=cache)
                got = infer.predict(x)
                row["err_" + infer_precision] = rel_err(got, want)
                if infer_precision == "f32":
                    row["err_f32_vs_f64"] = rel_err(got, exact)
                row["infer_%s_s" % infer_precision] = round(time.time() - t, 1)
                infer.close()
        losses = []
        t = time.time()
        for _ in range(args.steps):
            losses.append(session.train_step(x, onehot)[0])
        row["train_%s_s" % precision] = round(time.time() - t, 1)
        row["losses_" + precision] = losses
        session.close()
    return row


def run_stage(args, stage, name, workdir):
    """Runs one stage of one model in this process; prints its row."""
    row = json.loads(args.row) if args.row else {"model": name}
    try:
        if stage == "export":
            row = export_stage(args, name, workdir)
        else:
            row = mp_stage(args, name, workdir, row)
    except Exception as error:  # reported in the table, not a traceback
        import traceback
        traceback.print_exc()
        text = str(error).strip()
        row["error"] = "%s: %s" % (type(error).__name__, text.splitlines()[-1] if text else "")
    print("ROW " + json.dumps(row), flush=True)


def run_model(args, argv, name, workdir):
    """Both stages of one model, each in its own process."""
    row = {"model": name}
    for stage in ("export", "mp"):
        cmd = [sys.executable, os.path.abspath(__file__), "--stage", stage, "--one", name,
               "--workdir", workdir, "--row", json.dumps(row)] + _without_models(argv)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        found = [l[4:] for l in proc.stdout.splitlines() if l.startswith("ROW ")]
        if found:
            row = json.loads(found[-1])
        else:
            tail = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
            row["error"] = "%s stage crashed (exit %d): %s" % (stage, proc.returncode, tail)
        if "error" in row:
            sys.stderr.write(proc.stderr[-4000:])
            break
        if row.get("import", "ok") != "ok":
            break
    return row


def small_keras_model(size=16, classes=10, seed=0):
    """A few-kilobyte Keras model with the layers the applications use:
    a strided 'same' convolution, BatchNormalization, ReLU6, a depthwise
    convolution, swish, a squeeze-and-excitation gate, a residual add,
    zero padding and max pooling, global average pooling, dropout and a
    dense head (logits)."""
    import tensorflow as tf
    L = tf.keras.layers
    tf.keras.utils.set_random_seed(seed)
    x = inputs = tf.keras.Input((size, size, 3))
    x = L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(x)
    x = L.ReLU(6.0)(L.BatchNormalization()(x))
    y = L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    y = L.Activation("swish")(L.BatchNormalization()(y))
    gate = L.GlobalAveragePooling2D(keepdims=True)(y)
    gate = L.Conv2D(8, 1, activation="sigmoid")(L.Conv2D(4, 1, activation="relu")(gate))
    y = L.BatchNormalization()(L.Conv2D(8, 1, use_bias=False)(L.Multiply()([y, gate])))
    x = L.Add()([x, y])
    x = L.MaxPooling2D(3, strides=2)(L.ZeroPadding2D(((0, 1), (0, 1)))(x))
    x = L.Dropout(0.2)(L.GlobalAveragePooling2D()(x))
    return tf.keras.Model(inputs, L.Dense(classes)(x))


def write_fixture(folder, size=16, batch=4, opset=17, seed=0):
    """keras_small.onnx (tf2onnx, dynamic batch), keras_small_x.npy (a batch
    of NHWC images) and keras_small_logits.npy (TensorFlow's logits)."""
    import numpy as np
    import tensorflow as tf
    model = small_keras_model(size, seed=seed)
    rng = np.random.default_rng(seed)
    for v in model.trainable_variables:  # as build_keras: no bias of zeros
        if v.name in ("bias", "beta"):
            v.assign(0.05 * rng.standard_normal(v.shape).astype(np.float32))
    calib = rng.standard_normal((16, size, size, 3)).astype(np.float32)
    bns = [l for l in model.layers if isinstance(l, tf.keras.layers.BatchNormalization)]
    for layer in bns:
        layer.momentum = 0.0
    model(calib, training=True)
    x = rng.standard_normal((batch, size, size, 3)).astype(np.float32)
    os.makedirs(folder, exist_ok=True)
    proto = export_onnx(model, size, os.path.join(folder, "keras_small.onnx"), opset)
    np.save(os.path.join(folder, "keras_small_x.npy"), x)
    np.save(os.path.join(folder, "keras_small_logits.npy"),
            model(x, training=False).numpy())
    print("wrote %s: %s" % (folder, op_counts(proto)))


def check(row, args):
    """The failures of one row, as text (empty: it passes). f32 passes
    within --f32-tol of TensorFlow, or where mp is at least as close to
    TensorFlow's float64 run as TensorFlow's f32 is; bf16/f16 within
    --low-tol, or within twice the error of Keras' own mixed precision."""
    if row.get("import") != "ok":
        return ["import: %s" % row.get("import", row.get("error", "not run"))]
    if "error" in row:
        return [row["error"]]
    problems = []
    err, own = row.get("err_f32", float("nan")), row.get("tf_f32_vs_f64", 0.0)
    if not (err <= args.f32_tol or row.get("err_f32_vs_f64", float("nan")) <= own):
        problems.append("f32 error %.2e > %.0e" % (err, args.f32_tol))
    for precision in ("bf16", "f16"):
        err = row.get("err_" + precision, float("nan"))
        limit = max(args.low_tol, 2 * row.get("tf_" + precision, 0.0))
        if not err <= limit:
            problems.append("%s error %.2e > %.1e" % (precision, err, limit))
    for precision in args.train_precisions:
        losses = row.get("losses_" + precision, [])
        finite = all(l == l and abs(l) != float("inf") for l in losses)
        if not losses or not finite or not losses[-1] < losses[0]:
            problems.append("%s losses %s: not finite and decreasing" % (precision, losses))
    first = row.get("losses_f32", [None])[0]
    if first is not None and abs(first - row["tf_loss"]) > 1e-4 * abs(row["tf_loss"]):
        problems.append("first f32 loss %.6g != TensorFlow's %.6g" % (first, row["tf_loss"]))
    return problems


def table(rows, args):
    def fmt(v):
        return "-" if v is None else ("%.1e" % v if isinstance(v, float) else str(v))

    def pair(row, mine, theirs):
        return "%s (%s)" % (fmt(row.get(mine)), fmt(row.get(theirs)))

    def losses(l):
        return "-" if not l else "%.3f -> %.3f" % (l[0], l[-1])

    head = ["model", "params", "import", "f32 vs TF", "f32 vs f64 (TF's)",
            "bf16 vs TF (Keras mixed_bfloat16)", "f16 vs TF (Keras mixed_float16)"]
    head += ["%s fine-tune, %d steps%s" % (p, args.steps, " (Keras)" if p == "f32" else "")
             for p in args.train_precisions]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["model"], "%.1fM" % (row["params"] / 1e6) if "params" in row else "-",
                 row.get("import", row.get("error", "-")), fmt(row.get("err_f32")),
                 pair(row, "err_f32_vs_f64", "tf_f32_vs_f64"),
                 pair(row, "err_bf16", "tf_bf16"), pair(row, "err_f16", "tf_f16")]
        for p in args.train_precisions:
            cell = losses(row.get("losses_" + p))
            if p == "f32":
                cell += " (%s)" % losses(row.get("tf_losses_f32"))
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS),
                   help="comma-separated tf.keras.applications names (known: %s)"
                   % ", ".join(KNOWN_MODELS))
    p.add_argument("--size", type=int, default=64, help="input height and width (>= 32)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--steps", type=int, default=5, help="fine-tuning steps")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--train-precisions", default="f32,bf16",
                   help="comma-separated precisions to fine-tune in (f32 first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calibrate-bn", action="store_true",
                   help="BatchNormalization statistics from a batch of random images "
                   "(badly conditioned: see build_keras)")
    p.add_argument("--f32-tol", type=float, default=1e-5)
    p.add_argument("--low-tol", type=float, default=5e-2,
                   help="bf16/f16 error tolerance in the pass/fail column")
    p.add_argument("--no-cache", action="store_true", help="compile cache off")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--workdir", help="keep the .onnx files here (default: a temporary folder)")
    p.add_argument("--fixture", metavar="DIR",
                   help="write the small Keras model of python/tests/test_keras_onnx.py "
                   "(keras_small.onnx, its input and TensorFlow's logits as .npy) to DIR")
    # Internal: one stage of one model in this process (prints its row).
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--stage", choices=["export", "mp"], help=argparse.SUPPRESS)
    p.add_argument("--row", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.train_precisions = [q for q in args.train_precisions.split(",") if q]
    return args


def _without_models(argv):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--models":
            skip = True
        elif not a.startswith("--models="):
            out.append(a)
    return out


def main(argv):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.one:
        run_stage(args, args.stage, args.one, args.workdir)
        return 0
    if args.fixture:
        write_fixture(args.fixture)
        return 0
    workdir = args.workdir or tempfile.mkdtemp(prefix="keras_zoo.")
    os.makedirs(workdir, exist_ok=True)
    rows = []
    for name in args.models:
        t = time.time()
        row = run_model(args, argv, name, workdir)
        row["seconds"] = round(time.time() - t, 1)
        row["problems"] = check(row, args)
        rows.append(row)
        print("%s: %s (%.0f s)" % (name, "; ".join(row["problems"]) or "ok", row["seconds"]),
              flush=True)
    versions = {}
    try:
        import numpy
        import onnx
        import tensorflow as tf
        import tf2onnx
        versions = {"tensorflow": tf.__version__, "keras": tf.keras.__version__,
                    "tf2onnx": tf2onnx.__version__, "onnx": onnx.__version__,
                    "numpy": numpy.__version__}
    except Exception:
        pass
    print("\n" + table(rows, args))
    print("\n%s; input %dx%dx3, batch %d, %d classes, opset %d" % (
        ", ".join("%s %s" % kv for kv in versions.items()), args.size, args.size,
        args.batch, args.classes, args.opset))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": versions, "rows": rows}, f, indent=1)
    return 1 if any(row["problems"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
