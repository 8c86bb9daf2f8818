"""The inputs users have (issue 19): real scikit-learn predictions written as users write them.

Named and reordered columns, probabilities with one bad cell, binary classifiers (one column
P(y = 1) or a decision_function score), string class names, Parquet and Feather, decimal
commas and transposed arrays, read-only outputs and API arguments of the wrong type. Every
number is checked against scikit-learn's own metrics on the same predictions, or against the
same predictions written in the plain N×K form that was already read correctly.
"""

import io
import re
import stat
import sys
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

import trustcal
from trustcal import cli
from trustcal.api import AssessmentWarning
from trustcal.assessment import assess_files
from trustcal.measures.metrics import ece
from trustcal.predictions import LabelError, PredictionError, ProbabilityError, ReadOptions, UnreadableFile
from trustcal.settings import Settings

FAST = dict(sweep=None, bootstrap=None)  # trustcal.assess's arguments …
FAST_SETTINGS = Settings(**FAST)  # … and the same for assess_files
# Reading and mapping move numbers without arithmetic, except 1 − p for a binary column and the
# softmax of [0, s]: a few float64 roundings per value, far below this.
TOL = 1e-12


def run(*args):
    """cli.main in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def scores(sources, **read) -> pd.Series:
    a = assess_files(sources, ReadOptions(**read), FAST_SETTINGS)
    return a.tables["scores"].iloc[0]


@pytest.fixture(scope="module")
def digits():
    """Gaussian naive Bayes on digits (10 classes): test probabilities and labels."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, random_state=0)
    probs = GaussianNB().fit(X_train, y_train).predict_proba(X_test)
    return probs, y_test


@pytest.fixture(scope="module")
def iris():
    """Logistic regression on iris fitted on class names: (probs in classes_ order, classes_, names of y_test)."""
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    X_train, X_test, y_train, y_test = train_test_split(X, names, test_size=0.5, random_state=1)
    clf = LogisticRegression(max_iter=2000).fit(X_train, y_train)
    return clf.predict_proba(X_test), clf.classes_, y_test


@pytest.fixture(scope="module")
def cancer():
    """Logistic regression on breast cancer (binary): P(y = 1), the decision function, labels, full matrix."""
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    clf = LogisticRegression(max_iter=5000).fit(X_train / X.std(0), y_train)
    return clf.predict_proba(X_test / X.std(0)), clf.decision_function(X_test / X.std(0)), y_test


# --------------------------------------------------------------------------- B1: columns by name


def test_columns_named_by_class_are_read_by_name_whatever_their_order(tmp_path, digits):
    probs, y = digits
    order = [3, 1, 2, 0, 9, 5, 6, 7, 8, 4]
    df = pd.DataFrame(probs, columns=[str(c) for c in range(10)])[[str(c) for c in order]]
    df["label"] = y
    df.to_csv(tmp_path / "reordered.csv", index=False)
    got = scores([tmp_path / "reordered.csv"])
    assert got["accuracy"] == pytest.approx(accuracy_score(y, probs.argmax(1)), abs=0)
    assert got["nll"] == pytest.approx(log_loss(y, probs, labels=range(10)), abs=TOL)
    # the same with the usual Class_k_Probability names, reordered
    df.columns = [f"Class_{c}_Probability" for c in order] + ["True Label"]
    df.to_csv(tmp_path / "reordered_named.csv", index=False)
    assert scores([tmp_path / "reordered_named.csv"])["ece"] == pytest.approx(ece(probs, y), abs=TOL)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(2, 6), seed=st.integers(0, 2**16), named=st.sampled_from(["index", "name", "prefixed"]))
