"""`trustcal assess`: any model's predictions in, the workflow's tables and figures out.

The author's published predictions are the real external input; small files
written here cover every format, error and warning. Every error must exit
with code 2 and a message naming the file (and line/column where there is
one) and the fix, leave no output behind, and never show a traceback.
"""

import gzip
import io
import json
import math
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.full_disk import fill_pdfs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trustcal import cli, stages
from trustcal.assessment import assess_files
from trustcal.calibration.temperature import softmax
from trustcal.errors import TrustcalError
from trustcal.evaluation import MetricParams, SweepParams
from trustcal.files import read_result_npz
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams, trust_opinions
from trustcal.predictions import PredictionError, PredictionFile, ReadOptions, series, validation
from trustcal.settings import Settings

MNIST_EPOCHS = [*range(1, 11), *range(20, 101, 10)]


def run(*args):
    """cli.main in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def random_probs(n, k, seed=0, acc=0.8):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 3.0 * (rng.random(n) < acc)
    return softmax(logits), labels, logits


def write_csv(path, probs, labels, header=True, fmt="{:.8f}"):
    k = probs.shape[1]
    lines = [",".join([f"Class_{c}_Probability" for c in range(k)] + ["True Label"])] if header else []
    lines += [",".join([fmt.format(v) for v in row] + [str(y)]) for row, y in zip(probs, labels)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def good(tmp_path):
    probs, labels, _ = random_probs(60, 4)
    return write_csv(tmp_path / "preds.csv", probs, labels)


# --------------------------------------------------------------------------- the author's files


@pytest.fixture(scope="module")
def mnist_pred(shared):
    """The author's MNIST predictions (tests/conftest.py: ``shared``; skips where absent)."""
    return shared("reference/author-predictions/MNIST_PRED")


@pytest.fixture(scope="module")
def cifar_pred(shared):
    """The author's CIFAR-10 predictions (skips where absent)."""
    return shared("reference/author-predictions/CIFAR_PRED")


@pytest.fixture(scope="module")
def author_mnist(tmp_path_factory, mnist_pred):
    out = tmp_path_factory.mktemp("author") / "out"
    # loss_history.npy is found beside the files
    code, stdout, stderr = run("assess", mnist_pred, "--out", out, "--figure-formats", "png,pdf")
    return code, stdout, stderr, out


def test_author_mnist_series_is_assessed_end_to_end(author_mnist, mnist_pred):
    code, stdout, stderr, out = author_mnist
    assert code == 0, stderr
    trust, scores = pd.read_csv(out / "trust.csv"), pd.read_csv(out / "scores.csv")
    assert list(trust.columns) == [
        "epoch",
        "calibrator",
        "label",
        "belief",
        "disbelief",
        "uncertainty",
        "base_rate",
        "positive_evidence",
        "negative_evidence",
        *(f"{c}_{end}" for c in ("belief", "disbelief", "uncertainty") for end in ("lo", "hi")),
    ]
    assert set(trust["calibrator"]) == {"none", "temperature"}  # the author's bef_/aft_ files
    assert sorted(trust["epoch"].unique()) == MNIST_EPOCHS
    assert len(trust) == len(MNIST_EPOCHS) * 2 * 11 and len(scores) == len(MNIST_EPOCHS) * 2
    for name in ("dynamic_trust", "trust_sweep", "trust_spectrum", "reliability", "trust_density"):
        assert len(pd.read_csv(out / f"{name}.csv")) > 0, name
    for ext in ("png", "pdf"):
        assert (out / "figures" / f"trust_grid.{ext}").stat().st_size > 10_000
    # with the author's loss history (found in the folder), every figure but the temperature one (no logits here)
    drawn = {p.stem for p in (out / "figures").glob("*.png")}
    assert {"trust_grid", "loss_curves", "reliability", "trust_spectrum", "network_opinion"} <= drawn
    assert "figures not drawn (need validation data): calibration_metrics" in stdout
    # one screen: a line per epoch, both states side by side, and nothing on stderr (no warnings)
    assert len(stdout.splitlines()) < 40
    assert re.search(r"^\s+100\s+0\.9806\s", stdout, re.M) and "after calibration" in stdout
    assert f"training history: {mnist_pred / 'loss_history.npy'}" in stdout and "skipped" not in stdout
    assert json.loads((out / "assess.json").read_text())["history"] == str(mnist_pred / "loss_history.npy")
    # no warnings (a run this long shows its progress on stderr, as plain lines off a terminal)
    assert "warning" not in stderr and (out / "warnings.txt").read_text() == ""
    # accuracy of the author's epoch-1 file, computed independently
    df = pd.read_csv(mnist_pred / "bef_1.csv.gz")
    acc = (df.iloc[:, :10].to_numpy().argmax(1) == df["True Label"]).mean()
    assert scores.query("epoch == 1 and calibrator == 'none'")["accuracy"].item() == pytest.approx(acc)
    lo, hi = scores.query("epoch == 1 and calibrator == 'none'")[["accuracy_lo", "accuracy_hi"]].squeeze()
    assert lo < acc < hi  # the 95 % bootstrap interval of the test accuracy


