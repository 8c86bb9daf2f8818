"""File helpers shared by every stage: atomic writes, readable load errors and pickles read without running code.

Every output is written to a temporary name in the target's directory and then
renamed, so a crash never leaves a half-written file that looks complete; a
write the disk refuses (full, read-only) ends in one line naming the file, the
cause and the fix (:class:`DiskError`). No reader executes a file's contents:
the pickled formats trustcal reads are unpickled with plain data and NumPy
arrays only (:func:`load_plain_pickle`).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob
import hashlib
import json
import logging
import math
import os
import pickle
import re
import shutil
import socket
import stat
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

try:
    import fcntl
except ImportError:  # not POSIX (Windows): no writer locks
    fcntl = None

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

    Nothing under a target's own name is touched: those are complete by construction. Nor is the
    temporary of a writer still at work: a target whose writer's lock (:func:`writer_lock`) another
    process holds keeps its temporaries. Both writers call it for their target before writing it
    again; returns what was removed.
    """
    removed = []
    for pattern in (f".{name_glob}.*.tmp", f".{name_glob}.*.old"):
        for tmp in Path(directory).glob(pattern):
            target = tmp.name[1:].rsplit(".", 2)[0]  # .{target}.{random}.tmp: the random part has no dot
            if not fnmatch.fnmatchcase(target, name_glob):
                continue  # another target's, whose name starts alike (out.x for out)
            if _locked_elsewhere(tmp.parent / target):
                log.info("%s: left alone, another process is writing %s now", tmp, target)
                continue
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            log.warning("%s: removed, left half-written by an interrupted run", tmp)
            removed.append(tmp)
    return removed


# --- One writer at a time: a lock beside the target, held for the whole write ---------------------

_held_locks: set[Path] = set()  # the lock files this process holds


def _lock_file(path: Path) -> Path:
    return path.parent / f".{path.name}.lock"


def _locked_elsewhere(path: Path) -> bool:
    """Whether another process holds the writer's lock of ``path`` (:func:`writer_lock`) now."""
    lock = _lock_file(path)
    if fcntl is None or lock in _held_locks:
        return False
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:  # no lock file: no writer (or one that cannot lock)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released by the close below
    except BlockingIOError:
        return True
    except OSError:  # a file system without locks
        return False
    finally:
        os.close(fd)
    return False


def _holder(fd: int) -> str:
    """Who holds a lock file, as its holder wrote it ("pid 12 on host, started …"), or ''."""
    with contextlib.suppress(OSError):
        return os.pread(fd, 200, 0).decode(errors="replace").strip()
    return ""


@contextlib.contextmanager
def writer_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold the writer's lock of ``path`` while the block runs: an ``flock`` on ``.{name}.lock`` beside
    it, which says who holds it (pid, host, start time) and is removed when the block ends.

    Another process holding it: :class:`TrustcalError` at once, naming that process (the block does
    not run). A file system that cannot lock (some network mounts) is written without the lock. The
    kernel releases the lock of a process that dies, so a killed writer never blocks the next one.
    """
    path = Path(path)
    lock = _lock_file(path)
    if fcntl is None:
        yield
        return
    with disk_errors(path):
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise TrustcalError(
                    f"{path}: another trustcal run{f' ({holder})' if holder else ''} is writing it now "
                    f"(it holds {lock}). Fix: wait until that run has finished, or write elsewhere."
                ) from None
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise
                log.info("%s: this file system cannot lock; written without a lock", path)
                fd = None
                break
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the run before ours removed this lock file as it finished: take the new one
    if fd is None:
        yield
        return
    _held_locks.add(lock)
    try:
        with contextlib.suppress(OSError):  # who holds it, for another run's message (a full disk: unsaid)
            os.ftruncate(fd, 0)
            started = time.strftime("%Y-%m-%d %H:%M:%S")
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n".encode())
        yield
    finally:
        _held_locks.discard(lock)
        with contextlib.suppress(OSError):
            os.unlink(lock)  # while still held: a run that opened it meanwhile sees it is gone, and retries
        os.close(fd)


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


FULL_DISK = (errno.ENOSPC, errno.EDQUOT)


def full_disk_cause(exc: BaseException) -> OSError | None:
    """The ``OSError`` of a full disk (:data:`FULL_DISK`) that ``exc`` is or was raised while handling
    (its chain of causes, as its traceback shows it), or None.

    A library that meets a full disk may fail again while cleaning up: matplotlib's PDF writer raises
    an ``AttributeError`` while closing the stream the disk refused. The first error is the cause.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL_DISK:
            return exc
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return None


