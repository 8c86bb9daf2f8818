"""trustcal.predictions.classes: columns matched to classes by name, string labels, binary one-column inputs."""

from pathlib import Path

import numpy as np
import pytest

from trustcal.predictions import classes
from trustcal.predictions.errors import LabelError

PATH, LABELS = Path("preds.csv"), Path("labels.csv")


def where(r):
    return f"line {r + 2}"


def cmap(values, labels, columns, positive_class=None, chosen=False):
    return classes.class_map(
        np.asarray(values, float), np.asarray(labels), columns, PATH, LABELS, where, positive_class, chosen
    )


@pytest.mark.parametrize(
    "columns,expected",
    [
        (["p_2", "p_0", "p_1"], [2, 0, 1]),
        (["Class_0_Probability", "Class_1_Probability"], [0, 1]),
        ([" 1", "0 "], [1, 0]),
        (["p_0", "q_1"], None),  # different prefixes
        (["p_0", "p_0"], None),  # the same index twice
        (["cat", "dog"], None),
    ],
)
def test_index_names(columns, expected):
    assert classes.index_names(columns) == expected


def test_columns_named_by_index_are_put_in_class_order():
    values = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])  # columns p_2, p_0, p_1
    m = cmap(values, [2.0, 1.0], ["p_2", "p_0", "p_1"])
    assert m.names is None and m.positive is None
    np.testing.assert_array_equal(m.apply(values, "probs"), [[0.2, 0.1, 0.7], [0.3, 0.6, 0.1]])
    np.testing.assert_array_equal(m.labels, [2.0, 1.0])


def test_columns_named_by_indices_that_are_not_0_to_k_minus_1_renumber_the_labels():
    m = cmap(np.eye(2), [5.0, 3.0], ["p_5", "p_3"])
    assert m.names == ("3", "5")
    np.testing.assert_array_equal(m.labels, [1.0, 0.0])
    np.testing.assert_array_equal(m.apply(np.array([[0.9, 0.1]]), "probs"), [[0.1, 0.9]])
    with pytest.raises(LabelError, match=r"labels.csv: line 3: label 4 is none of the classes"):
        cmap(np.eye(2), [5.0, 4.0], ["p_5", "p_3"])


def test_unnamed_columns_keep_their_order():
    m = cmap(np.eye(3), [0.0, 2.0, 1.0], None)
    assert m.order is None and m.names is None
    np.testing.assert_array_equal(m.apply(np.eye(3), "probs"), np.eye(3))


