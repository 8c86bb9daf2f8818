"""The study report from finished runs: :func:`build_report` reads a run directory's ``results/`` (and those of
runs beyond the paper's), copies the tables, figures and verdicts the report shows into ``results/study/``,
and returns the :class:`~trustcal.study.report.Report` that holds its numbers."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from trustcal.errors import TrustcalError
from trustcal.files import read_seeds
from trustcal.measures.paired import stack_seeds
from trustcal.registry import DATASETS, PAPER_DATASETS, RegistryError, network_title, resolve_setup
from trustcal.reporting.verdict import invariance_note, load_runs
from trustcal.study import tables as tb
from trustcal.study.costs import history_seconds, training_share, write_costs
from trustcal.study.names import data_notes, title
from trustcal.study.png import save_png
from trustcal.study.provenance import config_files, data_sources, provenance, run_config
from trustcal.study.questions import (
    lowest_epochs,
    refinement_answer,
    refinement_changes,
    selective_answer,
    selective_differences,
)
from trustcal.study.ranking_figure import write_ranking
from trustcal.study.report import REPORT_FILE, Beyond, Costs, DatasetSection, Report, load_report, plain
from trustcal.study.shift import answer_lines, shift_questions
from trustcal.training.history import best_epoch

STUDY_FIGURES = ("trust_grid", "loss_curves", "calibration_metrics", "reliability", "network_opinion")
CALIBRATOR_FIGURES = ("calibrator_trust", "calibrator_metrics", "calibrator_reliability")
SHIFT_FIGURES = ("shift_metrics", "shift_trust", "shift_trust_accuracy", "shift_ood", "shift_ood_curves")
SHIFT_TABLES = ("shift", "shift_ood", "shift_ood_curves")  # results/{run}/<table>.csv, when shift: asked for sets
OPTIMIZERS = {"sgd": "SGD", "adam": "Adam"}
GZIP = {"method": "gzip", "mtime": 0}  # no time stamp in the header (the file name is): a table gives the same bytes


def paper_rows(verdict: pd.DataFrame) -> pd.DataFrame:
    """The rows of reproduction.csv that judge the paper's own statements (not the general claims judged on
    every run, ``scope == "general"``)."""
    return verdict[verdict["scope"] == "paper"] if "scope" in verdict else verdict


def general_rows(verdict: pd.DataFrame, run: str) -> pd.DataFrame:
    """The rows of reproduction.csv that judge the general claims on the run ``run``."""
    if "scope" not in verdict:
        return verdict.iloc[:0]
    return verdict[(verdict["scope"] == "general") & (verdict["dataset"] == run)]


def records(df: pd.DataFrame) -> list[dict]:
    """A frame's rows as JSON data (missing values as None)."""
    return plain(df.to_dict("records"))


def _copy_figures(results: Path, ds: str, names, out: Path) -> list[str]:
    copied = []
    for fig in names:
        src = results / "figures" / ds / f"{fig}.png"
        if src.exists():
            save_png(src, out / f"{ds}_{fig}.png")
            copied.append(fig)
    return copied


def question_answers(
    results: Path, ds: str, seeds, tables: Mapping[str, pd.DataFrame], per_seed, out: Path
) -> list[str]:
    """The answers to docs/method.md §13's two questions for ``ds`` (:mod:`trustcal.study.questions`),
    as far as the run's files allow (``per_seed``: :func:`trustcal.study.tables.load_paired` of ``ds``);
    writes ``out/{ds}_selective_paired.csv.gz`` (every epoch, calibrator and opinion score)."""
    answers = []
    paths = [results / ds / f"seed{s}" / "selective.csv" for s in seeds]
    if all(p.exists() for p in paths):
        diffs = selective_differences(read_seeds(paths, ("epoch",), rule="trust"))
        diffs.to_csv(out / f"{ds}_selective_paired.csv.gz", index=False, float_format="%.6g", compression=GZIP)
        answers.append(selective_answer(diffs))
    scores, history = tables["scores"], tables["history"]
    if per_seed and "nll_refinement" in scores:
        stacked = stack_seeds(per_seed)
        if {"nll_calibration", "nll_refinement"} <= set(stacked["metrics"]) and "none" in list(stacked["calibrators"]):
            best = {int(s): best_epoch(h) for s, h in history.groupby("seed")}
            refined = lowest_epochs(scores, "nll_refinement")
            changes = refinement_changes(stacked, best, refined)
            answers.append(refinement_answer(changes, best, refined, int(max(stacked["epochs"]))))
    return answers


def shift_answers(results: Path, ds: str, out: Path) -> tuple[list[str], list[str]]:
    """The answers to docs/method.md §14.1's questions under shift for ``ds`` and its shift figures copied, when
    the run has shift tables (none: two empty lists); writes ``out/{ds}_{table}.csv.gz`` of each table and
    ``out/{ds}_shift_questions.csv``."""
    found = {t: results / ds / f"{t}.csv" for t in SHIFT_TABLES if (results / ds / f"{t}.csv").exists()}
    if not found:
        return [], []
    tables = {t: pd.read_csv(p) for t, p in found.items()}
    for t, df in tables.items():
        df.to_csv(out / f"{ds}_{t}.csv.gz", index=False, float_format="%.6g", compression=GZIP)
    questions = shift_questions(tables.get("shift"), tables.get("shift_ood"))
    questions.to_csv(out / f"{ds}_shift_questions.csv", index=False, float_format="%.6g")
    return answer_lines(questions), _copy_figures(results, ds, SHIFT_FIGURES, out)