@contextlib.contextmanager
def disk_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn a write of ``path`` that the disk refused into a :class:`DiskError` (:func:`disk_error`).

    An ``OSError`` carries its errno; an error raised while handling a full disk's (a library failing
    again as it cleans up: :func:`full_disk_cause`) is that full disk. Writers in C++ (``torch.save``)
    raise a ``RuntimeError`` without one ("basic_ios::clear: iostream error", "unexpected pos"): a plain
    write into the same folder, made while the half-written file still fills the disk, tells whether
    the disk refused. Anything else, a :class:`TrustcalError` included, passes through unchanged.
    :func:`atomic_path` and :func:`atomic_directory` write inside it.
    """
    try:
        yield
    except TrustcalError:
        raise
    except Exception as exc:
        refused = exc if isinstance(exc, OSError) and exc.errno in DISK_FAULTS else full_disk_cause(exc)
        if refused is None and isinstance(exc, RuntimeError):
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


def refuse_read_only(path: Path, names: Iterable[str] | None = None) -> None:
    """Raise :class:`TrustcalError` if ``path`` or anything in it is read-only (no owner write bit); with
    ``names`` (paths relative to ``path``), only ``path``, those of them that exist and their folders.

    A read-only result was protected on purpose. The mode bits are checked, not :func:`os.access`,
    which says yes to root whatever the bits.
    """
    if names is None:
        checked = [path, *path.rglob("*")]
    else:
        inside = {PurePosixPath(n) for n in names}
        inside |= {parent for n in inside for parent in n.parents if parent != PurePosixPath(".")}
        checked = [path, *(p for p in (path / n for n in sorted(inside)) if os.path.lexists(p))]
    for p in checked:
        mode = p.lstat().st_mode
        if not p.is_symlink() and not mode & stat.S_IWUSR:
            what = "the output directory" if p == path else f"{p.relative_to(path)} in the output directory"
            raise TrustcalError(
                f"{path}: {what} is read-only (mode {stat.S_IMODE(mode):o}), so trustcal will not replace it. "
                f"Fix: choose another output directory, or make it writable (chmod -R u+w {path})."
            )


def written_files(directory: str | os.PathLike) -> list[str]:
    """Every file under ``directory`` (symbolic links included, folders not), as sorted paths relative
    to it with ``/``: what a writer of :func:`atomic_directory` lists in its marker."""
    return sorted(_tree(Path(directory))[0])


def _tree(root: Path) -> tuple[set[str], set[str]]:
    """(files, folders) under ``root``, relative, with ``/``; a symbolic link (to a folder too) is a file."""
    files, folders = set(), set()
    for parent, dirnames, filenames in os.walk(root):
        rel = PurePosixPath(Path(parent).relative_to(root).as_posix())
        for name in list(dirnames):
            if os.path.islink(os.path.join(parent, name)):
                dirnames.remove(name)
                files.add((rel / name).as_posix())
            else:
                folders.add((rel / name).as_posix())
        files.update((rel / name).as_posix() for name in filenames)
    return files, folders


def _listed(path: Path) -> set[str]:
    """The files listed in ``path`` (JSON whose ``written`` is a list of paths relative to its folder):
    none when it is missing, not such JSON, or lists none (an older marker, a copied one). A path that
    would leave the folder is ignored."""
    try:
        listed = json.loads(path.read_text()).get("written")
    except (OSError, ValueError, AttributeError):
        return set()
    names = set()
    for name in listed if isinstance(listed, list) else ():
        rel = PurePosixPath(name) if isinstance(name, str) else None
        if rel is not None and rel.parts and not rel.is_absolute() and ".." not in rel.parts:
            names.add(rel.as_posix())
    return names


def _plain(path: Path, rel: str) -> bool:
    """Whether every folder between ``path`` and ``path/rel`` is a folder, not a link or a file."""
    parent = path
    for part in PurePosixPath(rel).parts[:-1]:
        parent = parent / part
        if parent.is_symlink() or not parent.is_dir():
            return False
    return True


def _replaceable(path: Path, marker: str) -> set[str]:
    """Check that ``path`` may receive an :func:`atomic_directory` write; the files in it that were
    written that way (listed in its marker, or in the journal of a write interrupted while moving its
    files into place), which a new write removes when it does not write them again."""
    if not path.exists():
        return set()
    if not path.is_dir():
        raise TrustcalError(f"{path}: exists and is not a directory. Fix: choose another output directory.")
    ours = _listed(path / marker) | _listed(path / f"{marker}.incomplete")
    refuse_read_only(path, ours)  # the files a write would replace: also checked once they are known (_merge)
    journal = path / f"{marker}.incomplete"
    if not (path / marker).exists() and not journal.exists() and any(not p.is_dir() for p in path.rglob("*")):
        raise TrustcalError(
            f"{path}: the output directory holds files that trustcal did not write, which it would replace. "
            "Fix: choose a new or empty directory."
        )
    return ours


def _conflicts(path: Path, files: set[str], folders: set[str]) -> None:
    """Raise :class:`TrustcalError` for a file of ``path`` in the way of the new ``files`` and ``folders``:
    a folder where a file goes, a file or link where a folder goes."""
    for rel in sorted(files | folders):
        parts = PurePosixPath(rel).parts
        for i in range(1, len(parts) + (rel in folders)):
            where = path.joinpath(*parts[:i])
            if os.path.lexists(where) and (where.is_symlink() or not where.is_dir()):
                raise TrustcalError(
                    f"{where}: a {'link' if where.is_symlink() else 'file'} where trustcal writes the folder "
                    f"{'/'.join(parts[:i])}/. Fix: move it away, or choose another output directory."
                )
        where = path / rel
        if rel in files and where.is_dir() and not where.is_symlink():
            raise TrustcalError(
                f"{where}: a folder where trustcal writes the file {rel}. "
                "Fix: move it away, or choose another output directory."
            )


def _merge(tmp: Path, path: Path, marker: str, ours: set[str]) -> list[str]:
    """Move the files of ``tmp`` into the existing folder ``path``, the marker last; remove the files of
    ``ours`` (written there before) that ``tmp`` does not hold; every other file stays. Returns those
    kept (relative paths).

    Each file replaced or removed is first moved into a backup folder beside ``path``, so a failure on
    the way moves everything back. While the files move, ``path`` holds no marker and a journal
    (``{marker}.incomplete``) lists every file trustcal may have written there: a crash leaves a folder
    that does not look complete, which the next write accepts and cleans as it would a complete one.
    """
    files, folders = _tree(tmp)
    journal = f"{marker}.incomplete"
    _conflicts(path, files, folders)
    refuse_read_only(path, files | folders)
    before = _tree(path)[0]

    def removable(rel: str) -> bool:  # a file or link still there, reached through folders only
        where = path / rel
        return os.path.lexists(where) and _plain(path, rel) and (where.is_symlink() or not where.is_dir())

    stale = sorted(rel for rel in ours - files - {journal} if removable(rel))
    kept = sorted(before - files - ours - {journal})
    backup = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
    moved: list[tuple[Path, Path]] = []  # renames made, undone last first on a failure
    made: list[Path] = []  # folders made in path

    def folder(where: Path, record: bool) -> None:
        missing = [p for p in [where, *where.parents] if not p.exists()]
        for p in reversed(missing):
            p.mkdir()
            if record:
                made.append(p)

    def move(src: Path, dst: Path) -> None:
        os.replace(src, dst)
        moved.append((src, dst))

    def put_aside(rel: str) -> None:
        folder((backup / "old" / rel).parent, record=False)
        move(path / rel, backup / "old" / rel)

    def put(src: Path, rel: str) -> None:
        if os.path.lexists(path / rel):
            put_aside(rel)
        folder((path / rel).parent, record=True)
        move(src, path / rel)

    undone = False
    try:
        (backup / "journal").write_text(json.dumps({"written": sorted(ours | files)}, indent=2) + "\n")
        put(backup / "journal", journal)
        if os.path.lexists(path / marker):
            put_aside(marker)  # from here until the new marker, path does not look complete
        for rel in sorted(files - {marker}):
            put(tmp / rel, rel)
        for rel in sorted(folders):
            folder(path / rel, record=True)
        for rel in stale:
            put_aside(rel)
        if marker in files:
            put(tmp / marker, marker)
        undone = True  # done, nothing to undo
    except BaseException:
        try:
            for src, dst in reversed(moved):
                os.replace(dst, src)
            for p in reversed(made):
                p.rmdir()
            undone = True
        except OSError as exc:  # the journal stays: the next write cleans up
            log.error("%s: could not move the files of an unfinished write back (%s); rerun", path, exc)
        raise
    finally:
        if undone:
            shutil.rmtree(backup, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(path / journal)
    for rel in stale:  # the folders they leave empty, up to path (not those the new write has)
        for parent in PurePosixPath(rel).parents:
            if parent == PurePosixPath(".") or parent.as_posix() in folders:
                break
            try:
                (path / parent).rmdir()
            except OSError:
                break
    return kept


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, marker: str, kept: list[str] | None = None) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success its files take their places in ``path``.

    ``path`` may be missing (the temporary directory is renamed onto it), empty, or a directory written
    this way before (one that holds ``marker``); anything else, a read-only ``path``, or a read-only file
    in it that the write would replace or remove (:func:`refuse_read_only`), raises :class:`TrustcalError`
    before any file of ``path`` is touched.

    A marker written as JSON with ``written``, the list of the files written (:func:`written_files`),
    lets the next write remove those it does not write again; every file not listed there and not
    written again (the user's own: notes, data, a figure of theirs) stays, and is named in ``kept``
    (extended) and the log. The marker is moved into place last (:func:`_merge`): a crash never leaves
    a folder that looks complete. One write at a time (:func:`writer_lock`): another process writing
    ``path`` is an error. On any exception ``path`` is left as it was, and the temporary directory and
    the parent directories created for it are removed.
    """
    path = Path(path)
    if path.name in ("", ".."):  # "." or "a/..": the folder's own name, for the temporaries beside it
        path = Path(os.path.abspath(path))
    created = [p for p in reversed(path.parents) if not p.exists()]
    done = False
    try:
        with disk_errors(path):
            path.parent.mkdir(parents=True, exist_ok=True)
        with writer_lock(path):
            ours = _replaceable(path, marker)
            with disk_errors(path):
                remove_stale_temporaries(path.parent, glob.escape(path.name))
                tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
                os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result is an ordinary directory
            try:
                try:
                    with disk_errors(path):
                        yield tmp
                except DiskError as exc:  # a file written inside: named as it will be, not by its temporary name
                    message = str(exc).replace(os.path.abspath(tmp), os.path.abspath(path)).replace(str(tmp), str(path))
                    raise DiskError(message) from None
                with disk_errors(path):
                    if path.exists():
                        left = _merge(tmp, path, marker, ours)
                    else:
                        os.replace(tmp, path)
                        left = []
                done = True
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        if left:
            log.info("%s: kept %d file(s) trustcal did not write: %s", path, len(left), ", ".join(left))
        if kept is not None:
            kept.extend(left)
    finally:
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


