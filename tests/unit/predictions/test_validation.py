"""trustcal.predictions.validation: labels, probabilities or logits, the checks and warnings, one file and a series."""

import math
from pathlib import Path

import numpy as np
import pytest

from trustcal.predictions import validation
from trustcal.predictions.errors import CellError, LabelError, LengthMismatch, ProbabilityError
from trustcal.predictions.options import ReadOptions
from trustcal.predictions.series import PredictionFile
from trustcal.predictions.table import Table

PATH = Path("p.csv")
EPS = np.finfo(np.float64).eps


def where(r, c=None):
    return f"line {r + 2}" + ("" if c is None else f", column {c}")


def test_labels_become_integers_or_errors_name_the_row():
    np.testing.assert_array_equal(validation.check_labels(np.array([0.0, 2.0, 1.0]), 3, PATH, where), [0, 2, 1])
    assert validation.check_labels(np.array([1.0]), 2, PATH, where).dtype == np.int64
    with pytest.raises(LabelError, match=r"p.csv: line 3: label 0.5 is not an integer; expected class indices 0 … 2"):
        validation.check_labels(np.array([1.0, 0.5]), 3, PATH, where)
    with pytest.raises(
        LabelError, match=r"label 3 is out of range for 3 classes;.* look 1-based \(1 … K\): subtract 1"
    ):
        validation.check_labels(np.array([1.0, 3.0, 2.0]), 3, PATH, where)
    with pytest.raises(CellError, match="line 2"):
        validation.check_labels(np.array([np.nan, 1.0]), 3, PATH, where)


def test_kind_from_the_share_of_rows_that_read_as_probabilities():
    warnings = []
    probs = np.full((200, 2), 0.5)
    assert validation.detect_kind(probs, ReadOptions(), PATH, where, warnings.append) == "probs"
    probs[0] = [7.0, -3.0]  # one extreme row of 200: still probabilities (the row is then an error of its own)
    assert validation.detect_kind(probs, ReadOptions(), PATH, where, warnings.append) == "probs"
    assert warnings == []
    logits = np.tile([[3.0, -1.0]], (10, 1))
    assert validation.detect_kind(logits, ReadOptions(), PATH, where, warnings.append) == "logits"
    assert [w.code for w in warnings] == ["logits_as_probabilities"] and warnings[0].options == ("kind",)
    half = np.vstack([np.full((5, 2), 0.5), np.tile([[3.0, -1.0]], (4, 1))])  # 5 of 9 rows: ambiguous
    with pytest.raises(ProbabilityError, match="cannot tell probabilities from logits: 5 of 9 rows"):
        validation.detect_kind(half, ReadOptions(), PATH, where, warnings.append)


def table(values, kind="auto", labels=None):
    values = np.asarray(values, float)
    return Table(PATH, values, kind, None if labels is None else np.asarray(labels, float), where, lambda r: where(r))


def test_logits_become_a_softmax_and_probabilities_are_checked():
    z = np.array([[0.0, math.log(3.0)]])  # softmax: [1/4, 3/4]
    probs, logits = validation.to_probabilities(table(z, "logits"), ReadOptions(), [].append)
    np.testing.assert_allclose(probs, [[0.25, 0.75]], rtol=4 * EPS)
    np.testing.assert_array_equal(logits, z)
    with pytest.raises(ProbabilityError, match=r"line 2: the probabilities sum to 0.9; expected 1 within ±0.001"):
        validation.to_probabilities(table([[0.4, 0.5]], "probs"), ReadOptions(), [].append)
    with pytest.raises(ProbabilityError, match="probability -0.1 is negative"):
        validation.to_probabilities(table([[-0.1, 1.1]], "probs"), ReadOptions(), [].append)


def test_renormalize_divides_by_the_row_sum_and_says_so():
    warnings = []
    probs, _ = validation.to_probabilities(
        table([[0.4, 0.4], [0.5, 0.5]], "probs"), ReadOptions(renormalize=True), warnings.append
    )
    np.testing.assert_array_equal(probs, [[0.5, 0.5], [0.5, 0.5]])
    assert [w.code for w in warnings] == ["renormalized"] and "1 of 2 rows" in warnings[0].message


