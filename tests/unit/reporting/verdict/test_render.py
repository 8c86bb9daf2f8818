"""The verdict's HTML page (reporting/verdict/render.py): its Markdown rendered as Markdown renders it, so the
page shows no asterisk of ``*Measured*`` or ``**reproduced**`` (the browser check of the whole page:
tests/workflow/test_pages.py)."""

import html
import re

import pandas as pd
import pytest
from helpers.pages import raw_markup

from trustcal.reporting import verdict
from trustcal.reporting.verdict import render
from trustcal.stages import verdict_settings

markdown = pytest.importorskip("markdown")  # the oracle: Python-Markdown (the docs extra's)

EPOCHS = 12
SETTINGS = verdict_settings(
    {
        "epochs": EPOCHS,
        "clusters": 10,
        "trust": {"weight": 2.0, "representative": "midpoint"},
        "calibration": {"fit_on": "validation"},
        "bootstrap": {"resamples": 200, "level": 0.95},
    }
)


def run(belief_before: float, belief_after: float):
    rows = []
    for epoch in range(1, EPOCHS + 1):
        for calibrator, b in (("none", belief_before - 0.004 * epoch), ("temperature", belief_after)):
            for label in [*map(str, range(10)), "network"]:
                rows.append(
                    dict(
                        epoch=epoch,
                        calibrator=calibrator,
                        label=label,
                        belief=b,
                        disbelief=0.99 - b,
                        uncertainty=0.01,
                        base_rate=0.5,
                        positive_evidence=1.0,
                        negative_evidence=1.0,
                    )
                )
    e = pd.Series(range(1, EPOCHS + 1))
    history = pd.DataFrame(
        dict(epoch=e, train_loss=1.5 / e, train_accuracy=0.9, val_loss=0.8 + 0.02 * (e - 5).abs(), val_accuracy=0.8)
    )
    return verdict.run_from_tables(pd.DataFrame(rows), history)


@pytest.fixture(scope="module")
def judged():
    runs = {"mnist": {0: run(0.7, 0.6), 1: run(0.71, 0.61)}, "cifar10": {0: run(0.5, 0.55)}}
    table = verdict.evaluate(runs)
    datasets = sorted(runs)
    return table, datasets, {ds: sorted(runs[ds]) for ds in datasets}, runs


def as_markdown(text: str) -> str:
    """Python-Markdown's HTML of one paragraph of inline text, without the paragraph."""
    out = markdown.markdown(text)
    assert out.startswith("<p>") and out.endswith("</p>"), out
    return out[3:-4]


def texts(judged, paper: bool):
    table, datasets, seeds, runs = judged
    bullets, rows, tensions, details, footer = render._document(table, SETTINGS, datasets, seeds, runs, paper=paper)
    return [*bullets, footer, *tensions, *details, *(str(cell) for row in rows for cell in row if str(cell))]


@pytest.mark.parametrize("paper", [True, False], ids=["paper", "claims file"])
def test_every_text_of_the_page_is_rendered_as_markdown_renders_it(judged, paper):
    found = texts(judged, paper)
    assert any("*Measured*" in t for t in found) and any("**reproduced**" in t for t in found)
    for text in found:
        assert render._html_text(text) == as_markdown(text), text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("*Measured* is the mean", "<em>Measured</em> is the mean"),
        ("a claim is **not reproduced** when", "a claim is <strong>not reproduced</strong> when"),
        ("`a*b*c` and *d*", "<code>a*b*c</code> and <em>d</em>"),
        ("t·sd/√n, x * y * z, p < 0.05 & q", "t·sd/√n, x * y * z, p &lt; 0.05 &amp; q"),
        ("2*3*4", "2*3*4"),  # a product, unlike Markdown's intraword emphasis
        ("`<b>`", "<code>&lt;b&gt;</code>"),
    ],
)
def test_inline_markdown(text, expected):
    assert render._html_text(text) == expected


def test_the_page_shows_no_markdown_marker(judged):
    table, datasets, seeds, runs = judged
    page = render.render_html(table, SETTINGS, datasets, seeds, runs)
    assert "<em>Measured</em>" in page and "<strong>reproduced</strong>" in page
    body = re.sub(r"<code>.*?</code>", " ", page.split("<body>", 1)[1], flags=re.S)
    assert raw_markup(html.unescape(re.sub(r"<[^>]+>", " ", body))) == []


def test_the_general_section_is_rendered_as_markdown_renders_it(judged):
    """The section "Does it hold beyond the paper?": its paragraphs, cells, notes and details on the page as
    Markdown renders them, and no marker left on the page."""
    table, datasets, seeds, runs = judged
    general = verdict.evaluate_general(runs, verdict.CLAIMS)
    paragraphs, header, rows, notes, details = render._general_document(general, SETTINGS, runs)
    cells = [str(x) for claim, rule, *values in rows for x in (claim, rule, *(c for c, _ in values))]
    found = [*paragraphs, *header, *notes, *details, render.GENERAL_DETAILS, *cells]
    assert any("**reproduced**" in t for t in found) and any("*paired*" in t for t in found)
    for text in found:
        assert render._html_text(text) == as_markdown(text), text
    page = render.render_html(pd.concat([table, general], ignore_index=True), SETTINGS, datasets, seeds, runs)
    assert f"<h2>{verdict.GENERAL_TITLE}</h2>" in page
    body = re.sub(r"<code>.*?</code>", " ", page.split("<body>", 1)[1], flags=re.S)
    assert raw_markup(html.unescape(re.sub(r"<[^>]+>", " ", body))) == []


def test_the_warnings_section_lists_the_digest_and_is_absent_without_warnings(judged):
    """The section "Warnings" (trustcal.reporting.digest's lines) ends the Markdown and the page, with each line
    as it is (a calibrator's name with ``*`` is not emphasis on the page); no warnings, no section."""
    table, datasets, seeds, runs = judged
    lines = [
        "isotonic raised the test NLL in 2 of 3 epochs of mnist seed 0: 0.300 → 0.500 (worst, epoch 1)",
        "a*b*c <x>",
    ]
    md = render.render_markdown(table, SETTINGS, datasets, seeds, runs, warnings=lines)
    assert md.rstrip().endswith(f"- {lines[0]}\n- {lines[1]}")
    assert f"## {render.WARNINGS_TITLE}" in md
    page = render.render_html(table, SETTINGS, datasets, seeds, runs, warnings=lines)
    assert f"<li>{lines[0]}</li><li>a*b*c &lt;x&gt;</li></ul>\n</body>" in page
    for text in (
        render.render_markdown(table, SETTINGS, datasets, seeds, runs),
        render.render_html(table, SETTINGS, datasets, seeds, runs),
    ):
        assert render.WARNINGS_TITLE not in text
