"""The digest of the workflow's warnings (trustcal.reporting.digest): records kept from a job's log lines,
grouped by code, run and calibrator into one line each with the epochs and the numbers."""

import json
import logging

import pandas as pd
import pytest

from trustcal.calibration.table import WORSE_ON_TEST, worse_on_test_sentence
from trustcal.reporting.digest import (
    add_calibration_numbers,
    add_worse_on_test_numbers,
    digest,
    digest_lines,
    digest_text,
    read_records,
    recorded_warnings,
    warnings_path,
)


def worse(run, seed, name, per_epoch, nll_epochs, acc_epochs=()):
    return {
        "code": WORSE_ON_TEST,
        "rule": "scores",
        "run": run,
        "seed": seed,
        "calibrator": name,
        "epochs": sorted({*nll_epochs, *acc_epochs}),
        "numbers": {
            "fitted": len(per_epoch),
            "nll_epochs": list(nll_epochs),
            "accuracy_epochs": list(acc_epochs),
            "per_epoch": {str(e): v for e, v in per_epoch.items()},
        },
        "message": f"calibrator '{name}' made the test predictions worse",
    }


def fit(code, run, seed, name, epoch, fitted=3, **numbers):
    return {
        "code": code,
        "rule": "calibrate",
        "run": run,
        "seed": seed,
        "calibrator": name,
        "epochs": [epoch],
        "numbers": {"fitted": fitted, **numbers},
        "message": "…",
    }


def write(folder, name, records):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


NLL = {e: {"nll": [0.3, 0.3 + 0.01 * e], "accuracy": [0.9, 0.9]} for e in range(1, 6)}


def test_the_worst_nll_rise_of_one_calibrator_is_one_line():
    lines = digest(
        [
            worse(
                "fashion_mnist",
                0,
                "isotonic",
                {**NLL, 3: {"nll": [0.344, 0.405], "accuracy": [0.9, 0.9]}},
                [1, 2, 3, 4, 5],
            )
        ]
    )
    assert lines == [
        "isotonic raised the test NLL in 5 of 5 epochs of fashion_mnist seed 0: 0.344 → 0.405 (worst, epoch 3)"
    ]


def test_accuracy_and_nll_give_a_line_each():
    per_epoch = {
        1: {"nll": [2.0396, 5.5006], "accuracy": [0.825, 0.8]},
        2: {"nll": [1.0, 0.9], "accuracy": [0.825, 0.775]},
        3: {"nll": [1, 1], "accuracy": [0.8, 0.8]},
    }
    lines = digest([worse("mnist", 0, "histogram", per_epoch, [1], [1, 2])])
    assert lines == [
        "histogram raised the test NLL in 1 of 3 epochs of mnist seed 0: 2.040 → 5.501 (worst, epoch 1)",
        "histogram lowered the test accuracy in 2 of 3 epochs of mnist seed 0: 0.825 → 0.775 (worst, epoch 2)",
    ]


def test_seeds_of_a_run_are_grouped_and_runs_and_calibrators_apart():
    a = worse("mnist", 0, "isotonic", NLL, [1, 2])
    b = worse("mnist", 1, "isotonic", {**NLL, 4: {"nll": [0.3, 0.9], "accuracy": [0.9, 0.9]}}, [4])
    c = worse("cifar10", 0, "isotonic", NLL, [5])
    d = worse("mnist", 0, "histogram", NLL, [2])
    lines = digest([a, c, b, d])
    assert lines == [
        "isotonic raised the test NLL in 3 of 10 epochs of mnist seeds 0–1: 0.300 → 0.900 (worst, seed 1, epoch 4)",
        "isotonic raised the test NLL in 1 of 5 epochs of cifar10 seed 0: 0.300 → 0.350 (worst, epoch 5)",
        "histogram raised the test NLL in 1 of 5 epochs of mnist seed 0: 0.300 → 0.320 (worst, epoch 2)",
    ]


def test_fit_warnings_name_their_epoch_ranges_and_numbers():
    records = [
        fit("temperature_at_bound", "mnist", 0, "temperature", e, fitted=5, temperature=t)
        for e, t in ((1, 0.05), (2, 0.05), (3, 0.05), (5, 0.05))
    ]
    records += [
        fit("calibrator_not_converged", "mnist", s, "matrix", 2, iterations=it) for s, it in ((0, 200), (2, 300))
    ]
    records += [fit("calibrator_identity_fallback", "mnist", 0, "vector", 1, fit_nll_before=0.41)]
    records += [fit("calibrator_at_bound", "mnist", 0, "vector", 3)]
    assert digest(records) == [
        "temperature: T at a bound of calibration.t_min/t_max in 4 of 5 epochs (1–3, 5) of mnist seed 0: T = 0.05",
        "matrix did not converge in 2 of 6 epochs (2) of mnist seeds 0, 2 (stopped after 200–300 iterations)",
        "vector fell back to the identity map in 1 of 3 epochs (1) of mnist seed 0: the fitted map raised the fit "
        "split's NLL (raw 0.41)",
        "vector: a parameter at a bound of calibration.t_min/t_max in 1 of 3 epochs (3) of mnist seed 0",
    ]


