"""The verdict beyond the paper's two runs: the general claims (``general:`` in paper_claims.yaml) judged on every
run present, the table "Does it hold beyond the paper?", and the K/M dependence of the trust levels."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trustcal.files import write_csv, write_npz
from trustcal.reporting import verdict
from trustcal.reporting.verdict import NOT_REPRODUCED, REPRODUCED, render
from trustcal.reporting.verdict.runs import fmt_value
from trustcal.stages import verdict_settings, verdict_stage

GOLDEN = Path(__file__).with_name("paper_rows_golden.csv")  # the paper's rows before the general claims existed
E = 40  # epochs


def trust_table(b_before, d_before, b_after, d_after, labels=10, epochs=E):
    """Per-label opinions (every label alike); each mass a number or a function of the epoch; u = 1 − b − d."""
    rows = []
    for epoch in range(1, epochs + 1):
        for calibrator, b, d in (("none", b_before, d_before), ("temperature", b_after, d_after)):
            b = b(epoch) if callable(b) else b
            d = d(epoch) if callable(d) else d
            for label in [*map(str, range(labels)), "network"]:
                rows.append(
                    dict(
                        epoch=epoch,
                        calibrator=calibrator,
                        label=label,
                        belief=b,
                        disbelief=d,
                        uncertainty=1 - b - d,
                        base_rate=0.5,
                        positive_evidence=1.0,
                        negative_evidence=1.0,
                    )
                )
    return pd.DataFrame(rows)


def history_table(epochs=E):
    """Training loss falls; validation loss has its minimum at epoch 10 and then rises."""
    e = pd.Series(range(1, epochs + 1))
    return pd.DataFrame(
        dict(
            epoch=e,
            train_loss=1.5 / e,
            train_accuracy=0.9,
            val_loss=0.8 + 0.02 * (e - 10).abs(),
            val_accuracy=0.8,
            seconds=1.0,
        )
    )


def replicates(table, shifts, labels=10):
    """trust_bootstrap.npz arrays (epochs × state × B × labels): the table's opinions with the belief after
    calibration moved by one shift per resample (disbelief the other way)."""
    t = table.assign(calibrated=table["calibrator"] == "temperature")
    order = [*map(str, range(labels)), "network"]
    epochs = sorted(t["epoch"].unique())
    out = {"epochs": np.array(epochs)}
    for c in ("belief", "disbelief", "uncertainty"):
        x = np.stack(
            [
                np.stack(
                    [t[(t["epoch"] == e) & (t["calibrated"] == s)].set_index("label").loc[order, c].to_numpy(float)
                     for s in (False, True)]
                )
                for e in epochs
            ]
        )  # fmt: skip
        reps = np.repeat(x[:, :, None, :], len(shifts), axis=2)
        sign = {"belief": 1.0, "disbelief": -1.0, "uncertainty": 0.0}[c]
        reps[:, 1] += sign * np.asarray(shifts)[None, :, None]
        out[c] = reps
    return out


def falling(a, b):
    return lambda e: a + (b - a) * (e - 1) / (E - 1)


# run → seed → trust table: MNIST-like (trust falls before calibration, flat after), CIFAR-10-like (a seed of
# each kind), a third run of 10 classes and one of 100 (lower levels: 2M/(2M + K) is 0.167 at M = 10)
PAPER_RUNS = {
    "mnist": {
        0: lambda: trust_table(falling(0.70, 0.55), falling(0.29, 0.44), 0.66, 0.33),
        1: lambda: trust_table(falling(0.71, 0.57), falling(0.28, 0.42), 0.665, 0.325),
    },
    "cifar10": {
        0: lambda: trust_table(falling(0.72, 0.47), falling(0.27, 0.52), 0.70, 0.29),
        1: lambda: trust_table(falling(0.70, 0.49), falling(0.29, 0.50), 0.68, 0.31),
    },
}


def write_runs(root: Path, runs=PAPER_RUNS, shifts=(-0.01, 0.0, 0.01)):
    """results/{run}/seed{seed}/ trust.csv, history.csv and trust_bootstrap.npz of ``runs``: the lists of paths
    the verdict rule passes to :func:`trustcal.stages.verdict_stage`."""
    trust, history, boot = [], [], []
    for ds, seeds in runs.items():
        for seed, make in seeds.items():
            run = root / "results" / ds / f"seed{seed}"
            table = make()
            labels = int((table["label"] != "network").sum() / table["epoch"].nunique() / 2)
            write_csv(table, run / "trust.csv")
            write_csv(history_table(), run / "history.csv")
            write_npz(run / "trust_bootstrap.npz", **replicates(table, shifts, labels))
            trust.append(run / "trust.csv")
            history.append(run / "history.csv")
            boot.append(run / "trust_bootstrap.npz")
    return trust, history, boot


CONFIG = {"epochs": E, "clusters": 10, "trust": {}, "calibration": {}, "bootstrap": {"resamples": 3}}
SETTINGS = verdict_settings(CONFIG)  # as the verdict stage reads CONFIG


SETUPS = {"cifar10_resnet20": {"dataset": "cifar10", "network": "resnet20", "recipe": "sgd"}}
BEYOND = {
    **PAPER_RUNS,
    # after calibration trust well above before at every epoch, and steadier: the comparisons hold
    "fashion_mnist": {s: lambda s=s: trust_table(falling(0.60, 0.50), falling(0.39, 0.49), 0.70 + 0.01 * s, 0.29 - 0.01 * s) for s in (0, 1)},
    # after calibration trust below before: "higher after" fails here
    "cifar10_resnet20": {s: lambda s=s: trust_table(0.70, 0.29, 0.60 - 0.01 * s, 0.39 + 0.01 * s) for s in (0, 1)},
    # 100 classes at the levels M = 10 gives them (2M/(2M + K) = 0.167)
    "cifar100": {0: lambda: trust_table(0.15, 0.84, 0.17, 0.82, labels=100)},
}  # fmt: skip


@pytest.fixture(scope="module")
def beyond(tmp_path_factory):
    """The verdict stage on the paper's two runs and three more: (table, Markdown, HTML)."""
    root = tmp_path_factory.mktemp("beyond")
    trust, history, boot = write_runs(root, BEYOND)
    md, csv, page = (root / "results" / f"reproduction.{ext}" for ext in ("md", "csv", "html"))
    verdict_stage(trust, history, md, csv, {**CONFIG, "setups": SETUPS}, out_html=page, bootstrap_paths=boot)
    return pd.read_csv(csv), md.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")


