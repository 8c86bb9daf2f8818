"""The reproduction verdict: each claim of the paper (Ouattara §7, quoted in SPEC §3) against our tables.

A claim is measured per seed from ``trust.csv`` (per-label opinions) and
``history.csv`` (losses), summarised as mean ± sd over seeds, and decided
against the paper's number with a stated tolerance:

- ``near``  — reproduced when |mean − paper value| ≤ tolerance;
- ``below`` — reproduced when mean ≤ tolerance (a "constant" curve: its range);
- ``falls`` — reproduced when mean ≤ −tolerance (a "decrease": end minus start).

A claim is *not comparable* when its dataset is not in the run, when the run
has too few epochs for the epochs the claim is about, or when the paper's
number cannot come from the algorithm it describes (the uncertainty masses).

Per-label claims ("≈ 0.65 per label") use the mean over the labels of the
class opinions (``label`` 0…K−1, not ``network``); the note gives the spread
over labels. The opinion masses are read off the paper's line plots, whose
y axes span about 0–1 with ten overlapping label curves and whose numbers
are given to two decimals ("around 0.65"): the tolerance for a mass is
``MASS_TOLERANCE`` = 0.05.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .io import TrustcalError, atomic_path, read_csv, write_csv
from .trust import TRUST_COLUMNS

REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = "reproduced", "not reproduced", "not comparable"
MASS_TOLERANCE = 0.05  # opinion masses read off the paper's figures
ONSET_TOLERANCE = 5  # epochs: "after around 10 epochs" on a 100-epoch axis
GAP_TOLERANCE = 0.10  # nats: "training and validation losses remain low and close"
LATE_EPOCH = 20  # "after (approximately) 20 epochs"

# The paper's setup (SPEC §1–3); a run that differs is flagged in the verdict.
PAPER_SETTINGS = {
    "epochs": 100, "clusters": 10, "weight": 2.0, "alpha": 1.0, "beta": 1.0, "base_rate": 0.5,
    "representative": "midpoint", "cluster_fusion": "cumulative", "class_fusion": "cumulative",
}
UNCERTAINTY_REASON = (
    "u = W/(W + r + s) with the evidence counted over the whole test set (10,000 samples, W = 2) is "
    "of order 0.001; 0.12–0.17 cannot come from Algorithm 1 as the paper states it (SPEC §3)"
)
VERDICT_COLUMNS = (
    "claim_id", "dataset", "section", "claim", "paper", "paper_value", "measured_mean", "measured_sd",
    "n_seeds", "per_seed", "tolerance", "decision_rule", "verdict", "reason", "measure",
)


# --------------------------------------------------------------------------- per-seed statistics


def label_mean(trust: pd.DataFrame, component: str, calibrated: bool | None) -> pd.Series:
    """Per epoch, the mean over labels of one opinion component (class opinions only).

    ``calibrated=None`` averages the before- and after-calibration curves.
    """
    rows = trust[trust["label"].astype(str) != "network"]
    cal = rows["calibrated"].astype(str).str.lower() == "true"
    if calibrated is not None:
        rows = rows[cal == calibrated]
    return rows.groupby("epoch")[component].mean().sort_index()


def _window(s: pd.Series, first: int = 1, last: int | None = None) -> pd.Series:
    return s[(s.index >= first) & (s.index <= (last if last is not None else math.inf))]


def level(component: str, calibrated: bool | None, first: int = 1, last: int | None = None):
    """Mean over epochs [first, last] of the label-mean ``component``."""
    def measure(trust, history):
        return float(_window(label_mean(trust, component, calibrated), first, last).mean())
    return measure


def spread(component: str, calibrated: bool | None, first: int = 1):
    """Range (max − min) over epochs ≥ first of the label-mean ``component``: 0 for a constant curve."""
    def measure(trust, history):
        s = _window(label_mean(trust, component, calibrated), first)
        return float(s.max() - s.min()) if len(s) else math.nan
    return measure


def change(component: str, calibrated: bool | None):
    """The label-mean ``component`` over the last 10 % of epochs (at least one) minus its first-epoch value."""
    def measure(trust, history):
        s = label_mean(trust, component, calibrated)
        if len(s) < 2:
            return math.nan
        k = max(1, int(math.ceil(0.1 * len(s))))
        return float(s.iloc[-k:].mean() - s.iloc[0])
    return measure


def val_loss_minimum(history: pd.DataFrame) -> int:
    """Epoch of the minimum validation loss (the earliest on a tie)."""
    h = history.sort_values("epoch")
    return int(h.loc[h["val_loss"].astype(float).idxmin(), "epoch"])


def overfitting_onset(trust, history) -> float:
    return float(val_loss_minimum(history))


def gap_grows_after_minimum(history: pd.DataFrame) -> bool:
    """The validation loss rises after its minimum and the train–validation gap widens."""
    h = history.sort_values("epoch").set_index("epoch")
    best = val_loss_minimum(history)
    last = h.index[-1]
    gap = h["val_loss"] - h["train_loss"]
    return bool(best < last and gap.loc[last] > gap.loc[best])


def final_gap(trust, history) -> float:
    """Validation minus training loss at the last epoch (nats)."""
    h = history.sort_values("epoch")
    return float(h["val_loss"].iloc[-1] - h["train_loss"].iloc[-1])


def perfect_classifier_opinion(clusters: int, classes: int = 10) -> tuple[float, float]:
    """(belief, disbelief) per label of a perfect classifier (p ∈ {0, 1}) under Algorithm 1, midpoint RP, N → ∞.

    Label c: its N/K members sit in the top cluster (RP = 1 − 1/(2M)), giving
    r = N/K and s = N/(2MK); the other N(K−1)/K samples sit in the bottom
    cluster (RP = 1/(2M)), giving s = N(K−1)/(2MK). So r : s = 1/K : 1/(2M),
    b = 2M/(2M + K), d = K/(2M + K) — 2/3 and 1/3 for M = K = 10.
    """
    return 2 * clusters / (2 * clusters + classes), classes / (2 * clusters + classes)


# --------------------------------------------------------------------------- notes over all seeds


def label_spread_note(component: str, calibrated: bool | None, first: int = 1, last: int | None = None):
    def note(trust, history):
        rows = trust[trust["label"].astype(str) != "network"]
        if calibrated is not None:
            rows = rows[(rows["calibrated"].astype(str).str.lower() == "true") == calibrated]
        rows = rows[(rows["epoch"] >= first) & (rows["epoch"] <= (last if last is not None else math.inf))]
        if rows.empty:
            return ""
        per_label = rows.groupby("label")[component].mean()
        return f"per label {per_label.min():.3f}–{per_label.max():.3f}"
    return note


def onset_note(trust, history):
    parts = []
    for seed, h in history.groupby("seed"):
        parts.append(f"{val_loss_minimum(h)}{'' if gap_grows_after_minimum(h) else ' (no rise after it)'}")
    last = int(history["epoch"].max())
    return f"val-loss minimum at epoch {', '.join(parts)} of {last}"


def gap_note(trust, history):
    h = history.groupby("epoch")[["train_loss", "val_loss"]].mean()
    return (f"last epoch: train {h['train_loss'].iloc[-1]:.3f}, val {h['val_loss'].iloc[-1]:.3f} nats; "
            f"val minimum {h['val_loss'].min():.3f} at epoch {int(h['val_loss'].idxmin())}")


def max_uncertainty_note(trust, history):
    rows = trust[trust["label"].astype(str) != "network"]
    return f"largest per-label u in the run {rows['uncertainty'].max():.4f}" if len(rows) else ""


# --------------------------------------------------------------------------- claims


@dataclass(frozen=True)
class Claim:
    id: str
    dataset: str
    section: str
    text: str  # the claim, close to the paper's words
    paper: str  # the paper's number as stated
    paper_value: float  # that number (the reference of a ``near`` test)
    measure_text: str  # what we compute, in words
    measure: Callable[[pd.DataFrame, pd.DataFrame], float]  # one seed's (trust, history) → value
    kind: str = "near"  # near / below / falls (module docstring)
    tolerance: float = MASS_TOLERANCE
    min_epochs: int = 1  # fewer epochs in the run: not comparable
    requires: Callable[[pd.DataFrame], bool] | None = None  # an extra per-seed condition on history
    requires_text: str = ""
    note: Callable[[pd.DataFrame, pd.DataFrame], str] | None = None  # detail over all seeds
    not_comparable: str | None = None  # a reason that holds whatever the numbers


def _after(first):
    return f"epochs ≥ {first}"


CLAIMS: tuple[Claim, ...] = (
    Claim("mnist_trust_after", "mnist", "§7.1", "MNIST: trust per label stays around 0.65 after calibration",
          "≈ 0.65", 0.65, "mean over labels and all epochs of the class belief after calibration",
          level("belief", True), note=label_spread_note("belief", True)),
    Claim("mnist_disbelief_after", "mnist", "§7.1", "MNIST: disbelief per label stays around 0.35 after calibration",
          "≈ 0.35", 0.35, "mean over labels and all epochs of the class disbelief after calibration",
          level("disbelief", True), note=label_spread_note("disbelief", True)),
    Claim("mnist_stable_after", "mnist", "§7.1", "MNIST: after calibration trust remains constant over training",
          "constant (range 0)", 0.0, "range (max − min) over epochs of the label-mean belief after calibration",
          spread("belief", True), kind="below", min_epochs=10),
    Claim("mnist_trust_falls_before", "mnist", "§7.1",
          "MNIST: before calibration trust decreases as training progresses",
          "decreases", 0.0, "label-mean belief before calibration, last 10 % of epochs minus epoch 1",
          change("belief", False), kind="falls", min_epochs=10),
    Claim("mnist_little_overfitting", "mnist", "§7.3 (Fig. 3a)",
          "MNIST: training and validation losses remain low and close (little to no overfitting)",
          "close", 0.0, "validation minus training loss at the last epoch (nats)",
          final_gap, kind="below", tolerance=GAP_TOLERANCE, min_epochs=10, note=gap_note),
    Claim("cifar10_trust_start", "cifar10", "§7.2", "CIFAR-10: trust begins around 0.7 (before and after calibration)",
          "≈ 0.7", 0.70, "label-mean belief at the first epoch, mean of before and after calibration",
          level("belief", None, 1, 1), note=label_spread_note("belief", None, 1, 1)),
    Claim("cifar10_trust_before_late", "cifar10", "§7.2, §7.3",
          "CIFAR-10: before calibration trust falls to about 0.48 by epoch ~20 and stays there",
          "≈ 0.48", 0.48, f"mean over labels and {_after(LATE_EPOCH)} of the class belief before calibration",
          level("belief", False, LATE_EPOCH), min_epochs=LATE_EPOCH,
          note=label_spread_note("belief", False, LATE_EPOCH)),
    Claim("cifar10_disbelief_before_late", "cifar10", "§7.2, §7.3",
          "CIFAR-10: before calibration disbelief peaks at about 0.58 after ~20 epochs and stays there",
          "≈ 0.58", 0.58, f"mean over labels and {_after(LATE_EPOCH)} of the class disbelief before calibration",
          level("disbelief", False, LATE_EPOCH), min_epochs=LATE_EPOCH,
          note=label_spread_note("disbelief", False, LATE_EPOCH)),
    Claim("cifar10_trust_after_late", "cifar10", "§7.2, §7.3",
          "CIFAR-10: after calibration trust comes back to about 0.7 by epoch ~20 and stays there",
          "≈ 0.7", 0.70, f"mean over labels and {_after(LATE_EPOCH)} of the class belief after calibration",
          level("belief", True, LATE_EPOCH), min_epochs=LATE_EPOCH,
          note=label_spread_note("belief", True, LATE_EPOCH)),
    Claim("cifar10_disbelief_after_late", "cifar10", "§7.2",
          "CIFAR-10: after calibration disbelief returns to about 0.4 around epoch 20 and stays there",
          "≈ 0.4", 0.40, f"mean over labels and {_after(LATE_EPOCH)} of the class disbelief after calibration",
          level("disbelief", True, LATE_EPOCH), min_epochs=LATE_EPOCH,
          note=label_spread_note("disbelief", True, LATE_EPOCH)),
    Claim("cifar10_stable_after", "cifar10", "§7.2, §7.3",
          "CIFAR-10: after calibration trust remains constant after epoch ~20",
          "constant (range 0)", 0.0, f"range over {_after(LATE_EPOCH)} of the label-mean belief after calibration",
          spread("belief", True, LATE_EPOCH), kind="below", min_epochs=30),
    Claim("cifar10_overfitting_onset", "cifar10", "§7.3 (Fig. 3b)",
          "CIFAR-10: the model overfits after about 10 epochs (validation loss rises, the train–val gap widens)",
          "≈ 10 epochs", 10.0, "epoch of the minimum validation loss (history.csv)",
          overfitting_onset, tolerance=ONSET_TOLERANCE, min_epochs=LATE_EPOCH,
          requires=gap_grows_after_minimum,
          requires_text="and in every seed the validation loss rises after its minimum with a widening train–val gap",
          note=onset_note),
    Claim("cifar10_uncertainty", "cifar10", "§7.2",
          "CIFAR-10: uncertainty starts around 0.12 and peaks at about 0.17 after 20 epochs before calibration",
          "0.12–0.17", math.nan, "mean over labels, epochs and both states of the class uncertainty",
          level("uncertainty", None), note=max_uncertainty_note, not_comparable=UNCERTAINTY_REASON),
)


def decision_rule(claim: Claim) -> str:
    if claim.not_comparable:
        return "not tested"
    tol = f"{claim.tolerance:g}"
    rule = {
        "near": f"|mean − {claim.paper_value:g}| ≤ {tol}",
        "below": f"mean ≤ {tol}",
        "falls": f"mean ≤ −{tol}",
    }[claim.kind]
    return f"{rule} {claim.requires_text}".strip()


def decide(claim: Claim, mean: float) -> bool:
    eps = 1e-9  # 0.70 − 0.65 is 0.05000000000000004 in floating point
    if claim.kind == "near":
        return abs(mean - claim.paper_value) <= claim.tolerance + eps
    if claim.kind == "below":
        return mean <= claim.tolerance + eps
    if claim.kind == "falls":
        return mean <= -claim.tolerance + eps
    raise ValueError(f"unknown claim kind {claim.kind!r}")


# --------------------------------------------------------------------------- evaluation


def _fmt(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.3g}"


def evaluate(trust: pd.DataFrame, history: pd.DataFrame, claims: Sequence[Claim] = CLAIMS) -> pd.DataFrame:
    """One row per claim (``VERDICT_COLUMNS``); ``trust`` and ``history`` hold every run, with
    ``dataset`` and ``seed`` columns."""
    rows = []
    for c in claims:
        t = trust[trust["dataset"] == c.dataset]
        h = history[history["dataset"] == c.dataset]
        row = dict(claim_id=c.id, dataset=c.dataset, section=c.section, claim=c.text, paper=c.paper,
                   paper_value=c.paper_value, measured_mean=math.nan, measured_sd=math.nan, n_seeds=0,
                   per_seed="", tolerance=c.tolerance, decision_rule=decision_rule(c), verdict=NOT_COMPARABLE,
                   reason="", measure=c.measure_text)
        seeds = sorted(set(t["seed"]) | set(h["seed"]))
        if not seeds:
            row["reason"] = f"{c.dataset} is not in this run"
            rows.append(row)
            continue
        values = []
        for s in seeds:
            ts, hs = t[t["seed"] == s], h[h["seed"] == s]
            try:
                values.append(float(c.measure(ts, hs)))
            except (KeyError, ValueError, IndexError):
                values.append(math.nan)
        v = np.array(values, dtype=float)
        finite = v[np.isfinite(v)]
        row.update(n_seeds=len(seeds), per_seed="; ".join(f"seed {s}: {_fmt(x)}" for s, x in zip(seeds, v)))
        if len(finite):
            row["measured_mean"] = float(finite.mean())
            row["measured_sd"] = float(finite.std(ddof=1)) if len(finite) > 1 else math.nan
        epochs = min(int(x["epoch"].max()) for x in (t, h) if len(x)) if len(t) or len(h) else 0
        note = ""
        if c.note is not None:
            try:
                note = c.note(t, h)
            except (KeyError, ValueError, IndexError):
                note = ""
        if c.not_comparable:
            reason = c.not_comparable
        elif epochs < c.min_epochs:
            reason = f"the claim needs ≥ {c.min_epochs} epochs; this run has {epochs}"
        elif len(finite) < len(v):
            reason = "no value for some seed (missing epochs or columns)"
        else:
            ok = decide(c, row["measured_mean"])
            if ok and c.requires is not None:
                ok = all(c.requires(h[h["seed"] == s]) for s in seeds)
            row["verdict"] = REPRODUCED if ok else NOT_REPRODUCED
            reason = ""
        row["reason"] = "; ".join(x for x in (reason, note) if x)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


# --------------------------------------------------------------------------- files

RUN_RE = re.compile(r"(?:^|/)(?P<dataset>[^/]+)/seed(?P<seed>\d+)/[^/]+$")


def load_runs(paths: Iterable[str | Path], columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """Concatenate ``results/{dataset}/seed{seed}/<table>.csv`` files with dataset and seed columns."""
    frames = []
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        m = RUN_RE.search(Path(path).as_posix())
        if not m:
            raise TrustcalError(f"{path}: expected a path …/{{dataset}}/seed{{N}}/<table>.csv")
        df = read_csv(path, columns, rule=rule)
        frames.append(df.assign(dataset=m["dataset"], seed=int(m["seed"])))
    if not frames:
        return pd.DataFrame(columns=[*columns, "dataset", "seed"])
    return pd.concat(frames, ignore_index=True)


def settings_notes(settings: Mapping, datasets: Sequence[str], claims: Sequence[Claim] = CLAIMS) -> list[str]:
    """How the run differs from the paper's setup, one sentence each."""
    notes = []
    flat = {**settings, **settings.get("trust", {})}
    for key, paper in PAPER_SETTINGS.items():
        if key in flat and flat[key] != paper:
            notes.append(f"`{key}` is {flat[key]!r} here, {paper!r} in the paper")
    missing = sorted({c.dataset for c in claims} - set(datasets))
    for ds in missing:
        notes.append(f"{ds} is not in this run")
    fit_on = settings.get("calibration", {}).get("fit_on")
    if fit_on == "test":
        notes.append("the temperature is fitted on the test set (the author's code; leaks the test labels)")
    return notes


