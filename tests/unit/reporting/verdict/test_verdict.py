"""The reproduction verdict on tables built to pass and built to fail each claim of the paper."""

import math
import re

import numpy as np
import pandas as pd
import pytest
from helpers.shared import SHARED

from trustcal.errors import TrustcalError
from trustcal.files import write_csv
from trustcal.reporting import verdict
from trustcal.reporting.verdict import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED
from trustcal.stages import verdict_settings, verdict_stage

EPOCHS = 40


def _value(v, epoch):
    return v(epoch) if callable(v) else v


def trust_table(epochs=EPOCHS, b_before=0.6, d_before=0.39, b_after=0.6, d_after=0.39, labels=10, spread=0.0):
    """Per-label opinions; b and d are numbers or functions of the epoch; u = 1 − b − d.

    ``spread`` shifts label z's belief by spread·(z − 4.5) (and its disbelief the other way).
    """
    rows = []
    for epoch in range(1, epochs + 1):
        for calibrator, b, d in (("none", b_before, d_before), ("temperature", b_after, d_after)):
            b, d = _value(b, epoch), _value(d, epoch)
            for z in range(labels):
                shift = spread * (z - 4.5)
                rows.append(
                    dict(
                        epoch=epoch,
                        calibrator=calibrator,
                        label=str(z),
                        belief=b + shift,
                        disbelief=d - shift,
                        uncertainty=1 - b - d,
                        base_rate=0.5,
                        positive_evidence=1.0,
                        negative_evidence=1.0,
                    )
                )
            rows.append(
                dict(
                    epoch=epoch,
                    calibrator=calibrator,
                    label="network",
                    belief=b,
                    disbelief=d,
                    uncertainty=1 - b - d,
                    base_rate=0.5,
                    positive_evidence=1.0,
                    negative_evidence=1.0,
                )
            )
    return pd.DataFrame(rows)


def history_table(epochs=EPOCHS, val=None, train=None):
    """Default: training loss falls, validation loss has its minimum at epoch 10 and then rises."""
    e = pd.Series(range(1, epochs + 1))
    val = val or (lambda x: 0.8 + 0.02 * abs(x - 10))
    train = train or (lambda x: 1.5 / x)
    return pd.DataFrame(
        dict(epoch=e, train_loss=e.map(train), train_accuracy=0.9, val_loss=e.map(val), val_accuracy=0.8, seconds=1.0)
    )


def make_run(trust=None, history=None, replicates=None):
    return verdict.run_from_tables(
        trust if trust is not None else trust_table(), history if history is not None else history_table(), replicates
    )


def runs_of(dataset, seeds=(0,), **kw):
    return {dataset: {s: make_run(**kw) for s in seeds}}


def verdict_of(claim_id, dataset, runs=None, **kw):
    table = verdict.evaluate(runs if runs is not None else runs_of(dataset, **kw)).set_index("claim_id")
    return table.loc[claim_id]


def rising(a, b, epochs=EPOCHS):
    return lambda e: a + (b - a) * (e - 1) / (epochs - 1)


def peak_at(epoch, top, base):
    return lambda e: top if e == epoch else base


def late(early, later):
    return lambda e: early if e < 20 else later


FALLING = dict(b_before=rising(0.7, 0.5), d_before=rising(0.29, 0.49))
FALLING_AFTER = dict(b_after=rising(0.7, 0.5), d_after=rising(0.29, 0.49))
FLAT_HISTORY = history_table(val=lambda e: 0.1, train=lambda e: 0.05)
RISING_GAP = history_table(val=lambda e: 0.1 + 0.005 * e, train=lambda e: 0.0)