def test_any_order_of_named_columns_gives_the_same_numbers(k, seed, named):
    """Invariant: shuffling named columns (and naming the labels) changes no number."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.5), size=80)
    y = rng.integers(0, k, 80)
    names = {"index": [str(c) for c in range(k)], "name": [f"c{chr(97 + c)}" for c in range(k)]}
    names["prefixed"] = [f"p_{n}_prob" for n in names["name"]]
    columns = names[named]
    shuffled = pd.DataFrame(probs, columns=columns)[[columns[c] for c in rng.permutation(k)]]
    labels = y if named == "index" else np.array(names["name"])[y]
    got = trustcal.assess(shuffled, labels, **FAST).scores.iloc[0]
    want = trustcal.assess(probs, y, **FAST).scores.iloc[0]
    assert got["accuracy"] == want["accuracy"]
    # the same values, summed in another memory order: at most N·K roundings of terms ≤ 1 apart
    for metric in ("nll", "ece", "brier", "classwise_ece"):
        assert got[metric] == pytest.approx(want[metric], rel=0, abs=80 * k * np.finfo(float).eps), metric


def test_column_names_that_disagree_with_the_labels_are_an_error(tmp_path, digits):
    probs, y = digits  # labels 0 … 9, columns named 1 … 10
    df = pd.DataFrame(probs, columns=[f"p{c + 1}" for c in range(10)]).assign(label=y)
    path = tmp_path / "shifted.csv"
    df.to_csv(path, index=False)
    code, stdout, stderr = run("assess", path, "--out", tmp_path / "out")
    assert code == 2 and stdout == ""
    for part in ("shifted.csv", "label 0 is none of the classes", "p1, p2", "Fix:"):
        assert part in stderr, stderr
    # labels 1 … 10 with columns p1 … p10 agree by name: class k is the k-th smallest
    df.assign(label=y + 1).to_csv(path, index=False)
    assert scores([path])["accuracy"] == pytest.approx(accuracy_score(y, probs.argmax(1)), abs=0)


# --------------------------------------------------------------------------- B2: kind detection


def test_one_extreme_cell_does_not_turn_probabilities_into_logits(tmp_path, digits):
    probs, y = digits
    df = pd.DataFrame(probs, columns=[f"p{c}" for c in range(10)]).assign(label=y)
    df.iloc[17, 4] = 1e308
    path = tmp_path / "one_bad_cell.csv"
    df.to_csv(path, index=False)
    code, stdout, stderr = run("assess", path, "--out", tmp_path / "out")
    assert code == 2, (stdout, stderr)
    assert "line 19, column 'p4': probability 1e+308 is greater than 1" in stderr, stderr
    assert not (tmp_path / "out").exists()


def test_a_file_neither_probabilities_nor_logits_asks_for_the_kind(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=200)
    probs[:40] = rng.normal(size=(40, 3)) * 3  # 20 % of the rows are not probability vectors
    with pytest.raises(ProbabilityError, match=r"cannot tell probabilities from logits: 160 of 200 rows") as info:
        trustcal.assess(probs, rng.integers(0, 3, 200), **FAST)
    assert 'kind="probs"' in str(info.value) and 'kind="logits"' in str(info.value)


def test_logits_are_still_detected(digits):
    probs, y = digits
    logits = np.log(np.maximum(probs, 1e-300)) + 3.0  # shifted log-probabilities: same softmax
    with pytest.warns(AssessmentWarning, match="logits_as_probabilities"):
        result = trustcal.assess(logits, y, **FAST)
    assert result.scores.loc[0, "accuracy"] == accuracy_score(y, probs.argmax(1))


# --------------------------------------------------------------------------- B3: binary classifiers


def _binary_reference(p1, y):
    return dict(
        accuracy=accuracy_score(y, p1 > 0.5),
        nll=log_loss(y, p1),
        brier=2 * brier_score_loss(y, p1),  # the K = 2 Brier sums over both classes
        ece=ece(np.column_stack([1 - p1, p1]), y),
    )


def test_binary_probability_column_csv_npy_and_api_agree_with_sklearn(tmp_path, cancer):
    full, _, y = cancer
    p1 = full[:, 1]
    pd.DataFrame({"p": p1, "y": y}).to_csv(tmp_path / "binary.csv", index=False)
    np.save(tmp_path / "binary.npy", p1)
    np.save(tmp_path / "labels.npy", y)
    runs = {
        "csv": scores([tmp_path / "binary.csv"]),
        "npy": scores([tmp_path / "binary.npy"], labels=str(tmp_path / "labels.npy")),
        "api": trustcal.assess(p1, y, **FAST).scores.iloc[0],
        "matrix": trustcal.assess(full, y, **FAST).scores.iloc[0],
    }
    for name, got in runs.items():
        for metric, want in _binary_reference(p1, y).items():
            assert got[metric] == pytest.approx(want, rel=1e-12, abs=TOL), (name, metric)


def test_binary_decision_function_is_the_logit_of_the_positive_class(cancer):
    full, score, y = cancer
    with pytest.warns(AssessmentWarning, match="decision_function"):
        result = trustcal.assess(score, y, **FAST)
    got = result.scores.iloc[0]
    p1 = 1 / (1 + np.exp(-score))  # scikit-learn's predict_proba of a logistic regression
    assert np.allclose(p1, full[:, 1], rtol=0, atol=1e-12)
    for metric, want in _binary_reference(p1, y).items():
        assert got[metric] == pytest.approx(want, rel=1e-9), metric
    assert trustcal.assess(score, y, kind="logits", **FAST).warnings == []


def test_binary_positive_class_by_flag_or_column_name(tmp_path, cancer):
    full, _, y = cancer
    names = np.array(["malignant", "benign"])[y]  # y = 1 is benign: 'benign' sorts first
    p_benign = full[:, 1]
    df = pd.DataFrame({"p": p_benign, "diagnosis": names})
    df.to_csv(tmp_path / "flag.csv", index=False)
    want = _binary_reference(p_benign, y)
    got = scores([tmp_path / "flag.csv"], label_column="diagnosis", positive_class="benign")
    assert got["nll"] == pytest.approx(want["nll"], rel=1e-12)
    # auto: the larger name ('malignant') would be positive; a column named 'benign' says otherwise
    auto = scores([tmp_path / "flag.csv"], label_column="diagnosis")
    assert auto["accuracy"] == accuracy_score(y == 0, p_benign > 0.5)  # read as P(malignant)
    df.rename(columns={"p": "benign"}).to_csv(tmp_path / "named.csv", index=False)
    assert scores([tmp_path / "named.csv"], label_column="diagnosis")["nll"] == pytest.approx(want["nll"], rel=1e-12)
    out = tmp_path / "out"
    code, _, stderr = run(
        "assess", tmp_path / "flag.csv", "--label-column", "diagnosis", "--positive-class", "x", "--out", out
    )
    assert code == 2 and "the positive class 'x' is not among the labels' classes (benign, malignant)" in stderr


def test_binary_column_with_more_than_two_classes_is_an_error(tmp_path):
    pd.DataFrame({"p": [0.2, 0.7, 0.9], "label": [0, 1, 2]}).to_csv(tmp_path / "b.csv", index=False)
    code, _, stderr = run("assess", tmp_path / "b.csv", "--out", tmp_path / "out")
    assert code == 2 and "one column of predictions" in stderr and "3 classes" in stderr and "Fix:" in stderr


@pytest.mark.parametrize("name", ["p0", "prob_class_0", "Class_0_Probability"])
def test_a_single_column_named_for_class_0_is_the_probability_of_class_0(tmp_path, cancer, name):
    """It was read as P(y = 1): accuracy 0.000 on a good model, and exit 0."""
    full, _, y = cancer
    pd.DataFrame({name: full[:, 0], "label": y}).to_csv(tmp_path / "p0.csv", index=False)
    want = _binary_reference(full[:, 1], y)
    got = scores([tmp_path / "p0.csv"])
    assert got["accuracy"] == want["accuracy"] > 0.9
    assert got["nll"] == pytest.approx(want["nll"], rel=1e-12)
    code, _, stderr = run("assess", tmp_path / "p0.csv", "--out", tmp_path / "out", "--no-figures")
    assert code == 0 and "below_chance" not in stderr, stderr


def test_a_single_column_named_for_both_classes_is_refused_naming_the_option(tmp_path, cancer):
    full, _, y = cancer
    pd.DataFrame({"p_0_vs_1": full[:, 1], "label": y}).to_csv(tmp_path / "both.csv", index=False)
    code, _, stderr = run("assess", tmp_path / "both.csv", "--out", tmp_path / "out")
    assert code == 2 and "names both classes (0, 1)" in stderr and "--positive-class NAME" in stderr, stderr
    got = scores([tmp_path / "both.csv"], positive_class="1")
    assert got["nll"] == pytest.approx(_binary_reference(full[:, 1], y)["nll"], rel=1e-12)


def test_a_single_column_read_as_the_wrong_class_is_below_chance_and_the_advice_names_the_option(tmp_path, cancer):
    full, _, y = cancer
    pd.DataFrame({"p": full[:, 0], "label": y}).to_csv(tmp_path / "p.csv", index=False)  # P(y = 0), unnamed
    code, _, stderr = run("assess", tmp_path / "p.csv", "--out", tmp_path / "out", "--no-figures")
    text = " ".join(stderr.split())  # the warning is wrapped to the terminal's width
    assert code == 0 and "[below_chance]" in text and "--positive-class NAME" in text, stderr


# --------------------------------------------------------------------------- B4: class names


def test_string_class_names_in_labels_and_header(tmp_path, iris):
    probs, classes, y = iris
    index = {c: i for i, c in enumerate(classes)}
    y_index = np.array([index[v] for v in y])
    df = pd.DataFrame(probs, columns=classes)[["virginica", "setosa", "versicolor"]].assign(species=y)
    df.to_csv(tmp_path / "iris.csv", index=False)
    out = tmp_path / "out"
    code, stdout, stderr = run(
        "assess", tmp_path / "iris.csv", "--label-column", "species", "--out", out, "--no-figures", "--bootstrap", "0"
    )
    assert code == 0, stderr
    assert "classes: 0 virginica, 1 setosa, 2 versicolor" in stdout  # the header's order
    trust = pd.read_csv(out / "trust.csv")
    assert trust["class_name"].tolist()[:4] == ["virginica", "setosa", "versicolor", "network"]
    got = pd.read_csv(out / "scores.csv").iloc[0]
    assert got["accuracy"] == accuracy_score(y_index, probs.argmax(1))
    assert got["nll"] == pytest.approx(log_loss(y, probs, labels=classes), rel=1e-12)


def test_string_labels_without_a_header_are_the_sorted_names(tmp_path, iris):
    probs, classes, y = iris  # predict_proba's columns are classes_, the sorted names
    result = trustcal.assess(probs, y, **FAST)
    assert result.assessment.class_names == tuple(classes)
    assert result.scores.loc[0, "nll"] == pytest.approx(log_loss(y, probs, labels=classes), rel=1e-12)
    np.save(tmp_path / "p.npy", probs)
    pd.Series(y, name="label").to_csv(tmp_path / "y.csv", index=False)
    assert scores([tmp_path / "p.npy"], labels=str(tmp_path / "y.csv"))["nll"] == pytest.approx(
        result.scores.loc[0, "nll"], abs=0
    )


def test_labels_naming_classes_no_column_has_are_an_error(tmp_path, iris):
    probs, classes, y = iris
    df = pd.DataFrame(probs, columns=["a", "b", "c"]).assign(label=y)
    df.to_csv(tmp_path / "x.csv", index=False)
    with pytest.raises(
        LabelError, match=r"label '\w+' names none of the probability columns of x.csv \(a, b, c\)"
    ) as info:
        assess_files([tmp_path / "x.csv"], settings=FAST_SETTINGS)
    # the file's columns were chosen among its columns: the fix names the setting, the command line its flag
    assert info.value.options == ("prob_columns",) and "or choose them with prob_columns=REGEX." in str(info.value)
    code, _, stderr = run("assess", tmp_path / "x.csv", "--out", tmp_path / "out")
    assert code == 2 and "or choose them with --prob-columns REGEX." in stderr and "prob_columns" not in stderr
    # arrays have no columns to choose: trustcal.assess names no such setting
    with pytest.raises(LabelError, match="names none of the probability columns") as info:
        trustcal.assess(pd.DataFrame(probs, columns=["a", "b", "c"]), y, **FAST)
    assert info.value.options == () and str(info.value).endswith(").")  # "… by class (e.g. …)." and no more
    assert "prob_columns" not in str(info.value) and "--" not in str(info.value)


# --------------------------------------------------------------------------- B5: Parquet and Feather


@pytest.mark.parametrize("fmt", ["parquet", "feather"])
def test_parquet_and_feather_read_like_the_csv(tmp_path, iris, fmt):
    pytest.importorskip("pyarrow")
    probs, classes, y = iris
    df = pd.DataFrame(probs, columns=classes).assign(label=y)
    df.to_csv(tmp_path / "p.csv", index=False)
    getattr(df, f"to_{fmt}")(tmp_path / f"p.{fmt}")
    got, want = scores([tmp_path / f"p.{fmt}"]), scores([tmp_path / "p.csv"])
    assert got[["accuracy", "nll", "ece", "brier"]].tolist() == pytest.approx(
        want[["accuracy", "nll", "ece", "brier"]].tolist(), abs=1e-15
    )
    df.iloc[3, 1] = np.nan
    getattr(df, f"to_{fmt}")(tmp_path / f"bad.{fmt}")
    with pytest.raises(PredictionError, match=rf"bad.{fmt}: row 3, column 'versicolor': empty or NaN"):
        assess_files([tmp_path / f"bad.{fmt}"], settings=FAST_SETTINGS)


def test_parquet_without_pyarrow_names_the_extra(tmp_path, iris, monkeypatch):
    pytest.importorskip("pyarrow")
    probs, classes, y = iris
    pd.DataFrame(probs, columns=classes).assign(label=y).to_parquet(tmp_path / "p.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    with pytest.raises(UnreadableFile, match=r"p.parquet: a Parquet file; .*pip install 'trustcal\[parquet\]'"):
        assess_files([tmp_path / "p.parquet"], settings=FAST_SETTINGS)


# --------------------------------------------------------------------------- B6: hints


@pytest.mark.parametrize(
    "text", ["p0;p1;label\n0,25;0,75;1\n0,5;0,5;0\n", 'p0,p1,label\n"0,25","0,75",1\n"0,5","0,5",0\n']
)
def test_decimal_commas_get_a_hint(tmp_path, text):
    path = tmp_path / "comma.csv"
    path.write_text(text)
    code, _, stderr = run("assess", path, "--out", tmp_path / "out")
    assert code == 2 and "comma.csv: line 2: '0,25' looks like a number with a decimal comma" in stderr, stderr
    assert "decimal='.'" in stderr


def test_transposed_array_gets_a_hint(tmp_path, digits):
    probs, y = digits
    np.save(tmp_path / "p.npy", probs.T)
    np.save(tmp_path / "y.npy", y)
    code, _, stderr = run("assess", tmp_path / "p.npy", "--labels", tmp_path / "y.npy", "--out", tmp_path / "out")
    assert code == 2 and f"look transposed: 10×{len(y)}" in stderr, stderr
    with pytest.raises(PredictionError, match="look transposed"):
        trustcal.assess(probs.T, y, **FAST)


# --------------------------------------------------------------------------- B7: read-only results


@pytest.mark.parametrize("protect", ["folder", "file"])
def test_a_read_only_result_is_never_replaced(tmp_path, digits, protect):
    probs, y = digits
    np.savez(tmp_path / "p.npz", probs=probs, labels=y)
    out = tmp_path / "out"
    assert run("assess", tmp_path / "p.npz", "--out", out, "--no-figures", "--bootstrap", "0")[0] == 0
    target = out if protect == "folder" else out / "scores.csv"
    target.chmod(0o555 if protect == "folder" else 0o444)
    before = {p.name: (p.stat().st_ino, p.read_bytes()) for p in out.iterdir() if p.is_file()}
    try:
        code, _, stderr = run("assess", tmp_path / "p.npz", "--out", out, "--no-figures", "--bootstrap", "0")
        assert code == 2, stderr
        assert f"error: {out}:" in stderr and "read-only" in stderr and "chmod -R u+w" in stderr, stderr
        assert stat.S_IMODE(target.stat().st_mode) == (0o555 if protect == "folder" else 0o444)
        assert {p.name: (p.stat().st_ino, p.read_bytes()) for p in out.iterdir() if p.is_file()} == before
        with pytest.raises(trustcal.TrustcalError, match="read-only"):
            trustcal.assess(probs, y, **FAST).save(out, figures=False)
    finally:
        target.chmod(0o755 if protect == "folder" else 0o644)


# --------------------------------------------------------------------------- B8: API argument types


def test_bootstrap_as_a_number_of_resamples(digits):
    probs, y = digits
    from trustcal.measures.bootstrap import BootstrapParams

    by_int = trustcal.assess(probs, y, bootstrap=50, sweep=None).scores
    by_params = trustcal.assess(probs, y, bootstrap=BootstrapParams(resamples=50), sweep=None).scores
    pd.testing.assert_frame_equal(by_int, by_params)
    assert "ece_lo" in by_int and "ece_lo" not in trustcal.assess(probs, y, bootstrap=0, sweep=None).scores


# --------------------------------------------------------------------------- B9: the examples of docs/assess.md

ASSESS_PAGE = "docs/assess.md"  # "Assessing your own model's predictions"


def doc_python_blocks(page: str = ASSESS_PAGE) -> list[str]:
    """The ```python blocks of one documentation page, as written."""
    from helpers.workflow import REPO

    return re.findall(r"```python\n(.*?)```", (REPO / page).read_text(), flags=re.S)


def test_assess_page_scikit_learn_examples_run_as_written(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    blocks = doc_python_blocks()
    assert len(blocks) >= 2 and any("decision_function" in b for b in blocks)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, ASSESS_PAGE, "exec"), namespace)  # the page's own code
    assert (tmp_path / "assessed" / "scores.csv").is_file()
    y_test, binary, scores, named = (namespace[k] for k in ("y_test", "binary", "scores", "named"))
    p1 = namespace["clf"].predict_proba(namespace["X_test"])[:, 1]
    for result in (binary, scores, named):
        assert result.scores.loc[0, "accuracy"] == accuracy_score(y_test, p1 > 0.5)
        assert result.scores.loc[0, "nll"] == pytest.approx(log_loss(y_test, p1), rel=1e-9)
