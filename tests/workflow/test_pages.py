"""The pages a reader opens, looked at in a real browser (headless Chromium, tests/helpers/pages.py): every
page of the documentation site, the verdict's HTML and, after a tiny run, its reproduction.html and
Snakemake's report. A page fails on markup left unrendered (a reST role, a Markdown emphasis marker, a
link, TeX, a docutils error message), a broken image, a console error, a resource that did not load, a table
cut off at 1280 px, a page wider than its window and a contents list that names one entry twice. The report's
landing page is also looked at on a wide screen (1,400 × 900) and on a phone (390 × 844), and each verdict's
first screen (1,400 × 900) must show the table about its run. Screenshots are kept for review: under the
test's temporary folder (the path is printed; `pytest -s` shows it), or in $TRUSTCAL_SCREENSHOTS when set.

Chromium is Debian's `chromium` package: .ci/run installs it when it runs as root with apt (as it starts
SLURM); elsewhere these tests are skipped with the reason.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.pages import check_pages, chromium, page_layout, report
from helpers.workflow import REPO, snakemake

needs_chromium = pytest.mark.skipif(
    chromium() is None,
    reason="no Chromium on this machine: .ci/run installs Debian's `chromium` when it runs as root with apt "
    "(by hand: apt-get install chromium, or set TRUSTCAL_CHROMIUM to a Chromium binary)",
)
needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (pip install -e '.[docs]')"
)


def screenshots(tmp_path: Path, name: str) -> Path:
    where = Path(os.environ.get("TRUSTCAL_SCREENSHOTS") or tmp_path / "screenshots") / name
    where.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of {name}: {where}")
    return where


def assert_clean(found: dict[str, list[str]], shots: Path) -> None:
    assert found and not any(found.values()), f"{report(found)}\n(screenshots: {shots})"


# ----- the checker itself: each defect it looks for makes it fail

BAD_PAGES = {
    "role.html": ("<p>What :func:`assess` returns.</p>", "reST role"),
    "role_code.html": ("<p>What :class:<code>AssessmentResult</code> holds.</p>", "reST role"),
    "literal.html": ("<p>Example::</p>", "reST literal-block marker"),
    "strong.html": ("<p>A claim is **reproduced** when its interval lies in the band.</p>", "Markdown strong"),
    "emphasis.html": ("<p>How to read it: *Measured* is the mean over seeds.</p>", "Markdown emphasis"),
    "link.html": ("<p>See [the method](method.md#calibration).</p>", "Markdown link"),
    "reference.html": ("<p>See [assess][trustcal.api.assess].</p>", "Markdown reference"),
    "math.html": ("<p>The width is $\\frac{1}{M}$.</p>", "TeX math"),
    "image.html": ('<p><img src="figures/missing.png" alt="a figure"></p>', "broken image"),
    "console.html": ("<script>console.error('boom')</script><p>text</p>", "console error"),
    "exception.html": ("<script>no_such_function()</script><p>text</p>", "uncaught error"),
    "contents.html": (
        '<nav class="md-nav md-nav--secondary"><ul><li><a href="#a">Settings</a></li>'
        '<li><a href="#b">Settings</a></li></ul></nav><h2 id="a">Settings</h2><h2 id="b">Settings</h2>',
        "the page's contents list",
    ),
    "docutils.html": (
        '<div class="system-message"><p class="system-message-title">System Message: WARNING/2 '
        "(<tt>&lt;string&gt;</tt>, line 35)</p><p>Definition list ends without a blank line.</p></div>",
        "docutils system message",
    ),
    "wide.html": ('<div style="width:3000px">a line wider than any window</div>', "the page is"),
    "doctest.html": ("<blockquote><blockquote><p>import numpy</p></blockquote></blockquote>", "quotes within quotes"),
    "table.html": (
        '<div style="width:300px;overflow-x:auto"><table><tr>'
        + "".join(f'<th style="min-width:120px">column {i}</th>' for i in range(6))
        + "</tr></table></div>",
        "table cut off",
    ),
}
GOOD_PAGE = (
    "<h1>Fine</h1><p>Rendered: <em>Measured</em>, <strong>reproduced</strong>, <code>:func:`x` **y** $z$</code>, "
    "<a href='#x'>a link</a>; prose with 2 * 3 * 4, P(y = 1), a*b and snake_case_names.</p>"
    "<pre><code>&gt;&gt;&gt; f(**kwargs)  # *args\nExample::</code></pre>"
    '<img src="dot.png" alt="a dot">'
)


def page(body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>t</title></head><body>{body}</body></html>'
    )


@needs_chromium
def test_the_checker_fails_on_each_defect_and_passes_a_clean_page(tmp_path):
    from PIL import Image

    site = tmp_path / "site"
    site.mkdir()
    Image.new("RGB", (8, 8), "red").save(site / "dot.png")
    (site / "good.html").write_text(page(GOOD_PAGE))
    for name, (body, _) in BAD_PAGES.items():
        (site / name).write_text(page(body))
    shots = screenshots(tmp_path, "checker")
    found = check_pages(site, ["good.html", *BAD_PAGES], shots)
    assert found["good.html"] == [], found["good.html"]
    for name, (_, problem) in BAD_PAGES.items():
        assert any(p.startswith(problem) or problem in p for p in found[name]), (name, found[name])
    assert (shots / "good.html.png").stat().st_size > 1000


# ----- the documentation site


@needs_chromium
@needs_mkdocs
def test_every_page_of_the_documentation_site(tmp_path):
    site = tmp_path / "site"
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if p.relative_to(site).parts[0] not in ("assets", "search")
    )
    assert "api/index.html" in pages and len(pages) >= 12
    shots = screenshots(tmp_path, "site")
    assert_clean(check_pages(site, pages, shots), shots)


# ----- the verdict's HTML page


def assessed_runs(dataset: str):
    """One model's predictions (600 samples, 10 classes, seeded), assessed as `trustcal assess` does, as a run of
    ``dataset``, with the settings the verdict is written under."""
    import trustcal
    from trustcal.assessment.output import paper_runs
    from trustcal.measures.trust import TrustParams
    from trustcal.reporting.verdict import VerdictSettings

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 600)
    logits = rng.normal(size=(600, 10)) + 4 * np.eye(10)[labels]
    result = trustcal.assess(logits, labels, kind="logits", validation=(logits[:300], labels[:300]), bootstrap=20)
    return paper_runs(result.assessment, dataset), VerdictSettings(trust=TrustParams(), epochs=1, fit_on="validation")


@needs_chromium
def test_the_verdict_page_of_an_assessment(tmp_path):
    """The paper's claims judged on one model's predictions (as `trustcal assess --paper-claims mnist` judges
    them), written as the workflow writes reproduction.html."""
    from trustcal.reporting.verdict import write_verdict

    runs, settings = assessed_runs("mnist")
    out = tmp_path / "verdict"
    write_verdict(runs, settings, out / "v.md", out / "v.csv", out / "reproduction.html")
    shots = screenshots(tmp_path, "verdict")
    assert_clean(check_pages(out, ["reproduction.html"], shots), shots)


@needs_chromium
def test_the_verdict_page_of_a_run_without_the_papers_datasets(tmp_path):
    """A verdict on a run of none of the paper's datasets (one model's predictions as an SVHN run) opens with the
    general claims judged on it: on a 1,400 × 900 screen, that table is the page's first and starts on it."""
    from trustcal.reporting.verdict import write_verdict

    runs, settings = assessed_runs("svhn")
    out = tmp_path / "verdict"
    write_verdict(runs, settings, out / "v.md", out / "v.csv", out / "reproduction.html", general=True)
    shots = screenshots(tmp_path, "verdict of a run of its own")
    assert_first_table(
        page_layout(out, "reproduction.html", shots, 1400, 900), ["Claim", "Reproduced when", "SVHN (CNN)"]
    )


