"""File helpers shared by every stage: atomic writes and readable load errors.

Every output is written to a temporary name in the target's directory and then
renamed, so a crash never leaves a half-written file that looks complete; a
write the disk refuses (full, read-only) ends in one line naming the file, the
cause and the fix (:class:`DiskError`).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import logging
import math
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.errors import TrustcalError

log = logging.getLogger(__name__)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def remove_stale_temporaries(directory: str | os.PathLike, name_glob: str) -> list[Path]:
    """Delete what :func:`atomic_path` / :func:`atomic_directory` left in ``directory`` for targets
    matching ``name_glob`` when the writing process was killed mid-write (SIGKILL, a node going down).

    Nothing under a target's own name is touched: those are complete by construction. Both writers
    call it for their target before writing it again; returns what was removed.
    """
    removed = []
    for pattern in (f".{name_glob}.*.tmp", f".{name_glob}.*.old"):
        for tmp in Path(directory).glob(pattern):
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            log.warning("%s: removed, left half-written by an interrupted run", tmp)
            removed.append(tmp)
    return removed


# --- A write the disk refuses: one line naming the file, the cause and the fix ---------------------

DISK_FAULTS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


class DiskError(TrustcalError):
    """A file could not be written because of where it goes: a full disk, a read-only or foreign folder."""


def _existing_folder(path: Path) -> Path:
    """``path`` if it is a folder, else its nearest existing ancestor (where a refused write happened)."""
    path = Path(os.path.abspath(path))
    while not path.is_dir() and path != path.parent:
        path = path.parent
    return path


def _size(n_bytes: float) -> str:
    """A byte count for people: 940 bytes, 1.2 MB (powers of 1000)."""
    if n_bytes < 1000:
        return f"{n_bytes:.0f} bytes"
    power = min(int(math.log10(n_bytes) // 3), 3)
    return f"{n_bytes / 1000**power:.1f} {('kB', 'MB', 'GB')[power - 1]}"


def disk_error(path: str | os.PathLike, exc: BaseException) -> DiskError | None:
    """The :class:`DiskError` of a write of ``path`` that failed with ``exc``, or None when ``exc`` is
    not the disk's refusal (an errno of :data:`DISK_FAULTS`).

    The message names ``path``, the cause and the folder where the write was refused (the one named
    by ``exc``, else ``path``'s), and the fix: free space, or make that folder writable; then rerun.
    """
    cause = DISK_FAULTS.get(getattr(exc, "errno", None))
    if cause is None:
        return None
    folder = _existing_folder(Path(path).parent)  # where the atomic writers put their temporaries too
    refused = Path(os.path.abspath(getattr(exc, "filename", None) or path))
    if not refused.is_relative_to(folder):  # another file than the target or its temporary
        folder = _existing_folder(refused)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        with contextlib.suppress(OSError):
            cause += f" ({_size(shutil.disk_usage(folder).free)} free in {folder})"
        fix = "free space there (or write the results elsewhere), then rerun"
    else:
        cause += f" ({folder})"
        fix = f"make {folder} writable (or write the results elsewhere), then rerun"
    return DiskError(f"{path}: cannot be written: {cause}. Fix: {fix}.")


def _write_refused(folder: Path) -> OSError | None:
    """The error of a plain write of one block into ``folder`` (synced), None when the disk takes it.

    One block: a writer that failed on a full disk filled it to the last block (``write`` writes
    what fits), so a disk with a block left did not refuse it.
    """
    try:
        with tempfile.TemporaryFile(dir=folder) as fh:
            fh.write(b"\0" * max(os.statvfs(folder).f_bsize, 1))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return exc
    return None


@contextlib.contextmanager
def disk_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn a write of ``path`` that the disk refused into a :class:`DiskError` (:func:`disk_error`).

    An ``OSError`` carries its errno. Writers in C++ (``torch.save``) raise a ``RuntimeError`` without
    one ("basic_ios::clear: iostream error", "unexpected pos"): a plain write into the same folder,
    made while the half-written file still fills the disk, tells whether the disk refused. Anything
    else passes through unchanged. :func:`atomic_path` and :func:`atomic_directory` write inside it.
    """
    try:
        yield
    except OSError as exc:
        error = disk_error(path, exc)
        if error is None:
            raise
        raise error from None
    except RuntimeError:
        refused = _write_refused(_existing_folder(Path(path).parent))
        error = disk_error(path, refused) if refused is not None else None
        if error is None:
            raise
        raise error from None


def check_writable(paths: Iterable[str | os.PathLike]) -> None:
    """Raise :class:`DiskError` (:func:`disk_error`) for the first of ``paths`` that could not be
    written: its folder (the nearest that exists) refuses new files (a read-only mount, or modes
    that do not let this user write; :func:`os.access` says which, for root too on a read-only
    mount), or its file system has no free block left. The workflow checks every output and log
    of the jobs it is about to run, so such a run stops before its first job.
    """
    seen = set()
    for path in paths:
        folder = _existing_folder(Path(path).parent)
        if folder in seen:
            continue
        seen.add(folder)
        code = None
        if not os.access(folder, os.W_OK | os.X_OK):
            code = errno.EROFS if os.statvfs(folder).f_flag & os.ST_RDONLY else errno.EACCES
        else:
            fs = os.statvfs(folder)
            if (fs.f_bfree if os.geteuid() == 0 else fs.f_bavail) == 0:  # root may use the reserved blocks
                code = errno.ENOSPC
        if code is not None:
            raise disk_error(path, OSError(code, os.strerror(code), str(folder)))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left as it was; a write the
    disk refused (full, read-only, not ours) raises :class:`DiskError` (:func:`disk_errors`).
    """
    path = Path(path)
    with disk_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent, glob.escape(path.name))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; the result is an ordinary file
    try:
        with disk_errors(path):  # before the half-written file is removed: it tells a full disk
            yield tmp
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def refuse_read_only(path: Path) -> None:
    """Raise :class:`TrustcalError` if ``path`` or anything in it is read-only (no owner write bit).

    A read-only result was protected on purpose. The mode bits are checked, not :func:`os.access`,
    which says yes to root whatever the bits.
    """
    for p in [path, *path.rglob("*")]:
        mode = p.lstat().st_mode
        if not p.is_symlink() and not mode & stat.S_IWUSR:
            what = "the output directory" if p == path else f"{p.relative_to(path)} in the output directory"
            raise TrustcalError(
                f"{path}: {what} is read-only (mode {stat.S_IMODE(mode):o}), so trustcal will not replace it. "
                f"Fix: choose another output directory, or make it writable (chmod -R u+w {path})."
            )


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, marker: str) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success it replaces ``path`` whole.

    ``path`` may be missing, empty, or a directory written this way before
    (one that holds ``marker``); anything else, or a read-only ``path`` or file in it
    (:func:`refuse_read_only`), raises :class:`TrustcalError` before any file is written.
    On any exception nothing is left behind: the temporary directory and the parent
    directories created for it are removed and ``path`` is left as it was.
    """
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise TrustcalError(f"{path}: exists and is not a directory. Fix: choose another output directory.")
        refuse_read_only(path)
        if not (path / marker).exists() and any(not p.is_dir() for p in path.rglob("*")):
            raise TrustcalError(
                f"{path}: the output directory holds files that trustcal did not write, which it would replace. "
                "Fix: choose a new or empty directory."
            )
    created = [p for p in reversed(path.parents) if not p.exists()]
    with disk_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent, glob.escape(path.name))
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result is an ordinary directory
    done = False
    try:
        try:
            with disk_errors(path):
                yield tmp
        except DiskError as exc:  # a file written inside: named as it will be, not by its temporary name
            message = str(exc).replace(os.path.abspath(tmp), os.path.abspath(path)).replace(str(tmp), str(path))
            raise DiskError(message) from None
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old)  # onto an empty directory: allowed by POSIX rename
        try:
            os.replace(tmp, path)
        except OSError:
            if old is not None:
                os.replace(old, path)
            raise
        done = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if not done:
            for p in reversed(created):
                with contextlib.suppress(OSError):
                    p.rmdir()


