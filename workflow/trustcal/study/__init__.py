"""The account of the real study, regenerated from a finished run of the workflow.

``python workflow/scripts/study_report.py RUN_DIR`` reads ``RUN_DIR/results/`` (a run of the paper's
configuration, e.g. ``snakemake --cores 2 --set-threads train=1 logits=1 --configfile config.yaml workflow/study/config.yaml``) and writes
``results/study/`` in this repository: ``study.md`` (the full account: the run, the tables and figures per
dataset, every calibrator, the verdict with its contradictions, the runs beyond the paper's), the figures it
shows, the per-epoch tables they come from (gzipped CSV, one row per seed and epoch), the verdict, the verdict
on the author's published predictions, ``report.json``, the report's numbers, and the calibrator ranking
(``calibrator_ranking.csv``, ``.md``, ``.png``: every calibrator against temperature scaling, per run and
across runs). README.md gets a short summary between the ``<!-- study:begin -->`` and
``<!-- study:end -->`` markers. Nothing in either is typed by hand: both are rendered
(:mod:`trustcal.study.render`) from one :class:`~trustcal.study.report.Report` (:mod:`trustcal.study.report`)
that :func:`~trustcal.study.build.build_report` makes from the run.

The modules: :mod:`~trustcal.study.costs` (what each job cost, from ``results/benchmarks/``),
:mod:`~trustcal.study.provenance` (commit, machine, configuration, times, data), :mod:`~trustcal.study.tables`
(the numbers of a run's tables), :mod:`~trustcal.study.findings` (the sentences whose directions the numbers
decide), :mod:`~trustcal.study.ranking` (which calibrator wins, from the tables in ``results/study/`` alone;
``study_report.py --ranking-only results/study`` redoes it and the documents without a run),
:mod:`~trustcal.study.build` and :mod:`~trustcal.study.render`.
"""

from __future__ import annotations

from pathlib import Path

from trustcal.files import atomic_path
from trustcal.study.build import build_report
from trustcal.study.costs import TOTAL, cost_lines, cost_summary, read_costs, write_costs
from trustcal.study.findings import calibrator_findings
from trustcal.study.names import order, title
from trustcal.study.ranking_figure import write_ranking
from trustcal.study.render import BEGIN, END, readme_block, study_markdown
from trustcal.study.report import REPORT_FILE, Ranking, Report, load_report, save_report
from trustcal.study.tables import comparison, load_paired, paired_comparisons, separated

__all__ = [
    "BEGIN",
    "END",
    "REPORT_FILE",
    "TOTAL",
    "Report",
    "build_report",
    "calibrator_findings",
    "comparison",
    "cost_lines",
    "cost_summary",
    "load_paired",
    "load_report",
    "paired_comparisons",
    "read_costs",
    "readme_block",
    "separated",
    "study_markdown",
    "write_costs",
    "write_ranking",
    "write_ranking_only",
    "write_readme",
    "write_study",
]


def write_study(run_dir: Path | None, repo: Path, author_dir: Path | None, command: str, **options) -> str:
    """Everything under ``repo/results/study/`` (:func:`build_report` of ``run_dir``, ``author_dir`` and
    ``command``, with its ``options``: ``remark``, ``beyond``, ``keep_beyond``; ``run_dir`` None keeps the
    paper's runs of report.json; ``study.md`` and ``report.json``) and the README block
    (:func:`write_readme`); returns the block."""
    out = repo / "results" / "study"
    report = build_report(run_dir, out, author_dir, command, **options)
    write_documents(report, out)
    return write_readme(repo, report)


def write_documents(report: Report, out: Path) -> None:
    """``out/report.json`` and ``out/study.md`` of ``report``."""
    save_report(report, out / REPORT_FILE)
    with atomic_path(out / "study.md") as tmp:  # links relative to results/study/, where the file lives
        tmp.write_text(study_markdown(report).replace("](results/study/", "]("), encoding="utf-8")


def write_ranking_only(study: Path, repo: Path | None = None) -> Ranking | None:
    """The calibrator ranking of the tables in ``study`` (a ``results/study/``) alone, no run needed
    (:func:`~trustcal.study.ranking_figure.write_ranking`). With a ``report.json`` there, its runs in its order and
    titles; the ranking joins the report, and report.json, study.md and (``repo``: the repository whose
    ``results/study/`` it is) the README block are rendered again, otherwise unchanged. Without one, every
    run with a ``{run}_scores.csv.gz`` there, and only the three ranking files."""
    if (study / REPORT_FILE).exists():
        from trustcal.study.build import section_titles

        report = load_report(study / REPORT_FILE)
        report.ranking = write_ranking(study, section_titles(report))
        write_documents(report, study)
        if repo is not None:
            write_readme(repo, report)
        return report.ranking
    runs = sorted((p.name.removesuffix("_scores.csv.gz") for p in study.glob("*_scores.csv.gz")), key=order)
    return write_ranking(study, {r: title(r) for r in runs})


def write_readme(repo: Path, report: Report | None = None) -> str:
    """Put :func:`readme_block` of ``report`` (default: ``repo/results/study/report.json``) between the markers
    of ``repo/README.md``. Returns the block. A README without both markers is left as it is. Rebuilding the
    block after a change to its layout needs no run: in the repository,
    ``PYTHONPATH=workflow python -c 'import pathlib, trustcal.study as s; s.write_readme(pathlib.Path("."))'``.
    """
    block = readme_block(report or load_report(repo / "results" / "study" / REPORT_FILE))
    readme = repo / "README.md"
    text = readme.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
        with atomic_path(readme) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return block
