"""The Python API: ``trustcal.assess(probs_or_logits, labels)`` for notebooks and scripts.

The same assessment as ``trustcal assess`` (:mod:`trustcal.assessment`), on
arrays instead of files: the same checks (each problem a
:class:`~trustcal.predictions.PredictionError`, a :class:`~trustcal.errors.TrustcalError`,
whose message names the argument and the fix), the same tidy tables and the
same figures. The arrays are one epoch of one model: epoch 0, as a single
prediction file without a number in its name is for ``trustcal assess``.

Example (any N×K probabilities or logits and N integer labels)::

    >>> import numpy as np, trustcal
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 300)
    >>> logits = rng.normal(size=(300, 3)) + 3 * np.eye(3)[labels]
    >>> result = trustcal.assess(logits, labels, kind="logits")
    >>> result.scores.loc[0, ["accuracy", "ece"]].round(3).tolist()
    [0.96, 0.13]
    >>> result.network_opinion().round(3).tolist()   # belief, disbelief, uncertainty
    [0.768, 0.226, 0.005]
    >>> fig = result.reliability_diagram()            # a matplotlib Figure
"""

from __future__ import annotations

import inspect
import warnings as pywarnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trustcal.calibration import T_MAX, T_MIN
from trustcal.evaluation import MetricParams, SweepParams
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.options import SettingError, options_of
from trustcal.measures.trust import TrustParams
from trustcal.predictions import (
    CellError,
    ColumnError,
    InputWarning,
    LabelError,
    LengthMismatch,
    Loaded,
    PredictionError,
    PredictionFile,
    ReadOptions,
    Table,
    check_table,
    name_labels,
    suspicious,
    transposed_hint,
)
from trustcal.settings import CalibrationSettings, Settings

if TYPE_CHECKING:  # matplotlib is imported only when a figure is drawn
    from matplotlib.figure import Figure

    from trustcal.assessment import Assessment

__all__ = ["assess", "AssessmentResult"]


class AssessmentWarning(UserWarning):
    """Suspicious but valid input (the ``trustcal assess`` warnings); also in :attr:`AssessmentResult.warnings`."""