def test_author_mnist_trust_matches_the_paper_after_calibration(author_mnist, mnist_pred):
    """docs/method.md §3: MNIST trust ≈ 0.65 and disbelief ≈ 0.35 per label, stable after calibration.

    On these files our algorithm gives, after calibration, per-label belief 0.636–0.699 and
    disbelief 0.300–0.362 over all 20 epochs (network 0.666–0.671 / 0.329–0.334). The paper
    reads its values off a figure to two digits ("≈ 0.65"), and its labels spread by about
    ±0.03 around their mean, so each label must lie within ±0.06 of the paper's value and
    the network opinion within ±0.03; "stable" is a per-label range over epochs ≤ 0.05.
    A change of the clustering or the evidence formula moves these by far more (0.5 or 0.8).
    """
    out = author_mnist[3]
    trust = pd.read_csv(out / "trust.csv")
    after = trust[trust["calibrator"] == "temperature"]
    labels, net = after[after["label"] != "network"], after[after["label"] == "network"]
    assert labels["belief"].sub(0.65).abs().max() <= 0.06
    assert labels["disbelief"].sub(0.35).abs().max() <= 0.06
    assert net["belief"].sub(0.65).abs().max() <= 0.03 and net["disbelief"].sub(0.35).abs().max() <= 0.03
    assert labels.groupby("label")["belief"].agg(lambda b: b.max() - b.min()).max() <= 0.05
    assert (after["uncertainty"] < 0.002).all()  # 10,000 samples of evidence, W = 2
    # the table is exactly the library's trust opinion of the file
    df = pd.read_csv(mnist_pred / "aft_100.csv.gz")
    direct = trust_opinions(df.iloc[:, :10].to_numpy(), df["True Label"].to_numpy())
    mine = after[after["epoch"] == 100].reset_index(drop=True)
    np.testing.assert_allclose(
        mine[["belief", "disbelief", "uncertainty"]], direct[["belief", "disbelief", "uncertainty"]]
    )


@pytest.mark.parametrize(
    "name,warned",
    [
        ("bef_1", True),
        ("bef_50", True),
        ("bef_100", True),
        ("aft_1", True),
        ("aft_20", False),
        ("aft_50", False),
        ("aft_100", False),
    ],
)
def test_cifar_files_that_went_through_softmax_twice_are_flagged(name, warned, cifar_pred):
    warnings = []
    path = cifar_pred / f"{name}.csv.gz"
    validation.load(PredictionFile(path, 1, None), ReadOptions(), warnings.append)
    flagged = [w for w in warnings if w.code == "double_softmax"]
    assert bool(flagged) == warned
    if warned:
        assert f"{name}.csv.gz" in flagged[0].file and "10000 of 10000 rows (100%)" in flagged[0].message
        assert "0.2320" in flagged[0].message and "softmax twice" in flagged[0].message


# --------------------------------------------------------------------------- formats


def test_npz_with_validation_logits_is_calibrated_like_the_workflow(tmp_path):
    """A series of the workflow's own logits files gives the workflow's own tables."""
    rng = np.random.default_rng(3)
    logit_dir = tmp_path / "logits"
    logit_dir.mkdir()
    paths = []
    for epoch in (1, 2, 3):
        _, yt, zt = random_probs(80, 10, seed=epoch)
        _, yv, zv = random_probs(40, 10, seed=10 + epoch)
        path = logit_dir / f"epoch{epoch:03d}.npz"
        np.savez(path, test_logits=3 * zt + rng.normal(size=zt.shape), test_labels=yt, val_logits=3 * zv, val_labels=yv)
        paths.append(str(path))
    sweep = SweepParams(clusters=(5, 10), epochs=(1, 3))
    states = tmp_path / "temperature.npz"
    stages.calibrate_stage(paths, states, tmp_path / "calibration.csv")
    wf = {n: str(tmp_path / f"wf_{n}.csv") for n in ("trust", "dynamic_trust", "trust_sweep", "selective")}
    boot = BootstrapParams()
    stages.trust_stage(paths, [states], wf, Settings(trust=TrustParams(), sweep=sweep, bootstrap=boot))
    sc = {
        n: str(tmp_path / f"wf_{n}.csv")
        for n in ("scores", "trust_spectrum", "reliability", "trust_density", "smooth_reliability")
    }
    stages.scores_stage(paths, [states], sc, Settings(metrics=MetricParams(), bootstrap=boot))

    code, stdout, stderr = run(
        "assess",
        logit_dir,
        "--out",
        tmp_path / "out",
        "--no-figures",
        "--clusters-sweep",
        5,
        10,
        "--sweep-epochs",
        1,
        3,
    )
    assert code == 0, stderr
    out = tmp_path / "out"
    for name in ("trust", "dynamic_trust", "trust_sweep", "scores", "trust_spectrum", "reliability", "trust_density"):
        mine = pd.read_csv(out / f"{name}.csv")
        theirs = pd.read_csv(tmp_path / f"wf_{name}.csv")
        key = [
            c
            for c in (
                "epoch",
                "calibrator",
                "split",
                "label",
                "curve",
                "class_index",
                "bin",
                "clusters",
                "representative",
                "correct",
                "q",
            )
            if c in mine.columns
        ]
        mine, theirs = mine.sort_values(key, ignore_index=True), theirs.sort_values(key, ignore_index=True)
        pd.testing.assert_frame_equal(mine, theirs, check_exact=False, rtol=1e-9, atol=1e-12, obj=name)
    pd.testing.assert_frame_equal(pd.read_csv(out / "calibration.csv"), pd.read_csv(tmp_path / "calibration.csv"))
    assert "temperature scaling fitted on the validation data" in stdout


def test_npy_with_labels_file_and_logits(tmp_path):
    probs, labels, logits = random_probs(50, 3)
    np.save(tmp_path / "epoch5.npy", logits)
    (tmp_path / "labels.txt").write_text("label\n" + "\n".join(map(str, labels)) + "\n")
    code, stdout, stderr = run(
        "assess",
        tmp_path / "epoch5.npy",
        "--labels",
        tmp_path / "labels.txt",
        "--kind",
        "logits",
        "--out",
        tmp_path / "out",
        "--no-figures",
    )
    assert code == 0, stderr
    assert stderr == ""  # --kind logits: no "looks like logits" warning
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert scores["epoch"].tolist() == [5]
    assert scores["accuracy"].item() == pytest.approx((probs.argmax(1) == labels).mean())


