"""Bootstrap over test samples: how much a number moves when the test set is drawn again.

A resample of the N test samples is a vector of multinomial counts w (Σ w = N;
sample i drawn w_i times). Every statistic of the trust opinion is a sum over
samples, so a resample only reweights those sums: with A the N × (K·M)
one-hot matrix of the (class, cluster) bin of every probability, the cluster
counts of all B resamples are one matrix product W·A (B × K·M), and the
true-label counts W·(A ∘ T). That makes B = 200 resamples of a 10,000-sample
epoch a few milliseconds instead of 200 passes of Algorithm 1.

Percentile intervals (Efron & Tibshirani 1993, §13.3): the (α/2, 1 − α/2)
quantiles of the B replicates. The same resamples (one seed) are used for
every epoch, calibration state and training seed of a dataset, because they
are all evaluated on the same test set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trustcal.measures.trust import TrustParams, cluster_index


@dataclass(frozen=True)
class BootstrapParams:
    resamples: int = 200
    seed: int = 0
    level: float = 0.95

    def __post_init__(self):
        if self.resamples < 1:
            raise ValueError(f"resamples must be ≥ 1 (got {self.resamples})")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1) (got {self.level})")


def resample_counts(n: int, params: BootstrapParams = BootstrapParams()) -> np.ndarray:
    """B × n multinomial counts: how often each of the n samples is drawn in each resample."""
    rng = np.random.default_rng(params.seed)
    draws = rng.integers(0, n, size=(params.resamples, n))  # n draws with replacement per resample
    draws += n * np.arange(params.resamples)[:, None]  # one block of n bins per resample
    return np.bincount(draws.ravel(), minlength=params.resamples * n).reshape(params.resamples, n).astype(np.float32)


def percentile_interval(replicates: np.ndarray, level: float = 0.95, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of ``replicates`` along ``axis`` (NaN replicates ignored)."""
    alpha = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(replicates, [alpha, 1.0 - alpha], axis=axis)
    return lo, hi


def bootstrap_opinions(
    probs: np.ndarray, labels: np.ndarray, counts: np.ndarray, params: TrustParams = TrustParams()
) -> dict[str, np.ndarray]:
    """Class and network opinions of every resample: ``belief``, ``disbelief``, ``uncertainty``,
    each B × (K + 1) (labels 0 … K−1, then the network), as :func:`trustcal.measures.trust.trust_opinions`
    computes them on the resampled test set. Cumulative fusion only (the sum of evidence)."""
    if params.cluster_fusion != "cumulative" or params.class_fusion != "cumulative":
        raise ValueError("the bootstrap of trust opinions supports cumulative fusion only")
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    n_samples, k = probs.shape
    if counts.shape[1] != n_samples:
        raise ValueError(f"counts have {counts.shape[1]} samples, the predictions {n_samples}")
    m = params.clusters
    bins = np.arange(k) * m + cluster_index(probs, m)  # N × K: the (class, cluster) bin of each value
    onehot = np.zeros((n_samples, k * m), dtype=np.float32)
    rows = np.repeat(np.arange(n_samples), k)
    onehot[rows, bins.ravel()] = 1.0
    is_true = (labels[:, None] == np.arange(k)).astype(np.float32)  # N × K
    truth = onehot * np.repeat(is_true, m, axis=1)
    n = (counts @ onehot).astype(np.float64).reshape(-1, k, m)  # integer counts, exact in float32 (< 2^24)
    t = (counts @ truth).astype(np.float64).reshape(-1, k, m)
    if params.representative == "midpoint":
        rp = (np.arange(m) + 0.5) / m
    else:  # the cluster mean of each resample; the midpoint where a cluster is empty
        sums = counts.astype(np.float64) @ (onehot * np.repeat(probs, m, axis=1))
        sums = sums.reshape(-1, k, m)
        rp = np.where(n > 0, sums / np.maximum(n, 1), (np.arange(m) + 0.5) / m)
    expected = n * rp
    s = params.alpha * np.maximum(t - expected, 0) + params.beta * np.maximum(expected - t, 0)
    r_c, s_c = t.sum(axis=2), s.sum(axis=2)  # B × K, cumulative fusion over clusters
    r = np.concatenate([r_c, r_c.sum(axis=1, keepdims=True)], axis=1)  # … and over classes
    s = np.concatenate([s_c, s_c.sum(axis=1, keepdims=True)], axis=1)
    total = params.weight + r + s
    return dict(belief=r / total, disbelief=s / total, uncertainty=params.weight / total)


