"""Time the evaluation of one (epoch, calibration state) beside its floor, in one run, on one core.

One (epoch, state) is what the scores and trust stages compute for one epoch of
one calibrator (docs/method.md §3, §5–§8): :func:`trustcal.evaluation.score_tables`
and :func:`~trustcal.evaluation.trust_tables` on 10,000 × 10 test
predictions with 200 bootstrap resamples (every score, its interval, the side
tables, the trust opinions and their intervals), plus the validation split
where a table needs it (its row of scores.csv; the cluster opinions of
dynamic_trust.csv and selective.csv are learned on it). That includes the
measures of docs/method.md §13, also timed apart: the smooth measures (the
smooth ECE of every resample, each with its own bandwidth search, and the
smooth reliability diagram with its band, on one set of grids spread for the
test set and all resamples in one blocked product), the calibration/refinement split (five cross-fitted temperature fits by
Newton's method), the selective-prediction table (four scores, paired
intervals; the three opinion scores share one product of the counts) and
Kuiper's test; and, apart from the total, one shifted set's row (:func:`trustcal.reporting.shift.shift_row`:
the four scores, the network opinion and the smooth ECE with their intervals, what the ``shift_scores`` job
computes per epoch, severity and state). The trust sweep (6 epochs of a run, not every one) is left out. The states are the raw model
and temperature scaling. By default random logits of a half-right model stand in for a model's (T = 1.7);
``--logits`` takes a run's logits file instead (T fitted on its validation split). The cost depends on the
model: an accurate, well-calibrated model has a small smooth-ECE bandwidth, whose finer grids cost more
(docs/method.md §13.3), and few errors, which make the areas under the risk curves cheaper.

The FLOOR, measured in the same run: one pass over the B × N resample counts,
the matrix product of the counts with the N × F matrix of per-sample terms that
the scores' resamples need (F = 200 for 10 classes); the ratio of the cost to
it is what to compare between machines, not the milliseconds.

CPU time of this process (``time.process_time``) with one BLAS thread: the
cost on one core, whatever else the machine runs; the median over
``--repeats`` rounds. The output has, in one run: the total per (epoch, state),
each piece (the same functions timed apart, which overlap a little: the pieces
sum to about the total), the floor, and the ratio of each to the floor.

    python benchmarks/bench_metrics.py [--n 10000] [--val 6000] [--k 10] [--repeats 7] [--logits NPZ] [--out CSV]
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

from trustcal.calibration.temperature import newton_temperature  # noqa: E402
from trustcal.evaluation import (  # noqa: E402
    MetricParams,
    PredictionSet,
    dynamic_trust_table,
    refinement_losses,
    score_tables,
    selective_table,
    trust_tables,
)
from trustcal.measures import metrics as M  # noqa: E402
from trustcal.measures.bins import TopLabel  # noqa: E402
from trustcal.measures.bootstrap import (  # noqa: E402
    BootstrapParams,
    bootstrap_opinions,
    bootstrap_scores,
    resample_counts,
)
from trustcal.measures.smooth import smooth_measures  # noqa: E402
from trustcal.measures.trust import TrustParams, trust_opinions  # noqa: E402
from trustcal.reporting.shift import shift_row  # noqa: E402
from trustcal.stages import load_logits  # noqa: E402


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def cpu_seconds(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def fake_logits(rng, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, k, n)
    logits = rng.normal(0, 1, (n, k)) * 4
    logits[np.arange(n), labels] += 6  # a fairly accurate, overconfident model
    return logits, labels


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="test samples (default 10000)")
    parser.add_argument("--val", type=int, default=6_000, help="validation samples (default 6000)")
    parser.add_argument("--k", type=int, default=10, help="classes (default 10)")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples (default 200)")
    parser.add_argument(
        "--logits",
        type=Path,
        help="a logits file of a run (results/{dataset}/seed{seed}/logits/epochNNN.npz): its test and validation "
        "predictions instead of random ones, the temperature fitted on its validation split",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/metrics.csv"))
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    if args.logits:
        arrays = load_logits(args.logits)
        test_logits, test_labels = arrays["test_logits"].astype(np.float64), arrays["test_labels"]
        val_logits, val_labels = arrays["val_logits"].astype(np.float64), arrays["val_labels"]
        args.n, args.val, args.k = len(test_labels), len(val_labels), test_logits.shape[1]
        states = {"none": 1.0, "temperature": newton_temperature(val_logits, val_labels)}
    else:
        (test_logits, test_labels), (val_logits, val_labels) = (fake_logits(rng, m, args.k) for m in (args.n, args.val))
        states = {"none": 1.0, "temperature": 1.7}
    preds = {
        state: [
            PredictionSet(1, state, "test", softmax(test_logits / t), test_labels),
            PredictionSet(1, state, "val", softmax(val_logits / t), val_labels),
        ]
        for state, t in states.items()
    }
    mp, tp, bootstrap = MetricParams(), TrustParams(), BootstrapParams(resamples=args.resamples)
    draw_seconds = cpu_seconds(lambda: resample_counts(args.n, bootstrap))  # once per run, as the stages do
    counts = resample_counts(args.n, bootstrap)
    grid = np.linspace(0.0, 1.0, mp.density_points)
    features = np.ones((args.n, 5 + 2 * sum(mp.ece_bins) + 3 * mp.l2_bins + args.k * mp.ece_bins[0]), np.float32)

    def whole(p):  # what the scores and trust stages compute for one (epoch, state)
        return lambda: (score_tables(p, mp, bootstrap), trust_tables(p, tp, None, bootstrap))

    def pieces(p):
        test, val = p
        conf, hit = test.probs.max(axis=1), (test.probs.argmax(axis=1) == test.labels).astype(np.float64)
        return {
            "smooth_measures": lambda: smooth_measures(TopLabel.of_scores(conf, hit), counts, mp.smooth_points),
            "calibration_refinement": lambda: refinement_losses(test, mp, bootstrap.seed),
            "selective_table": lambda: selective_table(p, tp, bootstrap),
            "kuiper_test": lambda: M.kuiper_test(test.probs, test.labels),
            "bootstrap_scores": lambda: bootstrap_scores(test.probs, test.labels, counts, mp),
            "bootstrap_opinions": lambda: bootstrap_opinions(test.probs, test.labels, counts, tp),
            "scalar_metrics_test": lambda: M.scalar_metrics(test.probs, test.labels),
            "scalar_metrics_val": lambda: M.scalar_metrics(val.probs, val.labels),
            "reliability_table": lambda: M.reliability_table(test.probs, test.labels, mp.reliability_bins),
            "trust_density_table": lambda: M.trust_density_table(test.probs, test.labels, grid=grid),
            "trust_spectrum": lambda: M.trust_spectrum(test.probs, test.labels),
            "trust_opinions": lambda: trust_opinions(test.probs, test.labels, tp),
            "dynamic_trust": lambda: dynamic_trust_table(p, tp),
            # one shifted set's row per (epoch, severity, state): what shift_scores computes (docs/method.md §14)
            "shift_row": lambda: shift_row(test, tp, mp, counts, bootstrap),
        }

    for p in preds.values():  # warm-up (imports, caches)
        whole(p)()
    rows = []
    for rep in range(args.repeats):
        rows.append({"repeat": rep, "piece": "floor", "seconds": cpu_seconds(lambda: counts @ features)})
        for state, p in preds.items():
            rows.append({"repeat": rep, "state": state, "piece": "total", "seconds": cpu_seconds(whole(p))})
            for piece, fn in pieces(p).items():
                rows.append({"repeat": rep, "state": state, "piece": piece, "seconds": cpu_seconds(fn)})
    timings = pd.DataFrame(rows)
    # per (epoch, state): the mean of the states in each round, then the median over rounds
    per_state = timings.groupby(["repeat", "piece"])["seconds"].mean().groupby("piece").median()
    floor, total = per_state.pop("floor"), per_state.pop("total")
    per_state = per_state.sort_values(ascending=False)

    summary = pd.DataFrame(
        [{"piece": "total", "median_cpu_seconds": total}]
        + [{"piece": name, "median_cpu_seconds": s} for name, s in per_state.items()]
        + [{"piece": "floor", "median_cpu_seconds": floor}]
    )
    summary.insert(1, "n_test", args.n)
    summary.insert(2, "n_val", args.val)
    summary.insert(3, "k", args.k)
    summary.insert(4, "resamples", args.resamples)
    summary.insert(0, "logits", str(args.logits) if args.logits else "random")
    summary["ratio_to_floor"] = summary["median_cpu_seconds"] / floor
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out, index=False)

    source = f"{args.logits} (temperature {states['temperature']:.3f})" if args.logits else "random logits"
    print(
        f"{source}: {args.n} x {args.k} test + {args.val} x {args.k} validation predictions, {args.resamples} resamples, "
        f"{args.repeats} rounds, CPU time on one core (median)"
    )
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(
        f"per (epoch, state): {total * 1e3:.1f} ms = {total / floor:.1f}x the floor ({floor * 1e3:.1f} ms: the "
        f"{args.resamples} x {args.n} counts times the {args.n} x {features.shape[1]} per-sample terms); "
        f"the pieces timed apart sum to {per_state.sum() * 1e3:.1f} ms; drawing the resamples "
        f"{draw_seconds * 1e3:.0f} ms once per run"
    )
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