INTRO = (
    "Generated by the workflow's rule `verdict` (`trustcal.verdict`) from every run's `trust.csv` and "
    "`history.csv`; do not edit by hand. Each claim of Ouattara §7 that SPEC §3 quotes, measured on the "
    "test set, as mean ± sd over seeds."
)
HEADER = ("Claim", "Paper", "Measured (mean ± sd)", "Seeds", "Reproduced when", "Verdict", "Note")


def _document(table: pd.DataFrame, settings: Mapping, datasets: Sequence[str], seeds: Sequence[int]):
    """The verdict's content, format-free: (bullets, table rows, per-claim measures, footer)."""
    counts = table["verdict"].value_counts()
    trust = settings.get("trust", {})
    bullets = [
        f"Run: datasets {', '.join(datasets) or '–'}; seeds {', '.join(map(str, seeds)) or '–'}; "
        f"{settings.get('epochs', '?')} epochs; M = {settings.get('clusters', '?')} clusters, "
        f"W = {trust.get('weight', '?')}, representative {trust.get('representative', '?')}, "
        f"{trust.get('cluster_fusion', '?')}/{trust.get('class_fusion', '?')} fusion; temperature fitted on "
        f"{settings.get('calibration', {}).get('fit_on', '?')}."
    ]
    notes = settings_notes(settings, datasets)
    if notes:
        bullets.append("Differs from the paper's setup: " + "; ".join(notes) + ".")
    m = settings.get("clusters")
    if trust.get("representative", "midpoint") == "midpoint" and isinstance(m, int):
        b, d = perfect_classifier_opinion(m)
        bullets.append(
            f"Reference: with midpoint representatives, a perfectly accurate and confident classifier gets "
            f"per-label belief 2M/(2M + K) = {b:.3f} and disbelief K/(2M + K) = {d:.3f} (M = {m}, K = 10 "
            f"classes, many test samples): the cluster width alone sets these levels.")
    bullets.append(
        f"Summary: {counts.get(REPRODUCED, 0)} reproduced, {counts.get(NOT_REPRODUCED, 0)} not reproduced, "
        f"{counts.get(NOT_COMPARABLE, 0)} not comparable (of {len(table)} claims).")
    rows, measures = [], []
    for r in table.itertuples():
        measured = _fmt(r.measured_mean)
        if np.isfinite(r.measured_sd):
            measured += f" ± {_fmt(r.measured_sd)}"
        rows.append([f"{r.claim} ({r.section}; `{r.claim_id}`)", r.paper, measured, str(r.n_seeds),
                     r.decision_rule, r.verdict, r.reason or ""])
        test = f"reproduced when {r.decision_rule}" if r.decision_rule != "not tested" else "not tested"
        measures.append(f"`{r.claim_id}`: {r.measure}; {test}." + (f" Per seed: {r.per_seed}." if r.per_seed else ""))
    footer = (
        f"Tolerances: opinion masses ± {MASS_TOLERANCE} (read off the paper's figures, stated to two decimals); "
        f"a \"constant\" curve varies by at most {MASS_TOLERANCE}; the overfitting onset ± {ONSET_TOLERANCE} "
        f"epochs; \"close\" losses differ by at most {GAP_TOLERANCE} nats. Several seeds: the mean is tested."
    )
    return bullets, rows, measures, footer


