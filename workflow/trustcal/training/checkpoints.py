"""Checkpoints, one per epoch: written atomically and bit for bit, sealed with their content digest, read with
``torch.load(weights_only=True)``; where a run resumes from; and each epoch's record (its checkpoint, its
seconds beside it, its log line, the progress bar)."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch
from torch.torch_version import TorchVersion
from tqdm import tqdm

from trustcal.errors import TrustcalError
from trustcal.files import DigestMismatch, atomic_path, seal_zip, verify_zip, write_csv
from trustcal.training.config import TrainConfig
from trustcal.training.history import HISTORY_COLUMNS

log = logging.getLogger(__name__)

CHECKPOINT_RE = re.compile(r"epoch(\d{3,})\.pt$")
# Each epoch's wall-clock seconds, beside the checkpoints: inside them, two identical runs would differ.
SECONDS_FILE = "seconds.csv"


def checkpoint_path(ckpt_dir: str | Path, epoch: int) -> Path:
    return Path(ckpt_dir) / f"epoch{epoch:03d}.pt"


def save_checkpoint(path: str | Path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically, sealed with its content digest.

    ``torch.save`` to a path records the file's name in the archive (a random temporary name
    here); saved through a file object, the archive's name is always ``archive``, so equal
    states give equal bytes.
    """
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            torch.save(state, fh)
        seal_zip(tmp)


# Checkpoints written by earlier versions hold torch.__version__ itself: a TorchVersion, a str subclass whose
# constructor only makes a string. torch.load(weights_only=True) refuses it by default; it is admitted by
# name, so those checkpoints are read (and resumed from) without running anything else.
_EARLIER_CHECKPOINT_GLOBALS = [TorchVersion]


class _Unreadable(Exception):
    """A checkpoint :func:`_read_checkpoint` cannot or will not read; the message follows "checkpoint"."""


def _first_line(exc: BaseException) -> str:
    """The cause in ``exc``'s message: torch.load's advice on loading unsafely left out."""
    text = str(exc)
    cause = re.search(r"WeightsUnpickler error: ([^\n]*)", text)
    line = cause.group(1) if cause else (text.splitlines() or [""])[0]
    return line.split(" Please use `torch.serialization", 1)[0].strip()


def _refusal(path: str | Path) -> str | None:
    """What ``torch.load(weights_only=True)`` would refuse in the checkpoint's pickle, from a scan of its
    opcodes (nothing is imported or called): "refused: it names …" or "unreadable (…)" when the pickle
    cannot be scanned, None when it names only what a checkpoint holds."""
    try:
        with torch.serialization.safe_globals(_EARLIER_CHECKPOINT_GLOBALS):
            unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception as exc:  # not a torch.save archive, truncated, opcodes a checkpoint never holds
        return f"unreadable ({type(exc).__name__}: {_first_line(exc)})"
    if unsafe:
        return (
            f"refused: it names {', '.join(sorted(unsafe))}, which a checkpoint never holds "
            "(only tensors and plain data are read, never code)"
        )
    return None


def _read_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """``torch.load(weights_only=True)`` of ``path``: tensors and plain data only, never code (and
    :data:`_EARLIER_CHECKPOINT_GLOBALS`). Raises :class:`_Unreadable` saying why it was not read."""
    try:
        with torch.serialization.safe_globals(_EARLIER_CHECKPOINT_GLOBALS):
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated zip, pickle errors, a global it refuses, …
        raise _Unreadable(_refusal(path) or f"unreadable ({type(exc).__name__}: {_first_line(exc)})") from None


def checkpoint_problem(path: str | Path) -> str | None:
    """Why the checkpoint at ``path`` cannot be trusted ("missing", "unreadable or truncated (…)",
    "altered since it was written (…)", "unreadable (…)", "refused: it names …"), or None when its
    bytes match its content digest and its pickle names only what a checkpoint holds (tensors and
    plain data; checked by a scan, nothing run). A checkpoint written before digests
    (:func:`trustcal.files.verify_zip` warns once) cannot be verified: it passes if it is read."""
    try:
        sealed = verify_zip(path)
    except FileNotFoundError:
        return "missing"
    except DigestMismatch as exc:
        return str(exc)
    if sealed:
        return _refusal(path)  # the digest is unkeyed: a substituted file can carry a matching one
    try:
        _read_checkpoint(path)
    except _Unreadable as exc:
        return str(exc)
    return None


RETRAIN = (
    "rerun training (rule 'train'), which resumes from the last checkpoint "
    "before it that verifies and rewrites this one"
)


def load_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """Load a checkpoint written by :func:`train_seeds` once its content digest verifies, with a
    clear error when it is missing, damaged or names anything but tensors and plain data (never run)."""
    path = Path(path)
    try:
        verify_zip(path)
    except FileNotFoundError:
        raise TrustcalError(f"{path}: checkpoint not found; {RETRAIN}.", rerun="train") from None
    except DigestMismatch as exc:
        raise TrustcalError(f"{path}: checkpoint {exc}; {RETRAIN}.", rerun="train") from None
    try:
        return _read_checkpoint(path, map_location)
    except _Unreadable as exc:  # a file without a digest (truncated zip, pickle errors), or one naming code
        raise TrustcalError(f"{path}: checkpoint {exc}; {RETRAIN}.", rerun="train") from None


def recorded_seconds(ckpt_dir: Path) -> dict[int, float]:
    """Epoch → wall-clock seconds from :data:`SECONDS_FILE` (empty when it is missing or unreadable: timing only)."""
    try:
        df = pd.read_csv(ckpt_dir / SECONDS_FILE)
        return dict(zip(df["epoch"].astype(int), df["seconds"].astype(float)))
    except (OSError, ValueError, KeyError, pd.errors.ParserError):
        return {}


