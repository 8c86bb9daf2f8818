"""Time each calibrator's fit on one core, with its iteration count, its fit NLL, and its NLL and ECE on a test
split of the same model (issues 23, 28; docs/method.md §2.7, §2.9).

Inputs (validation splits, what the calibrators are fitted on, each with a test split drawn from the same model):

- ``classes-10``, ``classes-100``, ``classes-1000``: 6,000 × 10, 5,000 × 100 and 25,000 × 1,000 logits of a
  network-like K-class model (tests/helpers/synthetic.py ``many_class_logits``): class prototypes ln(K)·I, 1.5
  more within superclasses of 5 classes (confusions mostly among neighbours, as in CIFAR-100) and N(0, 0.5²)
  noise; a sample's calibrated logits are its class's prototype + N(0, 1), its label drawn from their softmax;
  the model shows them × 2 (overconfident, as a network trained for many epochs), mixed a little across
  classes and offset per class. Accuracy 0.58, 0.64, 0.67 (raw NLL 1.7, 2.9, 4.3); tested on as many samples
  of the same model (seed 2; fitted on seed 1);
- ``network``: 6,000 × 10 logits shaped like a trained MNIST network's: labels drawn from a
  calibrated model (softmax of class-structured logits, about 97 % accurate), shown to the
  calibrator with the overconfidence of a network trained for many epochs (logits × 2.5, a
  small per-class offset and a little class mixing), so every calibrator has something to fit; the model
  drawn with seed 0, its 6,000 fit and 6,000 test samples with seeds 0 and 1;
- ``network-probs``: the same model as a probability file gives it: log max(p, PROB_FLOOR) of
  its float32 probabilities (many entries at the floor, as trustcal assess fits them);
- ``votes``: 6,000 × 10 vote fractions of a 5-tree forest (most entries exactly 0, fitted on
  log max(p, PROB_FLOOR)), the random-forest case of tests/unit/calibration/test_methods.py; tested on 6,000
  more (seed 1);
- ``cifar100-<network>`` (with ``--records DIR``): real CIFAR-100 predictions of published networks, netcal's
  example records ``<network>-cifar-100.npz`` in DIR (tests/unit/calibration/test_real_cifar100.py says where
  they come from): the float32 probabilities of the 10,000 test images as ``trustcal assess`` fits them,
  log max(p, PROB_FLOOR), fitted on the first 5,000 rows and tested on the last 5,000;
- ``digits-<model>``: the conformance corpus of tests/helpers/corpus.py (scikit-learn models on digits,
  449 × 10 validation rows, 450 test rows): the random forest and naive Bayes as probabilities, logistic
  regression, the MLP and naive Bayes as logits (scores). These are where vector, matrix and
  Dirichlet scaling stopped at their 1,000-iteration limit before issue 23.

Reported per input and calibrator: the median CPU time of this process (``time.process_time``,
one BLAS thread: the cost on one core) over ``--repeats`` fits (one at K = 1000), the iterations,
converged, at_bound, the fit split's NLL before (the raw model's) and after the fit (exact, as calibration.csv
reports it), and ``raised``: the fit NLL above the raw one beyond float64 rounding (never, by docs/method.md
§2.12); on the test split the raw model's NLL and ECE and the calibrated ones (``test_nll``, ``test_ece``: top-label,
10 equal-width bins, trustcal.measures.metrics.ece), and for matrix and Dirichlet scaling the ODIR weights λ and μ
their fit used (chosen by cross-validation by default, docs/method.md §2.7). Beside them, per input, ``floor_ms``: one evaluation of matrix scaling's loss and gradient written in
plain NumPy (the products of N×K by K×K, the softmax), the unit of work of an L-BFGS-B iteration, measured in
the same run: compare ``ms / floor_ms`` between machines, not the milliseconds.

``--baseline REV`` also runs the same measurements, in the same run, with the package as it is
in git revision REV (e.g. HEAD before a change), in a child process, and prints both; inputs of more than
``--baseline-max-classes`` classes (100) are left out of it, and a baseline fit that runs past
``--baseline-timeout`` seconds of wall time (300) is stopped and reported as NaN with ``timeout`` set.

    python benchmarks/bench_calibrators.py [--repeats 5] [--classes 10,100,1000] [--methods matrix,dirichlet]
        [--baseline REV] [--peers] [--records DIR] [--out CSV]

``--peers`` fits probmetrics' calibrators (ts-mix, svs, sms, ets; the library behind the CalArena benchmark) on
the many-class inputs in the same run, from float32 probabilities as its API takes them, and reports their fit
time and test NLL and ECE beside ours (written to ``<out>_peers.csv``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core, before NumPy loads
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def network_logits(n: int = 6000, k: int = 10, seed: int = 0, model_seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident network-like logits and labels (see the module docstring): the model drawn with
    ``model_seed``, the samples with ``seed``, so that splits of different ``seed`` share the model."""
    model = np.random.default_rng(model_seed)
    centres = model.normal(0, 1.0, (k, k)) + 5.0 * np.eye(k)  # class prototypes, some classes closer than others
    mixing = np.eye(k) + model.normal(0, 0.05, (k, k))
    offset = model.normal(0, 0.3, k)
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n)
    z_true = centres[truth] + rng.normal(0, 1.2, (n, k))
    c = softmax(z_true).cumsum(axis=1)
    c[:, -1] = 1.0
    y = (c > rng.random((n, 1))).argmax(axis=1)  # labels drawn from the calibrated model
    return 2.5 * z_true @ mixing.T + offset, y


