"""A run's tables as arrays (seeds × resamples × epochs) and the measures the claims are made of."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from trustcal.calibration.states import paper_states
from trustcal.errors import TrustcalError
from trustcal.files import read_result_csv, read_result_npz, run_key
from trustcal.measures.trust import TRUST_COLUMNS
from trustcal.training.history import best_epoch

LATE_EPOCH = 20  # "after (approximately) 20 epochs"
COMPONENTS = ("belief", "disbelief", "uncertainty")
BEFORE, AFTER = 0, 1  # calibration state index


@dataclass
class Run:
    """One training seed: the opinions as arrays, resamples × epochs × state × label.

    Index 0 of the first axis is the estimate on the whole test set, 1 … B the bootstrap
    resamples (none when no ``trust_bootstrap.npz`` is given). The last label is the network.
    """

    epochs: np.ndarray
    opinions: dict[str, np.ndarray]
    history: pd.DataFrame
    positive_evidence: np.ndarray  # epochs × state × label, whole test set

    @property
    def resamples(self) -> int:
        return self.opinions["belief"].shape[0] - 1

    def without(self, flagged: Iterable) -> Run:
        """This run with the ``flagged`` predictions left out: epochs (both calibration states), or
        (epoch, calibrated) pairs (that state only, as NaN that every measure skips)."""
        flagged = list(flagged)
        whole = [f for f in flagged if not isinstance(f, tuple)]
        keep = ~np.isin(self.epochs, whole)
        opinions = {k: v[:, keep].copy() for k, v in self.opinions.items()}
        epochs = self.epochs[keep]
        for epoch, calibrated in (f for f in flagged if isinstance(f, tuple)):
            for v in opinions.values():
                v[:, epochs == epoch, int(bool(calibrated))] = np.nan
        return replace(self, epochs=epochs, opinions=opinions, positive_evidence=self.positive_evidence[keep])


def run_from_tables(trust: pd.DataFrame, history: pd.DataFrame, replicates: Mapping | None = None) -> Run:
    """A :class:`Run` from one seed's ``trust.csv`` rows, ``history.csv`` and optional bootstrap arrays."""
    t = paper_states(trust).assign(label=lambda d: d["label"].astype(str))
    t = t.drop(columns=[c for c in ("calibrator",) if c in t])
    epochs = np.array(sorted(t["epoch"].astype(int).unique()))
    classes = sorted((x for x in t["label"].unique() if x != "network"), key=int)
    labels = classes + ["network"]
    index = pd.MultiIndex.from_product([epochs, [False, True], labels], names=["epoch", "calibrated", "label"])
    t = t.set_index(["epoch", "calibrated", "label"])
    if not t.index.is_unique:
        raise TrustcalError("trust table: more than one row for an (epoch, calibrated, label)")
    t = t.reindex(index)
    shape = (len(epochs), 2, len(labels))
    opinions = {c: t[c].to_numpy(float).reshape(shape)[None] for c in COMPONENTS}
    if replicates is not None:
        rep_epochs = np.asarray(replicates["epochs"])
        pos = {int(e): i for i, e in enumerate(rep_epochs)}
        if not set(epochs) <= set(pos):
            raise TrustcalError("trust_bootstrap.npz lacks epochs of trust.csv; rerun rule trust_bootstrap")
        take = [pos[int(e)] for e in epochs]
        for c in COMPONENTS:  # file: epochs × state × B × labels → B × epochs × state × labels
            rep = np.asarray(replicates[c], dtype=float)[take].transpose(2, 0, 1, 3)
            opinions[c] = np.concatenate([opinions[c], rep], axis=0)
    pos_ev = t["positive_evidence"].to_numpy(float).reshape(shape)
    return Run(epochs, opinions, history.sort_values("epoch").reset_index(drop=True), pos_ev)


def curve(run: Run, component: str, state: int) -> np.ndarray:
    """Label-mean of the class opinions: resamples × epochs (NaN where predictions are left out)."""
    return run.opinions[component][:, :, state, :-1].mean(axis=-1)


def _window(run: Run, first: int = 1, last: int | None = None) -> np.ndarray:
    return (run.epochs >= first) & (run.epochs <= (last if last is not None else math.inf))


