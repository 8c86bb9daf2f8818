"""The reproduction verdict on tables built to pass and built to fail each claim of the paper."""

import math

import pandas as pd
import pytest

from trustcal import verdict
from trustcal.io import write_csv
from trustcal.verdict import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED

EPOCHS = 40


def _value(v, epoch):
    return v(epoch) if callable(v) else v


def trust_table(epochs=EPOCHS, b_before=0.6, d_before=0.39, b_after=0.6, d_after=0.39, labels=10, spread=0.0):
    """Per-label opinions; b and d are numbers or functions of the epoch; u = 1 − b − d.

    ``spread`` shifts label z's belief by spread·(z − 4.5) (and its disbelief the other way).
    """
    rows = []
    for epoch in range(1, epochs + 1):
        for calibrated, b, d in ((False, b_before, d_before), (True, b_after, d_after)):
            b, d = _value(b, epoch), _value(d, epoch)
            for z in range(labels):
                shift = spread * (z - 4.5)
                rows.append(dict(epoch=epoch, calibrated=calibrated, label=str(z), belief=b + shift,
                                 disbelief=d - shift, uncertainty=1 - b - d, base_rate=0.5,
                                 positive_evidence=1.0, negative_evidence=1.0))
            rows.append(dict(epoch=epoch, calibrated=calibrated, label="network", belief=b, disbelief=d,
                             uncertainty=1 - b - d, base_rate=0.5, positive_evidence=1.0, negative_evidence=1.0))
    return pd.DataFrame(rows)


def history_table(epochs=EPOCHS, val=None, train=None):
    """Default: training loss falls, validation loss has its minimum at epoch 10 and then rises."""
    e = pd.Series(range(1, epochs + 1))
    val = val or (lambda x: 0.8 + 0.02 * abs(x - 10))
    train = train or (lambda x: 1.5 / x)
    return pd.DataFrame(dict(epoch=e, train_loss=e.map(train), train_accuracy=0.9, val_loss=e.map(val),
                             val_accuracy=0.8, seconds=1.0))


def runs(dataset, seeds=(0,), trust=None, history=None):
    t = pd.concat([(trust if trust is not None else trust_table()).assign(dataset=dataset, seed=s) for s in seeds])
    h = pd.concat([(history if history is not None else history_table()).assign(dataset=dataset, seed=s) for s in seeds])
    return t, h


def verdict_of(claim_id, dataset, **kw):
    table = verdict.evaluate(*runs(dataset, **kw)).set_index("claim_id")
    return table.loc[claim_id]


def rising(a, b, epochs=EPOCHS):
    return lambda e: a + (b - a) * (e - 1) / (epochs - 1)


# claim → (dataset, tables that reproduce it, tables that do not)
CASES = {
    "mnist_trust_after": ("mnist", dict(trust=trust_table(b_after=0.66, d_after=0.33)),
                          dict(trust=trust_table(b_after=0.50, d_after=0.49))),
    "mnist_disbelief_after": ("mnist", dict(trust=trust_table(b_after=0.66, d_after=0.33)),
                              dict(trust=trust_table(b_after=0.40, d_after=0.59))),
    "mnist_stable_after": ("mnist", dict(trust=trust_table(b_after=0.65, d_after=0.34)),
                           dict(trust=trust_table(b_after=rising(0.5, 0.7), d_after=rising(0.49, 0.29)))),
    "mnist_trust_falls_before": ("mnist", dict(trust=trust_table(b_before=rising(0.7, 0.5), d_before=rising(0.29, 0.49))),
                                 dict(trust=trust_table(b_before=0.65, d_before=0.34))),
    "mnist_little_overfitting": ("mnist", dict(history=history_table(val=lambda e: 0.1, train=lambda e: 0.05)),
                                 dict(history=history_table(val=lambda e: 0.1 + 0.005 * e, train=lambda e: 0.0))),
    "cifar10_trust_start": ("cifar10", dict(trust=trust_table(b_before=0.72, b_after=0.7, d_before=0.27, d_after=0.29)),
                            dict(trust=trust_table(b_before=0.5, b_after=0.55))),
    "cifar10_trust_before_late": ("cifar10", dict(trust=trust_table(b_before=lambda e: 0.7 if e < 20 else 0.47, d_before=0.5)),
                                  dict(trust=trust_table(b_before=0.6))),
    "cifar10_disbelief_before_late": ("cifar10", dict(trust=trust_table(b_before=0.42, d_before=lambda e: 0.4 if e < 20 else 0.56)),
                                      dict(trust=trust_table(b_before=0.6, d_before=0.39))),
    "cifar10_trust_after_late": ("cifar10", dict(trust=trust_table(b_after=lambda e: 0.8 if e < 20 else 0.68, d_after=0.31)),
                                 dict(trust=trust_table(b_after=0.55, d_after=0.44))),
    "cifar10_disbelief_after_late": ("cifar10", dict(trust=trust_table(b_after=0.58, d_after=lambda e: 0.3 if e < 20 else 0.41)),
                                     dict(trust=trust_table(b_after=0.75, d_after=0.24))),
    "cifar10_stable_after": ("cifar10", dict(trust=trust_table(b_after=lambda e: 0.8 if e < 20 else 0.7, d_after=0.29)),
                             dict(trust=trust_table(b_after=rising(0.5, 0.8), d_after=rising(0.49, 0.19)))),
    "cifar10_overfitting_onset": ("cifar10", dict(history=history_table()),
                                  dict(history=history_table(val=lambda e: 0.8 + 0.02 * abs(e - 30)))),
}


