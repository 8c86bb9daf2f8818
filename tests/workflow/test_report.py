"""A finished tiny run yields every figure, the reproduction verdict and the HTML report."""

import re
import shutil
import subprocess
from dataclasses import dataclass

import pandas as pd
import pytest
from helpers.workflow import REPO, make_workdir, snakemake

from trustcal.reporting.figures import FIGURES
from trustcal.reporting.verdict import CLAIMS, NOT_COMPARABLE

slow = pytest.mark.slow  # the tests of a finished tiny run


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("report") / "work")
    snakemake(workdir)
    return workdir


@slow
def test_every_figure_and_the_verdict_are_produced(finished):
    for dataset in ("mnist", "cifar10"):
        for name in FIGURES:
            for ext in ("png", "pdf"):
                assert (finished / "results" / "figures" / dataset / f"{name}.{ext}").stat().st_size > 10_000
    table = pd.read_csv(finished / "results" / "reproduction.csv")
    assert list(table.loc[table["scope"] == "paper", "claim_id"]) == [c.id for c in CLAIMS]
    general = table[table["scope"] == "general"]  # each general claim judged on both runs
    assert len(general) == 2 * general["claim_id"].nunique() > 0 and set(general["dataset"]) == {"mnist", "cifar10"}
    # 3 epochs: the epoch-20 claims cannot be judged
    late = table.set_index("claim_id").loc["cifar10_trust_before_late"]
    assert late["verdict"] == NOT_COMPARABLE and "this run has 3" in late["reason"]
    assert "# Reproduction verdict" in (finished / "results" / "reproduction.md").read_text()
    assert "<h1>Reproduction verdict</h1>" in (finished / "results" / "reproduction.html").read_text()


@slow
def test_html_report_builds_and_holds_every_figure_and_the_verdict(finished):
    snakemake(finished, "--report", "report.html")
    html = (finished / "report.html").read_text(errors="replace")
    assert len(html) > 100_000
    for name in FIGURES:
        assert f"{name}.png" in html, name
    assert "reproduction.html" in html and "reproduction.csv" in html
    sections = {spec.section for spec in FIGURES.values()}  # the report sections of the registry
    for category in ("MNIST", "CIFAR-10", "Reproduction verdict", *sections):
        assert category in html, category
    # the calibration caption, rendered with the run's config (calibration: fit_on: validation)
    assert "fitted on the validation set (" in re.sub(r"(\\n|\s)+", " ", html)
    # the landing page: the run at a glance (results/summary.html, written by the verdict job), then the rest
    assert landing_rows(html) == TINY_RUNS
    assert f"The paper's {len(CLAIMS)} statements:</b>" in html and "System Message" not in html


PAPER_RECIPE = "Adam, rate 0.001, batch 32 (the paper's)"
TINY_RUNS = [  # the landing page's "What ran" of tests/tiny.yaml
    ["mnist", "MNIST", "MLP", PAPER_RECIPE, "3 (the paper: 100)", "0"],
    ["cifar10", "CIFAR-10", "CNN", PAPER_RECIPE, "3 (the paper: 100)", "0"],
]


