"""trustcal.data.splits: the validation split (the unshuffled tail, as Keras) and the prepared arrays."""

import numpy as np

from trustcal.data import splits
from trustcal.data import staging as data


def test_validation_is_the_unshuffled_tail(tiny_data, tmp_path):
    out = tmp_path / "splits.npz"
    sizes = splits.prepare("mnist", tiny_data, out, verify_checksums=False)
    assert sizes == {"x_train": 180, "x_val": 20, "x_test": 60}
    arrays = splits.load_prepared(out)
    x_all = data.load_raw("mnist", tiny_data)[0]
    np.testing.assert_array_equal(arrays["x_val"], x_all[180:])
    np.testing.assert_array_equal(arrays["x_train"], x_all[:180])


def test_keras_split_point():
    assert splits.split_validation(60000) == 54000
    assert splits.split_validation(50000) == 45000
    assert splits.split_validation(101) == 91  # ceil(90.9), as Keras
