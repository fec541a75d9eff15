#!/usr/bin/env python3
"""One step's gradients of a Keras application in mp against TensorFlow's.

Needs the .onnx and .npz that scripts/keras_zoo.py left in --workdir (same
--size 64, batch 8). Two processes, as keras_zoo.py (TensorFlow and
libmp_session.so cannot share one):

    .venv-tensorflow/bin/python scripts/keras_gradients.py tf EfficientNetB0 WORKDIR
    .venv-tensorflow/bin/python scripts/keras_gradients.py mp EfficientNetB0 WORKDIR

`tf` writes NAME_tfgrad.npz (every trainable variable and its gradient of
the mean cross-entropy in float64 and in f32, BatchNormalization in
inference mode); `mp` takes
one SGD step with lr 2^20 and no momentum through mp.runtime.Session, so each
parameter moves by minus its gradient, matches parameters to Keras variables
by value (kernels HWIO -> OIHW) and prints the worst relative errors.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tf_side(name, workdir):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import numpy as np
    import tensorflow as tf
    import keras_zoo
    model, _ = keras_zoo.build_keras(name, 64, 10, 0)
    data = np.load(os.path.join(workdir, name + ".npz"))

    def gradients(m, x):
        with tf.GradientTape() as tape:
            logits = m(x, training=False)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=data["labels"], logits=logits))
        return loss, tape.gradient(loss, m.trainable_variables)

    loss, grads = gradients(model, data["x"])
    # The same weights in float64: the reference both f32 gradients meet.
    tf.keras.mixed_precision.set_global_policy("float64")
    twin = keras_zoo.keras_application(name, 64, 10)
    tf.keras.mixed_precision.set_global_policy("float32")
    twin.set_weights(model.get_weights())
    _, exact = gradients(twin, data["x"].astype(np.float64))
    out = {}
    for v, g, e in zip(model.trainable_variables, grads, exact):
        out[v.path] = v.numpy()
        out[v.path + "@grad"] = np.asarray(e)
        out[v.path + "@tf32"] = np.asarray(g)
    np.savez(os.path.join(workdir, name + "_tfgrad.npz"), **out)
    print("loss %.6f, %d variables" % (float(loss), len(grads)))


def mp_side(name, workdir):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from mp import runtime
    data = np.load(os.path.join(workdir, name + ".npz"))
    x, labels = data["x"].reshape(len(data["x"]), -1), data["labels"]
    # One SGD step moves each parameter by lr * gradient. With lr 1 the
    # gradient read back as before - after carries the rounding of the
    # weights (ulp(|w|) / |g|: 1e-4 to 1 relative for the small gradients of
    # squeeze-and-excitation kernels). A power-of-two lr large enough that
    # lr * |g| dominates |w| reads it back to f32 accuracy.
    lr = 2.0 ** 20
    session = runtime.Session(os.path.join(workdir, name + ".onnx"), batch_size=len(x),
                              loss="cross-entropy", lr=lr, momentum=0.0, cache=False)
    before = session.parameters()
    loss, _ = session.train_step(x, np.eye(10, dtype=np.float32)[labels])
    after = session.parameters()
    ref = np.load(os.path.join(workdir, name + "_tfgrad.npz"))
    names = [k for k in ref.files if "@" not in k]
    errors = []
    for param, w in before.items():
        grad = (w.astype(np.float64) - after[param]) / lr
        for k in names:
            v, g, t = ref[k], ref[k + "@grad"], ref[k + "@tf32"]
            forms = [(v, g, t)]
            if v.ndim == 4:
                forms += [tuple(a.transpose(3, 2, 0, 1) for a in (v, g, t)),
                          tuple(a.transpose(2, 3, 0, 1) for a in (v, g, t))]
            match = [(gg, tt) for vv, gg, tt in forms
                     if vv.shape == w.shape and np.array_equal(vv, w)]
            if match:
                gg, tt = match[0]
                norm = max(np.linalg.norm(gg), 1e-30)
                errors.append((np.linalg.norm(grad - gg) / norm, param, k,
                               np.linalg.norm(tt - gg) / norm))
                break
    errors.sort(reverse=True)
    print("loss %.6f; %d parameters, %d matched to Keras variables" % (
        loss, len(before), len(errors)))
    print("relative error against TensorFlow's float64 gradient: mp (TensorFlow f32)")
    for err, param, k, own in errors[:10]:
        print("  %.2e (%.2e)  %s  <-  %s" % (err, own, param, k))
    print("median %.2e (%.2e)" % (np.median([e[0] for e in errors]),
                                  np.median([e[3] for e in errors])))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("tf", "mp"):
        sys.exit("usage: keras_gradients.py tf|mp NAME WORKDIR")
    (tf_side if sys.argv[1] == "tf" else mp_side)(sys.argv[2], sys.argv[3])