@dataclass(repr=False)
class AssessmentResult:
    """What :func:`assess` returns: the workflow's tidy tables, a summary and the figures.

    ``tables`` holds every table of ``trustcal assess`` by its CSV name (``trust``,
    ``dynamic_trust``, ``trust_sweep``, ``selective``, ``scores``, ``trust_spectrum``,
    ``reliability``, ``trust_density``, ``smooth_reliability`` and, with validation data,
    ``calibration``);
    the most used are also attributes. Rows are per ``epoch`` (0), ``calibrator``
    (``none`` for the predictions as given, and each calibrator fitted on validation data)
    and, for the scores, ``split`` (``test``: the arrays given; ``val``: the validation
    arrays). Numbers of the test split have bootstrap intervals (``<name>_lo``, ``<name>_hi``).
    """

    tables: dict[str, pd.DataFrame]
    warnings: list[InputWarning]
    classes: int
    samples: int
    temperature: float | None  # fitted on the validation data, else None
    assessment: Assessment = field(repr=False)

    # ----- tables

    @property
    def scores(self) -> pd.DataFrame:
        """accuracy, nll, ece (and ece_M per bin count), brier, net_trust_score, geometric metrics… per row."""
        return self.tables["scores"]

    @property
    def trust(self) -> pd.DataFrame:
        """The trust opinion (belief, disbelief, uncertainty, projected trust) per label and for the network."""
        return self.tables["trust"]

    @property
    def calibration(self) -> pd.DataFrame | None:
        """The fitted temperature and the validation NLL before and after (None without validation data)."""
        return self.tables.get("calibration")

    def network_opinion(self, calibrator: str = "none") -> pd.Series:
        """The network's trust opinion (belief, disbelief, uncertainty) of the predictions as given
        (``none``) or after a calibrator (e.g. ``temperature``), as a Series named after the calibrator."""
        trust = self.trust
        rows = trust[(trust["label"].astype(str) == "network") & (trust["calibrator"] == calibrator)]
        if rows.empty:
            raise PredictionError(
                f"no rows of calibrator {calibrator!r} (have: {', '.join(trust['calibrator'].unique())}): pass "
                "validation=(val_probs_or_logits, val_labels) and calibrators=[...] to fit it"
            )
        return rows.iloc[-1][["belief", "disbelief", "uncertainty"]].astype(float).rename(calibrator)

    def summary_table(self) -> pd.DataFrame:
        """Accuracy, ECE, NetTrustScore and the network opinion, before (and after) calibration."""
        from trustcal.assessment import summary_table

        return summary_table(self.tables)

    def summary(self) -> str:
        """The one-screen summary of ``trustcal assess`` (print it)."""
        from trustcal.assessment import format_summary

        lines = format_summary(self.assessment).split("\n")
        lines[0] = f"trustcal.assess: {self.samples} test samples, {self.classes} classes"
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        """The ``trustcal assess --json`` document (JSON-ready)."""
        from trustcal.assessment import summary_dict

        return summary_dict(self.assessment)

    # ----- figures

    def figure(self, name: str, *, title: str = "", path: str | Path | None = None) -> Figure:
        """Figure ``name`` of :data:`trustcal.reporting.figures.FIGURES` that one set of predictions allows:
        ``reliability``, ``trust_spectrum``, ``trust_density`` or ``cluster_sweep`` (the others show
        epochs; ``trustcal assess`` draws them for an epoch series). Saved to ``path`` too when given."""
        from trustcal.assessment import SERIES_FIGURES, figure_tables
        from trustcal.reporting import figures

        tables = figure_tables(self.assessment)
        needs = figures.FIGURES[name].tables if name in figures.FIGURES else ()
        if name in SERIES_FIGURES or name not in figures.FIGURES or not all(t in tables for t in needs):
            possible = [
                n
                for n, spec in figures.FIGURES.items()
                if n not in SERIES_FIGURES and all(t in tables for t in spec.tables)
            ]
            raise PredictionError(
                f"figure {name!r} cannot be drawn from one set of predictions; these can: "
                f"{', '.join(possible)}. Fix: pick one of them (the others show epochs: "
                "trustcal assess draws them for an epoch series)."
            )
        return figures.draw(name, tables, title, [path] if path else [], clusters=self.assessment.clusters)

    def reliability_diagram(self, *, title: str = "", path: str | Path | None = None) -> Figure:
        """Top-label reliability diagram over the confidence histogram (before and after calibration)."""
        return self.figure("reliability", title=title, path=path)

    def trust_spectrum(self, *, title: str = "", path: str | Path | None = None) -> Figure:
        """Trust spectrum T(z) per label (Wong et al.), before and after calibration."""
        return self.figure("trust_spectrum", title=title, path=path)

    def trust_density(self, *, title: str = "", path: str | Path | None = None) -> Figure:
        """Trust density per label (Wong et al. §2.2)."""
        return self.figure("trust_density", title=title, path=path)

    # ----- files

    def save(
        self,
        out: str | Path,
        *,
        figures: bool = True,
        title: str = "predictions",
        figure_formats: Sequence[str] = ("png",),
    ) -> Path:
        """Write what ``trustcal assess --out OUT`` writes (tables, figures, summary.txt, warnings.txt,
        assess.json) into ``out``, only once everything is written; files there that trustcal did not write
        stay (listed in ``assessment.kept``). As on the command line, the figures are PNG files;
        ``figure_formats=("png", "pdf")`` adds a PDF of each (``--figure-formats png,pdf``), and
        summary.txt holds :meth:`summary`."""
        from trustcal.assessment import MARKER, write_assessment
        from trustcal.files import atomic_directory

        kept: list[str] = []
        with atomic_directory(out, MARKER, kept) as tmp:
            write_assessment(
                self.assessment,
                tmp,
                title=title,
                figures=figures,
                meta={"source": "trustcal.assess"},
                figure_formats=tuple(figure_formats),
            )
            (tmp / "summary.txt").write_text(self.summary() + "\n")  # the API's words (no file names)
        self.assessment.kept = kept
        return Path(out)


