"""The settings of an evaluation, as one object: trust opinions, metrics, cluster sweep, bootstrap, calibration.

:class:`Settings` is what the workflow's evaluation stages (:mod:`trustcal.stages`), ``trustcal assess``
(:mod:`trustcal.cli`), the Python API (:mod:`trustcal.api`) and :mod:`trustcal.assessment` take, whole.
It is built from the workflow's configuration in one place, :meth:`Settings.from_config`; the command
line builds it from its arguments (:func:`trustcal.cli.settings_from_args`). The defaults are the
paper's, the same as the configuration schema's (``workflow/schemas/config.schema.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trustcal.calibration import T_MAX, T_MIN
from trustcal.files import PAPER_CALIBRATOR
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams
from trustcal.reporting.tables import MetricParams, SweepParams

__all__ = ["CalibrationSettings", "Settings"]

# The keys of the configuration's `trust:` section that set the cluster sweep (trust_sweep.csv),
# not the trust opinion itself.
SWEEP_KEYS = {"clusters_sweep": "clusters", "sweep_epochs": "epochs"}


@dataclass(frozen=True)
class CalibrationSettings:
    """Which calibrators an assessment fits on validation predictions, and the bounds of their scale.

    ``methods``: None fits the paper's temperature scaling wherever a file has validation predictions;
    names (any of :data:`trustcal.calibration.METHODS` but ``none``) fit those. ``required``: named
    methods are wanted on every epoch, so one that no epoch can get (no validation predictions anywhere)
    is an error and one that some epochs lack is a warning; ``False`` fits them where possible and
    says nothing elsewhere (the workflow's ``external`` rule). ``t_min``, ``t_max``: the temperature is
    searched in [t_min, t_max] (the other scaling methods' scales in [1/t_max, 1/t_min]).
    """

    methods: tuple[str, ...] | None = None
    t_min: float = T_MIN
    t_max: float = T_MAX
    required: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        """The methods to fit: ``methods``, or the paper's temperature scaling when None."""
        return (PAPER_CALIBRATOR,) if self.methods is None else tuple(self.methods)


@dataclass(frozen=True)
class Settings:
    """Every setting of an evaluation; the defaults are the paper's.

    ``trust``: the trust opinion (:class:`~trustcal.measures.trust.TrustParams`, the paper's M = 10
    clusters); ``metrics``: the calibration metrics (:class:`~trustcal.reporting.tables.MetricParams`);
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

        Reads the keys ``clusters``, ``trust`` (its ``clusters_sweep`` and ``sweep_epochs`` set the
        sweep), ``metrics``, ``bootstrap`` and ``calibration`` (``methods``, ``t_min``, ``t_max``). A key
        absent from ``config`` keeps its default: a rule passes only the keys its job reads, so that
        changing one reruns only the jobs that read it. The calibrators are the workflow's: temperature
        scaling and ``calibration.methods``, fitted where validation predictions are given.
        """
        trust = dict(config.get("trust", {}))
        sweep = {SWEEP_KEYS[k]: tuple(trust.pop(k)) for k in list(trust) if k in SWEEP_KEYS}
        if "clusters" in config:
            trust["clusters"] = config["clusters"]
        metrics = dict(config.get("metrics", {}))
        if "ece_bins" in metrics:
            metrics["ece_bins"] = tuple(metrics["ece_bins"])
        defaults = cls()
        cal = config.get("calibration")
        calibration = defaults.calibration
        if cal is not None:
            calibration = CalibrationSettings(
                methods=tuple(dict.fromkeys([PAPER_CALIBRATOR, *cal.get("methods", ())])),
                t_min=cal.get("t_min", T_MIN),
                t_max=cal.get("t_max", T_MAX),
                required=False,
            )
        return cls(
            trust=TrustParams(**trust),
            metrics=MetricParams(**metrics),
            sweep=SweepParams(**sweep),
            bootstrap=BootstrapParams(**config["bootstrap"]) if "bootstrap" in config else defaults.bootstrap,
            calibration=calibration,
        )