# --- Pickles read without running code ----------------------------------------------------------
#
# A pickle names the functions and classes that rebuild its objects, and pickle.load imports and calls
# whatever it names (os.system, …): a crafted file runs code as it is read. The pickled formats trustcal
# reads (CIFAR-10's batches, a loss_history.npy) hold plain data (dict, list, tuple, str, bytes, int,
# float, bool, None) and NumPy arrays, so they are read by an unpickler that resolves only the names
# those need and refuses any other before anything is called. Checkpoints are read by torch.load with
# weights_only=True, PyTorch's own restricted unpickler (trustcal.training.loop).

# NumPy's reconstruction of arrays, dtypes and scalars, under NumPy 2's module names and NumPy 1's
# (which NumPy 2 still reads); _frombuffer is the array form of pickle protocol 5.
NUMPY_PICKLE_GLOBALS = frozenset(
    {
        (module, name)
        for module in ("numpy._core.multiarray", "numpy.core.multiarray")
        for name in ("_reconstruct", "scalar")
    }
    | {(module, "_frombuffer") for module in ("numpy._core.numeric", "numpy.core.numeric")}
    | {("numpy", "ndarray"), ("numpy", "dtype")}
)


def _latin1_bytes(text: str, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """What a protocol-2 pickle of ``bytes`` written by Python 3 calls, ``_codecs.encode(text, "latin1")``;
    no other codec."""
    if encoding not in ("latin1", "latin-1") or errors != "strict" or not isinstance(text, str):
        raise RefusedPickle(f"it calls _codecs.encode with encoding {encoding!r}, which plain bytes never need")
    return text.encode("latin1")


def _empty_bytes(*args) -> bytes:
    """What a protocol-2 pickle of ``b""`` calls: ``bytes()``, without arguments."""
    if args:
        raise RefusedPickle("it calls bytes with arguments, which plain bytes never need")
    return b""


# Plain bytes in a protocol-2 pickle written by Python 3: stand-ins that do what the pickle asks of them, no more.
_BYTES_STAND_INS = {
    ("_codecs", "encode"): _latin1_bytes,
    ("builtins", "bytes"): _empty_bytes,
    ("__builtin__", "bytes"): _empty_bytes,
}
PLAIN_PICKLE_GLOBALS = NUMPY_PICKLE_GLOBALS | frozenset(_BYTES_STAND_INS)


class RefusedPickle(pickle.UnpicklingError):
    """A pickle names a function or class outside what :func:`load_plain_pickle` admits (or asks one of
    them for more than plain data); the message, in words that follow the file's name, says which."""


class _PlainUnpickler(pickle.Unpickler):
    def __init__(self, fh, admitted: frozenset, what: str, encoding: str):
        super().__init__(fh, encoding=encoding)
        self._admitted, self._what = admitted, what

    def find_class(self, module: str, name: str):
        if (module, name) not in self._admitted:
            raise RefusedPickle(f"it names {module}.{name}, which {self._what} never needs; not loaded")
        if (module, name) in _BYTES_STAND_INS:
            return _BYTES_STAND_INS[module, name]
        with warnings.catch_warnings():  # NumPy 2 on numpy.core.numeric: renamed numpy._core.numeric
            warnings.simplefilter("ignore", DeprecationWarning)
            return super().find_class(module, name)

    def persistent_load(self, pid):
        raise RefusedPickle(f"it holds a persistent id, which {self._what} never needs; not loaded")


def load_plain_pickle(fh, what: str, *, admitted: frozenset = PLAIN_PICKLE_GLOBALS, encoding: str = "ASCII"):
    """The object pickled in the binary file ``fh``, built from plain data and NumPy arrays only.

    Any function or class the pickle names outside ``admitted`` (by default NumPy's array
    reconstruction and the calls plain bytes need) raises :class:`RefusedPickle` before it is
    imported or called, so a crafted file cannot run code; ``what`` names the format in that
    message ("a CIFAR-10 batch"). ``encoding`` is pickle's, for strings written by Python 2
    (``"latin1"`` for CIFAR-10's batches, as torchvision reads them). A damaged pickle raises
    what :func:`pickle.load` raises (``UnpicklingError``, ``EOFError``, ``ValueError``, …).
    """
    return _PlainUnpickler(fh, admitted, what, encoding).load()


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
