"""An assessment written out: the tables, figures, ``summary.txt``, ``warnings.txt`` and ``assess.json``
(and with ``paper_claims`` the verdict on the paper's claims), into a temporary directory whose files
take their places in the output directory only once it is complete (``assess.json``, which lists them,
last), so a failure leaves no partial output; files of the output directory that trustcal did not write
stay (:func:`trustcal.files.atomic_directory`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trustcal import __version__
from trustcal.assessment.figures import FIGURE_FORMATS, draw_figures
from trustcal.assessment.result import Assessment, Progress, Wording, library_words, no_progress
from trustcal.assessment.sources import assess_files
from trustcal.assessment.summary import file_list
from trustcal.errors import TrustcalError
from trustcal.files import atomic_directory, write_csv, written_files
from trustcal.measures.trust import TrustParams
from trustcal.predictions import ReadOptions
from trustcal.settings import Settings

if TYPE_CHECKING:
    from trustcal.reporting.verdict import VerdictSettings

MARKER = "assess.json"  # written last; marks a directory that assess may write again, and lists its files


def flagged_predictions(a: Assessment) -> list[tuple[int, bool]]:
    """(epoch, calibrated) of every file whose probabilities look like a softmax applied twice."""
    suspect = {str(w.file) for w in a.warnings if w.code == "double_softmax"}
    return sorted({(f.epoch, bool(f.calibrated)) for f in a.files if str(f.path) in suspect})


def paper_runs(a: Assessment, dataset: str) -> dict:
    """The assessment as one seed of ``dataset`` for :func:`trustcal.reporting.verdict.evaluate`."""
    from trustcal.reporting.verdict import run_from_tables

    history = a.history if a.history is not None else pd.DataFrame(columns=["epoch", "train_loss", "val_loss"])
    return {dataset: {0: run_from_tables(a.tables["trust"], history)}}


def _provenance(a: Assessment, flagged) -> str:
    """Where the judged predictions come from, and which epochs went through softmax twice."""
    from trustcal.reporting.verdict import describe_flagged

    text = (
        f"Predictions: {len(a.files)} files ({', '.join(sorted({str(f.path.parent) for f in a.files}))}); "
        "one training run, so no sd over seeds; no test-set bootstrap."
    )
    if flagged:
        text += (
            f" Predictions that went through softmax twice: {describe_flagged(flagged)} "
            "(each claim is also computed without them)."
        )
    return text


def write_paper_verdict(a: Assessment, dataset: str, out: Path, settings: VerdictSettings) -> pd.DataFrame:
    """The paper's claims about ``dataset`` judged on these predictions under ``settings``: reproduction.{md,csv}
    in ``out``. Epochs flagged as double softmax are named, and every claim is recomputed without them."""
    from trustcal.reporting.verdict import write_verdict

    flagged = flagged_predictions(a)
    return write_verdict(
        paper_runs(a, dataset),
        replace(settings, provenance=_provenance(a, flagged)),
        out / "reproduction.md",
        out / "reproduction.csv",
        flagged={dataset: flagged},
    )


CLAIMS_VERDICT = ("verdict.md", "verdict.csv")  # a claims file's verdict (``claims``), beside the tables


def write_claims_verdict(a: Assessment, claims_file, out: Path, settings: VerdictSettings) -> pd.DataFrame:
    """The claims of ``claims_file`` (docs/claims.md) judged on these predictions under ``settings``:
    verdict.{md,csv} in ``out``.

    The series is one run of every dataset the claims name (their ``dataset`` is for the workflow); a
    claim comparing two datasets (``versus``) is not comparable here. Epochs flagged as double softmax are
    named, and every claim is recomputed without them."""
    from trustcal.reporting.verdict import load_claims, run_from_tables, write_verdict

    claims = [
        replace(c, not_comparable=c.not_comparable or f"compares with {c.versus}; trustcal assess judges one series")
        if c.versus
        else c
        for c in load_claims(claims_file)
    ]
    history = a.history if a.history is not None else pd.DataFrame(columns=["epoch", "train_loss", "val_loss"])
    series = {0: run_from_tables(a.tables["trust"], history)}
    runs = {ds: series for ds in {c.dataset for c in claims}}
    flagged = flagged_predictions(a)
    return write_verdict(
        runs,
        replace(settings, provenance=_provenance(a, flagged)),
        out / CLAIMS_VERDICT[0],
        out / CLAIMS_VERDICT[1],
        flagged={ds: flagged for ds in runs},
        claims_file=claims_file,
        claims=claims,
    )


def write_assessment(
    a: Assessment,
    out: Path,
    *,
    title: str,
    figures: bool = True,
    meta: dict | None = None,
    paper_claims: str | None = None,
    progress: Progress = no_progress,
    figure_formats: Sequence[str] = FIGURE_FORMATS,
    processes: int = 1,
    wording: Wording = library_words,
    claims: str | Path | None = None,
    trust: TrustParams | None = None,
) -> None:
    """Tables, figures (a file per format of ``figure_formats``, drawn in up to ``processes`` processes),
    summary.txt, warnings.txt (each message in the caller's words, ``wording``) and assess.json into ``out``
    (a fresh directory); with ``paper_claims`` (a dataset of the paper) also the verdict on the paper's claims,
    with ``claims`` (a claims file) the verdict on its claims (:func:`write_claims_verdict`), both under the
    trust opinion's settings ``trust`` (None: not known)."""
    for name, df in a.tables.items():
        write_csv(df, out / f"{name}.csv")
    if paper_claims or claims is not None:
        from trustcal.reporting.verdict import VerdictSettings

        settings = VerdictSettings(trust=trust, epochs=int(max((f.epoch for f in a.files), default=0)))
        if paper_claims:
            write_paper_verdict(a, paper_claims, out, settings)
        if claims is not None:
            write_claims_verdict(a, claims, out, settings)
    fig_dir = out / "figures"
    fig_dir.mkdir(exist_ok=True)
    if figures:
        a.figures = draw_figures(a, fig_dir, title, progress, figure_formats, processes)
    (out / "summary.txt").write_text(a.summary() + "\n")
    (out / "warnings.txt").write_text("".join(f"[{w.code}] {wording(str(w), w.options)}\n" for w in a.warnings))
    info = dict(
        trustcal_version=__version__,
        files=file_list(a),
        skipped=[str(p) for p in a.skipped],
        history=str(a.history_file) if a.history_file else None,
        class_names=list(a.class_names) if a.class_names else None,
        tables=[f"{n}.csv" for n in a.tables],
        figures=a.figures,
        warnings=len(a.warnings),
        **(meta or {}),
        written=[*written_files(out), MARKER],  # what a rerun replaces or removes; any other file stays
    )
    (out / MARKER).write_text(json.dumps(info, indent=2, default=str) + "\n")


def default_title(sources) -> str:
    """The figures' title: a single file's name without its extension (``model.csv.gz`` → ``model``),
    else the name of the directory of the series (given, or holding the files or the glob)."""
    sources = [Path(str(s)) for s in sources]
    first = sources[0]
    if len(sources) == 1 and first.is_file():
        name = first.name[: -len(".gz")] if first.name.endswith(".gz") else first.name
        return Path(name).stem or first.name
    if first.is_dir():
        return first.resolve().name
    return first.parent.resolve().name or first.name


def _refuse_file_above(out: Path) -> None:
    """Raise :class:`~trustcal.errors.TrustcalError` where a folder above ``out`` is a file (``notes.txt/sub``):
    no directory can be made there."""
    for parent in Path(out).parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise TrustcalError(
                    f"{out}: {parent} exists and is not a directory, so no output directory can be made inside it. "
                    f"Fix: choose another output directory (or move {parent} away)."
                )
            return


def assess_to_dir(
    sources,
    out: str | Path,
    read: ReadOptions = ReadOptions(),
    settings: Settings = Settings(),
    *,
    history: str | Path | None = None,
    title: str | None = None,
    figures: bool = True,
    figure_formats: Sequence[str] = FIGURE_FORMATS,
    paper_claims: str | None = None,
    progress: Progress = no_progress,
    processes: int = 1,
    wording: Wording = library_words,
    claims: str | Path | None = None,
) -> Assessment:
    """:func:`~trustcal.assessment.sources.assess_files`, then write everything to ``out``; on any error
    ``out`` is left as it was. A rerun into ``out`` replaces the files it writes again and removes those
    of the earlier assessment it does not; any other file stays, named in the result's ``kept``. ``paper_claims`` (``mnist`` or ``cifar10``): also judge the paper's claims
    about that dataset (the shipped claims file, :data:`trustcal.reporting.verdict.PAPER_CLAIMS_FILE`);
    ``claims``: a claims file of one's own (docs/claims.md), judged on the series: verdict.md and
    verdict.csv, a bad file failing before anything is read. ``progress`` shows the reading of the files and the drawing of the figures;
    ``processes``: how many processes may compute the tables of a series and draw the figures
    (:func:`~trustcal.assessment.workers.worker_count`); ``wording`` puts the warnings of
    ``warnings.txt`` in the caller's words."""
    sources = [str(s) for s in ([sources] if isinstance(sources, (str, Path)) else sources)]
    if claims is not None:
        from trustcal.reporting.verdict import load_claims

        load_claims(claims)  # a bad claims file: its one-line error before the predictions are read
    _refuse_file_above(Path(out))
    kept: list[str] = []
    with atomic_directory(out, MARKER, kept) as tmp:
        a = assess_files(sources, read, settings, history=history, progress=progress, processes=processes)
        calibration = settings.calibration
        meta = dict(
            sources=sources,
            read_options=asdict(read),
            trust=asdict(settings.trust),
            metrics=asdict(settings.metrics),
            sweep=asdict(settings.sweep) if settings.sweep else None,
            t_min=calibration.t_min,
            t_max=calibration.t_max,
            calibrators=None if calibration.methods is None else list(calibration.methods),
            bootstrap=asdict(settings.bootstrap) if settings.bootstrap else None,
        )
        write_assessment(
            a,
            tmp,
            title=title or default_title(sources),
            figures=figures,
            meta=meta,
            paper_claims=paper_claims,
            progress=progress,
            figure_formats=figure_formats,
            processes=processes,
            wording=wording,
            claims=claims,
            trust=settings.trust,
        )
    a.kept = kept
    return a
