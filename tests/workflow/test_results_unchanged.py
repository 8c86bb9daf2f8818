"""The tiny paper run's results and figures are those of a recorded commit, byte for byte.

Issue 44 moved the package's rooms (the evaluation engine, the settings objects, the stages) without meaning to
change a number. This test holds every later change to the same promise: it runs the tiny configuration
(tests/tiny.yaml, both datasets) with the workflow of REFERENCE, taken from this repository's git history, beside
the session's run of this checkout, on the same data and cores, and compares every file under ``results/``
that REFERENCE wrote: the same bytes, but for the seconds an epoch took. A commit that changes results on purpose
moves REFERENCE to itself and says why in its message; files that a later commit adds are listed, not compared.

Skipped, with the reason, where the checkout has no git history holding REFERENCE (an sdist, a shallow clone).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile

import pandas as pd
import pytest
from helpers.workflow import REPO, make_workdir, snakemake

pytestmark = pytest.mark.slow

# edffd9c: the last commit before issue 44's moves (5dfd1f8), whose tiny run they left unchanged
REFERENCE = "edffd9c"
# Files whose only expected difference is wall time: their `seconds` column is dropped before comparing
TIMED = ("history.csv", "seconds.csv")
NOT_RESULTS = ("logs", "benchmarks")  # Snakemake's logs and job timings, under results/


def reference_tree(dest):
    """REFERENCE's Snakefile, workflow, environments and configuration, from git; skips where the history lacks it."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("no git checkout: the reference commit's workflow cannot be read")
    found = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", REFERENCE, "Snakefile", "config.yaml", "workflow", "envs"],
        capture_output=True,
    )
    if found.returncode != 0:
        pytest.skip(f"commit {REFERENCE} is not in this clone's history (a shallow clone?): {found.stderr[:200]!r}")
    with tarfile.open(fileobj=io.BytesIO(found.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def results_of(workdir):
    """Every file under results/ but the logs and job timings: relative path → its bytes (timed tables without
    their seconds)."""
    out = {}
    root = workdir / "results"
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if rel.parts[0] in NOT_RESULTS:
            continue
        if path.name in TIMED:
            out[str(rel)] = pd.read_csv(path).drop(columns="seconds").to_csv(index=False).encode()
        else:
            out[str(rel)] = path.read_bytes()
    return out


def test_the_tiny_run_writes_what_the_reference_commit_wrote(finished, tmp_path):
    old = reference_tree(tmp_path / "reference")
    workdir = make_workdir(tmp_path / "work")
    snakemake(workdir, "--snakefile", str(old / "Snakefile"), timeout=1200)
    before, after = results_of(workdir), results_of(finished)
    assert len(before) > 100  # checkpoints, logits, calibrations, tables, figures and the verdict of two datasets
    missing = sorted(set(before) - set(after))
    changed = sorted(name for name in set(before) & set(after) if before[name] != after[name])
    assert not missing and not changed, (
        f"against {REFERENCE}: {len(missing)} files no longer written {missing[:10]}, {len(changed)} changed "
        f"{changed[:10]}; if the change is meant, move REFERENCE to its commit and say why there"
    )
    print(f"{len(before)} files as at {REFERENCE}; new since: {sorted(set(after) - set(before))}")
