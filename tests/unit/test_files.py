"""Atomic writes and the clean-up after a writer that was killed mid-write."""

import errno
import glob
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from trustcal.errors import TrustcalError
from trustcal.files import (
    DiskError,
    atomic_directory,
    atomic_path,
    path_seed,
    read_seeds,
    remove_stale_temporaries,
    run_key,
    written_files,
)


def test_atomic_path_replaces_the_target_only_on_success(tmp_path):
    target = tmp_path / "sub" / "table.csv"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp.name.startswith(".table.csv.") and tmp.name.endswith(".tmp")
        tmp.write_text("first")
        assert not target.exists()
    assert target.read_text() == "first"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash")
    assert target.read_text() == "first" and sorted(p.name for p in target.parent.iterdir()) == ["table.csv"]


def test_atomic_directory_writes_the_directory_only_on_success(tmp_path):
    out = tmp_path / "out"
    with atomic_directory(out, "done.json") as tmp:
        (tmp / "a.csv").write_text("1")
        (tmp / "done.json").write_text("{}")
    with pytest.raises(RuntimeError):
        with atomic_directory(out, "done.json") as tmp:
            (tmp / "b.csv").write_text("2")
            raise RuntimeError("crash")
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "done.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_stale_temporaries_of_the_named_targets_only_are_removed(tmp_path):
    """What a SIGKILL during atomic_path / atomic_directory leaves behind, and what must stay."""
    (tmp_path / "scores.csv").write_text("complete")
    (tmp_path / ".scores.csv.k2j3.tmp").write_text("half")
    (tmp_path / ".figures.x8q1.tmp").mkdir()
    (tmp_path / ".figures.x8q1.tmp" / "a.png").write_bytes(b"half")
    (tmp_path / ".figures.p0p0.old").mkdir()  # killed between the two renames of atomic_directory
    (tmp_path / ".trust.csv.k2j3.tmp").write_text("another job's, still being written")
    (tmp_path / ".epoch001.pt.zz.tmp").write_text("half")
    (tmp_path / ".epoch002.pt.zz.tmp").write_text("half")

    removed = remove_stale_temporaries(tmp_path, glob.escape("scores.csv"))
    removed += remove_stale_temporaries(tmp_path, "figures")
    assert sorted(p.name for p in removed) == [".figures.p0p0.old", ".figures.x8q1.tmp", ".scores.csv.k2j3.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".epoch001.pt.zz.tmp",
        ".epoch002.pt.zz.tmp",
        ".trust.csv.k2j3.tmp",
        "scores.csv",
    ]
    assert len(remove_stale_temporaries(tmp_path, "epoch*.pt")) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [".trust.csv.k2j3.tmp", "scores.csv"]


# --------------------------------------------------------------------------- a rewrite keeps what it did not write


def write_result(out, files: dict[str, str], kept=None, marker="done.json"):
    """An atomic_directory write of ``files`` (relative path → text), its marker listing them."""
    with atomic_directory(out, marker, kept) as tmp:
        for rel, text in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)
        (tmp / marker).write_text(json.dumps({"written": [*written_files(tmp), marker]}))


def snapshot(folder) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


FIRST = {"a.csv": "a1", "figures/old.png": "old", "figures/both.png": "b1", "sub/only.csv": "only"}
SECOND = {"a.csv": "a2", "figures/both.png": "b2", "b.csv": "new"}
USERS = {"my_notes.txt": "notes", "mydata/x": "data", "figures/mine.png": "mine"}


def add_users_files(out) -> None:
    for rel, text in USERS.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)