def test_the_general_claims_are_judged_on_every_run_and_the_paper_claims_on_their_own(beyond):
    table, _, _ = beyond
    paper, general = table[table["scope"] == "paper"], table[table["scope"] == "general"]
    assert list(paper["claim_id"]) == [c.id for c in verdict.CLAIMS]  # once each, on the run it names
    assert set(paper["dataset"]) == {"mnist", "cifar10", "mnist − cifar10"}
    assert not paper["claim_id"].isin(general["claim_id"]).any()
    gids = [g.id for g in verdict.general_claims(verdict.CLAIMS)]
    assert list(general["claim_id"].unique()) == gids
    runs = ["mnist", "cifar10", "cifar100", "cifar10_resnet20", "fashion_mnist"]  # the paper's first, then by name
    for gid in gids:
        assert list(general.loc[general["claim_id"] == gid, "dataset"]) == runs, gid
    # a level is not general: not judged beyond its dataset
    levels = [
        c.id
        for c in verdict.CLAIMS
        if c.measure_text.startswith(("mean over", "label-mean belief before calibration at"))
    ]
    assert "mnist_trust_after" in levels and not any(c.general for c in verdict.CLAIMS if c.id in levels)
    assert not general["claim_id"].str.contains("trust_after$|start_before$").any()
    by = general.set_index(["claim_id", "dataset"])
    higher = by.loc["trust_higher_after"]
    assert (higher["interval_method"] == "paired").all()  # the paired interval with seeds, as the paper's claim
    assert higher.at["fashion_mnist", "verdict"] == REPRODUCED
    assert higher.at["fashion_mnist", "measured_mean"] == pytest.approx(0.105)  # after − before: 0.10, 0.11
    assert 0 < higher.at["fashion_mnist", "interval_lo"] < 0.105 < higher.at["fashion_mnist", "interval_hi"]
    assert higher.at["cifar10_resnet20", "verdict"] == NOT_REPRODUCED
    assert by.at[("trust_steadier_after", "fashion_mnist"), "verdict"] == REPRODUCED
    assert by.at[("trust_steadier_after", "cifar100"), "verdict"] == NOT_REPRODUCED  # flat: 0 is not > 0
    assert (
        by.at[("trust_higher_after", "cifar100"), "verdict"] == REPRODUCED
        and by.at[("trust_higher_after", "cifar100"), "n_seeds"] == 1
    )


