"""The Python API, `trustcal.assess(probs_or_logits, labels)`: the same numbers as `trustcal assess` on a file."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from helpers.synthetic import many_class_logits
from matplotlib.figure import Figure

import trustcal
from trustcal import cli
from trustcal.api import AssessmentResult, AssessmentWarning
from trustcal.errors import TrustcalError
from trustcal.predictions import ColumnError, LabelError, LengthMismatch, PredictionError, ProbabilityError

N, K = 400, 4


def model_outputs(seed: int = 0, n: int = N, k: int = K):
    """Logits of an overconfident model that is right about 80% of the time, and the labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = 2.5 * rng.normal(size=(n, k)) + 4.0 * np.eye(k)[labels]
    return logits, labels


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cli_tables(tmp_path, name: str, **arrays) -> tuple[dict[str, str], str]:
    """The CSV texts `trustcal assess` writes for an .npz of ``arrays``, and its output directory."""
    src = tmp_path / f"{name}.npz"
    np.savez(src, **arrays)
    out = tmp_path / f"cli_{name}"
    assert cli.main(["assess", str(src), "--out", str(out), "--quiet", "--no-figures"]) == 0
    return {p.stem: p.read_text() for p in out.glob("*.csv")}, out


def api_tables(result: AssessmentResult, out) -> dict[str, str]:
    result.save(out, figures=False)
    return {p.stem: p.read_text() for p in out.glob("*.csv")}


def test_probabilities_give_the_numbers_of_the_cli(tmp_path):
    logits, labels = model_outputs()
    probs = softmax(logits)
    expected, _ = cli_tables(tmp_path, "probs", probs=probs, labels=labels)
    result = trustcal.assess(probs, labels)
    assert isinstance(result, AssessmentResult)
    assert api_tables(result, tmp_path / "api") == expected  # every table, byte for byte
    assert set(result.tables) == set(expected) and "calibration" not in result.tables
    assert result.temperature is None and result.calibration is None
    assert (result.classes, result.samples) == (K, N)
    test = result.scores[result.scores["split"] == "test"]
    assert len(test) == 1 and test["calibrator"].iloc[0] == "none"
    assert test["accuracy"].iloc[0] == pytest.approx(float((probs.argmax(1) == labels).mean()), abs=0)
    # tidy tables: one row per label and one for the network, with the opinion summing to 1
    assert result.trust["label"].astype(str).tolist()[-1] == "network"
    assert np.allclose(result.trust[["belief", "disbelief", "uncertainty"]].sum(axis=1), 1)
    b, d, u = result.network_opinion()
    assert b + d + u == pytest.approx(1)
    pd.testing.assert_frame_equal(result.scores, result.tables["scores"])


def test_logits_with_validation_give_the_numbers_of_the_cli(tmp_path):
    logits, labels = model_outputs(1)
    val_logits, val_labels = model_outputs(2, n=300)
    expected, _ = cli_tables(
        tmp_path, "logits", logits=logits, labels=labels, val_logits=val_logits, val_labels=val_labels
    )
    result = trustcal.assess(logits, labels, kind="logits", validation=(val_logits, val_labels))
    assert api_tables(result, tmp_path / "api") == expected
    assert "calibration" in result.tables and result.temperature == result.calibration["temperature"].iloc[0]
    assert result.temperature > 1  # the model is overconfident
    assert sorted(result.scores["calibrator"].unique()) == ["none", "temperature"]
    test = result.scores[result.scores["split"] == "test"].set_index("calibrator")
    assert test.at["temperature", "ece"] < test.at["none", "ece"]
    # the bootstrap interval of the ECE brackets it and excludes the other state's ECE here
    assert test.at["temperature", "ece_lo"] <= test.at["temperature", "ece"] <= test.at["temperature", "ece_hi"]
    assert len(result.network_opinion("temperature")) == 3
    text = result.summary()
    assert text.startswith(f"trustcal.assess: {N} test samples, {K} classes")
    assert "after calibration" in text and "temperature scaling fitted" in text
    assert repr(result) == text
    assert result.to_dict()["temperatures"][0]["temperature"] == pytest.approx(result.temperature)


def test_parameters_match_the_cli_options(tmp_path):
    logits, labels = model_outputs(3)
    src = tmp_path / "p.npz"
    np.savez(src, logits=logits, labels=labels)
    out = tmp_path / "cli"
    assert cli.main(["assess", str(src), "--out", str(out), "--quiet", "--no-figures", "--clusters", "7"]) == 0
    result = trustcal.assess(logits, labels, kind="logits", clusters=7)
    assert api_tables(result, tmp_path / "api")["trust"] == (out / "trust.csv").read_text()
    assert "trust_sweep" not in trustcal.assess(logits, labels, kind="logits", sweep=None).tables


def test_logits_read_as_logits_with_a_warning_naming_the_argument():
    logits, labels = model_outputs(4)
    with pytest.warns(AssessmentWarning, match='kind="logits"'):
        result = trustcal.assess(logits, labels)  # kind="auto"
    assert [w.code for w in result.warnings] == ["logits_as_probabilities"]
    assert "--kind" not in result.warnings[0].message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = trustcal.assess(logits, labels, kind="logits")
    pd.testing.assert_frame_equal(quiet.scores, result.scores)


