"""The run at a glance (``results/summary.html``): what the landing page of Snakemake's report shows first.

Written by the verdict job beside ``reproduction.html`` (:func:`~trustcal.stages.verdict_stage`) and
included in the report's landing page (``workflow/report/workflow.rst``), an HTML fragment of three parts:

- *What ran*: a table of the runs the verdict judged, each with its dataset, network, recipe, epochs and seeds
  (``id="trustcal-runs"``; on a phone each row reads as a card, a cell a line with its column's name);
- *Verdict*: the counts of the paper's statements and of the general claims (each claim on each run) by
  verdict: reproduced, not reproduced, inconclusive, not comparable;
- *Warnings*: the digest of the jobs' warnings (:func:`trustcal.reporting.digest.digest_lines`), the lines
  the console prints at the end of a run and the verdict's section "Warnings" carries.

The page it sits in is Snakemake's, so it brings its own style, every rule under ``.trustcal-summary``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from trustcal.files import atomic_path
from trustcal.registry import PAPER_DATASETS, RegistryError, Setup, network_title, setup_of
from trustcal.reporting.verdict.claims import PAPER_SETTINGS
from trustcal.reporting.verdict.evaluation import GENERAL_SCOPE, PAPER_SCOPE, VERDICTS

# the verdict's colours, here and on the verdict page (render.VERDICT_COLOURS, which imports this module)
COLOURS = dict(zip(VERDICTS, ("#d9f0d3", "#f6d0c4", "#fbeec1", "#eeeeee")))
RUNS_HEADER = ("Run", "Dataset", "Network", "Recipe", "Epochs", "Seeds")
TABLE_ID = "trustcal-runs"
OPTIMIZER_TITLES = {"adam": "Adam", "sgd": "SGD"}
NUMBER = ' class="num"'  # a cell of numbers: kept on one line

STYLE = """
.trustcal-summary{font-family:ui-sans-serif,system-ui,sans-serif;font-size:14px;line-height:1.45;color:#1e293b}
.trustcal-summary h2{font-size:1.05rem;font-weight:600;margin:1.1em 0 .4em}
.trustcal-summary table{border-collapse:collapse;width:auto;margin:0}
.trustcal-summary th,.trustcal-summary td{border:1px solid #cbd5e1;padding:4px 8px;text-align:left;vertical-align:top}
.trustcal-summary th{background:#f1f5f9;font-weight:600}
.trustcal-summary td.num{white-space:nowrap}
.trustcal-summary p{margin:.3em 0}
.trustcal-summary .count{display:inline-block;padding:0 .45em;margin:.1em .1em .1em 0;border-radius:3px;white-space:nowrap}
.trustcal-summary ul{margin:.2em 0;padding-left:1.2em;list-style:disc}
.trustcal-summary li{margin:.15em 0;overflow-wrap:anywhere}
@media (min-width:641px){.trustcal-summary td:not([data-label=Recipe]){white-space:nowrap}}
@media (max-width:640px){
.trustcal-summary table,.trustcal-summary tbody,.trustcal-summary tr,.trustcal-summary td{display:block;width:auto}
.trustcal-summary thead{display:none}
.trustcal-summary tr{border:1px solid #cbd5e1;margin:0 0 .5em;padding:2px 0}
.trustcal-summary td{border:0;padding:1px 8px}
.trustcal-summary td::before{content:attr(data-label) ": ";font-weight:600}
}
"""


def _esc(text) -> str:
    return html.escape(str(text), quote=False)


def recipe_text(setup: Setup) -> str:
    """``Adam, rate 0.001, batch 32 (the paper's)``; a recipe of its own with its schedule, weight decay,
    augmentation and normalisation when it has them."""
    r = setup.recipe
    parts = [
        OPTIMIZER_TITLES.get(r.optimizer, r.optimizer) + (" (Nesterov)" if r.nesterov and r.optimizer == "sgd" else "")
    ]
    parts += [f"rate {r.learning_rate:g}", f"batch {r.batch_size}"]
    if r.schedule != "constant":
        parts.append(f"{r.schedule} schedule")
    if r.weight_decay:
        parts.append(f"weight decay {r.weight_decay:g}")
    if r.augment:
        parts.append("augmented (" + ", ".join(r.augment) + ")")
    if r.normalise:
        parts.append("normalised")
    return ", ".join(parts) + (" (the paper's)" if r.is_paper else "")


def _seeds(seeds: Sequence[int]) -> str:
    """``0, 1, 2`` (three seeds or fewer), else ``10: 0–9`` (a consecutive range) or their count and list."""
    seeds = sorted(seeds)
    if len(seeds) <= 3:
        return ", ".join(map(str, seeds))
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{len(seeds)}: {seeds[0]}–{seeds[-1]}"
    return f"{len(seeds)}: " + ", ".join(map(str, seeds))


def run_rows(runs: Mapping[str, Mapping[int, object]], setups: Mapping[str, Mapping], epochs) -> list[list[str]]:
    """One row per run of ``runs`` (run → seed → its tables; in the order of ``setups``, the runs' ``setup``
    params, :func:`trustcal.registry.setup_params`, then by name): the cells of :data:`RUNS_HEADER`; a run of
    the paper's dataset names the paper's epochs beside its own when they differ."""
    order = [r for r in setups if r in runs] + sorted(r for r in runs if r not in setups)
    rows = []
    for name in order:
        try:
            s = setup_of(setups[name]) if name in setups else None
        except RegistryError:
            s = None
        if s is None:
            cells = [name, name, "?", "?"]
        else:
            network = network_title(s.network) + (
                " (" + ", ".join(f"{k}={v}" for k, v in s.network_kwargs) + ")" if s.network_kwargs else ""
            )
            cells = [name, s.dataset.title, network, recipe_text(s)]
        paper = (
            f" (the paper: {PAPER_SETTINGS['epochs']})"
            if name in PAPER_DATASETS and epochs != PAPER_SETTINGS["epochs"]
            else ""
        )
        rows.append([*cells, f"{epochs}{paper}", _seeds(list(runs[name]))])
    return rows


def counts(rows: pd.DataFrame) -> dict[str, int]:
    """Verdict → how many of ``rows`` (verdict table rows) have it, every verdict of :data:`VERDICTS`."""
    found = rows["verdict"].value_counts() if len(rows) else pd.Series(dtype=int)
    return {v: int(found.get(v, 0)) for v in VERDICTS}


def _counts_html(found: Mapping[str, int]) -> str:
    return " ".join(
        f'<span class="count" style="background:{COLOURS[v]}">{n} {_esc(v)}</span>' for v, n in found.items()
    )


def verdict_lines(table: pd.DataFrame, runs: Sequence[str]) -> list[str]:
    """The two lines of counts (HTML): the paper's statements, the general claims (each claim on each run)."""
    scope = table["scope"] if "scope" in table else pd.Series(PAPER_SCOPE, index=table.index)
    paper, general = table[scope == PAPER_SCOPE], table[scope == GENERAL_SCOPE]
    if not any(r in PAPER_DATASETS for r in runs):
        first = (
            f"<b>The paper's {len(paper)} statements</b> (about its networks on its datasets): not judged, as no run "
            "here is one of those."
        )
    else:
        first = f"<b>The paper's {len(paper)} statements:</b> {_counts_html(counts(paper))}"
    claims = general["claim_id"].nunique() if len(general) else 0
    n_runs = general["dataset"].nunique() if len(general) else 0
    second = (
        f"<b>The general claims</b> ({claims} claim{'s' * (claims != 1)} on each of {n_runs} "
        f"run{'s' * (n_runs != 1)}, {len(general)} verdicts): {_counts_html(counts(general))}"
        if len(general)
        else "<b>The general claims:</b> none judged."
    )
    return [first, second]


def render_summary(
    table: pd.DataFrame,
    runs: Mapping[str, Mapping[int, object]],
    setups: Mapping[str, Mapping],
    epochs,
    warnings: Sequence[str] = (),
) -> str:
    """The fragment (see the module's text): ``table`` the verdict's (reproduction.csv), ``runs`` run → seed →
    tables, ``setups`` run → its ``setup`` param, ``epochs`` the configured epochs, ``warnings`` the digest."""
    head = "".join(f"<th>{h}</th>" for h in RUNS_HEADER)
    body = []
    for cells in run_rows(runs, setups, epochs):
        tds = [
            f'<td data-label="{h}"{NUMBER if h in ("Epochs", "Seeds") else ""}>{_esc(c)}</td>'
            for h, c in zip(RUNS_HEADER, cells, strict=True)
        ]
        body.append("<tr>" + "".join(tds) + "</tr>")
    warned = (
        ["<ul>", *(f"<li>{_esc(w)}</li>" for w in warnings), "</ul>"]
        if warnings
        else ["<p>None: no job of these runs warned.</p>"]
    )
    return "\n".join(
        [
            # for the file opened alone (in the landing page, the page's own apply)
            '<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<style>{STYLE.strip()}</style>",
            '<div class="trustcal-summary">',
            "<h2>What ran</h2>",
            f'<table id="{TABLE_ID}"><thead><tr>{head}</tr></thead><tbody>',
            *body,
            "</tbody></table>",
            "<h2>Verdict</h2>",
            *(f"<p>{line}</p>" for line in verdict_lines(table, list(runs))),
            f"<h2>Warnings ({len(warnings)})</h2>" if warnings else "<h2>Warnings</h2>",
            *warned,
            "</div>",
            "",
        ]
    )


def write_summary(path, table, runs, setups, epochs, warnings=()) -> None:
    """:func:`render_summary` into ``path``, atomically."""
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(render_summary(table, runs, setups, epochs, warnings), encoding="utf-8")