def _onehot_differences(values: np.ndarray, diff: np.ndarray, idx: np.ndarray, n_bins: int) -> np.ndarray:
    """N × n_bins matrix with ``diff[i]`` in column ``idx[i]`` (zeros elsewhere)."""
    out = np.zeros((len(values), n_bins), dtype=np.float32)
    out[np.arange(len(values)), idx] = diff
    return out


def bootstrap_scores(probs: np.ndarray, labels: np.ndarray, counts: np.ndarray, params) -> dict[str, np.ndarray]:
    """The scores of every resample (``counts``: B × N, :func:`resample_counts`), each a length-B array:
    accuracy, mean_confidence, nll, brier, net_trust_score, ece, ece_{M} and ece_mass_{M} for every
    M of ``params.ece_bins``, classwise_ece, l2_ece and l2_ece_debiased (``params.l2_bins``
    equal-mass bins), ks_error, aurc and eaurc (docs/method.md §5). Not the smooth ECE: its
    kernel sum over a fine grid would cost a second per epoch.

    Each is a sum over samples, or over bins of sums over samples, so all B resamples come from one
    matrix product of the counts with an N × F matrix of per-sample terms (F ≈ 5 + Σ M + K·M),
    and the KS error from one cumulative sum. The equal-width bins are the same on every resample,
    so those replicates equal the metric recomputed on the resampled rows. The equal-mass bins are
    those of the full test set (a resample's own ranks would move its edges slightly): the interval
    describes the ECE over fixed bins (docs/method.md §5).
    """
    from trustcal.measures import metrics

    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels).astype(np.int64)
    n, k = probs.shape
    if counts.shape[1] != n:
        raise ValueError(f"counts have {counts.shape[1]} samples, the predictions {n}")
    rows = np.arange(n)
    pred = probs.argmax(axis=1)
    conf = probs[rows, pred]
    hit = (pred == labels).astype(np.float64)
    onehot = np.zeros_like(probs)
    onehot[rows, labels] = 1.0
    q = np.where(hit > 0, np.clip(conf, 0, 1) ** params.nts_alpha, (1.0 - np.clip(conf, 0, 1)) ** params.nts_beta)
    columns = {
        "accuracy": hit[:, None],
        "mean_confidence": conf[:, None],
        "nll": -np.log(np.clip(probs[rows, labels], 1e-12, 1.0))[:, None],
        "brier": ((probs - onehot) ** 2).sum(axis=1)[:, None],
        "net_trust_score": q[:, None],
    }
    gap = hit - conf
    for m in params.ece_bins:
        columns[f"ece_{m}"] = _onehot_differences(conf, gap, metrics.bin_indices(conf, m, "width"), m)
        columns[f"ece_mass_{m}"] = _onehot_differences(conf, gap, metrics.bin_indices(conf, m, "mass"), m)
    l2_bins = getattr(params, "l2_bins", 15)
    l2_idx = metrics.bin_indices(conf, l2_bins, "mass")
    for name, values in (("count", np.ones(n)), ("conf", conf), ("hit", hit)):
        columns[f"l2_{name}"] = _onehot_differences(conf, values, l2_idx, l2_bins)
    m0 = params.ece_bins[0]
    cls_idx = metrics.bin_indices(probs, m0, "width") + m0 * np.arange(k)[None, :]  # one bin set per class
    classwise = np.zeros((n, k * m0), dtype=np.float32)
    np.put_along_axis(classwise, cls_idx, (onehot - probs).astype(np.float32), axis=1)
    columns["classwise_ece"] = classwise
    names = list(columns)
    widths = [columns[c].shape[1] for c in names]
    features = np.concatenate([np.asarray(columns[c], dtype=np.float32) for c in names], axis=1)
    sums = (counts.astype(np.float32) @ features).astype(np.float64) / n  # B × F: each resample's sums / N
    out, start = {}, 0
    for name, width in zip(names, widths):
        block = sums[:, start : start + width]
        start += width
        if width == 1:
            out[name] = block[:, 0]
        elif name == "classwise_ece":
            out[name] = np.abs(block).sum(axis=1) / k
        elif name.startswith("l2_"):
            out[name] = block * n  # per-bin sums (count, confidence, hits) of each resample
        else:
            out[name] = np.abs(block).sum(axis=1)
    out["ece"] = out[f"ece_{m0}"]
    out["l2_ece"], out["l2_ece_debiased"] = _l2(out.pop("l2_count"), out.pop("l2_conf"), out.pop("l2_hit"), n)
    # KS and AURC: the resamples' counts in increasing confidence, one row per sample (contiguous
    # rows of B counts), summed over each group of equal confidences
    # (cumulative sums over the samples, read at the last sample of each group)
    order = np.argsort(conf, kind="stable")
    ends = np.append(conf[order][1:] != conf[order][:-1], True)
    drawn = np.ascontiguousarray(counts.T)[order]  # N × B
    walk = np.cumsum(drawn * gap[order, None], axis=0, dtype=np.float64)[ends]  # Σ (hit − conf) so far
    out["ks_error"] = np.abs(walk).max(axis=0) / n
    through = np.cumsum(drawn, axis=0, dtype=np.float64)[ends]  # drawn up to each group's end
    wrong = np.cumsum(drawn * (1.0 - hit[order, None]), axis=0, dtype=np.float64)[ends]
    out["aurc"], out["eaurc"] = _aurc(through, wrong, n)
    return out


