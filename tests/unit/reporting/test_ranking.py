"""Which calibrator wins (trustcal.study.ranking; docs/method.md §12.8): the differences from temperature
scaling and the win rates on hand-computed tiny tables (exact values), their invariants, the files and the
line the README block gains from them."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from tests.unit.reporting.test_study import hand_report
from trustcal.study import ranking as rk
from trustcal.study import render as rd
from trustcal.study.ranking_figure import write_ranking
from trustcal.study.report import Ranking, load_report, save_report

# --------------------------------------------------------------------------- differences


def paired_table(rows):
    """(calibrator, against, metric, epoch, estimate, lo, hi) → a paired table of 3 seeds."""
    cols = ["calibrator", "against", "metric", "epoch", "estimate", "lo", "hi"]
    df = pd.DataFrame(rows, columns=cols)
    return df.assign(se=0.01, df=2, seeds=3)


def history(val_loss):
    """seed → [validation loss per epoch 1, 2, …]."""
    return pd.DataFrame(
        [dict(seed=s, epoch=e + 1, val_loss=v) for s, losses in val_loss.items() for e, v in enumerate(losses)]
    )


# seed 0 is best at epoch 1, seed 1 at epoch 3; their mean (1.0, 0.9, 0.95) at epoch 2
HISTORY = history({0: [0.5, 0.6, 0.7], 1: [1.5, 1.2, 1.2]})


def test_the_best_validation_epoch_of_the_seed_mean_and_of_each_seed():
    assert rk.mean_best_epoch(HISTORY) == 2
    assert rk.seed_best_epochs(HISTORY) == {0: 1, 1: 2}  # seed 1: the earliest of the tie at 1.2
    assert rk.mean_best_epoch(history({0: [1.0, 0.5, 0.5]})) == 2  # a tie: the earliest


@pytest.mark.parametrize(
    "lo, hi, expected",
    [(-0.2, -0.01, "better"), (0.01, 0.2, "worse"), (-0.1, 0.1, "no difference"), (-0.1, 0.0, "no difference"),
     (np.nan, 0.1, "no interval")],
)  # fmt: skip
def test_a_cell_is_better_only_where_its_interval_lies_below_zero(lo, hi, expected):
    assert rk.verdict(lo, hi) == expected


def test_differences_at_the_best_validation_and_last_epoch():
    rows = [
        ("vector", "temperature", "nll", 2, -0.10, -0.20, -0.05),
        ("vector", "temperature", "nll", 3, 0.00, -0.10, 0.10),
        ("matrix", "temperature", "nll", 2, 0.05, 0.01, 0.09),
        ("matrix", "temperature", "nll", 3, 0.02, -0.01, 0.05),
        ("vector", "temperature", "ece", 2, 0.01, np.nan, np.nan),
        ("vector", "temperature", "nll", 1, -9.0, -9.5, -8.5),  # neither epoch: left out
        ("vector", "none", "nll", 2, -1.0, -1.1, -0.9),  # against the raw model: left out
    ]
    d = rk.differences(paired_table(rows), HISTORY)
    got = {(r.point, r.epoch, r.calibrator, r.metric): (r.estimate, r.verdict) for r in d.itertuples()}
    assert got[("best", 2, "vector", "nll")] == (-0.10, "better")
    assert got[("last", 3, "vector", "nll")] == (0.0, "no difference")
    assert got[("best", 2, "matrix", "nll")] == (0.05, "worse")
    assert got[("last", 3, "matrix", "nll")] == (0.02, "no difference")
    assert got[("best", 2, "vector", "ece")] == (0.01, "no interval")
    assert np.isnan(got[("last", 3, "matrix", "ece")][0])  # a cell the table lacks: missing, not made up
    assert set(d["against"]) == {"temperature"} and set(d["seeds"].dropna()) == {3}
    assert list(d["calibrator"].unique()) == ["vector", "matrix"]  # trustcal.calibration.METHODS' order
    assert rk.differences(paired_table(rows[-1:]), HISTORY).empty  # no rows against temperature


# --------------------------------------------------------------------------- win rates


def test_pairwise_wins_count_a_tie_half():
    values = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 1.0]])
    wins, pairs = rk.pairwise_wins(values)
    np.testing.assert_array_equal(wins, [[2, 1, 0], [0.5, 0.5, 2]])
    np.testing.assert_array_equal(pairs, [[2, 2, 2], [2, 2, 2]])
    wins, pairs = rk.pairwise_wins(np.array([[1.0, np.nan, 3.0]]))  # a calibrator missing on a set
    np.testing.assert_array_equal(wins, [[1, 0, 0]])
    np.testing.assert_array_equal(pairs, [[1, 0, 1]])
    wins, pairs = rk.wins_against(values, 0)
    np.testing.assert_array_equal(wins, [[0, 0, 0], [0, 0.5, 1]])
    np.testing.assert_array_equal(pairs, [[0, 1, 1], [0, 1, 1]])


def sets_of(values, clusters):
    """Prediction sets: one row per (set, calibrator) of ``values`` (set → {calibrator: NLL}); ``clusters``:
    set → (run, seed)."""
    return pd.DataFrame(
        [
            dict(run=clusters[k][0], seed=clusters[k][1], epoch=k, calibrator=c, value=v)
            for k, row in values.items()
            for c, v in row.items()
        ]
    )


# two clusters: (a, 0) with two sets, (a, 1) with one
TINY = {
    1: {"none": 3.0, "temperature": 1.0, "vector": 2.0},
    2: {"none": 3.0, "temperature": 2.0, "vector": 2.0},
    3: {"none": 1.0, "temperature": 3.0, "vector": 2.0},
}
CLUSTERS = {1: ("a", 0), 2: ("a", 0), 3: ("a", 1)}


def test_win_rates_by_hand_with_the_intervals_two_clusters_allow():
    w = rk.win_rates(sets_of(TINY, CLUSTERS), resamples=2000, seed=1)
    others = w[w["against"] == "others"].set_index("calibrator")
    # cluster (a, 0): temperature 2 + 1.5 of 4, vector 1 + 1.5 of 4, none 0 of 4; cluster (a, 1): 0, 1, 2 of 2
    assert others.loc["temperature", "estimate"] == pytest.approx(3.5 / 6)
    assert others.loc["vector", "estimate"] == pytest.approx(3.5 / 6)
    assert others.loc["none", "estimate"] == pytest.approx(2 / 6)
    # resamples are (a,0)(a,0), (a,0)(a,1) or (a,1)(a,1): the interval spans the two extremes
    assert (others.loc["temperature", "lo"], others.loc["temperature", "hi"]) == pytest.approx((0.0, 3.5 / 4))
    assert (others.loc["vector", "lo"], others.loc["vector", "hi"]) == pytest.approx((0.5, 2.5 / 4))
    assert (others.loc["none", "lo"], others.loc["none", "hi"]) == pytest.approx((0.0, 1.0))
    assert others.loc["temperature", "rank"] == 1 and others.loc["vector", "rank"] == 1  # a tie shares rank 1
    assert others.loc["none", "rank"] == 3 and (others.loc["none", "rank_lo"], others.loc["none", "rank_hi"]) == (1, 3)
    assert set(others["prediction_sets"]) == {3} and set(others["clusters"]) == {2}
    vs = w[w["against"] == "temperature"].set_index("calibrator")
    assert "temperature" not in vs.index
    # vector against temperature: lost, tied, won → 1.5 of 3; none: lost, lost, won → 1 of 3
    assert vs.loc["vector", "estimate"] == pytest.approx(0.5) and vs.loc["none", "estimate"] == pytest.approx(1 / 3)
    assert (vs.loc["vector", "lo"], vs.loc["vector", "hi"]) == pytest.approx((0.25, 1.0))
    assert vs.loc["vector", "verdict"] == "no difference"


def test_a_calibrator_best_everywhere_wins_with_the_interval_one_to_one():
    rng = np.random.default_rng(0)
    values, clusters = {}, {}
    for k, (run, seed) in enumerate(itertools.product("ab", range(3))):
        row = dict(zip(["none", "temperature", "vector", "isotonic", "ets"], rng.normal(1.0, 0.1, 5)))
        row["sms"] = min(row.values()) - 0.01  # a calibrator the figures' names may not know
        values[k], clusters[k] = row, (run, seed)
    w = rk.win_rates(sets_of(values, clusters))
    best = w[(w["against"] == "others") & (w["calibrator"] == "sms")].iloc[0]
    assert (best.estimate, best.lo, best.hi, best["rank"], best.rank_lo, best.rank_hi) == (1, 1, 1, 1, 1, 1)
    vs = w[(w["against"] == "temperature") & (w["calibrator"] == "sms")].iloc[0]
    assert (vs.estimate, vs.lo, vs.hi, vs.verdict) == (1, 1, 1, "better")


def test_win_rates_average_one_half_on_every_resample():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(12, 6)).round(1)  # rounded: ties happen
    values[3, 2] = values[3, 4]
    clusters = np.repeat(np.arange(6), 2)
    wins, pairs = rk.pairwise_wins(values)
    w = np.zeros((6, 6))
    n = np.zeros((6, 6))
    np.add.at(w, clusters, wins)
    np.add.at(n, clusters, pairs)
    replicates = rk.cluster_bootstrap(w, n, resamples=500, seed=3)
    np.testing.assert_allclose(replicates.mean(axis=1), 0.5)
    np.testing.assert_allclose((w.sum(0) / n.sum(0)).mean(), 0.5)
    table = pd.DataFrame(
        [dict(run="r", seed=int(clusters[p]), epoch=p, calibrator=f"c{c}", value=values[p, c])
         for p in range(12) for c in range(6)]
    )  # fmt: skip
    est = rk.win_rates(table, baseline="c0")
    assert est.loc[est["against"] == "others", "estimate"].mean() == pytest.approx(0.5)


def test_the_bootstrap_is_fixed_by_its_seed():
    table = sets_of(TINY, CLUSTERS)
    pd.testing.assert_frame_equal(rk.win_rates(table), rk.win_rates(table))


def test_prediction_sets_are_each_seeds_best_and_last_epoch():
    scores = pd.DataFrame(
        [dict(seed=s, epoch=e, calibrator=c, split=split, nll=10 * s + e + (c == "vector") / 10)
         for s in (0, 1) for e in (1, 2, 3) for c in ("temperature", "vector") for split in ("test", "val")]
    )  # fmt: skip
    hist = history({0: [0.5, 0.6, 0.7], 1: [1.5, 1.4, 1.2]})  # seed 1's best is its last
    sets = rk.prediction_sets(scores, hist)
    assert sorted(set(zip(sets["seed"], sets["epoch"], sets["point"]))) == [
        (0, 1, "best"),
        (0, 3, "last"),
        (1, 3, "best, last"),
    ]
    assert sets.loc[(sets["seed"] == 1) & (sets["calibrator"] == "vector"), "value"].tolist() == [pytest.approx(13.1)]


# --------------------------------------------------------------------------- the table, the words, the files


def run_tables(vector_nll_shift: float, seeds=(0, 1, 2)):
    """A run of 3 epochs: vector's test NLL is ``vector_nll_shift`` from temperature's everywhere."""
    scores, rows = [], []
    for s in seeds:
        for e in (1, 2, 3):
            for c, shift in (("none", 0.3), ("temperature", 0.0), ("vector", vector_nll_shift), ("isotonic", 0.1)):
                scores.append(dict(seed=s, epoch=e, calibrator=c, split="test", nll=1.0 + shift, ece=0.02, brier=0.3))
    for e in (1, 2, 3):
        for m in rk.METRICS:
            for c, shift in (("none", 0.3), ("vector", vector_nll_shift), ("isotonic", 0.1)):
                d = shift if m == "nll" else 0.0
                rows.append((c, "temperature", m, e, d, d - 0.01, d + 0.01))
    hist = history({s: [1.0, 0.8, 0.9] for s in seeds})
    return rk.RunTables(scores=pd.DataFrame(scores), history=hist, paired=paired_table(rows))


RUNS = {"mnist": run_tables(0.05), "cifar10": run_tables(-0.05)}
TITLES = {"mnist": "MNIST", "cifar10": "CIFAR-10"}


def ranking():
    table = rk.ranking_table(RUNS)
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    return table, Ranking(runs=TITLES, rows=rows)


def test_the_ranking_table_is_tidy_and_covers_every_run():
    table, _ = ranking()
    assert list(table.columns) == rk.COLUMNS
    diff = table[table["table"] == "difference"]
    assert len(diff) == 2 * 2 * 3 * 3  # runs × points × calibrators (none, vector, isotonic) × metrics
    assert set(diff.loc[(diff["calibrator"] == "vector") & (diff["metric"] == "nll") & (diff["run"] == "cifar10"),
                        "verdict"]) == {"better"}  # fmt: skip
    assert set(diff.loc[(diff["calibrator"] == "vector") & (diff["run"] == "mnist"), "verdict"]) == {
        "worse",
        "no difference",
    }
    wins = table[table["table"] == "win_rate"]
    assert set(wins["run"]) == {"all", "mnist", "cifar10"}
    overall = wins[(wins["run"] == "all") & (wins["against"] == "others")].set_index("calibrator")
    # per set: on CIFAR-10 vector beats all 3 others and temperature 2, on MNIST the other way round; 6 sets
    # per run (each seed's best epoch 2 and last 3)
    assert overall.loc["vector", "estimate"] == pytest.approx((6 * 3 + 6 * 2) / 36)
    assert overall.loc["temperature", "estimate"] == pytest.approx((6 * 2 + 6 * 3) / 36)
    assert overall.loc["isotonic", "estimate"] == pytest.approx(1 / 3) and overall.loc["none", "estimate"] == 0
    assert overall.loc["temperature", "prediction_sets"] == 12 and overall.loc["temperature", "clusters"] == 6


def test_the_line_names_who_beats_temperature_scaling_and_where():
    _, r = ranking()
    line = rk.summary_line(r)
    assert line.startswith("**Which calibrators beat temperature scaling.** ")
    assert "): vector scaling on CIFAR-10 (NLL at the best-validation and the last epoch); none on MNIST." in line
    assert "over 12 prediction sets" in line and line.endswith("([ranking](results/study/calibrator_ranking.md)).")
    assert "\n" not in line


def test_the_ranking_survives_the_reports_json_and_joins_the_readme_block(tmp_path):
    report = hand_report()
    block = rd.readme_block(report)
    assert "Which calibrators beat" not in block
    _, report.ranking = ranking()
    save_report(report, tmp_path / "report.json")
    again = load_report(tmp_path / "report.json")
    assert rk.summary_line(again.ranking) == rk.summary_line(report.ranking)
    with_line = rd.readme_block(again)
    assert rk.summary_line(report.ranking) in with_line
    assert with_line.replace(rk.summary_line(report.ranking) + "\n\n", "") == block  # nothing else changes
    assert "### Which calibrator wins" in rd.study_markdown(again)


def test_write_ranking_writes_the_three_files_from_the_tables(tmp_path):
    for run, t in RUNS.items():
        for name in ("scores", "history", "paired"):
            getattr(t, name).to_csv(tmp_path / f"{run}_{name}.csv.gz", index=False)
    ranking = write_ranking(tmp_path, TITLES)
    table = pd.read_csv(tmp_path / "calibrator_ranking.csv")
    assert len(table) == len(ranking.rows) and list(table.columns) == rk.COLUMNS
    text = (tmp_path / "calibrator_ranking.md").read_text()
    assert "### CIFAR-10" in text and "**better**" in text and "## Ranking by test-NLL win rate" in text
    assert "best validation: epoch 2 (the seeds' own: 2, 2, 2)" in text
    from PIL import Image

    assert Image.open(tmp_path / "calibrator_ranking.png").size[0] == 1400
    assert write_ranking(tmp_path, {}) is None  # no run: nothing to rank


def test_ranking_only_renders_the_documents_again_from_the_report(tmp_path):
    """``study_report.py --ranking-only``: the ranking from results/study/'s tables alone; with report.json
    there, the report, study.md and the README block gain it and change nowhere else."""
    from trustcal.study import BEGIN, END, REPORT_FILE, write_ranking_only, write_readme

    repo, study = tmp_path / "repo", tmp_path / "repo" / "results" / "study"
    study.mkdir(parents=True)
    for run, t in (("mnist", RUNS["mnist"]), ("c10_res", RUNS["cifar10"])):  # hand_report's two runs
        for name in ("scores", "history", "paired"):
            getattr(t, name).to_csv(study / f"{run}_{name}.csv.gz", index=False)
    assert write_ranking_only(study).runs == {"mnist": "MNIST", "c10_res": "c10_res"}  # no report: names only
    save_report(hand_report(), study / REPORT_FILE)
    (repo / "README.md").write_text(f"# title\n\n{BEGIN}\n{END}\n\nafter\n")
    before = write_readme(repo)
    ranking = write_ranking_only(study, repo)
    assert ranking.runs == {"mnist": "MNIST", "c10_res": "CIFAR-10 (ResNet-20) (JPEG)"}  # with the data note's label
    assert load_report(study / REPORT_FILE).ranking == ranking
    line = rk.summary_line(ranking)
    readme = (repo / "README.md").read_text()
    assert readme.startswith("# title\n\n") and readme.endswith(f"{END}\n\nafter\n")
    assert readme.replace(line + "\n\n", "") == f"# title\n\n{before}\n\nafter\n"
    assert "vector scaling on CIFAR-10 (ResNet-20) (JPEG) (NLL at the best-validation and the last epoch)" in line
    assert line.replace("](results/study/", "](") in (study / "study.md").read_text()
    assert {p.name for p in study.glob("calibrator_ranking.*")} == set(rk.FILES)


def test_the_figure_takes_any_calibrator_and_a_run_without_paired_differences(tmp_path):
    """A calibrator the figures do not name (a neutral colour, its key as name), one run without a paired
    table (win rates only): drawn, a row per calibrator."""
    from trustcal.study.ranking_figure import ranking_figure

    t = run_tables(-0.05)
    t.scores = pd.concat([t.scores, t.scores[t.scores["calibrator"] == "vector"].assign(calibrator="newcal", nll=0.5)])
    table = rk.ranking_table({"mnist": t, "other": rk.RunTables(scores=t.scores, history=t.history)})
    assert set(table.loc[table["table"] == "difference", "run"]) == {"mnist"}
    top = table[(table["table"] == "win_rate") & (table["run"] == "all") & (table["against"] == "others")].iloc[0]
    assert (top.calibrator, top.estimate, top.lo, top.hi) == ("newcal", 1, 1, 1)
    fig = ranking_figure(table, {"mnist": "MNIST", "other": "Other"}, tmp_path / "f.png")
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert "newcal" in labels and "vector scaling" in labels
    assert (tmp_path / "f.png").stat().st_size > 10_000