# --------------------------------------------------------------------------- arrays


def _as_array(x, name: str) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    elif isinstance(x, (pd.DataFrame, pd.Series)):
        x = x.to_numpy()
    try:
        return np.asarray(x)
    except Exception as exc:
        raise CellError(
            f"{name}: cannot be read as an array ({type(exc).__name__}: {exc}). "
            f"Fix: pass a numpy array (or a list of lists of numbers)."
        ) from None


def _values(x, name: str) -> np.ndarray:
    arr = _as_array(x, name)
    if arr.dtype.kind not in "biuf":
        raise CellError(
            f"{name}: holds {arr.dtype} values; expected numbers, an N×K array of probabilities or "
            "logits. Fix: pass e.g. model(x).softmax(-1) as a float array."
        )
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]  # one column: a binary classifier's P(y = positive) or score
    if arr.ndim not in (1, 2) or (arr.ndim == 2 and arr.shape[1] < 2):
        raise ColumnError(
            f"{name}: has shape {arr.shape}; expected N×K with K ≥ 2 (one row per sample, one column "
            "per class), or N values of a binary classifier (P(y = 1) or a decision_function score). "
            "Fix: pass the full matrix of probabilities or logits."
        )
    if len(arr) == 0:
        raise ColumnError(f"{name}: has no rows; expected one row per sample. Fix: pass at least one prediction.")
    return arr.astype(np.float64)


def _labels(y, name: str, values: np.ndarray, values_name: str) -> np.ndarray:
    arr = _as_array(y, name)
    n = len(values)
    k = values.shape[1] if values.ndim == 2 else 2
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim == 2 and arr.shape == (n, k) and arr.dtype.kind in "biuf":
        onehot = arr.astype(np.float64)
        if np.all((onehot == 0) | (onehot == 1)) and np.all(onehot.sum(axis=1) == 1):
            arr = onehot.argmax(axis=1)
    if arr.dtype.kind not in "biufUSO":
        raise LabelError(
            f"{name}: holds {arr.dtype} values; expected class indices 0 … {k - 1} (the columns of "
            f"{values_name}) or class names. Fix: pass a 1-D array of integers or strings."
        )
    if arr.ndim != 1:
        raise ColumnError(
            f"{name}: has shape {arr.shape}; expected one class index or name per sample, shape "
            f"({n},) (or one-hot {n}×{k}). Fix: pass a 1-D array.{transposed_hint(arr.shape, n)}"
        )
    if len(arr) != n:
        raise LengthMismatch(
            f"{name}: {len(arr)} labels but {values_name} has {n} rows; expected one label per row. "
            f"Fix: pass the labels of the same samples, in the same order.{transposed_hint(values.shape, len(arr))}"
        )
    if arr.dtype.kind in "USO":  # class names (numbers in an object array stay numbers)
        return name_labels(Path(name), arr, lambda r: f"element {r}")
    return arr.astype(np.float64)


def _columns(x) -> list[str] | None:
    """The class names of a DataFrame's columns (``pd.DataFrame(clf.predict_proba(X), columns=clf.classes_)``)."""
    if isinstance(x, pd.DataFrame) and not isinstance(x.columns, pd.RangeIndex):
        return [str(c) for c in x.columns]
    if isinstance(x, pd.Series) and x.name is not None:
        return [str(x.name)]
    return None


def _table(values, labels, kind: str, names: tuple[str, str]) -> Table:
    v = _values(values, names[0])
    table = Table(
        Path(names[0]),
        v,
        kind,
        _labels(labels, names[1], v, names[0]),
        lambda r, c=None: f"row {r}" + ("" if c is None else f", column {c}"),
        label_where=lambda r: f"element {r}",
        label_path=Path(names[1]),
        columns=_columns(values),
    )
    return table


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _wrong_type(name: str, value, expected: str, example: str) -> PredictionError:
    return PredictionError(
        f"{name}={value!r} ({type(value).__name__}): expected {expected}. Fix: pass e.g. {name}={example}."
    )


