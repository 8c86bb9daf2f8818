"""Time each calibrator's fit, with its iteration count, on one core (issue 23, item 2; docs/method.md §2.9).

Inputs (validation splits, what the calibrators are fitted on):

- ``network``: 6,000 × 10 logits shaped like a trained MNIST network's: labels drawn from a
  calibrated model (softmax of class-structured logits, about 97 % accurate), shown to the
  calibrator with the overconfidence of a network trained for many epochs (logits × 2.5, a
  small per-class offset and a little class mixing), so every calibrator has something to fit;
- ``network-probs``: the same model as a probability file gives it: log max(p, PROB_FLOOR) of
  its float32 probabilities (many entries at the floor, as trustcal assess fits them);
- ``votes``: 6,000 × 10 vote fractions of a 5-tree forest (most entries exactly 0, fitted on
  log max(p, PROB_FLOOR)), the random-forest case of tests/unit/calibration/test_methods.py;
- ``digits-<model>``: the conformance corpus of tests/helpers/corpus.py (scikit-learn models on digits,
  449 × 10 validation rows): the random forest and naive Bayes as probabilities, logistic
  regression, the MLP and naive Bayes as logits (scores). These are where vector, matrix and
  Dirichlet scaling stopped at their 1,000-iteration limit before issue 23.

Reported per input and calibrator: the median CPU time of this process (``time.process_time``,
one BLAS thread: the cost on one core) over ``--repeats`` fits, the iterations, converged,
at_bound, and the fit split's NLL after the fit.

``--baseline REV`` also runs the same measurements, in the same run, with the package as it is
in git revision REV (e.g. 42ee0f0, the L-BFGS-B fits before issue 23), in a child process, and prints both.

    python benchmarks/bench_calibrators.py [--repeats 5] [--baseline REV] [--out CSV]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core, before NumPy loads
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("temperature", "vector", "matrix", "dirichlet", "histogram", "isotonic")


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def network_logits(n: int = 6000, k: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident network-like logits and labels (see the module docstring)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n)
    centres = rng.normal(0, 1.0, (k, k)) + 5.0 * np.eye(k)  # class prototypes, some classes closer than others
    z_true = centres[truth] + rng.normal(0, 1.2, (n, k))
    c = softmax(z_true).cumsum(axis=1)
    c[:, -1] = 1.0
    y = (c > rng.random((n, 1))).argmax(axis=1)  # labels drawn from the calibrated model
    mixing = np.eye(k) + rng.normal(0, 0.05, (k, k))
    return 2.5 * z_true @ mixing.T + rng.normal(0, 0.3, k), y


def inputs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name → (validation logits, labels); probability inputs as log max(p, PROB_FLOOR)."""
    from trustcal.numerics import floored_log

    sys.path.insert(0, str(ROOT / "tests"))
    import corpus

    z, y = network_logits()
    p32 = softmax(z).astype(np.float32).astype(np.float64)
    p_votes, y_votes = corpus.vote_fractions(6000, 10, 5, seed=0)
    found = {"network": (z, y), "network-probs": (floored_log(p32), y), "votes": (floored_log(p_votes), y_votes)}
    for classifier in ("forest", "naive_bayes", "logistic", "mlp"):
        m = corpus.train("digits", classifier)
        if classifier in ("forest", "naive_bayes"):
            found[f"digits-{classifier}-probs"] = (floored_log(m.p_val), m.y_val)
        if m.s_val is not None:
            found[f"digits-{classifier}"] = (m.s_val, m.y_val)
    return found


def measure(repeats: int) -> list[dict]:
    from threadpoolctl import threadpool_limits

    from trustcal.calibration import fit_calibrator
    from trustcal.numerics import mean_nll

    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (z, y) in inputs().items():
            for method in METHODS:
                times = []
                for _ in range(repeats):
                    start = time.process_time()
                    cal = fit_calibrator(method, z, y)
                    times.append(time.process_time() - start)
                s = cal.summary()
                detail = [code for code, _ in cal.diagnostics()] if hasattr(cal, "diagnostics") else []
                rows.append(
                    dict(
                        input=name,
                        n=len(z),
                        method=method,
                        ms=1e3 * float(np.median(times)),
                        iterations=s["iterations"],
                        converged=s["converged"],
                        at_bound=s["at_bound"],
                        fit_nll=mean_nll(cal.predict_proba(z), y),
                        diagnostics=";".join(detail),
                    )
                )
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def baseline(rev: str, repeats: int) -> pd.DataFrame:
    """The same measurements with workflow/trustcal as in git revision ``rev``, in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "workflow/trustcal"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "workflow"), BENCH_JSON="1")
        out = subprocess.run(
            [sys.executable, __file__, "--repeats", str(repeats), "--json"], env=env, check=True, capture_output=True
        ).stdout
    return pd.DataFrame(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", help="git revision to measure too, in the same run (e.g. HEAD)")
    parser.add_argument("--out", type=Path, help="CSV of the table")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the baseline's child process
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.repeats)))
        return
    sys.path.insert(0, str(ROOT / "workflow"))
    table = pd.DataFrame(measure(args.repeats))
    if args.baseline:
        before = baseline(args.baseline, args.repeats)
        table = table.merge(before, on=["input", "n", "method"], suffixes=("", f"_{args.baseline}"))
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 200):
        print(table.drop(columns=[c for c in table if c.startswith("diagnostics")]).round(4).to_string(index=False))
        slow = table[table["ms"] > 100]
        print(f"\nslowest fit: {table['ms'].max():.0f} ms; fits over 100 ms: {len(slow)}")
        print(f"not converged: {int((~table['converged'].astype(bool)).sum())} of {len(table)}")
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