# claim → (dataset, tables that reproduce it, tables that do not); u = 1 − b − d
CASES = {
    "mnist_trust_start_before": ("mnist", dict(b_before=0.65, d_before=0.34), dict(b_before=0.5)),
    "mnist_trust_start_similar": ("mnist", dict(), dict(b_after=0.7, d_after=0.29)),
    "mnist_trust_falls_before": ("mnist", FALLING, dict()),
    "mnist_trust_after": ("mnist", dict(b_after=0.66, d_after=0.33), dict(b_after=0.5, d_after=0.49)),
    "mnist_trust_after_constant": ("mnist", dict(), FALLING_AFTER),
    "mnist_trust_after_above_before": ("mnist", dict(b_after=0.65, d_after=0.34), dict()),
    "mnist_trust_steadier_after": ("mnist", FALLING, dict()),
    "mnist_disbelief_rises_before": ("mnist", FALLING, dict()),
    "mnist_disbelief_after": ("mnist", dict(b_after=0.64, d_after=0.35), dict(b_after=0.8, d_after=0.19)),
    "mnist_disbelief_after_constant": ("mnist", dict(), FALLING_AFTER),
    "mnist_disbelief_after_below_before": ("mnist", dict(b_after=0.7, d_after=0.29), dict()),
    "mnist_uncertainty_start_similar": ("mnist", dict(), dict(b_after=0.3, d_after=0.3)),
    "mnist_uncertainty_rises_before": ("mnist", dict(b_before=rising(0.6, 0.5)), dict()),
    "mnist_uncertainty_after_stable": ("mnist", dict(), dict(b_after=rising(0.6, 0.4))),
    "mnist_uncertainty_after_below_before": ("mnist", dict(b_before=0.5), dict()),
    "mnist_little_overfitting": ("mnist", dict(history=FLAT_HISTORY), dict(history=RISING_GAP)),
    "mnist_little_difference": ("mnist", dict(), dict(b_after=0.7, d_after=0.29)),
    "mnist_trust_before_constant": ("mnist", dict(), FALLING),
    "cifar10_trust_start_before": ("cifar10", dict(b_before=0.7, d_before=0.29), dict(b_before=0.5)),
    "cifar10_trust_start_after": ("cifar10", dict(b_after=0.72, d_after=0.27), dict(b_after=0.5)),
    "cifar10_trust_peak_before": ("cifar10", dict(b_before=peak_at(5, 0.75, 0.6)), dict()),
    "cifar10_trust_peak_after": ("cifar10", dict(b_after=peak_at(5, 0.82, 0.6), d_after=0.17), dict()),
    "cifar10_trust_before_late": ("cifar10", dict(b_before=late(0.7, 0.47), d_before=0.5), dict()),
    "cifar10_trust_before_late_constant": ("cifar10", dict(), FALLING),
    "cifar10_trust_after_late": (
        "cifar10",
        dict(b_after=late(0.8, 0.68), d_after=0.31),
        dict(b_after=0.55, d_after=0.44),
    ),
    "cifar10_trust_after_late_constant": ("cifar10", dict(), FALLING_AFTER),
    "cifar10_disbelief_start_before": ("cifar10", dict(), dict(b_before=0.79, d_before=0.2)),
    "cifar10_disbelief_start_after": ("cifar10", dict(), dict(b_after=0.79, d_after=0.2)),
    "cifar10_disbelief_rises_before": ("cifar10", dict(b_before=0.42, d_before=late(0.4, 0.56)), dict()),
    "cifar10_disbelief_before_late": ("cifar10", dict(b_before=0.42, d_before=late(0.4, 0.56)), dict()),
    "cifar10_disbelief_before_late_constant": ("cifar10", dict(), FALLING),
    "cifar10_disbelief_after_late": (
        "cifar10",
        dict(b_after=0.58, d_after=late(0.3, 0.41)),
        dict(b_after=0.75, d_after=0.24),
    ),
    "cifar10_disbelief_after_late_constant": ("cifar10", dict(), FALLING_AFTER),
    "cifar10_uncertainty_rises_before": ("cifar10", dict(b_before=late(0.6, 0.5)), dict()),
    "cifar10_trust_after_above_before": ("cifar10", dict(b_after=0.65, d_after=0.34), dict()),
    "cifar10_disbelief_after_below_before": ("cifar10", dict(b_after=0.7, d_after=0.29), dict()),
    "cifar10_uncertainty_after_below_before": ("cifar10", dict(b_before=0.5), dict()),
    "cifar10_trust_steadier_after": ("cifar10", FALLING, dict()),
    "cifar10_overfitting_onset": (
        "cifar10",
        dict(history=history_table()),
        dict(history=history_table(val=lambda e: 0.8 + 0.02 * abs(e - 30))),
    ),
    "cifar10_decline_with_overfitting": (
        "cifar10",
        dict(b_before=lambda e: 0.7 - 0.01 * abs(e - 10)),
        dict(b_before=lambda e: 0.7 - 0.01 * abs(e - 35)),
    ),
}
HISTORY_KEYS = ("history",)


def case_runs(dataset, tables):
    history = tables.get("history")
    trust = trust_table(**{k: v for k, v in tables.items() if k not in HISTORY_KEYS})
    return runs_of(dataset, trust=trust, history=history)