def test_another_warning_is_its_first_message_and_a_count():
    r = {
        "code": "double_softmax",
        "rule": "external",
        "run": "mine",
        "seed": None,
        "calibrator": None,
        "epochs": [],
        "message": "looks like probabilities",
    }
    assert digest([r, dict(r, message="again")]) == ["[double_softmax] mine: looks like probabilities (and 1 more)"]


def test_an_empty_or_missing_folder_has_no_digest(tmp_path):
    assert digest_lines(tmp_path) == []
    assert digest_lines(tmp_path / "absent") == []
    assert digest_text([]) == ""


def test_records_are_read_from_every_sidecar_of_the_configured_runs(tmp_path):
    write(tmp_path, "scores/mnist/seed0.warnings.jsonl", [worse("mnist", 0, "isotonic", NLL, [1])])
    write(tmp_path, "scores/old/seed0.warnings.jsonl", [worse("old", 0, "isotonic", NLL, [1])])
    write(tmp_path, "scores/mnist/seed7.warnings.jsonl", [worse("mnist", 7, "isotonic", NLL, [1])])
    (tmp_path / "scores/mnist/seed1.warnings.jsonl").write_text("not json\n[1]\n")
    assert {(r["run"], r["seed"]) for r in read_records(tmp_path)} == {("mnist", 0), ("old", 0), ("mnist", 7)}
    assert [(r["run"], r["seed"]) for r in read_records(tmp_path, {"mnist": [0, 1]})] == [("mnist", 0)]
    text = digest_text(digest_lines(tmp_path, {"mnist": [0]}), tmp_path)
    assert (
        text.splitlines()[1]
        == "  - isotonic raised the test NLL in 1 of 5 epochs of mnist seed 0: 0.300 → 0.310 (worst, epoch 1)"
    )


def test_a_jobs_warnings_become_records_next_to_its_log(tmp_path):
    log_path = tmp_path / "calibrate" / "mnist" / "seed0" / "temperature.log"
    log_path.parent.mkdir(parents=True)
    sidecar = warnings_path(log_path)
    assert sidecar.name == "temperature.warnings.jsonl"
    sidecar.write_text("stale\n")
    log = logging.getLogger("trustcal.stages")
    wildcards = {"dataset": "mnist", "seed": "0", "calibrator": "temperature"}
    with recorded_warnings(log_path, "calibrate", wildcards) as records:
        log.warning(
            "%s: [%s] %s (fitted on the %s split).%s",
            "x/logits/epoch002.npz",
            "temperature_at_bound",
            "T at 0.05",
            "val",
            "",
        )
        log.info("not a warning")
        table = pd.DataFrame(
            {"epoch": [1, 2], "temperature": [1.0, 0.05], "iterations": [3, 4], "fit_split": ["val", "val"]}
        )
        add_calibration_numbers(records, table)
    (r,) = [json.loads(line) for line in sidecar.read_text().splitlines()]
    assert r == {
        "rule": "calibrate",
        "run": "mnist",
        "seed": 0,
        "calibrator": "temperature",
        "code": "temperature_at_bound",
        "epochs": [2],
        "numbers": {"fitted": 2, "temperature": 0.05, "iterations": 4, "fit_split": "val"},
        "message": "T at 0.05 (fitted on the val split).",
    }
    with recorded_warnings(log_path, "calibrate", wildcards):
        pass
    assert not sidecar.exists()  # no warnings this time: no file


def test_worse_on_test_numbers_follow_the_scores_table(tmp_path):
    rows = []
    for epoch, (raw, cal, acc) in enumerate([(0.3, 0.5, 0.8), (0.3, 0.2, 0.9), (0.3, 0.4, 0.9)], start=1):
        rows += [dict(epoch=epoch, calibrator="none", split="test", nll=raw, accuracy=0.9)]
        rows += [dict(epoch=epoch, calibrator="isotonic", split="test", nll=cal, accuracy=acc)]
        rows += [dict(epoch=epoch, calibrator="isotonic", split="val", nll=9.0, accuracy=0.0)]
    scores = pd.DataFrame(rows)
    sentence = worse_on_test_sentence("isotonic", dict(epochs=3, worse=2, accuracy=(1, 0.9, 0.8), nll=(1, 0.3, 0.5)))
    log_path = tmp_path / "seed0.log"
    with recorded_warnings(log_path, "scores", {"dataset": "mnist", "seed": "0"}) as records:
        logging.getLogger("trustcal.stages").warning("%s: [%s] %s.%s", "scores.csv", WORSE_ON_TEST, sentence, "")
        add_worse_on_test_numbers(records, scores, samples=80, classes=10)
    (r,) = records
    assert r["calibrator"] == "isotonic"
    assert r["epochs"] == [1, 3]
    assert r["numbers"]["nll_epochs"] == [1, 3] and r["numbers"]["accuracy_epochs"] == [1]
    assert digest(records) == [
        "isotonic raised the test NLL in 2 of 3 epochs of mnist seed 0: 0.300 → 0.500 (worst, epoch 1)",
        "isotonic lowered the test accuracy in 1 of 3 epochs of mnist seed 0: 0.900 → 0.800 (worst, epoch 1)",
    ]


@pytest.mark.parametrize("broken", ["{", '{"code": 1}\n', "[]"])
def test_a_broken_sidecar_line_is_skipped(tmp_path, broken):
    (tmp_path / "x.warnings.jsonl").write_text(broken)
    assert digest_lines(tmp_path) == []
