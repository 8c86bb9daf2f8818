"""Binomial subjective-logic opinions and their fusion operators (docs/method.md §4).

Source: A. Jøsang, *Subjective Logic* (Springer 2016), ch. 3 (opinions and
evidence) and ch. 12 (belief fusion); the weighted fusion operator is from
Jøsang, "Categories of Belief Fusion", JAIF 13(2), 2018.

An opinion is ``(b, d, u, a)``: belief, disbelief, uncertainty (b + d + u = 1)
and base rate a, all in [0, 1]. Every field may be a float or an array; the
fields of one opinion broadcast against each other, so
``Opinion(b, d, u, 0.5)`` with ``b`` of shape (K, M) is K × M opinions.

Evidence (Eq. 1, non-informative prior weight W = 2)::

    b = r / (W + r + s),   d = s / (W + r + s),   u = W / (W + r + s)

Fusion of many opinions is computed in closed form. With the *scaled
weights* ``ω_i = u_min / u_i`` (``u_min`` the smallest uncertainty among the
fused opinions; when ``u_min = 0``, ``ω_i = 1`` for the dogmatic opinions and
0 for the others) every operator is a ratio of sums whose denominator is at
least 1 (or guarded explicitly), so nothing ever divides by zero, nothing
overflows for tiny ``u`` and dogmatic opinions fall out as the limit with
*equal relative dogmatism* (Jøsang's Case II: the average of the dogmatic
opinions), without a special branch per element.

* Cumulative fusion = sum of evidence, ``r = Σ r_i``, ``s = Σ s_i``
  (Jøsang 2016, Eq. 12.18 and its multi-source form)::

      D = u_min + Σ ω_i (1 − u_i)            (D ≥ 1)
      b = Σ ω_i b_i / D,  d = Σ ω_i d_i / D,  u = u_min / D
      a = Σ ω_i (1 − u_i) a_i / Σ ω_i (1 − u_i)   (evidence-weighted; mean of
                                                   a_i if all are vacuous)

  For two opinions this is exactly Eq. 2 of the paper: the base-rate weights
  ``u_B (1 − u_A)`` and ``u_A (1 − u_B)`` are proportional to the amount of
  evidence ``(1 − u)/u`` of each source.

* Averaging fusion = mean of evidence (Jøsang 2016, Eq. 12.21)::

      b = Σ ω_i b_i / Σ ω_i,  u = n u_min / Σ ω_i,  a = mean(a_i)

* Weighted fusion = confidence-weighted average (Jøsang 2018, Def. 9)::

      b = Σ ω_i (1 − u_i) b_i / Σ ω_i (1 − u_i),  likewise d and u,
      a = Σ (1 − u_i) a_i / Σ (1 − u_i);
      all vacuous → (0, 0, 1, mean a_i).

Cumulative fusion is commutative and associative for non-dogmatic opinions;
fusing a pair of dogmatic opinions averages them, so a chain of pairwise
fusions of dogmatic opinions weights them unequally (fuse them in one call of
:func:`fuse` to get the plain average).
"""

from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

import numpy as np

__all__ = [
    "Opinion",
    "FUSION_METHODS",
    "projected_probability",
    "opinion_from_evidence",
    "evidence_from_opinion",
    "vacuous_opinion",
    "cumulative_fusion",
    "averaging_fusion",
    "weighted_fusion",
    "fuse",
    "fuse_evidence",
]

FUSION_METHODS = ("cumulative", "averaging", "weighted")


class Opinion(NamedTuple):
    """A binomial opinion (b, d, u, a); fields are floats or broadcastable arrays."""

    belief: np.ndarray | float
    disbelief: np.ndarray | float
    uncertainty: np.ndarray | float
    base_rate: np.ndarray | float = 0.5

    # the four fields by their one-letter names (b, d, u, a), in the fields' order
    b = property(itemgetter(0), doc="the belief")
    d = property(itemgetter(1), doc="the disbelief")
    u = property(itemgetter(2), doc="the uncertainty")
    a = property(itemgetter(3), doc="the base rate")

    def projected_probability(self):
        """P = b + a·u (Jøsang 2016, Eq. 3.2)."""
        return projected_probability(self)


def projected_probability(op: Opinion):
    """Projected probability P = b + a·u of an opinion (Jøsang 2016, Eq. 3.2)."""
    return np.asarray(op.belief) + np.asarray(op.base_rate) * np.asarray(op.uncertainty)


