"""trustcal.predictions.formats: each reader on small files with known contents, format detection, options."""

import gzip
from pathlib import Path

import numpy as np
import pytest
from helpers.payload import Payload

from trustcal.predictions import formats
from trustcal.predictions.errors import CellError, ColumnError, PredictionError, UnreadableFile
from trustcal.predictions.options import LABEL_COLUMN_NAMES, ReadOptions


def write(path, text: str):
    path.write_text(text)
    return path


def test_csv_with_a_header_reads_values_labels_and_column_names(tmp_path):
    path = write(tmp_path / "p.csv", "p0,p1,p2,label\n0.2,0.3,0.5,2\n0.6,0.3,0.1,0\n")
    table = formats.read_table(path, ReadOptions())
    np.testing.assert_array_equal(table.values, [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    np.testing.assert_array_equal(table.labels, [2, 0])
    assert table.columns == ["p0", "p1", "p2"] and table.kind == "auto"
    assert table.where(1, 2) == "line 3, column 'p2'"  # the header is line 1
    assert table.label_where(0) == "line 2, column 'label'"


def test_csv_label_column_found_by_name_in_any_position(tmp_path):
    path = write(tmp_path / "p.csv", "Target,b,a\n1,0.9,0.1\n")
    table = formats.read_table(path, ReadOptions())
    np.testing.assert_array_equal(table.values, [[0.9, 0.1]])
    np.testing.assert_array_equal(table.labels, [1])
    assert table.columns == ["b", "a"]


@pytest.mark.parametrize("name", ["True Label", "TRUE_LABEL", "targets", "Y", "y-true", "Class", "Ground Truth"])
def test_every_usual_label_column_name_is_found_and_the_docs_list_them_all(tmp_path, name):
    path = write(tmp_path / "p.csv", f"p0,{name},p1\n0.9,0,0.1\n0.3,1,0.7\n")
    table = formats.read_table(path, ReadOptions())
    np.testing.assert_array_equal(table.labels, [0, 1])
    assert table.columns == ["p0", "p1"]
    docs = (Path(__file__).resolve().parents[3] / "docs" / "assess.md").read_text()
    assert all(f"`{usual}`" in docs for usual in LABEL_COLUMN_NAMES)


def test_a_missing_label_column_names_every_usual_name(tmp_path):
    path = write(tmp_path / "p.csv", "p0,truth\n0.9,0\n")
    with pytest.raises(ColumnError, match="no label column") as err:
        formats.read_table(path, ReadOptions())
    assert all(repr(usual) in str(err.value) for usual in LABEL_COLUMN_NAMES)


def test_prob_columns_choose_the_value_columns(tmp_path):
    path = write(tmp_path / "p.csv", "id,Class_0_Probability,Class_1_Probability,label\n7,0.25,0.75,1\n")
    table = formats.read_table(path, ReadOptions(prob_columns=r"Class_\d+_Probability"))
    np.testing.assert_array_equal(table.values, [[0.25, 0.75]])
    assert table.columns == ["Class_0_Probability", "Class_1_Probability"]
    with pytest.raises(ColumnError, match="no column name matches prob_columns='x'"):
        formats.read_table(path, ReadOptions(prob_columns="x"))


def test_one_column_csv_is_a_binary_column(tmp_path):
    path = write(tmp_path / "p.csv", "p,label\n0.8,1\n0.3,0\n")
    table = formats.read_table(path, ReadOptions())
    assert table.values.shape == (2,)
    np.testing.assert_array_equal(table.values, [0.8, 0.3])


def test_gzip_is_read_through_and_a_corrupt_one_is_named(tmp_path):
    text = "p0,p1,label\n0.5,0.5,1\n"
    path = tmp_path / "bef_1.csv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert formats.read_bytes(path) == text.encode()
    path.write_bytes(gzip.compress(text.encode())[:-8])
    with pytest.raises(UnreadableFile, match="bef_1.csv.gz: the gzip data is truncated or corrupt"):
        formats.read_bytes(path)


def test_missing_and_empty_files_are_named(tmp_path):
    with pytest.raises(UnreadableFile, match="nothing.csv: file not found"):
        formats.read_bytes(tmp_path / "nothing.csv")
    with pytest.raises(UnreadableFile, match="empty.csv: the file is empty"):
        formats.read_bytes(write(tmp_path / "empty.csv", "\n"))


def test_decimal_commas_are_an_error_with_the_hint(tmp_path):
    path = write(tmp_path / "p.csv", "0,25;0,75;1\n")
    with pytest.raises(CellError, match="line 1: '0,25' looks like a number with a decimal comma"):
        formats.read_table(path, ReadOptions())


def test_npz_probs_and_labels(tmp_path):
    p = np.array([[0.1, 0.9], [0.7, 0.3]])
    np.savez(tmp_path / "e.npz", probs=p, labels=np.array([1, 0]))
    table = formats.read_table(tmp_path / "e.npz", ReadOptions())
    np.testing.assert_array_equal(table.values, p)
    np.testing.assert_array_equal(table.labels, [1, 0])
    assert table.kind == "probs" and table.val is None


def test_npz_logits_with_validation_arrays(tmp_path):
    z = np.array([[2.0, -1.0], [0.0, 3.0]])
    np.savez(tmp_path / "e.npz", logits=z, labels=[0, 1], val_logits=z[::-1], val_labels=[1, 0])
    table = formats.read_table(tmp_path / "e.npz", ReadOptions())
    assert table.kind == "logits" and table.val.kind == "logits"
    np.testing.assert_array_equal(table.val.values, z[::-1])
    np.testing.assert_array_equal(table.val.labels, [1, 0])


def test_npz_without_labels_or_with_half_the_validation_says_what_to_add(tmp_path):
    np.savez(tmp_path / "a.npz", probs=np.eye(2))
    with pytest.raises(ColumnError, match="no labels array; expected 'labels'") as info:
        formats.read_table(tmp_path / "a.npz", ReadOptions())
    assert info.value.options == ("labels",)
    np.savez(tmp_path / "b.npz", probs=np.eye(2), labels=[0, 1], val_probs=np.eye(2))
    with pytest.raises(ColumnError, match="'val_probs' without 'val_labels'"):
        formats.read_table(tmp_path / "b.npz", ReadOptions())
    np.savez(tmp_path / "c.npz", scores=np.eye(2))
    with pytest.raises(ColumnError, match=r"no predictions array; expected 'probs' or 'logits'.*\['scores'\]"):
        formats.read_table(tmp_path / "c.npz", ReadOptions())


def test_npy_needs_a_labels_file(tmp_path):
    np.save(tmp_path / "p.npy", np.eye(3))
    with pytest.raises(ColumnError, match="an .npy file holds only the predictions"):
        formats.read_table(tmp_path / "p.npy", ReadOptions())
    np.save(tmp_path / "y.npy", np.array([0, 1, 2]))
    opts = ReadOptions(labels=str(tmp_path / "y.npy"), kind="probs")
    table = formats.read_table(tmp_path / "p.npy", opts)
    np.testing.assert_array_equal(table.values, np.eye(3))
    assert table.labels is None and table.kind == "probs"
    labels, where = formats.read_labels_file(tmp_path / "y.npy", opts)
    np.testing.assert_array_equal(labels, [0, 1, 2])


def test_labels_file_as_text_one_per_line(tmp_path):
    labels, where = formats.read_labels_file(write(tmp_path / "y.txt", "2\n0\n1\n"), ReadOptions())
    np.testing.assert_array_equal(labels, [2, 0, 1])
    with pytest.raises(ColumnError, match="2 columns; expected a single column of labels"):
        formats.read_labels_file(write(tmp_path / "two.txt", "1,2\n3,4\n"), ReadOptions())


@pytest.mark.parametrize(
    "name,data,forced,expected",
    [
        ("p.csv.gz", b"", "auto", "csv"),
        ("p.tsv", b"", "auto", "csv"),
        ("p.pq", b"", "auto", "parquet"),
        ("p.arrow", b"", "auto", "feather"),
        ("p.NPZ", b"", "auto", "npz"),
        ("p", b"PK\x03\x04", "auto", "npz"),
        ("p", b"\x93NUMPY", "auto", "npy"),
        ("p", b"PAR1", "auto", "parquet"),
        ("p", b"ARROW1", "auto", "feather"),
        ("p", b"0.5,0.5", "auto", "csv"),
        ("p.npz", b"", "csv", "csv"),  # a forced format wins over the name
    ],
)
def test_format_from_the_name_then_the_first_bytes(name, data, forced, expected):
    assert formats.detect_format(name, data, forced) == expected


def test_read_options_are_checked_when_made():
    with pytest.raises(PredictionError, match="format='xls' is unknown; expected one of auto, csv"):
        ReadOptions(format="xls")
    with pytest.raises(PredictionError, match="kind='scores' is unknown"):
        ReadOptions(kind="scores")
    with pytest.raises(PredictionError, match="sum_tolerance must be a positive number"):
        ReadOptions(sum_tolerance=0)
    with pytest.raises(PredictionError, match="num_classes must be ≥ 2"):
        ReadOptions(num_classes=1)
    with pytest.raises(PredictionError, match="has no group named 'epoch'") as info:
        ReadOptions(name_pattern=r"run\d+")
    assert info.value.options == ("name_pattern",)
    with pytest.raises(PredictionError, match="prob_columns='\\(' is not a valid regular expression"):
        ReadOptions(prob_columns="(")
    assert ReadOptions(positive_class=1).positive_class == "1"  # a number in config.yaml


@pytest.mark.parametrize("name", ["p.npz", "p.npy", "labels.npy"])
def test_a_numpy_file_holding_a_pickle_payload_is_refused_and_never_run(tmp_path, name):
    """Issue 27: NumPy files are read with allow_pickle=False: an object array (a pickle, here one that
    calls os.system) is refused with the file's name, and nothing in it runs."""
    marker = tmp_path / "ran"
    payload = np.array([Payload(marker)], dtype=object)
    path = tmp_path / name
    if name == "p.npz":
        np.savez(path, probs=payload, labels=np.array([0]))
    else:
        np.save(path, payload, allow_pickle=True)
    loaded = np.load(path, allow_pickle=True)  # the payload is live: unpickled, it runs
    if name == "p.npz":
        loaded["probs"]
    assert marker.exists()
    marker.unlink()
    with pytest.raises(UnreadableFile) as err:
        if name == "labels.npy":
            formats.read_labels_file(path, ReadOptions())
        else:
            formats.read_table(path, ReadOptions(labels=str(tmp_path / "labels.npy")))
    assert str(err.value).startswith(f"{path}: ") and "allow_pickle=False" in str(err.value)
    assert not marker.exists(), "the file's pickle must not run"
