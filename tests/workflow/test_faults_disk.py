"""A full disk and a read-only folder, met by the workflow and by `trustcal assess --out`.

Each fault is real: a small tmpfs that fills up, a read-only bind mount (root ignores mode bits,
a read-only mount refuses root too). Mounting needs root and a kernel that allows it; elsewhere
these tests are skipped with the reason. Each asserts: the run stops with one line naming the
file and the cause, nothing half-written is left, and the advice, followed (free space, make the
folder writable, rerun), ends in the results of a clean run.
"""

import io
import math
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.workflow import REPO, make_workdir, snakemake

from trustcal import cli

HISTORY = "results/mnist/seed0/history.csv"
CHECKPOINTS = "results/mnist/seed0/checkpoints"


class Mounts:
    """Mounts made by one test, unmounted (last first) when it ends."""

    def __init__(self):
        self.points: list[Path] = []

    def mount(self, *args: str, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"mounting is not allowed here (mount {' '.join(args)}: {proc.stderr.strip()})")
        self.points.append(target)

    def tmpfs(self, target: Path, size: int) -> None:
        self.mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", target=target)

    def read_only(self, target: Path) -> None:
        """``target`` (a folder) made read-only in place, by a read-only bind mount onto itself."""
        self.mount("--bind", "-o", "ro", str(target), target=target)

    def resize(self, target: Path, size: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(target)], check=True)

    def unmount(self, target: Path) -> None:
        subprocess.run(["umount", str(target)], check=True)
        self.points.remove(target)


