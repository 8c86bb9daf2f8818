"""Kuiper's calibration test on the top label (Arrieta-Ibarra et al., JMLR 2022; docs/method.md §13.4).

The Kolmogorov–Smirnov test of :func:`trustcal.measures.calibration_errors.ks_test` looks at the
largest distance of the calibration walk from 0; Kuiper's test looks at its range, the largest
rise plus the largest fall, so a walk that first climbs and then drops back (overconfident at
some confidences, underconfident at others) counts both parts. NumPy only.
"""

from __future__ import annotations

import math

import numpy as np

from trustcal.measures.bins import TopLabel
from trustcal.measures.calibration_errors import brownian_sf

__all__ = ["brownian_range_sf", "kuiper_test", "kuiper_test_of"]

_TERMS = 40  # both series reach double precision with 40 terms on their side of x = 1


def brownian_range_sf(x: float) -> float:
    """P(max_{[0,1]} B − min_{[0,1]} B ≥ x) for a standard Brownian motion B with B_0 = 0 (Feller 1951).

    x < 1: 1 − Σ_{k≥0} (8/x² + 2/((k + ½)²π²)) · exp(−2(k + ½)²π²/x²) (the form of MAPIE's
    ``kuiper_cdf``; its terms fall as exp(−2π²k²)); x ≥ 1: the tail series
    4 Σ_{k≥1} (−1)^{k−1} k · erfc(k·x/√2), the integral of Feller's density
    8 Σ_{k≥1} (−1)^{k−1} k² φ(k·x), whose terms fall as exp(−k²/2) and which does not cancel to 0
    in the far tail. The two agree to a few ε where both converge (tests/unit/measures/test_calibration_tests.py).
    """
    return brownian_sf(
        x,
        lambda x: sum(
            (8.0 / (x * x) + 2.0 / ((k + 0.5) ** 2 * math.pi**2))
            * math.exp(-2.0 * (k + 0.5) ** 2 * math.pi**2 / (x * x))
            for k in range(_TERMS)
        ),
        lambda x: 4.0 * sum((-1) ** (k - 1) * k * math.erfc(k * x / math.sqrt(2.0)) for k in range(1, _TERMS + 1)),
    )


def kuiper_test_of(top: TopLabel) -> tuple[float, float]:
    """(statistic, p) of Kuiper's test (see :func:`kuiper_test`) along ``top.order``."""
    conf, hit, order = top.conf, top.hit, top.order
    scale = math.sqrt(float(np.sum(conf * (1.0 - conf))))
    c = conf[order]
    walk = np.cumsum(hit[order] - c)
    walk = walk[np.append(c[1:] != c[:-1], True)]  # read at the end of each group of equal confidences
    spread = max(float(walk.max()), 0.0) - min(float(walk.min()), 0.0)  # the walk starts at S_0 = 0
    if scale <= 0.0:  # every confidence 0 or 1
        return (math.nan, math.nan) if spread == 0.0 else (math.inf, 0.0)
    statistic = spread / scale
    return statistic, brownian_range_sf(statistic)


def kuiper_test(probs, labels) -> tuple[float, float]:
    """Kuiper's calibration test on the top label (Arrieta-Ibarra et al., JMLR 2022; docs/method.md §13.4).

    The walk S_i = Σ_{j≤i} (hit_j − C_j) in increasing confidence (as for :func:`~trustcal.measures.
    calibration_errors.ks_test`), with S_0 = 0, read at the end of each group of equal confidences.
    Statistic = (max_i S_i − min_i S_i) / √(Σ_j C_j(1 − C_j)), the range of the walk over its length
    scale ("ECCE-R"); under top-label calibration it tends to the range of a standard Brownian motion on
    [0, 1], so p = :func:`brownian_range_sf` (statistic). MAPIE's ``kuiper_statistic`` leaves S_0 out
    (its range is the same whenever the walk crosses 0) and jitters ties; probmetrics' ``kuiper`` keeps
    S_0. Returns (statistic, p); (NaN, NaN) when every confidence is 0 or 1 and the walk stays at 0,
    (inf, 0) when it does not.
    """
    return kuiper_test_of(TopLabel.of(probs, labels))
