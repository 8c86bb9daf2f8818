"""``calibration/{calibrator}.npz`` and the rows of ``calibration.csv``: one calibrator fitted per epoch.

Every epoch's calibrator is fitted on one split's logits (the validation split, or the test split
as the author did) and its state saved, so the trust, score and bootstrap stages apply exactly
the fitted map (docs/method.md §2). The NLL before and after is reported on the fit split and
on the validation split.
"""

from __future__ import annotations

import numpy as np

from trustcal.calibration.base import Calibrator
from trustcal.calibration.methods import calibrator_class, calibrator_from_state, fit_calibrator
from trustcal.calibration.temperature import T_MAX, T_MIN
from trustcal.numerics import logits_nll

CALIBRATION_COLUMNS = (
    "epoch",
    "calibrator",
    "temperature",
    "val_nll_before",
    "val_nll_after",
    "converged",
    "at_bound",
    "fit_split",
    "fit_nll_before",
    "fit_nll_after",
    "iterations",
    "parameters",
    "identity_fallback",  # the fit raised the fit split's NLL, so the identity map is used (docs/method.md §2.12)
    "odir_lambda",  # matrix and Dirichlet scaling: ODIR's weights as fitted (chosen or given, §2.7); NaN otherwise
    "odir_mu",
)
SPLITS = {"validation": "val", "test": "test"}  # config calibration.fit_on → the logits' key prefix
WORSE_ON_TEST = "calibrator_worse_on_test"  # the warning code of :func:`worse_on_test`


def calibration_row(
    epoch: int,
    d: dict[str, np.ndarray],
    method: str = "temperature",
    split: str = "val",
    *,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    options: dict | None = None,
) -> tuple[dict, Calibrator]:
    """``method`` fitted on ``d[f"{split}_logits"]``: the row of calibration.csv and the calibrator."""
    cal = fit_calibrator(
        method, d[f"{split}_logits"], d[f"{split}_labels"], t_min=t_min, t_max=t_max, **(options or {})
    )

    def nlls(s):
        logits, labels = d[f"{s}_logits"], d[f"{s}_labels"]
        return logits_nll(logits, labels), cal.nll(logits, labels)

    fit_before, fit_after = nlls(split)
    val_before, val_after = nlls("val")
    summary = cal.summary()
    row = dict(
        epoch=epoch,
        calibrator=method,
        temperature=float(summary["temperature"]),
        val_nll_before=val_before,
        val_nll_after=val_after,
        converged=bool(summary["converged"]),
        at_bound=bool(summary["at_bound"]),
        fit_split=split,
        fit_nll_before=fit_before,
        fit_nll_after=fit_after,
        iterations=int(summary["iterations"]),
        parameters=int(summary["parameters"]),
        identity_fallback=bool(summary["identity_fallback"]),
        odir_lambda=float(getattr(cal, "odir_lambda", np.nan)),
        odir_mu=float(getattr(cal, "odir_mu", np.nan)),
    )
    return row, cal


def save_states(states: dict[int, Calibrator]) -> dict[str, np.ndarray]:
    """The arrays of ``calibration/{method}.npz``: each epoch's state under ``epochNNN/<name>``.

    The stage writes them with :func:`trustcal.files.write_npz` (sealed with a content digest) and
    reads them back with :func:`trustcal.files.read_result_npz` (checked against it) before :func:`load_states`.
    """
    arrays = {}
    for epoch, cal in states.items():
        arrays[f"epoch{epoch:03d}/method"] = np.array(cal.method)
        for name, value in cal.state().items():
            arrays[f"epoch{epoch:03d}/{name}"] = np.asarray(value)
    return arrays


def load_states(arrays) -> dict[int, Calibrator]:
    """Epoch → calibrator, from the arrays :func:`save_states` wrote (an open npz or a dict)."""
    by_epoch: dict[int, dict[str, np.ndarray]] = {}
    for key in arrays.keys():
        prefix, _, name = key.partition("/")
        by_epoch.setdefault(int(prefix.removeprefix("epoch")), {})[name] = np.asarray(arrays[key])
    return {epoch: calibrator_from_state(str(state.pop("method")), state) for epoch, state in sorted(by_epoch.items())}


def worse_on_test(scores, calibrators, *, samples: int, classes: int, raw: str = "none") -> dict[str, dict]:
    """The calibrators of ``calibrators`` that made the test split worse than the raw model (calibrator ``raw``)
    of the same epoch in ``scores`` (the scores table: ``epoch``, ``calibrator``, ``split``, ``accuracy``,
    ``nll``): a lower accuracy, or a higher NLL beyond float64 rounding.

    Accuracies of one split are fl(count / N): two different counts differ by at least 1/N, equal counts give
    equal floats, so any lower value is a lower count. An NLL is a mean of N terms −log p, each rounded by at
    most (K + 2)·eps·(1 + term) (a log-softmax of K terms, or a log) and summed with at most N·eps relative
    error, so two NLLs a and c may differ by (K + N + 2)·eps·(2 + a + c) through rounding alone
    (``samples`` = N, the largest test split; ``classes`` = K); only a rise beyond that counts.

    Returns calibrator → dict(epochs: how many epochs it was fitted on, worse: how many it made worse,
    accuracy: (epoch, raw, calibrated) of its largest accuracy drop or None, nll: the same for its largest
    NLL rise or None), in the order of ``calibrators``, for those worse in at least one epoch."""
    eps = float(np.finfo(np.float64).eps)
    test = scores[scores["split"] == "test"]
    base = test[test["calibrator"] == raw].set_index("epoch")
    found = {}
    for name in dict.fromkeys(calibrators):
        if name == raw:
            continue
        rows = test[test["calibrator"] == name].set_index("epoch")
        rows = rows[rows.index.isin(base.index)]
        worse, acc, nll = 0, None, None
        for epoch, row in rows.iterrows():
            a_raw, a_cal = float(base.at[epoch, "accuracy"]), float(row["accuracy"])
            n_raw, n_cal = float(base.at[epoch, "nll"]), float(row["nll"])
            rounding = (classes + samples + 2) * eps * (2 + abs(n_raw) + abs(n_cal))
            lower, higher = a_cal < a_raw, n_cal > n_raw + rounding
            worse += lower or higher
            if lower and (acc is None or a_raw - a_cal > acc[1] - acc[2]):
                acc = (int(epoch), a_raw, a_cal)
            if higher and (nll is None or n_cal - n_raw > nll[2] - nll[1]):
                nll = (int(epoch), n_raw, n_cal)
        if worse:
            found[name] = dict(epochs=len(rows), worse=worse, accuracy=acc, nll=nll)
    return found


def worse_on_test_sentence(name: str, found: dict) -> str:
    """One calibrator of :func:`worse_on_test`, in words with its numbers."""
    what = calibrator_class(name).name if _known(name) else name
    changes = []
    for key, label in (("accuracy", "accuracy"), ("nll", "NLL")):
        if found[key] is not None:
            epoch, before, after = found[key]
            changes.append(
                f"{label} {before:.4f} → {after:.4f}" + ("" if found["epochs"] == 1 else f" (epoch {epoch})")
            )
    where = "" if found["epochs"] == 1 else f" in {found['worse']} of {found['epochs']} epochs; worst"
    return (
        f"calibrator '{name}' ({what}) made the test predictions worse than the uncalibrated model's{where}: "
        + ", ".join(changes)
    )


def _known(name: str) -> bool:
    try:
        calibrator_class(name)
    except ValueError:
        return False
    return True
