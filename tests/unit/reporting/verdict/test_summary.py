"""The run at a glance (results/summary.html, the report's landing page): what ran, the verdict's counts, the
warnings' digest."""

import re

import pandas as pd

from trustcal.registry import setup_of, setup_params
from trustcal.reporting.verdict.summary import TABLE_ID, recipe_text, render_summary, run_rows

CONFIG = {
    "datasets": ["mnist", "mine", "c10_sgd"],
    "setups": {
        "mine": {
            "dataset": {"kind": "npz", "path": "/data/arrays.npz", "title": "My arrays"},
            "network": "mynets.net:Net",
            "network_kwargs": {"width": 8},
        },
        "c10_sgd": {"dataset": "cifar10", "recipe": "sgd"},
    },
    "batch_size": 64,
}
SETUPS = {ds: setup_params(CONFIG, ds) for ds in CONFIG["datasets"]}


def table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["scope", "claim_id", "dataset", "verdict"])


def cells(page: str) -> list[list[str]]:
    body = page.split(f'id="{TABLE_ID}"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_each_run_with_its_dataset_network_recipe_epochs_and_seeds_in_the_configurations_order():
    runs = {"c10_sgd": dict.fromkeys([0, 1]), "mnist": dict.fromkeys(range(10)), "mine": {3: None}}
    rows = run_rows(runs, SETUPS, 20)
    assert rows == [
        ["mnist", "MNIST", "MLP", "Adam, rate 0.001, batch 64 (the paper's)", "20 (the paper: 100)", "10: 0–9"],
        ["mine", "My arrays", "Net (width=8)", "Adam, rate 0.001, batch 64 (the paper's)", "20", "3"],
        [
            "c10_sgd",
            "CIFAR-10",
            "CNN",
            "SGD (Nesterov), rate 0.1, batch 128, cosine schedule, weight decay 0.0005, augmented (crop, flip), "
            "normalised",
            "20",
            "0, 1",
        ],
    ]
    # a run the verdict judged that no setup param describes (an older rule): named, its setup unknown
    assert run_rows({"other": {0: None}}, {}, 3) == [["other", "other", "?", "?", "3", "0"]]
    assert recipe_text(setup_of(SETUPS["mnist"])).endswith("(the paper's)")


def test_the_counts_of_the_papers_statements_and_of_the_general_claims():
    verdicts = table(
        [("paper", f"p{i}", "mnist", v) for i, v in enumerate(["reproduced"] * 3 + ["not comparable", "inconclusive"])]
        + [("general", "g1", ds, "not reproduced") for ds in ("mnist", "mine")]
        + [("general", "g2", ds, "reproduced") for ds in ("mnist", "mine")]
    )
    page = render_summary(verdicts, {"mnist": {0: None}, "mine": {0: None}}, SETUPS, 3)
    text = re.sub(r"<[^>]+>", "", page)
    assert "The paper's 5 statements: 3 reproduced 0 not reproduced 1 inconclusive 1 not comparable" in text
    assert "The general claims (2 claims on each of 2 runs, 4 verdicts): 2 reproduced 2 not reproduced" in text
    assert page.index("What ran") < page.index("Verdict") < page.index("Warnings")
    # runs of none of the paper's datasets: its statements are not judged, and the line says so
    alone = render_summary(verdicts, {"mine": {0: None}}, SETUPS, 3)
    assert "not judged, as no run here is one of those" in alone and "3 reproduced" not in alone


def test_the_warnings_digest_is_shown_as_text():
    verdicts = table([("paper", "p", "mnist", "reproduced")])
    lines = ["temperature: T at a bound <t_max> of *mnist* seed 0: T = 100", "isotonic raised the test NLL"]
    page = render_summary(verdicts, {"mnist": {0: None}}, SETUPS, 3, lines)
    assert "<h2>Warnings (2)</h2>" in page
    assert "<li>temperature: T at a bound &lt;t_max&gt; of *mnist* seed 0: T = 100</li>" in page
    assert "None: no job of these runs warned." in render_summary(verdicts, {"mnist": {0: None}}, SETUPS, 3)
    assert cells(page) == [
        ["mnist", "MNIST", "MLP", "Adam, rate 0.001, batch 64 (the paper's)", "3 (the paper: 100)", "0"]
    ]


def test_the_counts_have_the_verdict_pages_colours():
    from trustcal.reporting.verdict import VERDICT_COLOURS
    from trustcal.reporting.verdict.summary import COLOURS

    assert COLOURS == VERDICT_COLOURS