def test_other_array_types():
    logits, labels = model_outputs(5)
    base = trustcal.assess(logits, labels, kind="logits", sweep=None)
    as_lists = trustcal.assess(logits.tolist(), labels.tolist(), kind="logits", sweep=None)
    pd.testing.assert_frame_equal(as_lists.trust, base.trust)
    onehot = trustcal.assess(pd.DataFrame(logits), np.eye(K, dtype=int)[labels], kind="logits", sweep=None)
    pd.testing.assert_frame_equal(onehot.scores, base.scores)
    torch = pytest.importorskip("torch")
    tensor = trustcal.assess(torch.tensor(logits, requires_grad=True), torch.tensor(labels), kind="logits", sweep=None)
    pd.testing.assert_frame_equal(tensor.scores, base.scores)


def test_figures_are_matplotlib_figures(tmp_path):
    logits, labels = model_outputs(6)
    val_logits, val_labels = model_outputs(7, n=200)
    result = trustcal.assess(logits, labels, kind="logits", validation=(val_logits, val_labels))
    for fig in (
        result.reliability_diagram(),
        result.trust_spectrum(),
        result.trust_density(),
        result.figure("cluster_sweep", title="my model"),
    ):
        assert isinstance(fig, Figure) and fig.axes
    assert result.reliability_diagram(path=tmp_path / "rel.png") is not None
    assert (tmp_path / "rel.png").stat().st_size > 1000
    with pytest.raises(PredictionError, match="trust_grid.*cannot be drawn.*reliability"):
        result.figure("trust_grid")  # needs an epoch series
    with pytest.raises(PredictionError, match="'no_such_figure' cannot be drawn.*trust_spectrum"):
        result.figure("no_such_figure")


def test_save_writes_what_the_cli_writes(tmp_path):
    logits, labels = model_outputs(8)
    src = tmp_path / "p.npz"
    np.savez(src, logits=logits, labels=labels, val_logits=logits, val_labels=labels)
    assert cli.main(["assess", str(src), "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    result = trustcal.assess(logits, labels, kind="logits", validation=(logits, labels))
    out = result.save(tmp_path / "api")

    def files(folder):  # the figures too: --out writes PNG only, and so does save() (issue 29)
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())

    assert files(out) == files(tmp_path / "cli")
    assert "figures/reliability.png" in files(out) and not any(f.endswith(".pdf") for f in files(out))
    # the API's own words: summary.txt is the API's summary, and the opinion prints its calibrator's name
    summary = (out / "summary.txt").read_text()
    assert summary == result.summary() + "\n" and "prediction file" not in summary and "probs_or_logits" not in summary
    opinion = repr(result.network_opinion("temperature"))
    assert opinion.splitlines()[-1] == "Name: temperature, dtype: float64", opinion  # not the row's index


BAD_INPUTS = [
    # (probs_or_logits, labels, kwargs, error class, what the message must name)
    (np.full(5, 0.5), [0, 1, 2, 1, 0], {}, LabelError, ["probs_or_logits", "one column", "3 classes", "Fix"]),
    (np.full((5, 2, 2), 0.5), [0] * 5, {}, ColumnError, ["probs_or_logits", "N×K", "Fix"]),
    (np.zeros((0, 3)), [], {}, ColumnError, ["probs_or_logits", "no rows"]),
    (np.array([["a", "b"]]), [0], {}, TrustcalError, ["probs_or_logits", "expected numbers"]),
    (np.full((4, 2), 0.5), [0, 1, 2, 1], {}, LabelError, ["labels", "element 2", "label 2", "0 … 1", "Fix"]),
    (np.full((4, 2), 0.5), [1, 2, 2, 1], {}, LabelError, ["labels", "1-based", "subtract 1"]),
    (np.full((4, 2), 0.5), [0, 1, 0.5, 1], {}, LabelError, ["labels", "not an integer"]),
    (np.full((4, 2), 0.5), ["cat", "dog", "cow", "dog"], {}, LabelError, ["labels", "3 classes", "2 columns"]),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"bootstrap": "many"}, PredictionError, ["bootstrap='many'", "str", "200"]),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"renormalize": "yes"}, PredictionError, ["renormalize", "True or False"]),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"t_min": "0.1"}, PredictionError, ["t_min", "a positive number"]),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"metrics": {}}, PredictionError, ["metrics", "MetricParams"]),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"calibrators": ["platt"]}, PredictionError, ["calibrators", "'platt'"]),
    (np.full((4, 2), 0.5), [0, 1, 0], {}, LengthMismatch, ["labels", "3 labels", "4 rows", "Fix"]),
    (np.full((4, 2), 0.5), [[0, 1], [1, 0]], {}, ColumnError, ["labels", "shape (2, 2)"]),
    (np.array([[0.5, 0.5], [np.nan, 0.5]]), [0, 1], {}, TrustcalError, ["probs_or_logits", "row 1, column 0", "NaN"]),
    (
        np.array([[1.5, -0.5], [0.5, 0.5]]),
        [0, 1],
        {"kind": "probs"},
        ProbabilityError,
        ["probs_or_logits", "row 0, column 1", 'kind="logits"'],
    ),
    (
        np.array([[0.5, 0.4], [0.5, 0.5]]),
        [0, 1],
        {},
        ProbabilityError,
        ["probs_or_logits", "row 0", "renormalize=True"],
    ),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"kind": "softmax"}, PredictionError, ["kind", "softmax", "logits"]),
    (np.full((4, 2), 0.5), [0, 1, 0, 1], {"clusters": 0}, PredictionError, ["clusters=0", "clusters=10"]),
    (
        np.full((4, 2), 0.5),
        [0, 1, 0, 1],
        {"validation": np.full((4, 2), 0.5)},
        PredictionError,
        ["validation", "(val_probs_or_logits, val_labels)"],
    ),
    (
        np.full((4, 2), 0.5),
        [0, 1, 0, 1],
        {"validation": (np.full((3, 3), 1 / 3), [0, 1, 2])},
        ColumnError,
        ["validation[0]", "3 probability columns", "expected 2"],
    ),
    (
        np.full((4, 2), 0.5),
        [0, 1, 0, 1],
        {"validation": (np.full((3, 2), 0.5), [0, 1])},
        LengthMismatch,
        ["validation[1]", "validation[0]"],
    ),
]