def test_every_claim_has_a_pass_and_a_fail_case():
    testable = {c.id for c in verdict.CLAIMS if not c.not_comparable}
    assert set(CASES) == testable


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_reproduced_on_tables_built_to_pass(claim_id):
    dataset, passing, _ = CASES[claim_id]
    row = verdict_of(claim_id, dataset, **passing)
    assert row["verdict"] == REPRODUCED, row.to_dict()


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_not_reproduced_on_tables_built_to_fail(claim_id):
    dataset, _, failing = CASES[claim_id]
    row = verdict_of(claim_id, dataset, **failing)
    assert row["verdict"] == NOT_REPRODUCED, row.to_dict()


def test_onset_needs_a_rise_after_the_minimum_in_every_seed():
    # validation minimum at epoch 12, but the training loss rises faster after it: the gap narrows
    h = history_table(val=lambda e: 0.5 + 0.02 * abs(e - 12), train=lambda e: 0.3 + 0.025 * max(e - 12, 0))
    assert verdict.val_loss_minimum(h) == 12
    assert not verdict.gap_grows_after_minimum(h)
    row = verdict_of("cifar10_overfitting_onset", "cifar10", history=h)
    assert row["verdict"] == NOT_REPRODUCED
    assert verdict.gap_grows_after_minimum(history_table())


def test_uncertainty_claim_is_not_comparable_with_the_reason():
    row = verdict_of("cifar10_uncertainty", "cifar10")
    assert row["verdict"] == NOT_COMPARABLE
    assert "cannot come from Algorithm 1" in row["reason"]
    assert row["measured_mean"] == pytest.approx(0.01)  # still reported


def test_dataset_missing_from_the_run_is_not_comparable():
    row = verdict_of("cifar10_trust_start", "mnist")
    assert row["verdict"] == NOT_COMPARABLE and row["reason"] == "cifar10 is not in this run"
    assert math.isnan(row["measured_mean"])


def test_too_few_epochs_is_not_comparable_but_still_measured():
    row = verdict_of("mnist_stable_after", "mnist", trust=trust_table(epochs=3), history=history_table(epochs=3))
    assert row["verdict"] == NOT_COMPARABLE
    assert "needs ≥ 10 epochs; this run has 3" in row["reason"]
    assert row["measured_mean"] == pytest.approx(0.0)
    row = verdict_of("cifar10_trust_before_late", "cifar10", trust=trust_table(epochs=19), history=history_table(epochs=19))
    assert row["verdict"] == NOT_COMPARABLE and "needs ≥ 20 epochs" in row["reason"]


