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
