"""The reproduction verdict: every result statement of the paper (Ouattara §7, with the abstract and
conclusion where they speak of these experiments) against our tables, with its uncertainty.

**Claims.** Each quantitative or directional statement is a :class:`Claim` with the paper's words
(``quote``), what we measure and a decision rule. Before- and after-calibration statements are
separate claims. A measure is computed per training seed from ``trust.csv`` (per-label opinions),
``history.csv`` (losses) and, when present, ``trust_bootstrap.npz`` (the same opinions on resamples
of the test set, :mod:`trustcal.measures.bootstrap`); measures are vectorised over those resamples.

**Uncertainty.** Over seeds: mean ± sd (n seeds). Over test samples: the percentile interval of the
seed mean over the bootstrap resamples (the same resamples for every seed: one test set). The two
are independent sources, so the decision interval adds their half-widths in quadrature::

    lo = mean − √((mean − q_lo)² + (t·sd/√n)²),   hi = mean + √((q_hi − mean)² + (t·sd/√n)²)

with q the bootstrap quantiles and t Student's 97.5 % quantile with n − 1 degrees of freedom (no
seed term for one seed). Claims about the training history have no test-set term.

**Decision** (an equivalence test on that interval): *reproduced* when the whole interval lies in the
claim's band (``near``: paper value ± tolerance; ``at_most``: ≤ bound; ``at_least``: ≥ bound), *not
reproduced* when it lies wholly outside, *inconclusive* when it straddles an edge. Each seed is also
decided on its own bootstrap interval; seeds that disagree are named. A claim is *not comparable* when
its dataset is not in the run, the run is too short, or the paper's number cannot come from the
algorithm it describes.

**Tolerances.** Opinion masses ± ``MASS_TOLERANCE`` = 0.05: the paper's values are read off line plots
of ten overlapping label curves and given to two decimals. Per-label statements use the mean over the
ten class opinions (not the network opinion).
"""

from __future__ import annotations

import html
import math
import re
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from trustcal.measures.bootstrap import percentile_interval
from trustcal.errors import TrustcalError
from trustcal.files import atomic_path, read_csv, read_npz, write_csv
from trustcal.measures.trust import TRUST_COLUMNS

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_COMPARABLE = (
    "reproduced", "not reproduced", "inconclusive", "not comparable")
MASS_TOLERANCE = 0.05  # opinion masses read off the paper's figures
ONSET_TOLERANCE = 5  # epochs: "after around 10 epochs" on a 100-epoch axis
GAP_TOLERANCE = 0.10  # nats: "training and validation losses remain low and close"
LATE_EPOCH = 20  # "after (approximately) 20 epochs"
COMPONENTS = ("belief", "disbelief", "uncertainty")
BEFORE, AFTER = 0, 1  # calibration state index

# The paper's setup (docs/method.md §1–3); a run that differs is flagged in the verdict.
PAPER_SETTINGS = {
    "epochs": 100, "clusters": 10, "weight": 2.0, "alpha": 1.0, "beta": 1.0, "base_rate": 0.5,
    "representative": "midpoint", "cluster_fusion": "cumulative", "class_fusion": "cumulative",
}
UNCERTAINTY_REASON = (
    "u = W/(W + r + s) with the evidence counted over the whole test set (10,000 samples, W = 2) is "
    "of order 0.001; 0.12–0.17 cannot come from Algorithm 1 as the paper states it"
)
VERDICT_COLUMNS = (
    "claim_id", "dataset", "section", "claim", "quote", "paper", "paper_value", "measured_mean", "measured_sd",
    "n_seeds", "boot_lo", "boot_hi", "interval_lo", "interval_hi", "per_seed", "seed_verdicts", "tolerance",
    "decision_rule", "verdict", "reason", "measure", "without_flagged", "verdict_without_flagged",
)
# Student's t, 97.5 % quantile, by degrees of freedom (Abramowitz & Stegun, Table 26.10)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        15: 2.131, 20: 2.086, 30: 2.042}


def t975(df: int) -> float:
    """Student's t 97.5 % quantile (the next smaller tabulated df above 10; 1.96 beyond 30)."""
    if df < 1:
        return math.nan
    if df > 30:
        return 1.96
    return T975[max(k for k in T975 if k <= df)]


# --------------------------------------------------------------------------- one seed's data


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

    def without(self, flagged: Iterable) -> "Run":
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
    t = trust.assign(label=trust["label"].astype(str),
                     calibrated=trust["calibrated"].astype(str).str.lower() == "true")
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


# --------------------------------------------------------------------------- measures (vectorised)
# A measure maps a Run to one value per resample (shape B + 1); index 0 is the estimate.


def curve(run: Run, component: str, state: int) -> np.ndarray:
    """Label-mean of the class opinions: resamples × epochs (NaN where predictions are left out)."""
    return run.opinions[component][:, :, state, :-1].mean(axis=-1)


def _window(run: Run, first: int = 1, last: int | None = None) -> np.ndarray:
    return (run.epochs >= first) & (run.epochs <= (last if last is not None else math.inf))