def test_double_softmax_threshold_is_the_largest_softmax_of_values_in_0_1():
    k = 10
    threshold = validation.double_softmax_threshold(k)
    assert threshold == pytest.approx(math.e / (math.e + 9), rel=4 * EPS)
    one_hot = np.eye(k)[:1]  # the flattest a softmax of a probability row gets: e/(e + K − 1)
    again = np.exp(one_hot) / np.exp(one_hot).sum()
    assert again.max() == pytest.approx(threshold, rel=8 * EPS)
    assert validation.flat_rows(np.vstack([again, np.eye(k)[:1]])) == 1


def test_load_a_csv_with_named_columns_and_string_labels(tmp_path):
    path = tmp_path / "aft_3.csv"
    path.write_text("dog,cat,label\n0.9,0.1,dog\n0.2,0.8,cat\n0.6,0.4,cat\n")
    warnings = []
    loaded = validation.load(PredictionFile(path, 3, True), ReadOptions(), warnings.append)
    assert loaded.names == ("dog", "cat") and loaded.classes == 2 and loaded.logits is None
    np.testing.assert_array_equal(loaded.probs, [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    np.testing.assert_array_equal(loaded.labels, [0, 1, 1])


def test_load_an_npz_of_logits_with_validation_data_in_the_test_class_order(tmp_path):
    z = np.array([[2.0, 0.0], [0.0, 1.0]])
    np.savez(tmp_path / "e.npz", logits=z, labels=[0, 1], val_logits=z, val_labels=[1, 1])
    loaded = validation.load(PredictionFile(tmp_path / "e.npz", 1, None), ReadOptions(), [].append)
    e = np.exp(z)
    np.testing.assert_allclose(loaded.probs, e / e.sum(axis=1, keepdims=True), rtol=8 * EPS)
    np.testing.assert_array_equal(loaded.logits, z)
    np.testing.assert_array_equal(loaded.val_labels, [1, 1])
    np.testing.assert_array_equal(loaded.val_logits, z)


def test_labels_of_another_length_are_a_length_mismatch(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("0.5,0.5,1\n0.2,0.8,0\n")
    with pytest.raises(LengthMismatch, match=r"2 rows of predictions but .*y.npy: 3 labels"):
        np.save(tmp_path / "y.npy", np.array([0, 1, 1]))
        np.save(tmp_path / "p.npy", np.array([[0.5, 0.5], [0.2, 0.8]]))
        validation.load(
            PredictionFile(tmp_path / "p.npy", 1, None), ReadOptions(labels=str(tmp_path / "y.npy")), [].append
        )


def test_a_series_needs_the_same_classes_in_every_file(tmp_path):
    (tmp_path / "bef_1.csv").write_text("p0,p1,label\n0.5,0.5,1\n0.9,0.1,0\n")
    (tmp_path / "bef_2.csv").write_text("p0,p1,p2,label\n0.5,0.25,0.25,1\n0.8,0.1,0.1,0\n")
    files = [PredictionFile(tmp_path / f"bef_{e}.csv", e, False) for e in (1, 2)]
    with pytest.raises(LengthMismatch, match="bef_2.csv: 3 classes but .*bef_1.csv: 2"):
        validation.load_series(files, ReadOptions(), [].append)
    loaded = validation.load_series(files[:1], ReadOptions(), [].append)
    assert [item.file.epoch for item in loaded] == [1]


def test_below_chance_advice_names_the_option_that_flips_a_single_column():
    """Two classes below chance: perhaps a binary classifier's P(y = 0) read as P(y = 1)."""
    warnings = []
    probs = np.array([[0.2, 0.8], [0.9, 0.1], [0.3, 0.7]])
    validation.suspicious(probs, np.array([0, 1, 0]), Path("p.csv"), warnings.append)
    [w] = [w for w in warnings if w.code == "below_chance"]
    assert "positive_class=NAME" in w.message and w.options == ("positive_class",)
    warnings.clear()
    three = np.array([[0.1, 0.1, 0.8], [0.8, 0.1, 0.1], [0.1, 0.8, 0.1]])
    validation.suspicious(three, np.array([0, 1, 2]), Path("p.csv"), warnings.append)
    [w] = [w for w in warnings if w.code == "below_chance"]
    assert "positive_class" not in w.message and w.options == ()  # no single column to flip
