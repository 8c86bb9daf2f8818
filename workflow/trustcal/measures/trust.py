"""Trust opinion of a classifier (Ouattara, §5 and Algorithm 1; docs/method.md §3).

For every class c the N predicted probabilities P[:, c] are split into M
clusters [i/M, (i+1)/M) (the last one closed at 1). In cluster i with n_i
values of which t_i belong to samples whose true label is c, and
representative RP_i:

    r_i = t_i
    s_i = α·max(t_i − n_i·RP_i, 0) + β·max(n_i·RP_i − t_i, 0)

Each (r_i, s_i) is a binomial opinion (Eq. 1: b = r/(W+r+s), d = s/(W+r+s),
u = W/(W+r+s)). Cluster opinions are fused into a class opinion and class
opinions into the network opinion; with cumulative fusion (the paper's
choice) that is exactly the sum of evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from trustcal.measures.limits import CLUSTERS_COST, MAX_CLUSTERS
from trustcal.measures.opinions import FUSION_METHODS, fuse_evidence
from trustcal.measures.options import check_fields, setting

REPRESENTATIVES = ("midpoint", "mean")
FUSIONS = FUSION_METHODS
TRUST_COLUMNS = (
    "epoch",
    "calibrator",
    "label",
    "belief",
    "disbelief",
    "uncertainty",
    "base_rate",
    "positive_evidence",
    "negative_evidence",
)


@dataclass(frozen=True)
class TrustParams:
    """The trust opinion's settings (the config's ``clusters`` and ``trust:`` keys; docs/method.md §3): M probability
    clusters per class, the prior weight W, the evidence weights alpha and beta, the base rate, the cluster
    representative (``midpoint`` as in the paper, or ``mean``) and the two fusion operators."""

    clusters: int = setting(
        10,
        "probability clusters per class",
        low=1,
        high=MAX_CLUSTERS,
        cost=CLUSTERS_COST,
        section="",
        metavar="M",
    )
    weight: float = setting(
        2.0, "non-informative prior weight", kind=float, low=0, low_open=True, symbol="W", metavar="W"
    )
    alpha: float = setting(1.0, "weight of excess evidence t − n·RP", kind=float, low=0)
    beta: float = setting(1.0, "weight of missing evidence n·RP − t", kind=float, low=0)
    base_rate: float = setting(0.5, "base rate a", kind=float, low=0, high=1, metavar="A")
    representative: str = setting("midpoint", "cluster representative", kind=str, choices=REPRESENTATIVES)
    cluster_fusion: str = setting("cumulative", "fusion of cluster opinions", kind=str, choices=FUSIONS)
    class_fusion: str = setting("cumulative", "fusion of class opinions", kind=str, choices=FUSIONS)

    def __post_init__(self):
        check_fields(self)


def cluster_index(p: np.ndarray, clusters: int) -> np.ndarray:
    """Cluster of each probability: floor(p·M), with p = 1 in the last cluster."""
    return np.clip(np.floor(np.asarray(p, dtype=np.float64) * clusters), 0, clusters - 1).astype(np.intp)


def cluster_evidence(probs: np.ndarray, labels: np.ndarray, params: TrustParams = TrustParams()):
    """Per (class, cluster) counts and evidence, each a K×M array.

    Returns a dict with ``n``, ``t``, ``representative``, ``r`` and ``s``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    n_samples, k = probs.shape
    m = params.clusters
    idx = cluster_index(probs, m)  # N×K
    flat = (np.arange(k) * m + idx).ravel()  # (class, cluster) bin of every value
    is_true = (labels[:, None] == np.arange(k)).ravel()
    n = np.bincount(flat, minlength=k * m).reshape(k, m).astype(np.float64)
    t = np.bincount(flat, weights=is_true, minlength=k * m).reshape(k, m)
    if params.representative == "midpoint":
        rp = np.broadcast_to((np.arange(m) + 0.5) / m, (k, m))
    else:  # mean probability of the cluster (midpoint where the cluster is empty)
        sums = np.bincount(flat, weights=probs.ravel(), minlength=k * m).reshape(k, m)
        rp = np.where(n > 0, sums / np.maximum(n, 1), (np.arange(m) + 0.5) / m)
    expected = n * rp
    r = t
    s = params.alpha * np.maximum(t - expected, 0) + params.beta * np.maximum(expected - t, 0)
    return dict(n=n, t=t, representative=np.asarray(rp), r=r, s=s)


def _fuse_evidence(r: np.ndarray, s: np.ndarray, method: str, weight: float, base_rate: float, axis: int):
    """Fuse evidence-based opinions along ``axis`` (:func:`~trustcal.measures.opinions.fuse_evidence`);
    returns (b, d, u, a, r, s) of the fused opinion."""
    r_f, s_f = fuse_evidence(r, s, axis=axis, method=method, weight=weight)
    total = weight + r_f + s_f
    return r_f / total, s_f / total, weight / total, np.full_like(total, base_rate), r_f, s_f


def trust_opinions(probs: np.ndarray, labels: np.ndarray, params: TrustParams = TrustParams()) -> pd.DataFrame:
    """Class opinions and the network opinion (docs/method.md §3.1–3.5).

    Returns one row per label (0 … K−1, then ``network``) with ``belief,
    disbelief, uncertainty, base_rate, positive_evidence, negative_evidence``.
    """
    ev = cluster_evidence(probs, labels, params)
    b, d, u, a, r, s = _fuse_evidence(ev["r"], ev["s"], params.cluster_fusion, params.weight, params.base_rate, 1)
    nb, nd, nu, na, nr, ns = _fuse_evidence(r, s, params.class_fusion, params.weight, params.base_rate, 0)
    k = len(b)
    return pd.DataFrame(
        dict(
            label=[str(c) for c in range(k)] + ["network"],
            belief=np.append(b, nb),
            disbelief=np.append(d, nd),
            uncertainty=np.append(u, nu),
            base_rate=np.append(a, na),
            positive_evidence=np.append(r, nr),
            negative_evidence=np.append(s, ns),
        )
    )