def _mean(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """Mean along ``axis`` of the values present (NaN: left out); NaN over an empty window."""
    if x.shape[axis] == 0:
        return np.full(x.shape[:axis] + x.shape[axis + 1:], math.nan)
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
            late = x[:, -max(1, int(math.ceil(0.1 * x.shape[1]))):]
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
    h = history.sort_values("epoch")
    return int(h.loc[h["val_loss"].astype(float).idxmin(), "epoch"])


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


# --------------------------------------------------------------------------- claims


@dataclass(frozen=True)
class Claim:
    id: str
    dataset: str
    section: str
    quote: str  # the paper's words
    text: str  # the claim in ours
    paper: str  # the paper's number or direction as stated
    measure_text: str  # what we compute, in words
    measure: Callable[[Run], np.ndarray]
    kind: str = "near"  # near (target ± tolerance), at_most (≤ target), at_least (≥ target)
    target: float = math.nan
    tolerance: float = MASS_TOLERANCE
    min_epochs: int = 1  # fewer epochs in the run: not comparable
    versus: str | None = None  # another dataset: the value is this dataset's minus that one's
    requires: Callable[[pd.DataFrame], bool] | None = None  # an extra per-seed condition on the history
    requires_text: str = ""
    from_history: bool = False  # a claim about the losses: no test-set resampling
    uses_history: bool = False  # the measure reads the training history
    not_comparable: str | None = None  # a reason that holds whatever the numbers
    also: tuple[str, ...] = ()  # other sentences of the paper (abstract, conclusion) this claim tests

    def __post_init__(self):
        if self.from_history:
            object.__setattr__(self, "uses_history", True)

    @property
    def band(self) -> tuple[float, float]:
        if self.kind == "near":
            return self.target - self.tolerance, self.target + self.tolerance
        if self.kind == "at_most":
            return -math.inf, self.target
        if self.kind == "at_least":
            return self.target, math.inf
        raise ValueError(f"unknown claim kind {self.kind!r}")


ABSTRACT_IMPROVED = "Abstract: “post-calibration results indicate improved trustworthiness”"
CONCLUSION_IMPROVED = ("§8: “improvements in trust, disbelief, and uncertainty metrics after calibration”")
CONCLUSION_STABLE = ("§8: “maintaining stable trustworthiness over time, particularly when applied to "
                     "calibrated models”")
INTRO_STABLE_QUOTE = "“the post-calibration curves exhibit greater stability”"
INTRO_STABLE = f"§7: {INTRO_STABLE_QUOTE}"
OVERALL_QUOTE = ("“Overall, the results show that temperature scaling significantly improved the stability of "
                 "the trustworthiness metrics, maintaining higher trust and lower disbelief and uncertainty, "
                 "compared to the pre-calibration network”")
OVERALL = f"§7.2: {OVERALL_QUOTE}"


def _near(id, ds, section, quote, text, value, measure_text, measure, **kw):
    return Claim(id, ds, section, quote, text, f"≈ {value:g}", measure_text, measure, "near", value, **kw)


def _constant(id, ds, section, quote, text, component, state, first=1, **kw):
    when = "all epochs" if first == 1 else f"epochs ≥ {first}"
    return Claim(id, ds, section, quote, text, "constant", f"range (max − min) over {when} of the label-mean "
                 f"{component} {'after' if state else 'before'} calibration", spread(component, state, first),
                 "at_most", MASS_TOLERANCE, **kw)


def _mnist_claims() -> list[Claim]:
    ds, s71, s73 = "mnist", "§7.1", "§7.3"
    start = "“Before calibration, trust started at a similar level as post-calibration (around 0.65)”"
    return [
        _near("mnist_trust_start_before", ds, s71, start, "MNIST, before calibration: trust starts around 0.65",
              0.65, "label-mean belief before calibration at epoch 1", level("belief", BEFORE, 1, 1)),
        Claim("mnist_trust_start_similar", ds, s71, start,
              "MNIST: trust starts at the same level before and after calibration", "similar",
              "|after − before| of the label-mean belief at epoch 1", start_gap("belief"), "at_most", MASS_TOLERANCE),
        Claim("mnist_trust_falls_before", ds, s71, "“but as the training progressed, trust values decreased”",
              "MNIST, before calibration: trust decreases as training progresses", "decreases",
              "label-mean belief before calibration, last 10 % of epochs minus epoch 1", change("belief", BEFORE),
              "at_most", -MASS_TOLERANCE, min_epochs=10),
        _near("mnist_trust_after", ds, s71, "“(around 0.65) … In contrast, after calibration, trust remained constant”",
              "MNIST, after calibration: trust stays around 0.65", 0.65,
              "mean over all epochs of the label-mean belief after calibration", level("belief", AFTER)),
        _constant("mnist_trust_after_constant", ds, s71, "“after calibration, trust remained constant”",
                  "MNIST, after calibration: trust is constant over training", "belief", AFTER, min_epochs=10,
                  also=(CONCLUSION_STABLE,)),
        Claim("mnist_trust_after_above_before", ds, s71,
              "“temperature scaling helped the network maintain a higher and more consistent level of trust”",
              "MNIST: trust is higher after calibration than before, at every epoch", "higher",
              "smallest over epochs of (after − before) label-mean belief", lowest_difference("belief"),
              "at_least", 0.0, also=(ABSTRACT_IMPROVED, CONCLUSION_IMPROVED, OVERALL)),
        Claim("mnist_trust_steadier_after", ds, s71, "“a higher and more consistent level of trust”",
              "MNIST: trust varies less over training after calibration than before", "more consistent",
              "range over epochs of the label-mean belief, before minus after", stability_gain("belief"),
              "at_least", 0.0, min_epochs=10, also=(INTRO_STABLE,)),
        Claim("mnist_disbelief_rises_before", ds, s71,
              "“Before calibration, disbelief started low but increased as the number of training epochs grew”",
              "MNIST, before calibration: disbelief increases over training", "increases",
              "label-mean disbelief before calibration, last 10 % of epochs minus epoch 1", change("disbelief", BEFORE),
              "at_least", MASS_TOLERANCE, min_epochs=10),
        _near("mnist_disbelief_after", ds, s71, "“after calibration, disbelief remained constant and stable at around 0.35”",
              "MNIST, after calibration: disbelief stays around 0.35", 0.35,
              "mean over all epochs of the label-mean disbelief after calibration", level("disbelief", AFTER)),
        _constant("mnist_disbelief_after_constant", ds, s71, "“after calibration, disbelief remained constant and stable”",
                  "MNIST, after calibration: disbelief is constant over training", "disbelief", AFTER, min_epochs=10),
        Claim("mnist_disbelief_after_below_before", ds, "§7.2 (Overall)", OVERALL_QUOTE,
              "MNIST: disbelief is lower after calibration than before, at every epoch", "lower",
              "largest over epochs of (after − before) label-mean disbelief", highest_difference("disbelief"),
              "at_most", 0.0, also=(CONCLUSION_IMPROVED,)),
        Claim("mnist_uncertainty_start_similar", ds, s71,
              "“uncertainty began at a comparable point before and after calibration”",
              "MNIST: uncertainty starts at the same level before and after calibration", "comparable",
              "|after − before| of the label-mean uncertainty at epoch 1", start_gap("uncertainty"),
              "at_most", MASS_TOLERANCE),
        Claim("mnist_uncertainty_rises_before", ds, s71, "“without calibration, uncertainty tended to increase”",
              "MNIST, before calibration: uncertainty increases over training", "increases",
              "label-mean uncertainty before calibration, last 10 % of epochs minus epoch 1 (direction only: "
              "our u is ~100× smaller than the paper's)", change("uncertainty", BEFORE), "at_least", 0.0,
              tolerance=0.0, min_epochs=10),
        _constant("mnist_uncertainty_after_stable", ds, s71, "“Post-calibration, uncertainty remained low and stable”",
                  "MNIST, after calibration: uncertainty is stable", "uncertainty", AFTER, min_epochs=10),
        Claim("mnist_uncertainty_after_below_before", ds, "§7.2 (Overall)", OVERALL_QUOTE,
              "MNIST: uncertainty is lower after calibration than before, at every epoch", "lower",
              "largest over epochs of (after − before) label-mean uncertainty", highest_difference("uncertainty"),
              "at_most", 0.0, tolerance=0.0, also=(CONCLUSION_IMPROVED,)),
        Claim("mnist_little_overfitting", ds, f"{s73} (Fig. 3a)",
              "“both training and validation losses remain low and close to each other throughout the training "
              "process, indicating little to no overfitting”",
              "MNIST: training and validation losses stay close (little to no overfitting)", "close",
              "validation minus training loss at the last epoch (nats)", final_gap, "at_most", GAP_TOLERANCE,
              tolerance=GAP_TOLERANCE, min_epochs=10, from_history=True),
        Claim("mnist_little_difference", ds, s73,
              "“there is little difference in behavior between the pre- and post-calibration models”",
              "MNIST: before- and after-calibration trust hardly differ", "little difference",
              "mean over epochs of |after − before| label-mean belief", mean_gap("belief"), "at_most", MASS_TOLERANCE),
        _constant("mnist_trust_before_constant", ds, s73,
                  "“trust remains relatively constant throughout training for both models”",
                  "MNIST, before calibration: trust is constant over training", "belief", BEFORE, min_epochs=10),
        Claim("mnist_smaller_difference_than_cifar10", ds, s73,
              "“The difference between the pre- and post-calibration models is less pronounced because the MNIST "
              "task is simpler”", "MNIST: calibration changes trust less than on CIFAR-10", "less pronounced",
              "mean over epochs of |after − before| label-mean belief, MNIST minus CIFAR-10", mean_gap("belief"),
              "at_most", 0.0, tolerance=0.0, versus="cifar10"),
        Claim("mnist_disbelief_minimal", ds, s73, "“disbelief and uncertainty are minimal”",
              "MNIST: disbelief and uncertainty are minimal", "minimal",
              "mean over epochs of the label-mean disbelief before calibration", level("disbelief", BEFORE),
              not_comparable="“minimal” has no reference value; see the disbelief levels above (≈ 0.35 is "
              "what the paper itself reports after calibration)"),
    ]


def _cifar_claims() -> list[Claim]:
    ds, s72, s73, late = "cifar10", "§7.2", "§7.3", LATE_EPOCH
    w = f"epochs ≥ {late}"
    trust_start = "“Both pre- and post-calibration trust curves began at similar values (at around 0.7)”"
    dis_start = "“Both pre- and post-calibration disbelief curves began at similar values, around 0.4”"
    return [
        _near("cifar10_trust_start_before", ds, s72, trust_start, "CIFAR-10, before calibration: trust starts around 0.7",
              0.70, "label-mean belief before calibration at epoch 1", level("belief", BEFORE, 1, 1)),
        _near("cifar10_trust_start_after", ds, s72, trust_start, "CIFAR-10, after calibration: trust starts around 0.7",
              0.70, "label-mean belief after calibration at epoch 1", level("belief", AFTER, 1, 1)),
        _near("cifar10_trust_peak_before", ds, s72,
              "“the increase a little bit for some labels to reach around 0.75 for pre calibration”",
              "CIFAR-10, before calibration: some labels' trust rises to about 0.75 early on", 0.75,
              f"highest belief of any label before calibration over epochs ≤ {late}",
              label_peak("belief", BEFORE, 1, late), min_epochs=late),
        _near("cifar10_trust_peak_after", ds, s72, "“and 0.82 for post calibration”",
              "CIFAR-10, after calibration: some labels' trust rises to about 0.82 early on", 0.82,
              f"highest belief of any label after calibration over epochs ≤ {late}",
              label_peak("belief", AFTER, 1, late), min_epochs=late),
        _near("cifar10_trust_before_late", ds, f"{s72}, {s73}",
              "“without calibration, as training continued, trust decreased to reach 0.48 after 20 epochs”",
              "CIFAR-10, before calibration: trust falls to about 0.48 by epoch ~20", 0.48,
              f"mean over {w} of the label-mean belief before calibration", level("belief", BEFORE, late),
              min_epochs=late),
        _constant("cifar10_trust_before_late_constant", ds, s72, "“and remains constant”",
                  "CIFAR-10, before calibration: trust stays constant after epoch ~20", "belief", BEFORE, late,
                  min_epochs=30),
        _near("cifar10_trust_after_late", ds, f"{s72}, {s73}",
              "“After calibration, trust decreases a little to come back to the initial value 0.7 after around "
              "20 epochs”", "CIFAR-10, after calibration: trust comes back to about 0.7 by epoch ~20", 0.70,
              f"mean over {w} of the label-mean belief after calibration", level("belief", AFTER, late),
              min_epochs=late),
        _constant("cifar10_trust_after_late_constant", ds, f"{s72}, {s73}", "“and then remained constant”",
                  "CIFAR-10, after calibration: trust stays constant after epoch ~20", "belief", AFTER, late,
                  min_epochs=30, also=(CONCLUSION_STABLE,)),
        _near("cifar10_disbelief_start_before", ds, s72, dis_start,
              "CIFAR-10, before calibration: disbelief starts around 0.4", 0.40,
              "label-mean disbelief before calibration at epoch 1", level("disbelief", BEFORE, 1, 1)),
        _near("cifar10_disbelief_start_after", ds, s72, dis_start,
              "CIFAR-10, after calibration: disbelief starts around 0.4", 0.40,
              "label-mean disbelief after calibration at epoch 1", level("disbelief", AFTER, 1, 1)),
        Claim("cifar10_disbelief_rises_before", ds, s72,
              "“Before calibration, disbelief gradually increased as training progressed”",
              "CIFAR-10, before calibration: disbelief increases over training", "increases",
              f"label-mean disbelief before calibration, mean over {w} minus epoch 1",
              change("disbelief", BEFORE, late), "at_least", MASS_TOLERANCE, min_epochs=late),
        _near("cifar10_disbelief_before_late", ds, f"{s72}, {s73}",
              "“reaching a peak of 0.58 after approximately 20 epochs”",
              "CIFAR-10, before calibration: disbelief peaks at about 0.58 after epoch ~20", 0.58,
              f"mean over {w} of the label-mean disbelief before calibration", level("disbelief", BEFORE, late),
              min_epochs=late),
        _constant("cifar10_disbelief_before_late_constant", ds, s72,
                  "“where it remained relatively constant for the rest of the training”",
                  "CIFAR-10, before calibration: disbelief stays constant after epoch ~20", "disbelief", BEFORE,
                  late, min_epochs=30),
        _near("cifar10_disbelief_after_late", ds, s72,
              "“then decreased steadily to return to the initial value of 0.4 around the 20th epoch”",
              "CIFAR-10, after calibration: disbelief returns to about 0.4 by epoch ~20", 0.40,
              f"mean over {w} of the label-mean disbelief after calibration", level("disbelief", AFTER, late),
              min_epochs=late),
        _constant("cifar10_disbelief_after_late_constant", ds, s72, "“It remained stable thereafter”",
                  "CIFAR-10, after calibration: disbelief stays constant after epoch ~20", "disbelief", AFTER, late,
                  min_epochs=30),
        Claim("cifar10_uncertainty_levels", ds, s72,
              "“uncertainty curves also started at similar values, around 0.12 … peaking at approximately 0.17 "
              "… dropped back to the original level of 0.12”",
              "CIFAR-10: uncertainty starts around 0.12, peaks at about 0.17 before calibration", "0.12–0.17",
              "mean over epochs of the label-mean uncertainty before calibration", level("uncertainty", BEFORE),
              not_comparable=UNCERTAINTY_REASON),
        Claim("cifar10_uncertainty_rises_before", ds, s72,
              "“Before calibration, uncertainty increased slightly during the early training epochs, peaking … "
              "after 20 epochs, and remained at that level”",
              "CIFAR-10, before calibration: uncertainty increases over training", "increases",
              f"label-mean uncertainty before calibration, mean over {w} minus epoch 1 (direction only: our u "
              "is ~100× smaller than the paper's)", change("uncertainty", BEFORE, late), "at_least", 0.0,
              tolerance=0.0, min_epochs=late),
        Claim("cifar10_trust_after_above_before", ds, f"{s72}, {s73}",
              "“maintaining higher trustworthiness throughout the training”",
              "CIFAR-10: trust is higher after calibration than before, at every epoch", "higher",
              "smallest over epochs of (after − before) label-mean belief", lowest_difference("belief"),
              "at_least", 0.0, also=(ABSTRACT_IMPROVED, CONCLUSION_IMPROVED, OVERALL)),
        Claim("cifar10_disbelief_after_below_before", ds, f"{s72}, {s73}",
              "“disbelief and uncertainty also stabilize at much lower levels compared to the pre-calibration "
              "model”", "CIFAR-10: disbelief is lower after calibration than before, at every epoch", "lower",
              "largest over epochs of (after − before) label-mean disbelief", highest_difference("disbelief"),
              "at_most", 0.0, also=(CONCLUSION_IMPROVED, OVERALL)),
        Claim("cifar10_uncertainty_after_below_before", ds, f"{s72}, {s73}",
              "“disbelief and uncertainty also stabilize at much lower levels compared to the pre-calibration "
              "model”", "CIFAR-10: uncertainty is lower after calibration than before, at every epoch", "lower",
              "largest over epochs of (after − before) label-mean uncertainty", highest_difference("uncertainty"),
              "at_most", 0.0, tolerance=0.0, also=(CONCLUSION_IMPROVED, OVERALL)),
        Claim("cifar10_trust_steadier_after", ds, "§7, §7.2", INTRO_STABLE_QUOTE,
              "CIFAR-10: trust varies less over training after calibration than before", "greater stability",
              "range over epochs of the label-mean belief, before minus after", stability_gain("belief"),
              "at_least", 0.0, min_epochs=late, also=(CONCLUSION_STABLE,)),
        Claim("cifar10_overfitting_onset", ds, f"{s73} (Fig. 3b)",
              "“the model requires around 10 epochs to be well-trained. After this point … the model begins to "
              "overfit, as indicated by the increasing gap between the training and validation losses”",
              "CIFAR-10: the model overfits after about 10 epochs", "≈ 10 epochs",
              "epoch of the minimum validation loss (history.csv)", overfitting_onset, "near", 10.0,
              tolerance=ONSET_TOLERANCE, min_epochs=late, requires=gap_grows_after_minimum,
              requires_text="and in every seed the validation loss rises after its minimum with a widening "
              "train–val gap", from_history=True),
        Claim("cifar10_decline_with_overfitting", ds, s73,
              "“[the metrics] deteriorate sharply for the pre-calibration model after about 10 epochs. "
              "Specifically, trust decreases … as overfitting sets in”",
              "CIFAR-10, before calibration: trust starts to fall when overfitting sets in", "coincide",
              "epoch of the highest label-mean belief before calibration minus the epoch of the validation-loss "
              "minimum", decline_after_onset, "near", 0.0, tolerance=ONSET_TOLERANCE, min_epochs=late,
              uses_history=True),
    ]


CLAIMS: tuple[Claim, ...] = tuple(_mnist_claims() + _cifar_claims())


@dataclass(frozen=True)
class Tension:
    """Two or more statements of the paper that cannot all hold on the same run."""

    claims: tuple[str, ...]
    text: str
    paper_only: bool = False  # the paper's numbers alone show it: stated whatever the run


TENSIONS: tuple[Tension, ...] = (
    Tension(("mnist_trust_falls_before", "mnist_trust_before_constant", "mnist_little_overfitting"),
            "§7.1 says MNIST trust before calibration decreases as training progresses; §7.3 says it “remains "
            "relatively constant throughout training for both models” because there is “little to no "
            "overfitting”. A curve cannot both fall by more than the tolerance and stay within it."),
    Tension(("mnist_trust_falls_before", "mnist_uncertainty_rises_before"),
            "§7.1: before calibration trust falls while uncertainty rises. Under Algorithm 1 b = (r_c/W)·u "
            "with r_c fixed (below), so belief and uncertainty always move in the same direction."),
    Tension(("cifar10_trust_before_late", "cifar10_uncertainty_rises_before"),
            "§7.2/§7.3: before calibration trust falls while uncertainty rises. Impossible under Algorithm 1 "
            "for the same reason."),
    Tension(("mnist_trust_after_above_before", "mnist_uncertainty_after_below_before"),
            "§7.2 (Overall) and §8: calibration gives higher trust and lower uncertainty. With b = (r_c/W)·u, "
            "higher belief means higher uncertainty."),
    Tension(("cifar10_trust_after_above_before", "cifar10_uncertainty_after_below_before"),
            "§7.2/§7.3 and §8: higher trust and lower uncertainty after calibration; impossible together, "
            "as above."),
    Tension(("cifar10_trust_start_after", "cifar10_disbelief_start_after", "cifar10_uncertainty_levels"),
            "§7.2's CIFAR-10 levels are not opinions: b + d + u = 1 always, but the paper's starting and "
            "after-calibration values sum to 0.7 + 0.4 + 0.12 = 1.22, and the before-calibration plateau to "
            "0.48 + 0.58 + 0.17 = 1.23.", paper_only=True),
)


def invariance_note(runs: Mapping[str, Mapping[int, Run]]) -> str:
    """The derivation that r_c is fixed, with the largest change of r_c measured in this run."""
    spreads = [float(np.nanmax(np.abs(r.positive_evidence - r.positive_evidence[:1, :1])))
               for seeds in runs.values() for r in seeds.values() if r.positive_evidence.size]
    measured = (f" Measured: r_c changes by at most {max(spreads):g} over all epochs, both calibration states "
                "and every seed of this run." if spreads else "")
    return (
        "Why trust and uncertainty cannot move apart under Algorithm 1: the positive evidence of cluster i "
        "is r_i = t_i, the number of its members whose true label is c, so r_c = Σ_i t_i is the number of "
        "test samples of class c, whatever the epoch or the temperature. With b = r_c/(W + r_c + s_c) and "
        "u = W/(W + r_c + s_c), b/u = r_c/W is constant: only the negative evidence s_c moves, and a larger "
        "s_c lowers b and u together (and raises d). “Trust falls while uncertainty rises” and “higher trust "
        "with lower uncertainty” cannot happen." + measured
    )


# --------------------------------------------------------------------------- evaluation


def _fmt(x) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.3g}"