def landing_rows(report: str) -> list[list[str]]:
    """The cells of the "What ran" table of a report's landing page (report.html: the page's text is a JSON
    string in it), or of the rendered landing page itself."""
    text = report.replace('\\"', '"').replace("\\n", "\n")
    body = text.split('id="trustcal-runs"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def report_in(env_python, workdir, name: str):
    cmd = [str(env_python), "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--configfile", "tiny.yaml"]
    return subprocess.run([*cmd, "--cores", "1", "--report", name], cwd=workdir, capture_output=True, text=True)


@slow
def test_the_report_builds_in_a_fresh_workflow_environment(finished, tmp_path):
    """`snakemake --report` (make report) with only what `pip install '.[workflow]'` installs: pygments comes
    with the extra (without it Snakemake refuses), and the landing page describes this run, not the paper's."""
    from helpers.extras import extra_env

    python = extra_env(tmp_path / "workflow-env", {"workflow"})
    done = report_in(python, finished, "fresh_report.html")
    assert done.returncode == 0, done.stdout + done.stderr
    html = re.sub(r"(\\n|\s)+", " ", (finished / "fresh_report.html").read_text(errors="replace"))
    assert landing_rows(html) == TINY_RUNS
    # the same environment without pygments: what the extra gave before it named pygments
    python = extra_env(tmp_path / "without-pygments", {"workflow"}, without={"pygments"})
    done = report_in(python, finished, "no_report.html")
    assert done.returncode != 0 and "pygments must be installed" in done.stdout + done.stderr


@dataclass(frozen=True, order=True)
class Category:  # a category of Snakemake's report, as its landing page's template sees one
    name: str


def render_landing(config: dict, categories=()) -> str:
    """workflow/report/workflow.rst rendered as Snakemake renders it (Jinja2, then docutils) for ``config``, with
    the links Snakemake adds to the text (each category and result by name) and the ``categories`` named."""
    from docutils.core import publish_parts
    from jinja2 import Environment

    class Snakemake:
        pass

    Snakemake.config = config
    cats = {Category(name): {} for name in ["0 Reproduction verdict", *categories]}
    links = "".join(f"\n.. _{c.name}: javascript:app.showCategory('{c.name}')" for c in cats)
    links += "".join(f"\n.. _{f}: javascript:app.showResultInfo('results/{f}')" for f in ("reproduction.html",))
    source = (REPO / "workflow" / "report" / "workflow.rst").read_text() + "\n" + links + "\n"
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    text = env.from_string(source).render(snakemake=Snakemake, categories=cats, files=[])
    return publish_parts(text, writer="html")["html_body"]


@pytest.mark.parametrize("datasets", [["mnist"], ["mnist", "cifar10"], ["mnist", "svhn", "c10_resnet"], ["svhn"]])
def test_the_report_landing_page_describes_the_run(datasets, tmp_path, monkeypatch):
    """workflow/report/workflow.rst, rendered as Snakemake renders it, from a config and the summary the verdict
    job writes for it (results/summary.html: what ran, the verdict's counts, the warnings' digest)."""
    from trustcal.registry import setup_params
    from trustcal.reporting.verdict.summary import write_summary

    seeds = {"mnist": [0, 1, 2]} if datasets == ["mnist"] else [0]
    config = {
        "datasets": datasets,
        "seeds": seeds,
        "epochs": 3,
        "calibration": {"methods": ["isotonic"], "fit_on": "validation"},
        "external": {},
        "setups": {"c10_resnet": {"dataset": "cifar10", "network": "resnet20"}},
    }
    runs = {ds: dict.fromkeys(seeds[ds] if isinstance(seeds, dict) else seeds) for ds in datasets}
    table = pd.DataFrame(
        [dict(scope="paper", claim_id=f"c{i}", dataset="mnist", verdict="reproduced") for i in range(3)]
        + [dict(scope="general", claim_id="g", dataset=ds, verdict="inconclusive") for ds in datasets]
    )
    warnings = ["temperature: T at a bound <t_max> in 1 of 3 epochs (3) of svhn seed 0: T = 100"]
    monkeypatch.chdir(tmp_path)  # the page includes results/summary.html, relative to the working directory
    write_summary(
        tmp_path / "results" / "summary.html",
        table,
        runs,
        {ds: setup_params(config, ds) for ds in datasets},
        3,
        warnings,
    )
    page = re.sub(r"\s+", " ", render_landing(config, categories=["MNIST (MLP)"]))
    assert "System Message" not in page, page  # every directive and link rendered
    assert "fitted on the validation set" in page and "(temperature, isotonic)" in page
    # what ran: one row per run, with its dataset, network, recipe, epochs and seeds
    cells = landing_rows(page)
    paper = PAPER_RECIPE
    expected = {
        "mnist": ["mnist", "MNIST", "MLP", paper, "3 (the paper: 100)", "0, 1, 2" if datasets == ["mnist"] else "0"],
        "svhn": ["svhn", "SVHN", "CNN", paper, "3", "0"],
        "c10_resnet": ["c10_resnet", "CIFAR-10", "ResNet-20", paper, "3", "0"],
        "cifar10": ["cifar10", "CIFAR-10", "CNN", paper, "3 (the paper: 100)", "0"],
    }
    assert cells == [expected[ds] for ds in datasets]
    # the verdict's counts, the warnings' digest (as text: no markup of its own), then where to read on
    assert "The general claims</b> (1 claim on each of" in page and "inconclusive</span>" in page
    assert "T at a bound &lt;t_max&gt; in 1 of 3 epochs" in page
    assert page.index("What ran") < page.index("Verdict") < page.index("Warnings (1)") < page.index("Read on")
    assert "MNIST (MLP)</a>" in page  # the figures: each run's category of the report, a link
    # the verdict's first table: the paper's claims where the run trained a dataset of the paper, else its own
    paper_first = "its first table is the paper's statements judged on this run" in page
    assert paper_first == (datasets != ["svhn"]) and ("judged on this run's own numbers" in page) != paper_first
    if datasets == ["svhn"]:
        assert "The paper's 3 statements</b> (about its networks on its datasets): not judged" in page
    else:
        assert "3 reproduced</span>" in page


@slow
def test_study_report_regenerates_the_readme_block_from_a_finished_run(finished, tmp_path):
    from trustcal.study import BEGIN, END, write_readme, write_study

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text(f"# title\n\nbefore\n\n{BEGIN}\nold text\n{END}\n\nafter\n")
    block = write_study(finished, repo, None, "snakemake --cores 2")
    readme = (repo / "README.md").read_text()
    assert "old text" not in readme and readme.count(BEGIN) == 1 and readme.endswith(f"{END}\n\nafter\n")
    assert block in readme
    study = repo / "results" / "study"
    for ds in ("mnist", "cifar10"):
        assert (study / f"{ds}_trust_grid.png").stat().st_size > 10_000
        trust = pd.read_csv(study / f"{ds}_trust.csv.gz")
        assert set(trust["seed"]) == {0} and trust["epoch"].max() == 3
    assert (study / "reproduction.md").read_text() == (finished / "results" / "reproduction.md").read_text()
    # the README block: the run, the data (with the CIFAR-10 note), the counts, links; not the claims' table
    assert "JPEG" in block and "`snakemake --cores 2`" in block
    assert f"**Verdict** on the paper's {len(CLAIMS)} result statements: " in block
    assert "[results/study/study.md](results/study/study.md)" in block and "| Statement" not in block
    assert "× its training time" in block.split("**Data.**")[0]  # the run's wall time against its training
    assert "**Cost.** Job wall time of training (`train`): " in block  # the summary of results/study/costs.md
    # docs/method.md §13's two questions answered per dataset, whatever the answers are
    for question in ("rank right and wrong answers better than the max probability? ", "what rises after the best"):
        assert block.count(question) == 2, question
    for ds in ("mnist", "cifar10"):
        paired = pd.read_csv(study / f"{ds}_selective_paired.csv.gz")
        assert set(paired["score"]) == {"belief", "projected_probability", "evidence"} and paired["lo"].notna().all()
    # study.md: the full account, every claim, its links relative to results/study/ where it lives
    full = (study / "study.md").read_text()
    for claim in CLAIMS:
        assert f"`{claim.id}`" in full and f"`{claim.id}`" not in block
    links = re.findall(r"\]\(([^)\s]+)\)", full)
    assert links and all((study / link).is_file() for link in links), links
    # the block needs only results/study/: rebuilt from it alone, it is the same
    (repo / "README.md").write_text(f"{BEGIN}\n{END}\n")
    assert write_readme(repo) == block and (repo / "README.md").read_text() == block + "\n"


@slow
def test_study_report_adds_a_run_beyond_the_papers(finished, tmp_path):
    """A second run directory whose configuration declares a setup (the paper's CNN on CIFAR-10, trained by SGD):
    its section, the general claims judged on it and one README paragraph, with its epochs and seeds."""
    from trustcal.study import BEGIN, END, write_study

    setups = {"c10_sgd": {"dataset": "cifar10", "recipe": "sgd"}}
    other = make_workdir(tmp_path / "other", datasets=["c10_sgd"], setups=setups, epochs=2, seeds=[0, 1])
    snakemake(other)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text(f"{BEGIN}\n{END}\n")
    block = write_study(
        finished, repo, None, "snakemake --cores 2", beyond=[(other, "snakemake --configfile tiny.yaml")]
    )
    general = pd.read_csv(other / "results" / "reproduction.csv")
    general = general[(general["scope"] == "general") & (general["dataset"] == "c10_sgd")]
    held = int((general["verdict"] == "reproduced").sum())
    (paragraph,) = [p for p in block.split("\n\n") if p.startswith("**Beyond the paper.**")]
    assert (
        paragraph.startswith("**Beyond the paper.** Do the paper's findings hold on CIFAR-10 (CNN)? ")
        and ": on CIFAR-10 with CNN and SGD, 2 epochs, 2 seeds (0, 1), of the " in paragraph
    )
    assert (
        f"of the {len(general)} general claims (the paper's statements about training and calibration in general) {held} held"
        in paragraph
    )
    for claim in general.loc[general["verdict"] == "not reproduced", "claim_id"]:
        assert f"(`{claim}`)" in paragraph
    study = repo / "results" / "study"
    full = (study / "study.md").read_text()
    part = full.split("### Beyond the paper: CIFAR-10 (CNN)", 1)[1]
    assert "**Seeds.** CIFAR-10 (CNN): 2 (seeds 0, 1), 2 epochs each (the paper: 100" in part
    assert "#### Does it hold beyond the paper? CIFAR-10 (CNN)" in part
    for claim in general["claim_id"]:
        assert f"`{claim}`" in part
    assert pd.read_csv(study / "c10_sgd_history.csv.gz")["epoch"].max() == 2
    assert (study / "c10_sgd_trust_grid.png").stat().st_size > 10_000
    links = re.findall(r"\]\(([^)\s]+)\)", full)
    assert all((study / link).is_file() for link in links), links
    # only the run beyond the paper's read again, the paper's runs kept from report.json: the same documents
    before = (study / "study.md").read_text()
    assert (
        write_study(None, repo, None, "snakemake --cores 2", beyond=[(other, "snakemake --configfile tiny.yaml")])
        == block
    )
    assert (study / "study.md").read_text() == before
    # the paper's runs again with the run beyond kept from report.json, its directory gone: the same section
    shutil.rmtree(other)
    again = write_study(finished, repo, None, "snakemake --cores 2", keep_beyond=True)
    assert [p for p in again.split("\n\n") if p.startswith("**Beyond the paper.**")] == [paragraph]
    assert (study / "study.md").read_text().split("### Beyond the paper: CIFAR-10 (CNN)", 1)[1] == part


def test_the_committed_readme_block_is_a_rendering_of_the_committed_report():
    """A consistency check of the committed files, not of the rendering: README.md's study block is what
    trustcal.study.render.readme_block makes of results/study/report.json, and that report's metrics are those
    of the per-epoch tables committed beside it (results/study/{dataset}_*.csv.gz)."""
    from trustcal.study import BEGIN, END, REPORT_FILE, load_report, readme_block
    from trustcal.study.tables import metrics

    readme = (REPO / "README.md").read_text()
    assert readme.count(BEGIN) == 1 and readme.count(END) == 1
    committed = BEGIN + readme.split(BEGIN, 1)[1].split(END, 1)[0] + END
    study = REPO / "results" / "study"
    report = load_report(study / REPORT_FILE)
    assert committed == readme_block(report), (
        "README.md's study block differs from results/study/report.json; regenerate it with\n"
        "  PYTHONPATH=workflow python -c 'import pathlib, trustcal.study as s; s.write_readme(pathlib.Path(\".\"))'"
    )
    for section in report.datasets + [s for b in report.beyond for s in b.datasets]:
        t = {n: pd.read_csv(study / f"{section.name}_{n}.csv.gz") for n in ("scores", "calibration", "history")}
        tables = metrics(t["scores"], t["calibration"], t["history"])
        for ours, theirs in zip(section.metrics, tables, strict=True):  # the tables keep 6 significant digits
            assert ours.epochs == theirs.epochs and ours.point == theirs.point
            assert ours.ece_after == pytest.approx(theirs.ece_after, rel=1e-5)
            assert ours.accuracy == pytest.approx(theirs.accuracy, rel=1e-5)


def test_calibrator_findings_answer_the_two_questions_from_the_tables():
    """Hand-built tables: isotonic keeps trust above the raw model at every epoch, temperature not
    (the ECE comparison, paired, is tested in tests/unit/measures/test_paired.py)."""
    from trustcal.study import calibrator_findings, comparison

    trust = []
    for epoch in (1, 2, 3):
        for cal, shift in (("none", 0.0), ("temperature", -0.01 if epoch == 2 else 0.01), ("isotonic", 0.01)):
            trust += [
                dict(seed=0, epoch=epoch, calibrator=cal, label=str(z), belief=0.6 + shift + 0.01 * z) for z in range(3)
            ]
    trust = pd.DataFrame(trust)
    (trust_line,) = calibrator_findings(comparison(trust, None, 3))
    assert "(what the paper says of temperature scaling): `isotonic`; below it at some epoch" in trust_line
    assert "`temperature` -0.010, `isotonic` +0.010" in trust_line


@pytest.mark.parametrize("keep", [dict(keep_beyond=True), dict(run_dir=None)])
def test_keeping_runs_without_a_report_to_keep_them_from_is_one_line_before_anything_is_written(tmp_path, keep):
    """--keep-beyond or --keep-paper where results/study/ has no report.json: a TrustcalError naming the file and
    what to run, raised before a run beyond the paper's is read or a file written."""
    from trustcal.errors import TrustcalError
    from trustcal.study.build import build_report

    out = tmp_path / "study"
    options = dict(run_dir=tmp_path / "run", beyond=[(tmp_path / "other", None)]) | keep
    with pytest.raises(TrustcalError, match=r"report\.json: no report to keep runs from; write one from the paper's"):
        build_report(out=out, author_dir=None, command="snakemake", **options)
    assert not out.exists()
