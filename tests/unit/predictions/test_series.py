"""trustcal.predictions.series: epoch and state from file names, and the series a directory or glob names."""

import numpy as np
import pytest

from trustcal.predictions import series
from trustcal.predictions.errors import SeriesError, UnreadableFile
from trustcal.predictions.options import ReadOptions


@pytest.mark.parametrize(
    "name,expected",
    [
        ("bef_10.csv.gz", (10, False)),
        ("aft_100.csv", (100, True)),
        ("epoch010.npz", (10, None)),
        ("model_after_7.parquet", (7, True)),
        ("Before-3.npy", (3, False)),
        ("uncalibrated_5.csv", (5, False)),
        ("calibrated_5.csv", (5, True)),
        ("predictions.csv", (None, None)),
        ("resnet18_e2.csv", (2, None)),  # the last number is the epoch
    ],
)
def test_epoch_and_state_from_the_name(name, expected):
    assert series.parse_name(name) == expected


def test_stem_drops_gz_and_the_prediction_suffix_only():
    assert series.stem("a/bef_1.csv.gz") == "bef_1"
    assert series.stem("run.v2.feather") == "run.v2"
    assert series.stem("notes.md") == "notes.md"


def test_a_name_pattern_of_ones_own():
    pattern = r"run(?P<epoch>\d+)_(?P<state>raw|after)"
    assert series.parse_name("run12_after.csv", pattern) == (12, True)
    assert series.parse_name("run12_raw.csv", pattern) == (12, False)
    assert series.parse_name("other.csv", pattern) == (None, None)


def touch(folder, *names):
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text("p0,p1,label\n0.5,0.5,1\n")
    return folder


def test_a_directory_is_sorted_by_epoch_then_state_and_files_without_epoch_are_skipped(tmp_path):
    d = touch(tmp_path / "run", "aft_10.csv", "bef_2.csv.gz", "bef_10.csv", "aft_2.csv", "summary.csv")
    np.save(d / "loss_history.npy", np.zeros(2))  # .npy: a prediction name, but no epoch in it
    (d / "README.txt").write_text("x")
    files, skipped = series.discover(d)
    assert [(f.path.name, f.epoch, f.calibrated) for f in files] == [
        ("bef_2.csv.gz", 2, False),
        ("aft_2.csv", 2, True),
        ("bef_10.csv", 10, False),
        ("aft_10.csv", 10, True),
    ]
    assert sorted(p.name for p in skipped) == ["README.txt", "loss_history.npy", "summary.csv"]
    assert series.history_beside(skipped) == d / "loss_history.npy"


def test_history_beside_needs_exactly_one(tmp_path):
    assert series.history_beside([tmp_path / "loss_history.npy", tmp_path / "history.csv"]) is None
    assert series.history_beside([tmp_path / "notes.txt"]) is None


def test_a_lone_file_without_an_epoch_is_epoch_0(tmp_path):
    touch(tmp_path, "predictions.csv")
    files, skipped = series.discover(tmp_path / "predictions.csv")
    assert [(f.epoch, f.calibrated) for f in files] == [(0, None)] and skipped == []


def test_globs_and_the_labels_file_left_out(tmp_path):
    d = touch(tmp_path / "run", "epoch1.csv", "epoch2.csv", "labels3.csv")
    files, _ = series.discover(str(d / "epoch*.csv"))
    assert [f.epoch for f in files] == [1, 2]
    files, _ = series.discover(d, ReadOptions(labels=str(d / "labels3.csv")))
    assert [f.epoch for f in files] == [1, 2]


def test_series_errors_name_the_files_and_the_fix(tmp_path):
    touch(tmp_path / "a", "bef_1.csv", "before_1.csv")
    with pytest.raises(SeriesError, match="both are epoch 1, before calibration") as info:
        series.discover(tmp_path / "a")
    assert info.value.options == ("name_pattern",)
    touch(tmp_path / "b", "x.csv", "y.csv")
    with pytest.raises(SeriesError, match="cannot read the epoch from the file name"):
        series.discover([tmp_path / "b" / "x.csv", tmp_path / "b" / "y.csv"])
    with pytest.raises(SeriesError, match=r"none of the files has an epoch number in its name \(x.csv, y.csv\)"):
        series.discover(tmp_path / "b")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SeriesError, match="no prediction files in this directory"):
        series.discover(tmp_path / "empty")
    with pytest.raises(SeriesError, match="no file matches this pattern"):
        series.discover(str(tmp_path / "nothing*.csv"))
    with pytest.raises(UnreadableFile, match="file or directory not found"):
        series.discover(tmp_path / "absent.csv")
