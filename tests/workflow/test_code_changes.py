"""Results follow the code: an edit to package code a job runs reruns that job (its `code` param,
trustcal.codedigest), and only the jobs that run it. The digest itself: tests/unit/test_codedigest.py."""

import shutil

import pytest
from helpers.workflow import REPO, planned_jobs, snakemake

pytestmark = pytest.mark.slow


def copy_of_the_workflow(dest):
    """The Snakefile, the workflow and its package, environments and profile, copied to ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    dest.mkdir(parents=True)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, dest / name)
    for name in ("workflow", "envs", "profiles"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    return dest


def test_an_edit_to_the_metrics_reruns_the_scores_and_not_training(copy_of, tmp_path):
    repo = copy_of_the_workflow(tmp_path / "repo")
    # argparse keeps the last --snakefile: this one, after the repository's that the helper passes
    snakefile = ("--snakefile", str(repo / "Snakefile"))
    assert planned_jobs(copy_of, *snakefile) == {}  # the same code elsewhere: nothing to do
    with open(repo / "workflow" / "trustcal" / "measures" / "metrics.py", "a") as fh:
        fh.write("# a harmless edit\n")
    plan = planned_jobs(copy_of, *snakefile)
    assert plan.get("scores") == 2, plan  # mnist and cifar10, one seed each
    assert not {"train", "logits", "calibrate", "trust", "trust_bootstrap"} & set(plan), plan
    why = snakemake(copy_of, "--dry-run", *snakefile)
    assert "Params have changed since last execution" in why.stdout + why.stderr
    summary = snakemake(copy_of, "--summary", *snakefile).stdout
    scores_lines = [line for line in summary.splitlines() if line.startswith("results/mnist/seed0/scores.csv")]
    assert scores_lines and "params changed" in scores_lines[0], summary