# The arguments of assess() named otherwise in the settings dataclasses, and their examples.
ARGUMENTS = {"methods": "calibrators"}
EXAMPLES = {"calibrators": '["temperature", "isotonic"]', "bootstrap": "200"}


def _checked(make):
    """``make()``, a settings dataclass built from :func:`assess`'s arguments, with its own checks
    (:mod:`trustcal.measures.options`); a :class:`~trustcal.measures.options.SettingError` becomes a
    :class:`PredictionError` naming the argument, the values it takes and an example."""
    try:
        return make()
    except SettingError as exc:
        if exc.expected is None:  # two settings that disagree (t_min ≥ t_max)
            raise PredictionError(f"{exc}. Fix: e.g. {exc.example}.") from None
        name = ARGUMENTS.get(exc.name, exc.name)
        raise _wrong_type(name, exc.value, exc.expected, EXAMPLES.get(name, exc.example)) from None


def _bootstrap(bootstrap) -> BootstrapParams | None:
    """``bootstrap`` as :func:`assess` takes it: a number of resamples (0: none), a BootstrapParams or None."""
    if bootstrap is None or isinstance(bootstrap, BootstrapParams):
        return bootstrap
    expected = f"{options_of(BootstrapParams)['resamples'].expected()} (0: none), a BootstrapParams or None"
    if not _is_int(bootstrap):
        raise _wrong_type("bootstrap", bootstrap, expected, EXAMPLES["bootstrap"])
    if bootstrap == 0:
        return None
    try:
        return BootstrapParams(resamples=int(bootstrap))
    except SettingError:
        raise _wrong_type("bootstrap", bootstrap, expected, EXAMPLES["bootstrap"]) from None


def _settings(  # the keyword arguments of assess() but the arrays
    *,
    kind,
    clusters,
    trust,
    metrics,
    sweep,
    t_min,
    t_max,
    calibrators,
    bootstrap,
    sum_tolerance,
    renormalize,
    positive_class=None,
    validation=None,
) -> tuple[Settings, ReadOptions]:
    """The :class:`~trustcal.settings.Settings` and :class:`~trustcal.predictions.ReadOptions` of
    :func:`assess`'s arguments, each checked by its dataclass; a wrong one is a :class:`PredictionError`
    naming it and the values it takes. ``bootstrap`` may be the number of resamples (0: none),
    ``calibrators`` one name."""
    if trust is None:
        trust = _checked(lambda: TrustParams(clusters=clusters))
    elif not isinstance(trust, TrustParams):
        raise _wrong_type("trust", trust, "a trustcal.measures.trust.TrustParams or None", "TrustParams(clusters=10)")
    if not isinstance(metrics, MetricParams):
        raise _wrong_type("metrics", metrics, "a trustcal.evaluation.MetricParams", "MetricParams()")
    if sweep is not None and not isinstance(sweep, SweepParams):
        raise _wrong_type("sweep", sweep, "a trustcal.evaluation.SweepParams or None", "None")
    if isinstance(calibrators, str):
        calibrators = [calibrators]
    if calibrators is None:  # temperature scaling where there are validation predictions
        calibrators = ["temperature"] if validation is not None else []
    calibration = _checked(lambda: CalibrationSettings(methods=calibrators, t_min=t_min, t_max=t_max))
    if not _is_real(sum_tolerance) or not sum_tolerance > 0 or not np.isfinite(sum_tolerance):
        raise _wrong_type("sum_tolerance", sum_tolerance, "a positive number", "1e-3")
    if not isinstance(renormalize, (bool, np.bool_)):
        raise _wrong_type("renormalize", renormalize, "True or False", "True")
    if positive_class is not None and not (isinstance(positive_class, str) or _is_int(positive_class)):
        raise _wrong_type("positive_class", positive_class, "a class name or index, or None", "1")
    read = ReadOptions(
        kind=kind,
        sum_tolerance=sum_tolerance,
        renormalize=renormalize,
        positive_class=None if positive_class is None else str(positive_class),
    )
    settings = Settings(
        trust=trust, metrics=metrics, sweep=sweep, bootstrap=_bootstrap(bootstrap), calibration=calibration
    )
    return settings, read