def render_markdown(table: pd.DataFrame, settings: Mapping, datasets: Sequence[str], seeds: Sequence[int]) -> str:
    bullets, rows, measures, footer = _document(table, settings, datasets, seeds)
    lines = ["# Reproduction verdict", "", INTRO, "", *(f"- {b}" for b in bullets), "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for cells in rows:
        cells = cells[:5] + [f"**{cells[5]}**" if cells[5] != NOT_COMPARABLE else cells[5]] + cells[6:]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    lines += ["", "## How each claim is measured", "", *(f"- {m}" for m in measures), "", footer, ""]
    return "\n".join(lines)


def _html_text(text: str) -> str:
    """Escape, and turn `code` spans into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


VERDICT_COLOURS = {REPRODUCED: "#d9f0d3", NOT_REPRODUCED: "#f6d0c4", NOT_COMPARABLE: "#eeeeee"}


def render_html(table: pd.DataFrame, settings: Mapping, datasets: Sequence[str], seeds: Sequence[int]) -> str:
    """The same content as :func:`render_markdown`, as a standalone page (for the HTML report)."""
    bullets, rows, measures, footer = _document(table, settings, datasets, seeds)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = []
    for cells in rows:
        tds = [f"<td>{_html_text(str(c))}</td>" for c in cells]
        tds[5] = f'<td style="background:{VERDICT_COLOURS.get(cells[5], "#fff")}"><b>{html.escape(cells[5])}</b></td>'
        body.append("<tr>" + "".join(tds) + "</tr>")
    style = ("body{font-family:sans-serif;font-size:14px;margin:1.5em;max-width:80em}"
             "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:4px 6px;vertical-align:top}"
             "th{background:#f3f3f3;text-align:left}code{font-size:12px}")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>Reproduction verdict</title>',
        f"<style>{style}</style></head><body>", "<h1>Reproduction verdict</h1>", f"<p>{_html_text(INTRO)}</p>",
        "<ul>" + "".join(f"<li>{_html_text(b)}</li>" for b in bullets) + "</ul>",
        f"<table><thead><tr>{head}</tr></thead><tbody>", *body, "</tbody></table>",
        "<h2>How each claim is measured</h2>",
        "<ul>" + "".join(f"<li>{_html_text(m)}</li>" for m in measures) + "</ul>",
        f"<p>{_html_text(footer)}</p>", "</body></html>", "",
    ])


def verdict_stage(trust_paths, history_paths, out_md, out_csv, settings: Mapping, out_html=None) -> pd.DataFrame:
    """Read every run's tables, evaluate ``CLAIMS``, write the Markdown, CSV (and HTML) verdicts."""
    trust = load_runs(trust_paths, TRUST_COLUMNS, rule="trust")
    history = load_runs(history_paths, ("epoch", "train_loss", "val_loss"), rule="train")
    table = evaluate(trust, history)
    datasets = sorted(set(trust["dataset"]) | set(history["dataset"]))
    seeds = sorted(set(trust["seed"]) | set(history["seed"]))
    write_csv(table, out_csv)
    outputs = [(out_md, render_markdown)] + ([(out_html, render_html)] if out_html else [])
    for path, render in outputs:
        with atomic_path(path) as tmp:
            tmp.write_text(render(table, settings, datasets, seeds), encoding="utf-8")
    return table