def test_every_claim_has_a_pass_and_a_fail_case():
    testable = {c.id for c in verdict.CLAIMS if not c.not_comparable and c.versus is None}
    assert set(CASES) == testable


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_reproduced_on_tables_built_to_pass(claim_id):
    dataset, passing, _ = CASES[claim_id]
    row = verdict_of(claim_id, dataset, runs=case_runs(dataset, passing))
    assert row["verdict"] == REPRODUCED, row.to_dict()


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_not_reproduced_on_tables_built_to_fail(claim_id):
    dataset, _, failing = CASES[claim_id]
    row = verdict_of(claim_id, dataset, runs=case_runs(dataset, failing))
    assert row["verdict"] == NOT_REPRODUCED, row.to_dict()


def test_cross_dataset_claim_compares_the_two_seed_means():
    calm, moved = trust_table(), trust_table(b_after=0.7, d_after=0.29)
    both = {"mnist": {0: make_run(calm)}, "cifar10": {0: make_run(moved), 1: make_run(moved)}}
    row = verdict_of("mnist_smaller_difference_than_cifar10", "mnist", runs=both)
    assert row["verdict"] == REPRODUCED and row["measured_mean"] == pytest.approx(-0.1)
    both = {"mnist": {0: make_run(moved)}, "cifar10": {0: make_run(calm)}}
    assert verdict_of("mnist_smaller_difference_than_cifar10", "mnist", runs=both)["verdict"] == NOT_REPRODUCED
    only = verdict_of("mnist_smaller_difference_than_cifar10", "mnist", runs={"mnist": {0: make_run(calm)}})
    assert only["verdict"] == NOT_COMPARABLE and only["reason"] == "cifar10 not in this run"


def replicates_around(trust, shifts):
    """Bootstrap arrays (as trust_bootstrap.npz holds them) whose belief is the table's plus one shift per resample."""
    run = make_run(trust)
    base = {c: run.opinions[c][0] for c in verdict.COMPONENTS}  # epochs × state × labels
    reps = {
        c: np.stack([base[c] + (shift if c == "belief" else 0.0) for shift in shifts], axis=2)
        for c in verdict.COMPONENTS
    }  # epochs × state × B × labels
    return dict(epochs=run.epochs, **reps)


def test_interval_straddling_the_band_edge_is_inconclusive():
    trust = trust_table(b_after=0.69, d_after=0.3)  # 0.69: inside 0.6 … 0.7, 0.01 from the edge
    shifts = np.linspace(-0.03, 0.03, 201)
    run = make_run(trust, replicates=replicates_around(trust, shifts))
    row = verdict_of("mnist_trust_after", "mnist", runs={"mnist": {0: run}})
    assert row["verdict"] == verdict.INCONCLUSIVE
    assert row["boot_lo"] == pytest.approx(0.69 - 0.0285, abs=1e-3)  # 2.5 % quantile of the shifts
    assert row["interval_lo"] < 0.69 < 0.7 < row["interval_hi"]
    narrow = make_run(trust, replicates=replicates_around(trust, shifts / 10))
    assert verdict_of("mnist_trust_after", "mnist", runs={"mnist": {0: narrow}})["verdict"] == REPRODUCED


def test_seed_spread_widens_the_interval_by_student_t():
    seeds = {s: make_run(trust_table(b_after=b, d_after=0.98 - b)) for s, b in ((0, 0.62), (1, 0.66), (2, 0.70))}
    row = verdict_of("mnist_trust_after", "mnist", runs={"mnist": seeds})
    assert row["n_seeds"] == 3 and row["measured_mean"] == pytest.approx(0.66)
    assert row["measured_sd"] == pytest.approx(0.04)
    half = verdict.t975(2) * 0.04 / math.sqrt(3)  # 4.303 · sd/√n = 0.0994
    assert (row["interval_lo"], row["interval_hi"]) == pytest.approx((0.66 - half, 0.66 + half))
    assert row["verdict"] == verdict.INCONCLUSIVE  # the seeds alone span more than the ± 0.05 band
    assert row["per_seed"] == "seed 0: 0.62; seed 1: 0.66; seed 2: 0.7"


def replicates_after_shifted(trust, pattern):
    """Bootstrap arrays whose belief after calibration is the table's plus ``pattern[b]`` on resample b (every
    epoch and label), and whose belief before calibration is the table's: after − before moves by ``pattern``."""
    run = make_run(trust)
    reps = {}
    for c in verdict.COMPONENTS:
        base = np.repeat(run.opinions[c][0][:, :, None, :], len(pattern), axis=2)  # epochs × state × B × labels
        if c == "belief":
            base[:, verdict.AFTER] += np.asarray(pattern)[None, :, None]
        reps[c] = base
    return dict(epochs=run.epochs, **reps)