SETTINGS_ARGUMENTS = tuple(inspect.signature(_settings).parameters)


def _calibrators_need_validation(methods: Sequence[str], name: str):
    """Named calibrators without ``validation``: nothing to fit them on (the API's words for
    :class:`~trustcal.assessment.fit.CalibratorsNotFitted`)."""
    from trustcal.assessment import CalibratorsNotFitted

    many = len(methods) > 1
    return CalibratorsNotFitted(
        f"{name}: calibrator{'s' if many else ''} {', '.join(methods)} asked for, but this file has no validation "
        f"predictions to fit {'them' if many else 'it'} on, so no results of {'them' if many else 'it'} would be "
        "written. Fix: give validation predictions of the same model (validation=(val_probs_or_logits, "
        "val_labels)), or leave out calibrators."
    )


def _loaded(probs_or_logits, labels, validation, opts: ReadOptions, found: list) -> Loaded:
    """The arrays of :func:`assess` (and its ``validation`` pair) checked as ``trustcal assess`` checks a file."""
    table = _table(probs_or_logits, labels, opts.kind, ("probs_or_logits", "labels"))
    probs, y, logits, class_names = check_table(table, opts, found.append)
    suspicious(probs, y, table.path, found.append)
    item = Loaded(PredictionFile(table.path, 0, None), probs, y, logits, names=class_names)
    if validation is not None:
        if not (isinstance(validation, (tuple, list)) and len(validation) == 2):
            raise PredictionError(
                f"validation: got {type(validation).__name__}; expected a pair (val_probs_or_logits, val_labels). "
                "Fix: pass validation=(val_logits, val_labels)."
            )
        val = _table(validation[0], validation[1], opts.kind, ("validation[0]", "validation[1]"))
        item.val_probs, item.val_labels, item.val_logits, _ = check_table(
            val, opts, found.append, probs.shape[1], class_names
        )
    return item