def test_a_general_claim_on_a_paper_run_is_the_paper_claim_measured_alike(beyond):
    table, _, _ = beyond
    rows = table.set_index(["claim_id", "dataset"])
    for gid, cid, ds in (
        ("trust_higher_after", "mnist_trust_after_above_before", "mnist"),
        ("trust_higher_after", "cifar10_trust_after_above_before", "cifar10"),
        ("disbelief_lower_after", "cifar10_disbelief_after_below_before", "cifar10"),
        ("trust_falls_with_overfitting", "cifar10_decline_with_overfitting", "cifar10"),
    ):
        ours, theirs = rows.loc[(gid, ds)], rows.loc[(cid, ds)]
        for col in ("measured_mean", "interval_lo", "interval_hi", "verdict", "decision_rule", "interval_method"):
            assert ours[col] == theirs[col], (gid, col)


def test_the_section_has_a_column_per_run_titled_by_the_registry(beyond):
    table, text, page = beyond
    section = text.split(f"## {verdict.GENERAL_TITLE}", 1)[1].split("\n## ", 1)[0]
    header = next(line for line in section.splitlines() if line.startswith("| Claim |"))
    assert header == (
        "| Claim | Reproduced when | MNIST (MLP) | CIFAR-10 (CNN) | CIFAR-100 (CNN) | CIFAR-10 (ResNet-20) "
        "| Fashion-MNIST (MLP) |"
    )
    # after the paper's claims, before the contradictions
    assert text.index("`cifar10_decline_with_overfitting`") < text.index(verdict.GENERAL_TITLE)
    assert text.index(verdict.GENERAL_TITLE) < text.index("## Statements of the paper that contradict each other")
    row = next(line for line in section.splitlines() if "(`trust_higher_after`)" in line)
    r = table[(table["claim_id"] == "trust_higher_after") & (table["dataset"] == "fashion_mnist")].iloc[0]
    cell = (
        f"**reproduced**: {fmt_value(r.measured_mean)} ± {fmt_value(r.measured_sd)} (n = 2), "
        f"[{fmt_value(r.interval_lo)}, {fmt_value(r.interval_hi)}] paired"
    )
    assert row.split(" | ")[-1].rstrip(" |") == cell
    assert "`trust_higher_after` (§7.1; §7.2, §7.3): generalises `mnist_trust_after_above_before`, " in section
    assert f"<h2>{verdict.GENERAL_TITLE}</h2>" in page and "<th>CIFAR-10 (ResNet-20)</th>" in page
    assert f'<td style="background:{render.VERDICT_COLOURS[REPRODUCED]}"><strong>reproduced</strong>: ' in page


