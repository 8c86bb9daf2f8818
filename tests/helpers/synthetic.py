"""Synthetic predictions whose calibration is known by construction."""

import numpy as np

from trustcal.calibration import softmax


def draw_labels(p, rng):
    """One label per row drawn from the row's probabilities."""
    c = p.cumsum(axis=1)
    c[:, -1] = 1.0
    return (c > rng.random((len(p), 1))).argmax(axis=1)


def calibrated(n, k, seed, scale=2.0):
    """Logits z ~ N(0, scale²) and labels drawn from softmax(z): z is perfectly calibrated."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, scale, (n, k))
    return z, draw_labels(softmax(z), rng)


def overconfident_logits(n: int, k: int, seed: int, depth: float = 90.0) -> tuple[np.ndarray, np.ndarray]:
    """Logits of a model that is right most of the time, and on ~3 % of the rows confidently wrong, its true
    class down to ``depth`` nats below the top (a late epoch of an overfitted network)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(0.0, 1.0, (n, k))
    z[np.arange(n), y] += 6.0
    wrong = np.flatnonzero(rng.random(n) < 0.03)
    z[wrong, y[wrong]] = z[wrong].max(axis=1) - rng.uniform(40.0, depth, wrong.size)
    z[wrong[0], y[wrong[0]]] = z[wrong[0]].max() - depth  # the deepest reaches −depth exactly
    return z, y


def many_class_logits(
    n: int, k: int, seed: int, *, model_seed: int = 0, overconfidence: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """N×K logits and labels of a network-like K-class model about 60 % accurate, overconfident.

    The model (fixed by ``model_seed``, so that splits drawn with different ``seed`` share it): class
    prototypes ln(K)·I + 1.5 within superclasses of 5 classes (so confusions stay mostly among neighbours, as in
    CIFAR-100) + N(0, 0.5²) noise; a sample of class c has calibrated logits prototype_c + N(0, 1) and its label
    is drawn from their softmax; the model shows ``overconfidence`` × those logits, mixed a little across
    classes (I + N(0, 0.05²·10/K)) and offset per class (N(0, 0.3²)), as a network trained for many epochs.
    Accuracy ≈ 0.58 at K = 10, 0.64 at K = 100, 0.67 at K = 1000 (NLL 1.7, 2.9, 4.3)."""
    model = np.random.default_rng(model_seed)
    group = np.arange(k) // 5
    prototypes = np.log(k) * np.eye(k) + 1.5 * (group[:, None] == group[None, :]) + model.normal(0, 0.5, (k, k))
    mixing = np.eye(k) + model.normal(0, 0.05 * np.sqrt(10 / k), (k, k))
    offset = model.normal(0, 0.3, k)
    rng = np.random.default_rng(seed)
    z = prototypes[rng.integers(0, k, n)] + rng.normal(0, 1, (n, k))
    y = draw_labels(softmax(z), rng)
    return overconfidence * z @ mixing.T + offset, y
