"""A failed run ends on its cause and its fix, printed once: the job's message on the terminal (the lists and
md5s of a missing dataset there, once), its cause and `Fix:` line in the job's log (workflow/scripts/_common.py),
and `make reproduce` repeating them last (workflow/scripts/failed_jobs.py), below Snakemake's own lines."""

import importlib.util
import subprocess
import sys

import pytest
from helpers.workflow import REPO, make_workdir, snakemake

FAILED_JOBS = REPO / "workflow" / "scripts" / "failed_jobs.py"


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_reproduce_prints_the_failed_jobs_last():
    recipe = (REPO / "Makefile").read_text().split("\nreproduce:", 1)[1].split("\n\n", 1)[0]
    assert "|| $(BIN)/python workflow/scripts/failed_jobs.py" in recipe


def test_the_log_keeps_the_cause_and_the_fix(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "workflow" / "scripts"))
    common = load(REPO / "workflow" / "scripts" / "_common.py", "_common_under_test")
    long = "mnist: x.gz is missing and could not be fetched (a; b).\nDownload …:\n  x.gz (md5 1)\nthen rerun.\nFix: run with download: false."
    assert (
        common.brief(long) == "mnist: x.gz is missing and could not be fetched (a; b).\nFix: run with download: false."
    )
    assert common.brief("one line. Fix: this.") == "one line. Fix: this."
    assert common.brief("a\nb\nc") == "a\nb\nc"  # no fix to keep: all of it


def test_the_summary_names_each_failed_job_once(tmp_path):
    failed_jobs = load(FAILED_JOBS, "failed_jobs_under_test")
    (tmp_path / ".snakemake" / "log").mkdir(parents=True)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text(
        "2026-01-01 10:00:00,001 INFO root: trustcal package: /x\n"
        "2026-01-01 10:00:01,002 ERROR root: mnist: the cause.\nFix: the fix.\n"
    )
    (tmp_path / "logs" / "b.log").write_text(
        "2026-01-01 10:00:01,002 ERROR root: unexpected failure:\nTraceback (most recent call last):\n"
        '  File "x.py", line 1\nValueError: bad value\n'
    )
    block = (
        "Error in rule {rule}:\n    message: None\n    jobid: 1\n    log: {log} (check log file(s) for error details)\n"
    )
    run_log = "Building DAG of jobs...\n" + "".join(
        block.format(rule=r, log=log) for r, log in [("download", "logs/a.log"), ("train", "logs/b.log")] * 2
    )
    (tmp_path / ".snakemake" / "log" / "2026-01-01T100000.snakemake.log").write_text(run_log)
    text = failed_jobs.summary(tmp_path)
    assert text.splitlines()[1:] == [
        "The run stopped: 2 jobs failed.",
        "rule download (logs/a.log):",
        "mnist: the cause.",
        "Fix: the fix.",
        "rule train (logs/b.log):",
        f"unexpected failure: ValueError: bad value (the traceback: {tmp_path / 'logs' / 'b.log'})",
    ]


@pytest.mark.slow
def test_a_missing_dataset_ends_the_run_on_its_cause_and_fix(tmp_path):
    """`download: false` and no MNIST files: the air-gapped route's own failure (the same message ends a
    download that found no network, tests/unit/data/test_staging.py)."""
    workdir = make_workdir(tmp_path / "work", datasets=["mnist"], download=False)
    for staged in (workdir / "data" / "MNIST" / "raw").iterdir():
        staged.unlink()
    done = snakemake(workdir, "results/data/mnist/raw_manifest.tsv", check=False)
    assert done.returncode != 0
    screen = done.stdout + done.stderr
    assert screen.count("archive md5 f68b3c2dcbeaaa9fbdd348bbdeb94873") == 1, screen  # the file list, once
    assert screen.count("Fix: stage the files listed above by hand") == 1, screen
    after = subprocess.run([sys.executable, str(FAILED_JOBS)], cwd=workdir, capture_output=True, text=True)
    assert after.returncode == 1
    last = after.stderr.strip().splitlines()
    assert last[-2].startswith("mnist: not found in data and downloading is switched off (config: download: false)")
    assert last[-1] == (
        "Fix: stage the files listed above by hand (the air-gapped route: docs/usage.md#the-datasets), then rerun."
    )
    assert "## The datasets" in (REPO / "docs" / "usage.md").read_text()  # the link's anchor
