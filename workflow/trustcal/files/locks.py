"""One writer at a time: a lock beside the target, held for the whole write; and the temporaries a crashed
writer left, removed once no writer holds their target."""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import logging
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX (Windows): no writer locks
    fcntl = None


from trustcal.errors import TrustcalError
from trustcal.files.disk import disk_errors

log = logging.getLogger(__name__)


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


_held_locks: dict[Path, int] = {}  # the lock files this process holds, and their descriptors


def _close_inherited_locks() -> None:
    """In a forked child: close the child's copies of the descriptors of the locks its parent holds, and
    hold none. The parent's ``flock`` stays (it is released only when every copy is closed, or by the
    parent), and now goes with the parent alone: a worker that outlived a killed parent would otherwise
    keep the output locked."""
    for fd in _held_locks.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _held_locks.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


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
    kernel releases the lock of a process that dies, so a killed writer never blocks the next one: the
    processes it forked hold no copy of it (:func:`_close_inherited_locks`). The lock file a killed
    writer leaves is taken over by the next writer, which removes it when it is done.
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
    _held_locks[lock] = fd
    try:
        with contextlib.suppress(OSError):  # who holds it, for another run's message (a full disk: unsaid)
            os.ftruncate(fd, 0)
            started = time.strftime("%Y-%m-%d %H:%M:%S")
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n".encode())
        yield
    finally:
        if _held_locks.pop(lock, None) is not None:  # not in a forked child, whose copy is closed already
            with contextlib.suppress(OSError):
                os.unlink(lock)  # while still held: a run that opened it meanwhile sees it is gone, and retries
            os.close(fd)
