"""The study's answers to two questions of docs/method.md §13, from a finished run's tables, with paired
intervals over the test set and the seeds (docs/method.md §12).

* Does the per-prediction opinion rank right and wrong answers better than the max probability?
  (:func:`selective_differences`, :func:`selective_answer`; from every seed's ``selective.csv``.)
* What rises after the best epoch, miscalibration or lost refinement? (:func:`refinement_changes`,
  :func:`refinement_answer`; from every seed's ``paired.npz`` and the validation rows of ``scores.csv``.)

Each answer is one sentence, worded from the numbers whatever they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from trustcal.calibration.states import PAPER_STATES
from trustcal.measures.paired import PairedInterval, paired_interval, paired_interval_from_intervals
from trustcal.measures.selective import SCORES

SCORE_NAMES = {
    "max_probability": "max probability",
    "belief": "belief",
    "projected_probability": "projected probability b + a·u",
    "evidence": "evidence",
}


def _num(est: float, lo: float, hi: float) -> str:
    """``+0.0047 [+0.0029, +0.0068]``: decimals enough to show the interval's width to two digits."""
    if not all(map(math.isfinite, (est, lo, hi))):
        return f"{est:+.3g} (no interval)" if math.isfinite(est) else "not available"
    width = hi - lo
    decimals = 3 if width <= 0 else min(max(1 - math.floor(math.log10(width)), 1), 8)
    return f"{est:+.{decimals}f} [{lo:+.{decimals}f}, {hi:+.{decimals}f}]"


def _epochs(epochs) -> str:
    values = sorted({int(e) for e in epochs})
    if len(values) == 1:
        return f"epoch {values[0]}"
    if len(values) > 3:
        return f"epochs {values[0]}–{values[-1]}"
    return "epochs " + ", ".join(map(str, values))


# --- Question 2: trust as a selective-prediction signal ------------------------------------------------


