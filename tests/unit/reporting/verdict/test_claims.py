"""Claims files: the paper's shipped file on a hand-built run, a user's file judged by `trustcal assess --claims`
and by the workflow's verdict stage, and the one-line errors of bad files."""

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.payload import yaml_payload
from helpers.workflow import REPO

from trustcal.cli import main
from trustcal.files import write_csv
from trustcal.reporting import verdict
from trustcal.reporting.verdict import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, ClaimsFileError, load_claims
from trustcal.stages import verdict_stage

E = 40  # epochs of the hand-built run
EPS = np.finfo(float).eps
TOL = 8 * E * EPS  # a mean of E values of order 1, each off by a few ulps


def _step(early, late):
    """A curve of value ``early`` before epoch 20 and ``late`` from epoch 20 on."""
    return np.where(np.arange(1, E + 1) < 20, early, late)


def hand_run() -> verdict.Run:
    """Before calibration belief 0.70 → 0.50 and disbelief 0.28 → 0.47 at epoch 20 (uncertainty 0.02 → 0.03);
    after calibration belief 0.66, disbelief 0.33, uncertainty 0.01 throughout; every label alike.
    Validation loss 0.8 + 0.02·|e − 10| (minimum at epoch 10), training loss 1.5/e."""
    b = np.stack([_step(0.70, 0.50), np.full(E, 0.66)], axis=1)  # epochs × state
    d = np.stack([_step(0.28, 0.47), np.full(E, 0.33)], axis=1)
    opinions = {
        name: np.repeat(x[None, :, :, None], 11, axis=3)  # 1 × epochs × state × (10 labels + network)
        for name, x in (("belief", b), ("disbelief", d), ("uncertainty", 1 - b - d))
    }
    e = np.arange(1, E + 1)
    history = pd.DataFrame({"epoch": e, "train_loss": 1.5 / e, "val_loss": 0.8 + 0.02 * np.abs(e - 10)})
    return verdict.Run(e, opinions, history, np.zeros((E, 2, 11)))


# Each paper claim's measure on hand_run(), worked out by hand from the curves above.
late = 19 * 0.02 / 40 + 21 * 0.03 / 40  # mean uncertainty before calibration over 40 epochs
HAND = {
    "mnist_trust_start_before": 0.70,
    "mnist_trust_start_similar": 0.04,  # |0.66 − 0.70|
    "mnist_trust_falls_before": -0.20,  # last 4 epochs 0.50 − epoch 1 0.70
    "mnist_trust_after": 0.66,
    "mnist_trust_after_constant": 0.0,
    "mnist_trust_after_above_before": -0.04,  # smallest 0.66 − b_before
    "mnist_trust_steadier_after": 0.20,  # range 0.20 before, 0 after
    "mnist_disbelief_rises_before": 0.19,
    "mnist_disbelief_after": 0.33,
    "mnist_disbelief_after_constant": 0.0,
    "mnist_disbelief_after_below_before": 0.05,  # largest 0.33 − d_before = 0.33 − 0.28
    "mnist_uncertainty_start_similar": 0.01,
    "mnist_uncertainty_rises_before": 0.01,
    "mnist_uncertainty_after_stable": 0.0,
    "mnist_uncertainty_after_below_before": -0.01,
    "mnist_little_overfitting": 1.4 - 1.5 / 40,  # val − train at epoch 40
    "mnist_little_difference": (19 * 0.04 + 21 * 0.16) / 40,
    "mnist_trust_before_constant": 0.20,
    "mnist_smaller_difference_than_cifar10": 0.0,  # the same run for both datasets
    "mnist_disbelief_minimal": (19 * 0.28 + 21 * 0.47) / 40,
    "cifar10_trust_start_before": 0.70,
    "cifar10_trust_start_after": 0.66,
    "cifar10_trust_peak_before": 0.70,
    "cifar10_trust_peak_after": 0.66,
    "cifar10_trust_before_late": 0.50,
    "cifar10_trust_before_late_constant": 0.0,
    "cifar10_trust_after_late": 0.66,
    "cifar10_trust_after_late_constant": 0.0,
    "cifar10_disbelief_start_before": 0.28,
    "cifar10_disbelief_start_after": 0.33,
    "cifar10_disbelief_rises_before": 0.19,
    "cifar10_disbelief_before_late": 0.47,
    "cifar10_disbelief_before_late_constant": 0.0,
    "cifar10_disbelief_after_late": 0.33,
    "cifar10_disbelief_after_late_constant": 0.0,
    "cifar10_uncertainty_levels": late,
    "cifar10_uncertainty_rises_before": 0.01,
    "cifar10_trust_after_above_before": -0.04,
    "cifar10_disbelief_after_below_before": 0.05,
    "cifar10_uncertainty_after_below_before": -0.01,
    "cifar10_trust_steadier_after": 0.20,
    "cifar10_overfitting_onset": 10.0,
    "cifar10_decline_with_overfitting": 1 - 10.0,  # belief highest at epoch 1, validation minimum at 10
}