def test_gzip_npz_tsv_and_headerless_whitespace_files_are_read(tmp_path):
    probs, labels, _ = random_probs(40, 3)
    buf = io.BytesIO()
    np.savez(buf, probs=probs, labels=labels)
    (tmp_path / "a.npz.gz").write_bytes(gzip.compress(buf.getvalue()))
    np.savetxt(tmp_path / "b.txt", np.column_stack([probs, labels]), fmt="%.10f")  # space separated, no header
    tsv = tmp_path / "c.tsv"
    pd.DataFrame({"id": range(40), **{f"p{c}": probs[:, c] for c in range(3)}, "target": labels}).to_csv(
        tsv, sep="\t", index=False
    )
    onehot = tmp_path / "d.npz"
    np.savez(onehot, probs=probs, labels=np.eye(3)[labels])
    accuracies = []
    for path, extra in (
        (tmp_path / "a.npz.gz", []),
        (tmp_path / "b.txt", []),
        (tsv, ["--prob-columns", r"p\d"]),
        (onehot, []),
    ):
        code, _, stderr = run("assess", path, *extra, "--out", tmp_path / f"out_{path.name}", "--no-figures")
        assert code == 0, stderr
        accuracies.append(pd.read_csv(tmp_path / f"out_{path.name}" / "scores.csv")["accuracy"].item())
    assert accuracies == pytest.approx([(probs.argmax(1) == labels).mean()] * 4)


def test_csv_with_named_columns_and_validation_file(tmp_path):
    probs, labels, _ = random_probs(60, 4, seed=1)
    vprobs, vlabels, _ = random_probs(30, 4, seed=2)
    for name, p, y in (("test.csv", probs, labels), ("val.csv", vprobs, vlabels)):
        pd.DataFrame({**{f"score_{c}": p[:, c] for c in range(4)}, "truth": y}).to_csv(tmp_path / name, index=False)
    code, stdout, stderr = run(
        "assess",
        tmp_path / "test.csv",
        "--validation",
        tmp_path / "val.csv",
        "--label-column",
        "truth",
        "--prob-columns",
        r"score_\d+",
        "--out",
        tmp_path / "out",
        "--no-figures",
    )
    assert code == 0, stderr
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert set(zip(scores["calibrator"], scores["split"])) == {
        ("none", "test"),
        ("temperature", "test"),
        ("none", "val"),
        ("temperature", "val"),
    }
    cal = pd.read_csv(tmp_path / "out" / "calibration.csv")
    assert cal["val_nll_after"].item() <= cal["val_nll_before"].item() + 1e-12
    # temperature scaling of probabilities = softmax(log p / T): accuracy unchanged
    assert scores.groupby("split")["accuracy"].nunique().eq(1).all()


def test_labels_file_overrides_the_label_column_which_is_not_read_as_a_class(tmp_path):
    probs, labels, _ = random_probs(30, 3)
    write_csv(tmp_path / "p.csv", probs, np.zeros(30, int))
    np.save(tmp_path / "y.npy", labels)
    code, _, stderr = run(
        "assess", tmp_path / "p.csv", "--labels", tmp_path / "y.npy", "--out", tmp_path / "out", "--no-figures"
    )
    assert code == 0, stderr
    spectrum = pd.read_csv(tmp_path / "out" / "trust_spectrum.csv")
    assert spectrum["label"].tolist() == [0, 1, 2] and spectrum["count"].tolist() == [10, 10, 10]


@pytest.mark.parametrize(
    "name,epoch,calibrated",
    [
        ("bef_10", 10, False),
        ("aft_10", 10, True),
        ("before-epoch-3", 3, False),
        ("epoch010", 10, None),
        ("run3_epoch_7_after", 7, True),
        ("model_v2_e15_uncalibrated", 15, False),
        ("calibrated_42", 42, True),
        ("preds", None, None),
        ("aftermath_5", 5, None),
    ],
)
def test_epoch_and_state_from_file_names(name, epoch, calibrated):
    assert series.parse_name(f"dir/{name}.csv.gz") == (epoch, calibrated)


def test_custom_name_pattern(tmp_path):
    assert series.parse_name("ckpt-7-ts.npz", r"ckpt-(?P<epoch>\d+)-(?P<state>ts|raw)") == (7, False)
    with pytest.raises(PredictionError, match="no group named 'epoch'"):
        ReadOptions(name_pattern=r"(\d+)")


# --------------------------------------------------------------------------- errors


def _ragged(p):
    p.write_text("p0,p1,label\n0.2,0.8,1\n0.5,0.5,0,9\n")


