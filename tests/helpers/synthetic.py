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