def assess(
    probs_or_logits,
    labels,
    *,
    kind: str = "auto",
    validation: tuple | None = None,
    clusters: int = TrustParams().clusters,
    trust: TrustParams | None = None,
    metrics: MetricParams = MetricParams(),
    sweep: SweepParams | None = SweepParams(),
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    calibrators: Sequence[str] | None = None,
    bootstrap: BootstrapParams | None = BootstrapParams(),
    sum_tolerance: float = ReadOptions().sum_tolerance,
    renormalize: bool = False,
    positive_class: str | int | None = None,
) -> AssessmentResult:
    """Trust opinions, ECE, NetTrustScore and the other metrics of one model's predictions.

    Parameters
    ----------
    probs_or_logits : array-like, N×K or N
        Predicted probabilities (rows summing to 1) or logits, one row per sample, one column per
        class (a numpy array, a DataFrame or a CPU torch tensor). A DataFrame whose columns are the
        class names (``pd.DataFrame(clf.predict_proba(X), columns=clf.classes_)``) is matched to the
        labels by name. One column (N values) is a binary classifier's P(y = positive) or its
        ``decision_function`` score: p becomes [1 − p, p], a score s the logits [0, s].
    labels : array-like, length N
        True class indices 0 … K−1 (or one-hot N×K), or class names (strings: the classes are the
        DataFrame's column names in order, else the sorted names, as scikit-learn's ``classes_``).
    kind : "auto", "probs" or "logits"
        ``auto``: probabilities when at least 99 % of the rows are (values in [0, 1], or summing to 1),
        logits when at most half are (with a warning); in between an error asks for the kind.
    validation : (val_probs_or_logits, val_labels), optional
        Validation predictions of the same model: the ``calibrators`` are fitted on them as in the
        workflow, and every table gets rows of each (``calibrator == "temperature"`` …) too.
    clusters : int
        Probability clusters per class of the trust opinion (default 10: the paper's M).
    trust, metrics, sweep : TrustParams or None, MetricParams, SweepParams or None
        The settings of the trust opinion (:class:`~trustcal.measures.trust.TrustParams`; None:
        ``TrustParams(clusters=clusters)``), of the metrics (:class:`~trustcal.measures.metric_params.MetricParams`)
        and of the ``trust_sweep`` table (:class:`~trustcal.evaluation.SweepParams`; None skips it).
        Each field documents and checks itself; the defaults are those of ``trustcal assess``.
    t_min, t_max : float
        The bounds of the temperature's search (default 0.01 and 100).
    calibrators : sequence of str (or one str), optional
        Methods fitted on ``validation`` (docs/method.md §2): any of ``temperature``, ``vector``,
        ``matrix``, ``dirichlet``, ``histogram``, ``isotonic``, ``sms``, ``svs``, ``ets``, ``irm``, or a calibrator of your own by its import path
        ``package.module:Class`` (docs/method.md §2.15) (all but temperature need
        ``pip install 'trustcal[calibration]'``). None: temperature scaling when ``validation`` is
        given; named calibrators without ``validation`` are an error.
    bootstrap : BootstrapParams, int or None
        Resamples of the test set behind the ``*_lo`` / ``*_hi`` intervals: their number (e.g. 500) or
        :class:`~trustcal.measures.bootstrap.BootstrapParams` (None or 0: no intervals).
    sum_tolerance, renormalize : float, bool
        Rows of probabilities must sum to 1 within ``sum_tolerance`` (default 1e-3); ``renormalize=True``
        divides those that do not by their sum (with a warning) instead of raising an error.
    positive_class : str, int or None
        Binary predictions (one column): the class they are about. None: 1 for labels 0/1, else the
        larger label (scikit-learn's ``classes_[1]``), or the class a DataFrame column is named after.

    Returns
    -------
    AssessmentResult
        ``.scores`` and ``.trust`` (tidy DataFrames), ``.tables`` (every table), ``.summary()``,
        ``.reliability_diagram()`` and ``.trust_spectrum()`` (matplotlib figures), ``.save(dir)``.
        Suspicious input (a softmax applied twice, accuracy below chance, a class never seen) is
        in ``.warnings`` and is also issued as an :class:`AssessmentWarning`.

    Raises
    ------
    trustcal.predictions.PredictionError
        (a :class:`trustcal.errors.TrustcalError`) for input that cannot be assessed: the message names
        the argument, the row or label, and the fix.

    Examples
    --------
    >>> import numpy as np, trustcal
    >>> probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    >>> result = trustcal.assess(probs, [0, 1, 1, 1], clusters=5, sweep=None)
    >>> float(result.scores.loc[0, "accuracy"])
    0.75
    >>> print(result.summary().splitlines()[0])
    trustcal.assess: 4 test samples, 2 classes
    """
    from trustcal.assessment import assess_loaded

    settings, opts = _settings(**{k: v for k, v in locals().items() if k in SETTINGS_ARGUMENTS})
    found: list[InputWarning] = []
    item = _loaded(probs_or_logits, labels, validation, opts, found)
    if item.val_probs is None and settings.calibration.names:
        raise _calibrators_need_validation(settings.calibration.names, "probs_or_logits")
    a = assess_loaded([item], settings, warnings=found)
    for w in a.warnings:
        pywarnings.warn(f"[{w.code}] {w}", AssessmentWarning, stacklevel=2)
    calibration, temperature = a.tables.get("calibration"), None
    if calibration is not None and "temperature" in settings.calibration.names:
        temperature = float(calibration["temperature"].dropna().iloc[0])
    return AssessmentResult(a.tables, a.warnings, a.classes, len(item.labels), temperature, a)