@pytest.mark.parametrize("values, labels, kwargs, error, words", BAD_INPUTS)
def test_bad_input_is_a_clear_error(values, labels, kwargs, error, words):
    with pytest.raises(error) as info:
        trustcal.assess(values, labels, **kwargs)
    assert isinstance(info.value, TrustcalError)
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert "--" not in message, message  # the API's arguments, not the CLI's flags


def test_import_trustcal_is_light_and_assess_stays_a_function():
    import importlib
    import subprocess
    import sys

    code = (
        "import sys, trustcal; heavy = [m for m in ('pandas', 'matplotlib', 'trustcal.api') if m in sys.modules]; "
        "import trustcal.assessment, trustcal.cli; assert callable(trustcal.assess), trustcal.assess; "
        "from trustcal import assess, AssessmentResult; assert assess.__module__ == 'trustcal.api'; print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    importlib.import_module("trustcal.assessment")
    assert trustcal.assess is trustcal.api.assess
    assert "assess" in dir(trustcal)
    with pytest.raises(AttributeError):
        trustcal.no_such_thing  # noqa: B018


def test_api_docstring_examples():
    import doctest

    import trustcal.api

    results = doctest.testmod(trustcal.api, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert results.attempted >= 8 and results.failed == 0


def test_calibrators_give_one_row_each_and_their_opinions():
    logits, labels = model_outputs(1)
    val_logits, val_labels = model_outputs(2, n=600)
    result = trustcal.assess(
        logits, labels, kind="logits", validation=(val_logits, val_labels), calibrators=["temperature", "isotonic"]
    )
    test = result.scores[result.scores["split"] == "test"].set_index("calibrator")
    assert list(test.index) == ["none", "temperature", "isotonic"]
    assert test.at["isotonic", "ece"] < test.at["none", "ece"]  # an overconfident model is corrected
    b, d, u = result.network_opinion("isotonic")
    assert b + d + u == pytest.approx(1)
    assert set(result.calibration["calibrator"]) == {"temperature", "isotonic"}
    with pytest.raises(PredictionError, match="no rows of calibrator 'dirichlet'"):
        result.network_opinion("dirichlet")


def test_one_vs_rest_binning_on_many_classes_is_said_before_its_fit():
    """At 30 classes histogram binning gets one one_vs_rest_many_classes warning (said once, naming irm), and
    is fitted anyway; irm gets none (docs/method.md §2.10)."""
    (z, y), (zv, yv) = many_class_logits(900, 30, seed=1), many_class_logits(900, 30, seed=2)
    result = trustcal.assess(z, y, kind="logits", validation=(zv, yv), calibrators=["histogram", "irm"], bootstrap=20)
    (w,) = [w for w in result.warnings if w.code == "one_vs_rest_many_classes"]
    assert w.message.startswith("histogram binning at 30 classes") and "use irm" in w.message
    assert set(result.calibration["calibrator"]) == {"histogram", "irm"}


def test_the_summary_of_one_prediction_set_has_no_epoch():
    """One set of predictions (no epoch in its name) is summarised as one: no epoch column, no
    "epoch 0", and a single fitted temperature shown once (not "T = 1.5 … 1.5")."""
    probs, labels = model_outputs(0)
    val_probs, val_labels = model_outputs(1)
    text = trustcal.assess(probs, labels, validation=(val_probs, val_labels), kind="logits", bootstrap=20).summary()
    assert "epoch" not in text
    (t_line,) = [line for line in text.splitlines() if "T = " in line]
    assert "…" not in t_line
    table_lines = [line for line in text.splitlines() if line.startswith(("acc", "   acc"))]
    assert table_lines, text