def dataset_section(
    results: Path, ds: str, seeds: Sequence[int], out: Path, name: str, label: str = "", note: str = ""
) -> DatasetSection:
    """The section of the run ``ds``: its tables written to ``out/{ds}_{table}.csv.gz``, its figures copied,
    its metrics, its calibrators and its answers (``name``: how the report names it)."""
    tables = {t: tb.read_table(results, ds, seeds, t) for t in tb.STUDY_TABLES}
    for t, df in tables.items():
        df.to_csv(out / f"{ds}_{t}.csv.gz", index=False, float_format="%.6g", compression=GZIP)
    per_seed = tb.load_paired(results, ds, seeds)
    paper = DATASETS[ds].paper if ds in DATASETS else None
    section = DatasetSection(
        name=ds,
        title=name,
        label=label,
        note=note,
        seeds=list(seeds),
        epochs=int(tables["history"]["epoch"].max()),
        metrics=tb.metrics(tables["scores"], tables["calibration"], tables["history"]),
        figures=_copy_figures(results, ds, STUDY_FIGURES, out),
        paper_figures={"trust_grid": f"Fig. {paper.trust}", "loss_curves": f"Fig. 3{paper.panel}"} if paper else {},
    )
    scores = tables["scores"]
    if "calibrator" in scores and scores["calibrator"].nunique() > 2:
        paired = tb.paired_comparisons(per_seed) if per_seed else None
        if paired is not None:  # the table behind the paired differences
            paired.to_csv(out / f"{ds}_paired.csv.gz", index=False, float_format="%.6g", compression=GZIP)
            section.paired_table = True
        section.calibrators = tb.calibrators(scores, tables["trust"], tables["history"], paired)
        section.calibrators.figures = _copy_figures(results, ds, CALIBRATOR_FIGURES, out)
    section.answers = question_answers(results, ds, seeds, tables, per_seed, out)
    section.shift, section.shift_figures = shift_answers(results, ds, out)
    return section


def author_verdicts(author_dir: Path, out: Path) -> dict[str, list[dict]]:
    """The paper's claims judged on the author's published predictions (trustcal assess --paper-claims)."""
    from trustcal.assessment import assess_to_dir

    found = {}
    for ds in PAPER_DATASETS:
        source = author_dir / DATASETS[ds].paper.author_predictions
        if not source.exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            assess_to_dir([source], Path(tmp) / "a", figures=False, paper_claims=ds)
            for ext in ("md", "csv"):
                shutil.copy(Path(tmp) / "a" / f"reproduction.{ext}", out / f"author_{ds}_verdict.{ext}")
        found[ds] = records(pd.read_csv(out / f"author_{ds}_verdict.csv"))
    return found


def _costs(results: Path, out: Path) -> Costs | None:
    if not (results / "benchmarks").is_dir():
        return None
    _, summary, _ = write_costs(results, out)
    train, rest = training_share(summary)
    epoch_s = history_seconds(sorted(results.glob("*/seed*/history.csv")))
    return Costs(summary=records(summary), train_s=train, rest_s=rest, epoch_s=epoch_s)


def _histories(results: Path, runs: Mapping[str, Sequence[int]]) -> list[Path]:
    return [results / ds / f"seed{s}" / "history.csv" for ds, ss in runs.items() for s in ss]