def test_several_seeds_mean_and_sd_and_per_label_spread():
    t = pd.concat([trust_table(b_after=b, d_after=0.98 - b, spread=0.01).assign(seed=s)
                   for s, b in ((0, 0.62), (1, 0.66), (2, 0.70))]).assign(dataset="mnist")
    h = pd.concat([history_table().assign(seed=s) for s in (0, 1, 2)]).assign(dataset="mnist")
    row = verdict.evaluate(t, h).set_index("claim_id").loc["mnist_trust_after"]
    assert row["n_seeds"] == 3
    assert row["measured_mean"] == pytest.approx(0.66)
    assert row["measured_sd"] == pytest.approx(0.04)
    assert row["verdict"] == REPRODUCED
    assert "per label 0.615–0.705" in row["reason"]
    assert row["per_seed"] == "seed 0: 0.62; seed 1: 0.66; seed 2: 0.7"


def test_tolerance_boundary_counts_as_reproduced():
    claim = next(c for c in verdict.CLAIMS if c.id == "cifar10_trust_after_late")
    assert verdict.decide(claim, 0.65) and verdict.decide(claim, 0.75)
    assert not verdict.decide(claim, 0.6499)
    assert verdict.decision_rule(claim) == "|mean − 0.7| ≤ 0.05"


def test_settings_that_differ_from_the_paper_are_flagged():
    notes = verdict.settings_notes(
        {"epochs": 30, "clusters": 20, "trust": {"representative": "mean"}, "calibration": {"fit_on": "test"}},
        ["mnist"])
    text = "; ".join(notes)
    assert "`epochs` is 30 here, 100 in the paper" in text
    assert "`clusters` is 20 here, 10 in the paper" in text
    assert "`representative` is 'mean' here" in text
    assert "cifar10 is not in this run" in text and "fitted on the test set" in text


def test_verdict_stage_writes_markdown_and_csv_from_run_files(tmp_path):
    trust, history = [], []
    for ds in ("mnist", "cifar10"):
        for seed in (0, 1):
            run = tmp_path / "results" / ds / f"seed{seed}"
            write_csv(trust_table(b_after=0.65, d_after=0.345), run / "trust.csv")
            write_csv(history_table(), run / "history.csv")
            trust.append(str(run / "trust.csv"))
            history.append(str(run / "history.csv"))
    md, csv = tmp_path / "results" / "reproduction.md", tmp_path / "results" / "reproduction.csv"
    page = tmp_path / "results" / "reproduction.html"
    verdict.verdict_stage(trust, history, md, csv, {"epochs": EPOCHS, "clusters": 10, "trust": {}, "calibration": {}},
                          out_html=page)
    table = pd.read_csv(csv)
    assert list(table.columns) == list(verdict.VERDICT_COLUMNS)
    assert len(table) == len(verdict.CLAIMS)
    assert set(table["verdict"]) <= {REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE}
    text = md.read_text()
    assert text.startswith("# Reproduction verdict")
    assert "do not edit by hand" in text and "`epochs` is 40 here, 100 in the paper" in text
    for claim in verdict.CLAIMS:
        assert f"`{claim.id}`" in text
    assert table.set_index("claim_id").loc["mnist_trust_after", "n_seeds"] == 2
    page = page.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr>") == len(verdict.CLAIMS) + 1
    assert "<code>mnist_trust_after</code>" in page


def test_paths_must_name_dataset_and_seed(tmp_path):
    write_csv(trust_table(epochs=2), tmp_path / "trust.csv")
    with pytest.raises(verdict.TrustcalError, match="seed"):
        verdict.load_runs([tmp_path / "trust.csv"], verdict.TRUST_COLUMNS, rule="trust")


def test_perfect_classifier_reference_matches_algorithm_1():
    import numpy as np

    from trustcal.trust import TrustParams, trust_opinions

    labels = np.repeat(np.arange(10), 500)
    probs = np.eye(10)[labels]
    for m in (2, 10, 20):
        t = trust_opinions(probs, labels, TrustParams(clusters=m))
        classes = t[t["label"] != "network"]
        b, d = verdict.perfect_classifier_opinion(m)
        assert classes["belief"].mean() == pytest.approx(b, abs=5e-3)  # W = 2 against 5,000 samples
        assert classes["disbelief"].mean() == pytest.approx(d, abs=5e-3)
