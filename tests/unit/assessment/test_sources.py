"""trustcal.assessment.sources: the training history beside the predictions, read without running code (issue 27)."""

import pickle

import numpy as np
import pytest
from helpers.payload import Payload

from trustcal.assessment.sources import read_history
from trustcal.predictions import UnreadableFile


def test_a_pickled_loss_history_is_read(tmp_path):
    """The author's layout: a dict of lists, of floats or NumPy scalars, saved by np.save (protocol 3)."""
    path = tmp_path / "loss_history.npy"
    np.save(path, {"train": [np.float64(0.5), np.float32(0.25)], "val": np.array([0.75, 0.5])}, allow_pickle=True)
    h = read_history(path)
    assert h[["epoch", "train_loss", "val_loss"]].values.tolist() == [[1, 0.5, 0.75], [2, 0.25, 0.5]]


@pytest.mark.parametrize("protocol", [2, 5])
def test_a_history_pickled_with_another_protocol_is_read(tmp_path, protocol):
    """Protocol 2 (bytes through _codecs.encode) and 5 (NumPy's buffer form) hold nothing else."""
    path = tmp_path / "loss_history.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "|O", "fortran_order": False, "shape": ()})
        obj = np.empty((), dtype=object)
        obj[()] = {"train": np.array([0.5, 0.25]), "val": [0.75, 0.5], "note": b"\x00\xff bytes"}
        pickle.dump(obj, fh, protocol=protocol)
    assert read_history(path)["train_loss"].tolist() == [0.5, 0.25]


@pytest.mark.parametrize("where", ["train", "whole"])
def test_a_loss_history_holding_a_pickle_payload_is_refused_and_never_run(tmp_path, where):
    marker = tmp_path / "ran"
    obj = {"train": Payload(marker), "val": [0.1]} if where == "train" else Payload(marker)
    path = tmp_path / "loss_history.npy"
    np.save(path, obj, allow_pickle=True)
    np.load(path, allow_pickle=True)  # the payload is live: numpy's pickle.load runs it
    assert marker.exists()
    marker.unlink()
    with pytest.raises(UnreadableFile) as err:
        read_history(path)
    message = str(err.value)
    assert message.startswith(f"{path}: not a loss history") and "posix.system" in message and "\n" not in message
    assert not marker.exists(), "the history's pickle must not run"
