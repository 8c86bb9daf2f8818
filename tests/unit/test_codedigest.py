"""trustcal.codedigest: the digest of the package code a workflow script runs (each rule's `code` param).

On a toy package (what is followed and what is not), on a copy of the real one (an edit to the metrics
reruns the evaluation and not training; one to the training engine the reverse), and against what the
stages really run: every package function a stage calls, traced, lies in a file its script's digest covers.
"""

from __future__ import annotations

import inspect
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.workflow import REPO

from trustcal.codedigest import code_files, stage_digest

PACKAGE = REPO / "workflow" / "trustcal"
SCRIPTS = REPO / "workflow" / "scripts"

TOY = {
    "trustcal/__init__.py": '"""A toy package."""\n',
    # the stages module imports the evaluation code at its top, for every stage (as trustcal.stages does)
    "trustcal/stages.py": (
        "from trustcal.ev.scores import score\n\n\n"
        "def train_stage():\n    from trustcal.tr.loop import fit\n\n    return fit()\n\n\n"
        "def scores_stage():\n    return score()\n"
    ),
    "trustcal/ev/__init__.py": "",
    "trustcal/ev/scores.py": "from trustcal.ev import bins\n\n\ndef score():\n    return bins.edges()\n",
    "trustcal/ev/bins.py": "def edges():\n    return 1\n",
    "trustcal/tr/__init__.py": "from trustcal.tr.seeding import seed as seed\n",  # a re-export
    "trustcal/tr/seeding.py": "def seed():\n    return 0\n",
    "trustcal/tr/loop.py": "from trustcal import tr\n\n\ndef fit():\n    return tr.seed()\n",
    "trustcal/unrelated.py": "def other():\n    return 2\n",
    "scripts/_common.py": "def run(main):\n    main()\n",
    "scripts/train.py": (
        "from _common import run\n\n\ndef main():\n    from trustcal.stages import train_stage\n\n"
        "    train_stage()\n\n\nrun(main)\n"
    ),
    "scripts/scores.py": (
        "from _common import run\n\n\ndef main():\n    from trustcal.stages import scores_stage\n\n"
        "    scores_stage()\n\n\nrun(main)\n"
    ),
}


@pytest.fixture
def toy(tmp_path):
    root = tmp_path / "workflow"
    for name, text in TOY.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def digests(root: Path) -> dict[str, str]:
    return {s: stage_digest(root / "scripts" / f"{s}.py", root / "trustcal") for s in ("train", "scores")}


def touch(path: Path) -> None:
    """A harmless edit: a comment appended."""
    with open(path, "a") as fh:
        fh.write("# an edit that changes nothing\n")


def names(files, root: Path) -> set[str]:
    return {f.relative_to(root).as_posix() for f in files}


def test_a_stage_follows_what_it_uses_transitively_and_not_what_it_only_imports(toy):
    assert names(code_files(toy / "scripts" / "scores.py", toy / "trustcal"), toy) == {
        "scripts/scores.py",
        "scripts/_common.py",
        "trustcal/stages.py",
        "trustcal/ev/scores.py",
        "trustcal/ev/bins.py",  # through a module used as an object (bins.edges)
    }
    assert names(code_files(toy / "scripts" / "train.py", toy / "trustcal"), toy) == {
        "scripts/train.py",
        "scripts/_common.py",
        "trustcal/stages.py",  # whose top imports the evaluation code, unused by train_stage
        "trustcal/tr/loop.py",
        "trustcal/tr/__init__.py",  # the package re-exports seed …
        "trustcal/tr/seeding.py",  # … from here
    }
    before = digests(toy)
    touch(toy / "trustcal" / "ev" / "bins.py")  # imported by the scores stage two modules down
    after = digests(toy)
    assert after["scores"] != before["scores"] and after["train"] == before["train"]
    touch(toy / "trustcal" / "tr" / "seeding.py")
    again = digests(toy)
    assert again["train"] != after["train"] and again["scores"] == after["scores"]
    touch(toy / "trustcal" / "unrelated.py")  # imported by no stage
    assert digests(toy) == again


def test_a_module_being_edited_into_invalid_python_still_counts(toy):
    before = digests(toy)
    with open(toy / "trustcal" / "ev" / "bins.py", "a") as fh:
        fh.write("def half(:\n")  # a syntax error: the scores job will report it when it runs
    after = digests(toy)
    assert after["scores"] != before["scores"] and after["train"] == before["train"]


def test_a_copy_of_the_workflow_elsewhere_has_the_same_digests(toy, tmp_path):
    copy = tmp_path / "elsewhere" / "workflow"
    shutil.copytree(toy, copy)
    assert digests(copy) == digests(toy)


def test_a_script_that_is_not_there_digests_the_whole_package(toy):
    whole = stage_digest(toy / "scripts" / "absent.py", toy / "trustcal")
    assert whole == stage_digest(None, toy / "trustcal")
    touch(toy / "trustcal" / "unrelated.py")
    assert stage_digest(None, toy / "trustcal") != whole


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    """A copy of the real package and scripts, to edit."""
    root = tmp_path_factory.mktemp("copy") / "workflow"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(PACKAGE, root / "trustcal", ignore=ignore)
    shutil.copytree(SCRIPTS, root / "scripts", ignore=ignore)
    return root