Split = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # fit logits, fit labels, test logits, test labels


def inputs(classes: tuple[int, ...], max_classes: int | None = None, records: Path | None = None) -> dict[str, Split]:
    """name → (validation logits, labels, test logits, labels); probability inputs as log max(p, PROB_FLOOR).
    ``classes``: the many-class inputs to include; ``max_classes``: leave out every input with more classes;
    ``records``: a folder of netcal's CIFAR-100 records to include."""
    from trustcal.numerics import floored_log

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import corpus
    from helpers.synthetic import many_class_logits

    def as_probs(z):
        return floored_log(softmax(z).astype(np.float32).astype(np.float64))

    found = {}
    for k in classes:
        n = {10: 6000, 100: 5000, 1000: 25_000}.get(k, 5000)
        found[f"classes-{k}"] = (*many_class_logits(n, k, seed=1), *many_class_logits(n, k, seed=2))
    z, y = network_logits(seed=0)
    z_test, y_test = network_logits(seed=1)
    p_votes, y_votes = corpus.vote_fractions(6000, 10, 5, seed=0)
    p_votes_test, y_votes_test = corpus.vote_fractions(6000, 10, 5, seed=1)
    found.update(
        {
            "network": (z, y, z_test, y_test),
            "network-probs": (as_probs(z), y, as_probs(z_test), y_test),
            "votes": (floored_log(p_votes), y_votes, floored_log(p_votes_test), y_votes_test),
        }
    )
    for classifier in ("forest", "naive_bayes", "logistic", "mlp"):
        m = corpus.train("digits", classifier)
        if classifier in ("forest", "naive_bayes"):
            found[f"digits-{classifier}-probs"] = (floored_log(m.p_val), m.y_val, floored_log(m.p_test), m.y_test)
        if m.s_val is not None:
            found[f"digits-{classifier}"] = (m.s_val, m.y_val, m.s_test, m.y_test)
    for path in sorted(records.glob("*-cifar-100.npz")) if records else ():
        with np.load(path, allow_pickle=False) as d:
            z, y = floored_log(d["predictions"].astype(np.float64)), d["ground_truth"]
        found[f"cifar100-{path.name.removesuffix('-cifar-100.npz')}"] = (z[:5000], y[:5000], z[5000:], y[5000:])
    return {name: v for name, v in found.items() if max_classes is None or v[0].shape[1] <= max_classes}


