"""The paper's result statements (Ouattara §7, abstract, conclusion) as claims with their quotes, and where the paper contradicts itself."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trustcal.reporting.verdict.runs import (
    AFTER,
    BEFORE,
    LATE_EPOCH,
    Run,
    change,
    decline_after_onset,
    final_gap,
    gap_grows_after_minimum,
    highest_difference,
    label_peak,
    level,
    lowest_difference,
    mean_gap,
    overfitting_onset,
    spread,
    stability_gain,
    start_gap,
)

MASS_TOLERANCE = 0.05  # opinion masses read off the paper's figures
ONSET_TOLERANCE = 5  # epochs: "after around 10 epochs" on a 100-epoch axis
GAP_TOLERANCE = 0.10  # nats: "training and validation losses remain low and close"


# The paper's setup (docs/method.md §1–3); a run that differs is flagged in the verdict.
PAPER_SETTINGS = {
    "epochs": 100,
    "clusters": 10,
    "weight": 2.0,
    "alpha": 1.0,
    "beta": 1.0,
    "base_rate": 0.5,
    "representative": "midpoint",
    "cluster_fusion": "cumulative",
    "class_fusion": "cumulative",
}


UNCERTAINTY_REASON = (
    "u = W/(W + r + s) with the evidence counted over the whole test set (10,000 samples, W = 2) is "
    "of order 0.001; 0.12–0.17 cannot come from Algorithm 1 as the paper states it"
)


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
    paired: bool = False  # compares the two calibration states: the paired interval with seeds (docs/method.md §12)

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
CONCLUSION_IMPROVED = "§8: “improvements in trust, disbelief, and uncertainty metrics after calibration”"
CONCLUSION_STABLE = "§8: “maintaining stable trustworthiness over time, particularly when applied to calibrated models”"


INTRO_STABLE_QUOTE = "“the post-calibration curves exhibit greater stability”"
INTRO_STABLE = f"§7: {INTRO_STABLE_QUOTE}"
OVERALL_QUOTE = (
    "“Overall, the results show that temperature scaling significantly improved the stability of "
    "the trustworthiness metrics, maintaining higher trust and lower disbelief and uncertainty, "
    "compared to the pre-calibration network”"
)


OVERALL = f"§7.2: {OVERALL_QUOTE}"


def _near(id, ds, section, quote, text, value, measure_text, measure, **kw):
    return Claim(id, ds, section, quote, text, f"≈ {value:g}", measure_text, measure, "near", value, **kw)


def _constant(id, ds, section, quote, text, component, state, first=1, **kw):
    when = "all epochs" if first == 1 else f"epochs ≥ {first}"
    return Claim(
        id,
        ds,
        section,
        quote,
        text,
        "constant",
        f"range (max − min) over {when} of the label-mean {component} {'after' if state else 'before'} calibration",
        spread(component, state, first),
        "at_most",
        MASS_TOLERANCE,
        **kw,
    )


def _mnist_claims() -> list[Claim]:
    ds, s71, s73 = "mnist", "§7.1", "§7.3"
    start = "“Before calibration, trust started at a similar level as post-calibration (around 0.65)”"
    return [
        _near(
            "mnist_trust_start_before",
            ds,
            s71,
            start,
            "MNIST, before calibration: trust starts around 0.65",
            0.65,
            "label-mean belief before calibration at epoch 1",
            level("belief", BEFORE, 1, 1),
        ),
        Claim(
            "mnist_trust_start_similar",
            ds,
            s71,
            start,
            "MNIST: trust starts at the same level before and after calibration",
            "similar",
            "|after − before| of the label-mean belief at epoch 1",
            start_gap("belief"),
            "at_most",
            MASS_TOLERANCE,
            paired=True,
        ),
        Claim(
            "mnist_trust_falls_before",
            ds,
            s71,
            "“but as the training progressed, trust values decreased”",
            "MNIST, before calibration: trust decreases as training progresses",
            "decreases",
            "label-mean belief before calibration, last 10 % of epochs minus epoch 1",
            change("belief", BEFORE),
            "at_most",
            -MASS_TOLERANCE,
            min_epochs=10,
        ),
        _near(
            "mnist_trust_after",
            ds,
            s71,
            "“(around 0.65) … In contrast, after calibration, trust remained constant”",
            "MNIST, after calibration: trust stays around 0.65",
            0.65,
            "mean over all epochs of the label-mean belief after calibration",
            level("belief", AFTER),
        ),
        _constant(
            "mnist_trust_after_constant",
            ds,
            s71,
            "“after calibration, trust remained constant”",
            "MNIST, after calibration: trust is constant over training",
            "belief",
            AFTER,
            min_epochs=10,
            also=(CONCLUSION_STABLE,),
        ),
        Claim(
            "mnist_trust_after_above_before",
            ds,
            s71,
            "“temperature scaling helped the network maintain a higher and more consistent level of trust”",
            "MNIST: trust is higher after calibration than before, at every epoch",
            "higher",
            "smallest over epochs of (after − before) label-mean belief",
            lowest_difference("belief"),
            "at_least",
            0.0,
            also=(ABSTRACT_IMPROVED, CONCLUSION_IMPROVED, OVERALL),
            paired=True,
        ),
        Claim(
            "mnist_trust_steadier_after",
            ds,
            s71,
            "“a higher and more consistent level of trust”",
            "MNIST: trust varies less over training after calibration than before",
            "more consistent",
            "range over epochs of the label-mean belief, before minus after",
            stability_gain("belief"),
            "at_least",
            0.0,
            min_epochs=10,
            also=(INTRO_STABLE,),
            paired=True,
        ),
        Claim(
            "mnist_disbelief_rises_before",
            ds,
            s71,
            "“Before calibration, disbelief started low but increased as the number of training epochs grew”",
            "MNIST, before calibration: disbelief increases over training",
            "increases",
            "label-mean disbelief before calibration, last 10 % of epochs minus epoch 1",
            change("disbelief", BEFORE),
            "at_least",
            MASS_TOLERANCE,
            min_epochs=10,
        ),
        _near(
            "mnist_disbelief_after",
            ds,
            s71,
            "“after calibration, disbelief remained constant and stable at around 0.35”",
            "MNIST, after calibration: disbelief stays around 0.35",
            0.35,
            "mean over all epochs of the label-mean disbelief after calibration",
            level("disbelief", AFTER),
        ),
        _constant(
            "mnist_disbelief_after_constant",
            ds,
            s71,
            "“after calibration, disbelief remained constant and stable”",
            "MNIST, after calibration: disbelief is constant over training",
            "disbelief",
            AFTER,
            min_epochs=10,
        ),
        Claim(
            "mnist_disbelief_after_below_before",
            ds,
            "§7.2 (Overall)",
            OVERALL_QUOTE,
            "MNIST: disbelief is lower after calibration than before, at every epoch",
            "lower",
            "largest over epochs of (after − before) label-mean disbelief",
            highest_difference("disbelief"),
            "at_most",
            0.0,
            also=(CONCLUSION_IMPROVED,),
            paired=True,
        ),
        Claim(
            "mnist_uncertainty_start_similar",
            ds,
            s71,
            "“uncertainty began at a comparable point before and after calibration”",
            "MNIST: uncertainty starts at the same level before and after calibration",
            "comparable",
            "|after − before| of the label-mean uncertainty at epoch 1",
            start_gap("uncertainty"),
            "at_most",
            MASS_TOLERANCE,
            paired=True,
        ),
        Claim(
            "mnist_uncertainty_rises_before",
            ds,
            s71,
            "“without calibration, uncertainty tended to increase”",
            "MNIST, before calibration: uncertainty increases over training",
            "increases",
            "label-mean uncertainty before calibration, last 10 % of epochs minus epoch 1 (direction only: "
            "our u is ~100× smaller than the paper's)",
            change("uncertainty", BEFORE),
            "at_least",
            0.0,
            tolerance=0.0,
            min_epochs=10,
        ),
        _constant(
            "mnist_uncertainty_after_stable",
            ds,
            s71,
            "“Post-calibration, uncertainty remained low and stable”",
            "MNIST, after calibration: uncertainty is stable",
            "uncertainty",
            AFTER,
            min_epochs=10,
        ),
        Claim(
            "mnist_uncertainty_after_below_before",
            ds,
            "§7.2 (Overall)",
            OVERALL_QUOTE,
            "MNIST: uncertainty is lower after calibration than before, at every epoch",
            "lower",
            "largest over epochs of (after − before) label-mean uncertainty",
            highest_difference("uncertainty"),
            "at_most",
            0.0,
            tolerance=0.0,
            also=(CONCLUSION_IMPROVED,),
            paired=True,
        ),
        Claim(
            "mnist_little_overfitting",
            ds,
            f"{s73} (Fig. 3a)",
            "“both training and validation losses remain low and close to each other throughout the training "
            "process, indicating little to no overfitting”",
            "MNIST: training and validation losses stay close (little to no overfitting)",
            "close",
            "validation minus training loss at the last epoch (nats)",
            final_gap,
            "at_most",
            GAP_TOLERANCE,
            tolerance=GAP_TOLERANCE,
            min_epochs=10,
            from_history=True,
        ),
        Claim(
            "mnist_little_difference",
            ds,
            s73,
            "“there is little difference in behavior between the pre- and post-calibration models”",
            "MNIST: before- and after-calibration trust hardly differ",
            "little difference",
            "mean over epochs of |after − before| label-mean belief",
            mean_gap("belief"),
            "at_most",
            MASS_TOLERANCE,
            paired=True,
        ),
        _constant(
            "mnist_trust_before_constant",
            ds,
            s73,
            "“trust remains relatively constant throughout training for both models”",
            "MNIST, before calibration: trust is constant over training",
            "belief",
            BEFORE,
            min_epochs=10,
        ),
        Claim(
            "mnist_smaller_difference_than_cifar10",
            ds,
            s73,
            "“The difference between the pre- and post-calibration models is less pronounced because the MNIST "
            "task is simpler”",
            "MNIST: calibration changes trust less than on CIFAR-10",
            "less pronounced",
            "mean over epochs of |after − before| label-mean belief, MNIST minus CIFAR-10",
            mean_gap("belief"),
            "at_most",
            0.0,
            tolerance=0.0,
            versus="cifar10",
        ),
        Claim(
            "mnist_disbelief_minimal",
            ds,
            s73,
            "“disbelief and uncertainty are minimal”",
            "MNIST: disbelief and uncertainty are minimal",
            "minimal",
            "mean over epochs of the label-mean disbelief before calibration",
            level("disbelief", BEFORE),
            not_comparable="“minimal” has no reference value; see the disbelief levels above (≈ 0.35 is "
            "what the paper itself reports after calibration)",
        ),
    ]


def _cifar_claims() -> list[Claim]:
    ds, s72, s73, late = "cifar10", "§7.2", "§7.3", LATE_EPOCH
    w = f"epochs ≥ {late}"
    trust_start = "“Both pre- and post-calibration trust curves began at similar values (at around 0.7)”"
    dis_start = "“Both pre- and post-calibration disbelief curves began at similar values, around 0.4”"
    return [
        _near(
            "cifar10_trust_start_before",
            ds,
            s72,
            trust_start,
            "CIFAR-10, before calibration: trust starts around 0.7",
            0.70,
            "label-mean belief before calibration at epoch 1",
            level("belief", BEFORE, 1, 1),
        ),
        _near(
            "cifar10_trust_start_after",
            ds,
            s72,
            trust_start,
            "CIFAR-10, after calibration: trust starts around 0.7",
            0.70,
            "label-mean belief after calibration at epoch 1",
            level("belief", AFTER, 1, 1),
        ),
        _near(
            "cifar10_trust_peak_before",
            ds,
            s72,
            "“the increase a little bit for some labels to reach around 0.75 for pre calibration”",
            "CIFAR-10, before calibration: some labels' trust rises to about 0.75 early on",
            0.75,
            f"highest belief of any label before calibration over epochs ≤ {late}",
            label_peak("belief", BEFORE, 1, late),
            min_epochs=late,
        ),
        _near(
            "cifar10_trust_peak_after",
            ds,
            s72,
            "“and 0.82 for post calibration”",
            "CIFAR-10, after calibration: some labels' trust rises to about 0.82 early on",
            0.82,
            f"highest belief of any label after calibration over epochs ≤ {late}",
            label_peak("belief", AFTER, 1, late),
            min_epochs=late,
        ),
        _near(
            "cifar10_trust_before_late",
            ds,
            f"{s72}, {s73}",
            "“without calibration, as training continued, trust decreased to reach 0.48 after 20 epochs”",
            "CIFAR-10, before calibration: trust falls to about 0.48 by epoch ~20",
            0.48,
            f"mean over {w} of the label-mean belief before calibration",
            level("belief", BEFORE, late),
            min_epochs=late,
        ),
        _constant(
            "cifar10_trust_before_late_constant",
            ds,
            s72,
            "“and remains constant”",
            "CIFAR-10, before calibration: trust stays constant after epoch ~20",
            "belief",
            BEFORE,
            late,
            min_epochs=30,
        ),
        _near(
            "cifar10_trust_after_late",
            ds,
            f"{s72}, {s73}",
            "“After calibration, trust decreases a little to come back to the initial value 0.7 after around "
            "20 epochs”",
            "CIFAR-10, after calibration: trust comes back to about 0.7 by epoch ~20",
            0.70,
            f"mean over {w} of the label-mean belief after calibration",
            level("belief", AFTER, late),
            min_epochs=late,
        ),
        _constant(
            "cifar10_trust_after_late_constant",
            ds,
            f"{s72}, {s73}",
            "“and then remained constant”",
            "CIFAR-10, after calibration: trust stays constant after epoch ~20",
            "belief",
            AFTER,
            late,
            min_epochs=30,
            also=(CONCLUSION_STABLE,),
        ),
        _near(
            "cifar10_disbelief_start_before",
            ds,
            s72,
            dis_start,
            "CIFAR-10, before calibration: disbelief starts around 0.4",
            0.40,
            "label-mean disbelief before calibration at epoch 1",
            level("disbelief", BEFORE, 1, 1),
        ),
        _near(
            "cifar10_disbelief_start_after",
            ds,
            s72,
            dis_start,
            "CIFAR-10, after calibration: disbelief starts around 0.4",
            0.40,
            "label-mean disbelief after calibration at epoch 1",
            level("disbelief", AFTER, 1, 1),
        ),
        Claim(
            "cifar10_disbelief_rises_before",
            ds,
            s72,
            "“Before calibration, disbelief gradually increased as training progressed”",
            "CIFAR-10, before calibration: disbelief increases over training",
            "increases",
            f"label-mean disbelief before calibration, mean over {w} minus epoch 1",
            change("disbelief", BEFORE, late),
            "at_least",
            MASS_TOLERANCE,
            min_epochs=late,
        ),
        _near(
            "cifar10_disbelief_before_late",
            ds,
            f"{s72}, {s73}",
            "“reaching a peak of 0.58 after approximately 20 epochs”",
            "CIFAR-10, before calibration: disbelief peaks at about 0.58 after epoch ~20",
            0.58,
            f"mean over {w} of the label-mean disbelief before calibration",
            level("disbelief", BEFORE, late),
            min_epochs=late,
        ),
        _constant(
            "cifar10_disbelief_before_late_constant",
            ds,
            s72,
            "“where it remained relatively constant for the rest of the training”",
            "CIFAR-10, before calibration: disbelief stays constant after epoch ~20",
            "disbelief",
            BEFORE,
            late,
            min_epochs=30,
        ),
        _near(
            "cifar10_disbelief_after_late",
            ds,
            s72,
            "“then decreased steadily to return to the initial value of 0.4 around the 20th epoch”",
            "CIFAR-10, after calibration: disbelief returns to about 0.4 by epoch ~20",
            0.40,
            f"mean over {w} of the label-mean disbelief after calibration",
            level("disbelief", AFTER, late),
            min_epochs=late,
        ),
        _constant(
            "cifar10_disbelief_after_late_constant",
            ds,
            s72,
            "“It remained stable thereafter”",
            "CIFAR-10, after calibration: disbelief stays constant after epoch ~20",
            "disbelief",
            AFTER,
            late,
            min_epochs=30,
        ),
        Claim(
            "cifar10_uncertainty_levels",
            ds,
            s72,
            "“uncertainty curves also started at similar values, around 0.12 … peaking at approximately 0.17 "
            "… dropped back to the original level of 0.12”",
            "CIFAR-10: uncertainty starts around 0.12, peaks at about 0.17 before calibration",
            "0.12–0.17",
            "mean over epochs of the label-mean uncertainty before calibration",
            level("uncertainty", BEFORE),
            not_comparable=UNCERTAINTY_REASON,
        ),
        Claim(
            "cifar10_uncertainty_rises_before",
            ds,
            s72,
            "“Before calibration, uncertainty increased slightly during the early training epochs, peaking … "
            "after 20 epochs, and remained at that level”",
            "CIFAR-10, before calibration: uncertainty increases over training",
            "increases",
            f"label-mean uncertainty before calibration, mean over {w} minus epoch 1 (direction only: our u "
            "is ~100× smaller than the paper's)",
            change("uncertainty", BEFORE, late),
            "at_least",
            0.0,
            tolerance=0.0,
            min_epochs=late,
        ),
        Claim(
            "cifar10_trust_after_above_before",
            ds,
            f"{s72}, {s73}",
            "“maintaining higher trustworthiness throughout the training”",
            "CIFAR-10: trust is higher after calibration than before, at every epoch",
            "higher",
            "smallest over epochs of (after − before) label-mean belief",
            lowest_difference("belief"),
            "at_least",
            0.0,
            also=(ABSTRACT_IMPROVED, CONCLUSION_IMPROVED, OVERALL),
            paired=True,
        ),
        Claim(
            "cifar10_disbelief_after_below_before",
            ds,
            f"{s72}, {s73}",
            "“disbelief and uncertainty also stabilize at much lower levels compared to the pre-calibration model”",
            "CIFAR-10: disbelief is lower after calibration than before, at every epoch",
            "lower",
            "largest over epochs of (after − before) label-mean disbelief",
            highest_difference("disbelief"),
            "at_most",
            0.0,
            also=(CONCLUSION_IMPROVED, OVERALL),
            paired=True,
        ),
        Claim(
            "cifar10_uncertainty_after_below_before",
            ds,
            f"{s72}, {s73}",
            "“disbelief and uncertainty also stabilize at much lower levels compared to the pre-calibration model”",
            "CIFAR-10: uncertainty is lower after calibration than before, at every epoch",
            "lower",
            "largest over epochs of (after − before) label-mean uncertainty",
            highest_difference("uncertainty"),
            "at_most",
            0.0,
            tolerance=0.0,
            also=(CONCLUSION_IMPROVED, OVERALL),
            paired=True,
        ),
        Claim(
            "cifar10_trust_steadier_after",
            ds,
            "§7, §7.2",
            INTRO_STABLE_QUOTE,
            "CIFAR-10: trust varies less over training after calibration than before",
            "greater stability",
            "range over epochs of the label-mean belief, before minus after",
            stability_gain("belief"),
            "at_least",
            0.0,
            min_epochs=late,
            also=(CONCLUSION_STABLE,),
            paired=True,
        ),
        Claim(
            "cifar10_overfitting_onset",
            ds,
            f"{s73} (Fig. 3b)",
            "“the model requires around 10 epochs to be well-trained. After this point … the model begins to "
            "overfit, as indicated by the increasing gap between the training and validation losses”",
            "CIFAR-10: the model overfits after about 10 epochs",
            "≈ 10 epochs",
            "epoch of the minimum validation loss (history.csv)",
            overfitting_onset,
            "near",
            10.0,
            tolerance=ONSET_TOLERANCE,
            min_epochs=late,
            requires=gap_grows_after_minimum,
            requires_text="and in every seed the validation loss rises after its minimum with a widening train–val gap",
            from_history=True,
        ),
        Claim(
            "cifar10_decline_with_overfitting",
            ds,
            s73,
            "“[the metrics] deteriorate sharply for the pre-calibration model after about 10 epochs. "
            "Specifically, trust decreases … as overfitting sets in”",
            "CIFAR-10, before calibration: trust starts to fall when overfitting sets in",
            "coincide",
            "epoch of the highest label-mean belief before calibration minus the epoch of the validation-loss minimum",
            decline_after_onset,
            "near",
            0.0,
            tolerance=ONSET_TOLERANCE,
            min_epochs=late,
            uses_history=True,
        ),
    ]


CLAIMS: tuple[Claim, ...] = tuple(_mnist_claims() + _cifar_claims())


@dataclass(frozen=True)
class Tension:
    """Two or more statements of the paper that cannot all hold on the same run."""

    claims: tuple[str, ...]
    text: str
    paper_only: bool = False  # the paper's numbers alone show it: stated whatever the run


TENSIONS: tuple[Tension, ...] = (
    Tension(
        ("mnist_trust_falls_before", "mnist_trust_before_constant", "mnist_little_overfitting"),
        "§7.1 says MNIST trust before calibration decreases as training progresses; §7.3 says it “remains "
        "relatively constant throughout training for both models” because there is “little to no "
        "overfitting”. A curve cannot both fall by more than the tolerance and stay within it.",
    ),
    Tension(
        ("mnist_trust_falls_before", "mnist_uncertainty_rises_before"),
        "§7.1: before calibration trust falls while uncertainty rises. Under Algorithm 1 b = (r_c/W)·u "
        "with r_c fixed (below), so belief and uncertainty always move in the same direction.",
    ),
    Tension(
        ("cifar10_trust_before_late", "cifar10_uncertainty_rises_before"),
        "§7.2/§7.3: before calibration trust falls while uncertainty rises. Impossible under Algorithm 1 "
        "for the same reason.",
    ),
    Tension(
        ("mnist_trust_after_above_before", "mnist_uncertainty_after_below_before"),
        "§7.2 (Overall) and §8: calibration gives higher trust and lower uncertainty. With b = (r_c/W)·u, "
        "higher belief means higher uncertainty.",
    ),
    Tension(
        ("cifar10_trust_after_above_before", "cifar10_uncertainty_after_below_before"),
        "§7.2/§7.3 and §8: higher trust and lower uncertainty after calibration; impossible together, as above.",
    ),
    Tension(
        ("cifar10_trust_start_after", "cifar10_disbelief_start_after", "cifar10_uncertainty_levels"),
        "§7.2's CIFAR-10 levels are not opinions: b + d + u = 1 always, but the paper's starting and "
        "after-calibration values sum to 0.7 + 0.4 + 0.12 = 1.22, and the before-calibration plateau to "
        "0.48 + 0.58 + 0.17 = 1.23.",
        paper_only=True,
    ),
)


def invariance_note(runs: Mapping[str, Mapping[int, Run]]) -> str:
    """The derivation that r_c is fixed, with the largest change of r_c measured in this run."""
    spreads = [
        float(np.nanmax(np.abs(r.positive_evidence - r.positive_evidence[:1, :1])))
        for seeds in runs.values()
        for r in seeds.values()
        if r.positive_evidence.size
    ]
    measured = (
        f" Measured: r_c changes by at most {max(spreads):g} over all epochs, both calibration states "
        "and every seed of this run."
        if spreads
        else ""
    )
    return (
        "Why trust and uncertainty cannot move apart under Algorithm 1: the positive evidence of cluster i "
        "is r_i = t_i, the number of its members whose true label is c, so r_c = Σ_i t_i is the number of "
        "test samples of class c, whatever the epoch or the temperature. With b = r_c/(W + r_c + s_c) and "
        "u = W/(W + r_c + s_c), b/u = r_c/W is constant: only the negative evidence s_c moves, and a larger "
        "s_c lowers b and u together (and raises d). “Trust falls while uncertainty rises” and “higher trust "
        "with lower uncertainty” cannot happen." + measured
    )


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
