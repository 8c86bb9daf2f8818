"""The verdict as Markdown, CSV and HTML, and the workflow stage that writes it."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from trustcal.files import atomic_path, write_csv
from trustcal.reporting.verdict.claims import (
    GAP_TOLERANCE,
    MASS_TOLERANCE,
    ONSET_TOLERANCE,
    TENSIONS,
    Tension,
    invariance_note,
    settings_notes,
)
from trustcal.reporting.verdict.evaluation import (
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    evaluate,
)
from trustcal.reporting.verdict.runs import _fmt, load_runs, perfect_classifier_opinion

INTRO = (
    "Generated from every run's `trust.csv`, `history.csv` and `trust_bootstrap.npz` by `trustcal.reporting.verdict`; "
    "do not edit by hand. Every result statement of Ouattara §7 (and of the abstract and §8 where they speak "
    "of these experiments), measured on the test set."
)


DECISION_TEXT = (
    "How to read it: *Measured* is the mean over training seeds ± their sd (n seeds). *Interval* is the {pct} "
    "interval of that mean: the percentile interval over {boot} resamples of the test set, widened by the "
    "seeds' t·sd/√n in quadrature. A claim that compares after with before calibration has the *paired* "
    "interval instead, marked so: the difference is taken on each resample, the test-set term is the "
    "resampling noise the seeds share, the seed term the seeds' spread, each half-width at its own t "
    "quantile and added in quadrature (docs/method.md §12). A claim is **reproduced** when the whole interval lies inside the band "
    "of *Reproduced when*, **not reproduced** when it lies wholly outside, **inconclusive** when it "
    "straddles an edge. Opinion masses are compared within ± {tol} (read off the paper's plots, two "
    'decimals); a "constant" curve varies by at most {tol}; the overfitting onset ± {onset} epochs; '
    '"close" losses differ by at most {gap} nats.'
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
    paired = " paired" if getattr(r, "interval_method", "") == "paired" else ""
    return f"[{_fmt(r.interval_lo)}, {_fmt(r.interval_hi)}]{paired}"


def _document(
    table: pd.DataFrame,
    settings: Mapping,
    datasets: Sequence[str],
    seeds: Mapping[str, Sequence[int]],
    runs: Mapping | None = None,
    tensions: Sequence[Tension] = TENSIONS,
):
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
            f"classes, many test samples): the cluster width alone sets these levels."
        )
    bullets.append(
        f"Summary: {counts.get(REPRODUCED, 0)} reproduced, {counts.get(NOT_REPRODUCED, 0)} not reproduced, "
        f"{counts.get(INCONCLUSIVE, 0)} inconclusive, {counts.get(NOT_COMPARABLE, 0)} not comparable "
        f"(of {len(table)} claims)."
    )
    rows, details = [], []
    for r in table.itertuples():
        rows.append(
            [
                f"{r.claim} ({r.section}; `{r.claim_id}`)",
                r.paper,
                _measured(r),
                _interval(r),
                r.decision_rule,
                r.verdict,
                r.reason or "",
            ]
        )
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
        pct=f"{boot.get('level', 0.95):.0%}",
        boot=boot.get("resamples", "the"),
        tol=MASS_TOLERANCE,
        onset=ONSET_TOLERANCE,
        gap=GAP_TOLERANCE,
    )
    return bullets, rows, tension_notes, details, footer


def render_markdown(table, settings, datasets, seeds, runs=None) -> str:
    bullets, rows, tensions, details, footer = _document(table, settings, datasets, seeds, runs)
    lines = [
        "# Reproduction verdict",
        "",
        INTRO,
        "",
        *(f"- {b}" for b in bullets),
        "",
        footer,
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    for cells in rows:
        cells = cells[:5] + [f"**{cells[5]}**" if cells[5] != NOT_COMPARABLE else cells[5]] + cells[6:]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    lines += [
        "",
        "## Statements of the paper that contradict each other",
        "",
        *(f"- {t}" for t in tensions),
        "",
        "## Each claim: the paper's words and what we measure",
        "",
        *(f"- {d}" for d in details),
        "",
    ]
    return "\n".join(lines)


def _html_text(text: str) -> str:
    """Escape, and turn `code` spans into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


VERDICT_COLOURS = {REPRODUCED: "#d9f0d3", NOT_REPRODUCED: "#f6d0c4", INCONCLUSIVE: "#fbeec1", NOT_COMPARABLE: "#eeeeee"}


def render_html(table, settings, datasets, seeds, runs=None) -> str:
    """The same content as :func:`render_markdown`, as a standalone page (for the HTML report)."""
    bullets, rows, tensions, details, footer = _document(table, settings, datasets, seeds, runs)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = []
    for cells in rows:
        tds = [f"<td>{_html_text(str(c))}</td>" for c in cells]
        tds[5] = f'<td style="background:{VERDICT_COLOURS.get(cells[5], "#fff")}"><b>{html.escape(cells[5])}</b></td>'
        body.append("<tr>" + "".join(tds) + "</tr>")
    style = (
        "body{font-family:sans-serif;font-size:14px;margin:1.5em;max-width:80em}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:4px 6px;vertical-align:top}"
        "th{background:#f3f3f3;text-align:left}code{font-size:12px}"
    )

    def items(xs):
        return "<ul>" + "".join(f"<li>{_html_text(x)}</li>" for x in xs) + "</ul>"

    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8"><title>Reproduction verdict</title>',
            f"<style>{style}</style></head><body>",
            "<h1>Reproduction verdict</h1>",
            f"<p>{_html_text(INTRO)}</p>",
            items(bullets),
            f"<p>{_html_text(footer)}</p>",
            f"<table><thead><tr>{head}</tr></thead><tbody>",
            *body,
            "</tbody></table>",
            "<h2>Statements of the paper that contradict each other</h2>",
            items(tensions),
            "<h2>Each claim: the paper's words and what we measure</h2>",
            items(details),
            "</body></html>",
            "",
        ]
    )


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


def verdict_stage(
    trust_paths, history_paths, out_md, out_csv, settings: Mapping, out_html=None, bootstrap_paths=()
) -> pd.DataFrame:
    """Read every run's tables, evaluate ``CLAIMS``, write the Markdown, CSV (and HTML) verdicts."""
    runs = load_runs(trust_paths, history_paths, bootstrap_paths)
    return write_verdict(runs, settings, out_md, out_csv, out_html)