def is_direction(claim: Claim) -> bool:
    """A claim about a sign (“higher”, “increases”): strictly above or below 0."""
    return claim.kind != "near" and claim.target == 0


def decide(claim: Claim, lo: float, hi: float) -> str:
    """Equivalence decision of an interval [lo, hi] against the claim's band (module docstring)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return NOT_COMPARABLE
    band_lo, band_hi = claim.band
    if is_direction(claim):  # the sign must be certain: 0 itself is outside the band
        inside = lo > 0 if claim.kind == "at_least" else hi < 0
        outside = hi <= 0 if claim.kind == "at_least" else lo >= 0
    else:
        eps = 1e-9  # 0.70 − 0.65 is 0.05000000000000004 in floating point
        inside = lo >= band_lo - eps and hi <= band_hi + eps
        outside = hi < band_lo - eps or lo > band_hi + eps
    return REPRODUCED if inside else NOT_REPRODUCED if outside else INCONCLUSIVE


def decision_rule(claim: Claim) -> str:
    if claim.not_comparable:
        return "not tested"
    lo, hi = claim.band
    if is_direction(claim):
        band = "> 0" if claim.kind == "at_least" else "< 0"
    else:
        band = {"near": f"within {_fmt(lo)} … {_fmt(hi)}", "at_most": f"≤ {claim.target:g}",
                "at_least": f"≥ {claim.target:g}"}[claim.kind]
    return f"interval {band} {claim.requires_text}".strip()


@dataclass
class Estimate:
    """One claim's value over seeds: per-seed values (seeds × resamples + 1) and their summary."""

    per_seed: dict[int, np.ndarray]
    mean: float = math.nan
    sd: float = math.nan
    n: int = 0
    boot: np.ndarray = field(default_factory=lambda: np.empty(0))  # the seed mean on each resample
    seed_halfwidth: float = 0.0

    @classmethod
    def of(cls, per_seed: dict[int, np.ndarray]) -> "Estimate":
        est = cls(per_seed)
        if not per_seed:
            return est
        values = np.stack([per_seed[s] for s in sorted(per_seed)])  # seeds × (B + 1)
        points = values[:, 0]
        est.n = len(points)
        est.mean = float(points.mean())
        est.sd = float(points.std(ddof=1)) if est.n > 1 else math.nan
        est.boot = values[:, 1:].mean(axis=0)
        est.seed_halfwidth = t975(est.n - 1) * est.sd / math.sqrt(est.n) if est.n > 1 else 0.0
        return est

    def minus(self, other: "Estimate") -> "Estimate":
        """The difference of two datasets' seed means (independent estimates)."""
        est = Estimate({})
        est.mean, est.n = self.mean - other.mean, min(self.n, other.n)
        est.sd = math.hypot(self.sd if self.n > 1 else 0.0, other.sd if other.n > 1 else 0.0)
        b = min(len(self.boot), len(other.boot))
        est.boot = self.boot[:b] - other.boot[:b]
        est.seed_halfwidth = math.hypot(self.seed_halfwidth, other.seed_halfwidth)
        return est

    def bootstrap_interval(self, level: float) -> tuple[float, float]:
        if len(self.boot) == 0 or not np.isfinite(self.boot).any():
            return math.nan, math.nan
        lo, hi = percentile_interval(self.boot, level)
        return float(lo), float(hi)

    def interval(self, level: float) -> tuple[float, float]:
        """Bootstrap and seed uncertainty added in quadrature around the mean (module docstring)."""
        if not np.isfinite(self.mean):
            return math.nan, math.nan
        blo, bhi = self.bootstrap_interval(level)
        below = max(self.mean - blo, 0.0) if np.isfinite(blo) else 0.0
        above = max(bhi - self.mean, 0.0) if np.isfinite(bhi) else 0.0
        return (self.mean - math.hypot(below, self.seed_halfwidth),
                self.mean + math.hypot(above, self.seed_halfwidth))