def selective_differences(selective: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per (calibrator, score, area, epoch): the seed mean of the score's AURC / AUGRC minus the max
    probability's, with the paired interval with seeds from each seed's own interval
    (:func:`trustcal.measures.paired.paired_interval_from_intervals`; ``selective.csv`` keeps no replicates).

    ``selective``: every seed's ``selective.csv`` with a ``seed`` column. Only (calibrator, epoch) cells
    that every seed has are kept. Columns: calibrator, score, area, epoch, estimate, lo, hi, seeds."""
    seeds = sorted(selective["seed"].unique())
    rows = selective[selective["score"] != SCORES[0]]
    frames = []
    for area in ("aurc", "augrc"):
        cols = [f"diff_{area}", f"diff_{area}_lo", f"diff_{area}_hi"]
        if not set(cols) <= set(rows.columns):
            continue
        wide = rows.pivot_table(index=["calibrator", "score", "epoch"], columns="seed", values=cols, aggfunc="first")
        wide = wide.dropna(subset=[(c, s) for c in cols[:1] for s in seeds])
        iv = paired_interval_from_intervals(*(wide[c][seeds].to_numpy(dtype=float) for c in cols), level)
        frame = wide.index.to_frame(index=False)
        frame.insert(2, "area", area)
        frames.append(frame.assign(estimate=iv.estimate, lo=iv.lo, hi=iv.hi, seeds=len(seeds)))
    columns = ["calibrator", "score", "area", "epoch", "estimate", "lo", "hi", "seeds"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def selective_answer(diffs: pd.DataFrame) -> str:
    """Question 2 in a sentence: for the raw model and temperature scaling, the AURC of each opinion score
    minus the max probability's at the last epoch, and the epochs whose interval lies wholly below 0
    (the opinion ranks the errors better) or wholly above."""
    aurc = diffs[diffs["area"] == "aurc"]
    shown = [c for c in PAPER_STATES if c in set(aurc["calibrator"])]  # the tables hold every calibrator
    if aurc.empty or not shown:
        return "not answered: the run has no selective.csv with intervals"
    last = int(aurc["epoch"].max())
    n_epochs = aurc["epoch"].nunique()
    better, parts = [], []
    for c in shown:
        cells = []
        for score in (s for s in SCORES[1:] if s in set(aurc["score"])):
            g = aurc[(aurc["calibrator"] == c) & (aurc["score"] == score)]
            below, above = int((g["hi"] < 0).sum()), int((g["lo"] > 0).sum())
            at = g[g["epoch"] == last]
            value = _num(*at[["estimate", "lo", "hi"]].iloc[0]) if len(at) else "not available"
            cells.append(f"{SCORE_NAMES[score]} {value} (better in {below}, worse in {above} of {len(g)} epochs)")
            if below:
                better.append(f"{SCORE_NAMES[score]} {'before' if c == 'none' else 'after'} calibration in {below}")
        state = "raw model" if c == "none" else "after temperature scaling"
        parts.append(f"{state}: " + "; ".join(cells))
    seeds = int(aurc["seeds"].max())
    if better:
        verdict = "at some epochs: " + ", ".join(better) + f" of {n_epochs} epochs"
    else:
        verdict = "no: at no epoch does an opinion score rank them better, before or after calibration"
    return (
        f"does the per-prediction opinion rank right and wrong answers better than the max probability? "
        f"{verdict[0].upper()}{verdict[1:]}. AURC of the opinion's score minus the max probability's at epoch "
        f"{last} (below 0: better), {'; '.join(parts)} (95 % paired intervals over the test set"
        + (f" and {seeds} seeds" if seeds > 1 else ", one seed")
        + ", docs/method.md §12.7)."
    )


# --- Question 3: calibration against refinement over training -------------------------------------------


def _at_epochs(stacked: Mapping[str, np.ndarray], calibrator: str, metric: str, epochs: Mapping[int, int]):
    """seeds × (B + 1): ``metric`` of ``calibrator`` at each seed's epoch in ``epochs`` (seed → epoch)."""
    cal = list(stacked["calibrators"]).index(calibrator)
    met = list(stacked["metrics"]).index(metric)
    where = {int(e): i for i, e in enumerate(stacked["epochs"])}
    seeds = [int(s) for s in stacked["seeds"]]
    return np.stack([stacked["scores"][k, where[epochs[s]], cal, met].astype(np.float64) for k, s in enumerate(seeds)])


def _change(stacked, calibrator: str, metric: str, to: Mapping[int, int], since: Mapping[int, int], level: float):
    diff = _at_epochs(stacked, calibrator, metric, to) - _at_epochs(stacked, calibrator, metric, since)
    return paired_interval(diff[:, 0], diff[:, 1:], level)


def lowest_epochs(scores: pd.DataFrame, column: str, calibrator: str = "none", split: str = "test") -> dict[int, int]:
    """Per seed, the epoch of the lowest ``column`` of ``calibrator`` on ``split`` (earliest on a tie). The
    scores stage splits the NLL into calibration and refinement on the test split only."""
    rows = scores[(scores["calibrator"] == calibrator) & (scores["split"] == split)].dropna(subset=[column])
    rows = rows.sort_values(["seed", "epoch"])
    return {int(s): int(g.loc[g[column].idxmin(), "epoch"]) for s, g in rows.groupby("seed")}


def refinement_changes(
    stacked: Mapping[str, np.ndarray],
    best: Mapping[int, int],
    refined: Mapping[int, int],
    level: float = 0.95,
) -> dict[str, PairedInterval]:
    """From each seed's best epoch (``best``: seed → epoch of lowest validation loss) to the last epoch, the
    change of the raw model's test NLL and of its calibration and refinement terms (``nll``,
    ``nll_calibration``, ``nll_refinement``); and ``stop_at_refinement``: the temperature-scaled test NLL
    at the epoch of lowest test refinement (``refined``) minus at ``best``. ``stacked``:
    :func:`trustcal.measures.paired.stack_seeds` of the seeds' ``paired.npz`` (the resamples are shared by
    the epochs, so the differences are paired)."""
    last = int(max(stacked["epochs"]))
    end = {int(s): last for s in stacked["seeds"]}
    out = {m: _change(stacked, "none", m, end, best, level) for m in ("nll", "nll_calibration", "nll_refinement")}
    if "temperature" in list(stacked["calibrators"]):
        out["stop_at_refinement"] = _change(stacked, "temperature", "nll", refined, best, level)
    return out


def _iv(iv: PairedInterval) -> str:
    return _num(float(iv.estimate), float(iv.lo), float(iv.hi))


def refinement_answer(
    changes: Mapping[str, PairedInterval], best: Mapping[int, int], refined: Mapping[int, int], last: int
) -> str:
    """Question 3 in a sentence, from :func:`refinement_changes`."""
    rise, cal, ref = changes["nll"], changes["nll_calibration"], changes["nll_refinement"]
    total = float(rise.estimate)
    if all(e == last for e in best.values()):
        return (
            f"what rises after the best epoch, miscalibration or lost refinement? Nothing to split: the "
            f"validation loss is lowest at the last epoch, {last}."
        )
    if not float(rise.lo) > 0:
        verdict = "the test NLL does not rise measurably"
    else:
        share = {"miscalibration": float(cal.estimate) / total, "lost refinement": float(ref.estimate) / total}
        clear = {k for k, iv in (("miscalibration", cal), ("lost refinement", ref)) if float(iv.lo) > 0}
        main = max(share, key=share.get)
        if main in clear and share[main] >= 0.5:
            other = "lost refinement" if main == "miscalibration" else "miscalibration"
            verdict = f"mostly {main} ({share[main]:.0%} of the rise; {other} {share[other]:.0%})"
        else:
            verdict = (
                f"both (miscalibration {share['miscalibration']:.0%}, lost refinement "
                f"{share['lost refinement']:.0%} of the rise)"
            )
    seeds = len(best)
    text = (
        f"what rises after the best epoch, miscalibration or lost refinement? {verdict[0].upper()}{verdict[1:]}. "
        f"From the epoch of lowest validation loss ({_epochs(best.values())}) to epoch {last}, the raw model's "
        f"test NLL changes by {_iv(rise)}: its calibration term (what temperature scaling, cross-fitted, "
        f"recovers) by {_iv(cal)}, its refinement term by {_iv(ref)}."
    )
    if "stop_at_refinement" in changes:
        same = all(refined[s] == best[s] for s in best)
        text += (
            f" The refinement term is lowest at {_epochs(refined.values())} (chosen on the test set: a "
            "description, not a stopping rule)"
            + (
                ", the epochs of lowest validation loss"
                if same
                else "; the temperature-scaled test NLL there minus at the lowest validation loss: "
                f"{_iv(changes['stop_at_refinement'])}"
            )
            + "."
        )
    return text + (
        f" (95 % paired intervals over the test set and {seeds} seeds, docs/method.md §12.)"
        if seeds > 1
        else " (95 % paired intervals over the test set, one seed, docs/method.md §12.)"
    )
