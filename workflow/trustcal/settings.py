"""The settings of an evaluation, as one object: trust opinions, metrics, cluster sweep, bootstrap, calibration.

:class:`Settings` is what the workflow's evaluation stages (:mod:`trustcal.stages`), ``trustcal assess``
(:mod:`trustcal.cli`), the Python API (:mod:`trustcal.api`) and :mod:`trustcal.assessment` take, whole.
Each of its parts (:data:`PARTS`) is a settings dataclass whose fields declare their help text, bounds
and check once (:mod:`trustcal.measures.options`): the command line derives its flags from them
(:func:`trustcal.cli.settings_from_args`), the API's arguments are checked by them, and the configuration
is read by them in one place, :meth:`Settings.from_config` (each field's key: :func:`config_path`). The
defaults are the paper's, the same as the configuration schema's (``workflow/schemas/config.schema.yaml``;
``tests/unit/test_options.py`` checks both ways).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trustcal.calibration import METHODS, T_MAX, T_MIN
from trustcal.calibration.states import PAPER_CALIBRATOR
from trustcal.evaluation.trust import SweepParams
from trustcal.imports import IMPORT_PATH
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.metric_params import MetricParams
from trustcal.measures.options import SettingError, check_fields, options_of, setting
from trustcal.measures.trust import TrustParams

__all__ = ["CalibrationSettings", "Settings", "config_path"]

# The calibrators fitted on validation predictions (``none``, the predictions as given, is always assessed).
FITTED = tuple(m for m in METHODS if m != "none")


@dataclass(frozen=True)
class CalibrationSettings:
    """Which calibrators an assessment fits on validation predictions, and the bounds of their scale.

    ``methods``: None fits the paper's temperature scaling wherever a file has validation predictions;
    names (any of :data:`trustcal.calibration.METHODS` but ``none``, or a calibrator of the user's own by its
    import path ``package.module:Class``, :mod:`trustcal.calibration.user`) fit those. ``required``: named
    methods are wanted on every epoch, so one that no epoch can get (no validation predictions anywhere)
    is an error and one that some epochs lack is a warning; ``False`` fits them where possible and
    says nothing elsewhere (the workflow's ``external`` rule). ``t_min``, ``t_max``: the temperature is
    searched in [t_min, t_max] (the other scaling methods' scales in [1/t_max, 1/t_min]).
    """

    methods: tuple[str, ...] | None = setting(
        None,
        "calibrators fitted on the validation data (docs/method.md §2)",
        kind=str,
        choices=FITTED,
        pattern=IMPORT_PATH.pattern,
        pattern_help="a calibrator of your own by its import path package.module:Class",
        many=True,
        min_items=0,
        comma=True,
        flag="calibrators",
        metavar="LIST",
        shown_default="temperature where there are validation data; named ones without validation data are an "
        "error; all but temperature need pip install 'trustcal[calibration]'",
    )
    t_min: float = setting(T_MIN, "lower bound of the temperature T", kind=float, low=0, low_open=True)
    t_max: float = setting(T_MAX, "upper bound of the temperature T", kind=float, low=0, low_open=True)
    required: bool = True

    def __post_init__(self):
        check_fields(self)
        if self.methods is not None:
            object.__setattr__(self, "methods", tuple(dict.fromkeys(self.methods)))
        if not self.t_min < self.t_max:
            raise SettingError(
                "t_min",
                "must be smaller than t_max",
                self.t_min,
                None,
                f"t_min={T_MIN}, t_max={T_MAX}",
                message=f"t_min={self.t_min} must be smaller than t_max={self.t_max}",
            )

    @property
    def names(self) -> tuple[str, ...]:
        """The methods to fit: ``methods``, or the paper's temperature scaling when None."""
        return (PAPER_CALIBRATOR,) if self.methods is None else tuple(self.methods)


@dataclass(frozen=True)
class Settings:
    """Every setting of an evaluation; the defaults are the paper's.

    ``trust``: the trust opinion (:class:`~trustcal.measures.trust.TrustParams`, the paper's M = 10
    clusters); ``metrics``: the calibration metrics (:class:`~trustcal.measures.metric_params.MetricParams`);
    ``sweep``: the cluster sweep of ``trust_sweep.csv`` (None: no sweep); ``bootstrap``: the resamples
    of the test set behind every interval (None: no intervals); ``calibration``:
    :class:`CalibrationSettings`.
    """

    trust: TrustParams = TrustParams()
    metrics: MetricParams = MetricParams()
    sweep: SweepParams | None = SweepParams()
    bootstrap: BootstrapParams | None = BootstrapParams()
    calibration: CalibrationSettings = CalibrationSettings()

    @classmethod
    def from_config(cls, config: Mapping) -> Settings:
        """The settings of the workflow's configuration (validated: :func:`trustcal.config.validate_config`).

        Reads each field's key (:func:`config_path`): ``clusters``, ``trust`` (its ``clusters_sweep``,
        ``sweep_representatives`` and ``sweep_epochs`` set the sweep), ``metrics``, ``bootstrap`` and
        ``calibration`` (``methods``, ``t_min``, ``t_max``). A key
        absent from ``config`` keeps its default: a rule passes only the keys its job reads, so that
        changing one reruns only the jobs that read it. The calibrators are the workflow's: temperature
        scaling and ``calibration.methods``, fitted where validation predictions are given.
        """
        parts = {part: cls_ for part, cls_, _ in PARTS if part != "calibration"}
        settings = {part: _from_section(cls_, config) for part, cls_ in parts.items()}
        cal = config.get("calibration")
        calibration = cls().calibration
        if cal is not None:
            calibration = CalibrationSettings(
                methods=tuple(dict.fromkeys([PAPER_CALIBRATOR, *cal.get("methods", ())])),
                t_min=cal.get("t_min", T_MIN),
                t_max=cal.get("t_max", T_MAX),
                required=False,
            )
        return cls(**settings, calibration=calibration)


def config_path(cls, name: str) -> tuple[str, ...]:
    """Where the configuration sets the field ``name`` of the settings dataclass ``cls``:
    ``("trust", "weight")``, ``("clusters",)`` (a top-level key), ``("trust", "clusters_sweep")``."""
    option = options_of(cls)[name]
    section = SECTIONS[cls] if option.section is None else option.section
    return (*([section] if section else []), option.key or name)


def _from_section(cls, config: Mapping):
    """``cls`` with each field the configuration sets (:func:`config_path`); the others keep their default."""
    values = {}
    for name, option in options_of(cls).items():
        *section, key = config_path(cls, name)
        node = config.get(section[0], {}) if section else config
        if key in node:
            values[name] = tuple(node[key]) if option.many else node[key]
    return cls(**values)


# The parts of Settings: (its field, the settings dataclass, the configuration section of its keys).
PARTS = (
    ("trust", TrustParams, "trust"),
    ("metrics", MetricParams, "metrics"),
    ("sweep", SweepParams, "trust"),
    ("bootstrap", BootstrapParams, "bootstrap"),
    ("calibration", CalibrationSettings, "calibration"),
)
SECTIONS = {cls: section for _, cls, section in PARTS}