def _measure_runs(claim: Claim, seeds: Mapping[int, Run]) -> dict[int, np.ndarray]:
    out = {}
    for s, run in sorted(seeds.items()):
        try:
            with warnings.catch_warnings():  # all-NaN windows (left-out predictions) give NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                out[s] = np.asarray(claim.measure(run), dtype=float)
        except (KeyError, ValueError, IndexError):
            out[s] = np.full(run.resamples + 1, math.nan)
    return out


def _estimate(claim: Claim, runs: Mapping[str, Mapping[int, Run]]) -> Estimate:
    est = Estimate.of(_measure_runs(claim, runs[claim.dataset]))
    if claim.versus is not None:
        est = est.minus(Estimate.of(_measure_runs(claim, runs[claim.versus])))
    return est


def _seed_verdicts(claim: Claim, est: Estimate, level: float) -> str:
    """Per-seed decisions on each seed's own bootstrap interval; empty when every seed agrees."""
    if claim.versus is not None or len(est.per_seed) < 2:
        return ""
    decisions = {}
    for s, values in est.per_seed.items():
        if len(values) > 1 and np.isfinite(values[1:]).any():
            lo, hi = percentile_interval(values[1:], level)
        else:
            lo = hi = values[0]
        decisions[s] = decide(claim, min(lo, values[0]), max(hi, values[0]))
    if len(set(decisions.values())) == 1:
        return ""
    groups: dict[str, list[int]] = {}
    for s, d in decisions.items():
        groups.setdefault(d, []).append(s)
    return "seeds disagree: " + "; ".join(f"{d} in seed {', '.join(map(str, ss))}" for d, ss in groups.items())