def test_the_shipped_file_gives_each_paper_claim_its_hand_computed_value():
    assert verdict.PAPER_CLAIMS_FILE.name == "paper_claims.yaml" and verdict.PAPER_CLAIMS_FILE.is_file()
    assert [c.id for c in verdict.CLAIMS] == [c.id for c in load_claims(verdict.PAPER_CLAIMS_FILE)]
    run = hand_run()
    table = verdict.evaluate({"mnist": {0: run}, "cifar10": {0: run}}).set_index("claim_id")
    assert list(table.index) == list(HAND)  # every claim of the file has a hand value, in file order
    for cid, value in HAND.items():
        assert table.at[cid, "measured_mean"] == pytest.approx(value, abs=TOL), cid
    verdicts = table["verdict"]
    assert verdicts["mnist_trust_after"] == REPRODUCED  # 0.66 within 0.65 ± 0.05
    assert verdicts["mnist_trust_falls_before"] == REPRODUCED  # −0.20 ≤ −0.05
    assert verdicts["mnist_trust_after_above_before"] == NOT_REPRODUCED  # −0.04 is not > 0
    assert verdicts["cifar10_trust_before_late"] == REPRODUCED  # 0.50 within 0.48 ± 0.05
    assert verdicts["cifar10_disbelief_start_before"] == NOT_REPRODUCED  # 0.28 outside 0.40 ± 0.05
    assert verdicts["mnist_disbelief_minimal"] == NOT_COMPARABLE


def test_the_claims_keep_their_paper_fields():
    by_id = {c.id: c for c in verdict.CLAIMS}
    onset = by_id["cifar10_overfitting_onset"]
    assert (onset.kind, onset.target, onset.tolerance, onset.min_epochs) == ("near", 10.0, 5.0, 20)
    assert onset.requires is verdict.gap_grows_after_minimum and onset.from_history and onset.uses_history
    assert by_id["cifar10_decline_with_overfitting"].uses_history and not by_id["mnist_trust_after"].uses_history
    assert by_id["mnist_smaller_difference_than_cifar10"].versus == "cifar10"
    assert (
        sum(c.paired for c in verdict.CLAIMS) == 11
    )  # every before-versus-after comparison but the MNIST−CIFAR-10 one
    assert verdict.OVERALL in by_id["mnist_trust_after_above_before"].also


def test_the_package_data_names_the_shipped_file():
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.yaml" in data["trustcal.reporting.verdict"]
    assert "pyyaml>=6.0" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]


