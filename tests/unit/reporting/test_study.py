"""The study report (trustcal.study) from small hand-built tables: the rows of its tables and the facts and
directions of its sentences checked by value against the inputs, a number changed to see a sentence turn."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from trustcal.study import findings as fd
from trustcal.study import render as rd
from trustcal.study import tables as tb
from trustcal.study.costs import cost_summary
from trustcal.study.report import (
    Beyond,
    Costs,
    DatasetSection,
    DataSource,
    Provenance,
    Report,
    load_report,
    plain,
    save_report,
)

# --------------------------------------------------------------------------- hand-built tables of one run

# seed → epoch → (accuracy, nll before, nll after, ece before, ece after, temperature, val_loss)
NUMBERS = {
    0: {
        1: (0.50, 1.40, 1.30, 0.10, 0.02, 0.90, 1.00),
        2: (0.70, 0.90, 0.85, 0.05, 0.01, 1.10, 0.80),  # seed 0: lowest validation loss at epoch 2
        3: (0.72, 1.20, 0.80, 0.20, 0.03, 2.00, 0.95),
    },
    1: {
        1: (0.54, 1.50, 1.40, 0.12, 0.04, 0.80, 1.10),
        2: (0.68, 1.00, 0.95, 0.07, 0.02, 1.20, 0.90),
        3: (0.74, 1.10, 0.90, 0.16, 0.05, 1.80, 0.85),  # seed 1: at epoch 3
    },
}


def hand_tables():
    scores, calibration, history = [], [], []
    for seed, epochs in NUMBERS.items():
        for epoch, (acc, nb, na, eb, ea, t, vl) in epochs.items():
            for cal, nll, ece in (("none", nb, eb), ("temperature", na, ea)):
                scores.append(
                    dict(seed=seed, epoch=epoch, calibrator=cal, split="test", accuracy=acc, nll=nll, ece=ece)
                )
                scores.append(
                    dict(seed=seed, epoch=epoch, calibrator=cal, split="validation", accuracy=0, nll=9, ece=9)
                )
            calibration.append(dict(seed=seed, epoch=epoch, calibrator="temperature", temperature=t))
            history.append(dict(seed=seed, epoch=epoch, val_loss=vl, train_loss=0.5, seconds=10.0))
    return pd.DataFrame(scores), pd.DataFrame(calibration), pd.DataFrame(history)


def ms(a, b):
    """mean ± sd (ddof 1) of two values, as the report writes it (sd of two values: |a − b|/√2)."""
    return f"{(a + b) / 2:.3f} ± {abs(a - b) / math.sqrt(2):.3f}"


def test_metrics_rows_pick_first_best_and_last_epoch_per_seed():
    rows = tb.metrics(*hand_tables())
    assert [r.point for r in rows] == ["first", "best", "last"]
    assert [r.epochs for r in rows] == [[1], [2, 3], [3]]
    best = rows[1]  # seed 0 at epoch 2, seed 1 at epoch 3
    assert best.accuracy == [0.70, 0.74] and best.nll_after == [0.85, 0.90] and best.temperature == [1.10, 1.80]
    assert best.ece_before == [0.05, 0.16] and best.ece_after == [0.01, 0.05]
    text = rd.metrics_rows(rows)
    assert text[0] == ["epoch 1", ms(0.50, 0.54), f"{ms(1.40, 1.50)} → {ms(1.30, 1.40)}",
                       f"{ms(0.10, 0.12)} → {ms(0.02, 0.04)}", ms(0.90, 0.80)]  # fmt: skip
    assert text[1][0] == "best validation loss (epoch 2, 3)" and text[1][1] == ms(0.70, 0.74)
    assert text[2][0] == "epoch 3" and text[2][4] == ms(2.00, 1.80)


def hand_trust():
    """Per-label belief: the raw model 0.60 at every epoch; temperature 0.62 but 0.55 at epoch 2 in seed 1;
    isotonic 0.65 + 0.01·epoch; two labels of equal belief and a network row (left out)."""
    rows = []
    for seed in (0, 1):
        for epoch in (1, 2, 3):
            for cal, b in (
                ("none", 0.60),
                ("temperature", 0.55 if (seed, epoch) == (1, 2) else 0.62),
                ("isotonic", 0.65 + 0.01 * epoch),
            ):
                rows += [dict(seed=seed, epoch=epoch, calibrator=cal, label=str(z), belief=b) for z in (0, 1)]
                rows.append(dict(seed=seed, epoch=epoch, calibrator=cal, label="network", belief=0.0))
    return pd.DataFrame(rows)


def test_calibrator_rows_from_hand_built_tables():
    scores, _, history = hand_tables()
    test = scores[scores["split"] == "test"]
    iso = test[test["calibrator"] == "none"].assign(calibrator="isotonic", ece=0.03, nll=0.70)
    scores = pd.concat([test, iso], ignore_index=True).assign(
        ece_lo=lambda d: d["ece"] - 0.01, ece_hi=lambda d: d["ece"] + 0.02
    )
    rows = {r.calibrator: r for r in tb.calibrator_rows(scores, hand_trust(), history)}
    assert list(rows) == ["none", "temperature", "isotonic"]  # METHODS order
    t = rows["temperature"]
    assert t.ece_last.values == [0.03, 0.05] and (t.ece_last.lo, t.ece_last.hi) == pytest.approx((0.03, 0.06))
    assert t.trust_gap == pytest.approx([0.02, -0.05]) and rows["none"].trust_gap is None
    assert rows["isotonic"].trust_late == pytest.approx([0.68, 0.68])  # late_from = min(20, 3) = 3: epoch 3 only
    cells = rd.calibrator_row(rows["temperature"])
    assert cells[0] == "`temperature`" and cells[2] == f"{ms(0.03, 0.05)} [0.030, 0.060]"
    assert cells[6] == ms(0.02, -0.05) and cells[3] == "–"  # no smooth ECE column


def test_calibrator_sentence_names_who_stays_above_the_raw_model():
    c = tb.comparison(hand_trust(), None, 3)
    assert c.gaps["temperature"] == pytest.approx([0.02, -0.05]) and c.gaps["isotonic"] == pytest.approx([0.06, 0.06])
    (line,) = fd.calibrator_findings(c)
    assert (
        "(what the paper says of temperature scaling): `isotonic`; below it at some epoch in every seed: no calibrator"
        in line
    )
    assert "`temperature` -0.015, `isotonic` +0.060)" in line


# --------------------------------------------------------------------------- the verdict's sentences


def claim(cid, mean, lo, hi, verdict, paper="", paper_value=float("nan"), section="§7.1", sd=0.01, **extra):
    return dict(
        claim_id=cid, measured_mean=mean, measured_sd=sd, interval_lo=lo, interval_hi=hi, verdict=verdict,
        paper=paper, paper_value=paper_value, section=section, n_seeds=3, quote="“q”", decision_rule="interval ≤ 0",
        reason=None, seed_verdicts=None, interval_method="percentile", **extra,
    )  # fmt: skip


def by_id(*rows):
    return {r["claim_id"]: r for r in rows}


def test_trust_before_calibration_rises_or_falls_with_its_interval():
    gap = claim("mnist_little_overfitting", 0.22, 0.20, 0.24, "not reproduced", "close", 0.1, "§7.3 (Fig. 3a)")
    const = claim("mnist_trust_before_constant", 0.015, 0.01, 0.02, "reproduced", section="§7.3")
    up = claim("mnist_trust_falls_before", 0.0103, 0.0083, 0.0138, "not reproduced", "decreases", -0.05)
    text = fd.trust_before(by_id(up, gap, const))
    assert text.startswith("MNIST before calibration: trust rises over training (last epochs minus epoch 1: ")
    assert "0.0103 ± 0.01 (not reproduced); the paper: it decreases)" in text
    assert "the losses are not close (final validation − training gap 0.22" in text  # 0.20 > 0.1
    assert text.endswith(": §7.1 and §7.3 cannot both hold.")
    down = {**up, "measured_mean": -0.08, "interval_lo": -0.09, "interval_hi": -0.07, "verdict": "reproduced"}
    close = {**gap, "measured_mean": 0.05, "interval_lo": 0.03, "interval_hi": 0.07}
    text = fd.trust_before(by_id(down, close, const))
    assert "trust falls over training" in text and "the losses are close (" in text
    level = {**up, "interval_lo": -0.01, "interval_hi": 0.02}
    assert "trust neither clearly rises nor falls over training" in fd.trust_before(by_id(level, gap))
    assert "cannot both hold" not in fd.trust_before(by_id(level, gap))  # §7.3's statement not in the verdict


def section(name, ece_before=0.2, ece_after=0.1):
    row = tb.MetricsRow("last", [3], [0.9], [1.0], [0.9], [ece_before], [ece_after], [1.5])
    return DatasetSection(name, name.upper(), "", "", [0], 3, [row], [])


def test_trust_after_above_before_takes_its_direction_from_the_numbers():
    neg = claim("mnist_trust_after_above_before", -0.014, -0.016, -0.012, "not reproduced", "higher", 0.0)
    datasets = [section("mnist")]
    text = fd.trust_above(by_id(neg), datasets)
    assert text.startswith("After calibration trust is not above the before-calibration trust at every epoch")
    assert "the smallest after − before difference is negative (MNIST -0.014 ± 0.01 (not reproduced))" in text
    assert text.endswith("while temperature scaling does lower the ECE.")  # 0.1 < 0.2
    pos = {**neg, "measured_mean": 0.02, "interval_lo": 0.01, "interval_hi": 0.03, "verdict": "reproduced"}
    text = fd.trust_above(by_id(pos), [section("mnist", ece_before=0.1, ece_after=0.2)])
    assert text.startswith(
        "After calibration trust is above the before-calibration trust at every epoch, as the paper says"
    )
    assert "difference is positive" in text and "does not lower the ECE" in text


def test_trust_levels_state_the_papers_values_and_algorithm_1s():
    t = claim("mnist_trust_after", 0.668, 0.665, 0.668, "reproduced", "≈ 0.65", 0.65)
    d = claim("mnist_disbelief_after", 0.331, 0.331, 0.333, "reproduced", "≈ 0.35", 0.35)
    text = fd.trust_levels(by_id(t, d), clusters=10)
    assert ", as the paper says (≈ 0.65 / ≈ 0.35); these levels are what Algorithm 1 gives" in text
    assert "with M = K = 10 (2M/(2M + K) = 0.667" in text
    text = fd.trust_levels(by_id({**t, "verdict": "not reproduced"}, {**d, "verdict": "not reproduced"}), clusters=5)
    assert "not what the paper says" in text and "M = 5, K = 10 (2M/(2M + K) = 0.500" in text
    assert "Algorithm 1 gives an accurate, confident classifier other levels" in text  # 0.668 is not 0.5


def test_late_plateau_reads_the_papers_values_and_epochs_from_the_claims():
    t = claim("cifar10_trust_before_late", 0.703, 0.699, 0.705, "not reproduced", "≈ 0.48", 0.48)
    d = claim("cifar10_disbelief_before_late", 0.296, 0.293, 0.3, "not reproduced", "≈ 0.58", 0.58)
    twice = "reproduced only with the predictions that went through softmax twice"
    authors = {
        "cifar10": [dict(claim_id=c, verdict="reproduced", reason=twice) for c in (t["claim_id"], d["claim_id"])]
    }
    text = fd.late_plateau(by_id(t, d), authors, label="CIFAR-10 (JPEG)")
    assert text.startswith(
        "CIFAR-10 (JPEG) before calibration, from epoch 20 on: trust 0.703 ± 0.01 (not reproduced) (paper 0.48)"
    )
    assert (
        "(paper 0.58). The paper's before-calibration CIFAR-10 numbers are not those of a real run of its CNN; they match"
        in text
    )
    text = fd.late_plateau(by_id({**t, "paper_value": 0.5, "verdict": "reproduced"}, d), {})
    assert "(paper 0.5)" in text and "not those of a real run" not in text


# --------------------------------------------------------------------------- the report object and its README block


def provenance(**kw):
    data = [DataSource("MNIST", {"content-md5": 4}, "")]
    base = dict(command="snakemake --cores 2", commit="abc1234", configs=["config.yaml"], machine="a CPU",
                wall_s=7200.0, train_s=3600.0, clusters=10, data=data)  # fmt: skip
    return Provenance(**{**base, **kw})


def general(cid, text, verdict):
    return {**claim(cid, 0.1, 0.05, 0.15, verdict), "claim": text, "dataset": "c10_res", "scope": "general"}


def hand_report() -> Report:
    scores, calibration, history = hand_tables()
    mnist = DatasetSection("mnist", "MNIST", "", "", [0, 1], 3, tb.metrics(scores, calibration, history), ["trust_grid"],
                           {"trust_grid": "Fig. 1"})  # fmt: skip
    res = DatasetSection("c10_res", "CIFAR-10 (ResNet-20)", "JPEG", "from JPEGs", [0, 1, 2], 30,
                         tb.metrics(scores, calibration, history), [])  # fmt: skip
    rows = [
        general("trust_falls_before", "Before calibration, trust decreases", "not reproduced"),
        general("trust_higher_after", "Trust is higher after calibration", "reproduced"),
        general("trust_steadier_after", "Trust is steadier after calibration", "inconclusive"),
        general("disbelief_rises", "Disbelief rises before calibration", "not reproduced"),
    ]
    verdict = [
        claim("mnist_trust_after", 0.668, 0.665, 0.668, "reproduced", "≈ 0.65", 0.65),
        claim("mnist_disbelief_after", 0.331, 0.331, 0.333, "reproduced", "≈ 0.35", 0.35),
        claim("mnist_trust_falls_before", 0.0103, 0.0083, 0.0138, "not reproduced", "decreases", -0.05),
    ]
    beyond = Beyond(
        {"c10_res": "CIFAR-10 with ResNet-20 and SGD"}, provenance(wall_s=0.0), [res], rows, "c10_res_reproduction.md"
    )
    jobs = pd.DataFrame(
        [dict(rule="train", dataset="mnist", seed=0, calibrator=None, wall_s=100.0, cpu_s=90.0, max_rss_mb=500.0, file=""),
         dict(rule="verdict", dataset=None, seed=None, calibrator=None, wall_s=50.0, cpu_s=40.0, max_rss_mb=100.0, file="")]
    )  # fmt: skip
    summary = cost_summary(jobs)
    costs = Costs(summary=plain(summary.to_dict("records")), train_s=100.0, rest_s=50.0, epoch_s=120.0)
    return Report(provenance(), costs, [mnist], verdict, "Why: r_c is fixed.", beyond=[beyond])


def test_the_readme_block_states_the_inputs_facts():
    block = rd.readme_block(hand_report())
    assert block.startswith(rd.BEGIN) and block.endswith(rd.END)
    assert (
        "**Run.** `snakemake --cores 2` (commit `abc1234`; configuration: `config.yaml`), on a CPU; wall time " in block
    )
    assert (
        "2 h 00 min for the whole workflow, one dataset; training alone (the epochs' own seconds in every seed's "
        in block
    )
    assert "1 h 00 min, so the whole study took 2.00 × its training time." in block
    assert "**Data.** MNIST: 4 files content-md5 — the official data (contents md5-identical)." in block
    assert (
        f"| MNIST | best validation loss (epoch 2, 3) | {ms(0.70, 0.74)} | {ms(0.90, 1.10)} → {ms(0.85, 0.90)} |"
        in block
    )
    assert (
        "**Verdict** on the paper's 3 result statements: 2 reproduced, 1 not reproduced, 0 inconclusive, 0 not comparable"
        in block
    )
    assert (
        "**Cost.** Job wall time of training (`train`): 1 min 40 s; of every other rule: 50.0 s (0.50 × the training)."
        in block
    )
    assert (
        "- MNIST before calibration: trust rises over training" not in block
    )  # no gap claim: the sentence is left out
    beyond = next(p for p in block.split("\n\n") if p.startswith("**Beyond the paper.**"))
    assert beyond == (
        "**Beyond the paper.** Do the paper's findings hold on CIFAR-10 (ResNet-20)? In part: on CIFAR-10 with "
        "ResNet-20 and SGD, 30 epochs, 3 seeds (0, 1, 2), of the 4 general claims (the paper's statements about "
        "training and calibration in general) 1 held, 2 did not and 1 was inconclusive. Held: `trust_higher_after` "
        "(trust is higher after calibration). Not held: `trust_falls_before` (before calibration, trust decreases) "
        "and `disbelief_rises` (disbelief rises before calibration)."
    )
    assert "the runs beyond the paper" in block


def test_beyond_answer_follows_the_verdicts():
    rows = [general("a", "A", "reproduced"), general("b", "B", "reproduced")]
    assert fd.beyond_answer("X", "x", 2, [0], rows).startswith(
        "Do the paper's findings hold on X? Yes: on x, 2 epochs, 1 seed (0),"
    )
    rows = [general("a", "A", "not reproduced"), general("b", "B", "not comparable")]
    text = fd.beyond_answer("X", "x", 2, [0], rows)
    assert (
        "? No: " in text
        and "0 held, 1 did not and 0 were inconclusive (1 could not be judged). Not held: `a` (A)." in text
        and "Held:" not in text
    )


def test_study_md_has_the_beyond_section_and_the_seeds_against_the_papers_protocol():
    report = hand_report()
    text = rd.study_markdown(report)
    assert "**Seeds.** MNIST: 2 (seeds 0, 1), 3 epochs each (the paper: 100, docs/method.md §1)." in text
    report.datasets[0].epochs = 100
    assert "3 (seeds 0, 1), 100 epochs each, the paper's protocol" not in text
    assert "MNIST: 2 (seeds 0, 1), 100 epochs each, the paper's protocol (docs/method.md §1)" in rd.study_markdown(
        report
    )
    assert (
        "![MNIST: Trust opinion per label, before and after calibration (paper Fig. 1)](results/study/mnist_trust_grid.png)"
        in text
    )
    part = text.split("### Beyond the paper: CIFAR-10 (ResNet-20) (JPEG)", 1)[1]
    assert part.lstrip().startswith("CIFAR-10 with ResNet-20 and SGD. **Run.** `snakemake --cores 2` (commit `abc1234`")
    assert "wall time unknown for the whole workflow, one dataset" in part
    assert "**Seeds.** CIFAR-10 (ResNet-20): 3 (seeds 0, 1, 2), 30 epochs each (the paper: 100" in part
    assert "*CIFAR-10 (ResNet-20) here is from JPEGs.*" in part
    assert "#### Does it hold beyond the paper? CIFAR-10 (ResNet-20)" in part
    assert "1 reproduced, 2 not reproduced, 1 inconclusive, 0 not comparable (of 4 general claims" in part
    assert (
        "| Trust is higher after calibration<br>`trust_higher_after` | 0.1 ± 0.01 (n = 3) | [0.05, 0.15] | ≤ 0 | **reproduced** |"
        in part
    )


def test_the_report_survives_its_json(tmp_path):
    report = hand_report()
    report.verdict[0]["interval_lo"] = float("nan")  # a missing number: null in the file
    save_report(report, tmp_path / "report.json")
    assert "NaN" not in (tmp_path / "report.json").read_text()
    back = load_report(tmp_path / "report.json")
    assert back.datasets[0].metrics[1].epochs == [2, 3] and back.beyond[0].datasets[0].seeds == [0, 1, 2]
    assert math.isnan(fd.num(back.verdict[0]["interval_lo"]))
    assert rd.readme_block(back) == rd.readme_block(report) and rd.study_markdown(back) == rd.study_markdown(report)


def test_paired_rows_count_epochs_below_and_above():
    paired = pd.DataFrame(
        [dict(calibrator="iso", against="none", metric="ece", epoch=e, estimate=-0.02, lo=lo, hi=hi, seeds=2)
         for e, lo, hi in ((1, -0.03, 0.01), (2, -0.03, -0.01), (3, -0.04, -0.005))]
    )  # fmt: skip
    (row,) = tb.paired_rows(paired, 3)
    (cell,) = row.cells
    assert (row.calibrator, row.against, cell.below, cell.above) == ("iso", "none", 2, 0)
    assert rd._paired_cell(cell) == "-0.02 [-0.04, -0.005]; 2 / 0"
    assert np.isnan(tb._seed_values(paired.assign(seed=0), [(0, 9)], "iso", "lo")[0])


# --------------------------------------------------------------------------- provenance and the runs beyond the paper


def test_config_files_and_their_merge(tmp_path):
    from trustcal.study.provenance import config_files, run_config

    cmd = "snakemake --cores 2 --configfile config.yaml workflow/study/r.yaml --set-threads train=1"
    assert config_files(cmd) == ["config.yaml", "workflow/study/r.yaml"]
    (tmp_path / "workflow" / "study").mkdir(parents=True)
    (tmp_path / "config.yaml").write_text(
        "epochs: 100\nclusters: 10\ncalibration: {methods: [temperature], fit_on: validation}\n"
    )
    (tmp_path / "workflow/study/r.yaml").write_text("epochs: 30\ncalibration: {methods: [isotonic]}\n")
    config = run_config(tmp_path, config_files(cmd))
    assert config == {"epochs": 30, "clusters": 10, "calibration": {"methods": ["isotonic"], "fit_on": "validation"}}


def test_wall_seconds_add_up_the_invocations_that_finished_a_job(tmp_path):
    from trustcal.study.provenance import wall_seconds

    logs = tmp_path / ".snakemake" / "log"
    logs.mkdir(parents=True)
    (logs / "a.snakemake.log").write_text("[Wed Nov 25 07:00:00 2026]\nFinished job 1.\n[Wed Nov 25 07:30:15 2026]\n")
    (logs / "b.snakemake.log").write_text("[Wed Nov 25 09:00:00 2026]\nFinished job 2.\n[Wed Nov 25 09:00:45 2026]\n")
    (logs / "c.snakemake.log").write_text("[Wed Nov 25 10:00:00 2026]\nNothing.\n[Wed Nov 25 11:00:00 2026]\n")
    assert wall_seconds(tmp_path) == 30 * 60 + 15 + 45  # not the pause between, not the log without a job


def test_data_sources_count_the_manifest_and_keep_the_note(tmp_path):
    from trustcal.study.provenance import data_sources

    (tmp_path / "data" / "cifar10").mkdir(parents=True)
    (tmp_path / "data" / "cifar10" / "raw_manifest.tsv").write_text("file\tverified\na\tmd5\nb\tmd5\nc\tnot checked\n")
    cifar, mnist = data_sources(tmp_path, ["cifar10", "mnist"], {"cifar10": {"text": "from JPEGs"}})
    assert (cifar.title, cifar.counts, cifar.note) == ("CIFAR-10", {"md5": 2, "not checked": 1}, "from JPEGs")
    assert mnist.counts is None
    text = rd.data_paragraph(provenance(data=[cifar, mnist]))
    assert text == "**Data.** CIFAR-10: 2 files md5, 1 file not checked — from JPEGs. MNIST: no raw_manifest.tsv"


def test_a_beyond_run_is_described_from_its_setup_and_command(tmp_path):
    from trustcal.study.build import beyond_command, declared_setups, describe_setup, general_rows, paper_rows

    (tmp_path / "workflow" / "study").mkdir(parents=True)
    (tmp_path / "config.yaml").write_text("setups: {}\n")
    (tmp_path / "workflow/study/config.yaml").write_text("seeds: [0]\n")
    (tmp_path / "workflow/study/res.yaml").write_text(
        "setups: {c10_res: {dataset: cifar10, network: resnet20, recipe: sgd}}\n"
    )
    setups, files = declared_setups(tmp_path)
    assert files == ["workflow/study/res.yaml"] and list(setups) == ["c10_res"]
    assert beyond_command("snakemake --configfile config.yaml", tmp_path) == (
        "snakemake --configfile config.yaml workflow/study/res.yaml"
    )
    assert describe_setup("c10_res", setups) == ("CIFAR-10 (ResNet-20)", "CIFAR-10 with ResNet-20 and SGD", "cifar10")
    table = pd.DataFrame(
        dict(claim_id=["a", "g", "g"], scope=["paper", "general", "general"], dataset=["mnist", "mnist", "c10_res"])
    )
    assert list(paper_rows(table)["claim_id"]) == ["a"]
    assert general_rows(table, "c10_res").index.tolist() == [2]
    assert list(paper_rows(table.drop(columns="scope"))["claim_id"]) == ["a", "g", "g"]  # a verdict before `scope`


def test_number_formats():
    from trustcal.study.markdown import duration, fmt, listing

    assert [duration(s) for s in (26.5, 400, 4020, float("nan"))] == ["26.5 s", "6 min 40 s", "1 h 07 min", "–"]
    assert (fmt(0.000123456), fmt(None), fmt(float("nan"))) == ("0.000123", "–", "–")
    assert (listing(["a"]), listing(["a", "b"]), listing(["a", "b", "c"]), listing([])) == (
        "a",
        "a and b",
        "a, b and c",
        "",
    )


@pytest.mark.parametrize(
    ("wall_s", "train_s", "slots", "expected"),
    [
        (
            5400.0,
            3600.0,
            1,
            "training alone (the epochs' own seconds in every seed's history.csv) 1 h 00 min, so the whole study "
            "took 1.50 × its training time",
        ),
        (
            3960.0,
            3600.0,
            2,
            "training alone (the seeds' epochs in history.csv, 2 train jobs side by side, longest first) 1 h 00 min, "
            "so the whole study took 1.10 × its training time",
        ),
        (3600.0, 7200.0, 1, "2 h 00 min, more than that wall time: resumed from checkpoints"),
    ],
)
def test_the_run_paragraph_gives_a_ratio_only_where_the_wall_time_covers_the_training(wall_s, train_s, slots, expected):
    p = Provenance(
        ".venv/bin/snakemake --cores 2",
        "abc1234",
        ["config.yaml"],
        "a machine",
        wall_s,
        train_s,
        10,
        [],
        train_slots=slots,
    )
    text = rd.run_paragraph(p, 1)
    assert expected in text
    assert ("×" in text) == (wall_s >= train_s)


@pytest.mark.parametrize(
    ("seconds", "slots", "expected"),
    [
        ([30.0, 30.0, 30.0, 1.0, 1.0], 2, 60.0),  # two long seeds side by side, the third beside the short ones
        ([30.0, 30.0, 30.0, 1.0, 1.0], 1, 92.0),  # one after another
        ([50.0, 10.0, 10.0, 10.0], 2, 50.0),  # the long seed alone on a slot: no schedule is shorter
        ([10.0], 4, 10.0),  # a slot of its own does not make a seed faster
        ([], 2, 0.0),
    ],
)
def test_training_alone_is_the_longest_first_schedule_of_the_seeds_on_the_train_slots(seconds, slots, expected):
    from trustcal.study.costs import training_makespan

    assert training_makespan(seconds, slots) == expected


SNAKEMAKE_LOG = """Building DAG of jobs...
Provided cores: {cores}
Rules claiming more threads will be scaled down.
[Wed Nov 25 10:00:00 2026]
localrule prepare:
    jobid: 3
    threads: 1