def existing_epochs(ckpt_dir: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in ckpt_dir.glob("epoch*.pt") if (m := CHECKPOINT_RE.search(p.name)))


def find_resume_point(ckpt_dir: Path, cfg: TrainConfig) -> dict | None:
    """The state to resume ``cfg`` from, or None to start afresh: the checkpoint of the last epoch
    ``e`` (at most ``cfg.epochs``) such that the checkpoints of epochs 1 … e are all there and verify.

    A missing or damaged checkpoint is not used, and neither is any later one: training resumes
    before it and rewrites it and every later one (equal bytes when they were sound, the run being
    deterministic); nothing is deleted. Checkpoints written under another training configuration
    are stale: they are removed (with a log line) so they can never be mixed with new ones.
    """
    epochs = existing_epochs(ckpt_dir)
    good = 0
    for epoch in range(1, min(max(epochs, default=0), cfg.epochs) + 1):
        problem = checkpoint_problem(checkpoint_path(ckpt_dir, epoch))
        if problem is not None:
            log.warning(
                "%s: checkpoint %s; %s, rewriting it and every later one",
                checkpoint_path(ckpt_dir, epoch),
                problem,
                f"training resumes from epoch {good}" if good else "training starts afresh",
            )
            break
        good = epoch
    if good > 0:
        state = load_checkpoint(checkpoint_path(ckpt_dir, good))  # checked above
        if state.get("fingerprint") != cfg.fingerprint():
            old, new = state.get("fingerprint") or {}, cfg.fingerprint()
            keys = [*new, *(k for k in old if k not in new)]  # a setup's keys come and go
            changed = ", ".join(f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in keys if old.get(k) != new.get(k))
            log.warning(
                "checkpoints in %s were trained under another configuration (%s): removing them and training afresh",
                ckpt_dir,
                changed,
            )
            for e in epochs:
                checkpoint_path(ckpt_dir, e).unlink(missing_ok=True)
            return None
        return state
    return None


def resume(cfgs: list[TrainConfig], ckpt_dirs: list[Path]) -> tuple[int, list[dict | None]]:
    """The epoch every seed of the group can resume from, and each seed's state there."""
    found = [find_resume_point(d, c) for c, d in zip(cfgs, ckpt_dirs)]
    if any(st is None for st in found):
        return 0, [None] * len(cfgs)
    start = min(min(st["epoch"] for st in found), cfgs[0].epochs)
    states = [
        st if st["epoch"] == start else load_checkpoint(checkpoint_path(d, start)) for st, d in zip(found, ckpt_dirs)
    ]
    return start, states


def resumed_history(state: dict, ckpt_dir: Path, start: int) -> list[dict]:
    """The history of epochs 1 … ``start`` in a checkpoint, with each epoch's seconds from :data:`SECONDS_FILE`."""
    seconds = recorded_seconds(ckpt_dir)  # a checkpoint from before SECONDS_FILE has them in its history
    return [{**r, "seconds": r.get("seconds", seconds.get(r["epoch"]))} for r in state["history"][:start]]


def canonical(obj):
    """``obj`` rebuilt with fresh dicts, lists and tuples and interned strings (tensors as they are).

    Why: pickle writes an object it has met before as a reference to it (its memo), by identity. The
    optimiser's state read back from a checkpoint has other string objects than a fresh one's (torch's
    own names, which the fingerprint's keys share), so a resumed run's checkpoint would hold the same
    data in other bytes. Rebuilt this way, equal contents pickle to equal bytes however they were made.
    """
    if isinstance(obj, str):
        return sys.intern(str(obj))
    if isinstance(obj, dict):
        return {canonical(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(canonical(v) for v in obj)
    return obj


def save_epoch(
    ckpt_dir: Path, cfg: TrainConfig, head: dict, hist: list[dict], val_logits: torch.Tensor, rebuild: bool = False
) -> None:
    """Epoch ``head["epoch"]``'s checkpoint: ``head`` (epoch, model, optimiser, generators), then the history,
    the fingerprint, the PyTorch version and the validation logits; and the seconds file beside it.

    ``rebuild``: through :func:`canonical` (the plain loop's, whose ``torch.optim`` state holds strings; the
    stacked engine's checkpoints are written as before, byte for byte).
    """
    state = dict(
        **head,
        # keys from one tuple: the pickle's memo then writes a resumed history as a fresh one
        history=[{k: row[k] for k in HISTORY_COLUMNS if k != "seconds"} for row in hist],
        fingerprint=cfg.fingerprint(),
        torch_version=str(torch.__version__),  # a str: torch's TorchVersion is not plain data
        val_logits=val_logits,
    )
    save_checkpoint(checkpoint_path(ckpt_dir, head["epoch"]), canonical(state) if rebuild else state)
    write_csv(pd.DataFrame(hist, columns=["epoch", "seconds"]), ckpt_dir / SECONDS_FILE)


def log_epoch(epoch: int, cfg: TrainConfig, tl: float, ta: float, vl: float, va: float, seconds: float) -> None:
    log.info(
        "epoch %3d/%d  seed %d  train loss %.4f acc %.4f  val loss %.4f acc %.4f  %.1f s",
        epoch,
        cfg.epochs,
        cfg.seed,
        tl,
        ta,
        vl,
        va,
        seconds,
    )


def progress_bar(cfgs: Sequence[TrainConfig], start: int, progress: bool) -> tqdm:
    cfg0 = cfgs[0]
    return tqdm(
        total=cfg0.epochs,
        initial=start,
        unit="epoch",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        desc=f"{cfg0.dataset} seed{'s' if len(cfgs) > 1 else ''} {','.join(str(c.seed) for c in cfgs)}",
    )
