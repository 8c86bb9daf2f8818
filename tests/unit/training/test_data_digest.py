"""The digest of what training sees (trustcal.training.config.data_digest): defined for empty arrays too,
and unchanged for the others (it keys the checkpoints of runs already made)."""

import hashlib

import numpy as np

from trustcal.training.config import data_digest


def arrays(n_val):
    x = np.arange(2 * 1 * 2 * 2, dtype=np.uint8).reshape(2, 1, 2, 2)
    return {"x_train": x[:1], "y_train": np.array([0]), "x_val": x[1 : 1 + n_val], "y_val": np.arange(n_val)}


def by_hand(data):
    h = hashlib.blake2b(digest_size=12)
    for key in ("x_train", "y_train", "x_val", "y_val"):
        a = np.ascontiguousarray(data[key])
        h.update(f"{key}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def test_an_empty_validation_split_has_a_digest():
    empty, one = arrays(0), arrays(1)
    assert empty["x_val"].shape == (0, 1, 2, 2)
    assert data_digest(empty) == by_hand(empty) and len(data_digest(empty)) == 24
    assert data_digest(one) == by_hand(one) != data_digest(empty)