@pytest.mark.slow
def test_the_wheel_contains_the_shipped_file(tmp_path):
    src = tmp_path / "src"
    import shutil

    shutil.copytree(
        REPO / "workflow" / "trustcal", src / "workflow" / "trustcal", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("trustcal-*.whl")
    assert "trustcal/reporting/verdict/paper_claims.yaml" in zipfile.ZipFile(wheel).namelist()


# --- a user's claims file -----------------------------------------------------------------------------

N, K, M, W = 1000, 10, 10, 2.0
# A perfect classifier (probability 0.999 on the true class): label c's N/K samples sit in its top cluster
# [0.9, 1] (representative 0.95), the other samples in its bottom cluster [0, 0.1] (representative 0.05).
# Algorithm 1: r = Σ t_i = N/K = 100; s = Σ (n_i·RP_i − t_i)⁺ + … = 100·0.05 + 900·0.05 = 50 (the top cluster
# has 100·0.95 − 100 < 0 missing evidence 5; the bottom 900·0.05 − 0 = 45), so b = r/(W + r + s) = 100/152.
BELIEF = 100 / 152

USER_CLAIMS = """\
claims:
  - id: perfect_belief
    text: a perfect classifier's per-label belief is near 2M/(2M + K)
    paper: ≈ 0.667
    measure: {level: {component: belief, state: before}}
    kind: near
    target: 0.6667
    tolerance: 0.02
  - id: belief_half
    text: per-label belief is about one half
    measure: {level: {component: belief, state: before, first: 2}}
    kind: near
    target: 0.5
    tolerance: 0.02
  - id: steady
    dataset: theirs
    text: belief is constant over the two epochs
    measure: {spread: {component: belief, state: before}}
    kind: at_most
    target: 0.01
  - id: versus_other
    dataset: mine
    versus: theirs
    text: a comparison with another dataset
    measure: {mean_gap: {component: belief}}
    kind: at_most
    target: 0
"""


def _series(folder: Path) -> Path:
    labels = np.arange(N) % K
    probs = np.full((N, K), 0.001 / (K - 1))
    probs[np.arange(N), labels] = 0.999
    folder.mkdir()
    for epoch in (1, 2):
        np.savez(folder / f"epoch{epoch:03d}.npz", probs=probs, labels=labels)
    return folder


def test_trustcal_assess_judges_a_users_claims(tmp_path, capsys):
    claims = tmp_path / "mine.yaml"
    claims.write_text(USER_CLAIMS, encoding="utf-8")
    out = tmp_path / "out"
    assert (
        main(["assess", str(_series(tmp_path / "series")), "--out", str(out), "--claims", str(claims), "--no-figures"])
        == 0
    )
    assert "verdict.md, verdict.csv" in capsys.readouterr().out
    table = pd.read_csv(out / "verdict.csv").set_index("claim_id")
    assert list(table.index) == ["perfect_belief", "belief_half", "steady", "versus_other"]
    for cid in ("perfect_belief", "belief_half"):
        assert table.at[cid, "measured_mean"] == pytest.approx(BELIEF, abs=16 * EPS)
    assert table.at["perfect_belief", "verdict"] == REPRODUCED  # 0.658 within 0.6667 ± 0.02
    assert table.at["belief_half", "verdict"] == NOT_REPRODUCED  # 0.658 outside 0.5 ± 0.02
    assert table.at["steady", "verdict"] == REPRODUCED and table.at["steady", "measured_mean"] == 0.0
    assert table.at["versus_other", "verdict"] == NOT_COMPARABLE
    assert "one series" in table.at["versus_other", "reason"]
    text = (out / "verdict.md").read_text(encoding="utf-8")
    assert text.startswith("# Verdict on mine.yaml") and "contradict" not in text
    assert "level(component=belief, state=before, first=2)" in text  # the measure in words, from the file
    assert not (out / "reproduction.md").exists()


def test_the_verdict_stage_judges_the_configs_claims_files(tmp_path):
    """What the workflow's `verdict` rule calls: the paper's verdict as before, and each claims file's."""
    run_dir = tmp_path / "results" / "mine" / "seed0"
    rows = [
        dict(epoch=e, calibrator=cal, label=lab, belief=b, disbelief=0.3, uncertainty=0.7 - b, base_rate=0.5,
             positive_evidence=1.0, negative_evidence=1.0)
        for e in (1, 2, 3)
        for cal, b in (("none", 0.6 - 0.1 * (e - 1)), ("temperature", 0.65))
        for lab in [*map(str, range(3)), "network"]
    ]  # fmt: skip
    write_csv(pd.DataFrame(rows), run_dir / "trust.csv")
    write_csv(
        pd.DataFrame({"epoch": [1, 2, 3], "train_loss": [1.0, 0.5, 0.2], "val_loss": [1.0, 0.8, 0.9]}),
        run_dir / "history.csv",
    )
    claims = tmp_path / "config_claims.yaml"
    claims.write_text(
        "- {id: falls, dataset: mine, text: belief falls, measure: {change: {component: belief, state: before}},"
        " kind: at_most, target: -0.1}\n"
        "- {id: onset, dataset: mine, text: overfits after epoch 2, measure: overfitting_onset, kind: near,"
        " target: 2, tolerance: 0, from_history: true}\n"
        "- {id: elsewhere, dataset: other, text: not in this run, measure: {mean_gap: {component: belief}},"
        " kind: at_most, target: 0}\n",
        encoding="utf-8",
    )
    results = tmp_path / "results"
    settings = {"epochs": 3, "clusters": 10, "trust": {}, "calibration": {}, "bootstrap": {}}
    verdict_stage(
        [run_dir / "trust.csv"], [run_dir / "history.csv"], results / "reproduction.md", results / "reproduction.csv",
        settings, claims_paths=[claims], claims_dir=results / "claims",
    )  # fmt: skip
    paper = pd.read_csv(results / "reproduction.csv")
    assert list(paper.loc[paper["scope"] == "paper", "claim_id"]) == [c.id for c in verdict.CLAIMS]
    # the general claims are judged on the run `mine` too (3 epochs: those that need 10 are not comparable)
    general = paper[paper["scope"] == "general"].set_index("claim_id")
    assert set(general["dataset"]) == {"mine"} and len(general) == len(verdict.general_claims(verdict.CLAIMS))
    assert general.at["trust_higher_after", "verdict"] == REPRODUCED  # 0.65 after against 0.6 … 0.4 before
    assert "needs ≥ 10 epochs; this run has 3" in general.at["trust_steadier_after", "reason"]
    table = pd.read_csv(results / "claims" / "config_claims.csv").set_index("claim_id")
    # belief before: 0.6, 0.5, 0.4; the last 10 % of 3 epochs is epoch 3: 0.4 − 0.6 = −0.2 ≤ −0.1
    assert table.at["falls", "measured_mean"] == pytest.approx(-0.2, abs=4 * EPS)
    assert table.at["falls", "verdict"] == REPRODUCED
    assert table.at["onset", "measured_mean"] == 2 and table.at["onset", "verdict"] == REPRODUCED
    assert (
        table.at["elsewhere", "verdict"] == NOT_COMPARABLE
        and "other not in this run" in table.at["elsewhere", "reason"]
    )
    assert set(table["scope"]) == {"paper"}  # a file without `general:` has no general claims
    page = (results / "claims" / "config_claims.html").read_text(encoding="utf-8")
    assert page.count("<tr>") == 4 and "<h1>Verdict on config_claims.yaml</h1>" in page
    assert "beyond the paper" not in page
    assert (results / "claims" / "config_claims.md").is_file()


# --- bad files: one line naming the file, the claim, the field and the fix ------------------------------

GOOD = "{id: c1, text: t, measure: {level: {component: belief, state: after}}, kind: near, target: 0.6}"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            GOOD.replace("level:", "levle:"),
            r"claim c1: field measure: unknown measure 'levle' \(did you mean 'level'\?\); known: level, label_peak",
        ),
        (
            GOOD.replace("component: belief", "component: trust"),
            r"claim c1: field measure: component 'trust' of level: use one of belief, disbelief, uncertainty",
        ),
        (
            GOOD.replace("state: after", "state: later"),
            r"claim c1: field measure: state 'later' of level: use before or after",
        ),
        (
            GOOD.replace("state: after", "state: after, frist: 2"),
            r"claim c1: field measure: level has no argument 'frist' \(did you mean 'first'\?\); its arguments",
        ),
        (
            GOOD.replace("{level: {component: belief, state: after}}", "{level: {state: after}}"),
            r"claim c1: field measure: level needs component",
        ),
        (
            GOOD.replace("{level: {component: belief, state: after}}", "{final_gap: {first: 2}}"),
            r"field measure: final_gap takes no arguments; write `measure: final_gap`",
        ),
        (
            GOOD.replace("state: after}", "state: after, first: 0}"),
            r"field measure: first of level is 0: give an epoch number",
        ),
        (GOOD.replace("kind: near", "kind: about"), r"claim c1: field kind: 'about': use near, at_most, at_least"),
        (GOOD.replace(", target: 0.6", ""), r"claim c1: field target: missing; near needs the value"),
        (GOOD.replace("target: 0.6", "target: high"), r"claim c1: field target: 'high' is not a number"),
        (
            GOOD.replace("target: 0.6", "target: 0.6, tolerence: 0.1"),
            r"claim c1: field tolerence: unknown field \(did you mean 'tolerance'\?\); fields",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, requires: growing"),
            r"claim c1: field requires: unknown condition 'growing'; known: gap_grows_after_minimum",
        ),
        (GOOD.replace("text: t, ", ""), r"claim c1: field text: missing; every claim needs id, text, measure, kind"),
        (
            GOOD.replace("target: 0.6", "target: 0.6, versus: cifar10"),
            r"claim c1: field versus: a comparison with another dataset needs the claim's own `dataset:`",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, general: [a]"),
            r"claim c1: field general: \['a'\]: write `general: trust_higher_after` or `general: \{id:",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, general: 'trust higher'"),
            r"claim c1: field general: id 'trust higher': give a name of letters, digits and _",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, general: {id: g, txt: t}"),
            r"claim c1: field general: unknown key\(s\) txt; write",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, general: c1"),
            r"claim c1: field general: 'c1' is this claim's own id; give the general claim an id of its own",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, general: g"),
            r"claim c1: field general: the general claim g has no text; write `general: \{id: g, text: '…'\}`",
        ),
        (
            GOOD.replace("target: 0.6", "target: 0.6, dataset: mnist, versus: cifar10, general: {id: g, text: t}"),
            r"claim c1: field general: a general claim is judged on each run alone; remove `general:` or `versus:`",
        ),
    ],
)
def test_a_bad_claim_is_one_line_naming_file_claim_field_and_fix(tmp_path, entry, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(f"- {entry}\n", encoding="utf-8")
    with pytest.raises(ClaimsFileError) as err:
        load_claims(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert re.search(expected, message), message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- id: a\n  text: [unclosed\n", r"not valid YAML at line 3, column 1: .*; fix the syntax there"),
        ("{}\n", r"no claims; write a YAML list of claims"),
        (f"- {GOOD}\n- {GOOD}\n", r"claim c1: field id: used twice"),
        (  # two cases of one general claim that measure different things
            "- {id: a, dataset: mnist, text: t, measure: {level: {component: belief, state: after}}, kind: near,"
            " target: 0.6, general: {id: g, text: T}}\n"
            "- {id: b, dataset: svhn, text: t, measure: {level: {component: disbelief, state: after}}, kind: near,"
            " target: 0.6, general: g}\n",
            r"claim b: field general: g is measured as level \(belief, after\) by a, here as level "
            r"\(disbelief, after\): every claim of one general claim measures the same thing",
        ),
        (  # … or decide differently
            "- {id: a, dataset: mnist, text: t, measure: {level: {component: belief, state: after}}, kind: near,"
            " target: 0.6, general: {id: g, text: T}}\n"
            "- {id: b, dataset: svhn, text: t, measure: {level: {component: belief, state: after, first: 20}},"
            " kind: near, target: 0.7, general: g}\n",
            r"claim b: field general: g is decided with target 0.6 by a, here with 0.7: every claim of one general "
            r"claim is decided alike",
        ),
        (
            f"- {GOOD}\n"
            "- {id: b, dataset: svhn, text: t, measure: final_gap, kind: at_most, target: 0, general: {id: c1, text: T}}\n",
            r"claim b: field general: 'c1' is the id of a claim of this file; give the general claim an id of its own",
        ),
    ],
)
def test_a_bad_file_is_one_line(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ClaimsFileError, match=expected) as err:
        load_claims(path)
    assert "\n" not in str(err.value)


def test_assess_names_a_bad_claims_file_before_reading_predictions(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert (
        main(["assess", str(tmp_path / "no-predictions"), "--out", str(tmp_path / "o"), "--claims", str(missing)]) != 0
    )
    err = capsys.readouterr().err
    assert f"{missing}: claims file not found; check the path" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_a_claims_file_with_a_python_tag_is_refused_and_never_run(tmp_path):
    """Issue 27: a claims file is read with YAML's safe loader; a tag that would build a Python object
    (here a call to os.system) is refused in one line naming the file and the fix, and never run."""
    import yaml

    marker = tmp_path / "ran"
    text = yaml_payload(marker)
    yaml.unsafe_load(text)  # the payload is live: an unsafe loader runs it
    assert marker.exists()
    marker.unlink()
    path = tmp_path / "claims.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ClaimsFileError) as err:
        load_claims(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: ") and "remove the tag" in message
    assert "python/object/apply:os.system" in message
    assert not marker.exists(), "the claims file's tag must not run"