def floor_ms(z: np.ndarray, y: np.ndarray, repeats: int = 3) -> float:
    """CPU ms of one loss-and-gradient evaluation of matrix scaling at W = I, b = 0, in plain NumPy."""
    w = np.eye(z.shape[1])
    times = []
    for _ in range(repeats):
        start = time.process_time()
        s = z @ w.T
        s -= s.max(axis=1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=1, keepdims=True)
        s[np.arange(len(y)), y] -= 1.0
        _ = s.T @ z
        times.append(time.process_time() - start)
    return 1e3 * float(np.median(times))


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def measure(
    repeats: int,
    classes: tuple[int, ...],
    max_classes: int | None = None,
    timeout: float = 0,
    methods=None,
    records: Path | None = None,
) -> list[dict]:
    from threadpoolctl import threadpool_limits

    from trustcal.calibration import METHODS, fit_calibrator
    from trustcal.measures.metrics import ece
    from trustcal.numerics import logits_nll

    eps = np.finfo(np.float64).eps
    rows = []
    if timeout:
        signal.signal(signal.SIGALRM, _alarm)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (z, y, z_test, y_test) in inputs(classes, max_classes, records).items():
            n, k = z.shape
            floor, raw = floor_ms(z, y), logits_nll(z, y)
            for method in [m for m in METHODS if m != "none" and (not methods or m in methods)]:
                times, cal = [], None
                try:
                    for _ in range(repeats if k < 1000 else 1):
                        if timeout:
                            # wall time: a CPU-time timer (ITIMER_PROF) would coarsen process_time to the kernel's tick
                            signal.setitimer(signal.ITIMER_REAL, timeout)
                        start = time.process_time()
                        cal = fit_calibrator(method, z, y)
                        times.append(time.process_time() - start)
                        signal.setitimer(signal.ITIMER_REAL, 0)
                except _Timeout:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    cal, times = None, []
                row = dict(input=name, n=n, k=k, method=method, floor_ms=floor, raw_nll=raw, timeout=cal is None)
                row.update(test_n=len(y_test), test_raw_nll=logits_nll(z_test, y_test))
                row.update(test_raw_ece=ece(softmax(z_test), y_test))
                if cal is not None:
                    s = cal.summary()
                    fitted = cal.nll(z, y)
                    rounding = (k + 2) * eps * (1 + np.abs(z - z.max(axis=1, keepdims=True)).max())
                    row.update(
                        ms=1e3 * float(np.median(times)),
                        iterations=s["iterations"],
                        converged=s["converged"],
                        at_bound=s["at_bound"],
                        fit_nll=fitted,
                        raised=bool(fitted > raw + rounding),
                        test_nll=cal.nll(z_test, y_test),
                        test_ece=ece(cal.predict_proba(z_test), y_test),
                        odir_lambda=getattr(cal, "odir_lambda", np.nan),
                        odir_mu=getattr(cal, "odir_mu", np.nan),
                        diagnostics=";".join(code for code, _ in cal.diagnostics()),
                    )
                rows.append(row)
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


PEERS = ("ts-mix", "svs", "sms", "ets")  # probmetrics' calibrators measured beside ours


def _peer(method: str):
    """probmetrics' calibrator ``method``: its factory's (ts-mix, svs, sms), or its ETSCalibrator."""
    if method == "ets":
        from probmetrics.calibrators.temperature_scaling import ETSCalibrator

        return ETSCalibrator()
    from probmetrics.calibrators import get_calibrator

    return get_calibrator(method)


