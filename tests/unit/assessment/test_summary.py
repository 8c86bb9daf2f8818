"""The summary of an assessment (trustcal.assessment.summary: what ``trustcal assess`` prints, summary.txt and
``--json``), from hand-built tables whose numbers are chosen to be told apart: every printed number is checked
by value, in its place, against the table it comes from (the test split, the network opinion, the paper's two
states, the last epoch), as written out below by hand."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trustcal.assessment import summary as S
from trustcal.assessment.result import Assessment
from trustcal.predictions import InputWarning, PredictionFile

# (epoch, calibrator): accuracy, ECE, NLL, NTS on the test split; belief, disbelief, uncertainty of the network
TEST = {
    (1, "none"): (0.80, 0.1234, 0.50, 0.70, 0.60, 0.10, 0.30),
    (1, "temperature"): (0.80, 0.0456, 0.45, 0.72, 0.65, 0.08, 0.27),
    (1, "vector"): (0.79, 0.0300, 0.44, 0.71, 0.64, 0.09, 0.27),
    (2, "none"): (0.85, 0.1500, 0.60, 0.74, 0.70, 0.10, 0.20),
    (2, "temperature"): (0.85, 0.0200, 0.40, 0.76, 0.75, 0.05, 0.20),
    (2, "vector"): (0.84, 0.0250, 0.41, 0.75, 0.74, 0.06, 0.20),
}
SCORES = ("accuracy", "ece", "nll", "net_trust_score")
OPINION = ("belief", "disbelief", "uncertainty")


def tables(test=TEST, intervals: bool = False) -> dict[str, pd.DataFrame]:
    """scores, trust and calibration tables as the assessment writes them. Decoys that the summary must not
    read: validation rows (all 0.111), class opinions (all 0.222), epoch 2's rows before epoch 1's. With
    ``intervals``: each number x has the interval [x − 0.01, x + 0.02]."""
    keys = sorted(test, key=lambda k: -k[0])  # epoch 2 first: the summary sorts
    scores, trust = [], []
    for epoch, cal in keys:
        values = test[(epoch, cal)]
        row = dict(epoch=epoch, calibrator=cal, split="test", **dict(zip(SCORES, values[:4])), brier=0.9)
        net = dict(epoch=epoch, calibrator=cal, label="network", **dict(zip(OPINION, values[4:])), base_rate=0.5)
        if intervals:
            for d, names in ((row, SCORES), (net, OPINION)):
                for name in names:
                    d[f"{name}_lo"], d[f"{name}_hi"] = d[name] - 0.01, d[name] + 0.02
        scores += [row, dict(row, split="val", **dict.fromkeys(SCORES, 0.111))]
        trust += [dict(net, label=str(z), **dict.fromkeys(OPINION, 0.222)) for z in range(3)] + [net]
    calibration = pd.DataFrame(
        dict(
            epoch=[1, 2, 1, 2],
            calibrator=["temperature", "temperature", "vector", "vector"],
            temperature=[1.5, 2.25, np.nan, np.nan],
        )
    )
    return dict(scores=pd.DataFrame(scores), trust=pd.DataFrame(trust), calibration=calibration)


def assessment(t: dict[str, pd.DataFrame], **kw) -> Assessment:
    files = [
        PredictionFile(Path(f"/in/epoch{e}_{s}.csv"), e, s == "after") for e in (1, 2) for s in ("before", "after")
    ]
    given = dict(
        files=files,
        skipped=[Path("/in/notes.csv")],
        tables=t,
        warnings=[InputWarning("rows", "a.csv", "two rows (--x)", ("x",)), InputWarning("sum", "", "sums")],
        classes=3,
        samples=[100],
        history_file=Path("/in/history.csv"),
        ece_bins=15,
        clusters=7,
        figures=["trust_grid"],
        figures_left_out=["loss_curves", "opinion_triangle"],
        figures_need={"loss_curves": "a training history"},
        class_names=("cat", "dog", "fox"),
    )
    given.update(kw)
    return Assessment(**given)


def test_calibrator_table_is_the_test_split_and_the_network_opinion_per_epoch_and_calibrator():
    got = S.calibrator_table(tables())
    assert list(got.columns) == ["epoch", "calibrator", *SCORES, *OPINION]
    assert list(zip(got["epoch"], got["calibrator"])) == [
        (1, "none"),
        (1, "temperature"),
        (1, "vector"),
        (2, "none"),
        (2, "temperature"),
        (2, "vector"),
    ]
    for _, row in got.iterrows():
        assert tuple(row[list(SCORES + OPINION)]) == TEST[(row["epoch"], row["calibrator"])]


def test_calibrator_table_keeps_each_interval_beside_its_number():
    got = S.calibrator_table(tables(intervals=True))
    names = [c for n in SCORES + OPINION for c in (n, f"{n}_lo", f"{n}_hi")]
    assert list(got.columns) == ["epoch", "calibrator", *names]
    row = got[(got["epoch"] == 2) & (got["calibrator"] == "vector")].iloc[0]
    assert (row["ece"], row["ece_lo"], row["ece_hi"]) == pytest.approx((0.025, 0.015, 0.045), abs=1e-15)
    assert (row["belief"], row["belief_lo"], row["belief_hi"]) == pytest.approx((0.74, 0.73, 0.76), abs=1e-15)


def test_summary_table_is_the_papers_two_states_with_a_calibrated_flag():
    got = S.summary_table(tables())
    assert list(got.columns) == ["epoch", "calibrated", *SCORES, *OPINION]
    assert list(zip(got["epoch"], got["calibrated"])) == [(1, False), (1, True), (2, False), (2, True)]
    assert tuple(got.iloc[3][list(SCORES + OPINION)]) == TEST[(2, "temperature")]


# By hand: the blocks of ECE (6 wide), NTS (6), b (5), d (5), u (7, as 1e-1) are 33 characters; the accuracy is
# printed once (the same before and after); the state titles centred in 33 with dashes.
SUMMARY = """\
trustcal assess: 4 prediction files (epoch1_before.csv, epoch1_after.csv, …), 3 classes, 100 test samples per file
classes: 0 cat, 1 dog, 2 fox
temperature scaling fitted on the validation data: T = 1.5 … 2.25
also fitted on the validation data: vector
training history: /in/history.csv
skipped (no epoch number in the name): notes.csv

                 ------- before calibration ------  ------- after calibration -------
