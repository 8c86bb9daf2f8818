"""Faults injected into a tiny run of the workflow (issue 20): kills, damaged and missing artifacts.

Each case starts from a copy of one clean run (mnist, 3 epochs, ``--cores 1``), injects its fault as a
user would meet it, and asserts either that the run then ends with the clean run's results (every
table, array and checkpoint; wall-clock columns aside) or that it stops with a one-line error whose
advice, followed literally (the file it says to delete deleted, the command it prints run), ends
with the clean run's results.
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.training import overwrite_values
from helpers.workflow import REPO, make_workdir, snakemake

pytestmark = pytest.mark.slow

RUN = Path("results/mnist/seed0")
WALL_CLOCK = ("seconds",)  # columns that differ between two identical runs
# Enough training images that an epoch lasts a fraction of a second: a kill can land inside one.
N_TRAIN = 12000


def run(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The tiny run's snakemake with ``args``, on one core."""
    return snakemake(workdir, *args, "--cores", "1", check=check)


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    workdir = make_workdir(tmp_path_factory.mktemp("clean") / "work", n_train=N_TRAIN, datasets=["mnist"])
    run(workdir)
    return workdir


@pytest.fixture
def work(clean, tmp_path) -> Path:
    dst = tmp_path / "work"
    shutil.copytree(clean, dst, symlinks=True)
    return dst


def results(workdir: Path) -> dict[str, object]:
    """Every result of the run in a comparable form: tables without wall-clock columns, arrays, checkpoint
    bytes and texts (figures are drawn from these tables; logs and benchmarks are timing)."""
    out: dict[str, object] = {}
    root = workdir / "results"
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or rel.startswith(("logs/", "benchmarks/")) or path.name.startswith("."):
            continue
        if path.suffix == ".csv":
            df = pd.read_csv(path)
            out[rel] = df.drop(columns=[c for c in WALL_CLOCK if c in df])
        elif path.suffix == ".npz":
            with np.load(path) as arrays:
                out[rel] = {k: arrays[k] for k in arrays.files}
        elif path.suffix in (".pt", ".md", ".tsv"):
            out[rel] = path.read_bytes()
    return out


def same(a, b) -> bool:
    """Equal values, NaN equal to NaN (tables and arrays), equal bytes otherwise."""
    if isinstance(a, pd.DataFrame):
        return a.equals(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(
            a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind in "fc") for k in a
        )
    return a == b


def assert_same_results(workdir: Path, clean: Path) -> None:
    got, want = results(workdir), results(clean)
    assert sorted(got) == sorted(want)
    differ = [k for k in want if not same(got[k], want[k])]
    assert not differ, f"differ from the clean run: {differ}"


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one line of a job's error (``ERROR (rule …): …``), checked to be the only one."""
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("ERROR (rule ")]
    assert proc.returncode != 0 and len(set(lines)) == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def follow(workdir: Path, line: str) -> subprocess.CompletedProcess:
    """Do exactly what the error ``line`` says: delete the file it names if it says so, then run the
    snakemake command it prints (in the tiny run's setting: its Snakefile and configuration, one core)."""
    message = line.split("): ", 1)[1]
    if "delete it" in message:
        (workdir / message.split(": ", 1)[0]).unlink()
    commands = re.findall(r"\((snakemake [^)]*)\)", message)
    assert len(commands) == 1, message
    return run(workdir, *shlex.split(commands[0])[1:])


def start(workdir: Path) -> subprocess.Popen:
    """The tiny run's snakemake in its own process group, so the kill reaches every job."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--configfile", "tiny.yaml"]
    return subprocess.Popen(
        [*cmd, "--cores", "1"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_when(proc: subprocess.Popen, ready, timeout: float = 300) -> None:
    """SIGKILL the process group of ``proc`` as soon as ``ready()`` holds."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, "the run ended before the fault could be injected"
        assert time.monotonic() < deadline, "the run never reached the point of the fault"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def recover(workdir: Path) -> None:
    """What Snakemake says after a kill: unlock the working directory, then run again."""
    proc = run(workdir, check=False)
    if proc.returncode != 0:
        assert "--unlock" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        run(workdir, "--unlock")
        run(workdir)


def test_a_clean_rerun_changes_nothing(work, clean):
    """The comparison itself: a finished run run again has nothing to do and the same results."""
    assert "Nothing to be done" in (lambda p: p.stdout + p.stderr)(run(work))
    assert_same_results(work, clean)


def test_killed_mid_epoch(work, clean):
    shutil.rmtree(work / RUN)
    ckpt = work / RUN / "checkpoints"
    proc = start(work)
    kill_when(proc, lambda: (ckpt / "epoch001.pt").exists())
    assert not (ckpt / "epoch003.pt").exists() and not (work / RUN / "history.csv").exists()
    recover(work)
    assert_same_results(work, clean)


def test_killed_during_evaluation(work, clean):
    for path in (work / RUN).iterdir():
        if path.name not in ("checkpoints", "history.csv"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    proc = start(work)
    kill_when(proc, lambda: (work / RUN / "logits" / "epoch001.npz").exists())
    assert not (work / RUN / "scores.csv").exists()
    recover(work)
    assert_same_results(work, clean)


@pytest.mark.parametrize("epoch", [3, 2], ids=["last", "middle"])
def test_same_size_corruption_of_a_checkpoint(work, clean, epoch):
    """1,000 weights of a checkpoint overwritten (same size); the user recomputes the logits. The logits
    rule refuses the checkpoint; rerunning training as it says rebuilds it, and the results are the clean run's."""
    path = work / RUN / "checkpoints" / f"epoch{epoch:03d}.pt"
    overwrite_values(path)
    line = error_line(run(work, "--forcerun", "logits", check=False))
    assert f"{RUN}/checkpoints/epoch{epoch:03d}.pt: checkpoint altered since it was written" in line
    follow(work, line)
    assert_same_results(work, clean)


def test_missing_middle_checkpoint(work, clean):
    (work / RUN / "checkpoints" / "epoch002.pt").unlink()
    line = error_line(run(work, "--forcerun", "logits", check=False))
    assert f"{RUN}/checkpoints/epoch002.pt: checkpoint not found" in line
    follow(work, line)
    assert_same_results(work, clean)


def test_same_size_corruption_of_a_logits_file(work, clean):
    overwrite_values(work / RUN / "logits" / "epoch002.npz")
    line = error_line(run(work, "--forcerun", "calibrate", check=False))
    assert f"{RUN}/logits/epoch002.npz: altered since it was written" in line
    follow(work, line)
    assert_same_results(work, clean)