def peers(classes: tuple[int, ...], repeats: int) -> list[dict]:
    """probmetrics' fits of the many-class inputs, beside ours in the same run: fit time (CPU, one thread),
    test NLL and ECE, fitted and evaluated on float32 probabilities as its API takes them."""
    from threadpoolctl import threadpool_limits

    from trustcal.measures.metrics import ece

    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch

        torch.set_num_threads(1)
        for name, (z, y, z_test, y_test) in inputs(classes).items():
            if not name.startswith("classes-"):
                continue
            p, p_test = softmax(z).astype(np.float32), softmax(z_test).astype(np.float32)
            for method in PEERS:
                times = []
                for _ in range(repeats if z.shape[1] < 1000 else 1):
                    cal = _peer(method)
                    start = time.process_time()
                    cal.fit(p, y)
                    times.append(time.process_time() - start)
                q = np.asarray(cal.predict_proba(p_test), dtype=np.float64)
                q /= q.sum(axis=1, keepdims=True)
                nll = float(-np.mean(np.log(np.maximum(q[np.arange(len(y_test)), y_test], np.finfo(float).tiny))))
                rows.append(
                    dict(input=name, k=z.shape[1], peer=f"probmetrics {method}", ms=1e3 * float(np.median(times)))
                )
                rows[-1].update(test_nll=nll, test_ece=ece(q, y_test))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def baseline(
    rev: str,
    repeats: int,
    classes: tuple[int, ...],
    max_classes: int,
    timeout: float,
    methods: tuple[str, ...],
    records: Path | None = None,
) -> pd.DataFrame:
    """The same measurements with workflow/trustcal as in git revision ``rev``, in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "workflow/trustcal"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "workflow"), BENCH_JSON="1")
        args = ["--repeats", str(repeats), "--classes", ",".join(map(str, classes)), "--json"]
        args += ["--max-classes", str(max_classes), "--timeout", str(timeout), "--methods", ",".join(methods)]
        args += ["--records", str(records.resolve())] if records else []
        out = subprocess.run([sys.executable, __file__, *args], env=env, check=True, capture_output=True).stdout
    return pd.DataFrame(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--classes", default="10,100,1000", help="the many-class inputs (comma-separated K)")
    parser.add_argument("--methods", default="", help="the calibrators to fit (comma-separated; default: all)")
    parser.add_argument("--baseline", help="git revision to measure too, in the same run (e.g. HEAD)")
    parser.add_argument("--baseline-max-classes", type=int, default=100)
    parser.add_argument("--baseline-timeout", type=float, default=300.0, help="wall seconds per baseline fit")
    parser.add_argument("--out", type=Path, help="CSV of the table")
    parser.add_argument(
        "--peers", action="store_true", help="also fit probmetrics' ts-mix, svs, sms and ets on the many-class inputs"
    )
    parser.add_argument("--records", type=Path, help="also fit netcal's CIFAR-100 records (*-cifar-100.npz) in DIR")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the baseline's child process
    parser.add_argument("--max-classes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    classes = tuple(int(c) for c in args.classes.split(",") if c)
    methods = tuple(m for m in args.methods.split(",") if m)
    if args.records and not any(args.records.glob("*-cifar-100.npz")):
        parser.error(
            f"--records {args.records}: no netcal CIFAR-100 records (*-cifar-100.npz) there; give their folder"
        )
    if args.json:
        print(json.dumps(measure(args.repeats, classes, args.max_classes, args.timeout, methods, args.records)))
        return
    sys.path.insert(0, str(ROOT / "workflow"))
    table = pd.DataFrame(measure(args.repeats, classes, methods=methods, records=args.records))
    if args.baseline:
        before = baseline(
            args.baseline,
            args.repeats,
            classes,
            args.baseline_max_classes,
            args.baseline_timeout,
            methods,
            args.records,
        )
        keep = ["input", "method", "ms", "iterations", "converged", "fit_nll", "test_nll", "test_ece", "timeout"]
        table = table.merge(before[keep], on=["input", "method"], how="left", suffixes=("", f"_{args.baseline}"))
    table["per_floor"] = table["ms"] / table["floor_ms"]
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 300):
        shown = table.drop(columns=[c for c in table if c.startswith("diagnostics")])
        print(shown.round(4).to_string(index=False))
        print(
            f"\nfits that raised the fit NLL: {int(table['raised'].fillna(False).astype(bool).sum())} of {len(table)}"
        )
        print(f"not converged: {int((~table['converged'].fillna(True).astype(bool)).sum())} of {len(table)}")
        for k, group in table.groupby("k"):
            print(f"K = {k}: slowest fit {group['ms'].max() / 1e3:.1f} s ({group.loc[group['ms'].idxmax(), 'method']})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False)
    if args.peers:
        peer_table = pd.DataFrame(peers(classes, args.repeats))
        print("\nprobmetrics, the same many-class inputs in the same run:")
        print(peer_table.round(4).to_string(index=False))
        if args.out:
            peer_table.to_csv(args.out.with_name(args.out.stem + "_peers.csv"), index=False)


if __name__ == "__main__":
    main()