def test_comparative_claim_takes_the_paired_interval_with_seeds():
    """Three seeds with after − before = 0.02, 0.03, 0.04 and test-set noise of ± 0.03 that differs between the
    seeds (orthogonal ± patterns): none of it is shared, so the paired interval is the seeds' own t interval,
    0.03 ± t₂·0.01/√3, above 0: reproduced. The percentile quadrature counts that noise a second time (in the
    bootstrap of the seed mean, on top of the seeds' sd) and straddles 0."""
    from scipy.linalg import hadamard

    patterns = 0.03 * hadamard(64)[[1, 2, 4]].astype(float)  # mean 0 each, orthogonal, their sum symmetric
    seeds = {}
    for s, gap in enumerate((0.02, 0.03, 0.04)):
        trust = trust_table(b_after=0.6 + gap, d_after=0.39 - gap)
        seeds[s] = make_run(trust, replicates=replicates_after_shifted(trust, patterns[s]))
    row = verdict_of("mnist_trust_after_above_before", "mnist", runs={"mnist": seeds})
    half = verdict.t975(2) * 0.01 / math.sqrt(3)
    assert row["interval_method"] == "paired" and row["measured_mean"] == pytest.approx(0.03)
    assert (row["interval_lo"], row["interval_hi"]) == pytest.approx((0.03 - half, 0.03 + half), rel=1e-3)
    assert row["verdict"] == REPRODUCED
    quadrature = verdict.Estimate.of({s: verdict.lowest_difference("belief")(r) for s, r in seeds.items()})
    lo, hi = quadrature.interval(0.95)
    assert lo < 0 < hi and row["boot_lo"] == pytest.approx(0.0)  # the seed mean's bootstrap alone reaches 0
    level = verdict_of("mnist_trust_after", "mnist", runs={"mnist": seeds})
    assert level["interval_method"] == "quadrature"  # a level, not a comparison: unchanged


def test_paired_interval_of_one_seed_is_its_percentile_interval():
    trust = trust_table(b_after=0.63, d_after=0.36)
    shifts = np.linspace(-0.04, 0.04, 199)  # B = 199: the 2.5 % and 97.5 % Weibull positions are the 5th and 195th
    run = make_run(trust, replicates=replicates_after_shifted(trust, shifts))
    row = verdict_of("mnist_trust_after_above_before", "mnist", runs={"mnist": {0: run}})
    assert (row["interval_lo"], row["interval_hi"]) == pytest.approx((0.03 + shifts[4], 0.03 + shifts[194]), rel=1e-9)
    assert row["verdict"] == verdict.INCONCLUSIVE  # 0.03 − 0.0384 < 0


def test_seeds_that_disagree_are_named():
    seeds = {0: make_run(trust_table(b_after=0.66, d_after=0.33)), 1: make_run(trust_table(b_after=0.5, d_after=0.49))}
    row = verdict_of("mnist_trust_after", "mnist", runs={"mnist": seeds})
    assert "seeds disagree: reproduced in seed 0; not reproduced in seed 1" in row["reason"]


def test_flagged_epochs_are_named_when_the_verdict_rests_on_them():
    # before calibration trust is 0.48 only at the flagged epochs 20 and 30; elsewhere 0.7
    trust = trust_table(b_before=lambda e: 0.48 if e in (20, 30) else 0.7, d_before=0.29, epochs=30)
    run = make_run(trust, history_table(epochs=30))
    run = run.without([e for e in range(21, 30)] + list(range(2, 20)))  # the author's epochs: 1, 20, 30
    table = verdict.evaluate({"cifar10": {0: run}}, flagged={"cifar10": [20, 30]}).set_index("claim_id")
    row = table.loc["cifar10_trust_before_late"]
    assert row["verdict"] == REPRODUCED
    assert "reproduced only with the predictions that went through softmax twice" in row["reason"]
    assert math.isnan(row["without_flagged"]) and row["verdict_without_flagged"] == NOT_COMPARABLE
    start = table.loc["cifar10_trust_start_before"]
    assert start["without_flagged"] == pytest.approx(0.7) and start["verdict_without_flagged"] == REPRODUCED
    assert "softmax twice" not in start["reason"]  # epoch 1 is not flagged: nothing to say


