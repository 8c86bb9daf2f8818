"""The code that runs is the checkout's: a second clone beside an editable install of this one.

The test environment has this repository installed editable (its ``workflow/`` on
``sys.path`` through a ``.pth`` file). Running another clone's ``Snakefile`` (as the
module section of docs/usage.md suggests) must run that clone's ``trustcal`` package in the
config check and in every job, or stop before the first job naming both copies.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.workflow import REPO, make_workdir

import trustcal

pytestmark = pytest.mark.slow

# The uncommitted edit of the clone: every process that imports its trustcal package appends
# its command line to the file named by TRUSTCAL_TEST_MARKER.
MARKER_EDIT = """
import os as _os
import sys as _sys

if _os.environ.get("TRUSTCAL_TEST_MARKER"):
    with open(_os.environ["TRUSTCAL_TEST_MARKER"], "a") as _fh:
        _fh.write(" ".join(_sys.argv) + "\\n")
"""


def git(*args, cwd=REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A git clone of this work tree (with its uncommitted changes), plus the marker edit."""
    if Path(trustcal.__file__).resolve().parents[1] != REPO / "workflow":
        pytest.skip(f"trustcal is imported from {trustcal.__file__}, not from this checkout's workflow/")
    path = tmp_path_factory.mktemp("second") / "trustcal"
    git("clone", "--quiet", "--no-local", str(REPO), str(path))
    for name in git("ls-files", "--modified", "--others", "--exclude-standard", "-z").split("\0"):
        if name and (REPO / name).is_file():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, path / name)
    for name in git("ls-files", "--deleted", "-z").split("\0"):
        if name:
            (path / name).unlink(missing_ok=True)
    with open(path / "workflow" / "trustcal" / "__init__.py", "a") as fh:
        fh.write(MARKER_EDIT)
    return path


def snakemake(workdir: Path, snakefile: Path, marker: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--cores", "1", *args]
    env = {**os.environ, "TRUSTCAL_TEST_MARKER": str(marker)}
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def test_the_jobs_of_a_second_clone_run_its_own_package(clone, tmp_path):
    workdir = make_workdir(tmp_path / "work", datasets=["mnist"])
    marker = tmp_path / "imported-by.txt"
    target = "results/data/mnist/raw_manifest.tsv"  # rule download: a script job, the first of the run
    proc = snakemake(workdir, clone / "Snakefile", marker, target, "--configfile", "tiny.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    importers = marker.read_text().splitlines() if marker.exists() else []
    # the config check (the snakemake process) and the job (Snakemake's copy of download.py) ran the clone's code
    assert any("snakemake" in line and "--snakefile" in line for line in importers), importers
    assert any(".snakemake/scripts/" in line and line.rstrip().endswith("download.py") for line in importers), importers
    log = (workdir / "results" / "logs" / "download" / "mnist.log").read_text()
    assert f"trustcal package: {clone / 'workflow' / 'trustcal'}" in log, log


def test_a_package_imported_before_the_workflow_stops_the_run_before_any_job(clone, tmp_path):
    """The importing workflow imported this checkout's trustcal (installed editable), then loads the clone."""
    workdir = make_workdir(tmp_path / "work", datasets=["mnist"])
    (workdir / "Snakefile").write_text(
        f"import trustcal\n\n\n"
        f'configfile: "tiny.yaml"\n\n\n'
        f"module second:\n    snakefile:\n        {str(clone / 'Snakefile')!r}\n    config:\n        config\n\n\n"
        f"use rule * from second as second_*\n"
    )
    proc = snakemake(workdir, workdir / "Snakefile", tmp_path / "marker.txt", "--dry-run")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    lines = [line for line in out.splitlines() if "would run the trustcal package of" in line]
    assert len(lines) == 1, out
    assert str(REPO / "workflow" / "trustcal") in lines[0] and str(clone / "workflow" / "trustcal") in lines[0]
    assert "Fix:" in lines[0]
    assert "Traceback" not in out


def test_a_job_that_would_run_another_package_stops_with_one_line(clone, tmp_path):
    """A job process where trustcal was imported before the script's start-up (_common.py)."""
    code = f"import sys, trustcal; sys.path.insert(0, {str(clone / 'workflow' / 'scripts')!r}); import _common"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(REPO / "workflow" / "trustcal") in lines[0] and str(clone / "workflow" / "trustcal") in lines[0]
