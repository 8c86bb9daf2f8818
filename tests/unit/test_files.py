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


def test_every_altered_or_missing_byte_of_an_npz_is_caught(tmp_path):
    """write_npz seals the archive with its content digest: flipping any one byte, or cutting the file
    anywhere, makes read_npz refuse it with the rule to rerun; the sealed file reads as before."""
    import numpy as np

    from trustcal.errors import TrustcalError
    from trustcal.files import read_npz, verify_zip, write_npz

    path = tmp_path / "epoch001.npz"
    arrays = dict(val_logits=np.arange(12.0).reshape(4, 3), val_labels=np.array([0, 2, 1, 1]))
    write_npz(path, **arrays)
    assert verify_zip(path) is True
    with np.load(path) as plain:  # any zip reader still reads it
        assert np.array_equal(plain["val_logits"], arrays["val_logits"])
    whole = path.read_bytes()
    for i in range(len(whole)):
        path.write_bytes(whole[:i] + bytes([whole[i] ^ 0x10]) + whole[i + 1 :])
        with pytest.raises(TrustcalError, match=r"epoch001\.npz: .*forcerun logits"):
            read_npz(path, ("val_logits",), rule="logits")
    for n in range(len(whole)):
        path.write_bytes(whole[:n])
        with pytest.raises(TrustcalError, match=r"epoch001\.npz: unreadable or truncated.*forcerun logits"):
            read_npz(path, ("val_logits",), rule="logits")
    path.write_bytes(whole)
    assert read_npz(path, None, rule="logits").keys() == arrays.keys()


def test_an_npz_written_before_digests_is_read_with_one_warning_per_directory(tmp_path, caplog):
    import logging

    import numpy as np

    from trustcal.files import read_npz

    for e in (1, 2):
        np.savez(tmp_path / f"epoch{e:03d}.npz", x=np.arange(e))
    with caplog.at_level(logging.WARNING, logger="trustcal.files"):
        assert [read_npz(tmp_path / f"epoch{e:03d}.npz", ("x",), rule="logits")["x"].size for e in (1, 2)] == [1, 2]
    assert ["cannot be verified" in r.message and str(tmp_path) in r.message for r in caplog.records] == [True]
