"""A `trustcal assess` killed while it assesses a series: its forked workers end with it, whatever kills it, and
the next run into the same --out works (the kernel released the lock, the next run removes what was left).

Real processes: the command runs as a user runs it (``python -m trustcal``) on a series long enough for its
epochs to be shared out over forked workers, and is killed once those workers are at work."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from trustcal import cli
from trustcal.calibration.temperature import softmax

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="forked workers and /proc: Linux (elsewhere no process is forked)"
)

EPOCHS, SAMPLES, CLASSES = 40, 3000, 10


@pytest.fixture
def series(tmp_path):
    """EPOCHS files of SAMPLES × CLASSES probabilities: seconds of work for the default bootstrap."""
    d = tmp_path / "series"
    d.mkdir()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, CLASSES, SAMPLES)
    for epoch in range(1, EPOCHS + 1):
        logits = rng.normal(0, 1.5, (SAMPLES, CLASSES))
        logits[np.arange(SAMPLES), labels] += 2.0
        np.savez(d / f"epoch{epoch:03d}.npz", probs=softmax(logits), labels=labels)
    return d


def _state(pid: int) -> str | None:
    """The state letter of process ``pid`` (R, S, Z …), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z", "X")  # a zombie has ended; only its exit status waits to be read


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def _command(series: Path, out: Path) -> list[str]:
    """``trustcal assess series --out out --no-figures`` as a user runs it."""
    return [sys.executable, "-m", "trustcal", "assess", str(series), "--out", str(out), "--no-figures"]


def _start(series: Path, out: Path, log) -> subprocess.Popen:
    """:func:`_command` started, its output into the file ``log``."""
    return subprocess.Popen(_command(series, out), stdout=log, stderr=log, text=True)


def _at_work(proc: subprocess.Popen, log, timeout: float = 240.0) -> list[int]:
    """The forked workers of ``proc``, once there are some at work (waits for them)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        workers = [p for p in _children(proc.pid) if _alive(p)]
        if workers:
            time.sleep(0.5)  # well into their tasks
            workers = [p for p in _children(proc.pid) if _alive(p)]
            if workers:
                return workers
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail(f"trustcal assess ended before forking its workers:\n{log.read()}")
        time.sleep(0.02)
    pytest.fail("trustcal assess forked no worker")


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    """The processes of ``pids`` still alive after ``seconds`` (none, as soon as they are all gone)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _rerun(series: Path, out: Path) -> tuple[int, str]:
    """``trustcal assess series --out out``, quickly (no figures, no bootstrap): (exit code, stderr)."""
    command = [*_command(series, out), "--bootstrap", "0"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stderr


@pytest.fixture(autouse=True)
def two_cores():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: trustcal assess forks no worker")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_run_leaves_no_process_and_the_next_run_into_its_out_works(series, tmp_path, sig):
    out = tmp_path / "out"
    with tempfile.TemporaryFile("w+") as log:  # not a pipe: a worker left alive would hold it open
        proc = _start(series, out, log)
        try:
            workers = _at_work(proc, log)
            os.kill(proc.pid, sig)
            proc.wait(timeout=5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        left = _gone_within(workers, 5)
        for pid in left:  # the bug's orphans: ended here, so that the test leaves nothing behind
            os.kill(pid, signal.SIGKILL)
        assert left == [], f"workers of the killed run still alive 5 s after it: {left}"
        log.seek(0)
        stderr = log.read()
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        # what a killed run cannot clean up: its lock file (no longer locked) and its temporary directory
        left = sorted(p.name for p in tmp_path.iterdir() if p.name != "series")
        assert len(left) == 2 and ".out.lock" in left, left
        assert re.fullmatch(r"\.out\.\w+\.tmp", next(name for name in left if name != ".out.lock")), left
    else:  # taken as an interruption: nothing left behind
        assert proc.returncode == 128 + signal.SIGTERM
        assert stderr.splitlines()[-1] == "error: stopped by SIGTERM; nothing was written", stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["series"]
    code, stderr = _rerun(series, out)
    assert code == 0, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "series"]  # no lock, no temporary left
    assert (out / "assess.json").is_file() and (out / "scores.csv").is_file()


def test_workers_hold_no_copy_of_the_lock_of_out(series, tmp_path):
    """The lock of --out is the parent's alone: its forked workers closed their inherited copies of it, so the
    lock goes with the parent (no worker could keep the folder locked)."""
    out = tmp_path / "out"
    with tempfile.TemporaryFile("w+") as log:
        proc = _start(series, out, log)
        try:
            workers = _at_work(proc, log)
            lock = str(tmp_path / ".out.lock")

            def holders(pid: int) -> list[str]:
                try:
                    fds = list(Path(f"/proc/{pid}/fd").iterdir())
                except FileNotFoundError:
                    return []
                return [fd.name for fd in fds if os.path.realpath(fd) == lock]

            held = {pid: holders(pid) for pid in workers}
            assert holders(proc.pid) != []  # the parent holds it …
        finally:
            proc.kill()
            proc.wait()
        for pid in _gone_within(workers, 5):
            os.kill(pid, signal.SIGKILL)
    assert held == {pid: [] for pid in workers}  # … its workers do not


def test_sigterm_is_an_interruption_only_while_the_command_runs(monkeypatch, tmp_path, capsys):
    """cli.main takes SIGTERM for itself while it runs (exit 143 and one line), and gives the handler back."""
    seen = []

    def assess(args):
        seen.append(signal.getsignal(signal.SIGTERM))
        raise cli.Terminated()

    monkeypatch.setattr(cli, "run_assess", assess)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["assess", "preds.csv", "--out", str(tmp_path / "out")]) == 128 + signal.SIGTERM
    assert seen == [cli._terminated] and signal.getsignal(signal.SIGTERM) is before
    assert capsys.readouterr().err == "error: stopped by SIGTERM; nothing was written\n"