CASES = {
    # name: (writer of the bad file, extra args, expected message parts, where)
    "empty file": (lambda p: p.write_text(""), [], ["the file is empty", "Fix: export"]),
    "header only": (lambda p: p.write_text("p0,p1,label\n"), [], ["header but no rows"]),
    "not text": (lambda p: p.write_bytes(bytes(range(256)) * 4), [], ["not a text file", "--format npz"]),
    "truncated gzip": (
        lambda p: p.write_bytes(gzip.compress(b"p0,p1,label\n" * 100)[:30]),
        [],
        ["gzip data is truncated"],
    ),
    "missing label column": (
        lambda p: p.write_text("p0,p1,cls\n0.2,0.8,1\n"),
        [],
        ["no label column", "--label-column NAME"],
    ),
    "unknown --label-column": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n"),
        ["--label-column", "y_true"],
        ["no column named 'y_true'"],
    ),
    "line with too many fields": (_ragged, [], ["line 3 has 4 fields but the header has 3", "repair or delete line 3"]),
    "line with too few fields": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n0.5,0.5\n"),
        [],
        ["line 3 has 2 fields but the header has 3"],
    ),
    "no probability column": (
        lambda p: p.write_text("label\n1\n0\n"),
        [],
        ["no probability columns", "one column per class"],
    ),
    "wrong number of classes": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n"),
        ["--num-classes", "3"],
        ["2 probability columns; expected 3", "--num-classes"],
    ),
    "non-numeric cell": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n\n0.5,abc,0\n"),
        [],
        ["line 4, column 'p1': 'abc' is not a number", "--prob-columns"],
    ),
    "NaN": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n0.5,nan,0\n"),
        [],
        ["line 3, column 'p1': empty or NaN", "Fix:"],
    ),
    "empty cell": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n0.5,,0\n"),
        [],
        ["line 3, column 'p1': empty or NaN"],
    ),
    "+inf": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\ninf,0.5,0\n"),
        [],
        ["line 3, column 'p0': +inf", "overflow"],
    ),
    "-inf": (lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n-inf,0.5,0\n"), [], ["line 3, column 'p0': -inf"]),
    "negative probability": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n1.2,-0.2,0\n"),
        [],
        ["line 3, column 'p1': probability -0.2 is negative", "--kind logits"],
    ),
    "negative with --kind probs": (
        lambda p: p.write_text("p0,p1,label\n2.0,-1.5,1\n"),
        ["--kind", "probs"],
        ["line 2, column 'p1': probability -1.5 is negative"],
    ),
    "probability above 1": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1\n0.5,1.5,0\n"),
        ["--kind", "probs"],
        ["line 3, column 'p1': probability 1.5 is greater than 1"],
    ),
    "rows not summing to 1": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.7,1\n0.5,0.5,0\n"),
        [],
        ["line 2: the probabilities sum to 0.9; expected 1 within ±0.001", "--renormalize"],
    ),
    "all-zero row with --renormalize": (
        lambda p: p.write_text("p0,p1,label\n0,0,1\n0.5,0.5,0\n"),
        ["--renormalize"],
        ["line 2: every probability is 0", "cannot be renormalised"],
    ),
    "label not an integer": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,1.5\n"),
        [],
        ["line 2, column 'label': label 1.5 is not an integer", "class index"],
    ),
    "label out of range": (
        lambda p: p.write_text("p0,p1,p2,label\n0.2,0.7,0.1,3\n0.2,0.7,0.1,0\n"),
        [],
        ["line 2, column 'label': label 3 is out of range for 3 classes; expected 0 … 2"],
    ),
    "1-based labels": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,2\n0.6,0.4,1\n"),
        [],
        ["look 1-based", "subtract 1"],
    ),
    "negative label": (lambda p: p.write_text("p0,p1,label\n0.2,0.8,-1\n"), [], ["label -1 is out of range"]),
    "missing label": (lambda p: p.write_text("p0,p1,label\n0.2,0.8,\n"), [], ["line 2, column 'label': empty or NaN"]),
    "text label": (
        lambda p: p.write_text("p0,p1,label\n0.2,0.8,cat\n"),
        [],
        ["label 'cat' names none of the probability columns", "(p0, p1)"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_csv_ends_in_its_documented_message(tmp_path, case):
    write, extra, expected = CASES[case]
    path = tmp_path / "bad_preds.csv"
    if case == "truncated gzip":
        path = tmp_path / "bad_preds.csv.gz"
    write(path)
    out = tmp_path / "out"
    code, stdout, stderr = run("assess", path, "--out", out, *extra)
    assert code == 2, (stdout, stderr)
    assert stderr.startswith("error: ") and path.name in stderr and "Fix:" in stderr, stderr
    for part in expected:
        assert part in stderr, (part, stderr)
    assert "Traceback" not in stderr and stdout == ""
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def _npz(**arrays):
    def write(p):
        np.savez(p, **arrays)

    return write


P3 = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]])
ARRAY_CASES = {
    "truncated npz": (
        "x.npz",
        lambda p: (
            _npz(probs=np.tile(P3, (500, 1)), labels=np.zeros(1000, int))(p),
            p.write_bytes(p.read_bytes()[:300]),
        ),
        [],
        ["unreadable or truncated .npz"],
    ),
    "npz without labels": ("x.npz", _npz(probs=P3), [], ["no labels array", "--labels FILE"]),
    "npz without predictions": (
        "x.npz",
        _npz(scores=P3, labels=[0, 1]),
        [],
        ["no predictions array", "found ['labels', 'scores']"],
    ),
    "npz 3-D predictions": (
        "x.npz",
        _npz(probs=np.full((2, 1, 2), 0.5), labels=[0, 1]),
        [],
        ["shape (2, 1, 2); expected N×K"],
    ),
    "npz text predictions": (
        "x.npz",
        _npz(probs=np.array([["a", "b"]]), labels=[0]),
        [],
        ["holds <U1 values; expected numbers"],
    ),
    "npz length mismatch": (
        "x.npz",
        _npz(probs=P3, labels=[0, 1, 2]),
        [],
        ["2 rows of predictions", "3 labels", "same order"],
    ),
    "npz negative probs": (
        "x.npz",
        _npz(probs=np.array([[1.5, -0.5], [0.5, 0.5]]), labels=[0, 1]),
        [],
        ["array 'probs', row 0, column 1: probability -0.5 is negative"],
    ),
    "npz nan logits": (
        "x.npz",
        _npz(logits=np.array([[1.0, np.nan]]), labels=[0]),
        [],
        ["array 'logits', row 0, column 1: empty or NaN"],
    ),
    "npz bad val labels": (
        "x.npz",
        _npz(logits=np.ones((2, 3)), labels=[0, 1], val_logits=np.ones((2, 3)), val_labels=[0, 7]),
        [],
        ["array 'val_labels', row 1: label 7 is out of range"],
    ),
    "npz val without labels": (
        "x.npz",
        _npz(logits=np.ones((2, 3)), labels=[0, 1], val_logits=np.ones((2, 3))),
        [],
        ["'val_logits' without 'val_labels'"],
    ),
    "npy without labels": ("epoch1.npy", lambda p: np.save(p, P3), [], ["holds only the predictions", "--labels FILE"]),
    "npy truncated": (
        "epoch1.npy",
        lambda p: (np.save(p, np.tile(P3, (100, 1))), p.write_bytes(p.read_bytes()[:200])),
        ["--labels", "LABELS"],
        ["unreadable or truncated .npy"],
    ),
    "npy label count": (
        "epoch1.npy",
        lambda p: np.save(p, P3),
        ["--labels", "LABELS"],
        ["2 rows of predictions", "labels.npy: 3 labels"],
    ),
}


