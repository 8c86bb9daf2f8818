"""The paper's result statements (Ouattara §7, abstract, conclusion) as claims, read from the shipped claims file
``paper_claims.yaml``, and where the paper contradicts itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from trustcal.reporting.verdict.claimfile import (
    PAPER_CLAIMS_FILE,
    Claim,
    load_claims,
)
from trustcal.reporting.verdict.runs import Run
from trustcal.reporting.verdict.settings import VerdictSettings

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


CLAIMS: tuple[Claim, ...] = load_claims(PAPER_CLAIMS_FILE)
"""The paper's claims, from the shipped claims file ``paper_claims.yaml`` (docs/claims.md)."""


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


def settings_notes(settings: VerdictSettings, datasets: Sequence[str], claims: Sequence[Claim] = CLAIMS) -> list[str]:
    """How the run differs from the paper's setup, one sentence each."""
    notes = []
    known = settings.values()
    for key, paper in PAPER_SETTINGS.items():
        if key in known and known[key] != paper:
            notes.append(f"`{key}` is {known[key]!r} here, {paper!r} in the paper")
    for ds in sorted({c.dataset for c in claims} - set(datasets)):
        notes.append(f"{ds} is not in this run")
    if settings.fit_on == "test":
        notes.append("the temperature is fitted on the test set (the author's code; leaks the test labels)")
    return notes