def _as_arrays(op: Opinion) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four fields as float arrays broadcast to one common shape."""
    b, d, u, a = np.broadcast_arrays(*(np.asarray(f, dtype=float) for f in op))
    return b, d, u, a


def _unwrap(x: np.ndarray):
    """0-d arrays back to Python floats, so scalar in → scalar out."""
    return float(x) if np.ndim(x) == 0 else x


def opinion_from_evidence(r, s, weight: float = 2.0, base_rate=0.5) -> Opinion:
    """Binomial opinion from positive evidence r and negative evidence s (Eq. 1).

    b = r/(W+r+s), d = s/(W+r+s), u = W/(W+r+s), a = base_rate
    (Jøsang 2016, Eq. 3.11; docs/method.md §3.4). ``r``, ``s`` ≥ 0 may be arrays.
    W must be > 0, so the denominator is never 0 and the opinion is never
    dogmatic; infinite evidence gives the dogmatic limit.
    """
    if not weight > 0:
        raise ValueError(f"weight W must be > 0, got {weight}")
    r = np.asarray(r, dtype=float)
    s = np.asarray(s, dtype=float)
    if np.any(r < 0) or np.any(s < 0):
        raise ValueError("evidence r and s must be non-negative")
    r, s, a = np.broadcast_arrays(r, s, np.asarray(base_rate, dtype=float))
    with np.errstate(invalid="ignore"):
        total = weight + r + s
        b = r / total
        d = s / total
        u = weight / total
    # Infinite evidence: the dogmatic limit (inf/inf above is NaN).
    r_inf, s_inf = np.isinf(r), np.isinf(s)
    both = r_inf & s_inf
    b = np.where(both, 0.5, np.where(r_inf, 1.0, np.where(s_inf, 0.0, b)))
    d = np.where(both, 0.5, np.where(s_inf, 1.0, np.where(r_inf, 0.0, d)))
    return Opinion(_unwrap(b), _unwrap(d), _unwrap(u), _unwrap(a.copy()))


def evidence_from_opinion(op: Opinion, weight: float = 2.0):
    """Evidence (r, s) behind an opinion: r = W·b/u, s = W·d/u (inverse of Eq. 1).

    Defined for u > 0. For a dogmatic opinion (u = 0) the evidence is infinite:
    r = inf where b > 0 (0 where b = 0), likewise s with d.
    """
    b, d, u, _ = _as_arrays(op)
    pos = u > 0
    safe_u = np.where(pos, u, 1.0)
    r = np.where(pos, weight * b / safe_u, np.where(b > 0, np.inf, 0.0))
    s = np.where(pos, weight * d / safe_u, np.where(d > 0, np.inf, 0.0))
    return _unwrap(r), _unwrap(s)


def vacuous_opinion(base_rate=0.5) -> Opinion:
    """The vacuous opinion (0, 0, 1, a): no evidence at all; neutral for cumulative fusion."""
    a = np.asarray(base_rate, dtype=float)
    return Opinion(_unwrap(np.zeros_like(a)), _unwrap(np.zeros_like(a)), _unwrap(np.ones_like(a)), _unwrap(a.copy()))


def _scaled_weights(u: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """ω_i = u_min/u_i along ``axis`` (1 for dogmatic u_i = u_min = 0, 0 for the rest).

    Returns (ω, u_min) with u_min keeping the reduced axis (keepdims).
    """
    u_min = np.min(u, axis=axis, keepdims=True)
    dogmatic = u_min == 0
    safe_u = np.where(u > 0, u, 1.0)
    omega = np.where(dogmatic, (u == 0).astype(float), u_min / safe_u)
    return omega, u_min


def _safe_ratio(num: np.ndarray, den: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """num/den where den > 0, else ``fallback`` (no division by zero)."""
    ok = den > 0
    return np.where(ok, num / np.where(ok, den, 1.0), fallback)


def fuse(op: Opinion, axis: int = -1, method: str = "cumulative") -> Opinion:
    """Fuse many opinions along ``axis`` of their (broadcast) fields.

    ``method`` is ``"cumulative"`` (aleatory cumulative fusion = sum of
    evidence), ``"averaging"`` (= mean of evidence) or ``"weighted"``
    (confidence-weighted). Closed forms in the module docstring (Jøsang 2016
    ch. 12; Jøsang 2018). Vectorised: one pass of sums over ``axis``; the
    result has that axis removed. Dogmatic opinions (u = 0) dominate and are
    averaged with equal relative dogmatism; vacuous opinions (u = 1) carry no
    weight, except that fusing only vacuous opinions gives the vacuous opinion
    with the mean base rate.
    """
    if method not in FUSION_METHODS:
        raise ValueError(f"method must be one of {FUSION_METHODS}, got {method!r}")
    b, d, u, a = _as_arrays(op)
    if b.ndim == 0:
        raise ValueError("fuse needs array fields with an axis to reduce")
    if b.shape[axis] == 0:
        raise ValueError("cannot fuse an empty set of opinions")

    omega, u_min = _scaled_weights(u, axis)
    u_min = np.squeeze(u_min, axis=axis)
    a_mean = np.mean(a, axis=axis)
    conf = 1.0 - u  # b + d, the amount of committed belief

    if method == "cumulative":
        w = omega * conf
        den = u_min + np.sum(w, axis=axis)  # ≥ 1, see module docstring
        b_f = np.sum(omega * b, axis=axis) / den
        d_f = np.sum(omega * d, axis=axis) / den
        u_f = u_min / den
        a_f = _safe_ratio(np.sum(w * a, axis=axis), np.sum(w, axis=axis), a_mean)
    elif method == "averaging":
        den = np.sum(omega, axis=axis)  # ≥ 1: the argmin has ω = 1
        n = b.shape[axis]
        b_f = np.sum(omega * b, axis=axis) / den
        d_f = np.sum(omega * d, axis=axis) / den
        u_f = n * u_min / den
        a_f = a_mean
    else:  # weighted
        w = omega * conf
        den = np.sum(w, axis=axis)  # 0 only if every opinion is vacuous
        b_f = _safe_ratio(np.sum(w * b, axis=axis), den, np.zeros_like(den))
        d_f = _safe_ratio(np.sum(w * d, axis=axis), den, np.zeros_like(den))
        u_f = _safe_ratio(np.sum(w * u, axis=axis), den, np.ones_like(den))
        a_f = _safe_ratio(np.sum(conf * a, axis=axis), np.sum(conf, axis=axis), a_mean)

    # Round-off can leave b + d + u a few ulp from 1; u is the residual's home.
    u_f = np.clip(u_f, 0.0, 1.0)
    return Opinion(_unwrap(b_f), _unwrap(d_f), _unwrap(u_f), _unwrap(a_f))


def _fuse_pair(x: Opinion, y: Opinion, method: str) -> Opinion:
    xb, xd, xu, xa = _as_arrays(x)
    yb, yd, yu, ya = _as_arrays(y)
    stacked = Opinion(
        *(np.stack(np.broadcast_arrays(p, q), axis=-1) for p, q in zip((xb, xd, xu, xa), (yb, yd, yu, ya)))
    )
    return fuse(stacked, axis=-1, method=method)


def cumulative_fusion(x: Opinion, y: Opinion) -> Opinion:
    """Aleatory cumulative fusion x ⊕ y (Jøsang 2016 Eq. 12.18; paper Eq. 2).

    u_x or u_y ≠ 0:  b = (b_x u_y + b_y u_x)/(u_x + u_y − u_x u_y),
                     u = u_x u_y/(u_x + u_y − u_x u_y),
                     a = (a_x u_y + a_y u_x − (a_x + a_y) u_x u_y)/(u_x + u_y − 2 u_x u_y)
                         ((a_x + a_y)/2 when u_x = u_y = 1);
    u_x = u_y = 0:   the average of x and y (equal relative dogmatism).
    Equals summing the evidence of x and y.
    """
    return _fuse_pair(x, y, "cumulative")


def averaging_fusion(x: Opinion, y: Opinion) -> Opinion:
    """Averaging fusion x ⊕̲ y (Jøsang 2016 Eq. 12.21).

    u_x or u_y ≠ 0:  b = (b_x u_y + b_y u_x)/(u_x + u_y),  u = 2 u_x u_y/(u_x + u_y);
    u_x = u_y = 0:   b = (b_x + b_y)/2, u = 0;   a = (a_x + a_y)/2 always.
    Equals averaging the evidence of x and y.
    """
    return _fuse_pair(x, y, "averaging")


def weighted_fusion(x: Opinion, y: Opinion) -> Opinion:
    """Weighted belief fusion (Jøsang 2018, "Categories of Belief Fusion", Def. 9).

    Case I (not both dogmatic, not both vacuous), with c = 1 − u:
      b = (b_x c_x u_y + b_y c_y u_x)/(u_x + u_y − 2 u_x u_y),
      u = (2 − u_x − u_y) u_x u_y/(u_x + u_y − 2 u_x u_y),
      a = (a_x c_x + a_y c_y)/(2 − u_x − u_y);
    both dogmatic: the average; both vacuous: (0, 0, 1, (a_x + a_y)/2).
    """
    return _fuse_pair(x, y, "weighted")


def fuse_evidence(r, s, axis: int = -1, method: str = "cumulative", weight: float = 2.0):
    """Fuse opinions given as evidence (r, s) along ``axis``; returns fused (r, s).

    For finite evidence (non-dogmatic opinions): cumulative fusion is the sum
    of evidence, averaging fusion the mean (Jøsang 2016 §12.3–12.5); weighted
    fusion goes through :func:`fuse` and back.
    """
    if method not in FUSION_METHODS:
        raise ValueError(f"method must be one of {FUSION_METHODS}, got {method!r}")
    r = np.asarray(r, dtype=float)
    s = np.asarray(s, dtype=float)
    if np.any(r < 0) or np.any(s < 0):
        raise ValueError("evidence r and s must be non-negative")
    if method == "cumulative":
        return _unwrap(np.sum(r, axis=axis)), _unwrap(np.sum(s, axis=axis))
    if method == "averaging":
        return _unwrap(np.mean(r, axis=axis)), _unwrap(np.mean(s, axis=axis))
    fused = fuse(opinion_from_evidence(r, s, weight=weight), axis=axis, method=method)
    return evidence_from_opinion(fused, weight=weight)
