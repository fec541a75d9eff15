"""Gradient accumulation (`accumulate=N`, #20 §5): N micro-batches of B
rows train as one batch of N*B rows (a loss that averages over its batch),
one update per window; a window with an overflow is skipped as a whole;
a checkpoint taken inside a window continues it.
"""

import numpy as np
import pytest

from mp import runtime

FEATURES, HIDDEN, CLASSES = 12, 24, 5

# A two-layer MLP with a mean cross entropy over a batch of {B} rows.
MODEL = """
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
#row = affine_map<(i, j) -> (i)>
#all = affine_map<(i, j) -> ()>
func.func @loss(%x: tensor<{B}x{F}xf32>, %labels: tensor<{B}x{C}xf32>,
    %w1: tensor<{F}x{H}xf32> {{mp.param = "w1"}}, %b1: tensor<{H}xf32> {{mp.param = "b1"}},
    %w2: tensor<{H}x{C}xf32> {{mp.param = "w2"}}, %b2: tensor<{C}xf32> {{mp.param = "b2"}}) -> f32 attributes {{mp.loss}} {{
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant {INV} : f32
  %h_e = tensor.empty() : tensor<{B}x{H}xf32>
  %h_z = linalg.fill ins(%zero : f32) outs(%h_e : tensor<{B}x{H}xf32>) -> tensor<{B}x{H}xf32>
  %h_mm = linalg.matmul ins(%x, %w1 : tensor<{B}x{F}xf32>, tensor<{F}x{H}xf32>) outs(%h_z : tensor<{B}x{H}xf32>) -> tensor<{B}x{H}xf32>
  %h = linalg.generic {{indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%h_mm, %b1 : tensor<{B}x{H}xf32>, tensor<{H}xf32>) outs(%h_e : tensor<{B}x{H}xf32>) {{
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }} -> tensor<{B}x{H}xf32>
  %l_e = tensor.empty() : tensor<{B}x{C}xf32>
  %l_z = linalg.fill ins(%zero : f32) outs(%l_e : tensor<{B}x{C}xf32>) -> tensor<{B}x{C}xf32>
  %l_mm = linalg.matmul ins(%h, %w2 : tensor<{B}x{H}xf32>, tensor<{H}x{C}xf32>) outs(%l_z : tensor<{B}x{C}xf32>) -> tensor<{B}x{C}xf32>
  %logits = linalg.generic {{indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%l_mm, %b2 : tensor<{B}x{C}xf32>, tensor<{C}xf32>) outs(%l_e : tensor<{B}x{C}xf32>) {{
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }} -> tensor<{B}x{C}xf32>
  %er = tensor.empty() : tensor<{B}xf32>
  %maxinit = linalg.fill ins(%ninf : f32) outs(%er : tensor<{B}xf32>) -> tensor<{B}xf32>
  %rowmax = linalg.generic {{indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%logits : tensor<{B}x{C}xf32>) outs(%maxinit : tensor<{B}xf32>) {{
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }} -> tensor<{B}xf32>
  %suminit = linalg.fill ins(%zero : f32) outs(%er : tensor<{B}xf32>) -> tensor<{B}xf32>
  %rowsum = linalg.generic {{indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%logits, %rowmax : tensor<{B}x{C}xf32>, tensor<{B}xf32>) outs(%suminit : tensor<{B}xf32>) {{
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %s : f32
    linalg.yield %r : f32
  }} -> tensor<{B}xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nll = linalg.generic {{indexing_maps = [#id, #row, #row, #id, #all], iterator_types = ["reduction", "reduction"]}}
      ins(%logits, %rowmax, %rowsum, %labels : tensor<{B}x{C}xf32>, tensor<{B}xf32>, tensor<{B}xf32>, tensor<{B}x{C}xf32>) outs(%init0 : tensor<f32>) {{
  ^bb0(%a: f32, %m: f32, %s: f32, %t: f32, %acc: f32):
    %l = math.log %s : f32
    %d = arith.subf %a, %m : f32
    %lp = arith.subf %d, %l : f32
    %p = arith.mulf %lp, %t : f32
    %r = arith.subf %acc, %p : f32
    linalg.yield %r : f32
  }} -> tensor<f32>
  %total = tensor.extract %nll[] : tensor<f32>
  %mean = arith.mulf %total, %inv_batch : f32
  return %mean : f32
}}
"""