# --- Content digests: a zip archive that carries the digest of its own bytes ----------------------
#
# Checkpoints (torch.save) and .npz files (np.savez) are zip archives. The archive's comment, the
# last field of its end record, holds "trustcal-blake2b-256:<hex>", the BLAKE2b-256 digest of every
# byte before the comment's length field. It is written into the temporary file before the atomic
# rename, so a file and its digest can never go out of step, and every zip reader (torch.load,
# np.load, zipfile) still reads the file as before. A file written before digests existed (no
# comment) is read with one warning per directory that it cannot be verified.

DIGEST_TAG = b"trustcal-blake2b-256:"
_DIGEST_COMMENT_LEN = len(DIGEST_TAG) + 64  # the tag and 32 bytes in hex
_END_RECORD = b"PK\x05\x06"  # signature of the zip end record: 22 bytes, the last 2 the comment's length
_CHUNK = 1 << 20
_unverified_dirs: set[Path] = set()


class DigestMismatch(ValueError):
    """A file's bytes do not match the content digest it carries, or its end record is damaged;
    the message says which, in words that follow the file's name."""


def _digest_of(fh, n_bytes: int) -> str:
    h = hashlib.blake2b(digest_size=32)
    fh.seek(0)
    while n_bytes > 0:
        chunk = fh.read(min(_CHUNK, n_bytes))
        if not chunk:
            raise DigestMismatch("unreadable or truncated (shorter than its content digest says)")
        h.update(chunk)
        n_bytes -= len(chunk)
    return h.hexdigest()