def _run_epochs(seeds: Mapping[int, Run]) -> int:
    return min((int(r.epochs.max()) for r in seeds.values() if len(r.epochs)), default=0)


def evaluate_claim(claim: Claim, runs: Mapping[str, Mapping[int, Run]], level: float = 0.95) -> dict:
    """One row of the verdict (``VERDICT_COLUMNS`` except the flagged-epoch columns)."""
    row = dict(claim_id=claim.id, dataset=claim.dataset + (f" − {claim.versus}" if claim.versus else ""),
               section=claim.section, claim=claim.text, quote=claim.quote, paper=claim.paper,
               paper_value=claim.target, measured_mean=math.nan, measured_sd=math.nan, n_seeds=0,
               boot_lo=math.nan, boot_hi=math.nan, interval_lo=math.nan, interval_hi=math.nan, per_seed="",
               seed_verdicts="", tolerance=claim.tolerance, decision_rule=decision_rule(claim),
               verdict=NOT_COMPARABLE, reason="", measure=claim.measure_text)
    missing = [ds for ds in (claim.dataset, claim.versus) if ds and not runs.get(ds)]
    if missing:
        row["reason"] = f"{' and '.join(missing)} not in this run"
        return row
    est = _estimate(claim, runs)
    row.update(measured_mean=est.mean, measured_sd=est.sd, n_seeds=est.n)
    row["boot_lo"], row["boot_hi"] = est.bootstrap_interval(level)
    row["interval_lo"], row["interval_hi"] = est.interval(level)
    if est.per_seed:
        row["per_seed"] = "; ".join(f"seed {s}: {_fmt(v[0])}" for s, v in est.per_seed.items())
    epochs = min(_run_epochs(runs[ds]) for ds in (claim.dataset, claim.versus) if ds)
    notes = []
    if claim.from_history:
        notes.append("from the training history: no test-set resampling")
    elif not len(est.boot):
        notes.append("no test-set bootstrap in this run")
    if claim.not_comparable:
        row["reason"] = "; ".join([claim.not_comparable, *notes])
        return row
    if epochs < claim.min_epochs:
        row["reason"] = f"the claim needs ≥ {claim.min_epochs} epochs; this run has {epochs}"
        return row
    if not np.isfinite(est.mean):
        no_history = claim.uses_history and any(r.history.empty for r in runs[claim.dataset].values())
        row["reason"] = ("needs the training history (history.csv, or --history with trustcal assess)" if no_history
                         else "no value (no predictions in the claim's epochs)")
        return row
    verdict = decide(claim, row["interval_lo"], row["interval_hi"])
    if claim.requires is not None and verdict != NOT_REPRODUCED:
        failing = [s for s, r in runs[claim.dataset].items() if not claim.requires(r.history)]
        if failing:
            verdict = NOT_REPRODUCED
            notes.append(f"condition fails in seed {', '.join(map(str, failing))}")
    row["verdict"] = verdict
    row["seed_verdicts"] = _seed_verdicts(claim, est, level)
    row["reason"] = "; ".join(x for x in [row["seed_verdicts"], *notes] if x)
    return row