def _model(tmp_path, batch):
    path = tmp_path / ("mlp_b%d.mlir" % batch)
    path.write_text(MODEL.format(B=batch, F=FEATURES, H=HIDDEN, C=CLASSES,
                                 INV=repr(1.0 / batch)))
    return path


def _data(rows, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, FEATURES)) * scale).astype(np.float32)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, rows)]
    return x, labels


def _relative(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def _train(session, x, labels, batch):
    losses = []
    for start in range(0, len(x), batch):
        losses.append(session.train_step(x[start:start + batch],
                                         labels[start:start + batch]))
    return losses


@pytest.mark.parametrize("precision,optimizer,tolerance", [
    # Measured: 1.3e-7 (SGD) and 2.8e-7 (Adam) in f32, 1.0e-7 in f16 (the
    # products accumulate in f32 and the gradients leave them in f32).
    ("f32", "sgd", 1e-6), ("f32", "adam", 1e-6), ("f16", "sgd", 1e-6)])
def test_four_micro_batches_of_16_train_as_one_batch_of_64(
        tmp_path, precision, optimizer, tolerance):
    x, labels = _data(64 * 5)
    options = dict(precision=precision, optimizer=optimizer, lr=0.05, seed=3)
    whole = runtime.Session(_model(tmp_path, 64), **options)
    micro = runtime.Session(_model(tmp_path, 16), accumulate=4, **options)
    assert micro.accumulation == 4 and whole.accumulation == 1
    _train(whole, x, labels, 64)
    steps = _train(micro, x, labels, 16)
    # Only every fourth call updates; the others report no step.
    assert [stepped for _, stepped in steps] == [False, False, False, True] * 5
    assert micro.step == whole.step == 5
    assert micro.window_position == 0
    for name in whole.names():
        error = _relative(micro.get(name), whole.get(name))
        assert error <= tolerance, (name, error)
    assert abs(micro.grad_norm - whole.grad_norm) <= 10 * tolerance * whole.grad_norm
    if precision == "f16":
        assert micro.loss_scale == whole.loss_scale
        assert micro.skipped_steps == whole.skipped_steps == 0


def test_a_window_with_an_overflow_is_skipped_as_a_whole(tmp_path):
    x, labels = _data(64 * 2)
    x[20, 3] = np.inf  # in the second micro-batch of the first window
    session = runtime.Session(_model(tmp_path, 16), precision="f16",
                              accumulate=4, seed=1)
    before = session.parameters()
    scale = session.loss_scale
    steps = _train(session, x[:64], labels[:64], 16)
    assert [stepped for _, stepped in steps] == [False] * 4
    assert session.skipped_steps == 1 and session.step == 0
    assert session.loss_scale == scale / 2
    for name, values in session.parameters().items():
        np.testing.assert_array_equal(values, before[name])
    # The next window starts clean and updates.
    steps = _train(session, x[64:], labels[64:], 16)
    assert steps[-1][1] and session.step == 1 and session.skipped_steps == 1


def test_a_checkpoint_inside_a_window_continues_it(tmp_path):
    x, labels = _data(16 * 8, seed=5)
    options = dict(precision="f32", optimizer="adam", seed=2, accumulate=4)
    model = _model(tmp_path, 16)
    straight = runtime.Session(model, **options)
    _train(straight, x, labels, 16)

    first = runtime.Session(model, **options)
    _train(first, x[:16 * 6], labels[:16 * 6], 16)  # one window and two more
    assert first.window_position == 2
    checkpoint = tmp_path / "window.npz"
    first.save(checkpoint)
    resumed = runtime.Session(model, **options)
    resumed.load(checkpoint)
    assert resumed.window_position == 2
    _train(resumed, x[16 * 6:], labels[16 * 6:], 16)
    assert resumed.step == straight.step == 2
    for name in straight.names():
        np.testing.assert_array_equal(resumed.get(name), straight.get(name))

    # A session that accumulates fewer micro-batches cannot continue it.
    other = runtime.Session(model, precision="f32", optimizer="adam", seed=2,
                            accumulate=2)
    with pytest.raises(runtime.MPError, match="micro-batches of an accumulation window"):
        other.load(checkpoint)


def test_bad_accumulation_is_an_error(tmp_path):
    with pytest.raises(runtime.MPError, match="--accumulate must be a positive"):
        runtime.Session(_model(tmp_path, 16), accumulate=0)