def build_report(
    run_dir: Path | None,
    out: Path,
    author_dir: Path | None,
    command: str,
    remark: str = "",
    beyond: Sequence[tuple[Path, str | None]] = (),
    keep_beyond: bool = False,
) -> Report:
    """The report of the paper's run in ``run_dir`` (``command``: how it was started), with the runs beyond
    the paper's of ``beyond`` ((run directory, its command or None), :func:`beyond_run`); writes the files
    the report shows into ``out`` (with the calibrator ranking, :func:`~trustcal.study.ranking_figure.write_ranking`).
    ``keep_beyond``: the runs beyond the paper's are those of ``out``'s report.json as they are (their run
    directories gone; their tables and figures already in ``out``), after those of ``beyond`` (a run of
    ``beyond`` replaces the kept one of the same setup). ``run_dir`` None: the paper's runs too are those of
    ``out``'s report.json as they are (only runs beyond the paper's were run again), and ``author_dir`` is
    not read."""
    committed = None
    if keep_beyond or run_dir is None:
        if not (out / REPORT_FILE).is_file():
            raise TrustcalError(
                f"{out / REPORT_FILE}: no report to keep runs from; "
                "write one from the paper's run first (study_report.py RUN_DIR)"
            )
        committed = load_report(out / REPORT_FILE)
    out.mkdir(parents=True, exist_ok=True)
    new = [beyond_run(d, c or beyond_command(command, d), out) for d, c in beyond]
    if committed is not None:
        redone = {ds for b in new for ds in b.setups}
        new += [b for b in committed.beyond if not redone & b.setups.keys()]
    if run_dir is None:
        committed.beyond = new
        committed.ranking = write_ranking(out, section_titles(committed))
        return committed
    results = run_dir / "results"
    runs = tb.finished_runs(results)
    verdict = paper_rows(pd.read_csv(results / "reproduction.csv"))
    for ext in ("md", "csv", "html"):
        shutil.copy(results / f"reproduction.{ext}", out / f"reproduction.{ext}")
    notes = data_notes()
    report = Report(
        provenance=provenance(run_dir, command, _histories(results, runs), data_sources(results, runs), remark),
        costs=_costs(results, out),
        datasets=[
            dataset_section(
                results,
                ds,
                seeds,
                out,
                title(ds),
                notes.get(ds, {}).get("label", ""),
                notes.get(ds, {}).get("text", ""),
            )
            for ds, seeds in runs.items()
        ],
        verdict=records(verdict),
        invariance=invariance_note(
            load_runs(
                [results / ds / f"seed{s}" / "trust.csv" for ds, ss in runs.items() for s in ss],
                _histories(results, runs),
            )
        ),
    )
    if author_dir is not None:
        report.authors = author_verdicts(author_dir, out)
    report.beyond = new
    report.ranking = write_ranking(out, section_titles(report))
    return report


def section_titles(report: Report) -> dict[str, str]:
    """run → its title with its data note's label (``CIFAR-10 (JPEG-derived images)``), for every run of the
    report (the paper's, then those beyond it)."""
    return {s.name: s.labelled for s in [*report.datasets, *(s for b in report.beyond for s in b.datasets)]}


def declared_setups(run_dir: Path) -> tuple[dict[str, Mapping], list[str]]:
    """The ``setups:`` of ``run_dir``'s configuration files (``config.yaml``, ``workflow/study/*.yaml``), and
    the files that declare them."""
    setups: dict[str, Mapping] = {}
    files = []
    for path in [run_dir / "config.yaml", *sorted((run_dir / "workflow" / "study").glob("*.yaml"))]:
        found = run_config(run_dir, [path.relative_to(run_dir)]).get("setups") or {}
        if found:
            setups.update(found)
            files.append(path.relative_to(run_dir).as_posix())
    return setups, files


def beyond_command(command: str, run_dir: Path) -> str:
    """``command`` with the configuration files of ``run_dir`` that declare its setups added."""
    have = config_files(command)
    extra = [f for f in declared_setups(run_dir)[1] if f not in have]
    return " ".join([command, *extra])


def describe_setup(name: str, setups: Mapping) -> tuple[str, str, str]:
    """(title ``CIFAR-10 (ResNet-20)``, ``CIFAR-10 with ResNet-20 and SGD``, the dataset's name)."""
    try:
        s = resolve_setup(name, setups)
    except RegistryError:
        return name, name, name
    how = f"{s.dataset.title} with {network_title(s.network)} and {OPTIMIZERS.get(s.recipe.optimizer, s.recipe.optimizer)}"
    return s.title, how, s.dataset.name


def beyond_run(run_dir: Path, command: str, out: Path) -> Beyond:
    """The runs of ``run_dir`` that its configuration declares under ``setups:``: a section each (as the paper
    runs', :func:`dataset_section`), their provenance and the general claims judged on them."""
    run_dir = run_dir.resolve()
    results = run_dir / "results"
    config = run_config(run_dir, config_files(command))
    setups, _ = declared_setups(run_dir)
    setups = {**setups, **(config.get("setups") or {})}
    runs = {ds: s for ds, s in tb.finished_runs(results).items() if ds in setups}
    if not runs:
        raise TrustcalError(
            f"{results}: no finished run of a setup its configuration declares ({', '.join(setups) or 'none'}); "
            "finish the run, or name a run directory whose config declares setups:"
        )
    notes = config.get("data_notes") or {}
    described = {ds: describe_setup(ds, setups) for ds in runs}
    sections = []
    for ds, seeds in runs.items():
        name, _, dataset = described[ds]
        note = notes.get(ds) or notes.get(dataset) or {}
        sections.append(dataset_section(results, ds, seeds, out, name, note.get("label", ""), note.get("text", "")))
    verdict = results / "reproduction.csv"
    general, verdict_file = [], ""
    if verdict.exists():
        table = pd.read_csv(verdict)
        general = records(pd.concat([general_rows(table, ds) for ds in runs]))
        verdict_file = f"{next(iter(runs))}_reproduction.md"
        for ext in ("md", "csv"):
            if (results / f"reproduction.{ext}").exists():
                shutil.copy(results / f"reproduction.{ext}", out / f"{next(iter(runs))}_reproduction.{ext}")
    data = data_sources(results, [described[ds][2] for ds in runs], notes)
    return Beyond(
        setups={ds: described[ds][1] for ds in runs},
        provenance=provenance(run_dir, command, _histories(results, runs), data, config=config),
        datasets=sections,
        general=general,
        verdict_file=verdict_file,
    )
