"""The four questions of trust under dataset shift (docs/method.md §14.1), answered from a run's ``shift.csv`` and
``shift_ood.csv`` (:mod:`trustcal.reporting.shift`), each with a yes / no / inconclusive decided by where its
interval lies, at the first entry of ``shift.epochs`` (the best-validation epoch by default):

a. :func:`trust_tracks_accuracy` — do the raw model's network trust (belief) fall and its uncertainty rise with
   its accuracy over the (corruption, severity) cells, clean included? Spearman's ρ per seed, the mean over
   seeds with a t interval over seeds (the cells' own test-set noise moves a rank correlation over tens of
   cells little, and is not added).
b. :func:`temperature_gain` — temperature scaling's ECE minus the raw model's on the clean test images and at
   the highest severity, averaged over the corruptions: does the gain survive?
c. :func:`best_under_shift` — each calibrator's NLL minus temperature scaling's at the highest severity,
   averaged over the corruptions: which is best, which beat the baseline?
d. :func:`uncertainty_detects` — the AUROC of the opinion's uncertainty minus the max probability's per
   out-of-distribution set, for the raw model.

b–d combine each seed's paired percentile interval (the table's ``_lo`` / ``_hi``) over seeds with
:func:`trustcal.measures.paired.paired_interval_from_intervals` (§12.7, conservative); a mean over corruptions
takes the mean of the corruptions' interval ends, no narrower than the mean's own (the corruptions share the
test images, so their errors may be correlated).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trustcal.calibration.states import PAPER_CALIBRATOR, RAW
from trustcal.measures.paired import paired_interval_from_intervals, t_quantile
from trustcal.reporting.figures.calibrators import CALIBRATOR_NAMES
from trustcal.study.markdown import fmt

__all__ = ["QUESTION_COLUMNS", "shift_questions", "trust_tracks_accuracy", "uncertainty_detects"]

YES, NO, INCONCLUSIVE = "yes", "no", "inconclusive"
QUESTION_COLUMNS = ("question", "where", "calibrator", "quantity", "estimate", "lo", "hi", "seeds", "answer")
QUESTIONS = {
    "a": "Do the network's trust fall and its uncertainty rise with its accuracy under shift?",
    "b": "Does temperature scaling's ECE gain over the raw model survive at the highest severity?",
    "c": "Which calibrator is best under shift (NLL against temperature scaling at the highest severity)?",
    "d": "Does the opinion's uncertainty tell out-of-distribution inputs apart better than the max probability?",
}


def _first_label(df: pd.DataFrame) -> pd.DataFrame:
    labels = list(dict.fromkeys(df["epoch_label"].astype(str)))
    return df[df["epoch_label"].astype(str) == labels[0]] if labels else df


def _sign(lo: float, hi: float) -> int:
    return 1 if lo > 0 else -1 if hi < 0 else 0


def _interval(x: float, lo: float, hi: float) -> str:
    return f"{fmt(x)} [{fmt(lo)}, {fmt(hi)}]" if math.isfinite(lo) else f"{fmt(x)} (no interval)"


def _row(question, where, calibrator, quantity, estimate, lo, hi, seeds, answer) -> dict:
    return dict(zip(QUESTION_COLUMNS, (question, where, calibrator, quantity, estimate, lo, hi, seeds, answer)))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side is constant."""
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def over_seeds(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of per-seed ``values`` and its t interval over seeds (NaN bounds for one seed)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = float(t_quantile(0.5 + level / 2, len(values) - 1)) * values.std(ddof=1) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def trust_tracks_accuracy(shift: pd.DataFrame) -> list[dict]:
    """Question a: per seed, Spearman's ρ of accuracy with belief and with uncertainty over the raw model's
    (set, severity) cells; a row each, with the answer."""
    raw = _first_label(shift)
    raw = raw[raw["calibrator"] == RAW]
    rows, signs = [], {}
    for opinion, want in (("belief", 1), ("uncertainty", -1)):
        per_seed = [spearman(g["accuracy"].to_numpy(), g[opinion].to_numpy()) for _, g in raw.groupby("seed")]
        mean, lo, hi = over_seeds(per_seed)
        signs[opinion] = (_sign(lo, hi) * want) if math.isfinite(lo) else 0
        rows.append(
            _row("a", "corruption × severity", RAW, f"rho(accuracy, {opinion})", mean, lo, hi, len(per_seed), "")
        )
    answer = (
        YES if all(s == 1 for s in signs.values()) else NO if any(s == -1 for s in signs.values()) else INCONCLUSIVE
    )
    for r in rows:
        r["answer"] = answer
    return rows


def _seed_means(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the mean over the rows (corruptions) of ``column`` and of its interval's ends."""
    g = df.groupby("seed")
    return (
        g[column].mean().to_numpy(),
        g[f"{column}_lo"].mean().to_numpy(),
        g[f"{column}_hi"].mean().to_numpy(),
    )


def _combined(df: pd.DataFrame, column: str) -> tuple[float, float, float, int]:
    points, lo, hi = _seed_means(df, column)
    if len(points) == 0:
        return math.nan, math.nan, math.nan, 0
    p = paired_interval_from_intervals(points[None, :], lo[None, :], hi[None, :])
    return float(p.estimate[0]), float(p.lo[0]), float(p.hi[0]), len(points)


def _top_severity(shifted: pd.DataFrame) -> int:
    return int(shifted["severity"].max())


def temperature_gain(shift: pd.DataFrame) -> list[dict]:
    """Question b: temperature scaling's ECE minus the raw model's, clean and at the highest severity (averaged
    over corruptions), each combined over seeds; the answer from the highest severity's interval."""
    df = _first_label(shift)
    df = df[df["calibrator"] == PAPER_CALIBRATOR]
    if df.empty or "ece_vs_raw_lo" not in df:
        return []
    clean, shifted = df[df["set"] == "clean"], df[df["set"] != "clean"]
    rows = [_row("b", "clean", PAPER_CALIBRATOR, "ECE minus the raw model's", *_combined(clean, "ece_vs_raw"), "")]
    if not shifted.empty:
        top = _top_severity(shifted)
        est, lo, hi, seeds = _combined(shifted[shifted["severity"] == top], "ece_vs_raw")
        answer = {1: NO, -1: YES, 0: INCONCLUSIVE}[_sign(lo, hi)] if math.isfinite(lo) else INCONCLUSIVE
        rows.append(
            _row("b", f"severity {top}", PAPER_CALIBRATOR, "ECE minus the raw model's", est, lo, hi, seeds, answer)
        )
        rows[0]["answer"] = answer
    return rows


def best_under_shift(shift: pd.DataFrame) -> list[dict]:
    """Question c: each calibrator's NLL minus temperature scaling's at the highest severity, averaged over
    corruptions and combined over seeds; ``answer`` names whether it beats (yes), loses to (no) or ties with
    the baseline."""
    df = _first_label(shift)
    shifted = df[(df["set"] != "clean") & (df["calibrator"] != PAPER_CALIBRATOR)]
    if shifted.empty or "nll_vs_temperature_lo" not in df:
        return []
    top = shifted[shifted["severity"] == _top_severity(shifted)]
    rows = []
    for calibrator, g in top.groupby("calibrator", sort=False):
        est, lo, hi, seeds = _combined(g, "nll_vs_temperature")
        answer = {1: NO, -1: YES, 0: INCONCLUSIVE}[_sign(lo, hi)] if math.isfinite(lo) else INCONCLUSIVE
        where = f"severity {_top_severity(shifted)}"
        rows.append(_row("c", where, calibrator, "NLL minus temperature scaling's", est, lo, hi, seeds, answer))
    return sorted(rows, key=lambda r: r["estimate"])


def uncertainty_detects(ood: pd.DataFrame) -> list[dict]:
    """Question d: per out-of-distribution set, the raw model's uncertainty AUROC minus the max probability's,
    combined over seeds."""
    df = _first_label(ood)
    df = df[(df["calibrator"] == RAW) & (df["signal"] == "uncertainty")]
    if df.empty or "auroc_vs_max_probability_lo" not in df:
        return []
    rows = []
    for ood_set, g in df.groupby("set", sort=False):
        est, lo, hi, seeds = _combined(g, "auroc_vs_max_probability")
        answer = {1: YES, -1: NO, 0: INCONCLUSIVE}[_sign(lo, hi)] if math.isfinite(lo) else INCONCLUSIVE
        rows.append(_row("d", ood_set, RAW, "AUROC of uncertainty minus max probability's", est, lo, hi, seeds, answer))
    return rows


def shift_questions(shift: pd.DataFrame | None, ood: pd.DataFrame | None) -> pd.DataFrame:
    """Every question's rows (:data:`QUESTION_COLUMNS`) that the tables allow."""
    rows = []
    if shift is not None and not shift.empty:
        rows += trust_tracks_accuracy(shift) + temperature_gain(shift) + best_under_shift(shift)
    if ood is not None and not ood.empty:
        rows += uncertainty_detects(ood)
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


def _name(calibrator: str) -> str:
    """A calibrator's name as the figures write it ("raw model" for none)."""
    return CALIBRATOR_NAMES.get(calibrator, calibrator)


def _tracking(r) -> str:
    """Question a's finding for one opinion: does it move as the question asks (belief with accuracy, ρ > 0;
    uncertainty against it, ρ < 0), against it, or is the interval across 0, with its ρ."""
    opinion = r.quantity.split(", ")[1][:-1]
    want = 1 if opinion == "belief" else -1
    sign = _sign(r.lo, r.hi) if math.isfinite(r.lo) else 0
    finding = {
        1: "falls with accuracy" if want == 1 else "rises as accuracy falls",
        -1: "rises as accuracy falls" if want == 1 else "falls with accuracy",
        0: "has no clear direction",
    }[sign * want]
    return f"{opinion} {finding} (ρ(accuracy, {opinion}) {_interval(r.estimate, r.lo, r.hi)})"


def answer_lines(table: pd.DataFrame) -> list[str]:
    """One sentence per question answered in ``table`` (:func:`shift_questions`)."""
    lines = []
    for q, text in QUESTIONS.items():
        rows = table[table["question"] == q]
        if rows.empty:
            continue
        seeds = int(rows["seeds"].max())
        span = f"{seeds} seeds" if seeds > 1 else "one seed"
        if q == "a":
            parts = [_tracking(r) for r in rows.itertuples()]
            lines.append(
                f"{text} **{rows['answer'].iloc[0]}**: {'; '.join(parts)} (raw model, mean over {span}, t interval)."
            )
        elif q == "b":
            parts = [f"{r.where} {_interval(r.estimate, r.lo, r.hi)}" for r in rows.itertuples()]
            lines.append(
                f"{text} **{rows['answer'].iloc[-1]}**: temperature scaling's ECE minus the raw model's, "
                f"{'; '.join(parts)} (mean over corruptions and {span}, paired 95 % intervals)."
            )
        elif q == "c":
            best = rows.iloc[0]  # a Series: its fields by [""] (``where`` is one of its methods)
            beat = [_name(r.calibrator) for r in rows.itertuples() if r.answer == YES]
            worse = [_name(r.calibrator) for r in rows.itertuples() if r.answer == NO]
            lines.append(
                f"{text} Lowest NLL at {best['where']}: **{_name(best['calibrator'])}** "
                f"({_interval(best.estimate, best.lo, best.hi)} against temperature scaling); "
                f"beat temperature scaling: {', '.join(beat) or 'none'}; worse: {', '.join(worse) or 'none'} "
                f"(mean over corruptions and {span}, paired 95 % intervals)."
            )
        else:
            parts = [f"{r.where} **{r.answer}** {_interval(r.estimate, r.lo, r.hi)}" for r in rows.itertuples()]
            lines.append(f"{text} AUROC difference, raw model: {'; '.join(parts)} ({span}, paired 95 % intervals).")
    return lines