@pytest.fixture
def mounts():
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs or a read-only folder needs root and the mount command")
    made = Mounts()
    yield made
    for point in reversed(made.points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


def error_lines(out: str, rule: str) -> list[str]:
    """The job's error lines (one per failure; the log's copy, timestamped, is not counted)."""
    return [line for line in out.splitlines() if line.startswith(f"ERROR (rule {rule}):")]


def same_training(history: Path, clean: Path) -> None:
    """history.csv of a resumed or rerun training equals the clean run's, bit for bit but the timings."""
    pd.testing.assert_frame_equal(
        pd.read_csv(history).drop(columns="seconds"), pd.read_csv(clean).drop(columns="seconds"), check_exact=True
    )


# --------------------------------------------------------------------------- the workflow


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A clean tiny training (mnist, 2 epochs): the results every repaired run must end with."""
    workdir = make_workdir(tmp_path_factory.mktemp("clean") / "work", datasets=["mnist"], epochs=2)
    snakemake(workdir, HISTORY, "--cores", "1")
    return workdir


@pytest.fixture
def untrained(clean, tmp_path):
    """A copy of the clean run before training: data prepared, no history, checkpoints or train log."""
    workdir = tmp_path / "work"
    shutil.copytree(clean, workdir, symlinks=True)
    shutil.rmtree(workdir / "results" / "mnist")
    (workdir / "results" / "logs" / "train" / "mnist" / "seed0.log").unlink()
    return workdir


def train(workdir: Path) -> subprocess.CompletedProcess:
    return snakemake(workdir, HISTORY, "--cores", "1", check=False)


pytestmark = pytest.mark.slow


def test_full_disk_during_training_names_the_checkpoint_and_freeing_space_resumes(clean, untrained, mounts):
    checkpoint_size = (clean / CHECKPOINTS / "epoch001.pt").stat().st_size
    checkpoints = untrained / CHECKPOINTS
    mounts.tmpfs(checkpoints, size=math.ceil(1.5 * checkpoint_size))  # room for epoch 1, not for epoch 2

    proc = train(untrained)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Traceback" not in out and "basic_ios" not in out, out
    [line] = error_lines(out, "train")
    assert f"{CHECKPOINTS}/epoch002.pt: cannot be written: no space left on device" in line, line
    assert "Fix: free space there" in line, line
    written = sorted(p.name for p in checkpoints.iterdir())
    assert "epoch001.pt" in written and "epoch002.pt" not in written, written
    assert not [name for name in written if name.startswith(".")], written  # nothing half-written left
    assert not (untrained / HISTORY).exists()

    mounts.resize(checkpoints, 4 * checkpoint_size)  # the advice: free space, rerun
    proc = train(untrained)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "resum" in (untrained / "results/logs/train/mnist/seed0.log").read_text().lower()
    same_training(untrained / HISTORY, clean / HISTORY)


@pytest.mark.parametrize(
    ("folder", "named"),
    [
        ("results/logs/train/mnist", "results/logs/train/mnist/seed0.log"),
        ("results/mnist/seed0", HISTORY),
    ],
    ids=["log folder", "results folder"],
)
def test_read_only_folder_stops_the_run_before_its_first_job(clean, untrained, mounts, folder, named):
    (untrained / folder).mkdir(parents=True, exist_ok=True)
    mounts.read_only(untrained / folder)

    proc = train(untrained)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Traceback" not in out, out
    lines = [line for line in out.splitlines() if "cannot be written" in line]
    assert len(lines) == 1, out
    assert lines[0].startswith(f"{named}: cannot be written: read-only file system ({untrained / folder})"), lines
    assert f"Fix: make {untrained / folder} writable" in lines[0]
    assert "rule train:" not in out  # before the job started

    mounts.unmount(untrained / folder)  # the advice: make it writable, rerun
    proc = train(untrained)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    same_training(untrained / HISTORY, clean / HISTORY)


def pages(path: Path) -> int:
    """The bytes a file takes on a tmpfs: whole pages."""
    return math.ceil(path.stat().st_size / 4096) * 4096


def test_full_disk_during_the_figures_rule_names_the_figure_and_leaves_nothing_half_written(clean, tmp_path, mounts):
    """Rule figures on a disk with room for the first figure's PNG but not its PDF: matplotlib's PDF writer fails
    again as it cleans up after the full disk, and the job ends in the full disk's one line all the same."""
    from trustcal.reporting.figures import FIGURES

    workdir = tmp_path / "work"
    shutil.copytree(clean, workdir, symlinks=True)
    first = next(f for f in FIGURES.values() if f.job == "figures")  # the job draws it first, PNG then PDF
    target = f"results/figures/mnist/{first.name}.png"
    figures = workdir / "results/figures/mnist"
    snakemake(workdir, target, "--cores", "1")  # the tables, and the figures on a disk with room
    png, pdf = figures / f"{first.name}.png", figures / f"{first.name}.pdf"
    room = pages(png) + 2 * 4096
    assert pdf.stat().st_size > 3 * 4096, pdf.stat().st_size
    shutil.rmtree(figures)
    mounts.tmpfs(figures.parent, size=room)  # not on the output folder: Snakemake removes it when the job fails

    proc = snakemake(workdir, target, "--cores", "1", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Traceback" not in out, out
    [line] = error_lines(out, "figures")
    assert f"results/figures/mnist/{first.name}.pdf: cannot be written: no space left on device" in line, line
    assert "Fix: free space there" in line, line
    assert "unexpected failure" not in (workdir / "results/logs/figures/mnist.log").read_text()
    assert not [p for p in figures.parent.rglob("*") if p.is_file()]  # outputs removed by Snakemake, no temporary

    mounts.resize(figures.parent, 64 * 1024 * 1024)  # the advice: free space, rerun
    proc = snakemake(workdir, target, "--cores", "1", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert pdf.stat().st_size > 3 * 4096


# --------------------------------------------------------------------------- a job's start-up and plain writes

FAKE_JOB = """
import errno, os, sys
from types import SimpleNamespace
sys.path.insert(0, {scripts!r})
from _common import run

snakemake = SimpleNamespace(log=[{log!r}], output=[{output!r}], rule="fake", wildcards={{}})


def main(sm):
{main}


run(snakemake, main)
"""

PLAIN_WRITE = """
    with open(sm.output[0], "wb") as fh:  # a plain write (not trustcal.files'), e.g. by a library
        fh.write(b"x" * (1 << 20))
        fh.flush()
        os.fsync(fh.fileno())
"""

# A library that fails again as it cleans up after the disk refused its write (matplotlib's PDF writer).
WRAPPED_FULL_DISK = """
    try:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    except OSError:
        raise AttributeError("'Stream' object has no attribute 'pos'")
"""


def fake_job(tmp_path: Path, log: Path, output: Path, main: str = PLAIN_WRITE) -> subprocess.CompletedProcess:
    code = FAKE_JOB.format(
        scripts=str(REPO / "workflow" / "scripts"), log=str(log), output=str(output), main=main.strip("\n")
    )
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_job_whose_log_folder_is_read_only_stops_with_one_line(tmp_path, mounts):
    logs = tmp_path / "logs"
    mounts.read_only(logs)
    proc = fake_job(tmp_path, logs / "fake.log", tmp_path / "out.bin")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"ERROR (rule fake): {logs / 'fake.log'}: cannot be written: read-only file system"), line
    assert not (tmp_path / "out.bin").exists()


def test_a_plain_write_onto_a_full_disk_stops_the_job_with_one_line(tmp_path, mounts):
    full = tmp_path / "full"
    mounts.tmpfs(full, size=64 * 1024)
    proc = fake_job(tmp_path, tmp_path / "fake.log", full / "out.bin")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"ERROR (rule fake): {full / 'out.bin'}: cannot be written: no space left on device"), line
    assert "ERROR" in (tmp_path / "fake.log").read_text()  # the log (on another disk) has it too


def test_an_error_raised_while_handling_a_full_disk_stops_the_job_with_one_line(tmp_path):
    """Every rule's script runs in _common.run: a library's second error, the full disk its context, is the full disk."""
    proc = fake_job(tmp_path, tmp_path / "fake.log", tmp_path / "out.pdf", main=WRAPPED_FULL_DISK)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    expected = f"ERROR (rule fake): {tmp_path / 'out.pdf'}: cannot be written: no space left on device"
    assert line.startswith(expected), line
    assert "unexpected failure" not in (tmp_path / "fake.log").read_text()


# --------------------------------------------------------------------------- trustcal assess --out


def assess(*args) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, err.getvalue()


@pytest.fixture
def predictions(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.arange(200) % 4
    logits = rng.normal(size=(200, 4))
    logits[np.arange(200), labels] += 2.0
    np.save(tmp_path / "epoch3.npy", logits)
    np.save(tmp_path / "labels.npy", labels)
    clean = tmp_path / "clean"
    args = ("assess", tmp_path / "epoch3.npy", "--labels", tmp_path / "labels.npy", "--kind", "logits", "--no-figures")
    code, err = assess(*args, "--out", clean)
    assert code == 0, err
    return args, clean


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_assess_out_onto_a_full_or_read_only_disk_names_the_folder_and_the_cause(tmp_path, predictions, mounts, fault):
    args, clean = predictions
    disk = tmp_path / "disk"
    if fault == "full":
        mounts.tmpfs(disk, size=8 * 1024)  # smaller than the tables
    else:
        disk.mkdir()
        mounts.read_only(disk)
    out = disk / "out"

    code, err = assess(*args, "--out", out)
    assert code != 0, err
    assert "Traceback" not in err, err
    cause = {"full": "no space left on device", "read-only": "read-only file system"}[fault]
    lines = [line for line in err.splitlines() if "cannot be written" in line]
    assert len(lines) == 1 and str(out) in lines[0] and cause in lines[0], err
    assert list(disk.iterdir()) == []  # nothing half-written

    if fault == "full":  # the advice: free space (or make the folder writable), rerun
        mounts.resize(disk, 64 * 1024 * 1024)
    else:
        mounts.unmount(disk)
    code, err = assess(*args, "--out", out)
    assert code == 0, err
    for table in ("scores.csv", "trust.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / table), pd.read_csv(clean / table), check_exact=True)


def test_assess_figures_onto_a_full_disk_stop_with_one_line_and_leave_out_as_it_was(tmp_path, predictions, mounts):
    """Room for the tables of two assessments and half of the figures: the rerun with figures into an earlier
    output stops at a figure with one line and exit 2 (not a figure skipped with a warning and exit 0), and the
    earlier output stays as it was."""
    args, clean = predictions
    with_figures = (*[a for a in args if a != "--no-figures"], "--figure-formats", "png,pdf")
    drawn = tmp_path / "drawn"
    code, err = assess(*with_figures, "--out", drawn)
    assert code == 0, err
    figures = sum(pages(p) for p in (drawn / "figures").iterdir())
    tables = sum(pages(p) for p in clean.iterdir() if p.is_file())
    disk = tmp_path / "disk"
    mounts.tmpfs(disk, size=2 * tables + figures // 2)
    out = disk / "out"
    code, err = assess(*args, "--out", out)
    assert code == 0, err
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    code, err = assess(*with_figures, "--out", out)
    assert code == 2, err
    assert "Traceback" not in err and "figure_skipped" not in err, err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {out}/figures/") and "cannot be written: no space left on device" in line, line
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in disk.iterdir()) == ["out"]  # no temporary, backup or lock left

    mounts.resize(disk, 64 * 1024 * 1024)  # the advice: free space, rerun
    code, err = assess(*with_figures, "--out", out)
    assert code == 0, err
    assert sorted(p.name for p in (out / "figures").iterdir()) == sorted(p.name for p in (drawn / "figures").iterdir())


# --------------------------------------------------------------------------- trustcal.files' writers


def test_torch_save_onto_a_full_disk_raises_a_disk_error_not_a_stream_error(tmp_path, mounts):
    """torch.save to a file name writes from C++, whose error ("basic_ios::clear: iostream error", "unexpected
    pos …") has no errno: the writer tells a full disk by a plain write beside the half-written file."""
    torch = pytest.importorskip("torch")
    from trustcal.files import DiskError, atomic_path

    full = tmp_path / "full"
    mounts.tmpfs(full, size=256 * 1024)
    with pytest.raises(DiskError, match=r"epoch001\.pt: cannot be written: no space left on device") as caught:
        with atomic_path(full / "epoch001.pt") as tmp:
            torch.save({"weights": torch.zeros(1 << 18)}, tmp)  # 1 MiB of float32
    assert isinstance(caught.value.__context__, RuntimeError) and "\n" not in str(caught.value)
    assert list(full.iterdir()) == []

    with pytest.raises(RuntimeError, match="not the disk"):  # any other failure passes through unchanged
        with atomic_path(tmp_path / "epoch001.pt"):
            raise RuntimeError("not the disk")
