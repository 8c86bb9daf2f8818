"""What a verdict reads of the run it judges, typed and built once (:class:`VerdictSettings`): the workflow's
verdict stage builds it from the configuration (:func:`trustcal.stages.verdict_settings`), ``trustcal assess``
from its settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams

__all__ = ["VerdictSettings"]

UNKNOWN = "?"  # how the verdict shows a setting it was not given


@dataclass(frozen=True)
class VerdictSettings:
    """The settings a verdict reports and judges by.

    ``trust``: the trust opinion's (:class:`~trustcal.measures.trust.TrustParams`; None where not known, shown
    as ``?``); ``bootstrap``: the test-set resamples behind the intervals (None: none given, the intervals at
    :class:`~trustcal.measures.bootstrap.BootstrapParams`' level); ``epochs``: the epochs of the runs;
    ``fit_on``: the split the temperature is fitted on (the configuration's ``calibration.fit_on``);
    ``setups``: the configuration's ``setups:`` (their runs' titles); ``provenance``: a line saying where the
    runs come from (none: no line)."""

    trust: TrustParams | None = None
    bootstrap: BootstrapParams | None = None
    epochs: int | None = None
    fit_on: str | None = None
    setups: Mapping | Sequence | None = None
    provenance: str = ""

    @property
    def level(self) -> float:
        """The level of the verdict's intervals."""
        return (self.bootstrap or BootstrapParams()).level

    @property
    def clusters(self) -> int | None:
        """The number of clusters M, None where not known."""
        return None if self.trust is None else self.trust.clusters

    @property
    def midpoint(self) -> bool:
        """Whether the clusters' representative is their midpoint (the default's, where not known)."""
        return (self.trust or TrustParams()).representative == "midpoint"

    def shown(self, name: str):
        """The setting ``name`` as the verdict shows it (``epochs``, ``fit_on`` or a field of ``trust``): its
        value, or ``?`` where not known."""
        if name in ("epochs", "fit_on"):
            value = getattr(self, name)
        else:
            value = None if self.trust is None else getattr(self.trust, name)
        return UNKNOWN if value is None else value

    def values(self) -> dict:
        """The settings the paper fixes (:data:`~trustcal.reporting.verdict.claims.PAPER_SETTINGS`) that are
        known: ``epochs`` and every field of ``trust``."""
        known = {} if self.epochs is None else {"epochs": self.epochs}
        return known | ({} if self.trust is None else asdict(self.trust))