def test_a_rewrite_replaces_its_own_files_and_keeps_every_other_file(tmp_path):
    """The marker lists what a write wrote: the next write replaces what it writes again and removes the rest
    of that list (a folder left empty too); the user's files, at the top, in a folder of theirs or in one of
    the writer's, stay and are named."""
    out = tmp_path / "out"
    write_result(out, FIRST)
    add_users_files(out)
    kept = []
    write_result(out, SECOND, kept)
    assert snapshot(out) == {**SECOND, **USERS, "done.json": json.dumps({"written": [*sorted(SECOND), "done.json"]})}
    assert not (out / "sub").exists()  # emptied by the removal of sub/only.csv, which the first write wrote
    assert kept == sorted(USERS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary, backup or lock left

    (tmp_path / "outside.txt").write_text("not in out")  # a marker listing files outside its folder
    (out / "done.json").write_text(json.dumps({"written": ["../outside.txt", str(tmp_path / "outside.txt")]}))
    write_result(out, SECOND)
    assert (tmp_path / "outside.txt").read_text() == "not in out"


@pytest.mark.parametrize("marker_text", ["{}", '{"written": "a.csv"}', "not json"])
def test_a_marker_without_the_list_keeps_every_file_not_written_again(tmp_path, marker_text):
    """An older marker, or one copied into the folder, lists nothing: only what the write writes is replaced."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "done.json").write_text(marker_text)
    (out / "a.csv").write_text("copied")
    (out / "keep.txt").write_text("precious")
    kept = []
    write_result(out, {"a.csv": "new"}, kept)
    assert (out / "keep.txt").read_text() == "precious" and (out / "a.csv").read_text() == "new"
    assert kept == ["keep.txt"]


def test_a_read_only_file_of_the_users_is_kept_but_one_the_write_would_replace_refuses_it(tmp_path):
    out = tmp_path / "out"
    write_result(out, FIRST)
    add_users_files(out)
    for rel in ("my_notes.txt", "mydata/x", "mydata"):
        (out / rel).chmod(0o555)
    try:
        kept = []
        write_result(out, SECOND, kept)  # nothing of theirs is written: their protection does not matter
        assert kept == sorted(USERS) and {k: v for k, v in snapshot(out).items() if k in USERS} == USERS
        for rel in ("b.csv", "figures"):  # one the write replaces, one it writes into
            (out / rel).chmod(0o555)
            with pytest.raises(TrustcalError, match=rf"{rel} in the output directory is read-only"):
                write_result(out, SECOND)
            (out / rel).chmod(0o755)
    finally:
        for rel in ("my_notes.txt", "mydata/x", "mydata"):
            (out / rel).chmod(0o755)


def counting_replace(monkeypatch, on_call):
    """os.replace calling ``on_call(n)`` before its n-th call (from 0); the renames made are returned."""
    real = os.replace
    calls = []

    def replace(src, dst):
        n = len(calls)
        calls.append((src, dst))
        on_call(n)
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return calls


def test_a_failure_at_any_step_of_moving_the_files_in_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    pristine = tmp_path / "pristine"
    write_result(pristine, FIRST)
    add_users_files(pristine)
    before = snapshot(pristine)
    step, steps = 0, None
    while steps is None or step < steps:
        out = tmp_path / "out"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(pristine, out)

        def fail(n, step=step):
            if n == step:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        with monkeypatch.context() as m:
            calls = counting_replace(m, fail)
            try:
                write_result(out, SECOND)
            except DiskError as exc:
                assert f"{out}: cannot be written: no space left on device" in str(exc)
                assert snapshot(out) == before, step
                assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "pristine"], step
            else:
                steps = len(calls)  # the step that failed was past the last one: all of them were tried
                assert steps > 4
        step += 1
    kept = []
    write_result(out, SECOND, kept)  # the same write, succeeding
    assert kept == sorted(USERS) and {k: v for k, v in snapshot(out).items() if k in USERS} == USERS


@pytest.mark.parametrize("crash_at", range(12))
def test_a_crash_while_the_files_move_in_loses_no_file_and_never_looks_complete(tmp_path, crash_at):
    """A writer killed at any step of moving its files into place (os._exit in a forked child): the user's
    files are all there, the marker is the old or the new one with every file it lists, or absent (a
    journal then says the write was interrupted); the next write ends in the complete result."""
    out = tmp_path / "out"
    write_result(out, FIRST)
    add_users_files(out)
    real = os.replace
    pid = os.fork()
    if pid == 0:  # the child: write, and die at the crash_at-th rename of the commit
        try:
            calls = []

            def replace(src, dst):
                if len(calls) == crash_at:
                    os._exit(9)
                calls.append(dst)
                return real(src, dst)

            os.replace = replace
            write_result(out, SECOND)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    crashed = os.waitstatus_to_exitcode(status) == 9
    state = snapshot(out)
    assert {k: v for k, v in state.items() if k in USERS} == USERS
    if "done.json" in state:
        listed = json.loads(state["done.json"])["written"]
        expected = FIRST if "sub/only.csv" in listed else SECOND
        assert {k: state.get(k) for k in expected} == expected
    else:
        assert crashed and "done.json.incomplete" in state
    kept = []
    write_result(out, SECOND, kept)
    assert kept == sorted(USERS)
    assert snapshot(out) == {**SECOND, **USERS, "done.json": json.dumps({"written": [*sorted(SECOND), "done.json"]})}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# --------------------------------------------------------------------------- one writer at a time


def hold_a_write(out, finish: bool):
    """Fork a writer that opens an atomic_directory write of ``out`` and writes a file into it; returns
    (its pid, its temporary directory, a pipe that lets it go on). It finishes the write when let go
    (``finish``), else dies at once (os._exit: as a SIGKILL, its lock released by the kernel)."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            with atomic_directory(out, "done.json") as tmp:
                (tmp / "theirs.csv").write_text("first writer")
                os.write(ready_w, str(tmp).encode())
                if not finish:
                    os._exit(0)
                os.read(go_r, 1)
                (tmp / "done.json").write_text(json.dumps({"written": ["theirs.csv", "done.json"]}))
        finally:
            os._exit(0)
    tmp = Path(os.read(ready_r, 4096).decode())
    return pid, tmp, go_w


def test_a_second_writer_stops_at_once_naming_the_first_and_leaves_its_temporary(tmp_path):
    out = tmp_path / "out"
    pid, theirs, go = hold_a_write(out, finish=True)
    try:
        with pytest.raises(TrustcalError) as caught:
            with atomic_directory(out, "done.json"):
                pytest.fail("a second writer ran")
        message = str(caught.value)
        assert "\n" not in message and message.startswith(f"{out}: another trustcal run (pid {pid} on ")
        assert "started" in message and "Fix: wait until that run has finished" in message
        assert remove_stale_temporaries(tmp_path, "out") == [] and (theirs / "theirs.csv").exists()
    finally:
        os.write(go, b"x")
        os.waitpid(pid, 0)
    assert snapshot(out) == {"theirs.csv": "first writer", "done.json": '{"written": ["theirs.csv", "done.json"]}'}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_temporary_and_the_lock_of_a_dead_writer_are_removed_by_the_next_write(tmp_path):
    out = tmp_path / "out"
    pid, theirs, _ = hold_a_write(out, finish=False)
    os.waitpid(pid, 0)
    assert theirs.is_dir() and (tmp_path / ".out.lock").exists()  # what a SIGKILL leaves
    write_result(out, {"a.csv": "1"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert snapshot(out)["a.csv"] == "1" and "theirs.csv" not in snapshot(out)


def test_every_altered_or_missing_byte_of_an_npz_is_caught(tmp_path):
    """write_npz seals the archive with its content digest: flipping any one byte, or cutting the file
    anywhere, makes read_result_npz refuse it with the rule to rerun; the sealed file reads as before."""
    import numpy as np

    from trustcal.errors import TrustcalError
    from trustcal.files import read_result_npz, verify_zip, write_npz

    path = tmp_path / "epoch001.npz"
    arrays = dict(val_logits=np.arange(12.0).reshape(4, 3), val_labels=np.array([0, 2, 1, 1]))
    write_npz(path, **arrays)
    assert verify_zip(path) is True
    with np.load(path) as plain:  # any zip reader still reads it
        assert np.array_equal(plain["val_logits"], arrays["val_logits"])
    whole = path.read_bytes()
    for i in range(len(whole)):
        path.write_bytes(whole[:i] + bytes([whole[i] ^ 0x10]) + whole[i + 1 :])
        with pytest.raises(TrustcalError, match=r"epoch001\.npz: .*rerun rule 'logits'") as err:
            read_result_npz(path, ("val_logits",), rule="logits")
        assert err.value.rerun == "logits"
    for n in range(len(whole)):
        path.write_bytes(whole[:n])
        with pytest.raises(TrustcalError, match=r"epoch001\.npz: unreadable or truncated.*rerun rule 'logits'"):
            read_result_npz(path, ("val_logits",), rule="logits")
    path.write_bytes(whole)
    assert read_result_npz(path, None, rule="logits").keys() == arrays.keys()


def test_an_npz_written_before_digests_is_read_with_one_warning_per_directory(tmp_path, caplog):
    import logging

    import numpy as np

    from trustcal.files import read_result_npz

    for e in (1, 2):
        np.savez(tmp_path / f"epoch{e:03d}.npz", x=np.arange(e))
    with caplog.at_level(logging.WARNING, logger="trustcal.files"):
        assert [read_result_npz(tmp_path / f"epoch{e:03d}.npz", ("x",), rule="logits")["x"].size for e in (1, 2)] == [
            1,
            2,
        ]
    assert ["cannot be verified" in r.message and str(tmp_path) in r.message for r in caplog.records] == [True]


# --- Pickles read without running code (issue 27) --------------------------------------------------


class _Reduces:
    """Pickles as the call ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_a_plain_pickle_is_read_whole(protocol):
    """Plain data and NumPy arrays, dtypes and scalars, in any protocol (bytes through _codecs.encode in 2)."""
    import io
    import pickle

    import numpy as np

    from trustcal.files import load_plain_pickle

    obj = {
        "data": np.arange(12, dtype=np.uint8).reshape(3, 4),
        "objects": np.array([1, "a", None], dtype=object),
        "scalar": np.float32(0.5),
        "dtype": np.dtype("<i8"),
        "plain": [1, 2.5, "s", b"\x00\xff", b"", (True, None), {"k": -(2**70)}],
    }
    back = load_plain_pickle(io.BytesIO(pickle.dumps(obj, protocol=protocol)), "a test file")
    assert back.keys() == obj.keys() and back["plain"] == obj["plain"] and back["dtype"] == obj["dtype"]
    np.testing.assert_array_equal(back["data"], obj["data"])
    assert back["data"].dtype == np.uint8 and list(back["objects"]) == [1, "a", None]
    assert back["scalar"] == obj["scalar"] and type(back["scalar"]) is np.float32


def test_a_pickle_naming_anything_else_is_refused_before_it_runs(tmp_path):
    import codecs
    import io
    import pickle

    from helpers.payload import Payload

    from trustcal.files import RefusedPickle, load_plain_pickle

    marker = tmp_path / "ran"
    for obj, names in [
        ({"x": [Payload(marker)]}, "it names posix.system, which a test file never needs"),
        (_Reduces(codecs.encode, "x", "rot13"), "_codecs.encode with encoding 'rot13'"),
        (_Reduces(bytes, 10**12), "bytes with arguments"),
        (_Reduces(eval, "1 + 1"), "eval, which a test file never needs"),  # __builtin__.eval in protocol 2
    ]:
        with pytest.raises(RefusedPickle, match=re.escape(names)):
            load_plain_pickle(io.BytesIO(pickle.dumps(obj, protocol=2)), "a test file")
    assert not marker.exists()


# --------------------------------------------------------------------------- the results contract


def test_the_seed_of_a_path_is_its_last_seed_part():
    assert path_seed("results/mnist/seed3/trust.csv") == 3
    assert path_seed("results/logs/train/mnist/seed12.log") == 12  # a per-run log names it in its own name
    assert path_seed("/runs/seed1/results/mnist/seed4/scores.csv") == 4  # the run's folder, not an ancestor
    assert path_seed("results/mnist/seeds/trust.csv") is None and path_seed("results/seed/x.csv") is None
    assert path_seed("results/mnist/trust.csv") is None


def test_run_key_reads_dataset_and_seed_of_a_per_run_table():
    assert run_key("results/cifar10/seed07/trust.csv") == ("cifar10", 7)
    for path in ("seed3/trust.csv", "results/mnist/trust.csv", "results/mnist/seed3/sub/trust.csv"):
        with pytest.raises(TrustcalError, match="expected a path"):
            run_key(path)


def test_read_seeds_adds_each_tables_seed(tmp_path):
    paths = []
    for seed, value in ((2, 0.5), (5, 0.25)):
        (tmp_path / "mnist" / f"seed{seed}").mkdir(parents=True)
        paths.append(tmp_path / "mnist" / f"seed{seed}" / "t.csv")
        pd.DataFrame({"epoch": [1], "x": [value]}).to_csv(paths[-1], index=False)
    pd.DataFrame({"epoch": [1], "x": [1.0]}).to_csv(tmp_path / "alone.csv", index=False)
    df = read_seeds([*paths, tmp_path / "alone.csv"], ("epoch", "x"), rule="t")
    assert df[["x", "seed"]].values.tolist() == [[0.5, 2], [0.25, 5], [1.0, 0]]  # no seed in the path: seed 0
    with pytest.raises(TrustcalError, match="no t table given"):
        read_seeds([], ("epoch",), rule="t")
