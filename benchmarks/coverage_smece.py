"""How often the smooth ECE's bootstrap interval covers the true smooth ECE, with each resample's own bandwidth
search and with the test set's bandwidth shared by every resample (docs/method.md §13.3), and what each costs.

Simulated models of K = 10 classes: the top-label confidence C = 1/K + (1 − 1/K)·Beta(a, b) and the hit drawn
with probability g(C): g(c) = c (calibrated) or c^γ (overconfident). Per scenario, the true smooth ECE is
the estimate on one sample of ``--truth-n`` predictions (its finite-sample bias is far below the intervals'
widths); then ``--replications`` test sets of ``--n`` predictions are drawn, and on each the percentile
interval (level 0.95) of ``--resamples`` resamples is computed both ways
(:func:`trustcal.measures.smooth.bootstrap_smece` without and with ``sigma``). Reported per scenario and
way: the coverage (share of test sets whose interval holds the true value; its Monte Carlo standard error
√(p(1 − p)/R)), the mean width, the share of intervals above the true value, and the CPU time of the
replicates per test set (one core).

    python benchmarks/coverage_smece.py [--n 10000] [--replications 200] [--resamples 200] [--out CSV]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core, before NumPy loads
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from trustcal.measures.bins import TopLabel  # noqa: E402
from trustcal.measures.bootstrap import BootstrapParams, percentile_interval, resample_counts  # noqa: E402
from trustcal.measures.calibration_errors import smece_of  # noqa: E402
from trustcal.measures.smooth import bootstrap_smece  # noqa: E402

K = 10
# name: (a, b of the confidence's Beta, γ of the hit probability c^γ)
SCENARIOS = {
    "accurate, calibrated": (8.0, 0.6, 1.0),
    "accurate, overconfident": (8.0, 0.6, 3.0),
    "half right, calibrated": (2.0, 0.8, 1.0),
    "half right, overconfident": (2.0, 0.8, 2.0),
}


def draw(rng, n: int, a: float, b: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    conf = 1 / K + (1 - 1 / K) * rng.beta(a, b, n)
    return conf, (rng.random(n) < conf**gamma).astype(np.float64)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="predictions per test set (default 10000)")
    parser.add_argument("--replications", type=int, default=200, help="test sets per scenario (default 200)")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples (default 200)")
    parser.add_argument("--truth-n", type=int, default=2_000_000, help="predictions of the true value's sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/smece_coverage.csv"))
    args = parser.parse_args(argv)

    counts = resample_counts(args.n, BootstrapParams(resamples=args.resamples, seed=args.seed))
    rows = []
    for s, (name, (a, b, gamma)) in enumerate(SCENARIOS.items()):
        rng = np.random.default_rng([args.seed, s])
        truth, truth_sigma = smece_of(TopLabel.of_scores(*draw(rng, args.truth_n, a, b, gamma)))
        for r in range(args.replications):
            conf, hit = draw(rng, args.n, a, b, gamma)
            estimate, sigma = smece_of(TopLabel.of_scores(conf, hit))
            for way, given in (("own", None), ("shared", sigma)):
                t0 = time.process_time()
                replicates = bootstrap_smece(conf, hit, counts, given)
                seconds = time.process_time() - t0
                lo, hi = percentile_interval(replicates)
                rows.append(
                    dict(scenario=name, replication=r, bandwidth=way, truth=truth, truth_sigma=truth_sigma,
                         estimate=estimate, sigma=sigma, lo=lo, hi=hi, seconds=seconds)
                )  # fmt: skip
        print(f"{name}: true smECE {truth:.4f} (σ* {truth_sigma:.4f})", flush=True)
    runs = pd.DataFrame(rows)
    runs["covered"] = (runs["lo"] <= runs["truth"]) & (runs["truth"] <= runs["hi"])
    runs["above"] = runs["lo"] > runs["truth"]
    runs["width"] = runs["hi"] - runs["lo"]
    summary = (
        runs.groupby(["scenario", "bandwidth"], sort=False)
        .agg(
            truth=("truth", "first"),
            mean_estimate=("estimate", "mean"),
            mean_sigma=("sigma", "mean"),
            coverage=("covered", "mean"),
            above=("above", "mean"),
            mean_width=("width", "mean"),
            cpu_ms=("seconds", lambda v: 1e3 * v.median()),
        )
        .reset_index()
    )
    summary["coverage_se"] = np.sqrt(summary["coverage"] * (1 - summary["coverage"]) / args.replications)
    summary.insert(2, "n", args.n)
    summary.insert(3, "replications", args.replications)
    summary.insert(4, "resamples", args.resamples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out, index=False)
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
