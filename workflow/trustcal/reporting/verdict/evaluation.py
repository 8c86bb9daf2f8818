"""Deciding a claim: seed and bootstrap intervals combined, the equivalence test, per-seed verdicts."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from trustcal.measures.bootstrap import percentile_interval
from trustcal.measures.paired import paired_interval
from trustcal.reporting.verdict.claims import CLAIMS, Claim
from trustcal.reporting.verdict.runs import Run, fmt_value

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_COMPARABLE = (
    "reproduced",
    "not reproduced",
    "inconclusive",
    "not comparable",
)
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_COMPARABLE)  # in the order tables count them


VERDICT_COLUMNS = (
    "claim_id",
    "dataset",
    "section",
    "claim",
    "quote",
    "paper",
    "paper_value",
    "measured_mean",
    "measured_sd",
    "n_seeds",
    "boot_lo",
    "boot_hi",
    "interval_lo",
    "interval_hi",
    "interval_method",
    "per_seed",
    "seed_verdicts",
    "tolerance",
    "decision_rule",
    "verdict",
    "reason",
    "measure",
    "without_flagged",
    "verdict_without_flagged",
    "scope",
)
"""The verdict table's columns. ``scope``: ``paper`` for a claim judged on the run its ``dataset:`` names (the
paper's claims, a claims file's), ``general`` for a general claim judged on the run named in ``dataset``
(:mod:`trustcal.reporting.verdict.general`); last, so that the columns before it are as they always were."""

PAPER_SCOPE, GENERAL_SCOPE = "paper", "general"


# Student's t, 97.5 % quantile, by degrees of freedom (Abramowitz & Stegun, Table 26.10)
T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    15: 2.131,
    20: 2.086,
    30: 2.042,
}


def t975(df: int) -> float:
    """Student's t 97.5 % quantile (the next smaller tabulated df above 10; 1.96 beyond 30)."""
    if df < 1:
        return math.nan
    if df > 30:
        return 1.96
    return T975[max(k for k in T975 if k <= df)]


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
        band = {
            "near": f"within {fmt_value(lo)} … {fmt_value(hi)}",
            "at_most": f"≤ {claim.target:g}",
            "at_least": f"≥ {claim.target:g}",
        }[claim.kind]
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
    def of(cls, per_seed: dict[int, np.ndarray]) -> Estimate:
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

    def minus(self, other: Estimate) -> Estimate:
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

    def paired_interval(self, level: float) -> tuple[float, float]:
        """The paired interval with seeds (:func:`trustcal.measures.paired.paired_interval`): for a measure
        that compares the two calibration states on the same resamples. The test-set term is the noise
        the seeds share, the seed term their spread; with one seed, the percentile interval of its
        replicates."""
        if not self.per_seed or not np.isfinite(self.mean):
            return math.nan, math.nan
        values = np.stack([self.per_seed[s] for s in sorted(self.per_seed)])  # seeds × (B + 1)
        iv = paired_interval(values[:, 0], values[:, 1:], level)
        return float(iv.lo), float(iv.hi)

    def interval(self, level: float) -> tuple[float, float]:
        """Bootstrap and seed uncertainty added in quadrature around the mean (module docstring)."""
        if not np.isfinite(self.mean):
            return math.nan, math.nan
        blo, bhi = self.bootstrap_interval(level)
        below = max(self.mean - blo, 0.0) if np.isfinite(blo) else 0.0
        above = max(bhi - self.mean, 0.0) if np.isfinite(bhi) else 0.0
        return (self.mean - math.hypot(below, self.seed_halfwidth), self.mean + math.hypot(above, self.seed_halfwidth))


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
    row = dict(
        claim_id=claim.id,
        dataset=claim.dataset + (f" − {claim.versus}" if claim.versus else ""),
        section=claim.section,
        claim=claim.text,
        quote=claim.quote,
        paper=claim.paper,
        paper_value=claim.target,
        measured_mean=math.nan,
        measured_sd=math.nan,
        n_seeds=0,
        boot_lo=math.nan,
        boot_hi=math.nan,
        interval_lo=math.nan,
        interval_hi=math.nan,
        interval_method="",
        per_seed="",
        seed_verdicts="",
        tolerance=claim.tolerance,
        decision_rule=decision_rule(claim),
        verdict=NOT_COMPARABLE,
        reason="",
        measure=claim.measure_text,
    )
    missing = [ds for ds in (claim.dataset, claim.versus) if ds is not None and not runs.get(ds)]
    if missing:
        row["reason"] = f"{' and '.join(ds or 'the predictions' for ds in missing)} not in this run"
        return row
    est = _estimate(claim, runs)
    row.update(measured_mean=est.mean, measured_sd=est.sd, n_seeds=est.n)
    row["boot_lo"], row["boot_hi"] = est.bootstrap_interval(level)
    paired = claim.paired and claim.versus is None
    row["interval_lo"], row["interval_hi"] = est.paired_interval(level) if paired else est.interval(level)
    row["interval_method"] = "paired" if paired else "quadrature"
    if est.per_seed:
        row["per_seed"] = "; ".join(f"seed {s}: {fmt_value(v[0])}" for s, v in est.per_seed.items())
    epochs = min(_run_epochs(runs[ds]) for ds in (claim.dataset, claim.versus) if ds is not None)
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
        row["reason"] = (
            "needs the training history (history.csv, or --history with trustcal assess)"
            if no_history
            else "no value (no predictions in the claim's epochs)"
        )
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


def evaluate(
    runs: Mapping[str, Mapping[int, Run]],
    claims: Sequence[Claim] = CLAIMS,
    level: float = 0.95,
    flagged: Mapping[str, Iterable[int]] | None = None,
    scope: str = PAPER_SCOPE,
) -> pd.DataFrame:
    """One row per claim. ``runs``: dataset → seed → :class:`Run`. ``flagged``: dataset → predictions
    that are suspect (e.g. went through softmax twice), as epochs or (epoch, calibrated) pairs: each
    claim is also evaluated without them, and one whose value depends on them says so. ``scope``: the
    rows' ``scope`` (``general`` for the general claims' rows, each claim already bound to its run)."""
    rows = []
    flagged = {ds: list(e) for ds, e in (flagged or {}).items() if e}
    for claim in claims:
        row = evaluate_claim(claim, runs, level)
        row.update(without_flagged=math.nan, verdict_without_flagged="", scope=scope)
        involved = [ds for ds in (claim.dataset, claim.versus) if ds is not None]
        bad = [f for ds in involved for f in flagged.get(ds, [])]
        if bad and all(runs.get(ds) for ds in involved):
            clean = {ds: {s: r.without(flagged.get(ds, [])) for s, r in seeds.items()} for ds, seeds in runs.items()}
            other = evaluate_claim(claim, clean, level)
            row["without_flagged"], row["verdict_without_flagged"] = other["measured_mean"], other["verdict"]
            without = f"without them {fmt_value(other['measured_mean'])}, {other['verdict']}"
            if row["verdict"] == REPRODUCED and other["verdict"] != REPRODUCED:
                note = f"reproduced only with the predictions that went through softmax twice; {without}"
            elif other["verdict"] != row["verdict"] or not np.isclose(
                other["measured_mean"], row["measured_mean"], equal_nan=True
            ):
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
