"""A write the disk refuses (full, read-only, not ours): one line naming the file, the cause and the fix
(:class:`DiskError`)."""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from trustcal.errors import TrustcalError

log = logging.getLogger(__name__)


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
