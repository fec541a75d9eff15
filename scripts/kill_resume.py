#!/usr/bin/env python3
"""Kills a checkpointing mp-run training run with SIGKILL at random points,
resumes it each time, and checks that the final checkpoint is bitwise equal
to that of an uninterrupted run with the same seed.

  kill_resume.py MP_RUN MODEL --workdir DIR [--kills 5] [--seed 1]
                 [--epochs 2] [--checkpoint-every 3] [-- EXTRA mp-run ARGS]

Prints one line per kill (when it struck, where the run resumed) and a
summary; exits non-zero when the weights differ, a run fails, or no resume
started from a checkpoint saved inside an epoch (then the kills proved
nothing about mid-epoch resumption).
"""

import argparse
import os
import random
import re
import subprocess
import sys
import time
import zipfile

RESUME_LINE = re.compile(r"resuming at epoch (\d+), batch (\d+)")


def members(path):
    """Every member of an .npz checkpoint, as raw bytes, by name."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def start(command):
    return subprocess.Popen(command, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for_header(process):
    """Reads output until the line printed once compilation is done."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("mp-run:"):
            return lines, True
    return lines, False


def wait_for_saves(process, path, count):
    """Polls `path` until it was replaced `count` times; False if the
    process ended first."""
    def identity():
        try:
            info = os.stat(path)
            return (info.st_ino, info.st_mtime_ns)
        except FileNotFoundError:
            return None
    last = identity()
    while count > 0:
        if process.poll() is not None:
            return False
        time.sleep(0.002)
        now = identity()
        if now != last:
            last = now
            count -= 1
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mp_run")
    parser.add_argument("model")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=3)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_args(argv[:split]), argv[split + 1:]

    os.makedirs(args.workdir, exist_ok=True)
    reference = os.path.join(args.workdir, "reference.npz")
    interrupted = os.path.join(args.workdir, "interrupted.npz")
    for path in (reference, interrupted, interrupted + ".prev"):
        if os.path.exists(path):
            os.remove(path)
    base = [args.mp_run, "train", args.model, "--epochs", str(args.epochs),
            "--seed", str(args.seed), "--checkpoint-every",
            str(args.checkpoint_every)] + extra

    # The uninterrupted run; its training time bounds the kill delays.
    process = start(base + ["--checkpoint", reference])
    _, ok = wait_for_header(process)
    began = time.monotonic()
    output = process.stdout.read()
    if process.wait() != 0 or not ok:
        sys.exit("kill_resume: the reference run failed:\n" + output)
    duration = time.monotonic() - began
    print(f"reference run: {duration:.2f} s of training")

    rng = random.Random(args.seed)
    mid_epoch_resumes = 0
    kills = 0
    while True:
        command = base + ["--checkpoint", interrupted]
        if os.path.exists(interrupted):
            command.append("--resume")
        process = start(command)
        lines, ok = wait_for_header(process)
        if ok and "--resume" in command:
            lines.append(process.stdout.readline())  # "resuming at ..."
        resumed = [m.groups() for m in map(RESUME_LINE.search, lines) if m]
        if resumed:
            epoch, batch = map(int, resumed[0])
            mid_epoch_resumes += batch > 0
            where = f"resumed at epoch {epoch}, batch {batch}"
        else:
            where = "started from scratch"
        if not ok:
            sys.exit("kill_resume: mp-run failed:\n" + "".join(lines) +
                     process.stdout.read())
        if kills < args.kills:
            # Strike a little after a random number of saves, so kills land
            # between saves and in the middle of writing one.
            # The delay stays well inside an epoch however fast training is.
            saves = rng.randint(1, 3)
            delay = rng.uniform(0.0, min(0.2, duration / args.epochs / 4))
            if wait_for_saves(process, interrupted, saves):
                time.sleep(delay)
                if process.poll() is None:
                    process.kill()
                    process.wait()
                    kills += 1
                    print(f"kill {kills}: {where}, SIGKILL {delay:.2f} s "
                          f"after {saves} saves")
                    continue
        output = process.stdout.read()
        if process.wait() != 0:
            sys.exit("kill_resume: mp-run failed:\n" + output)
        print(f"final run: {where}, finished")
        break

    expected, actual = members(reference), members(interrupted)
    differing = sorted(name for name in expected
                       if expected[name] != actual.get(name))
    extra = sorted(set(actual) - set(expected))
    print(f"{kills} kills, {mid_epoch_resumes} resumes inside an epoch, "
          f"{len(expected)} checkpoint members compared")
    if differing or extra:
        sys.exit("kill_resume: FAIL: members differ from the uninterrupted "
                 f"run: {differing + extra}")
    if mid_epoch_resumes == 0:
        sys.exit("kill_resume: FAIL: no kill struck after a save inside an "
                 "epoch; raise --epochs or lower --checkpoint-every")
    print("kill_resume: final weights, optimizer state and loss-scale state "
          "are bitwise equal to the uninterrupted run")


if __name__ == "__main__":
    main()