def evaluate(runs: Mapping[str, Mapping[int, Run]], claims: Sequence[Claim] = CLAIMS, level: float = 0.95,
             flagged: Mapping[str, Iterable[int]] | None = None) -> pd.DataFrame:
    """One row per claim. ``runs``: dataset → seed → :class:`Run`. ``flagged``: dataset → predictions
    that are suspect (e.g. went through softmax twice), as epochs or (epoch, calibrated) pairs: each
    claim is also evaluated without them, and one whose value depends on them says so."""
    rows = []
    flagged = {ds: list(e) for ds, e in (flagged or {}).items() if e}
    for claim in claims:
        row = evaluate_claim(claim, runs, level)
        row.update(without_flagged=math.nan, verdict_without_flagged="")
        involved = [ds for ds in (claim.dataset, claim.versus) if ds]
        bad = [f for ds in involved for f in flagged.get(ds, [])]
        if bad and all(runs.get(ds) for ds in involved):
            clean = {ds: {s: r.without(flagged.get(ds, [])) for s, r in seeds.items()} for ds, seeds in runs.items()}
            other = evaluate_claim(claim, clean, level)
            row["without_flagged"], row["verdict_without_flagged"] = other["measured_mean"], other["verdict"]
            without = f"without them {_fmt(other['measured_mean'])}, {other['verdict']}"
            if row["verdict"] == REPRODUCED and other["verdict"] != REPRODUCED:
                note = f"reproduced only with the predictions that went through softmax twice; {without}"
            elif other["verdict"] != row["verdict"] or not np.isclose(other["measured_mean"], row["measured_mean"],
                                                                        equal_nan=True):
                note = f"rests partly on predictions that went through softmax twice; {without}"
            else:
                note = ""
            row["reason"] = "; ".join(x for x in (row["reason"], note) if x)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