def test_flagged_state_leaves_the_other_state_of_that_epoch():
    # the author's CIFAR files: every before-calibration file and epoch 1 after calibration went through softmax twice
    trust = trust_table(b_before=0.48, d_before=0.5, b_after=lambda e: 0.9 if e == 1 else 0.7, d_after=0.29)
    run = make_run(trust)
    flagged = [(e, False) for e in range(1, EPOCHS + 1)] + [(1, True)]
    table = verdict.evaluate({"cifar10": {0: run}}, flagged={"cifar10": flagged}).set_index("claim_id")
    after = table.loc["cifar10_trust_after_late"]  # epochs ≥ 20 after calibration: untouched
    assert after["verdict"] == REPRODUCED and "softmax twice" not in after["reason"]
    constant = table.loc["cifar10_trust_after_late_constant"]
    assert constant["without_flagged"] == pytest.approx(0.0)
    steadier = table.loc["cifar10_trust_steadier_after"]  # needs the before-calibration curve: gone
    assert steadier["verdict_without_flagged"] == NOT_COMPARABLE
    assert (
        verdict.describe_flagged(flagged[:2] + [(1, True)])
        == "before calibration: epochs 1, 2; after calibration: epoch 1"
    )


def test_onset_needs_a_rise_after_the_minimum_in_every_seed():
    # validation minimum at epoch 12, but the training loss rises faster after it: the gap narrows
    h = history_table(val=lambda e: 0.5 + 0.02 * abs(e - 12), train=lambda e: 0.3 + 0.025 * max(e - 12, 0))
    assert verdict.val_loss_minimum(h) == 12
    assert not verdict.gap_grows_after_minimum(h)
    row = verdict_of("cifar10_overfitting_onset", "cifar10", history=h)
    assert row["verdict"] == NOT_REPRODUCED and "condition fails in seed 0" in row["reason"]
    assert verdict.gap_grows_after_minimum(history_table())


def test_uncertainty_levels_are_not_comparable_with_the_reason():
    row = verdict_of("cifar10_uncertainty_levels", "cifar10")
    assert row["verdict"] == NOT_COMPARABLE
    assert "cannot come from Algorithm 1" in row["reason"]
    assert row["measured_mean"] == pytest.approx(0.01)  # still reported


def test_dataset_missing_from_the_run_is_not_comparable():
    row = verdict_of("cifar10_trust_start_before", "mnist")
    assert row["verdict"] == NOT_COMPARABLE and row["reason"] == "cifar10 not in this run"
    assert math.isnan(row["measured_mean"])


def test_too_few_epochs_is_not_comparable_but_still_measured():
    row = verdict_of(
        "mnist_trust_after_constant", "mnist", trust=trust_table(epochs=3), history=history_table(epochs=3)
    )
    assert row["verdict"] == NOT_COMPARABLE
    assert "needs ≥ 10 epochs; this run has 3" in row["reason"]
    assert row["measured_mean"] == pytest.approx(0.0)
    row = verdict_of(
        "cifar10_trust_before_late", "cifar10", trust=trust_table(epochs=19), history=history_table(epochs=19)
    )
    assert row["verdict"] == NOT_COMPARABLE and "needs ≥ 20 epochs" in row["reason"]


def test_decision_bands_and_their_wording():
    claim = next(c for c in verdict.CLAIMS if c.id == "cifar10_trust_after_late")
    assert verdict.decide(claim, 0.65, 0.75) == REPRODUCED  # the band's edges count as inside
    assert verdict.decide(claim, 0.6, 0.64) == NOT_REPRODUCED
    assert verdict.decide(claim, 0.6, 0.7) == verdict.INCONCLUSIVE
    assert verdict.decision_rule(claim) == "interval within 0.65 … 0.75"
    higher = next(c for c in verdict.CLAIMS if c.id == "cifar10_trust_after_above_before")
    assert verdict.decision_rule(higher) == "interval > 0"
    assert verdict.decide(higher, 0.0, 0.1) == verdict.INCONCLUSIVE  # a sign must be certain
    assert verdict.decide(higher, -0.1, 0.0) == NOT_REPRODUCED


def test_every_claim_quotes_the_paper_and_tensions_name_real_claims():
    ids = {c.id for c in verdict.CLAIMS}
    assert len(ids) == len(verdict.CLAIMS)
    paper = SHARED / "papers" / "ouattara-sl-calibration.txt"
    text = paper.read_text() if paper.exists() else None
    for claim in verdict.CLAIMS:
        assert claim.quote.startswith("“") and claim.quote.endswith("”"), claim.id
        if text is None:
            continue
        for fragment in re.findall(r"[“…]\s*([^“”…\[\]]{12,}?)\s*(?=[…”\[])", claim.quote):
            assert fragment.strip() in text, (claim.id, fragment)
    for tension in verdict.TENSIONS:
        assert set(tension.claims) <= ids