def seal_zip(path: str | os.PathLike) -> str:
    """Give the just-written zip archive ``path`` (one without a comment, as torch.save and np.savez
    write) its content digest as comment; returns the digest. Call it on the temporary file of
    :func:`atomic_path`, before the rename."""
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(size - 22, 0))
        end = fh.read(22)
        if size < 22 or end[:4] != _END_RECORD or end[-2:] != b"\0\0":
            raise ValueError(f"{path}: not a zip archive without a comment; cannot seal it")
        digest = _digest_of(fh, size - 2)
        fh.seek(size - 2)
        fh.write(_DIGEST_COMMENT_LEN.to_bytes(2, "little") + DIGEST_TAG + digest.encode())
    return digest


def verify_zip(path: str | os.PathLike) -> bool:
    """Check ``path`` against the digest :func:`seal_zip` gave it: True when it matches, False when
    the file carries none (written before digests: cannot be verified, a warning once per directory).

    Raises :class:`DigestMismatch` when the bytes differ from the digest or the end record is not
    one of those two forms (truncated, overwritten), ``FileNotFoundError`` when it is missing.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        n = 22 + _DIGEST_COMMENT_LEN
        fh.seek(max(size - n, 0))
        tail = fh.read(n)
        if len(tail) == n and tail[:4] == _END_RECORD and tail[20:22] == _DIGEST_COMMENT_LEN.to_bytes(2, "little"):
            comment = tail[22:]
            if not comment.startswith(DIGEST_TAG) or not re.fullmatch(rb"[0-9a-f]{64}", comment[len(DIGEST_TAG) :]):
                raise DigestMismatch("altered since it was written (its content digest is damaged)")
            if _digest_of(fh, size - _DIGEST_COMMENT_LEN - 2) != comment[len(DIGEST_TAG) :].decode():
                raise DigestMismatch(
                    "altered since it was written (its bytes do not match the content digest it carries)"
                )
            return True
        if tail[-22:-18] == _END_RECORD and tail[-2:] == b"\0\0":
            if path.parent not in _unverified_dirs:
                _unverified_dirs.add(path.parent)
                log.warning(
                    "%s: written without a content digest (by trustcal before digests), so it cannot be "
                    "verified; used as it is (and so are other such files in %s, without another warning)",
                    path,
                    path.parent,
                )
            return False
        raise DigestMismatch("unreadable or truncated (no zip end record where one should be)")


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """``np.savez`` of ``arrays``, sealed with its content digest (:func:`seal_zip`), written atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        seal_zip(tmp)