[Wed Nov 25 10:00:01 2026]
localrule train:
    input: results/data/mnist/splits.npz
    output: results/mnist/seed0/history.csv
    wildcards: dataset=mnist, seed=0
{threads_line}    resources: tmpdir=/tmp, runtime=35
Shell command: None
Select jobs to execute...
"""


@pytest.mark.parametrize(("cores", "threads", "slots"), [(2, 1, 2), (2, 2, 1), (8, 2, 4), (1, 1, 1)])
def test_the_train_slots_are_the_logged_cores_over_a_train_jobs_threads(tmp_path, cores, threads, slots):
    from trustcal.study.provenance import train_slots

    logs = tmp_path / ".snakemake" / "log"
    logs.mkdir(parents=True)
    threads_line = f"    threads: {threads}\n" if threads != 1 else ""  # as Snakemake writes it: no line for 1
    (logs / "2026-11-25T100000.000000.snakemake.log").write_text(
        SNAKEMAKE_LOG.format(cores=cores, threads_line=threads_line)
    )
    (logs / "2026-11-25T110000.000000.snakemake.log").write_text("Building DAG of jobs...\nProvided cores: 16\n")
    assert train_slots(tmp_path) == slots  # the later invocation trained nothing: the one that did counts


def test_the_train_slots_are_one_without_a_log_of_a_train_job(tmp_path):
    from trustcal.study.provenance import train_slots

    assert train_slots(tmp_path) == 1