EVALUATION = ("scores", "external")  # the scripts that compute the metrics
ELSEWHERE = ("train", "logits", "calibrate", "trust", "trust_bootstrap", "prepare", "download")


def real_digests(root: Path) -> dict[str, str]:
    return {s: stage_digest(root / "scripts" / f"{s}.py", root / "trustcal") for s in (*EVALUATION, *ELSEWHERE)}


def test_the_real_stages_metrics_rerun_the_evaluation_training_code_reruns_training(workflow_copy):
    before = real_digests(workflow_copy)
    assert before == real_digests(REPO / "workflow")  # where it lives does not count
    touch(workflow_copy / "trustcal" / "measures" / "metrics.py")
    after = real_digests(workflow_copy)
    assert [s for s in before if after[s] != before[s]] == list(EVALUATION)
    touch(workflow_copy / "trustcal" / "training" / "engine.py")
    again = real_digests(workflow_copy)
    assert [s for s in after if again[s] != after[s]] == ["train", "logits"]


def test_every_rule_with_a_script_passes_the_digest_of_that_script():
    """Each rule's `code` param names the rule's own script, so no rule runs code its digest misses."""
    missing = []
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"(?m)^(?=rule )", smk.read_text())[1:]:
            rule = block.split(":", 1)[0].removeprefix("rule ")
            script = re.search(r'script:\s*"\.\./scripts/([\w.]+)"', block)
            if script and f'code=package_code("{script.group(1)}")' not in block:
                missing.append(f"{smk.name}: rule {rule}")
    assert not missing, f"rules without code=package_code(<their script>) in params: {missing}"


# --------------------------------------------------------------------------- against what really runs


COMPREHENSIONS = ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")


def traced(call) -> set[Path]:
    """The package files whose functions ``call()`` runs (module and class bodies left out: importing is
    not running)."""
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        while code.co_name in COMPREHENSIONS and frame.f_back is not None:  # part of the code around it
            frame = frame.f_back
            code = frame.f_code
        if code.co_flags & inspect.CO_OPTIMIZED:  # a function's body, not a module's or a class's
            seen.add(code.co_filename)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return {Path(f).resolve() for f in seen if Path(f).resolve().is_relative_to(PACKAGE.resolve())}


def test_every_function_a_stage_runs_is_in_a_file_its_digest_covers(tmp_path):
    pytest.importorskip("torch")
    from helpers.training import splits

    from trustcal import stages
    from trustcal.files import write_npz
    from trustcal.settings import Settings

    prepared = tmp_path / "splits.npz"
    write_npz(prepared, **splits("mnist", n_train=128, n_val=64, n_test=64))
    ckpt, history = tmp_path / "checkpoints", tmp_path / "history.csv"
    train = dict(epochs=1, batch_size=32, learning_rate=1e-3, init="glorot", device="cpu")
    logits = [str(tmp_path / "logits" / "epoch001.npz")]
    cal = {m: (str(tmp_path / f"{m}.npz"), str(tmp_path / f"{m}.csv")) for m in ("temperature", "histogram")}
    settings = Settings.from_config(
        {"bootstrap": {"resamples": 5, "seed": 0, "level": 0.95}, "trust": {"clusters_sweep": [2], "sweep_epochs": [1]}}
    )
    score_outputs = {
        t: str(tmp_path / f"{t}.csv")
        for t in ("scores", "trust_spectrum", "reliability", "trust_density", "smooth_reliability")
    }
    score_outputs["paired"] = str(tmp_path / "paired.npz")
    trust_outputs = {t: str(tmp_path / f"{t}.csv") for t in ("trust", "dynamic_trust", "trust_sweep", "selective")}
    runs = {
        "train": lambda: stages.train_stage("mnist", [0], train, prepared, [ckpt], [history]),
        "logits": lambda: stages.logits_stage("mnist", prepared, ckpt, logits),
        "calibrate": lambda: [stages.calibrate_stage(logits, *files, method=m) for m, files in cal.items()],
        "calibration_table": lambda: stages.calibration_table_stage([c[1] for c in cal.values()], tmp_path / "c.csv"),
        "trust": lambda: stages.trust_stage(logits, [c[0] for c in cal.values()], trust_outputs, settings),
        "scores": lambda: stages.scores_stage(logits, [c[0] for c in cal.values()], score_outputs, settings),
        "trust_bootstrap": lambda: stages.trust_bootstrap_stage(
            logits, cal["temperature"][0], tmp_path / "b.npz", settings
        ),
    }
    uncovered = {}
    for script, call in runs.items():  # in the workflow's order: each stage reads what the one before wrote
        ran = traced(call)
        assert ran, script
        covered = {f.resolve() for f in code_files(SCRIPTS / f"{script}.py", PACKAGE)}
        if ran - covered:
            uncovered[script] = sorted(str(f.relative_to(PACKAGE.resolve())) for f in ran - covered)
    assert not uncovered, f"functions run from files outside the stage's digest: {uncovered}"
    assert np.load(tmp_path / "b.npz")["belief"].shape[2] == 5  # the stages really ran
