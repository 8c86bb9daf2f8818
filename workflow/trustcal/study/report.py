"""The study report as data: one :class:`Report` holds every number and fact that ``study.md`` and the README
block state (:mod:`trustcal.study.render` turns it into text), built from a finished run by
:func:`trustcal.study.build.build_report`. It is saved beside them as ``results/study/report.json``
(:func:`save_report`), so the README block is rendered again from it without the run (:func:`load_report`).

Per-seed values are kept as lists (mean ± sd are taken when rendered); tables of many columns (the verdict,
the cost summary) as their rows, a dict each.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

from trustcal.files import atomic_path

REPORT_FILE = "report.json"


@dataclass
class Interval:
    """Per-seed values of a score, with the seed-mean of its bootstrap interval (None: no interval)."""

    values: list[float]
    lo: float | None = None
    hi: float | None = None


@dataclass
class MetricsRow:
    """The test metrics at one point of training: ``point`` ``first`` (epoch 1), ``best`` (the epoch of lowest
    validation loss, per seed) or ``last``; values per seed."""

    point: str
    epochs: list[int]
    accuracy: list[float]
    nll_before: list[float]
    nll_after: list[float]
    ece_before: list[float]
    ece_after: list[float]
    temperature: list[float]


@dataclass
class CalibratorRow:
    """One calibrator's test scores and per-label trust (values per seed)."""

    calibrator: str
    ece_best: Interval
    ece_last: Interval
    smece_last: list[float] | None
    nll_last: Interval
    trust_late: list[float]  # mean label belief over the epochs ≥ ``late_from``
    trust_gap: list[float] | None  # belief minus the raw model's, lowest over epochs (None: the raw model)
    trust_range: list[float]  # largest minus smallest label belief over the epochs ≥ ``late_from``


@dataclass
class PairedCell:
    """A calibrator's score minus a baseline's: the difference at the last epoch with its interval, and the
    epochs whose interval lies wholly below / above 0 (of ``epochs``)."""

    metric: str
    estimate: float | None
    lo: float | None
    hi: float | None
    below: int
    above: int


@dataclass
class PairedRow:
    calibrator: str
    against: str
    cells: list[PairedCell]


@dataclass
class Calibrators:
    """The comparison of every calibrator with the raw model (a run that fitted more than temperature)."""

    late_from: int
    rows: list[CalibratorRow]
    gaps: dict[str, list[float]]  # calibrator → per seed, belief minus the raw model's, lowest over epochs
    separated: dict[str, list[int]]  # calibrator → [epochs ECE below the raw model's, above, epochs]
    paired_seeds: int = 0  # seeds of the paired intervals (0: no paired.npz)
    paired_last: int = 0  # the last epoch of the paired table
    paired_epochs: int = 0
    paired: list[PairedRow] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # calibrator figures copied


@dataclass
class DatasetSection:
    """One run (dataset × network) of the study: its seeds, epochs, metrics, figures and answers."""

    name: str
    title: str  # ``CIFAR-10``, or ``CIFAR-10 (ResNet-20)`` beyond the paper
    label: str  # the data note's label (``JPEG-derived images``) or ""
    note: str  # the data note's text or ""
    seeds: list[int]
    epochs: int
    metrics: list[MetricsRow]
    figures: list[str]  # figures copied (trustcal.study.build.STUDY_FIGURES)
    paper_figures: dict[str, str] = field(default_factory=dict)  # figure → the paper's figure it redraws
    calibrators: Calibrators | None = None
    answers: list[str] = field(default_factory=list)  # docs/method.md §13's questions answered
    paired_table: bool = False  # {name}_paired.csv.gz written
    shift: list[str] = field(default_factory=list)  # §14.1's questions under dataset shift answered
    shift_figures: list[str] = field(default_factory=list)  # shift figures copied

    @property
    def labelled(self) -> str:
        return f"{self.title} ({self.label})" if self.label else self.title


@dataclass
class DataSource:
    """Where a dataset's files came from: ``raw_manifest.tsv``'s count per verification, the data note."""

    title: str
    counts: dict[str, int] | None  # None: no raw_manifest.tsv
    note: str


@dataclass
class Provenance:
    """What was run, where, for how long."""

    command: str
    commit: str
    configs: list[str]  # the configuration files of the command
    machine: str
    wall_s: float  # the workflow's wall time over its Snakemake logs (0: unknown)
    train_s: float  # training alone: the seeds' epoch seconds (history.csv) on the run's train slots
    clusters: int  # M of the run's configuration (trust.clusters)
    data: list[DataSource]
    remark: str = ""
    train_slots: int = 1  # train jobs side by side: the run's cores ÷ a train job's threads


@dataclass
class Costs:
    """The jobs' costs (results/benchmarks/): the summary rows of :func:`trustcal.study.costs.cost_summary`
    and the training's share."""

    summary: list[dict]
    train_s: float
    rest_s: float
    epoch_s: float


@dataclass
class Beyond:
    """A run beyond the paper's, from another run directory: its setups' sections, its provenance and the
    general claims judged on it (rows of its reproduction.csv with ``scope`` ``general``)."""

    setups: dict[str, str]  # run → ``CIFAR-10 with ResNet-20 and SGD``
    provenance: Provenance
    datasets: list[DatasetSection]
    general: list[dict]
    verdict_file: str  # the copy of its reproduction.md in results/study/ ("" when it has none)


@dataclass
class Ranking:
    """Every calibrator against temperature scaling, per run and across runs (:mod:`trustcal.study.ranking`):
    the rows of ``results/study/calibrator_ranking.csv``, a dict each."""

    runs: dict[str, str]  # run → its title, in the report's order
    rows: list[dict]


@dataclass
class Report:
    """Everything study.md and the README block say."""

    provenance: Provenance
    costs: Costs | None
    datasets: list[DatasetSection]
    verdict: list[dict]  # reproduction.csv's rows of the paper's claims
    invariance: str  # trustcal.reporting.verdict.invariance_note of the run
    authors: dict[str, list[dict]] = field(default_factory=dict)  # dataset → the author-predictions verdict
    beyond: list[Beyond] = field(default_factory=list)
    ranking: Ranking | None = None  # None: no run compared calibrators (or a report from before the ranking)


# --- JSON ---------------------------------------------------------------------------------------------


def plain(x):
    """``x`` as JSON data: a missing float as null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # a NumPy scalar
        return plain(x.item())
    return x


def _load(tp, data):
    """``data`` (JSON) as the type ``tp``: dataclasses, lists, dicts and optionals of them."""
    if data is None:
        return math.nan if tp is float else None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _load(inner[0], data) if len(inner) == 1 else data
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _load(hints[f.name], data[f.name]) for f in dataclasses.fields(tp) if f.name in data})
    if origin is list:
        return [_load(args[0], v) for v in data] if args else list(data)
    if origin is dict:
        return {k: _load(args[1], v) for k, v in data.items()} if args else dict(data)
    if tp is float:
        return float(data)
    return data


def save_report(report: Report, path: Path) -> None:
    """``report`` as JSON (missing numbers as null)."""
    text = json.dumps(plain(dataclasses.asdict(report)), ensure_ascii=False, indent=1, allow_nan=False)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")


def load_report(path: Path) -> Report:
    """The :class:`Report` :func:`save_report` wrote."""
    return _load(Report, json.loads(Path(path).read_text(encoding="utf-8")))