def assert_first_table(layout, head: list[str]) -> None:
    """The page is clean, as wide as its window, and its first table has ``head`` and starts on the first screen."""
    assert not layout.problems, layout.problems
    assert layout.scroll_width <= layout.width
    first = layout.tables[0]
    assert first["head"][: len(head)] == head and first["shown"], layout.tables
    assert 0 < first["top"] < layout.height, f"the table starts {first['top']:.0f} px down a {layout.height} px screen"


# ----- the reports of a finished tiny run


@pytest.mark.slow
@needs_chromium
def test_the_reports_of_a_tiny_run(copy_of, tmp_path):
    """results/reproduction.html and `snakemake --report`'s report.html of a finished tiny run."""
    snakemake(copy_of, "--report", "report.html")
    pages = ["report.html", "results/reproduction.html"]
    shots = screenshots(tmp_path, "tiny run")
    assert_clean(check_pages(copy_of, pages, shots), shots)
    # the verdict's first screen: the paper's statements judged on this run
    verdict = page_layout(copy_of, "results/reproduction.html", shots, 1400, 900)
    assert_first_table(verdict, ["Claim", "Paper", "Measured (mean ± sd, n)"])
    # the landing page on a wide screen and on a phone: the run at a glance from the top, nothing sideways
    for width, height in ((1400, 900), (390, 844)):
        landing = page_layout(copy_of, "report.html", shots, width, height)
        assert not landing.problems and landing.scroll_width <= width, (width, landing.problems)
        runs = landing.table(id="trustcal-runs")
        assert runs and runs["shown"] and runs["head"] == ["Run", "Dataset", "Network", "Recipe", "Epochs", "Seeds"]
        assert 0 <= runs["left"] and runs["right"] <= width, (width, runs)  # no column beyond the window
        assert runs["top"] < height - 80, (width, runs)  # its head and first run on the first screen
        if width > 1000:  # the text starts at the top, beside the menu, not centred below blank space
            assert runs["top"] < 250 and runs["bottom"] < height, runs
