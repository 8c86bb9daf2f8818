"""Atomic writes and the clean-up after a writer that was killed mid-write."""

import glob

import pandas as pd
import pytest

from trustcal.files import atomic_directory, atomic_path, paper_states, remove_stale_temporaries


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


def test_atomic_directory_replaces_the_whole_directory_only_on_success(tmp_path):
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


def test_paper_states_are_the_raw_model_and_temperature_scaling():
    table = pd.DataFrame(
        {"epoch": [1, 1, 1, 2], "calibrator": ["none", "temperature", "isotonic", "none"], "x": range(4)}
    )
    got = paper_states(table)
    assert got["calibrator"].tolist() == ["none", "temperature", "none"]
    assert got["calibrated"].tolist() == [False, True, False] and got["x"].tolist() == [0, 1, 3]
    assert list(got.columns) == ["epoch", "calibrator", "calibrated", "x"]
    old = pd.DataFrame({"epoch": [1, 1], "calibrated": ["True", "false"]})  # a table from before the column
    assert paper_states(old)["calibrated"].tolist() == [True, False]