epoch  accuracy     ECE    NTS     b     d       u     ECE    NTS     b     d       u
    1    0.8000  0.1234 0.7000 0.600 0.100 3.0e-01  0.0456 0.7200 0.650 0.080 2.7e-01
    2    0.8500  0.1500 0.7400 0.700 0.100 2.0e-01  0.0200 0.7600 0.750 0.050 2.0e-01

ECE: top-label, 15 bins; NTS: NetTrustScore; b, d, u: network trust opinion (belief, disbelief, uncertainty)

epoch 2, test set:
  none         accuracy 0.8500  ECE 0.1500  NLL 0.6000  NTS 0.7400  b 0.700
  temperature  accuracy 0.8500  ECE 0.0200  NLL 0.4000  NTS 0.7600  b 0.750
  vector       accuracy 0.8400  ECE 0.0250  NLL 0.4100  NTS 0.7500  b 0.740
figures not drawn (need a training history): loss_curves
figures not drawn (need more input): opinion_triangle
2 warnings (warnings.txt)"""


def test_format_summary_prints_every_number_in_its_place():
    assert S.format_summary(assessment(tables())) == SUMMARY


def test_format_summary_prints_both_accuracies_when_calibration_changes_them_and_a_dash_for_nan():
    test = dict(TEST)
    test[(2, "temperature")] = (0.86, 0.02, 0.40, 0.76, math.nan, 0.05, 0.20)
    a = assessment(tables(test), files=[PredictionFile(Path("/in/e2.csv"), 2, False)], warnings=[], skipped=[])
    lines = S.format_summary(a).splitlines()
    # the accuracy in each state's block: 6 + 6 + 6 + 5 + 5 + 7 + 5 separators = 40 wide
    assert lines[0].startswith("trustcal assess: 1 prediction file (e2.csv), 3 classes")
    start = lines.index("") + 1
    assert lines[start : start + 4] == [
        "       ---------- before calibration ----------  ---------- after calibration -----------",
        "epoch     acc    ECE    NTS     b     d       u     acc    ECE    NTS     b     d       u",
        "    1  0.8000 0.1234 0.7000 0.600 0.100 3.0e-01  0.8000 0.0456 0.7200 0.650 0.080 2.7e-01",
        "    2  0.8500 0.1500 0.7400 0.700 0.100 2.0e-01  0.8600 0.0200 0.7600     – 0.050 2.0e-01",
    ]
    assert lines[-1] == "0 warnings"


def test_a_single_set_of_predictions_has_no_epoch_column():
    """Epoch 0 (a file whose name holds no epoch), the raw model alone: no epoch column, the accuracy in the
    state's block (acc 6, ECE 6, NTS 6, b 5, d 5, u 7: 40 wide), no calibrator lines."""
    test = {(0, "none"): TEST[(1, "none")]}
    t = tables(test)
    del t["calibration"]
    a = assessment(t, files=[PredictionFile(Path("/in/p.csv"), 0, None)], history_file=None, class_names=None)
    lines = S.format_summary(a).splitlines()
    assert lines[1:4] == [
        "skipped (no epoch number in the name): notes.csv",
        "",
        "---------- before calibration ----------",
    ]
    assert lines[4:6] == [
        "   acc    ECE    NTS     b     d       u",
        "0.8000 0.1234 0.7000 0.600 0.100 3.0e-01",
    ]
    assert S.calibrator_lines(a) == []


