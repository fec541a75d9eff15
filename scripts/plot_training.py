#!/usr/bin/python3
"""Plots a training run from its stats file (mp-run train --stats FILE):
loss, gradient norm and loss scale over the steps, in three panels that
share the step axis. Skipped steps are marked (x) on every panel; the
stability monitor's reports (red) and precision changes (green) are
vertical lines.

    /usr/bin/python3 scripts/plot_training.py run.json --output run.png

Needs matplotlib (Debian: python3-matplotlib). The stats file's schema is
docs/training.md's ("Stability monitor"); non-finite numbers are the
strings "nan", "inf" and "-inf" and are left out of the curves (a skipped
step's gradient norm is one: its mark sits on the panel's lower edge).
"""

import argparse
import json
import math
import sys


def fail(message):
    print("plot_training.py: error: " + message, file=sys.stderr)
    sys.exit(1)


def number(value, where):
    """A stats number (a JSON number, or "nan"/"inf"/"-inf") as a float."""
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    fail("%s: %r is not a number" % (where, value))


def read_stats(path):
    try:
        with open(path) as f:
            stats = json.load(f)
    except OSError as e:
        fail("cannot read '%s': %s" % (path, e.strerror))
    except ValueError as e:
        fail("'%s' is not JSON: %s" % (path, e))
    if not isinstance(stats, dict) or stats.get("version") != 1:
        fail("'%s' is not a version 1 stats file (mp-run train --stats)" % path)
    steps = stats.get("steps")
    if not isinstance(steps, list):
        fail("'%s' has no list of steps" % path)
    rows = []
    for i, s in enumerate(steps):
        where = "'%s': steps[%d]" % (path, i)
        if not isinstance(s, dict) or any(
                k not in s for k in ("step", "loss", "grad_norm", "scale", "skipped")):
            fail(where + " lacks step, loss, grad_norm, scale or skipped")
        # A micro-batch that only accumulated has no gradient norm (null).
        norm = float("nan") if s["grad_norm"] is None else number(s["grad_norm"], where)
        rows.append((number(s["step"], where), number(s["loss"], where), norm,
                     number(s["scale"], where), bool(s["skipped"])))
    marks = []  # (step, color, label): a color per kind of report
    colors = {}
    palette = ["tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
    for key in ("reports", "precision_changes"):
        for i, r in enumerate(stats.get(key) or []):
            if not isinstance(r, dict) or "step" not in r:
                fail("'%s': %s[%d] lacks its step" % (path, key, i))
            label = str(r["issue"]) if key == "reports" and "issue" in r else \
                "precision change"
            if label not in colors:
                colors[label] = "tab:green" if key == "precision_changes" else \
                    palette[len(colors) % len(palette)]
            marks.append((number(r["step"], "%s[%d]" % (key, i)), colors[label], label))
    return stats, rows, marks


def finite(xs, ys, positive=False):
    """The points whose y is finite (and > 0 for a log axis)."""
    kept = [(x, y) for x, y in zip(xs, ys)
            if math.isfinite(y) and (y > 0 or not positive)]
    return [x for x, _ in kept], [y for _, y in kept]


def plot(stats, rows, marks, output, title):
    try:
        import matplotlib
    except ImportError:
        fail("matplotlib is missing: apt-get install python3-matplotlib, and "
             "run this with /usr/bin/python3")
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    steps = [r[0] for r in rows]
    skipped = [r[0] for r in rows if r[4]]
    panels = (("loss", 1, None), ("gradient norm", 2, 10), ("loss scale", 3, 2))
    figure, axes = plt.subplots(3, 1, sharex=True, figsize=(10, 8))
    for ax, (name, column, base) in zip(axes, panels):
        # Log axes (base 2 for the scale, a power of two) show no zeros.
        xs, ys = finite(steps, [r[column] for r in rows], positive=base is not None)
        ax.plot(xs, ys, linewidth=1, color="tab:blue")
        if base and ys:
            ax.set_yscale("log", base=base)
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
        if skipped:
            # On the curve where the step has a value, else on the lower edge.
            values = dict(zip(xs, ys))
            low = min(ys) if ys else 0
            ax.scatter(skipped, [values.get(s, low) for s in skipped], marker="x",
                       color="tab:orange", zorder=3,
                       label="skipped step" if column == 1 else None)
        for step, color, label in marks:
            ax.axvline(step, color=color, linestyle="--", linewidth=0.8,
                       label=label if column == 1 else None)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        unique = dict(zip(labels, handles))  # one entry per issue kind
        axes[0].legend(unique.values(), unique.keys(), fontsize="small")
    axes[-1].set_xlabel("step")
    figure.suptitle(title)
    figure.tight_layout()
    try:
        figure.savefig(output, format="png", dpi=100)
    except OSError as e:
        fail("cannot write '%s': %s" % (output, e.strerror))
    plt.close(figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stats", help="the JSON file mp-run train --stats wrote")
    parser.add_argument("--output", "-o", required=True, help="the PNG to write")
    args = parser.parse_args()
    stats, rows, marks = read_stats(args.stats)
    if not rows:
        fail("'%s' has no steps to plot" % args.stats)
    title = "%s: %s, loss scale %s, %d steps, %d skipped, %d reports" % (
        stats.get("model", "?"), stats.get("precision", "?"),
        stats.get("loss_scale") or "none", len(rows), sum(r[4] for r in rows),
        len(stats.get("reports") or []))
    plot(stats, rows, marks, args.output, title)
    print("wrote %s (%d steps)" % (args.output, len(rows)))


if __name__ == "__main__":
    main()