def describe_flagged(flagged: Iterable) -> str:
    """“before calibration: epochs 1, 10; after calibration: epoch 1” for (epoch, calibrated) pairs."""
    parts = []
    for state, name in ((False, "before calibration"), (True, "after calibration")):
        epochs = sorted(e for e, c in (f for f in flagged if isinstance(f, tuple)) if bool(c) == state)
        if epochs:
            parts.append(f"{name}: epoch{'s' if len(epochs) > 1 else ''} {', '.join(map(str, epochs))}")
    whole = sorted(f for f in flagged if not isinstance(f, tuple))
    if whole:
        parts.append(f"epochs {', '.join(map(str, whole))}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- files

RUN_RE = re.compile(r"(?:^|/)(?P<dataset>[^/]+)/seed(?P<seed>\d+)/[^/]+$")


def run_key(path: str | Path) -> tuple[str, int]:
    m = RUN_RE.search(Path(path).as_posix())
    if not m:
        raise TrustcalError(f"{path}: expected a path …/{{dataset}}/seed{{N}}/<table>")
    return m["dataset"], int(m["seed"])


def load_runs(trust_paths: Iterable, history_paths: Iterable, bootstrap_paths: Iterable = ()) -> dict:
    """dataset → seed → :class:`Run` from ``results/{dataset}/seed{seed}/`` tables."""
    trust = {run_key(p): p for p in trust_paths}
    history = {run_key(p): p for p in history_paths}
    boot = {run_key(p): p for p in bootstrap_paths}
    if set(trust) != set(history):
        raise TrustcalError(f"trust and history tables are for different runs: {sorted(set(trust) ^ set(history))}")
    runs: dict[str, dict[int, Run]] = {}
    for key in sorted(trust):
        t = read_csv(trust[key], TRUST_COLUMNS, rule="trust")
        h = read_csv(history[key], ("epoch", "train_loss", "val_loss"), rule="train")
        reps = read_npz(boot[key], ("epochs", *COMPONENTS), rule="trust_bootstrap") if key in boot else None
        runs.setdefault(key[0], {})[key[1]] = run_from_tables(t, h, reps)
    return runs


def settings_notes(settings: Mapping, datasets: Sequence[str], claims: Sequence[Claim] = CLAIMS) -> list[str]:
    """How the run differs from the paper's setup, one sentence each."""
    notes = []
    flat = {**settings, **settings.get("trust", {})}
    for key, paper in PAPER_SETTINGS.items():
        if key in flat and flat[key] != paper:
            notes.append(f"`{key}` is {flat[key]!r} here, {paper!r} in the paper")
    for ds in sorted({c.dataset for c in claims} - set(datasets)):
        notes.append(f"{ds} is not in this run")
    if settings.get("calibration", {}).get("fit_on") == "test":
        notes.append("the temperature is fitted on the test set (the author's code; leaks the test labels)")
    return notes


INTRO = (
    "Generated from every run's `trust.csv`, `history.csv` and `trust_bootstrap.npz` by `trustcal.reporting.verdict`; "
    "do not edit by hand. Every result statement of Ouattara §7 (and of the abstract and §8 where they speak "
    "of these experiments), measured on the test set."
)
DECISION_TEXT = (
    "How to read it: *Measured* is the mean over training seeds ± their sd (n seeds). *Interval* is the {pct} "
    "interval of that mean: the percentile interval over {boot} resamples of the test set, widened by the "
    "seeds' t·sd/√n in quadrature. A claim is **reproduced** when the whole interval lies inside the band "
    "of *Reproduced when*, **not reproduced** when it lies wholly outside, **inconclusive** when it "
    "straddles an edge. Opinion masses are compared within ± {tol} (read off the paper's plots, two "
    "decimals); a \"constant\" curve varies by at most {tol}; the overfitting onset ± {onset} epochs; "
    "\"close\" losses differ by at most {gap} nats."
)
HEADER = ("Claim", "Paper", "Measured (mean ± sd, n)", "Interval", "Reproduced when", "Verdict", "Note")


def _measured(r) -> str:
    text = _fmt(r.measured_mean)
    if np.isfinite(r.measured_sd):
        text += f" ± {_fmt(r.measured_sd)}"
    return f"{text} (n = {r.n_seeds})" if r.n_seeds else text


def _interval(r) -> str:
    if not (np.isfinite(r.interval_lo) and np.isfinite(r.interval_hi)):
        return "–"
    return f"[{_fmt(r.interval_lo)}, {_fmt(r.interval_hi)}]"


def _document(table: pd.DataFrame, settings: Mapping, datasets: Sequence[str], seeds: Mapping[str, Sequence[int]],
              runs: Mapping | None = None, tensions: Sequence[Tension] = TENSIONS):
    """The verdict's content, format-free: (bullets, table rows, tension notes, per-claim details, footer)."""
    counts = table["verdict"].value_counts()
    trust = settings.get("trust", {})
    boot = settings.get("bootstrap", {})
    seed_text = "; ".join(f"{ds}: seeds {', '.join(map(str, s))}" for ds, s in seeds.items()) or "–"
    bullets = [
        f"Run: {seed_text}; {settings.get('epochs', '?')} epochs; M = {settings.get('clusters', '?')} clusters, "
        f"W = {trust.get('weight', '?')}, representative {trust.get('representative', '?')}, "
        f"{trust.get('cluster_fusion', '?')}/{trust.get('class_fusion', '?')} fusion; temperature fitted on "
        f"{settings.get('calibration', {}).get('fit_on', '?')}."
    ]
    notes = settings_notes(settings, datasets)
    if notes:
        bullets.append("Differs from the paper's setup: " + "; ".join(notes) + ".")
    if settings.get("provenance"):
        bullets.append(str(settings["provenance"]))
    m = settings.get("clusters")
    if trust.get("representative", "midpoint") == "midpoint" and isinstance(m, int):
        b, d = perfect_classifier_opinion(m)
        bullets.append(
            f"Reference: with midpoint representatives, a perfectly accurate and confident classifier gets "
            f"per-label belief 2M/(2M + K) = {b:.3f} and disbelief K/(2M + K) = {d:.3f} (M = {m}, K = 10 "
            f"classes, many test samples): the cluster width alone sets these levels.")
    bullets.append(
        f"Summary: {counts.get(REPRODUCED, 0)} reproduced, {counts.get(NOT_REPRODUCED, 0)} not reproduced, "
        f"{counts.get(INCONCLUSIVE, 0)} inconclusive, {counts.get(NOT_COMPARABLE, 0)} not comparable "
        f"(of {len(table)} claims).")
    rows, details = [], []
    for r in table.itertuples():
        rows.append([f"{r.claim} ({r.section}; `{r.claim_id}`)", r.paper, _measured(r), _interval(r),
                     r.decision_rule, r.verdict, r.reason or ""])
        detail = f"`{r.claim_id}` ({r.section}): {r.quote}. Measured: {r.measure}."
        if r.per_seed:
            detail += f" Per seed: {r.per_seed}."
        if np.isfinite(r.boot_lo):
            detail += f" Test-set bootstrap of the seed mean: [{_fmt(r.boot_lo)}, {_fmt(r.boot_hi)}]."
        details.append(detail)
    by_id = table.set_index("claim_id")
    tension_notes = []
    for tension in tensions:
        if not all(c in by_id.index for c in tension.claims):
            continue
        if not tension.paper_only and all(by_id.at[c, "verdict"] == NOT_COMPARABLE for c in tension.claims):
            continue  # nothing measured (dataset not in the run, too few epochs)
        parts = [f"`{c}` {_fmt(by_id.at[c, 'measured_mean'])} ({by_id.at[c, 'verdict']})" for c in tension.claims]
        tension_notes.append(f"{tension.text} This run: {'; '.join(parts)}.")
    if runs:
        tension_notes.append(invariance_note(runs))
    footer = DECISION_TEXT.format(
        pct=f"{boot.get('level', 0.95):.0%}", boot=boot.get("resamples", "the"), tol=MASS_TOLERANCE,
        onset=ONSET_TOLERANCE, gap=GAP_TOLERANCE)
    return bullets, rows, tension_notes, details, footer


def render_markdown(table, settings, datasets, seeds, runs=None) -> str:
    bullets, rows, tensions, details, footer = _document(table, settings, datasets, seeds, runs)
    lines = ["# Reproduction verdict", "", INTRO, "", *(f"- {b}" for b in bullets), "", footer, "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for cells in rows:
        cells = cells[:5] + [f"**{cells[5]}**" if cells[5] != NOT_COMPARABLE else cells[5]] + cells[6:]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    lines += ["", "## Statements of the paper that contradict each other", "", *(f"- {t}" for t in tensions),
              "", "## Each claim: the paper's words and what we measure", "", *(f"- {d}" for d in details), ""]
    return "\n".join(lines)


def _html_text(text: str) -> str:
    """Escape, and turn `code` spans into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


VERDICT_COLOURS = {REPRODUCED: "#d9f0d3", NOT_REPRODUCED: "#f6d0c4", INCONCLUSIVE: "#fbeec1",
                   NOT_COMPARABLE: "#eeeeee"}


def render_html(table, settings, datasets, seeds, runs=None) -> str:
    """The same content as :func:`render_markdown`, as a standalone page (for the HTML report)."""
    bullets, rows, tensions, details, footer = _document(table, settings, datasets, seeds, runs)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = []
    for cells in rows:
        tds = [f"<td>{_html_text(str(c))}</td>" for c in cells]
        tds[5] = f'<td style="background:{VERDICT_COLOURS.get(cells[5], "#fff")}"><b>{html.escape(cells[5])}</b></td>'
        body.append("<tr>" + "".join(tds) + "</tr>")
    style = ("body{font-family:sans-serif;font-size:14px;margin:1.5em;max-width:80em}"
             "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:4px 6px;vertical-align:top}"
             "th{background:#f3f3f3;text-align:left}code{font-size:12px}")

    def items(xs):
        return "<ul>" + "".join(f"<li>{_html_text(x)}</li>" for x in xs) + "</ul>"

    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>Reproduction verdict</title>',
        f"<style>{style}</style></head><body>", "<h1>Reproduction verdict</h1>", f"<p>{_html_text(INTRO)}</p>",
        items(bullets), f"<p>{_html_text(footer)}</p>",
        f"<table><thead><tr>{head}</tr></thead><tbody>", *body, "</tbody></table>",
        "<h2>Statements of the paper that contradict each other</h2>", items(tensions),
        "<h2>Each claim: the paper's words and what we measure</h2>", items(details), "</body></html>", "",
    ])


def write_verdict(runs, settings: Mapping, out_md, out_csv, out_html=None, flagged=None) -> pd.DataFrame:
    """Evaluate ``CLAIMS`` on ``runs`` and write the Markdown, CSV (and HTML) verdicts."""
    level = float(settings.get("bootstrap", {}).get("level", 0.95))
    table = evaluate(runs, level=level, flagged=flagged)
    datasets = sorted(runs)
    seeds = {ds: sorted(runs[ds]) for ds in datasets}
    write_csv(table, out_csv)
    outputs = [(out_md, render_markdown)] + ([(out_html, render_html)] if out_html else [])
    for path, render in outputs:
        with atomic_path(path) as tmp:
            tmp.write_text(render(table, settings, datasets, seeds, runs), encoding="utf-8")
    return table


def verdict_stage(trust_paths, history_paths, out_md, out_csv, settings: Mapping, out_html=None,
                  bootstrap_paths=()) -> pd.DataFrame:
    """Read every run's tables, evaluate ``CLAIMS``, write the Markdown, CSV (and HTML) verdicts."""
    runs = load_runs(trust_paths, history_paths, bootstrap_paths)
    return write_verdict(runs, settings, out_md, out_csv, out_html)
