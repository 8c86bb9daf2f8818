"""The metrics' settings, one object (:class:`MetricParams`) from the configuration's ``metrics:`` keys (or the
command line's, or the API's) to every metric on the scores' path (:data:`trustcal.measures.metrics.METRICS`,
:func:`trustcal.measures.bootstrap.bootstrap_scores_of`, :func:`trustcal.evaluation.score_tables`).

Apart from the metrics themselves, so that the jobs that only carry the settings (the trust jobs, through
:class:`trustcal.settings.Settings`) do not rerun when a metric's code changes (:mod:`trustcal.codedigest`).
"""

from __future__ import annotations

from dataclasses import dataclass

from trustcal.measures.limits import BINS_COST, FOLDS_COST, MAX_BINS, MAX_FOLDS, MAX_POINTS, POINTS_COST
from trustcal.measures.options import check_fields, setting

__all__ = ["MetricParams", "SMECE_BANDWIDTHS"]

# The bandwidth of each resample's smooth ECE: the test set's σ* (held fixed, as the equal-mass ECE's bins are),
# or the resample's own bisection (docs/method.md §13.3).
SMECE_BANDWIDTHS = ("shared", "own")


@dataclass(frozen=True)
class MetricParams:
    """The metrics' settings (the config's ``metrics:`` keys): ECE bin counts (the first is the ``ece`` column),
    NetTrustScore exponents, the trust density's bandwidth and grid, the geometric family's floor and bins, the
    reliability and L2 bins, the refinement folds, the smooth reliability diagram's points and the bandwidth of the
    smooth ECE's resamples."""

    ece_bins: tuple[int, ...] = setting(
        (10, 15),
        "ECE bin counts; the first is the 'ece' column",
        low=1,
        high=MAX_BINS,
        cost=BINS_COST,
        many=True,
        metavar="M",
    )
    nts_alpha: float = setting(1.0, "NetTrustScore reward exponent", kind=float, low=0, low_open=True)
    nts_beta: float = setting(1.0, "NetTrustScore penalty exponent", kind=float, low=0, low_open=True)
    density_gamma: float = setting(0.5, "trust density bandwidth γ/√N", kind=float, low=0, low_open=True)
    density_points: int = setting(51, "trust density grid points", low=2, high=MAX_POINTS, cost=POINTS_COST)
    geo_eps: float = setting(
        0.01, "floor of the true-class probability", kind=float, low=0, high=1, low_open=True, high_open=True
    )
    geo_bins: int = setting(10, "bins of the measured geometric metrics", low=1, high=MAX_BINS, cost=BINS_COST)
    reliability_bins: int = setting(10, "reliability curve bins", low=1, high=MAX_BINS, cost=BINS_COST)
    l2_bins: int = setting(15, "equal-mass bins of the L2 and debiased L2 ECE", low=1, high=MAX_BINS, cost=BINS_COST)
    refinement_folds: int = setting(
        5,
        "folds of the cross-fitted recalibration (docs/method.md §13.2)",
        low=2,
        high=MAX_FOLDS,
        cost=FOLDS_COST,
    )
    smooth_points: int = setting(
        101,
        "points t of the smooth reliability diagram (docs/method.md §13.3)",
        low=2,
        high=MAX_POINTS,
        cost=POINTS_COST,
    )
    smece_bandwidth: str = setting(
        "shared",
        "bandwidth of the smooth ECE's resamples: the test set's (shared) or each resample's own search "
        "(docs/method.md §13.3)",
        kind=str,
        choices=SMECE_BANDWIDTHS,
    )

    def __post_init__(self):
        check_fields(self)