def test_string_labels_are_matched_to_the_header_names():
    values = np.array([[0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])
    m = cmap(values, np.array(["emu", "dog"], dtype=object), ["dog", "cat", "emu"])
    assert m.names == ("dog", "cat", "emu")  # class k is column k
    np.testing.assert_array_equal(m.labels, [2.0, 0.0])


def test_string_labels_without_a_header_are_the_sorted_names():
    m = cmap(np.eye(3), np.array(["b", "c", "a"], dtype=object), None)
    assert m.names == ("a", "b", "c")
    np.testing.assert_array_equal(m.labels, [1.0, 2.0, 0.0])
    with pytest.raises(LabelError, match="the labels name 2 classes .* but preds.csv has 3 columns without names"):
        cmap(np.eye(3), np.array(["a", "b", "a"], dtype=object), None)


def test_a_label_no_column_is_named_after_is_an_error_naming_both():
    labels = np.array(["cat", "yak"], dtype=object)
    with pytest.raises(LabelError, match=r"labels.csv: line 3: label 'yak' names none of the probability columns"):
        cmap(np.eye(2), labels, ["cat", "dog"])
    with pytest.raises(LabelError, match="or choose them with prob_columns=REGEX") as info:
        cmap(np.eye(2), labels, ["cat", "dog"], chosen=True)
    assert info.value.options == ("prob_columns",)


def test_binary_column_of_0_1_labels_is_p_of_class_1():
    p = np.array([0.75, 0.25])  # 1 − p exact in binary floating point
    m = cmap(p, [1.0, 0.0], ["p"])
    assert m.positive == 1 and m.names is None
    np.testing.assert_array_equal(m.apply(p, "probs"), [[0.25, 0.75], [0.75, 0.25]])
    np.testing.assert_array_equal(m.apply(np.array([1.5, -2.0]), "logits"), [[0.0, 1.5], [0.0, -2.0]])


def test_binary_column_named_after_a_class_is_that_class():
    m = cmap(np.array([0.75, 0.5]), [1.0, 0.0], ["0"])
    assert m.positive == 0
    np.testing.assert_array_equal(m.apply(np.array([0.75]), "probs"), [[0.75, 0.25]])


@pytest.mark.parametrize("name", ["p0", "prob_class_0", "Class_0_Probability", "score_0"])
def test_binary_column_whose_name_holds_a_class_index_is_that_class(name):
    m = cmap(np.array([0.75, 0.5]), [1.0, 0.0], [name])
    assert m.positive == 0  # it was 1: P(y = 0) read as P(y = 1)
    assert cmap(np.array([0.75, 0.5]), [1.0, 0.0], [name.replace("0", "1")]).positive == 1


def test_binary_column_named_by_a_number_that_is_no_class_keeps_the_default():
    assert cmap(np.array([0.75, 0.5]), [1.0, 0.0], ["model_v2"]).positive == 1
    assert cmap(np.array([0.75, 0.5]), [1.0, 0.0], ["p10"]).positive == 1  # 10, not 1 or 0


def test_binary_column_named_after_a_class_name_within_its_name():
    labels = np.array(["spam", "ham", "spam"], dtype=object)
    assert cmap(np.array([0.9, 0.2, 0.6]), labels, ["p_ham"]).positive == 0  # ham sorts first
    assert cmap(np.array([0.9, 0.2, 0.6]), labels, ["prob_spam"]).positive == 1
    assert cmap(np.array([0.9, 0.2, 0.6]), labels, ["hamster"]).positive == 1  # not the word ham: the default


def test_binary_column_named_after_both_classes_is_ambiguous_and_names_the_option():
    with pytest.raises(LabelError, match="'p_0_vs_1', names both classes") as info:
        cmap(np.array([0.75, 0.5]), [1.0, 0.0], ["p_0_vs_1"])
    assert info.value.options == ("positive_class",) and "positive_class=NAME" in str(info.value)
    assert cmap(np.array([0.75, 0.5]), [1.0, 0.0], ["p_0_vs_1"], positive_class="0").positive == 0
    with pytest.raises(LabelError, match="names both classes"):
        cmap(np.array([0.9, 0.2]), np.array(["spam", "ham"], dtype=object), ["spam_or_ham"])


def test_binary_string_labels_with_the_positive_class():
    labels = np.array(["spam", "ham", "spam"], dtype=object)
    m = cmap(np.array([0.9, 0.2, 0.6]), labels, ["score"], positive_class="spam")
    assert m.names == ("ham", "spam") and m.positive == 1
    np.testing.assert_array_equal(m.labels, [1.0, 0.0, 1.0])
    m = cmap(np.array([0.9, 0.2, 0.6]), labels, ["score"], positive_class="ham")
    assert m.positive == 0
    with pytest.raises(LabelError, match="the positive class 'eggs' is not among the labels' classes"):
        cmap(np.array([0.9, 0.2, 0.6]), labels, ["score"], positive_class="eggs")


def test_binary_column_errors():
    with pytest.raises(LabelError, match="one column of predictions .* hold 3 classes"):
        cmap(np.array([0.1, 0.2, 0.3]), [0.0, 1.0, 2.0], ["p"])
    with pytest.raises(LabelError, match="the labels name only") as info:
        cmap(np.array([0.1, 0.2]), np.array(["a", "a"], dtype=object), ["p"])
    assert info.value.options == ("positive_class",)
    with pytest.raises(LabelError, match="the labels are numbers .* but the positive class is 'yes'"):
        cmap(np.array([0.1, 0.2]), [0.0, 1.0], ["p"], positive_class="yes")


def test_transposed_hint_only_when_the_shape_is_the_transpose():
    assert "transposed" in classes.transposed_hint((3, 100), 100)
    assert classes.transposed_hint((100, 3), 99) == ""