def test_the_section_states_how_the_levels_depend_on_k_and_m(beyond):
    _, text, page = beyond
    section = text.split(f"## {verdict.GENERAL_TITLE}", 1)[1]
    assert (
        "Here M = 10; K = 10 (MNIST (MLP), CIFAR-10 (CNN), CIFAR-10 (ResNet-20), Fashion-MNIST (MLP)): "
        "2M/(2M + K) = 0.667, K/(2M + K) = 0.333; K = 100 (CIFAR-100 (CNN)): 2M/(2M + K) = 0.167, "
        "K/(2M + K) = 0.833." in section
    )
    assert "2M/(2M + K) = 0.167" in page


def test_the_level_sentence_gives_2m_over_2m_plus_k():
    text = verdict.level_dependence({"a": 10, "b": 100}, 10, {"a": "A", "b": "B"})
    assert "M = 10; K = 10 (A): 2M/(2M + K) = 0.667, K/(2M + K) = 0.333; K = 100 (B): 2M/(2M + K) = 0.167" in text
    assert "K/(2M + K) = 0.833" in text
    assert "M = 2; K = 100 (b): 2M/(2M + K) = 0.038" in verdict.level_dependence({"b": 100}, 2)  # 4/104
    other = verdict.level_dependence({"a": 10}, 10, midpoint=False)
    assert "K = 10 (a)." in other and "0.667" not in other  # the formula holds for midpoint representatives only


def test_with_the_papers_two_runs_the_paper_rows_are_as_before(tmp_path):
    """reproduction.csv's rows of the paper's claims, and their columns, are those the verdict wrote before the
    general claims existed (GOLDEN, written by that code from these runs); the section still appears."""
    trust, history, boot = write_runs(tmp_path)
    md, csv = tmp_path / "reproduction.md", tmp_path / "reproduction.csv"
    verdict_stage(trust, history, md, csv, CONFIG, bootstrap_paths=boot)
    table = pd.read_csv(csv)
    assert list(table.columns) == [*pd.read_csv(GOLDEN, nrows=0).columns, "scope"]
    paper = table[table["scope"] == "paper"].drop(columns="scope").reset_index(drop=True)
    pd.testing.assert_frame_equal(paper, pd.read_csv(GOLDEN), check_exact=False, rtol=1e-12, atol=1e-15)
    assert (table["scope"] == "paper").sum() == len(verdict.CLAIMS) and table["scope"].iloc[-1] == "general"
    general = table[table["scope"] == "general"]
    assert set(general["dataset"]) == {"mnist", "cifar10"}
    assert f"## {verdict.GENERAL_TITLE}" in md.read_text(encoding="utf-8")


def test_an_unknown_run_is_named_as_itself_and_assess_writes_no_general_rows(tmp_path):
    runs = {
        "mnist": {0: verdict.run_from_tables(PAPER_RUNS["mnist"][0](), history_table())},
        "leaves_mine": {0: verdict.run_from_tables(trust_table(0.6, 0.39, 0.6, 0.39, labels=5), history_table())},
    }
    out = tmp_path / "v"
    table = verdict.write_verdict(runs, SETTINGS, out.with_suffix(".md"), out.with_suffix(".csv"), general=True)
    assert "| MNIST (MLP) | leaves_mine |" in out.with_suffix(".md").read_text(encoding="utf-8")
    assert "K = 5 (leaves_mine): 2M/(2M + K) = 0.800" in out.with_suffix(".md").read_text(encoding="utf-8")
    assert set(table.loc[table["scope"] == "general", "dataset"]) == {"mnist", "leaves_mine"}
    # trustcal assess (one series, write_verdict without general): the paper's rows only
    alone = verdict.write_verdict(runs, SETTINGS, tmp_path / "a.md", tmp_path / "a.csv")
    assert set(alone["scope"]) == {"paper"} and verdict.GENERAL_TITLE not in (tmp_path / "a.md").read_text()


