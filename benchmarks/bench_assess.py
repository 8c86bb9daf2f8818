"""Time ``trustcal assess`` on one prediction file, with and without its figures, in one run.

The command is run as a user runs it (a fresh ``python -m trustcal`` process each time, start-up and
imports included) on 10,000 × 10 synthetic predictions (an overconfident model, probabilities in a
``.npy`` file with the labels beside), without and with validation predictions (``--validation``: the
temperature is fitted and every table and figure shows before and after). Per input, the variants are
run in turn, ``--repeats`` rounds, so that a load on the machine falls on all of them alike:

- ``figures``: the defaults (PNG figures, 200 bootstrap resamples);
- ``figures+pdf``: ``--figure-formats png,pdf``;
- ``no-figures``: ``--no-figures``;
- ``tables-only``: ``--no-figures --bootstrap 0``.

Reported per input and variant: the median and the fastest wall time, the median CPU time (this
process's children: user + system, the figure workers included), and the ratio of each median wall time
to that of ``no-figures`` in the same run.

    python benchmarks/bench_assess.py [--n 10000] [--k 10] [--repeats 3] [--out CSV]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

VARIANTS = {
    "figures": [],
    "figures+pdf": ["--figure-formats", "png,pdf"],
    "no-figures": ["--no-figures"],
    "tables-only": ["--no-figures", "--bootstrap", "0"],
}


def predictions(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Probabilities, labels and logits of an overconfident model that is right about 60 % of the time."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(0, 1.5, (n, k))
    logits[np.arange(n), labels] += 2.5
    logits *= 1.8
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return probs, labels, logits


def run(args: list[str], out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one ``trustcal assess``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "trustcal", "assess", *args, "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"trustcal assess {' '.join(args)} failed:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="test samples (default 10000)")
    parser.add_argument("--k", type=int, default=10, help="classes (default 10)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over the variants (default 3)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/assess.csv"))
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        probs, labels, _ = predictions(args.n, args.k, seed=0)
        np.save(tmp / "probs.npy", probs)
        np.savetxt(tmp / "labels.txt", labels, fmt="%d")
        val_probs, val_labels, _ = predictions(args.n // 2, args.k, seed=1)
        np.savez(tmp / "val.npz", probs=val_probs, labels=val_labels)
        inputs = {
            "one file": [str(tmp / "probs.npy"), "--labels", str(tmp / "labels.txt")],
            "one file + validation": [
                str(tmp / "probs.npy"),
                "--labels",
                str(tmp / "labels.txt"),
                "--validation",
                str(tmp / "val.npz"),
            ],
        }
        run(inputs["one file"] + VARIANTS["tables-only"], tmp / "warm-up")  # the file system's caches
        for rep in range(args.repeats):
            for source, given in inputs.items():
                for variant, extra in VARIANTS.items():
                    wall, cpu = run(given + extra, tmp / f"out-{rep}-{variant}")
                    rows.append(dict(input=source, variant=variant, repeat=rep, wall_s=wall, cpu_s=cpu))
    timings = pd.DataFrame(rows)
    summary = (
        timings.groupby(["input", "variant"], sort=False)
        .agg(median_wall_s=("wall_s", "median"), fastest_wall_s=("wall_s", "min"), median_cpu_s=("cpu_s", "median"))
        .reset_index()
    )
    base = summary[summary["variant"] == "no-figures"].set_index("input")["median_wall_s"]
    summary["wall_vs_no_figures"] = summary["median_wall_s"] / summary["input"].map(base)
    summary.insert(2, "n", args.n)
    summary.insert(3, "k", args.k)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out, index=False)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"trustcal assess on {args.n} x {args.k} predictions, {args.repeats} rounds, {cores} cores")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