def test_a_long_series_shows_its_first_and_last_fifteen_epochs():
    test = {(e, c): (0.5, e / 1000, 0.5, 0.5, 0.5, 0.25, 0.25) for e in range(1, 33) for c in ("none", "temperature")}
    lines = S.format_summary(assessment(tables(test))).splitlines()
    start = lines.index("epoch  accuracy     ECE    NTS     b     d       u     ECE    NTS     b     d       u") + 1
    epochs = [line[:5].strip() for line in lines[start : start + 31]]
    assert epochs == [str(e) for e in range(1, 16)] + ["…"] + [str(e) for e in range(18, 33)]
    assert lines[start + 15] == "    …  (2 more epochs in scores.csv and trust.csv)"
    assert lines[start + 16].startswith("   18    0.5000  0.0180")


def test_calibrator_lines_give_the_last_epoch_with_its_intervals():
    a = assessment(tables(intervals=True))
    assert S.calibrator_lines(a) == [
        "",
        "epoch 2, test set, [95 % bootstrap interval]:",
        "  none         accuracy 0.8500 [0.8400, 0.8700]  ECE 0.1500 [0.1400, 0.1700]  NLL 0.6000 [0.5900, 0.6200]  "
        "NTS 0.7400 [0.7300, 0.7600]  b 0.700 [0.690, 0.720]",
        "  temperature  accuracy 0.8500 [0.8400, 0.8700]  ECE 0.0200 [0.0100, 0.0400]  NLL 0.4000 [0.3900, 0.4200]  "
        "NTS 0.7600 [0.7500, 0.7800]  b 0.750 [0.740, 0.770]",
        "  vector       accuracy 0.8400 [0.8300, 0.8600]  ECE 0.0250 [0.0150, 0.0450]  NLL 0.4100 [0.4000, 0.4300]  "
        "NTS 0.7500 [0.7400, 0.7700]  b 0.740 [0.730, 0.760]",
    ]


def test_calibrator_lines_of_one_set_with_intervals_say_test_set():
    test = {(0, "none"): TEST[(1, "none")]}
    a = assessment(tables(test, intervals=True))
    assert S.calibrator_lines(a) == [
        "",
        "test set, [95 % bootstrap interval]:",
        "  none  accuracy 0.8000 [0.7900, 0.8200]  ECE 0.1234 [0.1134, 0.1434]  NLL 0.5000 [0.4900, 0.5200]  "
        "NTS 0.7000 [0.6900, 0.7200]  b 0.600 [0.590, 0.620]",
    ]


def test_summary_dict_holds_the_numbers_the_files_and_the_warnings():
    test = dict(TEST)
    test[(1, "none")] = (0.80, math.nan, 0.50, 0.70, 0.60, 0.10, 0.30)  # an undefined ECE: null
    a = assessment(tables(test))
    got = S.summary_dict(a, wording=lambda message, options: message.replace("--x", "--extra"))
    assert got["classes"] == 3 and got["test_samples"] == [100] and got["clusters"] == 7 and got["ece_bins"] == 15
    assert got["class_names"] == ["cat", "dog", "fox"] and got["history"] == "/in/history.csv"
    assert got["skipped"] == ["/in/notes.csv"]
    assert got["files"][1] == dict(path="/in/epoch1_after.csv", epoch=1, calibrated=True)
    assert [(r["epoch"], r["calibrated"]) for r in got["epochs"]] == [(1, False), (1, True), (2, False), (2, True)]
    assert got["epochs"][0]["ece"] is None and got["epochs"][0]["nll"] == 0.5
    assert got["epochs"][3] == dict(epoch=2, calibrated=True, **dict(zip(SCORES + OPINION, TEST[(2, "temperature")])))
    vector = [r for r in got["calibrators"] if r["calibrator"] == "vector"]
    assert [r["ece"] for r in vector] == [0.03, 0.025] and [r["belief"] for r in vector] == [0.64, 0.74]
    assert got["temperatures"] == [dict(epoch=1, temperature=1.5), dict(epoch=2, temperature=2.25)]
    assert got["figures"] == ["trust_grid"] and got["figures_left_out"] == ["loss_curves", "opinion_triangle"]
    assert got["warnings"] == [
        dict(code="rows", file="a.csv", message="two rows (--extra)"),
        dict(code="sum", file="", message="sums"),
    ]
    t = tables()
    del t["calibration"]
    assert S.summary_dict(assessment(t))["temperatures"] == []