@pytest.mark.parametrize("case", list(ARRAY_CASES))
def test_bad_arrays_end_in_their_documented_message(tmp_path, case):
    name, write, extra, expected = ARRAY_CASES[case]
    src = tmp_path / "in"
    src.mkdir()
    path = src / name
    write(path)
    np.save(src / "labels.npy", np.array([0, 1, 2]))
    extra = [str(src / "labels.npy") if a == "LABELS" else a for a in extra]
    out = tmp_path / "out"
    code, stdout, stderr = run("assess", path, "--out", out, *extra)
    assert code == 2, (stdout, stderr)
    assert stderr.startswith("error: ") and name in stderr and "Fix:" in stderr, stderr
    for part in expected:
        assert part in stderr, (part, stderr)
    assert "Traceback" not in stderr and not out.exists()


def test_series_errors(tmp_path, good):
    series = tmp_path / "series"
    series.mkdir()
    shutil.copy(good, series / "bef_1.csv")
    shutil.copy(good, series / "before_1.csv")
    code, _, err = run("assess", series, "--out", tmp_path / "out")
    assert code == 2 and "both are epoch 1, before calibration" in err and "--name-pattern" in err
    code, _, err = run("assess", good, series / "bef_1.csv", "--out", tmp_path / "out")
    assert code == 2 and "preds.csv: cannot read the epoch from the file name" in err
    (series / "before_1.csv").unlink()
    write_csv(series / "aft_1.csv", *random_probs(60, 5)[:2])
    code, _, err = run("assess", series, "--out", tmp_path / "out")
    assert code == 2 and "aft_1.csv: 5 classes but" in err and "bef_1.csv: 4" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("hi")
    code, _, err = run("assess", empty, "--out", tmp_path / "out")
    assert code == 2 and "no prediction files in this directory" in err
    code, _, err = run("assess", tmp_path / "nothing_here.csv", "--out", tmp_path / "out")
    assert code == 2 and "nothing_here.csv: file or directory not found" in err
    code, _, err = run("assess", str(tmp_path / "zz*.csv"), "--out", tmp_path / "out")
    assert code == 2 and "no file matches this pattern" in err
    code, _, err = run("assess", series, "--validation", good, "--out", tmp_path / "out")
    assert code == 2 and "applies to a single prediction file, but 2 were given" in err
    assert not (tmp_path / "out").exists()


