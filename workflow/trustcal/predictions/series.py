"""Epoch series: the prediction files named by files, directories or globs, with epoch and state.

An epoch series is several files whose names carry the epoch and, optionally,
the state before/after calibration (:data:`DEFAULT_NAME_PATTERN`, defined beside
:class:`~trustcal.predictions.options.ReadOptions`, which checks the pattern).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trustcal.predictions.errors import SeriesError, UnreadableFile
from trustcal.predictions.options import DEFAULT_NAME_PATTERN, ReadOptions, name_regex

AFTER_WORDS = ("after", "aft", "calibrated")
PRED_SUFFIXES = (".csv", ".tsv", ".txt", ".npz", ".npy", ".parquet", ".pq", ".feather", ".arrow")


@dataclass(frozen=True)
class PredictionFile:
    path: Path
    epoch: int
    calibrated: bool | None  # None: the name does not say (read as before calibration)


def stem(path: str | Path) -> str:
    """The file name without ``.gz`` and a known prediction extension."""
    name = Path(path).name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    for suffix in PRED_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def parse_name(path: str | Path, pattern: str = DEFAULT_NAME_PATTERN) -> tuple[int | None, bool | None]:
    """(epoch, calibrated) from a file name; None where the name does not say."""
    m = name_regex(pattern).search(stem(path))
    if not m or m.group("epoch") is None:
        return None, None
    state = m.groupdict().get("state")
    calibrated = None if state is None else state.lower() in AFTER_WORDS
    return int(m.group("epoch")), calibrated


def _is_prediction_name(name: str) -> bool:
    name = name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    return name.endswith(PRED_SUFFIXES)


# A training history in a prediction directory is used without being named (as `history`):
# the author's pickled losses, or the workflow's own history table.
HISTORY_NAMES = ("loss_history.npy", "history.csv")


def history_beside(skipped: Sequence[Path]) -> Path | None:
    """The training history among the files :func:`discover` skipped in a directory, if exactly one."""
    found = [p for p in skipped if p.name in HISTORY_NAMES]
    return found[0] if len(found) == 1 else None


def discover(sources, opts: ReadOptions = ReadOptions()) -> tuple[list[PredictionFile], list[Path]]:
    """The prediction files named by ``sources`` (files, directories or globs), with epoch and state.

    Returns the files, sorted by (epoch, state), and the files of a directory
    that were skipped because their name holds no epoch number. A lone file
    whose name holds no epoch number is epoch 0.
    """
    if isinstance(sources, (str, Path)):
        sources = [sources]
    skip = {Path(p).resolve() for p in (opts.labels, opts.validation) if p}
    found: list[tuple[Path, bool]] = []  # (path, came from a directory)
    for src in map(str, sources):
        p = Path(src)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and _is_prediction_name(f.name))
            files = [f for f in files if f.resolve() not in skip]
            if not files:
                raise SeriesError(
                    f"{p}: no prediction files in this directory; expected files named like bef_10.csv(.gz), "
                    f"aft_10.csv, epoch010.npz or epoch010.npy ({', '.join(PRED_SUFFIXES)}, optionally .gz). "
                    "Fix: name the directory that holds them, or the files themselves."
                )
            found += [(f, True) for f in files]
        elif p.exists():
            found.append((p, False))
        elif glob.has_magic(src):
            matches = sorted(Path(m) for m in glob.glob(src) if Path(m).is_file())
            if not matches:
                raise SeriesError(f"{src}: no file matches this pattern. Fix: check the path and the wildcard.")
            found += [(m, False) for m in matches]
        else:
            raise UnreadableFile(f"{src}: file or directory not found. Fix: check the path.")
    unique = list({f.resolve(): (f, d) for f, d in found}.values())
    single = len(unique) == 1
    files, skipped = [], []
    for path, from_dir in unique:
        epoch, calibrated = parse_name(path, opts.name_pattern)
        if epoch is None:
            if single:
                epoch = 0
            elif from_dir:
                skipped.append(path)
                continue
            else:
                raise SeriesError(
                    f"{path}: cannot read the epoch from the file name; a series needs names like bef_10.csv, "
                    "aft_10.csv or epoch010.npz. Fix: rename the files, or pass name_pattern=REGEX with a group "
                    "(?P<epoch>\\d+) (and optionally (?P<state>before|after)).",
                    options=("name_pattern",),
                )
        files.append(PredictionFile(path, epoch, calibrated))
    if not files:
        raise SeriesError(
            f"{', '.join(map(str, sources))}: none of the files has an epoch number in its name "
            f"({', '.join(p.name for p in skipped)}). Fix: rename them like epoch010.npz or bef_10.csv, "
            "or pass name_pattern=REGEX.",
            options=("name_pattern",),
        )
    seen: dict[tuple[int, bool], Path] = {}
    for f in files:
        key = (f.epoch, bool(f.calibrated))
        if key in seen:
            state = "after" if key[1] else "before"
            raise SeriesError(
                f"{seen[key]} and {f.path}: both are epoch {f.epoch}, {state} calibration. "
                "Fix: assess them separately, or pass name_pattern=REGEX that tells them apart.",
                options=("name_pattern",),
            )
        seen[key] = f.path
    files.sort(key=lambda f: (f.epoch, bool(f.calibrated)))
    return files, skipped