def test_a_users_claims_file_can_name_general_claims(tmp_path):
    claims = tmp_path / "mine.yaml"
    claims.write_text(
        "- {id: mnist_higher, dataset: mnist, text: 'MNIST: higher after', measure: {lowest_difference: {component:"
        " belief}}, kind: at_least, target: 0, paired: true, general: {id: higher, text: 'Higher after'}}\n",
        encoding="utf-8",
    )
    runs = {ds: {0: verdict.run_from_tables(make(), history_table())} for ds, make in
            (("mnist", BEYOND["fashion_mnist"][0]), ("svhn", BEYOND["cifar10_resnet20"][0]))}  # fmt: skip
    out = render.write_claims_verdicts(runs, SETTINGS, [claims], tmp_path / "claims")["mine"]
    rows = out.set_index(["scope", "claim_id", "dataset"])["verdict"]
    assert rows[("paper", "mnist_higher", "mnist")] == REPRODUCED
    assert rows[("general", "higher", "mnist")] == REPRODUCED and rows[("general", "higher", "svhn")] == NOT_REPRODUCED
    text = (tmp_path / "claims" / "mine.md").read_text(encoding="utf-8")
    assert "| Claim | Reproduced when | MNIST (MLP) | SVHN (CNN) |" in text
    assert "`higher`: generalises `mnist_higher`." in text


def test_flagged_predictions_of_a_run_are_left_out_of_its_general_claims_only():
    runs = {ds: {0: verdict.run_from_tables(BEYOND[ds][0](), history_table())} for ds in ("mnist", "fashion_mnist")}
    table = verdict.evaluate_general(runs, verdict.CLAIMS, flagged={"fashion_mnist": [1, 2]}).set_index(
        ["claim_id", "dataset"]
    )
    assert table.at[("trust_starts_alike", "fashion_mnist"), "verdict_without_flagged"] != ""
    assert table.at[("trust_starts_alike", "mnist"), "verdict_without_flagged"] == ""


def test_a_run_without_the_papers_datasets_opens_with_its_general_claims(tmp_path):
    """Fashion-MNIST alone: the verdict (Markdown and HTML) opens with the general claims on the run, names the
    calibrator "after" means, collapses the paper's statements into one line, and lists no contradiction (none
    of the paper's statements was judged)."""
    trust, history, boot = write_runs(tmp_path, {"fashion_mnist": BEYOND["fashion_mnist"]})
    md, csv, page = (tmp_path / "results" / f"reproduction.{ext}" for ext in ("md", "csv", "html"))
    verdict_stage(trust, history, md, csv, CONFIG, out_html=page, bootstrap_paths=boot)
    text, html_text = md.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")
    table = pd.read_csv(csv)
    n_paper = int((table["scope"] == "paper").sum())
    assert text.startswith("# Verdict on this run")
    assert text.index(f"## {verdict.GENERAL_TITLE}") < text.index("## The paper's statements")
    assert "*After calibration* is temperature scaling" in text
    line = f"{n_paper} statements of the paper about MNIST and CIFAR-10: not judged on this run"
    assert line in text and text.count("| not comparable |") == 0  # the paper's rows are not listed
    assert "Summary: 0 reproduced" not in text and "contradict each other" not in text
    # the HTML: the general table before the paper's, which is folded away under the one line
    assert html_text.index(verdict.GENERAL_TITLE) < html_text.index("<details><summary>")
    assert line in html_text and "contradict each other" not in html_text
    # with a paper dataset among the runs the page keeps its order: the paper's statements first
    trust, history, boot = write_runs(
        tmp_path / "both", {"mnist": PAPER_RUNS["mnist"], **{"fashion_mnist": BEYOND["fashion_mnist"]}}
    )
    md2 = tmp_path / "both" / "r.md"
    verdict_stage(trust, history, md2, md2.with_suffix(".csv"), CONFIG, bootstrap_paths=boot)
    both = md2.read_text(encoding="utf-8")
    assert both.startswith("# Reproduction verdict") and both.index("| Claim |") < both.index(verdict.GENERAL_TITLE)