def test_invariance_of_positive_evidence_is_measured():
    note = verdict.invariance_note({"mnist": {0: make_run()}})
    assert "b/u = r_c/W is constant" in note and "changes by at most 0 " in note


def test_settings_that_differ_from_the_paper_are_flagged():
    notes = verdict.settings_notes(
        verdict_settings(
            {"epochs": 30, "clusters": 20, "trust": {"representative": "mean"}, "calibration": {"fit_on": "test"}}
        ),
        ["mnist"],
    )
    text = "; ".join(notes)
    assert "`epochs` is 30 here, 100 in the paper" in text
    assert "`clusters` is 20 here, 10 in the paper" in text
    assert "`representative` is 'mean' here" in text
    assert "cifar10 is not in this run" in text and "fitted on the test set" in text


def test_verdict_stage_writes_markdown_csv_and_html_from_run_files(tmp_path):
    trust, history, boot = [], [], []
    for ds in ("mnist", "cifar10"):
        for seed in (0, 1):
            run = tmp_path / "results" / ds / f"seed{seed}"
            table = trust_table(b_after=0.65, d_after=0.345)
            write_csv(table, run / "trust.csv")
            write_csv(history_table(), run / "history.csv")
            np.savez(run / "trust_bootstrap.npz", **replicates_around(table, [-0.01, 0.0, 0.01]))
            trust.append(str(run / "trust.csv"))
            history.append(str(run / "history.csv"))
            boot.append(str(run / "trust_bootstrap.npz"))
    md, csv = tmp_path / "results" / "reproduction.md", tmp_path / "results" / "reproduction.csv"
    page = tmp_path / "results" / "reproduction.html"
    settings = {"epochs": EPOCHS, "clusters": 10, "trust": {}, "calibration": {}, "bootstrap": {"resamples": 3}}
    verdict_stage(trust, history, md, csv, settings, out_html=page, bootstrap_paths=boot)
    table = pd.read_csv(csv)
    assert list(table.columns) == list(verdict.VERDICT_COLUMNS)
    general = table[table["scope"] == "general"]
    table = table[table["scope"] == "paper"]
    assert list(table["claim_id"]) == [c.id for c in verdict.CLAIMS]  # the paper's claims first, as ever
    n_general = len(verdict.general_claims(verdict.CLAIMS))
    assert len(general) == 2 * n_general  # each general claim on each of the two runs
    row = table.set_index("claim_id").loc["mnist_trust_after"]
    assert row["n_seeds"] == 2 and row["boot_lo"] == pytest.approx(0.65 - 0.0095)
    text = md.read_text()
    assert text.startswith("# Reproduction verdict")
    assert "do not edit by hand" in text and "`epochs` is 40 here, 100 in the paper" in text
    assert "## Statements of the paper that contradict each other" in text and "1.22" in text
    for claim in verdict.CLAIMS:
        assert f"`{claim.id}`" in text
    page = page.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr>") == len(verdict.CLAIMS) + 1 + n_general + 1
    assert "<code>mnist_trust_after</code>" in page
    assert re.search(r"`mnist_trust_after_above_before`\) \| [^|]+ \| [^|]+ \| \[[^]]+\] paired \|", text)


def test_paths_must_name_dataset_and_seed(tmp_path):
    write_csv(trust_table(epochs=2), tmp_path / "trust.csv")
    with pytest.raises(TrustcalError, match="seed"):
        verdict.load_runs([tmp_path / "trust.csv"], [tmp_path / "trust.csv"])


def test_perfect_classifier_reference_matches_algorithm_1():
    from trustcal.measures.trust import TrustParams, trust_opinions

    labels = np.repeat(np.arange(10), 500)
    probs = np.eye(10)[labels]
    for m in (2, 10, 20):
        t = trust_opinions(probs, labels, TrustParams(clusters=m))
        classes = t[t["label"] != "network"]
        b, d = verdict.perfect_classifier_opinion(m)
        assert classes["belief"].mean() == pytest.approx(b, abs=5e-3)  # W = 2 against 5,000 samples
        assert classes["disbelief"].mean() == pytest.approx(d, abs=5e-3)