def _mean(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """Mean along ``axis`` of the values present (NaN: left out); NaN over an empty window."""
    if x.shape[axis] == 0:
        return np.full(x.shape[:axis] + x.shape[axis + 1 :], math.nan)
    return np.nanmean(x, axis=axis)


def _const(run: Run, value: float) -> np.ndarray:
    return np.full(run.resamples + 1, float(value))


def level(component, state, first=1, last=None):
    """Mean over epochs [first, last] of the label-mean curve."""
    return lambda run: _mean(curve(run, component, state)[:, _window(run, first, last)])


def label_peak(component, state, first=1, last=None):
    """Largest value of any single label over epochs [first, last] ("for some labels")."""

    def measure(run):
        x = run.opinions[component][:, _window(run, first, last), state, :-1]
        return np.nanmax(x, axis=(1, 2))

    return measure


def spread(component, state, first=1):
    """Range (max − min) over epochs ≥ first of the label-mean curve: 0 for a constant curve."""

    def measure(run):
        x = curve(run, component, state)[:, _window(run, first)]
        return np.nanmax(x, axis=1) - np.nanmin(x, axis=1)

    return measure


def change(component, state, first_late: int | None = None):
    """The label-mean curve late minus its first epoch. Late: the last 10 % of epochs (at least one),
    or epochs ≥ ``first_late``."""

    def measure(run):
        x = curve(run, component, state)
        if first_late is None:
            late = x[:, -max(1, int(math.ceil(0.1 * x.shape[1]))) :]
        else:
            late = x[:, _window(run, first_late)]
        return _mean(late) - x[:, 0]

    return measure


def start_gap(component):
    """|after − before| of the label-mean curve at the first epoch."""
    return lambda run: np.abs(curve(run, component, AFTER)[:, 0] - curve(run, component, BEFORE)[:, 0])


def mean_gap(component):
    """Mean over epochs of |after − before| of the label-mean curve."""
    return lambda run: _mean(np.abs(curve(run, component, AFTER) - curve(run, component, BEFORE)))


def lowest_difference(component):
    """Smallest over epochs of after − before (> 0: after above before at every epoch)."""
    return lambda run: np.nanmin(curve(run, component, AFTER) - curve(run, component, BEFORE), axis=1)


def highest_difference(component):
    """Largest over epochs of after − before (< 0: after below before at every epoch)."""
    return lambda run: np.nanmax(curve(run, component, AFTER) - curve(run, component, BEFORE), axis=1)


def stability_gain(component):
    """Range over epochs before calibration minus range after (> 0: steadier after)."""
    return lambda run: spread(component, BEFORE)(run) - spread(component, AFTER)(run)


def val_loss_minimum(history: pd.DataFrame) -> int:
    """Epoch of the minimum validation loss (the earliest on a tie)."""
    return best_epoch(history)


def gap_grows_after_minimum(history: pd.DataFrame) -> bool:
    """The validation loss rises after its minimum and the train–validation gap widens."""
    h = history.sort_values("epoch").set_index("epoch")
    best = val_loss_minimum(history)
    last = h.index[-1]
    gap = h["val_loss"] - h["train_loss"]
    return bool(best < last and gap.loc[last] > gap.loc[best])


def overfitting_onset(run: Run) -> np.ndarray:
    return _const(run, val_loss_minimum(run.history))


def final_gap(run: Run) -> np.ndarray:
    """Validation minus training loss at the last epoch (nats)."""
    h = run.history
    return _const(run, float(h["val_loss"].iloc[-1] - h["train_loss"].iloc[-1]))


def decline_after_onset(run: Run) -> np.ndarray:
    """Epoch of the highest label-mean belief before calibration minus the epoch of the validation-loss
    minimum: 0 when trust starts to fall exactly when overfitting sets in."""
    x = curve(run, "belief", BEFORE)
    return run.epochs[np.nanargmax(x, axis=1)] - float(val_loss_minimum(run.history))


def perfect_classifier_opinion(clusters: int, classes: int = 10) -> tuple[float, float]:
    """(belief, disbelief) per label of a perfect classifier (p ∈ {0, 1}) under Algorithm 1, midpoint RP, N → ∞.

    Label c: its N/K members sit in the top cluster (RP = 1 − 1/(2M)), giving
    r = N/K and s = N/(2MK); the other N(K−1)/K samples sit in the bottom
    cluster (RP = 1/(2M)), giving s = N(K−1)/(2MK). So r : s = 1/K : 1/(2M),
    b = 2M/(2M + K), d = K/(2M + K) — 2/3 and 1/3 for M = K = 10.
    """
    return 2 * clusters / (2 * clusters + classes), classes / (2 * clusters + classes)


def fmt_value(x) -> str:
    """A measured value as the verdict's tables write it: three significant digits, "–" when there is none."""
    return "–" if x is None or not np.isfinite(x) else f"{x:.3g}"


def load_runs(trust_paths: Iterable, history_paths: Iterable, bootstrap_paths: Iterable = ()) -> dict:
    """dataset → seed → :class:`Run` from ``results/{dataset}/seed{seed}/`` tables."""
    trust = {run_key(p): p for p in trust_paths}
    history = {run_key(p): p for p in history_paths}
    boot = {run_key(p): p for p in bootstrap_paths}
    if set(trust) != set(history):
        raise TrustcalError(f"trust and history tables are for different runs: {sorted(set(trust) ^ set(history))}")
    runs: dict[str, dict[int, Run]] = {}
    for key in sorted(trust):
        t = read_result_csv(trust[key], TRUST_COLUMNS, rule="trust")
        h = read_result_csv(history[key], ("epoch", "train_loss", "val_loss"), rule="train")
        reps = read_result_npz(boot[key], ("epochs", *COMPONENTS), rule="trust_bootstrap") if key in boot else None
        runs.setdefault(key[0], {})[key[1]] = run_from_tables(t, h, reps)
    return runs
