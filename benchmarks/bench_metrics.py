"""Time the per-epoch metric computation of the workflow.

One "epoch" = the scalar metrics and the side tables (reliability curves,
trust spectrum, trust densities, geometric bins) for the test predictions
before and after temperature scaling, i.e. everything twice, and the bootstrap
intervals of the scores and of the trust opinion (``--resamples`` resamples of
the test set, drawn once per run as the workflow does; their drawing is timed
apart). Random logits stand in for a model's; the timing does not depend on
their values much. The last lines give the bootstrap's cost for the paper's
configuration (2 datasets × 100 epochs × 2 states) and its ratio to the rest of
the per-epoch work, both measured in this run.

    python benchmarks/bench_metrics.py [--n 10000] [--k 10] [--repeats 7] [--out CSV]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.measures import metrics as M
from trustcal.measures.bootstrap import BootstrapParams, bootstrap_opinions, bootstrap_scores, resample_counts
from trustcal.reporting.tables import MetricParams

BOOTSTRAP = ("bootstrap_scores", "bootstrap_opinions")


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def one_split(probs: np.ndarray, labels: np.ndarray, counts: np.ndarray) -> dict[str, float]:
    """Time each piece of the per-split work once; returns seconds per piece."""
    pieces = {
        "bootstrap_scores": lambda: bootstrap_scores(probs, labels, counts, MetricParams()),
        "bootstrap_opinions": lambda: bootstrap_opinions(probs, labels, counts),
        "scalar_metrics": lambda: M.scalar_metrics(probs, labels),
        "reliability_table": lambda: M.reliability_table(probs, labels),
        "trust_spectrum": lambda: M.trust_spectrum(probs, labels),
        "trust_density_table": lambda: M.trust_density_table(probs, labels),
        "geometric_bins": lambda: M.geometric_bins(probs, labels),
    }
    out = {}
    for name, fn in pieces.items():
        t0 = time.perf_counter()
        fn()
        out[name] = time.perf_counter() - t0
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="samples (default 10000)")
    parser.add_argument("--k", type=int, default=10, help="classes (default 10)")
    parser.add_argument("--repeats", type=int, default=7, help="timed epochs (default 7)")
    parser.add_argument("--epochs", type=int, default=100, help="epochs to extrapolate to (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples (default 200)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/metrics.csv"))
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    labels = rng.integers(0, args.k, args.n)
    logits = rng.normal(0, 1, (args.n, args.k)) * 4
    logits[np.arange(args.n), labels] += 6  # a fairly accurate, overconfident model
    before, after = softmax(logits), softmax(logits / 1.7)

    t0 = time.perf_counter()
    counts = resample_counts(args.n, BootstrapParams(resamples=args.resamples))
    draw_seconds = time.perf_counter() - t0  # once per run and seed in the workflow
    one_split(before, labels, counts)  # warm-up (imports, caches)
    rows = []
    for rep in range(args.repeats):
        for calibrated, probs in (("before", before), ("after", after)):
            for piece, secs in one_split(probs, labels, counts).items():
                rows.append({"repeat": rep, "calibrated": calibrated, "piece": piece, "seconds": secs})
    timings = pd.DataFrame(rows)

    per_epoch = timings.groupby("repeat")["seconds"].sum()  # both splits, all pieces
    per_piece = (
        timings.groupby(["repeat", "piece"])["seconds"].sum().groupby("piece").median().sort_values(ascending=False)
    )
    median_epoch = statistics.median(per_epoch)

    summary = pd.DataFrame(
        [
            {
                "piece": p,
                "n": args.n,
                "k": args.k,
                "median_seconds_per_epoch": s,
                f"seconds_for_{args.epochs}_epochs": s * args.epochs,
            }
            for p, s in per_piece.items()
        ]
        + [
            {
                "piece": "total",
                "n": args.n,
                "k": args.k,
                "median_seconds_per_epoch": median_epoch,
                f"seconds_for_{args.epochs}_epochs": median_epoch * args.epochs,
            }
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out, index=False)

    print(f"{args.n} x {args.k} predictions, before + after calibration, {args.repeats} repeats")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(
        f"median per epoch: {median_epoch * 1e3:.1f} ms; "
        f"extrapolated for {args.epochs} epochs: {median_epoch * args.epochs:.1f} s"
    )
    boot = sum(per_piece[p] for p in BOOTSTRAP)
    rest = median_epoch - boot
    paper = 2 * args.epochs * boot + 2 * draw_seconds  # 2 datasets × epochs; both states are in `boot`
    print(
        f"bootstrap ({args.resamples} resamples): {boot * 1e3:.1f} ms per epoch (both states), "
        f"{boot / rest:.2f}x the rest of the per-epoch metric work ({rest * 1e3:.1f} ms); drawing the "
        f"resamples {draw_seconds * 1e3:.0f} ms once; paper's configuration (2 datasets x {args.epochs} "
        f"epochs, one seed): {paper:.1f} s of CPU, {paper / 2:.1f} s on 2 cores"
    )
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