def test_output_directory_is_written_whole_or_not_at_all(tmp_path, good):
    out = tmp_path / "out"
    assert run("assess", good, "--out", out, "--no-figures")[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    bad = tmp_path / "bad.csv"
    bad.write_text("p0,p1,label\n0.5,0.5,x\n")
    code, _, err = run("assess", bad, "--out", out)
    assert code == 2 and {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    code, _, err = run("assess", good, "--out", foreign)
    assert code == 2 and "holds files that trustcal did not write" in err
    assert [p.name for p in foreign.iterdir()] == ["thesis.tex"]
    nested = tmp_path / "a" / "b" / "out"
    assert run("assess", bad, "--out", nested)[0] == 2 and not (tmp_path / "a").exists()


def files_of(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_rerun_keeps_the_files_it_did_not_write_and_names_them(tmp_path, good):
    """A file of one's own in an earlier --out (at the top, in a folder of one's own, inside figures/) stays and
    is named in one line; the earlier assessment's files that the rerun does not write (its figures, here)
    go; assess.json lists what was written."""
    out = tmp_path / "out"
    assert run("assess", good, "--out", out, "--bootstrap", "0")[0] == 0
    drawn = sorted(p.name for p in (out / "figures").iterdir())
    assert drawn
    mine = {"my_notes.txt": b"notes", "mydata/x": b"data", "figures/mine.png": b"not a figure of trustcal's"}
    for rel, content in mine.items():
        (out / rel).parent.mkdir(exist_ok=True)
        (out / rel).write_bytes(content)
    code, _, err = run("assess", good, "--out", out, "--bootstrap", "0", "--no-figures")
    assert code == 0, err
    assert {rel: (out / rel).read_bytes() for rel in mine} == mine
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["mine.png"]  # the earlier figures are gone
    [note] = [line for line in err.splitlines() if line.startswith("note:")]
    assert note == f"note: {out}/: kept 3 file(s) that trustcal did not write: figures/mine.png, my_notes.txt, mydata/x"
    written = json.loads((out / "assess.json").read_text())["written"]
    assert sorted(written) == sorted(set(files_of(out)) - set(mine))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "preds.csv"]  # no temporary, backup or lock


def test_a_copied_assess_json_does_not_make_the_other_files_trustcals(tmp_path, good):
    """A folder holding an assess.json that lists nothing (copied from elsewhere, or written by an older
    trustcal) keeps every file the assessment does not write."""
    earlier = tmp_path / "earlier"
    assert run("assess", good, "--out", earlier, "--no-figures", "--bootstrap", "0")[0] == 0
    info = json.loads((earlier / "assess.json").read_text())
    info.pop("written", None)  # as an older trustcal wrote it
    out = tmp_path / "out"
    out.mkdir()
    (out / "assess.json").write_text(json.dumps(info))
    (out / "keep.txt").write_text("precious")
    code, _, err = run("assess", good, "--out", out, "--no-figures", "--bootstrap", "0")
    assert code == 0, err
    assert (out / "keep.txt").read_text() == "precious"
    assert f"note: {out}/: kept 1 file(s) that trustcal did not write: keep.txt" in err.splitlines()
    code, stdout, _ = run("assess", good, "--out", out, "--no-figures", "--bootstrap", "0", "--json")
    assert json.loads(stdout)["kept"] == ["keep.txt"]


PAUSED_ASSESS = """
import sys

import trustcal.assessment.output as output
from trustcal import cli

read = output.assess_files


def paused(*args, **kwargs):  # inside the write of --out: say so, wait to be let go
    print("writing", flush=True)
    sys.stdin.readline()
    return read(*args, **kwargs)


output.assess_files = paused
sys.exit(cli.main(sys.argv[1:]))
"""


def test_two_assessments_into_one_folder_give_one_result_and_one_error(tmp_path, good):
    out = tmp_path / "out"
    assert run("assess", good, "--out", out, "--no-figures", "--bootstrap", "0")[0] == 0
    before = files_of(out)
    first = subprocess.Popen(
        [sys.executable, "-c", PAUSED_ASSESS, "assess", str(good), "--out", str(out), "--bootstrap", "0", "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline() == "writing\n", first.stderr.read()
        code, stdout, err = run("assess", good, "--out", out, "--no-figures", "--bootstrap", "0")
        assert code == 2 and stdout == "", err
        [line] = err.splitlines()
        assert line.startswith(f"error: {out}: another trustcal run (pid {first.pid} on "), line
        assert "started" in line and "Fix: wait until that run has finished, or write elsewhere." in line
        assert files_of(out) == before
        [theirs] = tmp_path.glob(".out.*.tmp")  # the first run's temporary directory, left alone
    finally:
        first.communicate("go\n", timeout=300)
    assert first.returncode == 0, first.stderr
    assert (out / "figures" / "reliability.png").is_file()  # the first run's result, whole
    assert not theirs.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["out", "preds.csv"]


@pytest.fixture
def full_disk_for_pdfs(monkeypatch):
    """Every PDF is written onto a full disk, which matplotlib's PDF writer meets as a real one (helpers.full_disk)."""
    fill_pdfs(monkeypatch)


def test_a_full_disk_while_drawing_a_figure_stops_with_one_line_and_leaves_out_as_it_was(
    tmp_path, good, full_disk_for_pdfs
):
    out = tmp_path / "out"
    assert run("assess", good, "--out", out, "--no-figures", "--bootstrap", "0")[0] == 0
    before = files_of(out)
    code, stdout, err = run("assess", good, "--out", out, "--bootstrap", "0", "--figure-formats", "png,pdf")
    assert code == 2 and stdout == "", err
    [line] = err.splitlines()
    assert re.fullmatch(
        rf"error: {re.escape(str(out))}/figures/\w+\.pdf: cannot be written: no space left on device .*"
        r"Fix: free space there \(or write the results elsewhere\), then rerun\.",
        line,
    ), line
    assert files_of(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "preds.csv"]


def test_bad_flags_are_usage_errors(good, tmp_path, capsys):
    for args in (["--clusters", "0"], ["--sum-tolerance", "-1"], ["--geo-eps", "2"], ["--kind", "probabilities"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(["assess", str(good), "--out", str(tmp_path / "o"), *args])
        assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err
    code, _, err = run("assess", good, "--out", tmp_path / "o", "--t-min", "5", "--t-max", "1")
    assert code == 2 and "--t-min 5.0 must be smaller than --t-max 1.0" in err
    code, _, err = run("assess", good, "--out", tmp_path / "o", "--prob-columns", "(")
    assert code == 2 and "not a valid regular expression" in err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- warnings


def _warned(tmp_path, path, *extra):
    out = tmp_path / "out"
    code, stdout, stderr = run("assess", path, "--out", out, "--no-figures", *extra)
    assert code == 0, stderr
    return " ".join(stderr.split()), (out / "warnings.txt").read_text(), out


def test_renormalize_warns_and_divides(tmp_path):
    path = tmp_path / "sigmoid.csv"
    path.write_text("p0,p1,p2,label\n0.2,0.7,0.3,1\n0.5,0.3,0.1,0\n0.1,0.2,0.6,2\n")
    stderr, stored, out = _warned(tmp_path, path, "--renormalize")
    assert "warning [renormalized]" in stderr and "3 of 3 rows did not sum to 1 within ±0.001" in stderr
    assert stored.startswith("[renormalized] ") and "sigmoid.csv" in stored
    assert pd.read_csv(out / "scores.csv")["accuracy"].item() == 1.0


def test_logits_passed_as_probabilities_are_read_as_logits_with_a_warning(tmp_path):
    probs, labels, logits = random_probs(50, 3)
    path = write_csv(tmp_path / "raw.csv", logits, labels)
    stderr, stored, out = _warned(tmp_path, path)
    assert "warning [logits_as_probabilities]" in stderr and "look like logits" in stderr and "--kind logits" in stderr
    assert "raw.csv" in stored
    assert pd.read_csv(out / "scores.csv")["nll"].item() == pytest.approx(
        -np.log(probs[np.arange(50), labels]).mean(), rel=1e-6
    )


def test_below_chance_and_absent_class_warn(tmp_path):
    probs = np.tile([[0.1, 0.2, 0.7]], (30, 1))
    path = write_csv(tmp_path / "shifted.csv", probs, np.array([0, 1] * 15))
    stderr, stored, _ = _warned(tmp_path, path)
    assert "[below_chance]" in stored and "accuracy 0.000 is below chance (1/K = 0.333)" in stderr
    assert "[absent_class]" in stored and "class(es) 2 never appear among the 30 labels" in stderr
    assert "undefined (NaN)" in stderr


def test_double_softmax_warns_with_the_fraction(tmp_path):
    probs, labels, _ = random_probs(40, 10)
    path = write_csv(tmp_path / "twice.csv", softmax(probs), labels)
    stderr, stored, _ = _warned(tmp_path, path)
    assert "[double_softmax]" in stored and "40 of 40 rows (100%)" in stderr and "≤ e/(e+K−1) = 0.2320" in stderr
    clean = write_csv(tmp_path / "once.csv", probs, labels)
    shutil.rmtree(tmp_path / "out")
    stderr, stored, _ = _warned(tmp_path, clean)
    assert stored == "" and stderr == ""


# --------------------------------------------------------------------------- the rest


def test_truncated_logits_npz_names_the_file_and_the_rule(tmp_path):
    path = tmp_path / "epoch003.npz"
    np.savez(path, **{k: np.zeros((100, 10)) for k in stages.LOGITS_FILE_KEYS})
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(TrustcalError, match=r"epoch003\.npz: unreadable or truncated.*rerun rule 'logits'\.$") as err:
        read_result_npz(path, stages.LOGITS_FILE_KEYS, rule="logits")
    # a library message: the workflow's jobs add their snakemake command, the command line its own words
    assert err.value.rerun == "logits" and "snakemake" not in str(err.value)


def test_help_explains_the_formats_with_an_example():
    proc = subprocess.run([sys.executable, "-m", "trustcal", "assess", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for part in (
        "Class_0_Probability",
        ".npz",
        ".npy",
        "--labels",
        "bef_10.csv.gz",
        "examples:",
        "--clusters M",
        "--renormalize",
        "(default: 10)",
    ):
        assert part in proc.stdout, part
    assert shutil.which("trustcal", path=str(Path(sys.executable).parent)), "entry point not installed"


# --------------------------------------------------------------------------- fuzz

CELLS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "nan", "inf", "-1", "0", "1", "2", "0.5", "abc", "1e400", '"x,y"', " ", "True", "1.0"]),
    st.integers(-3, 12).map(str),
)


@st.composite
def csv_texts(draw):
    k = draw(st.integers(1, 4))
    header = draw(
        st.one_of(
            st.just(",".join([f"p{c}" for c in range(k)] + ["label"])),
            st.just(",".join(f"p{c}" for c in range(k + 1))),
            st.just(""),
        )
    )
    rows = draw(st.lists(st.lists(CELLS, min_size=max(1, k - 1), max_size=k + 2), min_size=0, max_size=6))
    sep = draw(st.sampled_from([",", ",", "\t", ";"]))
    lines = ([header.replace(",", sep)] if header else []) + [sep.join(r) for r in rows]
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


def _assess_or_documented_error(path, **opts):
    try:
        a = assess_files([path], ReadOptions(**opts), Settings(sweep=SweepParams(clusters=(2,), epochs=(0,))))
    except PredictionError as exc:
        msg = str(exc)
        assert Path(path).name in msg and "Fix:" in msg, msg
        return None
    assert math.isfinite(a.tables["trust"]["belief"].sum())
    a.summary()
    return a


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=csv_texts() | st.text(max_size=80), renormalize=st.booleans())
def test_fuzz_malformed_csv(tmp_path, text, renormalize):
    path = tmp_path / "fuzz.csv"
    path.write_text(text)
    _assess_or_documented_error(path, renormalize=renormalize)


ARRAYS = st.integers(0, 4).flatmap(
    lambda k: st.tuples(
        st.lists(
            st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=k, max_size=k),
            min_size=0,
            max_size=5,
        ),
        st.lists(st.one_of(st.integers(-2, 6), st.floats(allow_nan=True, allow_infinity=True)), min_size=0, max_size=6),
    )
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arrays=ARRAYS, key=st.sampled_from(["probs", "logits"]), kind=st.sampled_from(["auto", "probs", "logits"]))
def test_fuzz_malformed_arrays(tmp_path, arrays, key, kind):
    values, labels = arrays
    path = tmp_path / "fuzz.npz"
    np.savez(path, **{key: np.array(values, dtype=np.float64), "labels": np.array(labels)})
    _assess_or_documented_error(path, kind=kind)


SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
DTYPES = st.sampled_from(["float64", "float32", "int64", "bool", "complex64", "U3", "uint8"])


@st.composite
def any_array(draw):
    shape, dtype = draw(SHAPES), draw(DTYPES)
    n = int(np.prod(shape)) if shape else 1
    flat = draw(st.lists(st.floats(-3, 3) | st.sampled_from([0.0, 1.0, np.nan, np.inf]), min_size=n, max_size=n))
    arr = np.array(flat, dtype=np.float64).reshape(shape)
    return (
        np.nan_to_num(arr, posinf=9, neginf=-9).astype(dtype)
        if dtype not in ("float64", "float32")
        else arr.astype(dtype)
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    arrays=st.dictionaries(
        st.sampled_from(["probs", "logits", "labels", "val_logits", "val_labels", "val_probs"]), any_array(), max_size=5
    ),
    name=st.sampled_from(["f.npz", "f.npy", "f.csv", "f.npz.gz", "f.dat"]),
    blob=st.binary(max_size=200),
)
def test_fuzz_any_arrays_and_bytes(tmp_path, arrays, name, blob):
    path = tmp_path / name
    if name.endswith(".npz") and arrays:
        np.savez(path, **arrays)
    elif name == "f.npy" and arrays:
        np.save(path, next(iter(arrays.values())))
    elif name.endswith(".gz"):
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        path.write_bytes(gzip.compress(buf.getvalue())[: len(blob) * 20 or None])
    else:
        path.write_bytes(blob)
    np.save(tmp_path / "labels.npy", np.arange(3))
    _assess_or_documented_error(path, labels=str(tmp_path / "labels.npy") if name == "f.npy" else None)


class _Payload:
    """Pickles as a call to os.system: what a crafted loss_history.npy could hide."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_loss_history_pickle_is_read_without_running_code(tmp_path):
    from trustcal.assessment import read_history

    # the author's layout: a dict of lists, here of numpy scalars (another global the pickle names)
    good = tmp_path / "loss_history.npy"
    np.save(good, {"train": [np.float64(0.5), np.float64(0.25)], "val": [0.75, 0.5]}, allow_pickle=True)
    h = read_history(good)
    assert h[["epoch", "train_loss", "val_loss"]].values.tolist() == [[1, 0.5, 0.75], [2, 0.25, 0.5]]

    marker = tmp_path / "ran"
    bad = tmp_path / "crafted.npy"
    np.save(bad, {"train": _Payload(marker), "val": [0.1]}, allow_pickle=True)
    with pytest.raises(TrustcalError, match=r"crafted\.npy: not a loss history .*system.*never needs"):
        read_history(bad)
    assert not marker.exists(), "the pickle's code must not run"


def test_a_bare_pickle_named_npy_is_refused_as_a_history_with_what_is_expected(tmp_path):
    """A loss history written by pickle.dump, not np.save, beside the predictions or given with --history: one
    line saying what the file is and what is expected, exit 2, nothing written."""
    import pickle

    series = tmp_path / "series"
    series.mkdir()
    for e in (1, 2):
        probs, labels, _ = random_probs(40, 3, seed=e)
        write_csv(series / f"bef_{e}.csv", probs, labels)
    history = series / "loss_history.npy"
    history.write_bytes(pickle.dumps({"train": [0.9, 0.5], "val": [1.0, 0.8]}))
    expected = (
        f"error: {history}: a Python pickle (written by pickle.dump), not a .npy file written by np.save; expected "
        "np.save's .npy of a dict with 'train' and 'val' loss lists (as the author's loss_history.npy), or a CSV "
        "with columns epoch, train_loss, val_loss. Fix: save the history with np.save('loss_history.npy', "
        "{'train': train_losses, 'val': val_losses}), or pass a CSV with those columns as --history FILE."
    )
    for sources in ([series], [series / "bef_1.csv", "--history", history]):
        code, stdout, stderr = run("assess", *sources, "--out", tmp_path / "out")
        assert (code, stdout, stderr.splitlines()) == (2, "", [expected])
        assert sorted(p.name for p in tmp_path.iterdir()) == ["series"]
    binary = tmp_path / "series" / "history.bin"
    binary.write_bytes(bytes(range(128, 256)) * 4)
    code, _, stderr = run("assess", series / "bef_1.csv", "--history", binary, "--out", tmp_path / "out")
    assert (code, stderr.splitlines()) == (
        2,
        [
            f"error: {binary}: not a loss history: neither a .npy file written by np.save nor text; expected "
            "np.save's .npy of a dict with 'train' and 'val' loss lists (as the author's loss_history.npy), or a CSV "
            "with columns epoch, train_loss, val_loss. Fix: pass such a file as --history FILE."
        ],
    )


def test_out_under_a_file_is_one_line_naming_the_file(tmp_path, good):
    """--out inside a path whose folder is a regular file: exit 2 and one line naming it and the fix (not the
    operating system's FileExistsError or NotADirectoryError), the file untouched."""
    afile = tmp_path / "afile.txt"
    afile.write_text("notes")
    for out in (afile / "sub", afile / "sub" / "deeper"):
        code, stdout, stderr = run("assess", good, "--out", out)
        assert (code, stdout) == (2, ""), stderr
        assert stderr.splitlines() == [
            f"error: {out}: {afile} exists and is not a directory, so no output directory can be made inside it. "
            f"Fix: choose another output directory (or move {afile} away)."
        ]
    assert afile.read_text() == "notes" and sorted(p.name for p in tmp_path.iterdir()) == ["afile.txt", "preds.csv"]


def test_history_beside_a_series_is_used_unless_another_is_given(tmp_path):
    series = tmp_path / "series"
    series.mkdir()
    for e in (1, 2):
        probs, labels, _ = random_probs(40, 3, seed=e)
        write_csv(series / f"bef_{e}.csv", probs, labels)
    pd.DataFrame({"epoch": [1, 2], "train_loss": [0.9, 0.5], "val_loss": [1.0, 0.8]}).to_csv(
        series / "history.csv", index=False
    )
    (series / "notes.txt").write_text("no epoch here")
    a = assess_files(series)
    assert a.history_file == series / "history.csv" and a.history["val_loss"].tolist() == [1.0, 0.8]
    assert [p.name for p in a.skipped] == ["notes.txt"]
    other = tmp_path / "other.csv"
    pd.DataFrame({"epoch": [1, 2], "train_loss": [0.3, 0.2], "val_loss": [0.4, 0.6]}).to_csv(other, index=False)
    a = assess_files(series, history=other)
    assert a.history_file == other and a.history["val_loss"].tolist() == [0.4, 0.6]
    assert sorted(p.name for p in a.skipped) == ["history.csv", "notes.txt"]


def test_tables_computed_an_epoch_at_a_time_equal_those_of_one_call():
    """assessment_tables (per epoch, so that progress can follow a long series) gives the tables of one
    call of trust_tables and score_tables on every epoch: same tables, columns, rows and order (BLAS at one
    thread, as assessment_tables holds it: a product's last bits depend on its threads)."""
    from trustcal.assessment import assessment_tables
    from trustcal.evaluation import PredictionSet, score_tables, trust_tables
    from trustcal.numerics import one_blas_thread

    rng = np.random.default_rng(3)
    preds = []
    for epoch in (1, 2, 5):
        for split, n in (("test", 120), ("val", 80)):
            probs, labels, _ = random_probs(n, 4, seed=epoch * 10 + n)
            for calibrator, t in (("none", 1.0), ("temperature", 1.5 + rng.random())):
                p = probs ** (1 / t)
                preds.append(PredictionSet(epoch, calibrator, split, p / p.sum(axis=1, keepdims=True), labels))
    params = (TrustParams(), MetricParams(density_points=11), SweepParams(clusters=(2, 10), epochs=(2,)))
    boot = BootstrapParams(resamples=30)
    seen = []
    settings = Settings(trust=params[0], metrics=params[1], sweep=params[2], bootstrap=boot)
    got = assessment_tables(preds, settings, progress=lambda items, what, unit: seen.append(what) or items)
    with one_blas_thread():
        want = {**trust_tables(preds, params[0], params[2], boot), **score_tables(preds, params[1], boot)}
    assert list(got) == list(want) and seen == ["assessing"]
    for name in want:
        pd.testing.assert_frame_equal(got[name], want[name], check_exact=True, obj=name)