def read_npz(path: str | os.PathLike, keys: tuple[str, ...] | None, rule: str) -> dict[str, np.ndarray]:
    """Load ``keys`` (None: every array) from an ``.npz`` file, checked against its content digest
    (:func:`verify_zip`), turning corruption into a clear error.

    ``rule`` names the Snakemake rule that writes the file, for the hint.
    """
    path = Path(path)
    hint = f"delete it and rerun (snakemake --cores 2 --forcerun {rule})"
    if not path.exists():
        raise TrustcalError(f"{path}: file not found; it is written by rule '{rule}': {hint}.")
    try:
        verify_zip(path)
    except DigestMismatch as exc:
        raise TrustcalError(f"{path}: {exc}; {hint}.") from None
    try:
        with np.load(path, allow_pickle=False) as data:
            keys = tuple(data.files) if keys is None else keys
            missing = [k for k in keys if k not in data.files]
            if missing:
                raise TrustcalError(f"{path}: missing array(s) {missing} (has {sorted(data.files)}); {hint}.")
            return {k: data[k] for k in keys}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise TrustcalError(f"{path}: unreadable or truncated ({exc}); {hint}.") from None


def read_csv(path: str | os.PathLike, columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """Read a CSV written by ``rule`` and check it has ``columns``."""
    path = Path(path)
    hint = f"delete it and rerun (snakemake --cores 2 --forcerun {rule})"
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise TrustcalError(f"{path}: file not found; it is written by rule '{rule}'.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TrustcalError(f"{path}: unreadable ({exc}); {hint}.") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TrustcalError(f"{path}: missing column(s) {missing}; {hint}.")
    return df


# --- The results contract: results/{dataset}/seed{N}/<table> -------------------------------------

RUN_RE = re.compile(r"(?:^|/)(?P<dataset>[^/]+)/seed(?P<seed>\d+)/[^/]+$")


def run_key(path: str | os.PathLike) -> tuple[str, int]:
    """(dataset, seed) of a per-run table ``…/{dataset}/seed{N}/<table>``."""
    m = RUN_RE.search(Path(path).as_posix())
    if not m:
        raise TrustcalError(f"{path}: expected a path …/{{dataset}}/seed{{N}}/<table>")
    return m["dataset"], int(m["seed"])


def read_seeds(paths: Iterable[str | os.PathLike], columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """One table per seed (``…/seed{N}/…``; seed 0 when the path names none) as one frame with a ``seed`` column."""
    frames = []
    for path in paths:
        seed = next((p[4:] for p in Path(path).parts if p.startswith("seed") and p[4:].isdigit()), "0")
        frames.append(read_csv(path, columns, rule=rule).assign(seed=int(seed)))
    if not frames:
        raise TrustcalError(f"no {rule} table given")
    return pd.concat(frames, ignore_index=True)


def calibrated_flag(column: pd.Series) -> pd.Series:
    """The ``calibrated`` column as booleans, however a CSV round trip spelled them (True, true, 1, 1.0)."""
    return column.astype(str).str.lower().isin(("true", "1", "1.0"))


RAW, PAPER_CALIBRATOR = "none", "temperature"  # the `calibrator` of the raw model and of the paper's method


def temperature_rows(calibration: pd.DataFrame) -> pd.DataFrame:
    """calibration.csv's rows of temperature scaling (a table from before the ``calibrator`` column: all)."""
    if "calibrator" not in calibration:
        return calibration
    return calibration[calibration["calibrator"] == PAPER_CALIBRATOR]


def paper_states(df: pd.DataFrame) -> pd.DataFrame:
    """The paper's two states of a result table: the raw model's rows (before calibration) and
    temperature scaling's (after), with a boolean ``calibrated`` column beside ``calibrator``.

    A table written before the ``calibrator`` column existed (``calibrated`` only) is read as it is.
    """
    if "calibrator" not in df.columns:
        return df.assign(calibrated=calibrated_flag(df["calibrated"]))
    out = df[df["calibrator"].isin((RAW, PAPER_CALIBRATOR))].copy()
    out.insert(int(out.columns.get_loc("calibrator")) + 1, "calibrated", out["calibrator"] == PAPER_CALIBRATOR)
    return out.reset_index(drop=True)