def _l2(count: np.ndarray, conf: np.ndarray, hit: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Plug-in and debiased top-label L2 calibration error of each resample from its per-bin sums
    (B × M each), as :func:`trustcal.measures.metrics.l2_ece` computes them."""
    safe = np.maximum(count, 1)
    gap2 = np.where(count > 0, (conf / safe - hit / safe) ** 2, 0.0)
    acc = hit / safe
    two = count >= 2
    unbiased = np.where(two, gap2 - acc * (1 - acc) / np.maximum(count - 1, 1), 0.0)
    plugin = (count * gap2).sum(axis=1) / n
    debiased = (count * unbiased).sum(axis=1) / n
    return np.sqrt(plugin), np.sqrt(np.maximum(debiased, 0.0))


def _aurc(through: np.ndarray, wrong: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """AURC and E-AURC of each resample, as :func:`trustcal.measures.metrics.aurc` computes them,
    from the samples drawn (``through``) and the errors among them (``wrong``) up to the end of each
    group of equal confidence (groups × B, in increasing confidence).

    Samples are accepted in decreasing confidence; equal confidences form one group whose errors
    spread evenly (the resample's copies of a sample share its confidence, so they join its group).
    A group that starts after s accepted samples with A errors before it, W members and E errors
    adds Σ_{k=s+1}^{s+W} (A + (k − s)·E/W)/k = (A − s·E/W)(H_{s+W} − H_s) + E to Σ_k risk_k, with
    H the harmonic numbers: O(B·N) for all resamples.
    """
    size = np.diff(through, axis=0, prepend=0.0)
    errors = np.diff(wrong, axis=0, prepend=0.0)
    before = n - through  # accepted before the group: every sample of higher confidence
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])
    h_before = harmonic[before.astype(np.int64)]  # counts are whole numbers, exact in float64
    # H_{s+W} − H_s: s + W is the s of the previous row (the next-lower confidence; n before the first)
    steps = -np.diff(h_before, axis=0, prepend=harmonic[n])
    rate = np.divide(errors, size, out=np.zeros_like(errors), where=size > 0)  # an empty group adds 0
    area = (((wrong[-1] - wrong) - before * rate) * steps + errors).sum(axis=0) / n
    e = np.rint(wrong[-1]).astype(np.int64)  # errors of each resample
    optimal = (e - (n - e) * (harmonic[n] - harmonic[n - e])) / n  # every error ranked last
    return area, area - optimal
